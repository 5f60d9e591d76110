"""How the tests of iostudy's own benchmarks (iomodel, metarates, ioprobe) find and run them:
the binaries of `make build-checks`, each flavour's own mpirun, an environment without
instrumentation or with iostudy's runtime, and stand-ins for Lustre. Imported by the test modules
beside it (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iostudy.logs.darshanlog import read_log

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNTIME = REPO_ROOT / "build" / "runtime" / "libiostudy.so"
BUILD_HINT = "build it first: `make build-checks` (or `make setup`)"
LAUNCHERS = {"openmpi": "mpirun.openmpi", "mpich": "mpirun.mpich"}
FLAVOURS = list(LAUNCHERS)


def checks_build_dir() -> Path:
    env = os.environ.get("IOSTUDY_CHECKS_BUILD_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "build" / "reframe-checks"


def binary(benchmark: str, flavour: str) -> Path:
    return checks_build_dir() / f"{benchmark}-{flavour}"


def require(benchmark: str, flavour: str) -> str:
    """The flavour, once its launcher and the benchmark's binary exist. CI builds every
    benchmark, so a missing binary fails (naming it); a missing MPI skips, naming it."""
    launcher = LAUNCHERS[flavour]
    if shutil.which(launcher) is None:
        pytest.skip(f"{launcher} not found")
    built = binary(benchmark, flavour)
    if not built.is_file():
        pytest.fail(f"{built} not found: {BUILD_HINT}", pytrace=False)
    return flavour


def run_env() -> dict:
    """The caller's environment without instrumentation, plus what mpirun needs as root in a
    container (no ssh agent, oversubscription of the 2 cores)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not (k.startswith(("DARSHAN_", "IOSTUDY_LOG")) or k == "LD_PRELOAD")
    }
    env.update(
        {
            "LC_ALL": "C",
            "OMPI_ALLOW_RUN_AS_ROOT": "1",
            "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
            "OMPI_MCA_plm_rsh_agent": "",
            "OMPI_MCA_rmaps_base_oversubscribe": "1",
        }
    )
    return env


def launcher(flavour: str, nprocs: int, app_env: dict | None = None) -> list[str]:
    """mpirun of the flavour with nprocs ranks; app_env goes to the ranks only, so that mpirun
    itself is never instrumented."""
    cmd = [LAUNCHERS[flavour], "-np", str(nprocs)]
    for key, value in (app_env or {}).items():
        cmd += ["-x", f"{key}={value}"] if flavour == "openmpi" else ["-genv", key, str(value)]
    return cmd


def run(
    benchmark: str,
    flavour: str,
    nprocs: int | None,
    *args,
    app_env: dict | None = None,
    timeout: int = 120,
    preexec_fn=None,
) -> subprocess.CompletedProcess:
    """The benchmark under mpirun with nprocs ranks (app_env to the ranks only, so that mpirun
    itself is never instrumented), or alone as an MPI singleton (one rank, app_env added to its
    environment) when nprocs is None; preexec_fn runs in the child first (a cgroup to join)."""
    cmd = [str(binary(benchmark, flavour)), *map(str, args)]
    env = run_env()
    if nprocs is not None:
        cmd = launcher(flavour, nprocs, app_env) + cmd
    else:
        env.update({key: str(value) for key, value in (app_env or {}).items()})
    return subprocess.run(
        cmd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
        preexec_fn=preexec_fn,
    )


def runtime_env(logs: Path) -> dict:
    """The ranks' app_env of a run under iostudy's runtime, its logs going to logs (made here).
    Without the runtime's build the test fails, naming it."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make build-runtime`", pytrace=False)
    logs.mkdir()
    return {"LD_PRELOAD": RUNTIME, "DARSHAN_LOGPATH": logs}


def the_log(logs: Path, res: subprocess.CompletedProcess) -> dict:
    """The one log the run res left in logs, as PyDarshan reads it (iostudy.logs.darshanlog)."""
    found = sorted(logs.rglob("*.darshan"))
    assert len(found) == 1, (found, describe(res))
    return read_log(found[0])


def describe(res: subprocess.CompletedProcess) -> str:
    return (
        f"command: {' '.join(res.args)}\nexit status: {res.returncode}\n"
        f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    )


def json_lines(res: subprocess.CompletedProcess) -> list[dict]:
    assert res.returncode == 0, describe(res)
    return [json.loads(line) for line in res.stdout.splitlines()]


def check_usage_error(res: subprocess.CompletedProcess, benchmark: str, message: str):
    """Bad parameters: exit status 2, no output, and one line from rank 0 only, the benchmark's
    error naming what is wrong."""
    assert res.returncode == 2, describe(res)
    assert res.stdout == "", describe(res)
    lines = [x for x in res.stderr.splitlines() if x.startswith(f"{benchmark}: ")]
    assert len(lines) == 1, describe(res)  # rank 0 only
    assert lines[0].startswith(f"{benchmark}: error: ") and message in lines[0], describe(res)


# --- Lustre placement, with stand-ins --------------------------------------------------------
# No Lustre here: an LD_PRELOADed statfs reports Lustre's magic and a stand-in liblustreapi.so.1
# logs its llapi_file_create calls on stderr and creates the file, as the real one does.

STATFS_SHIM = r"""
#define _GNU_SOURCE
#include <dlfcn.h>
#include <sys/vfs.h>
#define LUSTRE(real, type) \
    int rc = ((int (*)(const char *, type *))dlsym(RTLD_NEXT, real))(p, b); \
    if (rc == 0) b->f_type = 0x0BD00BD0; \
    return rc;
int statfs(const char *p, struct statfs *b) { LUSTRE("statfs", struct statfs) }
int statfs64(const char *p, struct statfs64 *b) { LUSTRE("statfs64", struct statfs64) }
"""

FAKE_LUSTREAPI = r"""
#include <fcntl.h>
#include <stdio.h>
#include <unistd.h>
int llapi_file_create(const char *name, unsigned long long size, int off, int count, int pat) {
    fprintf(stderr, "llapi_file_create %s %llu %d %d %d\n", name, size, off, count, pat);
    int fd = open(name, O_CREAT | O_EXCL | O_WRONLY, 0644);
    return fd < 0 ? -17 : close(fd);
}
"""


def build_lustre_stand_ins(folder: Path) -> tuple[Path, Path]:
    """Compiles the stand-ins into folder: (statfs shim, directory holding liblustreapi.so.1).
    Without a C compiler the test is skipped."""
    cc = shutil.which("cc")
    if cc is None:
        pytest.skip("no C compiler for the Lustre stand-ins")
    for name, src, libs in [
        ("statfs_shim.so", STATFS_SHIM, ["-ldl"]),
        ("liblustreapi.so.1", FAKE_LUSTREAPI, []),
    ]:
        (folder / f"{name}.c").write_text(src)
        subprocess.run(
            [cc, "-shared", "-fPIC", "-o", folder / name, folder / f"{name}.c", *libs], check=True
        )
    return folder / "statfs_shim.so", folder
