"""PNETCDF_VAR records of programs/pnc_var_families.c (Open MPI, 2 ranks), one run per put/get
family (var, var1, vara, vars, varm, varn, and vard: blocking only), reduced (one rank -1
record per variable) and, for one family, per rank (DARSHAN_DISABLE_SHARED_REDUCTION).

Every counter is derived by hand from the program's pattern (its header): per rank, variable v
(int) takes one independent put, one collective put, one iput and one bput (nonblocking, counted
when posted), then, reopened and inquired, one independent get, one collective get and one iget;
w (double, flexible API) one collective put and one collective get; r (int, record variable)
one collective put_vara of one record. An access's size is the elements it names times the
type's size; its tuple is that size, then the lengths and strides of the last five dimensions
as Darshan 3.5.0 fills them (vara: lengths; vars, varm: lengths and strides; the others: none).
The oracle is PyDarshan (read_log in a subprocess; file_rec_id through PyDarshan's backend).

With a Darshan 3.5.0 build (DARSHAN_PREFIX, rt_darshan: its Open MPI installation), the
same programs run under Darshan too and every counter is compared; the differences are listed
(and explained) in DARSHAN_DIFFERENCES.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from rt_checks import records_named
from rt_darshan import darshan_mpirun
from rt_killed import kill_when_ready, merged, mmap_logs
from rt_run import Runner, Scenario, real_tmp

from iostudy.logs.darshanlog import read_log

NPROCS = 2
NY, NX_RANK = 4, 8
FAMILIES = ["var", "var1", "vara", "vars", "varm", "varn", "vard"]
# Elements one access names, and the lengths and strides of its tuple (dimensions y, x).
ELEMENTS = {
    "var": NY * NX_RANK * NPROCS,
    "var1": 1,
    "vara": 32,
    "vars": 8,
    "varm": 8,
    "varn": 16,
    "vard": 32,
}
LENGTHS = {"vara": (4, 8), "vars": (2, 4), "varm": (2, 4)}
STRIDES = {"vars": (2, 2), "varm": (2, 2)}
BINS = ["0_100", "100_1K", "1K_10K"]


def program(runner):
    prog = runner.tests_dir / "pnc_var_families-openmpi"
    if not prog.is_file():
        pytest.skip(
            f"{prog.name} not built: libpnetcdf-dev (Open MPI build) was not found at configure "
            f"time; install it (ci/apt-packages.txt) and run `make setup`"
        )
    return runner.mpi_program("pnc_var_families", "openmpi")


def run_family(runner, tmp_path_factory, family: str, mode: str, env=None) -> Scenario:
    prog = program(runner)
    d = real_tmp(tmp_path_factory, f"pnc_{family}_{mode}")
    env = dict(env or {})
    if mode == "per-rank":
        env["DARSHAN_DISABLE_SHARED_REDUCTION"] = "1"
    res = runner.mpirun("openmpi", NPROCS, [prog, d, family], d, env_extra=env)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS} family={family}\n", res.describe()
    s = Scenario(d, res, read_log(res.log), 0)
    s.mode, s.family = mode, family
    return s


RUNS = [(f, "reduced") for f in FAMILIES] + [("vara", "per-rank")]


@pytest.fixture(scope="module", params=RUNS, ids=[f"{f}-{m}" for f, m in RUNS])
def pnc_run(request, runner, tmp_path_factory) -> Scenario:
    family, mode = request.param
    return run_family(runner, tmp_path_factory, family, mode)


def bin_of(size: int) -> str:
    return BINS[0] if size <= 100 else BINS[1] if size <= 1024 else BINS[2]


def tuple_counters(family: str, size: int, count: int) -> dict:
    c = {"PNETCDF_VAR_ACCESS1_ACCESS": size, "PNETCDF_VAR_ACCESS1_COUNT": count}
    for d, n in enumerate(LENGTHS.get(family, ()), 1):
        c[f"PNETCDF_VAR_ACCESS1_LENGTH_D{d}"] = n
    for d, n in enumerate(STRIDES.get(family, ()), 1):
        c[f"PNETCDF_VAR_ACCESS1_STRIDE_D{d}"] = n
    return c


def expected(family: str, var: str, ranks: int) -> dict:
    """The non-zero integer counters of variable ``var`` summed over ``ranks`` ranks (the rank
    extremes apart)."""
    P = "PNETCDF_VAR_"
    k = family.upper()
    if var == "r":  # one collective put_vara of one record of 8 ints
        c = {
            "OPENS": 1,
            "COLL_WRITES": 1,
            "BYTES_WRITTEN": 32,
            "PUT_VARA": 1,
            "SIZE_WRITE_AGG_0_100": 1,
        }
        c = {P + n: v * ranks for n, v in c.items()}
        c.update(
            tuple_counters("vara", 32, ranks)
            | {P + "ACCESS1_LENGTH_D1": 1, P + "ACCESS1_LENGTH_D2": 8}
        )
        c.update(
            {
                P + "MAX_WRITE_TIME_SIZE": 32,
                P + "NDIMS": 2,
                P + "NPOINTS": NPROCS * NX_RANK,
                P + "DATATYPE_SIZE": 4,
                P + "IS_RECORD_VAR": 1,
            }
        )
        return c
    tsize = 4 if var == "v" else 8
    size = ELEMENTS[family] * tsize
    if var == "v":
        c = {
            "OPENS": 2,
            "INDEP_WRITES": 1,
            "COLL_WRITES": 1,
            "NB_WRITES": 2,
            "INDEP_READS": 1,
            "COLL_READS": 1,
            "NB_READS": 1,
            "BYTES_WRITTEN": 4 * size,
            "BYTES_READ": 3 * size,
            "RW_SWITCHES": 1,
            f"PUT_{k}": 2,
            f"IPUT_{k}": 1,
            f"BPUT_{k}": 1,
            f"GET_{k}": 2,
            f"IGET_{k}": 1,
            f"SIZE_WRITE_AGG_{bin_of(size)}": 4,
            f"SIZE_READ_AGG_{bin_of(size)}": 3,
        }
        accesses = 7
        if family == "vard":  # blocking only: no iput, bput, iget
            for n in ("NB_WRITES", "NB_READS", "IPUT_VARD", "BPUT_VARD", "IGET_VARD"):
                del c[n]
            c |= {
                "BYTES_WRITTEN": 2 * size,
                "BYTES_READ": 2 * size,
                "PUT_VARD": 2,
                "GET_VARD": 2,
                f"SIZE_WRITE_AGG_{bin_of(size)}": 2,
                f"SIZE_READ_AGG_{bin_of(size)}": 2,
            }
            accesses = 4
    else:
        c = {
            "OPENS": 2,
            "COLL_WRITES": 1,
            "COLL_READS": 1,
            "BYTES_WRITTEN": size,
            "BYTES_READ": size,
            "RW_SWITCHES": 1,
            f"PUT_{k}": 1,
            f"GET_{k}": 1,
            f"SIZE_WRITE_AGG_{bin_of(size)}": 1,
            f"SIZE_READ_AGG_{bin_of(size)}": 1,
        }
        accesses = 2
    c = {P + n: v * ranks for n, v in c.items()}
    c.update(tuple_counters(family, size, accesses * ranks))
    c.update(
        {
            P + "MAX_READ_TIME_SIZE": size,
            P + "MAX_WRITE_TIME_SIZE": size,
            P + "NDIMS": 2,
            P + "NPOINTS": NY * NX_RANK * NPROCS,
            P + "DATATYPE_SIZE": tsize,
        }
    )
    return c


def var_records(run: Scenario, var: str) -> tuple[list, int]:
    name = os.path.join(run.dir, f"{run.family}.nc:{var}")
    recs = records_named(run.log, "PNETCDF_VAR", name)
    if run.mode == "reduced":
        assert [r["rank"] for r in recs] == [-1], f"{name}: one record reduced over all ranks"
        return recs, NPROCS
    assert sorted(r["rank"] for r in recs) == list(range(NPROCS)), f"{name}: one per rank"
    return recs, 1


EXTREMES = ["FASTEST_RANK", "FASTEST_RANK_BYTES", "SLOWEST_RANK", "SLOWEST_RANK_BYTES"]


def test_module_version(pnc_run):
    assert pnc_run.log["modules"]["PNETCDF_VAR"]["ver"] == 1


@pytest.mark.parametrize("var", ["v", "w", "r"])
def test_counters(pnc_run: Scenario, var: str):
    recs, ranks = var_records(pnc_run, var)
    want = expected(pnc_run.family, var, ranks)
    for rec in recs:
        c = dict(rec["counters"])
        extremes = {n: c.pop(f"PNETCDF_VAR_{n}") for n in EXTREMES}
        assert {n: v for n, v in c.items() if v} == want
        if ranks == 1:
            assert set(extremes.values()) == {0}, "rank extremes only in a reduced record"
        else:
            per_rank = (
                c["PNETCDF_VAR_BYTES_READ"] // ranks + c["PNETCDF_VAR_BYTES_WRITTEN"] // ranks
            )
            assert extremes["FASTEST_RANK"] in range(NPROCS)
            assert extremes["SLOWEST_RANK"] in range(NPROCS)
            assert extremes["FASTEST_RANK_BYTES"] == extremes["SLOWEST_RANK_BYTES"] == per_rank


# Durations are differences of clock readings, timestamps those readings moved to the job's
# start: the two roundings can differ in the last bits.
ROUNDING = 1e-9


@pytest.mark.parametrize("var", ["v", "w", "r"])
def test_times(pnc_run: Scenario, var: str):
    recs, ranks = var_records(pnc_run, var)
    run_time = pnc_run.log["job"]["run_time"]
    for rec in recs:
        f = {k.removeprefix("PNETCDF_VAR_F_"): v for k, v in rec["fcounters"].items()}
        assert 0 < f["OPEN_START_TIMESTAMP"] <= f["OPEN_END_TIMESTAMP"] < run_time, f
        assert f["CLOSE_START_TIMESTAMP"] == f["CLOSE_END_TIMESTAMP"] == 0, "no variable close"
        assert 0 < f["META_TIME"], f
        assert f["OPEN_START_TIMESTAMP"] < f["WRITE_START_TIMESTAMP"] <= f["WRITE_END_TIMESTAMP"]
        span = f["WRITE_END_TIMESTAMP"] - f["WRITE_START_TIMESTAMP"]
        assert 0 < f["MAX_WRITE_TIME"] <= f["WRITE_TIME"] <= span * ranks + ROUNDING, f
        if var == "r":
            assert f["READ_START_TIMESTAMP"] == f["READ_TIME"] == f["MAX_READ_TIME"] == 0, f
            continue
        # every read follows every write (close, reopen)
        assert f["WRITE_END_TIMESTAMP"] < f["READ_START_TIMESTAMP"] <= f["READ_END_TIMESTAMP"]
        span = f["READ_END_TIMESTAMP"] - f["READ_START_TIMESTAMP"]
        assert 0 < f["MAX_READ_TIME"] <= f["READ_TIME"] <= span * ranks + ROUNDING, f
        if ranks > 1:
            assert f["FASTEST_RANK_TIME"] <= f["SLOWEST_RANK_TIME"]
            assert f["VARIANCE_RANK_BYTES"] == 0, "every rank moves the same bytes"
        else:
            assert f["FASTEST_RANK_TIME"] == f["SLOWEST_RANK_TIME"] == 0


FILE_REC_IDS = """
import json, sys
from darshan.backend import cffi_backend as b
log = b.log_open(sys.argv[1])
out = []
while (r := b.log_get_record(log, "PNETCDF_VAR", dtype="dict")) is not None:
    out.append([r["id"], r["file_rec_id"]])
