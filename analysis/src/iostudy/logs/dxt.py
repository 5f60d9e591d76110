"""DXT traces (modules DXT_POSIX and DXT_MPIIO): every read and write a process made on a file,
each a segment (offset, length, start and end time), taken from the log's bytes and kept within a
bound per log.

A DXT record (the log-format reference, section 6.6) is a base record (id, rank), a shared-record
flag, the host's name (64 bytes), a write count and a read count, then that many segments of 32
bytes (offset, length: int64; start, end: double, seconds since the job started), the writes
first. libdarshan-util 3.5.0 reads DXT_POSIX version 1 and DXT_MPIIO versions 1 and 2, all laid
out so. It sets every offset of a DXT_MPIIO version 1 record to -1, as that version recorded
none, and the runtime writes a DXT_MPIIO offset of -1 unless it was asked to compute each
access's byte offset (darshan-mpiio.c): such offsets are stored as null (:func:`by_offsets`).

libdarshan-util trusts the counts as it allocates and reads, so iostudy never hands it a DXT
region: :mod:`iostudy.logs.logregions` inflates each region of a version read here in pieces,
within the log's Limits, and feeds them to a :class:`Walk`, which keeps where each record
starts, its id, rank, host and counts (never the segments), and refuses the region whole when a
count is below 0, a record ends past the region (it declares more segments than the region
holds) or the region ends inside a record's fixed part, naming the record and how many before
it are whole. A region of another version (a later runtime's, with a thread id per segment) is
not walked; the jobs row says so (:func:`quirks`).

The bound: a log keeps at most ``Limits.dxt_segments`` segments of its named records (PyDarshan
keeps only records whose id has a name). When it has more, each record's writes and each record's
reads (a file on a rank, per operation) keep their first q segments, q the largest that keeps at
most the bound in all (:func:`quota`): every rank, file and operation keeps the start of its
trace, none crowds the others out; the jobs row's flags say how many were dropped. The kept
segments are then read by a second inflation of the region (:class:`Extract`): memory is the
records' counts and the kept segments, whatever the region inflates to.
"""

from __future__ import annotations

import struct
from array import array
from typing import NamedTuple

from iostudy.core.deferred import deferred
from iostudy.logs.plausibility import MAX_COUNT, MAX_SECONDS

np = deferred("numpy")

#: the versions walked of each DXT module (libdarshan-util 3.5.0's)
VERSIONS = {"DXT_POSIX": (1,), "DXT_MPIIO": (1, 2)}
#: (module, version) whose offsets were not recorded (libdarshan-util reads them as -1)
NO_OFFSETS = {("DXT_MPIIO", 1)}
#: the files table's token of the module a DXT module traces
TOKENS = {"DXT_POSIX": "posix", "DXT_MPIIO": "mpiio"}
#: segments kept per log by default (ingest --max-dxt-segments)
DEFAULT_MAX_SEGMENTS = 1_000_000
# id, rank, shared-record flag, host name, write count, read count
HEAD = "Qqq64sqq"
HEAD_SIZE = struct.calcsize("<" + HEAD)
SEGMENT = 32  # offset, length, start, end
# A region that inflates to at most this is kept as the walk reads it, not inflated again: most
# traces are small, and a second pass over their one zlib stream per rank costs more than they.
KEEP_WALKED = 1 << 20


def segment_dtype(order: str = "="):
    return np.dtype(
        [
            ("offset", order + "i8"),
            ("length", order + "i8"),
            ("start", order + "f8"),
            ("end", order + "f8"),
        ]
    )


