"""What the runtime's end-to-end tests share (conftest.py holds only their fixtures): the
environment a run gets, running a program with and without the runtime, the scenarios several
test files read. Paths are located relative to this file (runtime/tests/ -> repository root
../..); IOSTUDY_BUILD_DIR may point to another runtime build directory."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from iostudy.logs import darshanlog

# The test files import the rt_* helpers beside this file, whatever pytest's import mode.
sys.path.insert(0, str(Path(__file__).resolve().parent))

REPO_ROOT = Path(__file__).resolve().parents[2]
SETUP_HINT = (
    "build the runtime and its test programs first: run `make setup` (or "
    "`cmake -S runtime -B build/runtime && cmake --build build/runtime`)"
)

# environment variables that must not leak from the caller into the runs
_SCRUB_PREFIXES = ("DARSHAN_", "IOSTUDY_", "DXT_")
_SCRUB_VARS = {"LD_PRELOAD", "SLURM_JOB_ID"}
_KEEP_VARS = {"IOSTUDY_BUILD_DIR"}


def runtime_build_dir() -> Path:
    env = os.environ.get("IOSTUDY_BUILD_DIR")
    return Path(env).resolve() if env else REPO_ROOT / "build" / "runtime"


def clean_env(extra: dict | None = None) -> dict:
    """The caller's environment without Darshan/iostudy settings, plus ``extra``
    (a value of None removes the variable)."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k in _KEEP_VARS or not (k.startswith(_SCRUB_PREFIXES) or k in _SCRUB_VARS)
    }
    env["LC_ALL"] = "C"
    for k, v in (extra or {}).items():
        if v is None:
            env.pop(k, None)
        else:
            env[k] = str(v)
    return env


@dataclass
class RunResult:
    cmd: list
    returncode: int
    stdout: str
    stderr: str
    log: Path | None
    env: dict = field(repr=False)

    def describe(self) -> str:
        return (
            f"command: {' '.join(map(str, self.cmd))}\nexit status: {self.returncode}\n"
            f"stdout:\n{self.stdout}\nstderr:\n{self.stderr}"
        )

    def check(self, returncode: int = 0, stderr_empty: bool = True) -> RunResult:
        assert self.returncode == returncode, (
            f"unexpected exit status (99 = the program's own I/O did not behave as designed)"
            f"\n{self.describe()}"
        )
        if stderr_empty:
            assert self.stderr == "", f"unexpected stderr output\n{self.describe()}"
        return self


