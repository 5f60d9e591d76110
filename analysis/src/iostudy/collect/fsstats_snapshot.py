"""The fsstats snapshot: its format, read and written here, apart from the walk that makes it
(:mod:`iostudy.collect.fsstats_scan`) so that the store's import and the comparisons read
snapshots without the scan's code.

The snapshot (format ``iostudy-fsstats``, version 1)
----------------------------------------------------
A JSON object::

    format, version     "iostudy-fsstats", 1
    name                the snapshot's name (default: the --out file's stem)
    root                the absolute path scanned (symlinks in it resolved)
    device              its st_dev
    host                the host that scanned it
    started, finished   UTC, ISO 8601 ("...Z"); now: started as Unix seconds, the time every
                        age is counted from
    elapsed_s, sessions walking time summed over the sessions (a resumed scan has several)
    tool                {"iostudy": version, "walker": "iostudy-fswalk", "threads": n}
    filesystem          os.statvfs of root: size_bytes, used_bytes, free_bytes, inodes,
                        inodes_free
    counts              entries (names lstat'ed, the root not included), files (regular files,
                        each inode once), dirs (on this file system, the root included),
                        symlinks, special (devices, FIFOs, sockets), hardlinks (extra names of
                        files already counted), multilinked_files (files with more than one
                        link), mountpoints (directories of other file systems, not entered),
                        bytes (st_size of the files), allocated (st_blocks * 512 of the files)
    errors              {"permission": n, "vanished": n, "other": n, "examples": [{"kind",
                        "op" (open, stat, read, replaced), "errno", "error", "path"}, ...]}
    histograms          {name: {"unit", "scale", "columns", "bins": [[lo, hi, ...], ...]}}: only
                        the bins that are not empty, each [lo, hi) in unit, with the columns'
                        values. Scale log2: bin 0 is [0, 1), bin k >= 1 is [2^(k-1), 2^k);
                        linear8: bin k is [8k, 8k+8).
        file_size       regular files by st_size: files, bytes, allocated (capacity by size)
        allocated_size  regular files by allocated bytes: files, allocated
        mtime, atime,   regular files by age in whole days (now - time, floored; a time in the
        ctime           future counts as 0): files, bytes
        dir_entries     directories listed, by their entries: dirs, entries
        name_length     every name lstat'ed, by its length in bytes (linear8): names
    projects            [{"name", "files", "dirs", "symlinks", "special", "hardlinks",
                        "multilinked_files", "mountpoints", "entries", "bytes", "allocated",
                        "file_size": {"columns": [lo, hi, files, bytes], "bins": [...]}}, ...]
                        sorted by name. A project is a top-level directory of root (its own
                        entry and all below it); "." holds the root and the entries directly in
                        it that are not projects.

Names and paths are decoded from the file system's bytes with os.fsdecode: bytes that are not
UTF-8 become lone surrogates (JSON "\\udcXX"), and os.fsencode gives the bytes back. The store
writes them with backslash escapes ("\\xff") instead, since Parquet strings must be UTF-8.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from iostudy.core.errors import BadInput, Failed

FORMAT = "iostudy-fsstats"
VERSION = 1
ERROR_EXAMPLES = 20
ROOT_PROJECT = "."

# The histograms: name -> (unit, scale, value columns). One source for the snapshot, the
# checkpoint and the store rows.
LOG2_BINS = 65  # 0 and the bit lengths 1..64 of a 64-bit value
NAME_BINS = 8192  # linear8 bins of a 16-bit name length
HISTOGRAMS = {
    "file_size": ("bytes", "log2", ("files", "bytes", "allocated")),
    "allocated_size": ("bytes", "log2", ("files", "allocated")),
    "mtime": ("days", "log2", ("files", "bytes")),
    "atime": ("days", "log2", ("files", "bytes")),
    "ctime": ("days", "log2", ("files", "bytes")),
    "dir_entries": ("entries", "log2", ("dirs", "entries")),
    "name_length": ("bytes", "linear8", ("names",)),
}
PROJECT_HISTOGRAM_COLUMNS = ("files", "bytes")  # the per-project file_size histogram
COUNTS = (
    "entries",
    "files",
    "dirs",
    "symlinks",
    "special",
    "hardlinks",
    "multilinked_files",
    "mountpoints",
    "bytes",
    "allocated",
)
ERROR_KINDS = ("permission", "vanished", "other")


class FsstatsError(BadInput):
    """A scan that cannot start or go on, or a snapshot that cannot be read; the message names
    the path."""


class WalkFailed(Failed):
    """The walker failed, or the snapshot of a finished walk could not be written; the message
    names the program or the file."""


def bin_edges(scale: str, k: int) -> tuple[int, int]:
    """[lo, hi) of bin k."""
    if scale == "linear8":
        return 8 * k, 8 * k + 8
    return (0, 1) if k == 0 else (1 << (k - 1), 1 << k)


def write_snapshot(snapshot: dict, out: Path) -> None:
    """The snapshot as JSON at out (a temporary file renamed into place)."""
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    try:
        tmp.write_text(json.dumps(snapshot, indent=1) + "\n")
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def load_snapshot(path) -> dict:
    """A snapshot written by `iostudy fsstats scan`; FsstatsError naming the file and the problem
    when it is not one."""
    try:
        snap = json.loads(Path(path).read_text())
    except OSError as exc:
        raise FsstatsError(f"{path}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise FsstatsError(f"{path}: not JSON: {exc}") from None
    if not isinstance(snap, dict) or snap.get("format") != FORMAT:
        raise FsstatsError(f'{path}: not an fsstats snapshot (no "format": "{FORMAT}")')
    if snap.get("version") != VERSION:
        raise FsstatsError(f"{path}: snapshot version {snap.get('version')}, expected {VERSION}")
    missing = [
        k
        for k in ("name", "root", "started", "counts", "errors", "histograms", "projects")
        if k not in snap
    ]
    if missing:
        raise FsstatsError(f"{path}: the snapshot lacks {', '.join(missing)}")
    return snap
