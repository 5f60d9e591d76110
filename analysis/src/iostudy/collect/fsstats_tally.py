"""What a scan accumulates: the walker's records (:func:`record_dtype`) binned into histograms and
counts, whole and per project, by the :class:`Tally` a checkpoint saves and a snapshot is made
of. Apart from the walk (:mod:`iostudy.collect.fsstats_walker`) since it is plain numpy over
batches of records, and tested so.
"""

from __future__ import annotations

import errno as errno_mod
import functools
import os

from iostudy.collect.fsstats_snapshot import (
    COUNTS,
    ERROR_EXAMPLES,
    ERROR_KINDS,
    HISTOGRAMS,
    LOG2_BINS,
    NAME_BINS,
    PROJECT_HISTOGRAM_COLUMNS,
    bin_edges,
)
from iostudy.core.deferred import deferred

np = deferred("numpy")

DAY = 86400


@functools.cache
def record_dtype() -> np.dtype:
    """One record of iostudy-fswalk (struct fsw_record in fswalk.c, native byte order)."""
    dtype = np.dtype(
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
    assert dtype.itemsize == 64
    return dtype


REG, DIR, LNK, OTHER, VISIT = range(5)
MOUNT = 1  # flags: a directory of another file system, not entered

_ERRNO_KINDS = {
    errno_mod.EACCES: "permission",
    errno_mod.EPERM: "permission",
    errno_mod.ENOENT: "vanished",
    errno_mod.ENOTDIR: "vanished",
    errno_mod.ELOOP: "vanished",
    errno_mod.ESTALE: "vanished",
}


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
        """Count a batch of records (a record_dtype() array). Column by column: selecting whole
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

        files = self._first_names(rec, proj, np.flatnonzero(kind == REG))
        if len(files):
            self._add_files(rec, proj, files)

    def _first_names(self, rec: np.ndarray, proj: np.ndarray, files: np.ndarray) -> np.ndarray:
        """files (indices of regular files in rec) less the extra names of files already
        counted; the files with more than one link counted as multilinked_files, their extra
        names as hardlinks."""
        linked = files[rec["nlink"][files] > 1]
        if not len(linked):
            return files
        first = np.ones(len(linked), bool)
        for i, ino in enumerate(rec["ino"][linked].tolist()):
            if ino in self.linked:
                first[i] = False
            else:
                self.linked.add(ino)
        self._count("multilinked_files", proj[linked[first]])
        self._count("hardlinks", proj[linked[~first]])
        return np.setdiff1d(files, linked[~first], assume_unique=True)

    def _add_files(self, rec: np.ndarray, proj: np.ndarray, files: np.ndarray) -> None:
        """Counts and histograms of the regular files at indices files of rec."""
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
        self._add_project_sizes(fproj * LOG2_BINS + size_bins, size)

    def _add_project_sizes(self, keys: np.ndarray, size: np.ndarray) -> None:
        """The per-project file_size histogram: files and bytes per key, project * LOG2_BINS +
        bin. A bincount over project x bin when that is small, else over the keys found."""
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
