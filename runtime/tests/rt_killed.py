"""Helpers of the killed-process tests: wait for a program's "ready" lines, find the
memory-mapped logs it left, merge them with `iostudy logs merge`."""

from __future__ import annotations

import contextlib
import os
import select
import signal
import subprocess
import time
from pathlib import Path

from iostudy.cli.cli import main as iostudy
from iostudy.logs.darshanlog import read_log


def merged(d: str, capsys) -> dict:
    out = os.path.join(d, "merged.darshan")
    status = iostudy(["logs", "merge", *map(str, mmap_logs(d)), "--output", out])
    captured = capsys.readouterr()
    assert status == 0, captured.err
    assert f"into {out}" in captured.out
    return read_log(out)


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


def kill_when_ready(
    runner, args: list, d: str, nprocs: int, flavour: str = "openmpi", env_extra=None
) -> dict[int, int]:
    """Runs ``args`` on ``nprocs`` ranks of ``flavour`` under the runtime (with ``env_extra``),
    with memory-mapped logs in ``d``, and SIGKILLs each rank once it says it is ready: the job
    ends without a shutdown. Returns {rank: pid} from the ranks' "ready <rank> <pid>" lines."""
    app_env = {
        "LD_PRELOAD": str(runner.lib),
        "DARSHAN_LOGFILE": os.path.join(d, "x.darshan"),
        "DARSHAN_MMAP_LOGPATH": d,
        **(env_extra or {}),
    }
    cmd, env = runner.mpirun_command(flavour, nprocs, args, app_env)
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        pids = {int(r): int(p) for _, r, p in (line.split() for line in wait_ready(proc, nprocs))}
        for pid in pids.values():
            # MPICH's launcher ends a job's other ranks once one is killed, and may be faster
            # than this loop (a CI run lost three tests to it); those ranks wait in pause()
            # too, so they end without a shutdown all the same
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        assert proc.wait(timeout=60) != 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return pids
