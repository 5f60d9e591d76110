"""MPI runs of programs/mpi_io.c under Open MPI and MPICH with 1, 2 and 4 ranks
(oversubscribed).  One log per job; a file opened by every rank becomes one record with rank
-1 whose sums equal the per-rank sums; files opened by some ranks stay per-rank records (with
1 rank every record is shared, rank -1); heatmaps stay per rank.

Pattern (B = 1000 bytes, rank r, np ranks, T = np(np+1)/2):
  shared.dat  every rank: r+1 pwrites of B at B*r(r+1)/2 + k*B, then r+1 preads of the same
  rank<r>.dat rank r: r+1 write()s of B from offset 0
  some.dat    ranks r < max(1, np-1): one 10-byte pwrite at 10*r
  stdio_shared.txt every rank: fopen("a"), r+1 fwrites of 100 bytes, fclose
"""

from __future__ import annotations

import os

import pytest
from rt_checks import (
    STDIO_FCOUNTERS,
    U64,
    check_nonshared_rank_fields,
    check_timers,
    common_slots,
    compare_counters,
    histogram,
    posix_expected,
    record,
    records_named,
)
from rt_hash import darshan_hash
from rt_run import Scenario, fs_block_size, real_tmp

from iostudy.logs.darshanlog import read_log

B = 1000
FLAVOURS = ["openmpi", "mpich"]
NPROCS = [1, 2, 4]
ALL = {"OPEN": True, "READ": True, "WRITE": True, "CLOSE": True}
RANK_COUNTERS = {
    "POSIX_FASTEST_RANK",
    "POSIX_FASTEST_RANK_BYTES",
    "POSIX_SLOWEST_RANK",
    "POSIX_SLOWEST_RANK_BYTES",
    "POSIX_MAX_READ_TIME_SIZE",
    "POSIX_MAX_WRITE_TIME_SIZE",
}


@pytest.fixture(
    scope="module",
    params=[(f, n) for f in FLAVOURS for n in NPROCS],
    ids=[f"{f}-np{n}" for f in FLAVOURS for n in NPROCS],
)
def mpi_run(request, runner, tmp_path_factory):
    flavour, nprocs = request.param
    prog = runner.mpi_program("mpi_io", flavour)
    d = real_tmp(tmp_path_factory, f"mpi_{flavour}_{nprocs}")
    res = runner.mpirun(flavour, nprocs, [prog, d], d)
    assert res.returncode == 0, res.describe()
    assert res.stdout == f"np={nprocs}\n", res.describe()
    s = Scenario(d, res, read_log(res.log), fs_block_size(d))
    s.nprocs = nprocs
    s.prog = str(prog)
    return s


def block_offsets(r):
    base = B * r * (r + 1) // 2
    return [base + k * B for k in range(r + 1)]


def test_one_log_per_job(mpi_run: Scenario):
    files = sorted(f for f in os.listdir(mpi_run.dir) if f.endswith(".darshan"))
    assert files == ["x.darshan"]


def test_job(mpi_run: Scenario):
    log = mpi_run.log
    job = log["job"]
    assert job["nprocs"] == mpi_run.nprocs
    assert job["uid"] == os.getuid()
    assert job["log_ver"] == "3.41"
    assert job["run_time"] >= 0
    assert job["start_time_sec"] * 10**9 + job["start_time_nsec"] <= (
        job["end_time_sec"] * 10**9 + job["end_time_nsec"]
    )
    assert log["exe"] == f"{mpi_run.prog} {mpi_run.dir}"
    assert job["metadata"].get("lib_ver")
    assert len(log["mounts"]) >= 1


