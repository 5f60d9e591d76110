"""H5D records (one per HDF5 dataset) of programs/h5d_calls.c and programs/h5d_shared.c (Open MPI,
2 ranks), read by PyDarshan; every counter is derived by hand from the programs' parameters
(their headers give the patterns), and compared with Darshan 3.5.0's on the same programs when a
reference build is named by DARSHAN_PREFIX.

Darshan's rules the expected values follow (darshan-runtime 3.5.0, lib/darshan-hdf5.c):
- a record is named "<file>:<location's path><name>": "f.h5:/contig" for a dataset of the root
  group, "f.h5:/ginner" for "inner" created from group "/g" (no separator is added), and
  "f.h5://chunked" for a dataset opened by H5Oopen_by_idx (its name is its own path);
- an access moves (points of the file selection) x (the dataset's datatype size) bytes; H5S_ALL
  is the dataset's points; a none selection moves 0 bytes (counted as a read, in the 0-100 bin,
  never among the common accesses);
- an access is its size, then count x block and stride of the first five dimensions of a
  regular hyperslab, the fifth first: a 2-D hyperslab fills LENGTH/STRIDE_D5 (first dimension)
  and D4 (second); other selections have zero lengths and strides;
- the shape (dimensions, points, datatype size, chunks with D1 the last dimension) is the last
  open's; USE_DEPRECATED is the last open's (H5Dcreate1, H5Dopen1).

Against Darshan 3.5.0 (DARSHAN_PREFIX, rt_darshan: its installation built with the HDF5 module for
Debian's Open MPI HDF5), the records have the same names, ranks and counters; only what the clock
decides is left out of the comparison (the sizes of the slowest read and write, the fastest and
slowest rank with their bytes, the fcounters). No other difference was found on these programs.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from rt_checks import records_named
from rt_darshan import darshan_mpirun, darshan_tool
from rt_hash import darshan_hash
from rt_killed import kill_when_ready, merged, mmap_logs
from rt_run import Scenario, real_tmp

from iostudy.logs.darshanlog import read_log

NPROCS = 2
MODES = ["reduced", "per-rank"]
ROUNDING = 1e-9
BINS = [
    "0_100",
    "100_1K",
    "1K_10K",
    "10K_100K",
    "100K_1M",
    "1M_4M",
    "4M_10M",
    "10M_100M",
    "100M_1G",
    "1G_PLUS",
]


def program(runner, name: str):
    prog = runner.tests_dir / f"{name}-openmpi"
    if not prog.is_file():
        pytest.skip(
            f"{prog.name} not built: libhdf5-openmpi-dev (Open MPI build) was not found at "
            f"configure time; install it (ci/apt-packages.txt) and run `make setup`"
        )
    return runner.mpi_program(name, "openmpi")


def run(runner, d: str, name: str, env=None, lib=None) -> Scenario:
    res = runner.mpirun("openmpi", NPROCS, [program(runner, name), d], d, env_extra=env)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS}\n", res.describe()
    return Scenario(d, res, read_log(res.log), 0)


@pytest.fixture(scope="module")
def calls_run(runner, tmp_path_factory) -> Scenario:
    return run(runner, real_tmp(tmp_path_factory, "h5d_calls"), "h5d_calls")


@pytest.fixture(scope="module", params=MODES)
def shared_run(request, runner, tmp_path_factory) -> Scenario:
    env = {"DARSHAN_DISABLE_SHARED_REDUCTION": "1"} if request.param == "per-rank" else {}
    s = run(runner, real_tmp(tmp_path_factory, f"h5d_shared_{request.param}"), "h5d_shared", env)
    s.mode = request.param
    return s


def zeros() -> dict:
    """Every H5D counter that is not a timing's: 0."""
    c = {
        f"H5D_{k}": 0
        for k in (
            "OPENS READS WRITES FLUSHES BYTES_READ BYTES_WRITTEN RW_SWITCHES "
            "REGULAR_HYPERSLAB_SELECTS IRREGULAR_HYPERSLAB_SELECTS POINT_SELECTS "
            "DATASPACE_NDIMS DATASPACE_NPOINTS DATATYPE_SIZE USE_MPIIO_COLLECTIVE "
            "USE_DEPRECATED"
        ).split()
    }
    for op in ("READ", "WRITE"):
        c.update({f"H5D_SIZE_{op}_AGG_{b}": 0 for b in BINS})
    for d in range(1, 6):
        c[f"H5D_CHUNK_SIZE_D{d}"] = 0
    for i in range(1, 5):
        c.update(access(i, 0, 0))
    return c


