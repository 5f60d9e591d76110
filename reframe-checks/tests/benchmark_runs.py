"""How the tests of iostudy's own benchmarks (iomodel, metarates) find and run them: the
binaries of `make build-checks`, each flavour's own mpirun, an environment without
instrumentation. Imported by the test modules beside it (pytest puts this folder on sys.path).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
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


def describe(res: subprocess.CompletedProcess) -> str:
    return (
        f"command: {' '.join(res.args)}\nexit status: {res.returncode}\n"
        f"stdout:\n{res.stdout}\nstderr:\n{res.stderr}"
    )


def json_lines(res: subprocess.CompletedProcess) -> list[dict]:
    assert res.returncode == 0, describe(res)
    return [json.loads(line) for line in res.stdout.splitlines()]
