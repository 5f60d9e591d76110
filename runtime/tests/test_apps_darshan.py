"""BTIO and FLASH-IO, the campaign's application benchmarks (reframe-checks/btio_check.py,
flashio_check.py), run once under iostudy's runtime and once under Darshan 3.5.0 (issue 45): every
record of every module in the two logs (POSIX, MPI-IO, STDIO, PNETCDF_FILE, PNETCDF_VAR, H5F and
H5D when present) is matched by name and rank, and every integer counter must equal Darshan's,
with the exceptions of DIFFERENCES and SHARED_DIFFERENCES (each with its reason), and, in a
run of several netCDF files, the accesses of PnetCDF variables (VARID: their calls are compared
summed over the run). Of the floating
counters, times differ from run to run: the variance of the ranks' bytes is compared, and for
the others which are set (not 0).

The programs are the Spack view's (`make spack SYSTEM=...`, IOSTUDY_SPACK_SYSTEM, default local),
built with Open MPI as Darshan's runtime is, or those of the folder IOSTUDY_APPS_BIN (btio and
flash_benchmark_io built as the recipes in spack-env/ build them); without either the tests skip
naming what is missing, and without DARSHAN_PREFIX (rt_darshan) naming that.

Small problems that finish in seconds: BTIO on 4 ranks (it needs a square number), class S (12^3
points, 12 dumps), write then read phase, each of its four I/O methods; FLASH-IO on 2 ranks
(about 72 MiB), the campaign's two corners of access and requests.
"""

from __future__ import annotations

import math
import os
import re
from pathlib import Path

import pytest
from rt_darshan import darshan_lib, darshan_mpirun
from rt_run import real_tmp

from iostudy.benchmarks import btio, checks, flashio
from iostudy.logs.darshanlog import read_log

SYSTEM = os.environ.get("IOSTUDY_SPACK_SYSTEM", "local")
APPS_VARIABLE = "IOSTUDY_APPS_BIN"
BTIO_PROCS, FLASH_PROCS = 4, 2
BTIO_CLASS = "S"


def app(name: str) -> Path:
    """``name`` from IOSTUDY_APPS_BIN, else from the Spack view built with Open MPI."""
    folder = os.environ.get(APPS_VARIABLE)
    if folder and (Path(folder) / name).is_file():
        return Path(folder) / name
    path, why = checks.spack_program(SYSTEM, name, "openmpi")
    if path is None:
        where = f"{APPS_VARIABLE}={folder} has no {name}" if folder else f"{APPS_VARIABLE} unset"
        pytest.skip(f"{why}; {where}")
    return path


# ---- what differs from Darshan 3.5.0, and why -------------------------------------------------
TIMING = (
    "decided by the clock, different from run to run: the fastest and slowest rank, their bytes "
    "(the ranks move different amounts), the size of the slowest access"
)
MMAP = (
    "iostudy wraps mmap and counts the calls; Darshan's LD_PRELOAD build does not (its "
    "DARSHAN_WRAP_MMAP is off) and writes -1 in every record"
)
STAT = (
    "Darshan 3.5.0 wraps only glibc's __xstat symbols, which programs built against glibc 2.33 "
    "or later no longer call: it sees none of the stat and fstat calls of libgfortran and "
    "PnetCDF; iostudy wraps stat, fstat, fstatat and statx too"
)
MODE = (
    "a shared record's mode: iostudy keeps the mode of the rank that created the file, Darshan "
    "the mode of whichever rank MPI_Reduce's order puts last (with 4 ranks under Open MPI one "
    "that opened without O_CREAT, 0)"
)
COMMON_ORDER = (
    "the four most common strides of a shared record are merged two ranks at a time and what "
    "falls out of a pair's four is lost: iostudy merges in an order the ranks fix (a "
    "non-commutative reduction), Darshan in the order Open MPI's reduction takes for its "
    "commutative operator; BTIO's independent writes tie three strides for the third "
    "place, so the two keep different ones"
)
VARID = (
    "Darshan finds a variable by its varid alone and never forgets one at a close (iostudy by "
    "file and varid: runtime/README.md): FLASH-IO writes three files one after the other, and "
    "Darshan counts some accesses of a later file's variable in the earlier file's variable of "
    "the same varid, with that variable's dimensions and type size. In a run of several files "
    "a variable's accesses are not compared; their calls, summed over the run, are"
)