b.log_close(log)
print(json.dumps(out))
"""


def file_rec_ids(log_path) -> dict:
    """Record id -> file_rec_id of every PNETCDF_VAR record, as PyDarshan's backend reads them."""
    out = subprocess.run(
        [sys.executable, "-c", FILE_REC_IDS, str(log_path)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    ).stdout
    return {rid: fid for rid, fid in json.loads(out)}


def test_file_rec_id(pnc_run: Scenario):
    """Each variable names its file: file_rec_id is the PNETCDF_FILE record's id."""
    f = records_named(
        pnc_run.log, "PNETCDF_FILE", os.path.join(pnc_run.dir, f"{pnc_run.family}.nc")
    )
    assert f, "the file's PNETCDF_FILE record"
    ids = file_rec_ids(pnc_run.result.log)
    assert len(ids) == 3
    assert set(ids.values()) == {f[0]["id"]}


# ---- differential: Darshan 3.5.0 on the same programs ----------------------------------------
# What differs from Darshan on purpose, by family and variable: counter -> why.
WHOLE_VAR = (
    "Darshan multiplies a whole-variable access (put_var, get_var) by the record dimension's "
    "current length whenever the file has one, record variable or not: pnc_var_families' v and "
    "w are fixed-size variables of a file with a record dimension of length 0 while they are "
    "written and 1 when read, pnc_var_edges' scalar s is put when it is 2; iostudy counts the "
    "variable's own elements"
)
WHOLE_VAR_COUNTERS = [
    "BYTES_WRITTEN",
    "BYTES_READ",
    "MAX_WRITE_TIME_SIZE",
    "MAX_READ_TIME_SIZE",
    "ACCESS1_ACCESS",
    "ACCESS1_COUNT",
    "ACCESS2_ACCESS",
    "ACCESS2_COUNT",
    "SIZE_WRITE_AGG_0_100",
    "SIZE_WRITE_AGG_100_1K",
    "SIZE_READ_AGG_0_100",
    "SIZE_READ_AGG_100_1K",
    "FASTEST_RANK_BYTES",
    "SLOWEST_RANK_BYTES",
]
# The fastest and slowest rank are decided by times, which differ from run to run.
TIMING = ["FASTEST_RANK", "SLOWEST_RANK"]


def darshan_differences(family: str, var: str) -> dict:
    diffs = {f"PNETCDF_VAR_{n}": "timing" for n in TIMING}
    if family == "var" and var in ("v", "w"):
        diffs.update({f"PNETCDF_VAR_{n}": WHOLE_VAR for n in WHOLE_VAR_COUNTERS})
    return diffs


DARSHAN_RUNS = [(f, "reduced") for f in FAMILIES] + [("vars", "per-rank")]


@pytest.mark.parametrize(
    ("family", "mode"), DARSHAN_RUNS, ids=[f"{f}-{m}" for f, m in DARSHAN_RUNS]
)
def test_same_as_darshan(runner, tmp_path_factory, family, mode):
    prog = program(runner)
    d = real_tmp(tmp_path_factory, f"pnc_{family}_darshan")
    env = {"DARSHAN_DISABLE_SHARED_REDUCTION": "1"} if mode == "per-rank" else {}
    # Debian's PnetCDF is built with Open MPI
    res = darshan_mpirun(runner, "openmpi", NPROCS, [prog, d, family], d, env)
    assert res.returncode == 0, res.describe()
    theirs = read_log(res.log)
    ours = run_family(runner, tmp_path_factory, family, mode)
    for var in ("v", "w", "r"):
        name = f"{family}.nc:{var}"
        mine = records_named(ours.log, "PNETCDF_VAR", os.path.join(ours.dir, name))
        other = records_named(theirs, "PNETCDF_VAR", os.path.join(d, name))
        assert sorted(r["rank"] for r in mine) == sorted(r["rank"] for r in other)
        by_rank = {r["rank"]: r for r in mine}
        diffs = darshan_differences(family, var)
        for b in other:
            a = by_rank[b["rank"]]
            for k, v in b["counters"].items():
                if k not in diffs:
                    assert a["counters"][k] == v, (
                        f"{name} {k}: ours {a['counters'][k]}, Darshan {v}"
                    )
            for k, v in b["fcounters"].items():  # times differ; which are set must not
                if k.endswith("VARIANCE_RANK_TIME"):  # 0 when the ranks' times tie, by the clock
                    continue
                assert (a["fcounters"][k] == 0) == (v == 0), f"{name} {k}: {a['fcounters'][k]}, {v}"


def test_killed_job_keeps_its_var_records(runner, tmp_path_factory, capsys):
    """The memory-mapped logs of a killed job hold each rank's PNETCDF_VAR records; merged
    (`iostudy logs merge`), one rank -1 record per variable, reduced as at a normal end."""
    prog = program(runner)
    d = real_tmp(tmp_path_factory, "pnc_killed")
    kill_when_ready(runner, [prog, d, "vars", "wait"], d, NPROCS)
    names = {var: os.path.join(d, f"vars.nc:{var}") for var in ("v", "w", "r")}
    for path in mmap_logs(d):
        log = read_log(path)
        for var, name in names.items():
            (rec,) = records_named(log, "PNETCDF_VAR", name)
            assert {k: v for k, v in rec["counters"].items() if v} == expected("vars", var, 1)
    log = merged(d, capsys)
    for var, name in names.items():
        (rec,) = records_named(log, "PNETCDF_VAR", name)
        assert rec["rank"] == -1
        c = {k: v for k, v in rec["counters"].items() if v}
        for n in EXTREMES:
            c.pop(f"PNETCDF_VAR_{n}", None)
        assert c == expected("vars", var, NPROCS)


# ---- edge cases: programs/pnc_var_edges.c ------------------------------------------------------
def access(slot: int, size: int, count: int, lengths=(), strides=()) -> dict:
    c = {f"PNETCDF_VAR_ACCESS{slot}_ACCESS": size, f"PNETCDF_VAR_ACCESS{slot}_COUNT": count}
    for d, n in enumerate(lengths, 1):
        c[f"PNETCDF_VAR_ACCESS{slot}_LENGTH_D{d}"] = n
    for d, n in enumerate(strides, 1):
        c[f"PNETCDF_VAR_ACCESS{slot}_STRIDE_D{d}"] = n
    return c


def edges_expected(var: str) -> dict:
    """The reduced record of each variable of pnc_var_edges.c (its header), NPROCS ranks."""
    P, n = "PNETCDF_VAR_", NPROCS
    if var == "h":
        # Per rank A (12 bytes, lengths of the last five dimensions 1,1,1,1,3), B (A with the
        # strides 1), C (2 bytes, lengths 1) three times, a zero-size vara (bin 0_100, no
        # tuple), D (var1: 2 bytes, no lengths) twice. Each rank ranks them C 3, D 2, then the
        # ties by first value, the newcomer above: B 1, A 1. The reduction sums equal tuples
        # and ranks in's slots in order: C 6, D 4, A 2 (a newcomer tying with B 2: above).
        c = {
            "OPENS": 3,
            "COLL_WRITES": 8,
            "BYTES_WRITTEN": 34,
            "PUT_VARA": 5,
            "PUT_VARS": 1,
            "PUT_VAR1": 2,
            "SIZE_WRITE_AGG_0_100": 8,
        }
        c = {P + k: v * n for k, v in c.items()}
        c |= {P + "NDIMS": 6, P + "NPOINTS": 2 * 3 * NPROCS, P + "DATATYPE_SIZE": 2}
        c |= access(1, 2, 3 * n, (1, 1, 1, 1, 1)) | access(2, 2, 2 * n)
        c |= access(3, 12, n, (1, 1, 1, 1, 3)) | access(4, 12, n, (1, 1, 1, 1, 3), (1,) * 5)
        return c
    if var == "t":  # one record put, then the whole variable (NPROCS records) got
        c = {
            "OPENS": 1,
            "COLL_WRITES": 1,
            "COLL_READS": 1,
            "BYTES_WRITTEN": 16,
            "BYTES_READ": 16 * NPROCS,
            "RW_SWITCHES": 1,
            "PUT_VARA": 1,
            "GET_VAR": 1,
            "SIZE_WRITE_AGG_0_100": 1,
            "SIZE_READ_AGG_0_100": 1,
        }
        c = {P + k: v * n for k, v in c.items()}
        c |= {
            P + "MAX_WRITE_TIME_SIZE": 16,
            P + "MAX_READ_TIME_SIZE": 16 * NPROCS,
            P + "NDIMS": 2,
            P + "NPOINTS": 4,
            P + "DATATYPE_SIZE": 4,
            P + "IS_RECORD_VAR": 1,
        }
        # the larger size above its tie
        return c | access(1, 16 * NPROCS, n) | access(2, 16, n, (1, 4))
    c = {
        "OPENS": 1,
        "COLL_WRITES": 1,
        "COLL_READS": 1,
        "BYTES_WRITTEN": 8,
        "BYTES_READ": 8,
        "RW_SWITCHES": 1,
        "PUT_VAR": 1,
        "GET_VAR1": 1,
        "SIZE_WRITE_AGG_0_100": 1,
        "SIZE_READ_AGG_0_100": 1,
    }
    c = {P + k: v * n for k, v in c.items()}
    c |= {
        P + "MAX_WRITE_TIME_SIZE": 8,
        P + "MAX_READ_TIME_SIZE": 8,
        P + "NPOINTS": 1,
        P + "DATATYPE_SIZE": 8,
    }
    return c | access(1, 8, 2 * n)


def run_edges(runner, tmp_path_factory, darshan=False) -> tuple[str, dict]:
    """pnc_var_edges.c run under this runtime, or under Darshan: its directory, log."""
    prog = runner.tests_dir / "pnc_var_edges-openmpi"
    if not prog.is_file():
        program(runner)  # skips naming the package
    d = real_tmp(tmp_path_factory, "pnc_edges")
    mpirun = darshan_mpirun if darshan else Runner.mpirun
    res = mpirun(runner, "openmpi", NPROCS, [prog, d], d)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS} edges\n", res.describe()
    return d, read_log(res.log)


