"""Darshan 3.5.0 as the oracle of the differential tests: DARSHAN_PREFIX names one or more of its
installations, separated by os.pathsep (a libdarshan.so is built against one MPI, so a prefix per
flavour, and one without MPI for programs without it). CI has none: each lookup skips, naming
the variable and what it lacked."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

VARIABLE = "DARSHAN_PREFIX"


def darshan_prefixes() -> list[Path]:
    prefixes = [Path(p) for p in os.environ.get(VARIABLE, "").split(os.pathsep) if p]
    if not prefixes:
        pytest.skip(f"{VARIABLE} (a Darshan 3.5.0 installation) is not set")
    return prefixes


def darshan_tool(name: str) -> Path:
    """darshan-util's program ``name`` (darshan-parser, darshan-dxt-parser)."""
    for prefix in darshan_prefixes():
        if (prefix / "bin" / name).is_file():
            return prefix / "bin" / name
    pytest.skip(f"no bin/{name} in {VARIABLE}")


def darshan_mpi(lib: Path) -> str | None:
    """The MPI flavour libdarshan.so was built against, from the libraries it needs."""
    out = subprocess.run(["ldd", lib], capture_output=True, text=True).stdout
    if "libmpich" in out:
        return "mpich"
    return "openmpi" if "libmpi.so" in out else None


def _libs() -> list[Path]:
    libs = [p / "lib" / "libdarshan.so" for p in darshan_prefixes()]
    return [lib for lib in libs if lib.is_file()]


def darshan_lib(flavour: str) -> Path:
    """The runtime of DARSHAN_PREFIX built against MPI ``flavour`` (openmpi, mpich)."""
    libs = [lib for lib in _libs() if darshan_mpi(lib) == flavour]
    if not libs:
        pytest.skip(f"no lib/libdarshan.so built against {flavour} in {VARIABLE}")
    return libs[0]


def darshan_any_lib() -> Path:
    """A runtime of DARSHAN_PREFIX for a program without MPI, the one built without MPI first."""
    libs = _libs()
    if not libs:
        pytest.skip(f"no lib/libdarshan.so in {VARIABLE}")
    return sorted(libs, key=lambda lib: darshan_mpi(lib) is not None)[0]


def darshan_mpirun(runner, flavour: str, nprocs: int, cmd: list, d: str, env_extra=None):
    """``cmd`` on ``nprocs`` ranks of ``flavour`` under Darshan 3.5.0's runtime instead of
    iostudy's: Darshan honours the variables iostudy's runs set, so its log is the result's
    log (``d``/x.darshan)."""
    env = {"LD_PRELOAD": str(darshan_lib(flavour)), **(env_extra or {})}
    return runner.mpirun(flavour, nprocs, cmd, d, env_extra=env)


def darshan_parser_records(log, module: str, counters: list[str]) -> list:
    """darshan-parser's records of ``module`` in ``log``, from its lines "module, rank, record id,
    counter, value, file name, mount point, fs type": [name, [the counters' values]], one a
    record (id and rank), in the log's order."""
    res = subprocess.run(
        [darshan_tool("darshan-parser"), str(log)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    records: dict = {}
    for line in res.stdout.splitlines():
        fields = line.split("\t")
        if len(fields) >= 6 and fields[0] == module:
            rec = records.setdefault((fields[1], fields[2]), (fields[5], {}))
            rec[1][fields[3]] = fields[4]
    return [[name, [int(values[c]) for c in counters]] for name, values in records.values()]