def access(i: int, size: int, count: int, lengths=(), strides=()) -> dict:
    """ACCESS<i>: size, LENGTH/STRIDE_D1..D5 (given from D1 on, the rest 0), its count."""
    c = {f"H5D_ACCESS{i}_ACCESS": size, f"H5D_ACCESS{i}_COUNT": count}
    for d in range(1, 6):
        c[f"H5D_ACCESS{i}_LENGTH_D{d}"] = lengths[d - 1] if d <= len(lengths) else 0
        c[f"H5D_ACCESS{i}_STRIDE_D{d}"] = strides[d - 1] if d <= len(strides) else 0
    return c


def bins(op: str, sizes: list[int]) -> dict:
    bounds = [100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824]
    c = {}
    for s in sizes:
        key = f"H5D_SIZE_{op}_AGG_{BINS[sum(s > b for b in bounds)]}"
        c[key] = c.get(key, 0) + 1
    return c


def expected(
    opens,
    reads,
    writes,
    shape,
    *,
    flushes=0,
    rw=0,
    regular=0,
    irregular=0,
    points=0,
    accesses=(),
    chunk=(),
    deprecated=0,
    collective=0,
) -> dict:
    """The counters of a dataset: reads and writes are lists of access sizes; shape is
    (dimensions, points, datatype size); accesses [(size, count, lengths, strides)]."""
    c = zeros()
    c.update(
        H5D_OPENS=opens,
        H5D_READS=len(reads),
        H5D_WRITES=len(writes),
        H5D_FLUSHES=flushes,
        H5D_BYTES_READ=sum(reads),
        H5D_BYTES_WRITTEN=sum(writes),
        H5D_RW_SWITCHES=rw,
        H5D_REGULAR_HYPERSLAB_SELECTS=regular,
        H5D_IRREGULAR_HYPERSLAB_SELECTS=irregular,
        H5D_POINT_SELECTS=points,
        H5D_DATASPACE_NDIMS=shape[0],
        H5D_DATASPACE_NPOINTS=shape[1],
        H5D_DATATYPE_SIZE=shape[2],
        H5D_USE_DEPRECATED=deprecated,
        H5D_USE_MPIIO_COLLECTIVE=collective,
    )
    c.update(bins("READ", reads))
    c.update(bins("WRITE", writes))
    for d, n in enumerate(chunk, 1):
        c[f"H5D_CHUNK_SIZE_D{d}"] = n
    for i, (size, count, lengths, strides) in enumerate(accesses, 1):
        c.update(access(i, size, count, lengths, strides))
    return c


