"""An MPI job whose processes exit without MPI_Finalize (programs/mpi_no_finalize.c, 4 ranks,
Open MPI and MPICH). No collective is possible any more, so each process leaves its
memory-mapped log, as a killed job's processes do, and `iostudy logs merge` makes the job's one
log of them. Each rank used to write its own log to the one DARSHAN_LOGFILE: all but one failed
with "File exists".

Pattern (rank r of 4): shared.dat: pwrite (r+1)*100 bytes at 1000*r; rank<r>.dat: write 10.
The run is traced (DXT_ENABLE_IO_TRACE): the merged log holds each rank's DXT_POSIX segments.
"""

from __future__ import annotations

import os

import pytest
from rt_checks import record
from rt_dxt import read_dxt, traced
from rt_killed import merged, mmap_logs
from rt_run import real_tmp

NPROCS = 4


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_unfinished_mpi_job_is_merged_like_a_killed_one(runner, tmp_path_factory, flavour, capsys):
    prog = runner.mpi_program("mpi_no_finalize", flavour)
    plain_dir = real_tmp(tmp_path_factory, f"unfinished_plain_{flavour}")
    d = real_tmp(tmp_path_factory, f"unfinished_{flavour}")
    full, env = runner.mpirun_command(flavour, NPROCS, [prog, plain_dir], {})
    plain = runner._run(full, env, timeout=180)
    res = runner.mpirun(flavour, NPROCS, [prog, d], d, env_extra={"DXT_ENABLE_IO_TRACE": "1"})
    if flavour == "openmpi":
        assert res.returncode == plain.returncode, res.describe()  # the MPI's verdict, unchanged
    else:  # Hydra's verdict depends on the race it sees: 0, or 9 when it killed the rest itself
        assert {res.returncode, plain.returncode} <= {0, 9}, res.describe()
    ours = [line for line in res.stderr.splitlines() if line.startswith("iostudy:")]
    # rank 0 says where the logs are, unless the launcher killed it first (MPICH may)
    assert len(ours) <= 1 and "File exists" not in res.stderr, res.describe()
    assert all("MPI_Finalize was not called" in line and d in line for line in ours)
    assert not os.path.exists(res.log)
    assert len(mmap_logs(d)) == NPROCS

    log = merged(d, capsys)
    assert log["job"]["nprocs"] == NPROCS
    shared = record(log, "POSIX", os.path.join(d, "shared.dat"), rank=-1)["counters"]
    assert shared["POSIX_OPENS"] == NPROCS and shared["POSIX_WRITES"] == NPROCS
    assert shared["POSIX_BYTES_WRITTEN"] == sum((r + 1) * 100 for r in range(NPROCS))
    assert shared["POSIX_MAX_BYTE_WRITTEN"] == 1000 * (NPROCS - 1) + NPROCS * 100 - 1
    for r in range(NPROCS):
        own = record(log, "POSIX", os.path.join(d, f"rank{r}.dat"), rank=r)["counters"]
        assert (own["POSIX_OPENS"], own["POSIX_WRITES"], own["POSIX_BYTES_WRITTEN"]) == (1, 1, 10)
    shared_name, own = os.path.join(d, "shared.dat"), lambda r: os.path.join(d, f"rank{r}.dat")
    dxt = traced(
        read_dxt(os.path.join(d, "merged.darshan")), {shared_name, *map(own, range(NPROCS))}
    )
    want = {("DXT_POSIX", shared_name, r): ([[1000 * r, (r + 1) * 100]], []) for r in range(NPROCS)}
    want.update({("DXT_POSIX", own(r), r): ([[0, 10]], []) for r in range(NPROCS)})
    assert dxt == want