class Walk:
    """A DXT region's records, from its inflated bytes as they come (:meth:`append`, the way
    logregions keeps a region's bytes), and, after :meth:`finish`, why it is refused (None:
    every record whole)."""

    def __init__(self, module: str, version: int, order: str):
        self.module, self.version = module, version
        self.head = struct.Struct(order + HEAD)
        self.order = order
        self.starts, self.ids, self.ranks = array("q"), array("Q"), array("q")
        self.writes, self.reads = array("q"), array("q")
        self.hosts: list[str] = []
        self.partial = bytearray()  # the fixed part of the record being read, so far
        self.skip = 0  # bytes of its segments still to come
        self.size = 0  # bytes inflated so far
        self.bad: tuple | None = None  # (byte, records before it, what is wrong)
        self.kept: list | None = []  # the bytes so far, while they are at most KEEP_WALKED

    def append(self, data) -> None:
        n, i = len(data), 0
        if self.kept is not None and self.size + n <= KEEP_WALKED:
            self.kept.append(bytes(data))
        else:
            self.kept = None
        view = memoryview(data)
        while i < n and self.bad is None:
            if self.skip:
                step = min(self.skip, n - i)
                self.skip -= step
                i += step
                continue
            take = view[i : i + HEAD_SIZE - len(self.partial)]
            self.partial += take
            i += len(take)
            if len(self.partial) == HEAD_SIZE:
                self._record(self.size + i - HEAD_SIZE)
        self.size += n

    def _record(self, at: int) -> None:
        rid, rank, _, host, writes, reads = self.head.unpack(self.partial)
        self.partial.clear()
        if writes < 0 or reads < 0:
            self.bad = (at, len(self.starts), f"declares {writes} writes and {reads} reads")
            return
        self.starts.append(at)
        self.ids.append(rid)
        self.ranks.append(rank)
        self.writes.append(writes)
        self.reads.append(reads)
        self.hosts.append(host.split(b"\0", 1)[0].decode("utf-8", "backslashreplace"))
        self.skip = (writes + reads) * SEGMENT

    def finish(self) -> str | None:
        """Why the region is refused, once all of it was appended: the record and its problem,
        how many records before it are whole; None when they fill it whole."""
        if self.bad is None and self.skip:
            k = len(self.starts) - 1
            declared = f"declares {self.writes[k]} writes and {self.reads[k]} reads"
            self.bad = (self.starts[k], k, f"{declared}, past the region's end")
        elif self.bad is None and self.partial:
            at = self.size - len(self.partial)
            short = f"{len(self.partial)} bytes: not its fixed part of {HEAD_SIZE}"
            self.bad = (at, len(self.starts), short)
        if self.bad is None:
            return None
        at, whole, problem = self.bad
        return (
            f"{self.module} region: record {whole + 1} (byte {at} of {self.size}) "
            f"{problem}: {whole} records read whole, the last {self.size - at} bytes "
            "not"
        )


def by_offsets(part: Part) -> list[tuple[Part, bool]]:
    """``part`` as its segments whose offset was recorded and its others, each a Part with
    whether it has offsets (no Part empty): none were in a module version that recorded none,
    nor DXT_MPIIO's -1."""
    known = (
        np.zeros(len(part.segments), bool)
        if not part.offsets
        else (
            part.segments["offset"] != -1
            if part.module == "DXT_MPIIO"
            else np.ones(len(part.segments), bool)
        )
    )
    if known.all() or not known.any():
        return [(part, part.offsets and bool(known.all()))]
    return [(_subset(part, known), True), (_subset(part, ~known), False)]


def pieces(part: Part, size: int) -> list[Part]:
    """``part`` in pieces of at most ``size`` segments, in order (a run may be cut in two);
    each piece's segments a view of the part's (a million segments are not copied again)."""
    n = len(part.segments)
    if n <= size:
        return [part]
    ends = np.cumsum(part.counts)
    starts = ends - part.counts
    out = []
    for at in range(0, n, size):
        stop = min(at + size, n)
        first, last = np.searchsorted(ends, at, "right"), np.searchsorted(starts, stop, "left")
        counts = np.minimum(ends[first:last], stop) - np.maximum(starts[first:last], at)
        runs = first + np.flatnonzero(counts)
        out.append(
            part._replace(
                ids=part.ids[runs],
                ranks=part.ranks[runs],
                hosts=[part.hosts[r] for r in runs.tolist()],
                writes=part.writes[runs],
                counts=counts[counts > 0],
                segments=part.segments[at:stop],
            )
        )
    return out