# programs/h5d_calls.c, per rank (its own file). Sizes: contig 16 x 32 int = 512 points, 2048
# bytes; its regular hyperslab count {3,2} block {2,4} stride {4,8}: 6 x 8 = 48 points, 192
# bytes, lengths D5 = 6, D4 = 8, strides D5 = 4, D4 = 8; irregular 2x2 + 3x3 = 13 points, 52
# bytes; 5 points, 20 bytes; none, 0. Sequence W(all) W(reg) flush R(reg) W(irr) R(pts) R(none),
# then R(all) after H5Oopen: 3 read/write switches. chunked 4 x 6 x 8 double = 1536 bytes, chunks
# {2,3,4}; old 100 short = 200 bytes; inner 10 long long = 80 bytes.
CONTIG = expected(
    2,
    [192, 20, 0, 2048],
    [2048, 192, 52],
    (2, 512, 4),
    flushes=1,
    rw=3,
    regular=2,
    irregular=1,
    points=1,
    accesses=[
        (2048, 2, (), ()),
        (192, 2, (0, 0, 0, 8, 6), (0, 0, 0, 8, 4)),
        (52, 1, (), ()),
        (20, 1, (), ()),
    ],
)
MANY = [(1, 2), (32, 1), (31, 1), (30, 1)]  # (ints, count) of the four most common
CALLS = {
    "/contig": CONTIG,
    "/chunked": expected(
        2, [1536], [1536], (3, 192, 8), rw=1, accesses=[(1536, 2, (), ())], chunk=(4, 3, 2)
    ),
    "/old": expected(2, [200], [200], (1, 100, 2), rw=1, accesses=[(200, 2, (), ())], deprecated=1),
    "/ginner": expected(1, [], [80], (1, 10, 8), accesses=[(80, 1, (), ())]),
    "//chunked": expected(1, [], [], (3, 192, 8), chunk=(4, 3, 2)),
    # 44 writes of the first k ints, k = 1 .. 40, then 40 three times, then 1: only the first 32
    # distinct accesses are counted (as Darshan), so 40 ints, written 4 times, is never among the
    # most common; 1 int (twice) is, then the largest of the accesses written once.
    "/many": expected(
        1,
        [],
        [4 * k for k in range(1, 41)] + [160] * 3 + [4],
        (1, 64, 4),
        regular=44,
        accesses=[(4 * k, n, (0, 0, 0, 0, k), (0, 0, 0, 0, 1)) for k, n in MANY],
    ),
}
# What the timing decides: the size of the slowest read and write (one of the sizes).
TIMED = ("H5D_MAX_READ_TIME_SIZE", "H5D_MAX_WRITE_TIME_SIZE")
EXTREMES = (
    "H5D_FASTEST_RANK",
    "H5D_FASTEST_RANK_BYTES",
    "H5D_SLOWEST_RANK",
    "H5D_SLOWEST_RANK_BYTES",
)


def check_times(rec: dict, run: Scenario, ranks: int = 1) -> None:
    c, f = rec["counters"], rec["fcounters"]
    opened, closed = f["H5D_F_OPEN_START_TIMESTAMP"], f["H5D_F_CLOSE_END_TIMESTAMP"]
    assert 0 < opened <= f["H5D_F_OPEN_END_TIMESTAMP"] <= closed, f
    assert 0 < f["H5D_F_CLOSE_START_TIMESTAMP"] <= closed <= run.log["job"]["run_time"], f
    assert 0 < f["H5D_F_META_TIME"] <= (closed - opened) * ranks + ROUNDING, f
    for op in ("READ", "WRITE"):
        start, end = f[f"H5D_F_{op}_START_TIMESTAMP"], f[f"H5D_F_{op}_END_TIMESTAMP"]
        if c[f"H5D_{op}S"] == 0:
            assert start == end == f[f"H5D_F_{op}_TIME"] == f[f"H5D_F_MAX_{op}_TIME"] == 0, f
            assert c[f"H5D_MAX_{op}_TIME_SIZE"] == 0
            continue
        assert opened <= start <= end <= closed, f
        assert 0 < f[f"H5D_F_MAX_{op}_TIME"] <= f[f"H5D_F_{op}_TIME"] + ROUNDING, f
        assert f[f"H5D_F_{op}_TIME"] <= (end - start) * ranks + ROUNDING, f


def counters_of(rec: dict) -> dict:
    return {k: v for k, v in rec["counters"].items() if k not in TIMED + EXTREMES}


def file_rec_ids(log_path) -> dict:
    """{record id: file_rec_id} of the H5D records, as PyDarshan's record list gives them."""
    code = (
        "import darshan, json, sys\n"
        "r = darshan.DarshanReport(sys.argv[1], read_all=True)\n"
        "print(json.dumps({str(x['id']): x['file_rec_id'] for x in r.records['H5D'].to_list()}))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code, str(log_path)], capture_output=True, text=True, check=True
    )
    return {int(k): v for k, v in json.loads(out.stdout).items()}


def test_module_version(calls_run):
    assert calls_run.log["modules"]["H5D"]["ver"] == 2