def test_records_of_our_files(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    d = mpi_run.dir
    some = max(1, np_ - 1)
    recs = [
        r
        for r in mpi_run.log["records"]["POSIX"]
        if mpi_run.log["name_records"][r["id"]].startswith(d + "/")
    ]
    got = sorted((mpi_run.log["name_records"][r["id"]], r["rank"]) for r in recs)
    if np_ == 1:
        want = [(f"{d}/rank0.dat", -1), (f"{d}/shared.dat", -1), (f"{d}/some.dat", -1)]
    else:
        want = [(f"{d}/rank{r}.dat", r) for r in range(np_)] + [(f"{d}/shared.dat", -1)]
        want += [(f"{d}/some.dat", r) for r in range(some)]
    assert got == sorted(want)
    # no record of any module carries a rank outside [-1, np); with one rank, all are -1
    for mod, rs in mpi_run.log["records"].items():
        for r in rs:
            what = (mod, mpi_run.log["name_records"][r["id"]], r["rank"])
            assert -1 <= r["rank"] < np_, what
            if np_ == 1:
                assert r["rank"] == -1, what


def test_shared_record(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    t = np_ * (np_ + 1) // 2
    name = os.path.join(mpi_run.dir, "shared.dat")
    recs = records_named(mpi_run.log, "POSIX", name)
    assert [r["rank"] for r in recs] == [-1]
    rec = recs[0]
    offsets = [o for r in range(np_) for o in block_offsets(r)]
    exp = posix_expected(
        mpi_run.block,
        OPENS=np_,
        MODE=0o644,
        WRITES=t,
        READS=t,
        BYTES_WRITTEN=B * t,
        BYTES_READ=B * t,
        MAX_BYTE_WRITTEN=B * t - 1,
        MAX_BYTE_READ=B * t - 1,
        # per rank: the first block is sequential unless it starts at 0 (rank 0), the others
        # are sequential and consecutive
        SEQ_WRITES=t - 1,
        SEQ_READS=t - 1,
        CONSEC_WRITES=np_ * (np_ - 1) // 2,
        CONSEC_READS=np_ * (np_ - 1) // 2,
        RW_SWITCHES=np_,  # one write->read switch per rank
        FILE_NOT_ALIGNED=2 * sum(1 for o in offsets if o % mpi_run.block),
        **histogram("WRITE", [B] * t),
        **histogram("READ", [B] * t),
        **common_slots("ACCESS", [(B, 2 * t)]),
    )
    compare_counters(rec, exp, skip=RANK_COUNTERS, what=name)
    c, f = rec["counters"], rec["fcounters"]
    assert c["POSIX_MAX_WRITE_TIME_SIZE"] == B and c["POSIX_MAX_READ_TIME_SIZE"] == B
    # rank r moved 2*B*(r+1) bytes
    for which in ("FASTEST", "SLOWEST"):
        rank = c[f"POSIX_{which}_RANK"]
        assert 0 <= rank < np_, (which, rank)
        assert c[f"POSIX_{which}_RANK_BYTES"] == 2 * B * (rank + 1), which
    assert 0 <= f["POSIX_F_FASTEST_RANK_TIME"] <= f["POSIX_F_SLOWEST_RANK_TIME"]
    total_time = f["POSIX_F_READ_TIME"] + f["POSIX_F_WRITE_TIME"] + f["POSIX_F_META_TIME"]
    assert f["POSIX_F_SLOWEST_RANK_TIME"] <= total_time + 1e-9
    # population variance of {2B(r+1)}: (2B)^2 * (np^2 - 1) / 12
    assert f["POSIX_F_VARIANCE_RANK_BYTES"] == pytest.approx(
        (2 * B) ** 2 * (np_**2 - 1) / 12, rel=1e-9, abs=1e-9
    )
    assert f["POSIX_F_VARIANCE_RANK_TIME"] >= 0
    if np_ == 1:
        assert c["POSIX_FASTEST_RANK"] == c["POSIX_SLOWEST_RANK"] == 0
        assert f["POSIX_F_VARIANCE_RANK_TIME"] == 0
    check_timers(rec, "POSIX", mpi_run.log["job"]["run_time"], ALL, name)


def test_per_rank_records(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    for r in range(np_):
        name = os.path.join(mpi_run.dir, f"rank{r}.dat")
        recs = records_named(mpi_run.log, "POSIX", name)
        want_rank = -1 if np_ == 1 else r
        assert [x["rank"] for x in recs] == [want_rank], name
        rec = recs[0]
        exp = posix_expected(
            mpi_run.block,
            OPENS=1,
            MODE=0o600,
            WRITES=r + 1,
            BYTES_WRITTEN=B * (r + 1),
            MAX_BYTE_WRITTEN=B * (r + 1) - 1,
            SEQ_WRITES=r,
            CONSEC_WRITES=r,
            FILE_NOT_ALIGNED=sum(1 for k in range(r + 1) if (k * B) % mpi_run.block),
            **histogram("WRITE", [B] * (r + 1)),
            **common_slots("ACCESS", [(B, r + 1)]),
        )
        compare_counters(rec, exp, skip=RANK_COUNTERS, what=name)
        c = rec["counters"]
        assert c["POSIX_MAX_WRITE_TIME_SIZE"] == B and c["POSIX_MAX_READ_TIME_SIZE"] == 0
        if np_ == 1:
            assert (c["POSIX_FASTEST_RANK"], c["POSIX_FASTEST_RANK_BYTES"]) == (0, B)
            assert (c["POSIX_SLOWEST_RANK"], c["POSIX_SLOWEST_RANK_BYTES"]) == (0, B)
            assert rec["fcounters"]["POSIX_F_VARIANCE_RANK_BYTES"] == 0
        else:
            check_nonshared_rank_fields(rec, "POSIX", name)
        check_timers(rec, "POSIX", mpi_run.log["job"]["run_time"], dict(ALL, READ=False), name)


def test_partially_shared_file(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    some = max(1, np_ - 1)
    name = os.path.join(mpi_run.dir, "some.dat")
    recs = records_named(mpi_run.log, "POSIX", name)
    ranks = sorted(x["rank"] for x in recs)
    assert ranks == ([-1] if np_ == 1 else list(range(some)))
    for rec in recs:
        r = max(rec["rank"], 0)
        exp = posix_expected(
            mpi_run.block,
            OPENS=1,
            MODE=0o644,
            WRITES=1,
            BYTES_WRITTEN=10,
            MAX_BYTE_WRITTEN=10 * r + 9,
            SEQ_WRITES=1 if r > 0 else 0,
            FILE_NOT_ALIGNED=1 if (10 * r) % mpi_run.block else 0,
            **histogram("WRITE", [10]),
            **common_slots("ACCESS", [(10, 1)]),
        )
        compare_counters(rec, exp, skip=RANK_COUNTERS, what=f"{name} rank {rec['rank']}")
        if np_ > 1:
            check_nonshared_rank_fields(rec, "POSIX", name)


def test_heatmaps_per_rank(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    log = mpi_run.log
    hid = darshan_hash("heatmap:POSIX")
    posix_hm = [r for r in log["heatmap_records"] if r["id"] == hid]
    assert sorted(r["rank"] for r in posix_hm) == list(range(np_))
    assert all(r["rank"] != -1 for r in log["heatmap_records"])
    keys = [(r["id"], r["rank"]) for r in log["heatmap_records"]]
    assert len(keys) == len(set(keys)), "duplicate heatmap records"
    assert len({(r["nbins"], r["bin_width"]) for r in log["heatmap_records"]}) == 1
    hm = log["heatmaps"]["POSIX"]
    assert hm["ranks"] == list(range(np_))
    written = sum(r["counters"]["POSIX_BYTES_WRITTEN"] for r in log["records"]["POSIX"])
    read = sum(r["counters"]["POSIX_BYTES_READ"] for r in log["records"]["POSIX"])
    assert sum(sum(v) for v in hm["write"].values()) == written
    assert sum(sum(v) for v in hm["read"].values()) == read
    # what our program moved is part of it
    t = np_ * (np_ + 1) // 2
    ours_written = B * t + B * t + 10 * max(1, np_ - 1)
    assert written >= ours_written and read >= B * t


def test_names_and_ids(mpi_run: Scenario):
    log = mpi_run.log
    bad = {rid: n for rid, n in log["name_records"].items() if darshan_hash(n) != rid}
    assert not bad
    for mod, rs in log["records"].items():
        assert log["raw_record_counts"].get(mod, 0) == len(rs), mod
        for r in rs:
            assert r["id"] & U64 in log["name_records"]
    for mod, info in log["modules"].items():
        assert info["partial_flag"] is False, mod


def test_shared_stdio_record(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    t = np_ * (np_ + 1) // 2
    name = os.path.join(mpi_run.dir, "stdio_shared.txt")
    rec = record(mpi_run.log, "STDIO", name)
    assert rec["rank"] == -1
    c, f = rec["counters"], rec["fcounters"]
    exp = {
        "STDIO_OPENS": np_,
        "STDIO_FDOPENS": 0,
        "STDIO_READS": 0,
        "STDIO_WRITES": t,
        "STDIO_SEEKS": 0,
        "STDIO_FLUSHES": 0,
        "STDIO_BYTES_WRITTEN": 100 * t,
        "STDIO_BYTES_READ": 0,
        "STDIO_MAX_BYTE_READ": 0,
        # each rank's stream offset starts at 0: rank np-1 reaches 100*np - 1
        "STDIO_MAX_BYTE_WRITTEN": 100 * np_ - 1,
    }
    compare_counters(rec, exp, what=name)
    for which in ("FASTEST", "SLOWEST"):
        rank = c[f"STDIO_{which}_RANK"]
        assert 0 <= rank < np_, (which, rank)
        assert c[f"STDIO_{which}_RANK_BYTES"] == 100 * (rank + 1), which
    assert 0 <= f["STDIO_F_FASTEST_RANK_TIME"] <= f["STDIO_F_SLOWEST_RANK_TIME"]
    assert f["STDIO_F_VARIANCE_RANK_BYTES"] == pytest.approx(
        100**2 * (np_**2 - 1) / 12, rel=1e-9, abs=1e-9
    )
    assert f["STDIO_F_VARIANCE_RANK_TIME"] >= 0
    assert list(f) == STDIO_FCOUNTERS
    check_timers(rec, "STDIO", mpi_run.log["job"]["run_time"], dict(ALL, READ=False), name)


def test_stdio_heatmaps(mpi_run: Scenario):
    np_ = mpi_run.nprocs
    log = mpi_run.log
    hid = darshan_hash("heatmap:STDIO")
    assert sorted(r["rank"] for r in log["heatmap_records"] if r["id"] == hid) == list(range(np_))
    hm = log["heatmaps"]["STDIO"]
    written = sum(r["counters"]["STDIO_BYTES_WRITTEN"] for r in log["records"]["STDIO"])
    assert sum(sum(v) for v in hm["write"].values()) == written
    t = np_ * (np_ + 1) // 2
    assert written >= 100 * t + len("np=1\n")
