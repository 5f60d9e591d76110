"""File-system content snapshots (seed 000, section II-B and IV): fsstats, redone.

``iostudy fsstats scan PATH --out SNAPSHOT`` walks the tree under PATH in parallel and writes one
JSON snapshot of what it holds: histograms, counts and totals, for the whole tree and per
project (a top-level directory of PATH). ``iostudy fsstats diff A B`` compares two snapshots
(seed 000's Table III, Fig. 8 and the shares of data not modified for 64 and 128 days), and
``iostudy fsstats import SNAPSHOT... --store STORE`` puts snapshots in the store's ``fsstats``
table, which :func:`add_section` draws the report's section from.

The walk
--------
``iostudy-fswalk`` (analysis/src/fswalk, built by ``make setup`` into build/fswalk/) lists
directories with several threads and streams a fixed-size record per entry (:data:`RECORD`);
this module lists PATH itself, decides the projects, and turns the records into histograms in
batches with numpy. The walk stays on PATH's file system (a directory of another one is counted
as a mount point and not entered) and never follows a symbolic link: entries are lstat'ed, a
directory is opened with O_NOFOLLOW and must be the inode its parent listed. PATH itself, when a
symlink, is resolved once (it is the user's argument, as with ``find -H``). Nothing is kept per
file unless ``--list FILE`` asks for a listing; memory holds the histograms, the directories still
to list, and the inode numbers of the files with more than one link (so that each is counted
once: the first name found counts, the others are counted as ``hardlinks``).

A failure does not stop the walk: it is counted by kind, ``permission`` (EACCES, EPERM: a
directory that cannot be listed or entered, an entry that cannot be lstat'ed), ``vanished``
(ENOENT, ENOTDIR, ELOOP, ESTALE: removed, or replaced by something else, between being listed and
being looked at) or ``other``, and the first :data:`ERROR_EXAMPLES` are kept with their paths.

With ``--checkpoint FILE`` the state (histograms, directories still to list in FILE.pending.<n>,
inodes of multiply-linked files) is saved every ``--checkpoint-every`` seconds, on SIGINT or
SIGTERM and after ``--max-dirs`` directories; ``--resume`` goes on from it. A checkpoint holds
whole directories only: a directory is either counted or still to list, never half.

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

The store table
---------------
``fsstats`` (store.TABLES) has one row per snapshot and histogram bin (kind ``histogram``: name,
bin, lo, hi, unit, and count, bytes, allocated or entries as the histogram has them; project set
for the per-project ``file_size`` bins), per count (kind ``count``: the counts above, for the
whole scan with project null and per project), per error kind (kind ``error``) and per statvfs
figure (kind ``filesystem``), all in ``value``. Every row has the snapshot's name, root and
taken (its start, UTC). An import writes STORE/fsstats/<name>.parquet (anything but
[A-Za-z0-9._-] in the name made "_"); importing it again replaces it.

Seed 000's tables and figure are pure functions of snapshots, each given as the JSON dict or as
its rows of the store's table: :func:`growth_table` (Table III), :func:`size_cdf` (Fig. 8, with
and without the project holding the most files), :func:`unmodified_shares` (IV-B: data not
modified for 64 and 128 days); :func:`add_section` draws them into the report from the store.
"""

from __future__ import annotations

import argparse
import contextlib
import errno as errno_mod
import fcntl
import json
import math
import os
import re
import shutil
import signal
import socket
import stat
import subprocess
import sys
import tempfile
import textwrap
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

import numpy as np

from iostudy import __version__
from iostudy.core import config
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_INTERRUPTED, EXIT_STOPPED
from iostudy.core.paths import add_store_option

FORMAT = "iostudy-fsstats"
VERSION = 1
TOOL = "iostudy-fswalk"
TABLE = "fsstats"
# Exit statuses: as in iostudy.cli.cli (2: the input could not be used), plus "stopped early with
ERROR_EXAMPLES = 20
DAY = 86400
ROOT_PROJECT = "."

# One record of iostudy-fswalk (struct fsw_record in fswalk.c, native byte order).
RECORD = np.dtype(
    [
        ("size", "=u8"),
        ("blocks", "=u8"),
        ("mtime", "=i8"),
        ("atime", "=i8"),
        ("ctime", "=i8"),
        ("ino", "=u8"),
        ("nlink", "=u4"),
        ("entries", "=u4"),
        ("project", "=u4"),
        ("namelen", "=u2"),
        ("type", "u1"),
        ("flags", "u1"),
    ]
)
assert RECORD.itemsize == 64
REG, DIR, LNK, OTHER, VISIT = range(5)
MOUNT = 1  # flags: a directory of another file system, not entered
WALKER_STOPPED = 3  # iostudy-fswalk's exit status when it stopped with directories pending

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
_ERRNO_KINDS = {
    errno_mod.EACCES: "permission",
    errno_mod.EPERM: "permission",
    errno_mod.ENOENT: "vanished",
    errno_mod.ENOTDIR: "vanished",
    errno_mod.ELOOP: "vanished",
    errno_mod.ESTALE: "vanished",
}
# Records read per batch: 4 MiB. Byte sums are exact per batch while records * 2^32 < 2^53.
BATCH = 65536
F_SETPIPE_SZ = 1031  # Linux fcntl: a larger pipe means fewer wake-ups of the reader


class FsstatsError(Exception):
    """A scan that cannot start or go on, or a snapshot that cannot be read; the message names
    the path. status: the command's exit status (EXIT_BAD_INPUT, or EXIT_FAILED when the walker
    failed)."""

    def __init__(self, message: str, status: int = EXIT_BAD_INPUT):
        super().__init__(message)
        self.status = status


# -- binning -------------------------------------------------------------------------------------


def bit_length(values: np.ndarray) -> np.ndarray:
    """int.bit_length of each non-negative value (uint64 or int64 array): the log2 bin."""
    v = np.asarray(values).astype(np.uint64, copy=False)
    e = np.frexp(v.astype(np.float64))[1].astype(np.int64)
    # float64 rounds values just below 2^k (k > 53) up to 2^k: one bin too high, put back
    big = np.flatnonzero(e > 53)
    if len(big):
        e[big] = np.minimum(e[big], 64)
        low = np.left_shift(np.uint64(1), (e[big] - 1).astype(np.uint64))
        e[big] -= v[big] < low
    return e


def bin_edges(scale: str, k: int) -> tuple[int, int]:
    """[lo, hi) of bin k."""
    if scale == "linear8":
        return 8 * k, 8 * k + 8
    return (0, 1) if k == 0 else (1 << (k - 1), 1 << k)