@pytest.mark.parametrize("dataset", sorted(CALLS))
def test_calls(calls_run: Scenario, dataset: str):
    for rank in range(NPROCS):
        name = os.path.join(calls_run.dir, f"calls.{rank}.h5") + ":" + dataset
        (rec,) = records_named(calls_run.log, "H5D", name)
        assert rec["rank"] == rank
        assert counters_of(rec) == CALLS[dataset], name
        c = rec["counters"]
        sizes = {
            "/contig": ([192, 20, 0, 2048], [2048, 192, 52]),
            "/many": ([0], [4 * k for k in range(1, 41)]),
        }.get(dataset)
        if sizes:
            assert c["H5D_MAX_READ_TIME_SIZE"] in sizes[0]
            assert c["H5D_MAX_WRITE_TIME_SIZE"] in sizes[1]
        else:
            assert c["H5D_MAX_READ_TIME_SIZE"] == c["H5D_BYTES_READ"]
            assert c["H5D_MAX_WRITE_TIME_SIZE"] == c["H5D_BYTES_WRITTEN"]
        assert all(c[k] == 0 for k in EXTREMES), "a rank's own record has no extremes"
        check_times(rec, calls_run)


def test_calls_records_only_datasets(calls_run: Scenario):
    names = {calls_run.log["name_records"][r["id"]] for r in calls_run.log["records"]["H5D"]}
    assert names == {
        os.path.join(calls_run.dir, f"calls.{rank}.h5") + ":" + d
        for rank in range(NPROCS)
        for d in CALLS
    }


def check_file_rec_ids(log: dict, log_path) -> None:
    """Each H5D record's file_rec_id is the record id (Darshan's hash) of its file's path, the
    part of its name before the colon; and its own id that of its name."""
    ids = file_rec_ids(log_path)
    for rec in log["records"]["H5D"]:
        name = log["name_records"][rec["id"]]
        assert rec["id"] == darshan_hash(name), name
        assert ids[rec["id"]] == darshan_hash(name.split(":")[0]), name


def test_file_rec_id_names_the_file(calls_run: Scenario):
    check_file_rec_ids(calls_run.log, calls_run.result.log)
    h5f = {calls_run.log["name_records"][r["id"]] for r in calls_run.log["records"]["H5F"]}
    assert h5f == {os.path.join(calls_run.dir, f"calls.{r}.h5") for r in range(NPROCS)}


# programs/h5d_shared.c, per rank: 1 open (H5Dcreate2), 1 collective write and 1 independent
# read of 8 x 16 ints (512 bytes; regular hyperslab count {8,16}, no stride given: 1), 1 flush;
# dataset (2 * 8) x 16 int, chunks {8, 16}.
def shared_expected(ranks: int) -> dict:
    return expected(
        ranks,
        [512] * ranks,
        [512] * ranks,
        (2, NPROCS * 8 * 16, 4),
        flushes=ranks,
        rw=ranks,
        regular=2 * ranks,
        accesses=[(512, 2 * ranks, (0, 0, 0, 16, 8), (0, 0, 0, 1, 1))],
        chunk=(16, 8),
        collective=1,
    )


def test_shared(shared_run: Scenario):
    name = os.path.join(shared_run.dir, "shared.h5") + ":/grid"
    recs = records_named(shared_run.log, "H5D", name)
    if shared_run.mode == "reduced":
        assert [r["rank"] for r in recs] == [-1]
        (rec,) = recs
        assert counters_of(rec) == shared_expected(NPROCS)
        c, f = rec["counters"], rec["fcounters"]
        assert c["H5D_MAX_READ_TIME_SIZE"] == c["H5D_MAX_WRITE_TIME_SIZE"] == 512
        assert {c["H5D_FASTEST_RANK"], c["H5D_SLOWEST_RANK"]} <= set(range(NPROCS))
        assert c["H5D_FASTEST_RANK_BYTES"] == c["H5D_SLOWEST_RANK_BYTES"] == 1024
        assert f["H5D_F_FASTEST_RANK_TIME"] <= f["H5D_F_SLOWEST_RANK_TIME"]
        assert f["H5D_F_VARIANCE_RANK_BYTES"] == 0
        assert f["H5D_F_VARIANCE_RANK_TIME"] >= 0
        check_times(rec, shared_run, NPROCS)
    else:
        assert sorted(r["rank"] for r in recs) == list(range(NPROCS))
        for rec in recs:
            assert counters_of(rec) == shared_expected(1)
            assert all(rec["counters"][k] == 0 for k in EXTREMES)
            check_times(rec, shared_run)


# ---- Darshan 3.5.0 on the same programs --------------------------------------------------------
def by_name(log: dict) -> dict:
    return {(log["name_records"][r["id"]], r["rank"]): r for r in log["records"].get("H5D", [])}


