"""Provenance shared by run manifests, the store and report manifests: file hashes, the
checkout's git state, tool versions (DESIGN.md convention 9: every result carries its own)."""

from __future__ import annotations

import errno
import hashlib
import os
import platform
import stat
import subprocess
from importlib import metadata

from . import __version__
from .config import REPO_ROOT


def sha256_file(path, chunk=1 << 20, regular_only=False) -> str:
    """The file's sha256 (hex), read with the fewest calls: ingest hashes millions of small logs.
    regular_only: refuse (OSError) a symlink or anything but a regular file without reading it,
    so that a FIFO or a link to a device in a log tree can never block or run for ever."""
    h = hashlib.sha256()
    flags = os.O_RDONLY | (os.O_NOFOLLOW | os.O_NONBLOCK if regular_only else 0)
    fd = os.open(path, flags)
    try:
        if regular_only and not stat.S_ISREG(os.fstat(fd).st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        while block := os.read(fd, chunk):
            h.update(block)
    finally:
        os.close(fd)
    return h.hexdigest()


def command_output(*cmd, cwd=None) -> str | None:
    """A command's stdout, or None when it cannot run, fails or hangs."""
    try:
        proc = subprocess.run(
            [str(c) for c in cmd], capture_output=True, text=True, timeout=30, cwd=cwd
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout if proc.returncode == 0 else None


def git_state() -> tuple[str | None, bool | None]:
    """The checkout's commit and whether tracked files changed since (None outside git)."""
    commit = command_output("git", "rev-parse", "HEAD", cwd=REPO_ROOT)
    if commit is None:
        return None, None
    status = command_output("git", "status", "--porcelain", "--untracked-files=no", cwd=REPO_ROOT)
    return commit.strip(), bool(status and status.strip())


def package_versions(packages: dict[str, str]) -> dict[str, str | None]:
    """iostudy's and Python's versions, plus {key: version of distribution} for packages."""
    versions = {"iostudy": __version__, "python": platform.python_version()}
    for key, dist in packages.items():
        try:
            versions[key] = metadata.version(dist)
        except metadata.PackageNotFoundError:
            versions[key] = None
    return versions