def _split_sums(keys: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """Exact int64 sums of uint64 values per key (0 <= key < n). A float64 bincount is exact
    while every sum stays below 2^53; when the values are too large for that, the high and low
    32 bits are summed apart (exact for batches of fewer than 2^21 values)."""
    v = values.astype(np.uint64, copy=False)
    if not len(v) or int(v.max()) * len(v) < 1 << 53:
        return np.bincount(keys, weights=v.astype(np.float64), minlength=n).astype(np.int64)
    lo = np.bincount(keys, weights=(v & np.uint64(0xFFFFFFFF)).astype(np.float64), minlength=n)
    hi = np.bincount(keys, weights=(v >> np.uint64(32)).astype(np.float64), minlength=n)
    return (hi.astype(np.int64) << 32) + lo.astype(np.int64)


def _ages(now: int, times: np.ndarray) -> np.ndarray:
    """Log2 bins of whole days from times to now (a time in the future: 0 days)."""
    return bit_length(np.maximum((now - times) // DAY, 0))


# -- the tally: what a scan accumulates, and what a checkpoint saves ---------------------------


class Tally:
    """Histograms and counts of the records seen so far, whole and per project."""

    def __init__(self, now: int, projects: list[str]):
        self.now = now
        self.projects = list(projects)
        self.hist = {
            name: np.zeros((NAME_BINS if scale == "linear8" else LOG2_BINS, len(cols)), np.int64)
            for name, (_, scale, cols) in HISTOGRAMS.items()
        }
        self.counts = np.zeros((len(projects), len(COUNTS)), np.int64)
        self.project_sizes: dict[int, list[int]] = {}  # project * LOG2_BINS + bin -> files, bytes
        self.linked: set[int] = set()  # inodes of files with nlink > 1 already counted
        self.errors = dict.fromkeys(ERROR_KINDS, 0)
        self.examples: list[dict] = []
        self.records = 0

    def _count(self, name: str, projects: np.ndarray, weights=None):
        col = COUNTS.index(name)
        n = len(self.projects)
        if weights is None:
            self.counts[:, col] += np.bincount(projects, minlength=n)
        else:
            self.counts[:, col] += _split_sums(projects, weights, n)

    def _hist(self, name: str, bins: np.ndarray, *weights):
        h = self.hist[name]
        h[:, 0] += np.bincount(bins, minlength=len(h))
        for i, w in enumerate(weights, 1):
            h[:, i] += _split_sums(bins, w, len(h))

    def add(self, rec: np.ndarray) -> None:
        """Count a batch of records (a RECORD array). Column by column: selecting whole
        64-byte records would copy them."""
        self.records += len(rec)
        kind = rec["type"]
        visit = kind == VISIT
        if visit.any():
            entries = rec["entries"][visit]
            self._hist("dir_entries", bit_length(entries), entries)
        found = ~visit
        if not found.any():
            return
        proj = rec["project"].astype(np.int64)
        self._count("entries", proj[found])
        self._hist("name_length", rec["namelen"][found] >> 3)
        is_dir = kind == DIR
        mount = is_dir & ((rec["flags"] & MOUNT) != 0)
        self._count("dirs", proj[is_dir & ~mount])
        self._count("mountpoints", proj[mount])
        self._count("symlinks", proj[kind == LNK])
        self._count("special", proj[kind == OTHER])

        files = np.flatnonzero(kind == REG)
        linked = files[rec["nlink"][files] > 1]
        if len(linked):
            first = np.ones(len(linked), bool)
            for i, ino in enumerate(rec["ino"][linked].tolist()):
                if ino in self.linked:
                    first[i] = False
                else:
                    self.linked.add(ino)
            self._count("multilinked_files", proj[linked[first]])
            self._count("hardlinks", proj[linked[~first]])
            files = np.setdiff1d(files, linked[~first], assume_unique=True)
        if not len(files):
            return
        fproj = proj[files]
        size = rec["size"][files]
        allocated = rec["blocks"][files] * np.uint64(512)
        self._count("files", fproj)
        self._count("bytes", fproj, size)
        self._count("allocated", fproj, allocated)
        size_bins = bit_length(size)
        self._hist("file_size", size_bins, size, allocated)
        self._hist("allocated_size", bit_length(allocated), allocated)
        for name in ("mtime", "atime", "ctime"):
            self._hist(name, _ages(self.now, rec[name][files]), size)
        # per project: a bincount over project x bin when that is small, else the keys found
        keys = fproj * LOG2_BINS + size_bins
        n = len(self.projects) * LOG2_BINS
        if n <= 1 << 16:
            counts = np.bincount(keys, minlength=n)
            uniq = np.flatnonzero(counts)
            counts, sums = counts[uniq], _split_sums(keys, size, n)[uniq]
        else:
            uniq, inverse = np.unique(keys, return_inverse=True)
            counts = np.bincount(inverse, minlength=len(uniq))
            sums = _split_sums(inverse, size, len(uniq))
        for key, c, s in zip(uniq.tolist(), counts.tolist(), sums.tolist(), strict=True):
            slot = self.project_sizes.setdefault(key, [0, 0])
            slot[0] += c
            slot[1] += s

    def add_root_dir(self) -> None:
        """The root: a directory of project "." found by no parent."""
        self.counts[0, COUNTS.index("dirs")] += 1

    def add_error(self, op: str, err: int, path: str) -> None:
        kind = "vanished" if op == "replaced" else _ERRNO_KINDS.get(err, "other")
        self.errors[kind] += 1
        if len(self.examples) < ERROR_EXAMPLES:
            why = "not the directory its parent listed" if op == "replaced" else os.strerror(err)
            self.examples.append({"kind": kind, "op": op, "errno": err, "error": why, "path": path})

    @property
    def listed(self) -> int:
        """Directories listed so far (the root included)."""
        return int(self.hist["dir_entries"][:, 0].sum())

    @property
    def n_errors(self) -> int:
        return sum(self.errors.values())

    def total(self, name: str) -> int:
        return int(self.counts[:, COUNTS.index(name)].sum())

    # -- to and from JSON (checkpoint, snapshot) --

    def state(self) -> dict:
        return {
            "now": self.now,
            "projects": self.projects,
            "hist": {k: v.tolist() for k, v in self.hist.items()},
            "counts": self.counts.tolist(),
            "project_sizes": [[k, *v] for k, v in self.project_sizes.items()],
            "linked": sorted(self.linked),
            "errors": self.errors,
            "examples": self.examples,
            "records": self.records,
        }

    @classmethod
    def from_state(cls, s: dict) -> Tally:
        t = cls(s["now"], s["projects"])
        for k, v in s["hist"].items():
            t.hist[k] = np.array(v, np.int64).reshape(t.hist[k].shape)
        t.counts = np.array(s["counts"], np.int64).reshape(t.counts.shape)
        t.project_sizes = {k: [c, b] for k, c, b in s["project_sizes"]}
        t.linked = set(s["linked"])
        t.errors = dict(s["errors"])
        t.examples = list(s["examples"])
        t.records = s["records"]
        return t

    def histograms(self) -> dict:
        out = {}
        for name, (unit, scale, cols) in HISTOGRAMS.items():
            h = self.hist[name]
            bins = [[*bin_edges(scale, int(k)), *map(int, h[k])] for k in np.flatnonzero(h[:, 0])]
            out[name] = {"unit": unit, "scale": scale, "columns": ["lo", "hi", *cols], "bins": bins}
        return out

    def project_list(self) -> list[dict]:
        sizes: dict[int, list] = {}
        for key in sorted(self.project_sizes):
            p, k = divmod(key, LOG2_BINS)
            sizes.setdefault(p, []).append([*bin_edges("log2", k), *self.project_sizes[key]])
        out = []
        for p, name in enumerate(self.projects):
            entry = {"name": name, **dict(zip(COUNTS, map(int, self.counts[p]), strict=True))}
            entry["file_size"] = {
                "columns": ["lo", "hi", *PROJECT_HISTOGRAM_COLUMNS],
                "bins": sizes.get(p, []),
            }
            out.append(entry)
        return sorted(out, key=lambda e: e["name"])


# -- the walker ----------------------------------------------------------------------------------


def find_walker() -> Path | None:
    """IOSTUDY_FSWALK, else the CMake build of this checkout, else PATH (an installed one)."""
    candidates = [
        os.environ.get("IOSTUDY_FSWALK"),
        config.REPO_ROOT / "build" / "fswalk" / TOOL,
        shutil.which(TOOL),
    ]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    return None


def default_threads() -> int:
    """Walker threads: 2 per CPU (a thread waits on metadata much of the time, on a parallel
    file system most of it), at least 4, at most 32."""
    return min(32, max(4, 2 * (os.cpu_count() or 1)))


def _start_line(project: int, ino: int, path: bytes) -> bytes:
    return b"%d\0%d\0%s\0" % (project, ino, path)


def _read_nul_records(path: Path):
    """The NUL-terminated records of a file, one at a time (bytes)."""
    with open(path, "rb") as f:
        rest = b""
        while chunk := f.read(1 << 20):
            parts = (rest + chunk).split(b"\0")
            rest = parts.pop()
            yield from parts
        if rest:
            yield rest


def _record_type(mode: int) -> int:
    if stat.S_ISREG(mode):
        return REG
    if stat.S_ISDIR(mode):
        return DIR
    if stat.S_ISLNK(mode):
        return LNK
    return OTHER


def _list_line(rec, path: bytes) -> bytes:
    kind = "fdlo"[rec["type"]] + ("+" if rec["flags"] & MOUNT else "")
    fields = [
        kind,
        rec["size"],
        rec["blocks"],
        rec["mtime"],
        rec["atime"],
        rec["ctime"],
        rec["nlink"],
        rec["ino"],
    ]
    return "\t".join(str(f) for f in fields).encode() + b"\t" + path + b"\0"


def list_root(root: bytes, dev: int, listing=None):
    """The root's own listing, done here rather than by the walker since it decides the
    projects: (records, project names, start lines, errors as (op, errno, path)). Entries that are
    directories of this file system are projects 1..n in name order; the root and the other
    entries are project 0 (".")."""
    try:
        with os.scandir(root) as it:
            names = sorted(e.name for e in it)
    except OSError as exc:
        raise FsstatsError(f"{os.fsdecode(root)}: cannot list: {exc.strerror}") from None
    projects, starts, errors = [ROOT_PROJECT], [], []
    recs = np.zeros(len(names) + 1, RECORD)
    n = 0
    for name in names:
        path = root.rstrip(b"/") + b"/" + name
        try:
            st = os.lstat(path)
        except OSError as exc:
            errors.append(("stat", exc.errno or 0, os.fsdecode(path)))
            continue
        r = recs[n]
        r["size"], r["blocks"] = max(st.st_size, 0), max(st.st_blocks, 0)
        r["mtime"], r["atime"], r["ctime"] = int(st.st_mtime), int(st.st_atime), int(st.st_ctime)
        r["ino"], r["nlink"] = st.st_ino, st.st_nlink
        r["namelen"] = min(len(name), 65535)
        r["type"] = _record_type(st.st_mode)
        if r["type"] == DIR:
            if st.st_dev != dev:
                r["flags"] = MOUNT
            else:
                r["project"] = len(projects)
                starts.append(_start_line(len(projects), st.st_ino, path))
                projects.append(os.fsdecode(name))
        if listing is not None:
            listing.write(_list_line(r, path))
        n += 1
    visit = recs[n]
    visit["type"], visit["entries"] = VISIT, len(names)
    return recs[: n + 1], projects, starts, errors


# -- progress ------------------------------------------------------------------------------------


class _Progress:
    """A live line on a terminal (rich), else a line on stderr every `every` seconds."""

    def __init__(self, root: str, quiet: bool, every: float = 30.0):
        self.root, self.quiet, self.every = root, quiet, every
        self.live = None
        self.last = time.monotonic()
        if not quiet and sys.stderr.isatty():
            from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self.live = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                transient=True,
            )
            self.task = self.live.add_task(f"fsstats scan {root}")

    def __enter__(self):
        if self.live:
            self.live.start()
        return self

    def __exit__(self, *exc):
        if self.live:
            self.live.stop()

    def update(self, tally: Tally, elapsed: float, force: bool = False):
        if self.quiet:
            return
        entries = tally.total("entries")
        rate = entries / elapsed if elapsed > 0 else 0.0
        text = (
            f"fsstats scan {self.root}: {entries:,} entries, {tally.listed:,} directories "
            f"listed, {rate:,.0f} entries/s, {tally.n_errors:,} errors"
        )
        if self.live:
            self.live.update(self.task, description=text)
        elif force or time.monotonic() - self.last >= self.every:
            print(text, file=sys.stderr, flush=True)
            self.last = time.monotonic()


# -- scan ----------------------------------------------------------------------------------------


@dataclass
class ScanResult:
    status: int  # EXIT_*: 0 complete (snapshot written), EXIT_STOPPED, EXIT_INTERRUPTED
    snapshot: dict | None
    tally: Tally
    elapsed: float
    checkpoint: Path | None = None


def _utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _statvfs(root: str) -> dict:
    try:
        s = os.statvfs(root)
    except OSError:
        return {}
    return {
        "size_bytes": s.f_blocks * s.f_frsize,
        "used_bytes": (s.f_blocks - s.f_bfree) * s.f_frsize,
        "free_bytes": s.f_bavail * s.f_frsize,
        "inodes": s.f_files,
        "inodes_free": s.f_ffree,
    }


class _Checkpoint:
    """FILE (JSON: the tally and the scan's facts) and FILE.pending.<n> (the directories still
    to list, iostudy-fswalk's start format). A new generation's pending file is written before
    the JSON that names it is renamed into place, and the older one removed after: a crash at
    any point leaves a consistent pair."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def pending_path(self, generation: int) -> Path:
        return self.path.with_name(f"{self.path.name}.pending.{generation}")

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> dict:
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise FsstatsError(f"{self.path}: cannot read the checkpoint: {exc}") from None
        if not isinstance(state, dict) or state.get("format") != f"{FORMAT}-checkpoint":
            raise FsstatsError(f"{self.path}: not an fsstats checkpoint")
        if not self.pending_path(state["generation"]).is_file():
            raise FsstatsError(
                f"{self.path}: its list of directories to walk, "
                f"{self.pending_path(state['generation'])}, is missing"
            )
        return state

    def save(self, state: dict) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.path)
        for old in self.path.parent.glob(f"{self.path.name}.pending.*"):
            suffix = old.name.rsplit(".", 1)[-1]
            if suffix.isdigit() and int(suffix) != state["generation"]:
                old.unlink(missing_ok=True)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        for old in self.path.parent.glob(f"{self.path.name}.pending.*"):
            old.unlink(missing_ok=True)


def _read_errors(path: Path, tally: Tally) -> None:
    for rec in _read_nul_records(path):
        op, err, p = rec.split(b" ", 2)
        tally.add_error(op.decode(), int(err), os.fsdecode(p))


class _Signals:
    """SIGINT and SIGTERM stop the scan cleanly: the walker finishes the directories it is in
    and hands back the rest, and a checkpoint keeps them."""

    def __init__(self):
        self.received = None
        self.proc = None
        self.saved = {}

    def _handler(self, signum, frame):
        self.received = signum
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError):  # not the main thread: leave them
                self.saved[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc):
        for sig, old in self.saved.items():
            signal.signal(sig, old)


def _run_walker(  # noqa: C901
    walker,
    starts: Path,
    pending: Path,
    errors: Path,
    tally: Tally,
    signals,
    progress,
    clock,
    *,
    threads,
    max_dirs,
    max_ms,
    dev,
    listing,
):
    """One walker run over the start directories: (its exit status, why it stopped early or
    ""). Records are counted as they arrive, in batches."""
    cmd = [
        str(walker),
        "--dev",
        str(dev),
        "--threads",
        str(threads),
        "--errors",
        str(errors),
        "--pending",
        str(pending),
    ]
    if max_dirs:
        cmd += ["--max-dirs", str(max_dirs)]
    if max_ms:
        cmd += ["--max-ms", str(max_ms)]
    if listing:
        cmd += ["--list", str(listing)]
    if signals.received:  # stopped before it started: every start directory is still to go
        shutil.copyfile(starts, pending)
        errors.write_bytes(b"")
        return WALKER_STOPPED, "signal"
    # SIGINT and SIGTERM are blocked while it starts (it unblocks them once it handles them):
    # one arriving meanwhile waits for it instead of killing it. Its own session: a terminal's
    # Ctrl-C reaches us only, and we stop it cleanly.
    stops = {signal.SIGINT, signal.SIGTERM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        with open(starts, "rb") as stdin:
            proc = subprocess.Popen(
                cmd,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        signals.proc = proc
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one that came meanwhile runs now
    if signals.received:  # it came before the walker was there to be told
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(OSError):
        fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, 1 << 20)
    buf = np.empty(BATCH, RECORD)
    raw = memoryview(buf.view(np.uint8))
    filled, last = 0, time.monotonic()
    try:
        while True:
            n = proc.stdout.readinto(raw[filled:])
            if n:
                filled += n
            full = filled == len(raw)
            if full or not n or time.monotonic() - last > 1.0:
                whole = filled // RECORD.itemsize
                if whole:
                    tally.add(buf[:whole])
                    tail = filled - whole * RECORD.itemsize
                    raw[:tail] = raw[whole * RECORD.itemsize : filled]
                    filled = tail
                progress.update(tally, clock())
                last = time.monotonic()
            if not n:
                break
        stderr = proc.stderr.read().decode(errors="replace")
    except BaseException:
        proc.kill()  # it would wait for us to read its records forever
        raise
    finally:
        status = proc.wait()
        signals.proc = None
        proc.stdout.close()
        proc.stderr.close()
    if filled:
        raise FsstatsError(f"{TOOL} wrote a partial record ({filled} bytes left over)", EXIT_FAILED)
    if status not in (0, WALKER_STOPPED):
        why = stderr.strip() or f"exit status {status}"
        raise FsstatsError(f"{TOOL} failed: {why}", EXIT_FAILED)
    _read_errors(errors, tally)
    # when stopped, the last line of its stderr says why: "stopped: <reason>, ..."
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    reason = last.split(":", 1)[1].split(",", 1)[0].strip() if last.startswith("stopped:") else ""
    return status, reason


def scan(  # noqa: C901
    root,
    out: Path | None,
    *,
    name: str | None = None,
    threads: int | None = None,
    checkpoint: Path | None = None,
    checkpoint_every: float = 600.0,
    resume: bool = False,
    max_dirs: int | None = None,
    listing: Path | None = None,
    quiet: bool = False,
) -> ScanResult:
    """Scan the tree under root; write the snapshot to out when complete (a temporary file
    renamed into place) and return it. Raises FsstatsError when the scan cannot start or the
    walker fails. With max_dirs, stops after that many directories (a checkpoint is needed to
    go on); SIGINT and SIGTERM stop it too (the checkpoint, if any, is saved)."""
    walker = find_walker()
    if walker is None:
        raise FsstatsError(f"{TOOL} not found: run `make setup` (or set IOSTUDY_FSWALK to it)")
    if (max_dirs or resume) and checkpoint is None:
        raise FsstatsError("--max-dirs and --resume need --checkpoint FILE")
    given = os.path.abspath(os.fsdecode(root))
    try:
        st = os.stat(given)  # the root alone is followed if it is a symlink (find -H)
    except OSError as exc:
        raise FsstatsError(f"{given}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FsstatsError(f"{given}: not a directory")
    root_s = os.path.realpath(given)
    root_b = os.fsencode(root_s)
    dev = st.st_dev
    threads = threads or default_threads()
    ck = _Checkpoint(checkpoint) if checkpoint else None
    if ck and ck.exists() and not resume:
        raise FsstatsError(
            f"{ck.path} exists: give --resume to go on from it, or remove it to start afresh"
        )
    if out is not None:
        folder = Path(out).absolute().parent
        existing = next(p for p in (folder, *folder.parents) if p.exists())
        if not os.access(existing, os.W_OK | os.X_OK) or not existing.is_dir():
            raise FsstatsError(f"{out}: cannot write there ({existing} is not a writable folder)")

    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fsstats-")))
        resuming = bool(resume and ck and ck.exists())
        list_file = (
            stack.enter_context(open(listing, "ab" if resuming else "wb")) if listing else None
        )
        if resuming:
            state = ck.load()
            if state["root"] != root_s or state["device"] != dev:
                raise FsstatsError(
                    f"{ck.path}: a checkpoint of {state['root']} (device {state['device']}), "
                    f"not of {root_s} (device {dev})"
                )
            tally = Tally.from_state(state["tally"])
            generation = state["generation"]
            starts = ck.pending_path(generation)
            facts = state["facts"]
            facts["sessions"] += 1
        else:
            now = time.time()
            facts = {"started": now, "elapsed": 0.0, "sessions": 1}
            recs, projects, start_lines, errors = list_root(root_b, dev, list_file)
            tally = Tally(int(now), projects)
            for error in errors:
                tally.add_error(*error)
            tally.add_root_dir()
            tally.add(recs)
            generation = 0
            starts = ck.pending_path(0) if ck else work / "starts"
            starts.parent.mkdir(parents=True, exist_ok=True)
            starts.write_bytes(b"".join(start_lines))
        if list_file is not None:
            list_file.close()  # the walker appends to it

        def save(gen: int):
            ck.save(
                {
                    "format": f"{FORMAT}-checkpoint",
                    "version": VERSION,
                    "root": root_s,
                    "device": dev,
                    "name": name,
                    "generation": gen,
                    "facts": facts,
                    "tally": tally.state(),
                }
            )

        if ck and not resuming:
            save(0)
        t0 = time.monotonic()
        elapsed_before = facts["elapsed"]
        listed_before = tally.listed  # this session's --max-dirs counts from here

        def clock():
            return elapsed_before + time.monotonic() - t0

        status = 0
        signals = stack.enter_context(_Signals())
        progress = stack.enter_context(_Progress(root_s, quiet))
        while True:
            pending = ck.pending_path(generation + 1) if ck else work / f"pending.{generation + 1}"
            walker_status, reason = _run_walker(
                walker,
                starts,
                pending,
                work / "errors",
                tally,
                signals,
                progress,
                clock,
                threads=threads,
                dev=dev,
                listing=listing,
                max_dirs=max_dirs - (tally.listed - listed_before) if max_dirs else None,
                max_ms=max(1, int(checkpoint_every * 1000)) if ck else None,
            )
            generation += 1
            facts["elapsed"] = clock()
            if ck:  # done too: a snapshot that cannot be written is one --resume away
                save(generation)
            if walker_status == 0:
                break
            starts = pending
            if signals.received or reason == "signal":
                status = EXIT_INTERRUPTED
                break
            if reason == "max-dirs":
                status = EXIT_STOPPED
                break
            if not ck:  # cannot happen: without a checkpoint nothing else stops the walker
                raise FsstatsError(f"{TOOL} stopped early: {reason}", EXIT_FAILED)
        progress.update(tally, clock(), force=True)
    elapsed = facts["elapsed"]
    if status:
        return ScanResult(status, None, tally, elapsed, ck.path if ck else None)

    finished = time.time()
    snapshot = {
        "format": FORMAT,
        "version": VERSION,
        "name": name or (Path(out).stem if out else os.path.basename(root_s)),
        "root": root_s,
        "device": dev,
        "host": socket.gethostname(),
        "started": _utc_iso(facts["started"]),
        "finished": _utc_iso(finished),
        "now": tally.now,
        "elapsed_s": round(elapsed, 3),
        "sessions": facts["sessions"],
        "tool": {"iostudy": __version__, "walker": TOOL, "threads": threads},
        "filesystem": _statvfs(root_s),
        "counts": {c: tally.total(c) for c in COUNTS},
        "errors": {**tally.errors, "examples": tally.examples},
        "histograms": tally.histograms(),
        "projects": tally.project_list(),
    }
    if out is not None:
        try:
            write_snapshot(snapshot, Path(out))
        except OSError as exc:
            kept = f" (--resume with the checkpoint {ck.path} writes it)" if ck else ""
            raise FsstatsError(
                f"{out}: cannot write: {exc.strerror or exc}{kept}", EXIT_FAILED
            ) from None
    if ck:
        ck.remove()
    return ScanResult(0, snapshot, tally, elapsed, None)


# -- snapshots -----------------------------------------------------------------------------------


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


def _text(name: str | None) -> str | None:
    """A name as valid UTF-8 for the store: bytes that are not UTF-8 (lone surrogates after
    os.fsdecode) as backslash escapes."""
    if name is None:
        return None
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _int64(v):
    return v if v is None or v < 1 << 63 else None


# histogram value columns -> the store's columns
_STORE_COLUMN = {
    "files": "count",
    "dirs": "count",
    "names": "count",
    "bytes": "bytes",
    "allocated": "allocated",
    "entries": "entries",
}


def _bin_rows(base: dict, name: str, hist: dict, project=None) -> list[dict]:
    cols = hist["columns"]
    unit = hist.get("unit", HISTOGRAMS[name][0])
    scale = hist.get("scale", HISTOGRAMS[name][1])
    rows = []
    for b in hist["bins"]:
        values = dict(zip(cols, b, strict=True))
        lo, hi = values.pop("lo"), values.pop("hi")
        k = lo // 8 if scale == "linear8" else (0 if lo == 0 else lo.bit_length())
        row = {
            **base,
            "kind": "histogram",
            "name": name,
            "project": project,
            "bin": k,
            "lo": _int64(lo),
            "hi": _int64(hi),
            "unit": unit,
        }
        for col, v in values.items():
            row[_STORE_COLUMN[col]] = v
        rows.append(row)
    return rows


def snapshot_rows(snap: dict) -> list[dict]:
    """The store's fsstats rows of a snapshot (see the module docstring)."""
    taken = datetime.strptime(snap["started"], "%Y-%m-%dT%H:%M:%SZ")
    base = {"snapshot": _text(snap["name"]), "root": _text(snap["root"]), "taken": taken}
    rows = []
    for name, hist in snap["histograms"].items():
        rows += _bin_rows(base, name, hist)
    for name, value in snap["counts"].items():
        rows.append({**base, "kind": "count", "name": name, "value": value})
    for kind in ERROR_KINDS:
        rows.append({**base, "kind": "error", "name": kind, "value": snap["errors"].get(kind, 0)})
    for name, value in (snap.get("filesystem") or {}).items():
        rows.append({**base, "kind": "filesystem", "name": name, "value": _int64(value)})
    for p in snap["projects"]:
        project = _text(p["name"])
        for name in COUNTS:
            rows.append(
                {**base, "kind": "count", "name": name, "project": project, "value": p.get(name, 0)}
            )
        rows += _bin_rows(base, "file_size", {**p["file_size"], "unit": "bytes"}, project)
    return rows


def snapshot_frame(snap):
    """A snapshot as a DataFrame of its store rows; a DataFrame (one snapshot's rows of the
    store's fsstats table) is returned as it is."""
    import pandas as pd

    if isinstance(snap, pd.DataFrame):
        return snap
    from iostudy.store import store as store_mod

    names = [n for n in store_mod.TABLES[TABLE].names if n != "imported"]
    return pd.DataFrame(snapshot_rows(snap), columns=names)


# -- seed 000's tables and figure (pure functions of one or two snapshots) ---------------------

ALL_PROJECTS = "(all)"


def _counts(frame, name: str) -> dict:
    """{project (ALL_PROJECTS for the whole scan): value} of a count."""
    rows = frame[(frame["kind"] == "count") & (frame["name"] == name)]
    return {
        (ALL_PROJECTS if p is None or p != p else p): int(v)
        for p, v in zip(rows["project"], rows["value"], strict=True)
    }


def _pct(new, old):
    return 100.0 * (new - old) / old if old else math.nan


def _taken(frame):
    return frame["taken"].iloc[0] if len(frame) else None


def growth_table(a, b):
    """Seed 000's Table III between snapshots a and b (dicts or store rows): per project and for
    the whole scan ("(all)", first), usage (bytes, st_size) and files at a and at b, the change
    in %, and each project's share of the whole scan's growth in bytes and files (EarthScience:
    88% of the new files, 15% of the new data). Projects by usage at b, largest first; a project
    missing from one snapshot has 0 there (its change is NaN when it is new)."""
    import pandas as pd

    fa, fb = snapshot_frame(a), snapshot_frame(b)
    usage_a, usage_b = _counts(fa, "bytes"), _counts(fb, "bytes")
    files_a, files_b = _counts(fa, "files"), _counts(fb, "files")
    projects = sorted(
        (set(usage_a) | set(usage_b)) - {ALL_PROJECTS}, key=lambda p: (-usage_b.get(p, 0), p)
    )
    projects = [ALL_PROJECTS, *projects]
    grow_usage = usage_b.get(ALL_PROJECTS, 0) - usage_a.get(ALL_PROJECTS, 0)
    grow_files = files_b.get(ALL_PROJECTS, 0) - files_a.get(ALL_PROJECTS, 0)
    rows = []
    for p in projects:
        ua, ub = usage_a.get(p, 0), usage_b.get(p, 0)
        na, nb = files_a.get(p, 0), files_b.get(p, 0)
        rows.append(
            {
                "project": p,
                "usage_a": ua,
                "usage_b": ub,
                "usage_change_pct": _pct(ub, ua),
                "files_a": na,
                "files_b": nb,
                "files_change_pct": _pct(nb, na),
                "usage_growth_share_pct": 100.0 * (ub - ua) / grow_usage
                if grow_usage
                else math.nan,
                "files_growth_share_pct": 100.0 * (nb - na) / grow_files
                if grow_files
                else math.nan,
            }
        )
    table = pd.DataFrame(rows)
    table.attrs.update(taken_a=_taken(fa), taken_b=_taken(fb))
    return table


def largest_project(snapshot) -> str | None:
    """The project with the most files (ties: bytes, then name); None without projects."""
    frame = snapshot_frame(snapshot)
    files, usage = _counts(frame, "files"), _counts(frame, "bytes")
    projects = [p for p in files if p != ALL_PROJECTS]
    if not projects:
        return None
    return min(projects, key=lambda p: (-files[p], -usage.get(p, 0), p))


def size_cdf(snapshot, exclude_largest_project: bool = False):
    """Seed 000's Fig. 8: the cumulative distribution of file sizes over the file_size bins:
    lo, hi (bytes), files in the bin and cdf, the fraction of the files smaller than hi. With
    exclude_largest_project, without the files of the project that has the most files
    (largest_project; frame.attrs["excluded"] names it)."""
    import pandas as pd

    frame = snapshot_frame(snapshot)
    bins = frame[(frame["kind"] == "histogram") & (frame["name"] == "file_size")]
    whole = bins[bins["project"].isna()].set_index("bin")["count"]
    excluded = largest_project(frame) if exclude_largest_project else None
    if excluded is not None:
        mine = bins[bins["project"] == excluded].set_index("bin")["count"]
        whole = whole.sub(mine, fill_value=0)
    whole = whole[whole > 0].sort_index()
    lo = [bin_edges("log2", int(k))[0] for k in whole.index]
    hi = [bin_edges("log2", int(k))[1] for k in whole.index]
    total = whole.sum()
    out = pd.DataFrame({"lo": lo, "hi": hi, "files": whole.astype("int64").to_numpy()})
    out["cdf"] = out["files"].cumsum() / total if total else math.nan
    out.attrs["excluded"] = excluded
    return out


def unmodified_shares(snapshot, days=(64, 128)):
    """Seed 000 IV-B: for each d in days, the share of the data (bytes) and of the files not
    modified for d days or more (mtime histogram). Each d must be a bin edge of the log2 day
    bins (0 or a power of 2): ValueError otherwise."""
    import pandas as pd

    frame = snapshot_frame(snapshot)
    bins = frame[
        (frame["kind"] == "histogram") & (frame["name"] == "mtime") & frame["project"].isna()
    ]
    rows = []
    for d in days:
        if d < 0 or (d and d & (d - 1)):
            raise ValueError(f"{d} days is not an edge of the age bins (0 or a power of 2)")
        old = bins[bins["lo"] >= d]
        total_b, total_f = int(bins["bytes"].sum()), int(bins["count"].sum())
        ob, of = int(old["bytes"].sum()), int(old["count"].sum())
        rows.append(
            {
                "days": d,
                "bytes_unmodified": ob,
                "bytes_total": total_b,
                "bytes_share_pct": 100.0 * ob / total_b if total_b else math.nan,
                "files_unmodified": of,
                "files_total": total_f,
                "files_share_pct": 100.0 * of / total_f if total_f else math.nan,
            }
        )
    return pd.DataFrame(rows)


def size_label(nbytes: int) -> str:
    """A size with a binary prefix and 4 significant digits: 1.5 GiB."""
    for unit, factor in (
        ("EiB", 1 << 60),
        ("PiB", 1 << 50),
        ("TiB", 1 << 40),
        ("GiB", 1 << 30),
        ("MiB", 1 << 20),
        ("KiB", 1 << 10),
    ):
        if nbytes >= factor:
            return f"{nbytes / factor:.4g} {unit}"
    return f"{nbytes} B"


# -- commands ------------------------------------------------------------------------------------


def _human(nbytes) -> str:
    return size_label(int(nbytes)) if nbytes == nbytes else ""


def _error_summary(errors: dict) -> str:
    return ", ".join(f"{errors[k]:,} {k}" for k in ERROR_KINDS if errors.get(k)) or "no errors"


def cmd_scan(args) -> int:
    from rich.console import Console

    console = Console(stderr=True)
    try:
        result = scan(
            args.path,
            args.out,
            name=args.name,
            threads=args.threads,
            checkpoint=args.checkpoint,
            checkpoint_every=args.checkpoint_every,
            resume=args.resume,
            max_dirs=args.max_dirs,
            listing=args.list,
            quiet=args.quiet,
        )
    except FsstatsError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return exc.status
    t = result.tally
    for e in t.examples[:5]:
        console.print(
            f"{e['kind']}: {e['path']}: {e['error']} ({e['op']})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if t.n_errors:
        console.print(
            f"warning: {_error_summary(t.errors)} errors (the snapshot lists the first "
            f"{ERROR_EXAMPLES}); those parts are not counted",
            highlight=False,
        )
    rate = t.total("entries") / result.elapsed if result.elapsed > 0 else 0.0
    done = (
        f"{t.total('files'):,} files ({_human(t.total('bytes'))}), {t.listed:,} directories "
        f"listed, {_error_summary(t.errors)}; {result.elapsed:.1f} s, "
        f"{rate:,.0f} entries/s"
    )
    if result.status == EXIT_STOPPED:
        print(
            f"fsstats scan: stopped after --max-dirs {args.max_dirs} directories: {done} so "
            f"far; checkpoint {result.checkpoint} (go on with --resume)"
        )
    elif result.status == EXIT_INTERRUPTED:
        where = (
            f"checkpoint {result.checkpoint} (go on with --resume)"
            if result.checkpoint
            else "nothing saved (--checkpoint FILE keeps an interrupted scan)"
        )
        print(f"fsstats scan: interrupted: {done} so far; {where}")
    else:
        print(f"fsstats scan: {result.snapshot['root']}: {done} -> {args.out}")
    return result.status


# short headers of the diff's printed tables (the CSVs keep the column names)
_HEADERS = {
    "usage_a": "usage A",
    "usage_b": "usage B",
    "usage_change_pct": "usage change",
    "files_a": "files A",
    "files_b": "files B",
    "files_change_pct": "files change",
    "usage_growth_share_pct": "share of new data",
    "files_growth_share_pct": "share of new files",
    "bytes_unmodified": "data unmodified",
    "bytes_total": "all data",
    "bytes_share_pct": "data share",
    "files_unmodified": "files unmodified",
    "files_total": "all files",
    "files_share_pct": "file share",
}


def _print_frame(console, title: str, frame, formats: dict) -> None:
    import pandas as pd
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[col])
        table.add_column(_HEADERS.get(col, col), justify="right" if numeric else "left")
    for record in frame.to_dict("records"):
        cells = []
        for col, v in record.items():
            fmt = formats.get(col)
            if isinstance(v, float) and math.isnan(v):
                cells.append("")
            elif fmt:
                cells.append(fmt(v))
            else:
                cells.append(f"{v:,}" if isinstance(v, int) else str(v))
        table.add_row(*cells)
    console.print(table)


def cmd_diff(args) -> int:
    import pandas as pd
    from rich.console import Console

    try:
        a, b = load_snapshot(args.a), load_snapshot(args.b)
        days = tuple(args.days)
        shares = pd.concat(
            [unmodified_shares(s, days).assign(snapshot=s["name"]) for s in (a, b)],
            ignore_index=True,
        )
    except (FsstatsError, ValueError) as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    growth = growth_table(a, b)
    whole = size_cdf(b)
    without = size_cdf(b, exclude_largest_project=True)
    cdf = whole.assign(series="all files")
    if without.attrs["excluded"] is not None:
        cdf = pd.concat(
            [cdf, without.assign(series=f"without {without.attrs['excluded']}")], ignore_index=True
        )
    shares = shares[["snapshot", *[c for c in shares.columns if c != "snapshot"]]]

    console = Console()
    if not console.is_terminal:  # a file or a pipe: wide enough for the growth table
        console = Console(width=160)
    pct = {c: (lambda v: f"{v:+.1f}%") for c in growth.columns if c.endswith("change_pct")}
    share = {c: (lambda v: f"{v:.1f}%") for c in growth.columns if c.endswith("share_pct")}
    usage = {c: _human for c in ("usage_a", "usage_b")}
    _print_frame(
        console,
        f"growth: {a['name']} ({a['started']}) -> {b['name']} "
        f"({b['started']}) (seed 000, Table III)",
        growth,
        pct | share | usage,
    )
    sizes = {"lo": _human, "hi": _human, "cdf": lambda v: f"{v:.4f}"}
    _print_frame(console, f"file-size CDF of {b['name']} (seed 000, Fig. 8)", cdf, sizes)
    _print_frame(
        console,
        "data not modified for DAYS days or more (seed 000, IV-B)",
        shares,
        {
            "bytes_unmodified": _human,
            "bytes_total": _human,
            "bytes_share_pct": lambda v: f"{v:.1f}%",
            "files_share_pct": lambda v: f"{v:.1f}%",
        },
    )
    if args.csv:
        args.csv.mkdir(parents=True, exist_ok=True)
        for fname, frame in (
            ("growth.csv", growth),
            ("size_cdf.csv", cdf),
            ("unmodified.csv", shares),
        ):
            frame.to_csv(args.csv / fname, index=False, lineterminator="\n")
        print(
            f"fsstats diff: {args.a} -> {args.b}: growth.csv, size_cdf.csv, unmodified.csv "
            f"in {args.csv}"
        )
    else:
        print(f"fsstats diff: {args.a} -> {args.b}: tables printed above (--csv DIR writes them)")
    return 0


def part_name(snapshot_name: str) -> str:
    """The store part of a snapshot: its name with anything but [A-Za-z0-9._-] made "_"."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", snapshot_name)


def cmd_import(args) -> int:
    from rich.console import Console

    from iostudy.store import store as store_mod

    console = Console(stderr=True)
    # every snapshot is read before any is written: a bad one changes nothing
    try:
        snaps = [(path, load_snapshot(path)) for path in args.snapshots]
    except FsstatsError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if args.name:
        if len(snaps) != 1:
            print("iostudy: error: --name names one SNAPSHOT", file=sys.stderr)
            return EXIT_BAD_INPUT
        snaps[0][1]["name"] = args.name
    parts = [part_name(s["name"]) for _, s in snaps]
    clash = sorted({p for p in parts if parts.count(p) > 1})
    if clash:
        print(
            f"iostudy: error: snapshots with the same name would replace each other: "
            f"{', '.join(clash)} (scan with --name)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    data = [snapshot_rows(snap) for _, snap in snaps]
    rows = sum(len(d) for d in data)
    where = store_mod.import_parts(args.store, TABLE, list(zip(parts, data, strict=True)), console)
    print(
        f"fsstats import: {len(snaps)} snapshot{'s' * (len(snaps) != 1)}, {rows} rows into {where}"
    )
    return 0


def _paragraphs(*texts: str) -> str:
    return "\n\n".join(textwrap.fill(t, 78) for t in texts)


_SCAN_HELP = _paragraphs(
    "Walk the tree under PATH (several threads of iostudy-fswalk, built by make setup) and "
    "write a JSON snapshot of its content: histograms of file size (with the bytes and "
    "allocated bytes in each bin), allocated size, age since mtime, atime and ctime (in days), "
    "directory size (entries) and name length; counts of files, directories, symlinks, hard "
    "links, special files and mount points; totals for the whole tree and per project (each "
    "top-level directory of PATH). The schema is in the module docstring (python -m pydoc "
    "iostudy.collect.fsstats).",
    "The walk stays on PATH's file system and never follows a symbolic link (PATH itself is "
    "resolved once). A directory that cannot be read, or an entry that vanishes before it is "
    "looked at, is counted as an error by kind (permission, vanished, other) and the walk goes "
    "on. Nothing is kept per file unless --list asks for it.",
    "Long scans: --checkpoint FILE saves the state every --checkpoint-every seconds and on "
    "SIGINT or SIGTERM; --resume goes on from it (or starts afresh when FILE does not exist); "
    "--max-dirs N stops after N directories with a checkpoint, to split a scan over several "
    "windows. Progress goes to stderr (a live line on a terminal, else a line every 30 s).",
    "Exit status: 0 the snapshot is written; 1 the walker failed; 2 bad input (PATH not a "
    "directory, a checkpoint of another tree, no walker); 3 stopped by --max-dirs; 130 "
    "interrupted. The last line says where the snapshot (or the checkpoint) went.",
)


def register(groups) -> None:
    """Adds the ``fsstats`` command group to the CLI's group subparsers."""

    grp = groups.add_parser(
        "fsstats",
        help="file-system content snapshots: scan, compare, import into the store",
        description="fsstats (seed 000, II-B and IV): snapshots of what a file system holds "
        "(file sizes, ages, directory sizes, per project), their growth between two dates and "
        "the share of data not modified for 64 and 128 days.",
    )
    cmds = grp.add_subparsers(title="commands", dest="command", required=True)
    raw = argparse.RawDescriptionHelpFormatter

    p = cmds.add_parser(
        "scan", help="scan a tree into a JSON snapshot", description=_SCAN_HELP, formatter_class=raw
    )
    p.add_argument("path", type=Path, metavar="PATH", help="the root of the tree to scan")
    p.add_argument(
        "--out",
        "-o",
        type=Path,
        required=True,
        metavar="SNAPSHOT",
        help="the JSON snapshot to write (a temporary file renamed into place)",
    )
    p.add_argument("--name", help="the snapshot's name in the store (default: SNAPSHOT's stem)")
    p.add_argument(
        "--threads",
        "-j",
        type=int,
        metavar="N",
        help=f"walker threads (default {default_threads()} here: 2 per CPU, 4 to 32; "
        "more help on a parallel file system)",
    )
    p.add_argument(
        "--checkpoint",
        type=Path,
        metavar="FILE",
        help="keep the scan's state in FILE and FILE.pending.<n> (removed when done)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=float,
        default=600.0,
        metavar="SEC",
        help="with --checkpoint: save every SEC seconds (default 600)",
    )
    p.add_argument(
        "--resume", action="store_true", help="go on from --checkpoint FILE if it exists"
    )
    p.add_argument(
        "--max-dirs",
        type=int,
        metavar="N",
        help="stop after listing N directories, with a checkpoint (exit status 3)",
    )
    p.add_argument(
        "--list",
        type=Path,
        metavar="FILE",
        help="also write a listing: per entry a NUL-terminated record "
        "type<TAB>size<TAB>blocks<TAB>mtime<TAB>atime<TAB>ctime<TAB>nlink<TAB>inode"
        "<TAB>path (type f, d, l, o; d+ a mount point)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")

    def run_scan(args):
        if args.threads is not None and not 1 <= args.threads <= 1024:
            p.error("--threads must be 1 to 1024")
        if args.max_dirs is not None and args.max_dirs < 1:
            p.error("--max-dirs must be at least 1")
        if args.checkpoint_every <= 0:
            p.error("--checkpoint-every must be positive")
        return cmd_scan(args)

    p.set_defaults(func=run_scan)

    d = cmds.add_parser(
        "diff",
        help="compare two snapshots: growth, size CDF, unmodified data",
        description="Compare snapshot A (the earlier) with B: the growth table (usage in bytes "
        "and files, per project and in all, the change in %% and each project's share of the "
        "growth: seed 000's Table III), B's file-size CDF with and without the project holding "
        "the most files (Fig. 8), and for both the share of the data and of the files not "
        "modified for DAYS days or more (64 and 128 by default; powers of 2, the age bins' "
        "edges).",
    )
    d.add_argument("a", type=Path, metavar="A", help="the earlier snapshot (JSON)")
    d.add_argument("b", type=Path, metavar="B", help="the later snapshot (JSON)")
    d.add_argument(
        "--days",
        type=int,
        nargs="+",
        default=[64, 128],
        metavar="DAYS",
        help="ages of the unmodified shares (default 64 128)",
    )
    d.add_argument(
        "--csv",
        type=Path,
        metavar="DIR",
        help="also write growth.csv, size_cdf.csv and unmodified.csv into DIR",
    )
    d.set_defaults(func=cmd_diff)

    i = cmds.add_parser(
        "import",
        help="import snapshots into the store's fsstats table",
        description="Write each SNAPSHOT into the store's fsstats table as "
        "STORE/fsstats/<name>.parquet (one row per histogram bin, count, error kind and "
        "file-system figure; the module docstring lists them). Importing a snapshot again "
        "replaces its rows. Every snapshot is read before any is written.",
    )
    i.add_argument("snapshots", nargs="+", type=Path, metavar="SNAPSHOT")
    i.add_argument(
        "--name",
        help="the snapshot's name in the store (one SNAPSHOT; default: the name it was "
        "scanned with)",
    )
    add_store_option(i)
    i.set_defaults(func=cmd_import)
