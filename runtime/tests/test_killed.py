"""Processes killed with SIGKILL leave their records in memory-mapped logs (seed 002, III-C).

The programs do known I/O, say "ready", and wait; the test kills them with SIGKILL, the one
signal nothing can catch, so no shutdown code runs. What is left must be a log PyDarshan reads
whose counters are exactly the I/O done: programs/killed_io.c (one process) and
programs/killed_mpi.c (per rank, under Open MPI and MPICH); and `iostudy logs merge` must make
one job log of them, files of every rank reduced to rank -1 as the normal shutdown does.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest
from rt_checks import (
    MANY_FILES_COUNTERS,
    MANY_FILES_OVER_2MIB,
    check_many_files,
    common_slots,
    compare_counters,
    histogram,
    posix_expected,
    pydarshan_records,
    records_named,
)
from rt_darshan import darshan_parser_records
from rt_killed import kill_when_ready, merged, mmap_logs, wait_ready
from rt_run import clean_env, fs_block_size, real_tmp

from iostudy.cli.cli import main as iostudy
from iostudy.logs.darshanlog import read_log

B = 1000


def kill_one_process(runner, tmp_path_factory):
    """killed_io run and killed; its folder and the counters its log must hold."""
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
    return d, exp


def test_killed_process_leaves_its_records(runner, tmp_path_factory):
    kill_one_process(runner, tmp_path_factory)


def test_merged_log_of_a_killed_process(runner, tmp_path_factory, capsys):
    d, exp = kill_one_process(runner, tmp_path_factory)
    log = merged(d, capsys)
    assert log["job"]["nprocs"] == 1 and log["job"]["run_time"] > 0
    (rec,) = records_named(log, "POSIX", os.path.join(d, "killed.dat"))
    assert rec["rank"] == 0
    compare_counters(rec, exp, what="merged killed.dat")


# The system calls a process waits in inside sleep(1): nanosleep and clock_nanosleep.
SLEEP_CALLS = {"x86_64": {"35", "230"}, "aarch64": {"101", "115"}}


def sleeping_descendant(pid: int, timeout: float = 30) -> int:
    """The last process of pid's line of children once it waits in sleep's system call (the
    runtime has started in it, and the program has done what it does before sleeping)."""
    calls = SLEEP_CALLS.get(os.uname().machine)
    if calls is None:
        pytest.skip(f"no sleep system call numbers for {os.uname().machine}")
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        last = pid
        with contextlib.suppress(OSError):
            while children := Path(f"/proc/{last}/task/{last}/children").read_text().split():
                last = int(children[0])
            if Path(f"/proc/{last}/syscall").read_text().split()[0] in calls:
                return last
        time.sleep(0.02)
    pytest.fail(f"no process under {pid} came to sleep")


@pytest.mark.parametrize(
    "cmd", [["sleep", "60"], ["sh", "-c", "sleep 60; true"]], ids=["process", "forked-child"]
)
def test_killed_before_any_record_leaves_no_file(runner, tmp_path_factory, cmd):
    """The memory-mapped log is made at the first record: a process killed before one leaves no
    file (a shell's child that execs sleep, the shell, or sleep alone; strace's probe children
    left one each), while a killed process with records leaves its own (above)."""
    d = real_tmp(tmp_path_factory, "killed_idle")
    env = clean_env(
        {
            "LD_PRELOAD": runner.lib,
            "DARSHAN_ENABLE_NONMPI": "1",
            "DARSHAN_LOGPATH": d,
            "DARSHAN_MMAP_LOGPATH": d,
        }
    )
    proc = subprocess.Popen(cmd, env=env)
    try:
        sleeper = sleeping_descendant(proc.pid)
        assert str(runner.lib) in Path(f"/proc/{sleeper}/maps").read_text(), "runtime loaded"
        # The line's top first: a shell whose child died first would wake and end normally,
        # writing a log of no record (date folders, a file) before a kill could reach it.
        proc.kill()
        proc.wait(timeout=30)
        if sleeper != proc.pid:
            os.kill(sleeper, signal.SIGKILL)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert sorted(os.listdir(d)) == [], "a killed process without records leaves nothing"


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_killed_mpi_job_leaves_one_log_per_rank(runner, tmp_path_factory, flavour, capsys):
    prog = runner.mpi_program("killed_mpi", flavour)
    d = real_tmp(tmp_path_factory, f"killed_{flavour}")
    nprocs = 2
    pids = kill_when_ready(runner, [prog, d], d, nprocs, flavour)
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

    # One job log: the per-rank files as they were, shared.dat once as rank -1.
    log = merged(d, capsys)
    assert log["job"]["nprocs"] == nprocs
    for rank in range(nprocs):
        (own,) = records_named(log, "POSIX", os.path.join(d, f"rank{rank}.dat"))
        assert own["rank"] == rank and own["counters"]["POSIX_BYTES_WRITTEN"] == B * (rank + 1)
    (shared,) = records_named(log, "POSIX", os.path.join(d, "shared.dat"))
    c, f = shared["counters"], shared["fcounters"]
    assert shared["rank"] == -1
    assert (c["POSIX_OPENS"], c["POSIX_WRITES"]) == (nprocs, nprocs)
    assert c["POSIX_BYTES_WRITTEN"] == B * nprocs
    assert c["POSIX_MAX_BYTE_WRITTEN"] == B * nprocs - 1
    assert c["POSIX_FASTEST_RANK_BYTES"] == c["POSIX_SLOWEST_RANK_BYTES"] == B
    assert {c["POSIX_FASTEST_RANK"], c["POSIX_SLOWEST_RANK"]} <= set(range(nprocs))
    assert f["POSIX_F_VARIANCE_RANK_BYTES"] == 0  # every rank wrote B bytes to it


def test_merge_refuses_what_it_cannot_merge(runner, tmp_path_factory, capsys):
    """Every refusal names the file and the reason, and writes nothing."""
    d1, _ = kill_one_process(runner, tmp_path_factory)
    d2, _ = kill_one_process(runner, tmp_path_factory)
    (a,), (b,) = mmap_logs(d1), mmap_logs(d2)
    out = Path(d1) / "out.darshan"

    def refused(*logs, why):
        status = iostudy(["logs", "merge", *map(str, logs), "--output", str(out)])
        err = capsys.readouterr().err
        assert status == 2, err
        assert why in err, err
        return err

    err = refused(a, b, why="another job")  # two processes, two jobs
    assert str(b) in err
    truncated = Path(d1) / "truncated.darshan"
    truncated.write_bytes(a.read_bytes()[:6000])  # the regions lie further on
    assert str(truncated) in refused(truncated, why="outside the file")
    normal = Path(d1) / "normal.darshan"
    res = runner.instrumented([runner.bin("exit_code"), d1], d1, {"DARSHAN_LOGFILE": normal})
    assert res.returncode == 3 and normal.is_file()
    refused(normal, why="compressed: not a memory-mapped per-process log")
    assert not out.exists()
    out.write_bytes(b"precious")
    refused(a, why="never overwritten")
    assert out.read_bytes() == b"precious"


@pytest.fixture(scope="module")
def large_killed(runner, tmp_path_factory):
    """many_files making MANY_FILES_OVER_2MIB files, killed, its memory-mapped log merged by
    `iostudy logs merge`: (folder, the merged log). The memory-mapped log is uncompressed, and
    Darshan 3.5.0's reader reads only its first MiB a region: the merge reads it whole."""
    d = real_tmp(tmp_path_factory, "large_killed")
    env = {
        "LD_PRELOAD": runner.lib,
        "DARSHAN_ENABLE_NONMPI": "1",
        "DARSHAN_LOGFILE": os.path.join(d, "x.darshan"),
        "DARSHAN_MMAP_LOGPATH": d,
    }
    cmd = [runner.bin("many_files"), d, str(MANY_FILES_OVER_2MIB), "kill"]
    proc = subprocess.Popen(cmd, env=clean_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert wait_ready(proc, 1) == [f"ready {proc.pid}"]
        proc.send_signal(signal.SIGKILL)
        assert proc.wait(timeout=30) == -signal.SIGKILL
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    out = os.path.join(d, "merged.darshan")
    assert iostudy(["logs", "merge", *map(str, mmap_logs(d)), "--output", out]) == 0
    return d, out


def test_merged_large_log_of_a_killed_process_reads_whole(large_killed):
    d, log = large_killed
    check_many_files(pydarshan_records(log, "POSIX", MANY_FILES_COUNTERS), d, MANY_FILES_OVER_2MIB)


def test_darshan_parser_reads_a_merged_large_log_whole(large_killed):
    d, log = large_killed
    check_many_files(
        darshan_parser_records(log, "POSIX", MANY_FILES_COUNTERS), d, MANY_FILES_OVER_2MIB
    )
