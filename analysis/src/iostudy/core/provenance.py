"""Provenance shared by run manifests, the store and report manifests: file hashes, the
checkout's git state, tool versions (DESIGN.md convention 9: every result carries its own)."""

from __future__ import annotations

import hashlib
import os
import platform
import subprocess
from importlib import metadata

from iostudy import __version__
from iostudy.core import safeio
from iostudy.core.config import REPO_ROOT


def sha256_file(path, chunk=1 << 20, follow=True) -> str:
    """The file's sha256 (hex), read with the fewest calls: ingest hashes millions of small logs.
    Only a regular file is read (:func:`iostudy.core.safeio.open_regular`: OSError otherwise, so
    that a FIFO or a device never blocks or runs for ever); ``follow=False``: a symbolic link too is
    refused."""
    h = hashlib.sha256()
    with safeio.open_regular(path, follow) as fd:
        while block := os.read(fd, chunk):
            h.update(block)
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


def digest_mismatch(listed: dict, found: dict) -> tuple[str, str] | None:
    """The first name (sorted) where a list of digests and the digests found disagree, with
    how: "missing" (listed, not found), "unlisted" (found, not listed) or "differs"; None
    when they agree. One rule for every archive iostudy checks (bundles, offline archives)."""
    for name in sorted(listed.keys() | found.keys()):
        if name not in found:
            return name, "missing"
        if name not in listed:
            return name, "unlisted"
        if found[name] != listed[name]:
            return name, "differs"
    return None


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
