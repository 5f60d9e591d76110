"""MPI-IO records of programs/mpiio_calls.c under Open MPI and MPICH with 1, 2 and 4 ranks.

Pattern (rank r of np, S_r = 1024 (r + 1) bytes = 256 (r + 1) MPI_INTs per call):
  shared.dat  opened by all ranks (MPI_COMM_WORLD) with an info object; one set_view without;
              per rank 14 writes of S_r (3 independent: write, write_at, write_shared; 3
              collective: write_all, write_at_all, write_ordered; 3 split: *_begin; 5
              non-blocking: iwrite, iwrite_at, iwrite_shared, iwrite_all, iwrite_at_all), one
              sync, then the same 14 reads; close.
  rank<r>.dat rank r alone (MPI_COMM_SELF), no info; one set_view with an info object; r + 1
              write_at of one element of a contiguous type of 10 doubles (80 bytes); close.
The expected counters follow from that pattern and Darshan 3.5.0's semantics (bytes = count x
datatype size, split collectives counted at _begin, ordered access collective); the oracle is
PyDarshan reading the log in a subprocess.
"""

from __future__ import annotations

import os
import re
import shutil

import pytest
from rt_checks import (
    check_nonshared_rank_fields,
    check_timers,
    common_slots,
    compare_counters,
    histogram,
    mpiio_expected,
    records_named,
)
from rt_run import Scenario, real_tmp
from rt_strace import total, traced

from iostudy.logs.darshanlog import read_log

FLAVOURS = ["openmpi", "mpich"]
NPROCS = [1, 2, 4]
FAMILIES = {"INDEP": 3, "COLL": 3, "SPLIT": 3, "NB": 5}  # calls per rank and direction
CALLS = sum(FAMILIES.values())
ALL = {"OPEN": True, "READ": True, "WRITE": True, "CLOSE": True}
RANK_COUNTERS = {
    "MPIIO_FASTEST_RANK",
    "MPIIO_FASTEST_RANK_BYTES",
    "MPIIO_SLOWEST_RANK",
    "MPIIO_SLOWEST_RANK_BYTES",
    "MPIIO_MAX_READ_TIME_SIZE",
    "MPIIO_MAX_WRITE_TIME_SIZE",
}


def size(rank: int) -> int:
    return 1024 * (rank + 1)


@pytest.fixture(
    scope="module",
    params=[(f, n) for f in FLAVOURS for n in NPROCS],
    ids=[f"{f}-np{n}" for f in FLAVOURS for n in NPROCS],
)
def run(request, runner, tmp_path_factory):
    flavour, nprocs = request.param
    prog = runner.mpi_program("mpiio_calls", flavour)
    d = real_tmp(tmp_path_factory, f"mpiio_{flavour}_{nprocs}")
    res = runner.mpirun(flavour, nprocs, [prog, d], d)
    assert res.returncode == 0, res.describe()
    m = re.fullmatch(r"shared_amode=(\d+) unique_amode=(\d+)\n", res.stdout)
    assert m, res.describe()
    s = Scenario(d, res, read_log(res.log), 0)
    s.nprocs = nprocs
    s.amodes = int(m.group(1)), int(m.group(2))
    return s