class Runner:
    """Runs commands with or without the runtime preloaded."""

    def __init__(self, build_dir: Path, lib: Path):
        self.build_dir = build_dir
        self.lib = lib
        self.tests_dir = build_dir / "tests"

    def bin(self, name: str) -> str:
        path = self.tests_dir / name
        if not path.is_file():
            pytest.fail(f"test program {path} is missing: {SETUP_HINT}")
        return str(path)

    def _run(self, cmd, env, stdin=None, cwd=None, timeout=120, log=None) -> RunResult:
        cmd = [str(c) for c in cmd]
        stdin_f = open(stdin, "rb") if stdin is not None else subprocess.DEVNULL
        try:
            proc = subprocess.run(
                cmd,
                env=env,
                stdin=stdin_f,
                capture_output=True,
                cwd=cwd,
                timeout=timeout,
            )
        finally:
            if stdin is not None:
                stdin_f.close()
        return RunResult(
            cmd=cmd,
            returncode=proc.returncode,
            stdout=proc.stdout.decode("utf-8", "replace"),
            stderr=proc.stderr.decode("utf-8", "replace"),
            log=log,
            env=env,
        )

    def instrumented(
        self, cmd, tmp_path, env_extra=None, stdin=None, cwd=None, timeout=120
    ) -> RunResult:
        """Run ``cmd`` non-MPI under the runtime; the log goes to ``tmp_path``/x.darshan
        unless ``env_extra`` sets DARSHAN_LOGFILE (or removes it with None)."""
        extra = {
            "LD_PRELOAD": str(self.lib),
            "DARSHAN_ENABLE_NONMPI": "1",
            "DARSHAN_LOGFILE": str(Path(tmp_path) / "x.darshan"),
            # memory-mapped logs of runs that end without writing theirs stay with the test
            "DARSHAN_MMAP_LOGPATH": str(tmp_path),
        }
        extra.update(env_extra or {})
        env = clean_env(extra)
        log = Path(env["DARSHAN_LOGFILE"]) if "DARSHAN_LOGFILE" in env else None
        return self._run(cmd, env, stdin=stdin, cwd=cwd, timeout=timeout, log=log)

    def plain(self, cmd, env_extra=None, stdin=None, cwd=None, timeout=120) -> RunResult:
        """Run ``cmd`` without the runtime (same scrubbed environment)."""
        return self._run(cmd, clean_env(env_extra), stdin=stdin, cwd=cwd, timeout=timeout)

    # -- MPI ---------------------------------------------------------------------------------
    MPIRUN = {"openmpi": "mpirun.openmpi", "mpich": "mpirun.mpich"}

    def mpi_program(self, name: str, flavour: str) -> Path:
        """tests/programs/<name>.c built for flavour; skips, naming what is missing, when that
        MPI's launcher or build is absent."""
        if shutil.which(self.MPIRUN[flavour]) is None:
            pytest.skip(f"{self.MPIRUN[flavour]} not found")
        prog = self.tests_dir / f"{name}-{flavour}"
        if not prog.is_file():
            pytest.skip(
                f"{prog.name} not built: no {flavour} build at configure time (pkg-config "
                f"module, mpif90.{flavour}; see runtime/tests/CMakeLists.txt)"
            )
        return prog

    def mpirun_command(self, flavour, nprocs, cmd, app_env) -> tuple[list, dict]:
        """The launcher command line running ``cmd`` on ``nprocs`` ranks of ``flavour`` with
        ``app_env`` given to the ranks only, and the launcher's environment."""
        launcher = shutil.which(self.MPIRUN[flavour])
        if launcher is None:
            pytest.skip(f"{self.MPIRUN[flavour]} not found")
        env = clean_env(
            {
                "OMPI_ALLOW_RUN_AS_ROOT": "1",
                "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
                "OMPI_MCA_plm_rsh_agent": "",
                "OMPI_MCA_rmaps_base_oversubscribe": "1",
            }
        )
        if flavour == "openmpi":
            full = [launcher, "--oversubscribe", "--allow-run-as-root", "-np", str(nprocs)]
            for k, v in app_env.items():
                full += ["-x", f"{k}={v}"]
        else:
            full = [launcher, "-np", str(nprocs)]
            for k, v in app_env.items():
                full += ["-genv", k, v]
        return full + [str(c) for c in cmd], env

    def mpirun(self, flavour, nprocs, cmd, tmp_path, env_extra=None, timeout=180) -> RunResult:
        log = Path(tmp_path) / "x.darshan"
        app_env = {
            "LD_PRELOAD": str(self.lib),
            "DARSHAN_LOGFILE": str(log),
            "DARSHAN_MMAP_LOGPATH": str(tmp_path),
        }
        app_env.update(env_extra or {})
        full, env = self.mpirun_command(flavour, nprocs, cmd, app_env)
        return self._run(full, env, timeout=timeout, log=log)


def real_tmp(tmp_path_factory, name: str) -> str:
    """A fresh directory given as an absolute path without symlinks (what getcwd()
    returns, hence what the runtime records)."""
    return os.path.realpath(tmp_path_factory.mktemp(name))


def fs_block_size(path: str) -> int:
    """Expected POSIX_FILE_ALIGNMENT for files in ``path``."""
    return os.statvfs(path).f_bsize


@dataclass
class Scenario:
    dir: str
    result: RunResult
    log: dict
    block: int


def _scenario(runner, tmp_path_factory, name, prog, setup=None, stdin=None, env_extra=None):
    d = real_tmp(tmp_path_factory, name)
    stdin_path = setup(d) if setup else None
    res = runner.instrumented(
        [runner.bin(prog), d], d, env_extra=env_extra, stdin=stdin_path or stdin
    )
    res.check(stderr_empty=(prog != "stdio_ops"))
    return Scenario(d, res, darshanlog.read_log(res.log), fs_block_size(d))