@pytest.fixture(scope="module")
def edges_run(runner, tmp_path_factory):
    return run_edges(runner, tmp_path_factory)


@pytest.mark.parametrize("var", ["h", "t", "s"])
def test_edges(edges_run, var):
    d, log = edges_run
    (rec,) = records_named(log, "PNETCDF_VAR", os.path.join(d, f"edges.nc:{var}"))
    assert rec["rank"] == -1
    c = {k: v for k, v in rec["counters"].items() if v}
    for n in EXTREMES:
        c.pop(f"PNETCDF_VAR_{n}", None)
    if var == "h":  # the size of the slowest put: whichever it was
        assert c.pop("PNETCDF_VAR_MAX_WRITE_TIME_SIZE", 0) in (12, 2, 0)
    assert c == edges_expected(var)


def test_edges_same_as_darshan(runner, tmp_path_factory, edges_run):
    d, ours = edges_run
    # Debian's PnetCDF is built with Open MPI
    theirs_dir, theirs = run_edges(runner, tmp_path_factory, darshan=True)
    diffs = {
        "h": {f"PNETCDF_VAR_{n}": "timing" for n in TIMING + ["MAX_WRITE_TIME_SIZE"]},
        "t": darshan_differences("vara", "t"),
        "s": darshan_differences("var", "v"),  # a scalar, whole, in a file with records
    }
    for var, skip in diffs.items():
        [a] = records_named(ours, "PNETCDF_VAR", os.path.join(d, f"edges.nc:{var}"))
        [b] = records_named(theirs, "PNETCDF_VAR", os.path.join(theirs_dir, f"edges.nc:{var}"))
        for k, v in b["counters"].items():
            if k not in skip:
                assert a["counters"][k] == v, f"{var} {k}: iostudy {a['counters'][k]}, Darshan {v}"
