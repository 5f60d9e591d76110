"""Real storage of one's own and the kernel's limits on it, for tests and benchmarks (root): an
ext4 file system on a loop device over a sparse image, and a cgroup that holds its processes to a
rate of writes to one block device (the block throttle: v1 blkio or v2 io.max) and, on demand, to
a share of a CPU (v1 cpu.cfs_quota_us or v2 cpu.max). Standard library only: the component tests
(reframe-checks/tests/blockdev.py) and make bench-compare (analysis/bench/bench_compare.py) share
it. Everything made here is undone on the way out, on errors and KeyboardInterrupt too."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

MIB = 1 << 20
CGROUP = Path("/sys/fs/cgroup")
PERIOD_US = 100_000  # the CPU quota's period (the kernel's default)


class LimitError(RuntimeError):
    """A loop device, mount or cgroup could not be made."""


@contextlib.contextmanager
def loop_filesystem(folder: Path, mib: int = 512):
    """A fresh ext4 file system of mib MiB on a loop device, mounted at folder/mnt (yielded);
    unmounted, detached and its image removed after."""
    image, mount = folder / "disk.img", folder / "mnt"
    mount.mkdir(parents=True)
    try:
        with open(image, "wb") as f:
            f.truncate(mib * MIB)
        subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
        made = subprocess.run(
            ["losetup", "--find", "--show", str(image)], capture_output=True, text=True
        )
        if made.returncode != 0:
            raise LimitError(f"no loop device for {image}: {made.stderr.strip()}")
        device = made.stdout.strip()
        try:
            subprocess.run(["mount", device, str(mount)], check=True)
            try:
                yield mount
            finally:
                subprocess.run(["umount", str(mount)], check=True)
        finally:
            subprocess.run(["losetup", "-d", device], check=True)
    finally:
        image.unlink(missing_ok=True)
        mount.rmdir()


class Limits:
    """The cgroups of one throttle. Called, it moves the calling process into them (a
    preexec_fn; its children follow it); write_rate and cpu_share change the limits of the
    processes inside at once."""

    def __init__(self, rule: str, v1: bool, name: str, cpu: bool):
        self.rule, self.v1 = rule, v1
        self.io = (CGROUP / "blkio" if v1 else CGROUP) / name
        self.cpu = (CGROUP / "cpu" if v1 else CGROUP) / name
        self.groups = [self.io] if self.io == self.cpu or not cpu else [self.io, self.cpu]

    def __call__(self):
        for group in self.groups:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    def write_rate(self, mib_s: float):
        """Writes to the device held to mib_s MiB/s."""
        rate = int(mib_s * MIB)
        if self.v1:
            (self.io / "blkio.throttle.write_bps_device").write_text(f"{self.rule} {rate}")
        else:
            (self.io / "io.max").write_text(f"{self.rule} wbps={rate}")

    def cpu_share(self, share: float | None):
        """At most share of one CPU (None: no quota)."""
        quota = -1 if share is None else max(1000, int(share * PERIOD_US))
        if self.v1:
            (self.cpu / "cpu.cfs_period_us").write_text(str(PERIOD_US))
            (self.cpu / "cpu.cfs_quota_us").write_text(str(quota))
        else:
            (self.cpu / "cpu.max").write_text(f"{'max' if quota < 0 else quota} {PERIOD_US}")


@contextlib.contextmanager
def write_throttle(target: Path, mib_s: float, cpu: bool = False):
    """A cgroup whose processes the kernel's block throttle holds to mib_s MiB/s of writes to the
    block device that holds target (cgroup v1 blkio or v2 io.max), and with cpu a CPU quota that
    Limits.cpu_share sets: yields its Limits (callable: the preexec_fn that moves a process into
    it). A steady rate where the disk drifts, or a slow target beside fast ones. Writes only
    count when the process issues them (O_DIRECT or fsync'd: v1 does not see write-back)."""
    device = os.stat(target).st_dev
    rule = f"{os.major(device)}:{os.minor(device)}"
    v1 = (CGROUP / "blkio").is_dir()
    limits = Limits(rule, v1, f"iostudy-throttle-{os.getpid()}", cpu)
    made = []
    try:
        try:
            if not v1 and cpu:
                (CGROUP / "cgroup.subtree_control").write_text("+cpu +io")
            for group in limits.groups:
                group.mkdir()
                made.append(group)
            limits.write_rate(mib_s)
        except OSError as err:
            raise LimitError(f"cannot limit writes to {rule} ({target}): {err}") from err
        yield limits
    finally:
        for group in reversed(made):
            group.rmdir()