def test_shared_file_counts_every_family(run: Scenario):
    np_ = run.nprocs
    name = os.path.join(run.dir, "shared.dat")
    recs = records_named(run.log, "MPI-IO", name)
    assert [r["rank"] for r in recs] == [-1], "one record reduced over all ranks"
    rec = recs[0]
    sizes = [size(r) for r in range(np_) for _ in range(CALLS)]
    per_direction = {
        f"{fam}_{d}S": n * np_ for fam, n in FAMILIES.items() for d in ("READ", "WRITE")
    }
    # Every size appears 2 x CALLS times (once per call of each direction); ties in the
    # common-value table break on the larger value.
    access = sorted(((size(r), 2 * CALLS) for r in range(np_)), reverse=True)
    exp = mpiio_expected(
        # a communicator of one process is an independent open
        **({"INDEP_OPENS": 1} if np_ == 1 else {"COLL_OPENS": np_}),
        **per_direction,
        SYNCS=np_,
        HINTS=np_,  # the open's info object; the set_view passed MPI_INFO_NULL
        VIEWS=np_,
        MODE=run.amodes[0],
        BYTES_WRITTEN=sum(sizes),
        BYTES_READ=sum(sizes),
        RW_SWITCHES=np_,  # each rank: writes, then reads
        **histogram("WRITE", sizes, module="MPIIO"),
        **histogram("READ", sizes, module="MPIIO"),
        **common_slots("ACCESS", access, module="MPIIO"),
    )
    compare_counters(rec, exp, skip=RANK_COUNTERS, what=name)
    c, f = rec["counters"], rec["fcounters"]
    possible = {size(r) for r in range(np_)}
    assert c["MPIIO_MAX_WRITE_TIME_SIZE"] in possible and c["MPIIO_MAX_READ_TIME_SIZE"] in possible
    for which in ("FASTEST", "SLOWEST"):
        rank = c[f"MPIIO_{which}_RANK"]
        assert 0 <= rank < np_, (which, rank)
        assert c[f"MPIIO_{which}_RANK_BYTES"] == 2 * CALLS * size(rank), which
    assert 0 <= f["MPIIO_F_FASTEST_RANK_TIME"] <= f["MPIIO_F_SLOWEST_RANK_TIME"]
    # population variance of {2 CALLS S_r} = (2 CALLS 1024)^2 (np^2 - 1) / 12
    assert f["MPIIO_F_VARIANCE_RANK_BYTES"] == pytest.approx(
        (2 * CALLS * 1024) ** 2 * (np_**2 - 1) / 12, rel=1e-9, abs=1e-9
    )
    check_timers(rec, "MPIIO", run.log["job"]["run_time"], ALL, name, ranks=np_)


def test_unique_files_count_bytes_by_datatype_size(run: Scenario):
    np_ = run.nprocs
    for r in range(np_):
        name = os.path.join(run.dir, f"rank{r}.dat")
        recs = records_named(run.log, "MPI-IO", name)
        assert [x["rank"] for x in recs] == [-1 if np_ == 1 else r], name
        rec = recs[0]
        exp = mpiio_expected(
            INDEP_OPENS=1,
            INDEP_WRITES=r + 1,
            HINTS=1,  # the set_view's info object
            VIEWS=1,
            MODE=run.amodes[1],
            BYTES_WRITTEN=80 * (r + 1),  # one element of 10 doubles per call
            MAX_WRITE_TIME_SIZE=80,
            **histogram("WRITE", [80] * (r + 1), module="MPIIO"),
            **common_slots("ACCESS", [(80, r + 1)], module="MPIIO"),
        )
        if np_ == 1:  # every record of a one-rank job is reduced: rank 0 is fastest and slowest
            exp.update(
                MPIIO_FASTEST_RANK_BYTES=80,
                MPIIO_SLOWEST_RANK_BYTES=80,
            )
        compare_counters(rec, exp, what=name)
        if np_ > 1:
            check_nonshared_rank_fields(rec, "MPIIO", name)
        check_timers(rec, "MPIIO", run.log["job"]["run_time"], dict(ALL, READ=False), name)


def test_posix_layer_is_recorded_too(run: Scenario):
    """MPI-IO's own POSIX calls are not hidden by the MPI-IO wrappers (Darshan records both)."""
    name = os.path.join(run.dir, "shared.dat")
    posix = records_named(run.log, "POSIX", name)  # per rank if only aggregators opened it
    # MPI-IO's bytes and ROMIO's or ompio's own (headers, read-modify-write): the exact
    # non-blocking case is test_nonblocking_posix_bytes_match_strace.
    assert sum(r["counters"]["POSIX_BYTES_WRITTEN"] for r in posix) > 0
    assert sum(r["counters"]["POSIX_OPENS"] for r in posix) >= 1


