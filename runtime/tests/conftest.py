"""Fixtures for the end-to-end tests of the iostudy instrumentation runtime.

The runtime (build/runtime/libiostudy.so) is LD_PRELOADed into small C programs with a
known I/O pattern (runtime/tests/programs/, built into build/runtime/tests/); the Darshan
log it writes is read by the real PyDarshan in a subprocess (iostudy.logs.darshanlog.read_log) and
the counters are compared with values derived by hand from the programs.

Paths are located relative to this file (runtime/tests/ -> repository root ../..).
IOSTUDY_BUILD_DIR may point to another runtime build directory.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rt_run import REPO_ROOT, SETUP_HINT, Runner, Scenario, _scenario, runtime_build_dir

from iostudy.logs import darshanlog

# ---------------------------------------------------------------------------------------------
# fixtures


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return REPO_ROOT


@pytest.fixture(scope="session")
def build_dir() -> Path:
    d = runtime_build_dir()
    lib = d / "libiostudy.so"
    if not lib.is_file():
        pytest.fail(f"{lib} not found: {SETUP_HINT}", pytrace=False)
    return d


@pytest.fixture(scope="session")
def libiostudy(build_dir) -> Path:
    return build_dir / "libiostudy.so"


@pytest.fixture(scope="session")
def runner(build_dir, libiostudy) -> Runner:
    return Runner(build_dir, libiostudy)


@pytest.fixture(scope="session")
def run_instrumented(runner):
    """run_instrumented(cmd, env_extra, tmp_path, stdin=None, cwd=None) -> RunResult"""

    def _run(cmd, env_extra=None, tmp_path=None, stdin=None, cwd=None, timeout=120):
        assert tmp_path is not None, "run_instrumented needs a tmp_path for the log"
        return runner.instrumented(
            cmd, tmp_path, env_extra=env_extra, stdin=stdin, cwd=cwd, timeout=timeout
        )

    return _run


@pytest.fixture(scope="session")
def read_log():
    """read_log(path) -> dict, PyDarshan's view of the log (fails on any reader error)."""
    return darshanlog.read_log


# Session-wide runs shared by several test files (each program runs once per session).


@pytest.fixture(scope="session")
def posix_write_run(runner, tmp_path_factory) -> Scenario:
    return _scenario(runner, tmp_path_factory, "posix_write", "posix_write")


def _make_read_file(d):
    with open(os.path.join(d, "read.dat"), "wb") as f:
        f.write(bytes(i % 251 for i in range(65536)))


@pytest.fixture(scope="session")
def posix_read_run(runner, tmp_path_factory) -> Scenario:
    return _scenario(runner, tmp_path_factory, "posix_read", "posix_read", setup=_make_read_file)


def _make_stdin(d):
    p = os.path.join(d, "stdin.txt")
    with open(p, "w") as f:
        f.write("first line\nsecond 99\n")
    return p


@pytest.fixture(scope="session")
def stdio_run(runner, tmp_path_factory) -> Scenario:
    return _scenario(runner, tmp_path_factory, "stdio_ops", "stdio_ops", setup=_make_stdin)


@pytest.fixture(scope="session")
def unlocked_run(runner, tmp_path_factory) -> Scenario:
    return _scenario(runner, tmp_path_factory, "stdio_unlocked", "stdio_unlocked")


def _make_fortify_inputs(d):
    for n in ("fort.dat", "fort_p.dat"):
        with open(os.path.join(d, n), "wb") as f:
            f.write(b"x" * 8192)
    with open(os.path.join(d, "fort.txt"), "w") as f:
        f.write("a" * 149 + "\n" + "b" * 99 + "\n")


@pytest.fixture(scope="session")
def fortify_run(runner, tmp_path_factory) -> Scenario:
    """programs/fortify.c, built with -O2 -D_FORTIFY_SOURCE=2."""
    return _scenario(runner, tmp_path_factory, "fortify", "fortify", setup=_make_fortify_inputs)