def _subset(part: Part, mask) -> Part:
    """The segments of ``part`` where ``mask`` is set, and their runs."""
    run = np.repeat(np.arange(len(part.counts)), part.counts)[mask]
    counts = np.bincount(run, minlength=len(part.counts))
    kept = counts > 0
    hosts = [h for h, k in zip(part.hosts, kept.tolist(), strict=True) if k]
    return part._replace(
        ids=part.ids[kept],
        ranks=part.ranks[kept],
        hosts=hosts,
        writes=part.writes[kept],
        counts=counts[kept],
        segments=part.segments[mask],
    )


def quota(counts: list[int], bound: int) -> int | None:
    """The most segments each run of ``counts`` (segments per record and operation) keeps so
    that at most ``bound`` are kept in all; None when all of them fit."""
    if sum(counts) <= bound:
        return None
    counts = np.sort(np.asarray(counts, np.int64))
    before = np.concatenate(([0], np.cumsum(counts)[:-1]))  # kept whole below each
    left = len(counts) - np.arange(len(counts))  # runs from each on, cut at q
    fits = (bound - before) // left
    return int(fits[np.argmax(fits < counts)])  # the first run q would cut


class Part(NamedTuple):
    """The kept segments of one DXT module of a log: runs of segments (a record's writes, or
    its reads), each with its record's id, rank and host, whether it is writes and how many
    segments it kept; the segments in run order (offset, length, start, end: this machine's
    byte order; ``offsets`` False: the module version recorded none)."""

    module: str
    offsets: bool
    ids: np.ndarray
    ranks: np.ndarray
    hosts: list
    writes: np.ndarray
    counts: np.ndarray
    segments: np.ndarray


class Trace(NamedTuple):
    """A log's DXT segments: the kept ones per module (:class:`Part`), how many its named
    records hold, the quota per run when they were more than the bound (else None) and the
    bound."""

    parts: list
    total: int
    quota: int | None
    bound: int

    @property
    def kept(self) -> int:
        return sum(len(p.segments) for p in self.parts)


class Extract:
    """The kept segments of a walked region, from its inflated bytes as they come again
    (:meth:`append`; ``done`` once it needs no more: none to keep, or the walk kept the
    region): a byte range per run, in order. Plain lists: a trace has a few records, most
    often, and numpy's cost per call would be most of its reading."""

    def __init__(self, walk: Walk, named: list[int], keep: int | None):
        self.walk, self.named = walk, named
        self.ranges, self.counts = [], []
        for i in named:  # a record's writes' run, then its reads' (they follow the writes)
            at, writes, reads = walk.starts[i] + HEAD_SIZE, walk.writes[i], walk.reads[i]
            kw, kr = (writes, reads) if keep is None else (min(writes, keep), min(reads, keep))
            self.ranges += [
                (at, at + SEGMENT * kw),
                (at + SEGMENT * writes, at + SEGMENT * (writes + kr)),
            ]
            self.counts += [kw, kr]
        self.pieces: list[bytes] = []
        self.next, self.size = 0, 0
        if walk.kept is not None and any(self.counts):
            self.append(b"".join(walk.kept))
        self.done = self.size > 0 or not any(self.counts)

    def append(self, data) -> None:
        lo, hi = self.size, self.size + len(data)
        view = memoryview(data)
        while self.next < len(self.ranges):
            a, b = self.ranges[self.next]
            if a >= hi:
                break
            if b > lo and b > a:
                self.pieces.append(bytes(view[max(a, lo) - lo : min(b, hi) - lo]))
            if b > hi:
                break
            self.next += 1
        self.size = hi

    def part(self) -> Part:
        walk = self.walk
        raw, self.pieces = b"".join(self.pieces), []
        segments = np.frombuffer(raw, segment_dtype(walk.order))  # read-only: never written
        if segments.dtype != segment_dtype():  # the other byte order
            segments = segments.astype(segment_dtype())
        runs = [
            (i, k % 2 == 0, n)
            for k, (i, n) in enumerate(zip(sorted(self.named * 2), self.counts, strict=True))
            if n
        ]
        return Part(
            walk.module,
            (walk.module, walk.version) not in NO_OFFSETS,
            np.array([walk.ids[i] for i, _, _ in runs], np.uint64),
            np.array([walk.ranks[i] for i, _, _ in runs], np.int64),
            [walk.hosts[i] for i, _, _ in runs],
            np.array([w for _, w, _ in runs], bool),
            np.array([n for _, _, n in runs], np.int64),
            segments,
        )