def timing_counters(module: str, prefix: str) -> dict:
    names = ["FASTEST_RANK", "FASTEST_RANK_BYTES", "SLOWEST_RANK", "SLOWEST_RANK_BYTES"]
    names += ["MAX_READ_TIME_SIZE", "MAX_WRITE_TIME_SIZE"]
    return {(module, f"{prefix}_{n}"): TIMING for n in names}


#: (module, counter) -> why iostudy's value is not Darshan's, in every record
DIFFERENCES = {
    **timing_counters("POSIX", "POSIX"),
    **timing_counters("MPI-IO", "MPIIO"),
    **timing_counters("PNETCDF_VAR", "PNETCDF_VAR"),
    ("POSIX", "POSIX_MMAPS"): MMAP,
    ("POSIX", "POSIX_STATS"): STAT,
}
#: the same, in a shared (rank -1) record only
SHARED_DIFFERENCES = {
    ("POSIX", "POSIX_MODE"): MODE,
    **{
        ("POSIX", f"POSIX_STRIDE{i}_{n}"): COMMON_ORDER for i in (3, 4) for n in ("STRIDE", "COUNT")
    },
}
#: floating counters that are not times
COMPARED_FCOUNTERS = re.compile(r"_F_VARIANCE_RANK_BYTES$")
#: PNETCDF_VAR counters a variable's definition sets: the only ones of a mixed-up record
DEFINITION_VAR = {
    f"PNETCDF_VAR_{n}" for n in ("OPENS", "NDIMS", "NPOINTS", "DATATYPE_SIZE", "IS_RECORD_VAR")
}
#: PNETCDF_VAR counters of calls: one per call, whichever record Darshan finds (VARID)
CALLS_VAR = re.compile(r"PNETCDF_VAR_((INDEP|COLL|NB)_(READS|WRITES)|[IB]?(PUT|GET)_VAR.*)$")
# Open MPI's shared file pointer files are named by the launcher's and a rank's process ids.
SESSION_PIDS = [
    (re.compile(r"/pid\.\d+/"), "/pid.N/"),
    (re.compile(r"_cid-(\d+)-\d+\.sm$"), r"_cid-\1-N.sm"),
]


# ---- the comparison ------------------------------------------------------------------------
def records(log: dict, d: str) -> dict:
    """{(module, name, rank): record}, the run's folder and process ids out of the names."""
    out = {}
    for module, recs in log["records"].items():
        for rec in recs:
            name = log["name_records"][rec["id"]].replace(d, "<run>")
            for pattern, stand_in in SESSION_PIDS:
                name = pattern.sub(stand_in, name)
            out[(module, name, rec["rank"])] = rec
    return out


def several_netcdf_files(recs: dict) -> bool:
    """Whether Darshan can mix up the run's variables (VARID)."""
    return sum(module == "PNETCDF_FILE" for module, _, rank in recs if rank in (-1, 0)) > 1


def expected_difference(module: str, counter: str, rank: int) -> str | None:
    why = DIFFERENCES.get((module, counter))
    return why or (SHARED_DIFFERENCES.get((module, counter)) if rank == -1 else None)


def record_problems(key, ours: dict, theirs: dict, mixed: bool) -> list[str]:
    module, name, rank = key
    mixed_up = mixed and module == "PNETCDF_VAR"
    problems = []
    for counter, value in theirs["counters"].items():
        if mixed_up and counter not in DEFINITION_VAR or expected_difference(module, counter, rank):
            continue
        if ours["counters"][counter] != value:
            problems.append(
                f"{key} {counter}: iostudy {ours['counters'][counter]}, Darshan {value}"
            )
    for counter, value in theirs["fcounters"].items():
        mine = ours["fcounters"][counter]
        if mixed_up:  # times and bytes of the accesses Darshan counted elsewhere
            continue
        if COMPARED_FCOUNTERS.search(counter):
            if not math.isclose(mine, value, rel_tol=1e-9, abs_tol=1e-9):
                problems.append(f"{key} {counter}: iostudy {mine}, Darshan {value}")
        elif (mine == 0) != (value == 0):
            problems.append(f"{key} {counter} set in one only: iostudy {mine}, Darshan {value}")
    return problems


def variable_calls(recs: dict) -> dict:
    """{(rank, counter): calls of every variable of the run}."""
    calls = {}
    for (module, _, rank), rec in recs.items():
        for counter, value in rec["counters"].items():
            if module == "PNETCDF_VAR" and CALLS_VAR.match(counter):
                calls[(rank, counter)] = calls.get((rank, counter), 0) + value
    return calls


