"""Run a command under a CPU quota: a real slow-down for the regression tests.

The command and every process it starts (ReFrame, mpirun, the benchmark's ranks) run in a cgroup
of their own whose CPU bandwidth is capped (cgroup v1's cpu.cfs_quota_us, or v2's cpu.max), as
a facility's job sharing its node with a CPU hog would be. Needs root and the cpu controller;
:func:`unavailable` says what is missing so that a test can skip naming it.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import time
import uuid
from pathlib import Path

CGROUP_ROOT = Path("/sys/fs/cgroup")
PERIOD_US = 100_000


def _v1() -> Path | None:
    cpu = CGROUP_ROOT / "cpu"
    return cpu if (cpu / "cpu.cfs_quota_us").is_file() else None


def _v2() -> Path | None:
    controllers = CGROUP_ROOT / "cgroup.controllers"
    if controllers.is_file() and "cpu" in controllers.read_text().split():
        return CGROUP_ROOT
    return None


def unavailable() -> str | None:
    """Why a CPU quota cannot be set here, or None."""
    if os.geteuid() != 0:
        return "a CPU quota needs root (a cgroup of its own)"
    if not (_v1() or _v2()):
        return f"no cgroup cpu controller under {CGROUP_ROOT} (v1 cpu/ or v2 cgroup.controllers)"
    return None


@contextlib.contextmanager
def cpu_quota(fraction: float):
    """A fresh cgroup limited to ``fraction`` of one CPU; yields wrap(cmd) -> the command that
    joins it and then runs cmd. The cgroup is removed afterwards (once its processes are gone)."""
    parent = _v1() or _v2()
    group = parent / f"iostudy-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        quota = max(1000, int(fraction * PERIOD_US))
        if parent == _v1():
            (group / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (group / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            # v2: the controller must be handed down to the root's children
            (parent / "cgroup.subtree_control").write_text("+cpu")
            (group / "cpu.max").write_text(f"{quota} {PERIOD_US}")
        procs = group / "cgroup.procs"
        join = f'echo $$ > {shlex.quote(str(procs))} && exec "$@"'
        yield lambda cmd: ["sh", "-c", join, "cpu-quota", *map(str, cmd)]
    finally:
        deadline = time.monotonic() + 30
        while True:  # MPI daemons may take a moment to go
            try:
                group.rmdir()
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