def test_mpiio_heatmap(run: Scenario):
    heatmaps = run.log["heatmaps"]
    assert "MPIIO" in heatmaps, sorted(heatmaps)


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize("nprocs", [1, 3])
def test_fortran_bindings(runner, tmp_path_factory, flavour, nprocs):
    """programs/mpiio_fortran.f90: per rank one write_at and one read_at_all of 100 integers."""
    prog = runner.mpi_program("mpiio_fortran", flavour)
    d = real_tmp(tmp_path_factory, f"fortran_{flavour}_{nprocs}")
    res = runner.mpirun(flavour, nprocs, [prog, d], d)
    assert res.returncode == 0, res.describe()
    log = read_log(res.log)
    name = os.path.join(d, "fortran.dat")
    (rec,) = records_named(log, "MPI-IO", name)
    assert rec["rank"] == -1
    exp = mpiio_expected(
        **({"INDEP_OPENS": 1} if nprocs == 1 else {"COLL_OPENS": nprocs}),
        INDEP_WRITES=nprocs,
        COLL_READS=nprocs,
        MODE=rec["counters"]["MPIIO_MODE"],  # the amode's value is the MPI's own
        BYTES_WRITTEN=400 * nprocs,
        BYTES_READ=400 * nprocs,
        RW_SWITCHES=nprocs,
        MAX_READ_TIME_SIZE=400,
        MAX_WRITE_TIME_SIZE=400,
        **histogram("WRITE", [400] * nprocs, module="MPIIO"),
        **histogram("READ", [400] * nprocs, module="MPIIO"),
        **common_slots("ACCESS", [(400, 2 * nprocs)], module="MPIIO"),
    )
    compare_counters(
        rec,
        exp,
        skip=RANK_COUNTERS - {"MPIIO_MAX_READ_TIME_SIZE", "MPIIO_MAX_WRITE_TIME_SIZE"},
        what=name,
    )
    assert rec["counters"]["MPIIO_MODE"] > 0


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)")
@pytest.mark.parametrize("flavour", FLAVOURS)
def test_nonblocking_posix_bytes_match_strace(runner, tmp_path_factory, flavour):
    """programs/mpi_iwrite.c on 2 ranks: MPI_File_iwrite_at and MPI_File_iread_at of 4096 bytes
    each. Open MPI's ompio does them with POSIX AIO (glibc's threads then pwrite64 and pread64),
    MPICH's ROMIO with plain calls; either way the POSIX record holds exactly the calls and bytes
    strace sees on the file (strace of the same job without the runtime)."""
    prog = runner.mpi_program("mpi_iwrite", flavour)
    d = real_tmp(tmp_path_factory, f"iwrite_{flavour}")
    res = runner.mpirun(flavour, 2, [prog, d], d)
    assert res.returncode == 0, res.describe()
    log = read_log(res.log)
    name = os.path.join(d, "iwrite.dat")
    (posix,) = records_named(log, "POSIX", name)
    (mpiio,) = records_named(log, "MPI-IO", name)
    assert (mpiio["counters"]["MPIIO_NB_WRITES"], mpiio["counters"]["MPIIO_NB_READS"]) == (2, 2)

    os.unlink(name)
    full, env = runner.mpirun_command(flavour, 2, [prog, d], {})
    calls = traced(full, name, "read,write,pread64,pwrite64,readv,writev,preadv,pwritev", env)
    c = posix["counters"]
    writes = total(calls, ("write", "pwrite64", "writev", "pwritev"))
    reads = total(calls, ("read", "pread64", "readv", "preadv"))
    assert (c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == writes == (2, 2 * 4096)
    assert (c["POSIX_READS"], c["POSIX_BYTES_READ"]) == reads == (2, 2 * 4096)