@pytest.mark.parametrize("name", ["h5d_calls", "h5d_shared", "hdf5_file"])
def test_same_as_darshan(runner, tmp_path_factory, name):
    """Every H5D record of ours has Darshan's name, rank and counters (the timings apart: the
    slowest access's size and the fastest/slowest rank, which the clock decides)."""
    ours = run(runner, real_tmp(tmp_path_factory, f"{name}_ours"), name)
    d = real_tmp(tmp_path_factory, f"{name}_darshan")
    # Debian's HDF5 is built with Open MPI
    res = darshan_mpirun(runner, "openmpi", NPROCS, [program(runner, name), d], d)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS}\n", res.describe()
    log = res.log
    theirs = read_log(log)
    assert theirs["modules"]["H5D"]["ver"] == ours.log["modules"]["H5D"]["ver"]
    mine = by_name(ours.log)
    darshan = {(n.replace(d, ours.dir), rank): r for (n, rank), r in by_name(theirs).items()}
    assert sorted(mine) == sorted(darshan)
    for key, rec in mine.items():
        assert counters_of(rec) == counters_of(darshan[key]), key
    check_file_rec_ids(theirs, log)


def test_darshan_parser_reads_ours(calls_run: Scenario):
    """darshan-parser (Darshan 3.5.0's darshan-util) prints every H5D counter of our log as
    PyDarshan reads it, and the file record id PyDarshan gives."""
    parser = darshan_tool("darshan-parser")
    out = subprocess.run([parser, str(calls_run.result.log)], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    printed: dict = {}
    for line in out.stdout.splitlines():
        fields = line.split("\t")
        if fields[0] == "H5D":
            printed.setdefault((int(fields[1]), int(fields[2])), {})[fields[3]] = fields[4]
    ids = file_rec_ids(calls_run.result.log)
    assert len(printed) == len(calls_run.log["records"]["H5D"])
    for rec in calls_run.log["records"]["H5D"]:
        p = printed[(rec["rank"], rec["id"])]
        assert int(p.pop("H5D_FILE_REC_ID")) == ids[rec["id"]]
        assert {k: int(v) for k, v in p.items() if k in rec["counters"]} == rec["counters"]
        assert len(p) == len(rec["counters"]) + len(rec["fcounters"])


# programs/hdf5_file.c, per rank: H5Dcreate2 "data" (np * 1024 ints, contiguous), a collective
# write of its 1024 ints (regular hyperslab, 4096 bytes); then H5Dopen2 and a collective read of
# the same 4096 bytes.
def hdf5_file_expected(ranks: int) -> dict:
    return expected(
        2 * ranks,
        [4096] * ranks,
        [4096] * ranks,
        (1, NPROCS * 1024, 4),
        rw=ranks,
        regular=2 * ranks,
        accesses=[(4096, 2 * ranks, (0, 0, 0, 0, 1024), (0, 0, 0, 0, 1))],
        collective=1,
    )


def test_killed_job_keeps_its_h5d_records(runner, tmp_path_factory, capsys):
    """The memory-mapped logs of a killed job hold each rank's H5D record; merged (iostudy-merge,
    the same reduction), one rank -1 record."""
    prog = runner.tests_dir / "hdf5_file-openmpi"
    if not prog.is_file():
        pytest.skip(f"{prog.name} not built: libhdf5-openmpi-dev (Open MPI build) not found")
    d = real_tmp(tmp_path_factory, "h5d_killed")
    kill_when_ready(runner, [prog, d, "wait"], d, NPROCS)
    name = os.path.join(d, "data.h5") + ":/data"
    ranks = []
    for path in mmap_logs(d):
        (rec,) = records_named(read_log(path), "H5D", name)
        assert counters_of(rec) == hdf5_file_expected(1)
        ranks.append(rec["rank"])
    assert sorted(ranks) == list(range(NPROCS))
    (rec,) = records_named(merged(d, capsys), "H5D", name)
    assert rec["rank"] == -1
    assert counters_of(rec) == hdf5_file_expected(NPROCS)
    assert rec["counters"]["H5D_FASTEST_RANK_BYTES"] == 2 * 4096