class Plan(NamedTuple):
    """How a log's DXT regions are read again: an Extract per region, the segments their
    named records hold, the quota per run (None: all kept) and the bound."""

    extracts: list
    total: int
    quota: int | None
    bound: int

    def trace(self) -> Trace:
        """The log's Trace, once every region's bytes went through its Extract."""
        return Trace([e.part() for e in self.extracts], self.total, self.quota, self.bound)


def plan(walks: list[Walk], names: dict | None, bound: int) -> Plan:
    """The extraction of each walked region: its named records (all of them when the name
    table is libdarshan-util's to read, format 3.00: DXT came later), each run cut at the
    log's quota."""
    named = [[i for i, rid in enumerate(w.ids) if names is None or rid in names] for w in walks]
    counts = [
        getattr(w, op)[i]
        for w, mine in zip(walks, named, strict=True)
        for i in mine
        for op in ("writes", "reads")
    ]
    keep = quota(counts, bound)
    extracts = [Extract(w, mine, keep) for w, mine in zip(walks, named, strict=True)]
    return Plan(extracts, sum(counts), keep, bound)


def problems(found: Trace, nprocs: int) -> list[str]:
    """The kept segments' values out of the store's bounds, the first of each part named:
    ranks in [-1, nprocs), lengths and offsets in [0, 2^62), times finite in [0, 2^32 s), each
    segment ending no earlier than it starts."""
    out = []
    for part, offsets in (sub for whole in found.parts for sub in by_offsets(whole)):
        seg = part.segments
        ok = (seg["length"] >= 0) & (seg["length"] < MAX_COUNT)
        ok &= (seg["start"] >= 0) & (seg["end"] < MAX_SECONDS) & (seg["end"] >= seg["start"])
        if offsets:
            ok &= (seg["offset"] >= 0) & (seg["offset"] < MAX_COUNT)
        run_ok = (part.ranks >= -1) & (part.ranks < max(nprocs, 1))
        ok &= np.repeat(run_ok, part.counts)
        if not ok.all():
            out.append(_first_bad(part, int(np.argmin(ok))))
    return out


def _first_bad(part: Part, k: int) -> str:
    """Segment ``k`` of ``part``, named with its record and values."""
    run = int(np.searchsorted(np.cumsum(part.counts), k, side="right"))
    seg = part.segments[k]
    op = "write" if part.writes[run] else "read"
    nth = k - int(part.counts[:run].sum())
    values = ", ".join(f"{f} {seg[f].item()!r}" for f in seg.dtype.names)
    return (
        f"{part.module} record {part.ids[run]} (rank {part.ranks[run]}): {op} segment "
        f"{nth} ({values}) not within [0, 2^62) bytes, [0, 2^32) s, end >= start, rank in "
        "[-1, nprocs)"
    )


def quirks(found: Trace | None, modules: dict) -> list[str]:
    """The jobs row's flags of a log's trace: the segments dropped over the bound, and the DXT
    modules of a version not read (``modules``: the log's, {name: {ver, ...}})."""
    out = []
    for name, versions in VERSIONS.items():
        if name in modules and modules[name]["ver"] not in versions:
            read = ", ".join(map(str, versions))
            out.append(
                f"{name} version {modules[name]['ver']}: not read (libdarshan-util "
                f"3.5.0 reads version {read})"
            )
    if found is not None and found.quota is not None:
        dropped = found.total - found.kept
        out.append(
            f"DXT: {dropped:,} of {found.total:,} segments dropped over the bound of "
            f"{found.bound:,} a log (ingest --max-dxt-segments): each file's first "
            f"{found.quota:,} writes and first {found.quota:,} reads on each rank "
            "kept"
        )
    return out


def weight(found: Trace | None) -> float:
    """A log's share of a pool's answer (iostudy.logs.logpool): its kept segments over the
    default bound, so that an answer holds about a bound's worth of segments at most."""
    return 0.0 if found is None else found.kept / DEFAULT_MAX_SEGMENTS
