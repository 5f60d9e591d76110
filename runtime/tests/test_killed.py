"""Processes killed with SIGKILL leave their records in memory-mapped logs (seed 002, III-C).

The programs do known I/O, say "ready", and wait; the test kills them with SIGKILL, the one
signal nothing can catch, so no shutdown code runs. What is left must be a log PyDarshan reads
whose counters are exactly the I/O done: programs/killed_io.c (one process) and
programs/killed_mpi.c (per rank, under Open MPI and MPICH).
"""

from __future__ import annotations

import os
import select
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import clean_env, fs_block_size, real_tmp
from rt_checks import common_slots, compare_counters, histogram, posix_expected, records_named

from iostudy.darshanlog import read_log

B = 1000


def wait_ready(proc: subprocess.Popen, lines: int, timeout: float = 60) -> list[str]:
    """The first `lines` "ready ..." lines of proc's stdout."""
    got, buf, deadline = [], b"", time.monotonic() + timeout
    while len(got) < lines:
        left = deadline - time.monotonic()
        assert left > 0 and proc.poll() is None, f"not ready: {got} {proc.stderr.read()!r}"
        if select.select([proc.stdout], [], [], left)[0]:
            chunk = os.read(proc.stdout.fileno(), 4096)
            assert chunk, f"stdout closed before ready: {got}"
            buf += chunk
            *complete, buf = buf.split(b"\n")
            got += [x.decode() for x in complete if x.startswith(b"ready")]
    return got


def mmap_logs(d: str) -> list[Path]:
    return sorted(Path(d).glob("*_mmap-log-*.darshan"))


def test_killed_process_leaves_its_records(runner, tmp_path_factory):
    d = real_tmp(tmp_path_factory, "killed")
    env = clean_env(
        {
            "LD_PRELOAD": runner.lib,
            "DARSHAN_ENABLE_NONMPI": "1",
            "DARSHAN_LOGFILE": os.path.join(d, "x.darshan"),
            "DARSHAN_MMAP_LOGPATH": d,
        }
    )
    proc = subprocess.Popen(
        [runner.bin("killed_io"), d], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    (line,) = wait_ready(proc, 1)
    assert line == f"ready {proc.pid}"
    proc.send_signal(signal.SIGKILL)
    assert proc.wait(timeout=30) == -signal.SIGKILL
    assert not os.path.exists(os.path.join(d, "x.darshan")), "no shutdown ran"
    (path,) = mmap_logs(d)
    assert str(proc.pid) in path.name
    log = read_log(path)
    assert log["job"]["nprocs"] == 1 and log["job"]["jobid"] == proc.pid
    assert log["exe"] == f"{runner.bin('killed_io')} {d}"
    (rec,) = records_named(log, "POSIX", os.path.join(d, "killed.dat"))
    assert rec["rank"] == 0
    exp = posix_expected(
        fs_block_size(d),
        OPENS=1,
        WRITES=5,
        STATS=1,
        MODE=0o644,
        BYTES_WRITTEN=5 * B,
        MAX_BYTE_WRITTEN=5 * B - 1,
        SEQ_WRITES=4,
        CONSEC_WRITES=4,
        FILE_NOT_ALIGNED=sum(1 for k in range(5) if (k * B) % fs_block_size(d)),
        MAX_WRITE_TIME_SIZE=B,
        **histogram("WRITE", [B] * 5),
        **common_slots("ACCESS", [(B, 5)]),
    )
    # Strides: every write follows the previous one (stride 0 is never kept).
    compare_counters(rec, exp, what="killed.dat")
    assert rec["fcounters"]["POSIX_F_WRITE_TIME"] > 0


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_killed_mpi_job_leaves_one_log_per_rank(runner, tmp_path_factory, flavour):
    prog = runner.tests_dir / f"killed_mpi-{flavour}"
    if not prog.is_file():
        pytest.skip(f"{prog.name} not built (no pkg-config module for {flavour} at build time)")
    d = real_tmp(tmp_path_factory, f"killed_{flavour}")
    nprocs = 2
    app_env = {
        "LD_PRELOAD": str(runner.lib),
        "DARSHAN_LOGFILE": os.path.join(d, "x.darshan"),
        "DARSHAN_MMAP_LOGPATH": d,
    }
    cmd, env = runner.mpirun_command(flavour, nprocs, [prog, d], app_env)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        ready = wait_ready(proc, nprocs)
        pids = {int(r): int(p) for _, r, p in (line.split() for line in ready)}
        for pid in pids.values():
            os.kill(pid, signal.SIGKILL)
        assert proc.wait(timeout=60) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert not os.path.exists(os.path.join(d, "x.darshan"))
    logs = {}
    for path in mmap_logs(d):
        log = read_log(path)
        ranks = {r["rank"] for r in log["records"]["POSIX"]}
        assert len(ranks) == 1, f"{path}: one process, one rank: {ranks}"
        logs[ranks.pop()] = (path, log)
    assert sorted(logs) == list(range(nprocs))
    for rank, (path, log) in logs.items():
        assert str(pids[rank]) in path.name
        assert log["job"]["nprocs"] == nprocs
        (own,) = records_named(log, "POSIX", os.path.join(d, f"rank{rank}.dat"))
        assert own["counters"]["POSIX_WRITES"] == rank + 1
        assert own["counters"]["POSIX_BYTES_WRITTEN"] == B * (rank + 1)
        (shared,) = records_named(log, "POSIX", os.path.join(d, "shared.dat"))
        assert shared["counters"]["POSIX_BYTES_WRITTEN"] == B
        assert shared["counters"]["POSIX_MAX_BYTE_WRITTEN"] == B * rank + B - 1