def compare(ours: dict, ours_dir: str, theirs: dict, theirs_dir: str) -> None:
    assert set(ours["records"]) == set(theirs["records"]), "the same modules"
    mine, darshan = records(ours, ours_dir), records(theirs, theirs_dir)
    assert sorted(mine) == sorted(darshan), "the same records: names and ranks"
    mixed = several_netcdf_files(darshan)
    problems = [p for key in darshan for p in record_problems(key, mine[key], darshan[key], mixed)]
    assert variable_calls(mine) == variable_calls(darshan), VARID
    assert not problems, "\n".join(problems)


TOOLS = {"iostudy": lambda runner, *args: runner.mpirun(*args), "darshan": darshan_mpirun}


def folders(tmp_path_factory, name: str) -> dict:
    """A folder per runtime, the paths of the same length (BTIO's input files name them: both
    read as many bytes). Skips before anything runs when there is no Darshan to compare with."""
    darshan_lib("openmpi")
    return {tool: real_tmp(tmp_path_factory, f"{name}_{tool}") for tool in TOOLS}


def both(runner, dirs: dict, nprocs: int, command, log_name: str, env=None) -> list:
    """``command(folder)`` run under iostudy's runtime, then Darshan's, each in its folder, the
    log kept as ``log_name`` there: [(log, folder)] of each."""
    runs = []
    for tool, mpirun in TOOLS.items():
        d = dirs[tool]
        res = mpirun(runner, "openmpi", nprocs, command(d), d, env)
        assert res.returncode == 0, res.describe()
        runs.append((read_log(res.log.rename(Path(d, log_name))), d))
    return runs


# ---- the runs --------------------------------------------------------------------------------
FLASH_CASES = [("collective", "nonblocking"), ("independent", "blocking")]


@pytest.mark.parametrize(
    ("access", "requests"), FLASH_CASES, ids=["-".join(c) for c in FLASH_CASES]
)
def test_flash_io_same_as_darshan(runner, tmp_path_factory, access, requests):
    program = app(flashio.PROGRAM)

    def command(d):
        return [program, *flashio.arguments(access, requests, os.path.join(d, flashio.PREFIX))]

    dirs = folders(tmp_path_factory, "flash")
    (ours, ours_dir), (theirs, theirs_dir) = both(
        runner, dirs, FLASH_PROCS, command, "flash.darshan"
    )
    compare(ours, ours_dir, theirs, theirs_dir)


def btio_runs(runner, tmp_path_factory, method: int, env=None) -> dict:
    """BTIO's write phase, then its read phase of the same file, under each runtime: {phase:
    [(log, folder)] of iostudy's and Darshan's}. The input files name the folder: the folders'
    paths have the same length, so that both read as many bytes."""
    program = app("btio")
    points, dumps = btio.class_size(BTIO_CLASS)
    dirs = folders(tmp_path_factory, f"btio{method}")
    runs = {}
    for phase in btio.PHASES:

        def command(d, phase=phase):
            text = btio.input_text(phase, points, dumps, Path(d), method)
            Path(d, f"{phase}.data").write_text(text)
            return [program, Path(d, f"{phase}.data")]

        runs[phase] = both(runner, dirs, BTIO_PROCS, command, f"{phase}.darshan", env)
    return runs


@pytest.mark.parametrize("method", sorted(btio.METHODS), ids=lambda m: btio.METHODS[m])
def test_btio_same_as_darshan(runner, tmp_path_factory, method):
    for (ours, ours_dir), (theirs, theirs_dir) in btio_runs(
        runner, tmp_path_factory, method
    ).values():
        compare(ours, ours_dir, theirs, theirs_dir)


def test_btio_per_rank_same_as_darshan(runner, tmp_path_factory):
    """Each rank's records, unreduced (DARSHAN_DISABLE_SHARED_REDUCTION), of the independent
    writes whose shared record keeps other strides than Darshan's (COMMON_ORDER): each rank's
    four most common strides, and its mode, are Darshan's."""
    env = {"DARSHAN_DISABLE_SHARED_REDUCTION": "1"}
    for (ours, ours_dir), (theirs, theirs_dir) in btio_runs(
        runner, tmp_path_factory, 1, env
    ).values():
        assert all(r["rank"] >= 0 for recs in ours["records"].values() for r in recs)
        compare(ours, ours_dir, theirs, theirs_dir)
