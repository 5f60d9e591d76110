"""Block devices for tests that need a target of their own or a slow one, for real (root):
an ext4 file system on a loop device over a sparse image, and the kernel's block throttle on
writes to a device (a cgroup: v1 blkio or v2 io.max) that processes are moved into."""

from __future__ import annotations

import contextlib
import os
import subprocess
from pathlib import Path

import pytest

MIB = 1 << 20


@contextlib.contextmanager
def loop_filesystem(folder: Path, mib: int = 512):
    """A fresh ext4 file system of mib MiB on a loop device, mounted at folder/mnt (yielded);
    unmounted, detached and its image removed after."""
    image, mount = folder / "disk.img", folder / "mnt"
    mount.mkdir(parents=True)
    with open(image, "wb") as f:
        f.truncate(mib * MIB)
    subprocess.run(["mkfs.ext4", "-q", "-F", str(image)], check=True)
    made = subprocess.run(
        ["losetup", "--find", "--show", str(image)], capture_output=True, text=True
    )
    if made.returncode != 0:
        pytest.fail(f"no loop device for {image}: {made.stderr.strip()}")
    device = made.stdout.strip()
    try:
        subprocess.run(["mount", device, str(mount)], check=True)
        try:
            yield mount
        finally:
            subprocess.run(["umount", str(mount)], check=True)
    finally:
        subprocess.run(["losetup", "-d", device], check=True)
        image.unlink()


@contextlib.contextmanager
def write_throttle(target: Path, mib_s: int):
    """A cgroup whose processes the kernel's block throttle holds to mib_s MiB/s of writes to the
    block device that holds target (cgroup v1 blkio or v2 io.max): yields the function that
    moves a process into it (a preexec_fn; its children follow it). A steady rate where the
    disk drifts, or a slow target beside fast ones."""
    device = os.stat(target).st_dev
    rule = f"{os.major(device)}:{os.minor(device)}"
    v1 = Path("/sys/fs/cgroup/blkio")
    group = (v1 if v1.is_dir() else Path("/sys/fs/cgroup")) / f"iostudy-throttle-{os.getpid()}"
    try:
        group.mkdir()
        if v1.is_dir():
            (group / "blkio.throttle.write_bps_device").write_text(f"{rule} {mib_s * MIB}")
        else:
            (group / "io.max").write_text(f"{rule} wbps={mib_s * MIB}")
    except OSError as err:
        group.exists() and group.rmdir()
        pytest.fail(f"cannot throttle writes to {rule} ({target}) in {group}: {err}")
    try:
        yield lambda: (group / "cgroup.procs").write_text(str(os.getpid()))
    finally:
        group.rmdir()
