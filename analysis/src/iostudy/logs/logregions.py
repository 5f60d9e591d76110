"""A Darshan log's regions checked before libdarshan-util reads any of them: the header's map of
regions, each region read inflated (counted and discarded, or kept) within the :class:`Limits`,
the name table and the records of modules stored at their current version taken from the
bytes inflated anyway, and the variable-size records (LUSTRE, HEATMAP) walked by the counts
they declare. :func:`iostudy.logs.darshanlog_worker.open_log` runs the check on a log it
opened; a module of its own because it is the file's bytes and zlib's format only (inflated by
ISA-L, python-isal's ``isal_zlib``: the same streams, their Adler-32 checked, at about four
times zlib's speed, inflation being most of a small log's check), never libdarshan-util: a
5 MB log can inflate to gigabytes of records (a decompression bomb), which libdarshan-util
would materialize whole, a region cut off by the end of the file or whose
compressed data is damaged would make it abort, and a record whose count is damaged would make
it drop records silently, read past the record or crash, as its heap happens to be.

A damaged region is refused whole (the log quarantined), as libdarshan-util's own reading of it
cannot be trusted: never part of a module's records stored as if they were all.
"""

from __future__ import annotations

import functools
import os
import re
import struct
import sys
from typing import NamedTuple

from isal import isal_zlib

from iostudy.core.deferred import deferred
from iostudy.logs import dxt, jobmodules
from iostudy.logs.modules import (
    AUTOPERF,
    CURRENT_VERSIONS,
    GENERIC_MODULES,
    READ_MODULES,
    TRACE_MODULES,
)
from iostudy.logs.recordlayout import record_layout, record_size

np = deferred("numpy")

# The modules read (iostudy.logs.modules.READ_MODULES). Records stored at CURRENT_VERSIONS are
# laid out as record_layout says: the bytes check_inflation inflates are then the records, and
# libdarshan-util need not read them again. It up-converts the older versions it reads, whose
# records are checked whole too, at the size it reads them at (record_size: POSIX 1 to 3, MPI-IO
# 1 and 2, STDIO 1, H5F 1 and 2, H5D 1, PNETCDF_FILE 1 and 2, BG/Q 1); a version it does not
# read it refuses itself. LUSTRE and HEATMAP regions at a version of VARIABLE are walked, and
# so are AutoPerf's (iostudy.logs.jobmodules.walk) and the DXT traces' as they inflate
# (iostudy.logs.dxt).


class Variable(NamedTuple):
    """The layout of a variable-size module's records of one version (the log-format
    reference, sections 6.4 and 6.5): their fixed part (a struct format without the byte
    order, the base record's id and rank first), then, for each count the fixed part holds,
    (its index there, what it counts, bytes per item, its least value) in the order the
    items follow."""

    fixed: str
    counts: tuple


# A LUSTRE component: 7 counters (its stripe size and stripe count first), a 16-byte pool name.
LUSTRE_COMPONENT = 72
# libdarshan-util reads such a record by the counts it declares (as C ints), so a damaged count
# made it drop the module's later records without a word, read past the record into what its
# heap held, or crash, run to run: every region is walked (walk_records) before it reads one.
VARIABLE = {
    # id, rank, num_comps, num_stripes; 72-byte components, then an OST id per stripe. The
    # runtime writes no record without a component.
    ("LUSTRE", 2): Variable("Qqqq", ((2, "components", LUSTRE_COMPONENT, 1), (3, "stripes", 8, 0))),
    # id, rank, OSTs, MDTs, stripe offset, stripe size, stripe width; an OST id per stripe
    ("LUSTRE", 1): Variable("Qq5q", ((6, "stripes", 8, 0),)),
    # id, rank, bin width, nbins, two pointers (not data); a write bin, then a read bin, per bin
    ("HEATMAP", 1): Variable("Qqdq16x", ((3, "bins", 16, 0),)),
}
# The smallest record of the variable-size modules (base record and fixed part).
MIN_RECORD = {
    mod: min(struct.calcsize(v.fixed) for (m, _), v in VARIABLE.items() if m == mod)
    for mod, _ in VARIABLE
} | dict.fromkeys(dxt.VERSIONS, dxt.HEAD_SIZE)
# A region that inflates to less than this is harmless whatever its ratio: one compressed
# record of zeros inflates 30 to 40 times (the real test logs' regions: up to 39x).
RATIO_FLOOR = 1 << 20
_CHUNK = 1 << 20  # bytes read, and inflated, at a time by the bound check
_PIECE = 1 << 14  # bytes handed to zlib at a time
SMALL_LOG = 1 << 20  # a log up to this size is checked from one read of the whole file
# A region kept (parsed) is inflated once, kept as it comes, when its compressed size is up to
# this: whatever it inflates to within the ratio bound is a few MiB. A larger one is measured
# first (inflated, counted, dropped), so that a bomb costs a few chunks of memory, not its bound.
KEEP_UNMEASURED = 1 << 16


class Limits(NamedTuple):
    """What one log may inflate to before libdarshan-util reads it. The real test logs inflate
    2 to 21 times as a whole and at most 39 times per region; zlib can reach about 1000."""

    max_bytes: int = 256 << 20  # all the regions read, together
    max_records: int = 1 << 20  # per module
    max_ratio: float = 100.0  # per region past RATIO_FLOOR: inflated / compressed (declared)
    dxt_segments: int = dxt.DEFAULT_MAX_SEGMENTS  # DXT segments kept, not a refusal (logs.dxt)


DEFAULT_LIMITS = Limits()


class LogRefused(Exception):
    """The log was not handed to libdarshan-util (not a regular file, over the Limits); the
    message is the reason."""


def decoded_names(joined: bytes, raw) -> list[str]:
    """The names ``raw`` (``joined``: them joined by NULs) as str: any bytes are a valid Linux
    path, so a name that is not UTF-8 keeps its bytes as \\xNN escapes instead of failing the
    whole log."""
    try:  # a name holds no NUL: one decode for the whole table
        return joined.decode().split("\0") if raw else []
    except UnicodeDecodeError:
        return [name.decode("utf-8", "backslashreplace") for name in raw]


# An entry of the name region of formats 3.10 on: a u64 record id, then the name up to its NUL
# (the log-format reference, section 4). Matches follow each other from the region's start:
# one fails only where no NUL is left, so what they leave is a tail.
_NAME_ENTRY = re.compile(rb"(.{8})([^\0]*)\0", re.DOTALL)


def parse_names(raw: bytes, order: str) -> dict:
    """{record id: name} of an inflated name region of format 3.10 on, in byte order ``order``
    ("<" or ">"), as libdarshan-util builds it: the first entry of an id wins, unless its name is
    empty and a later one's is not. LogRefused when the region does not end with a whole entry
    (libdarshan-util aborts on that)."""
    entries = _NAME_ENTRY.findall(raw)
    rids, raw_names = zip(*entries, strict=True) if entries else ((), ())
    joined = b"\0".join(raw_names)
    tail = len(raw) - (8 * len(rids) + len(joined) + bool(rids))
    if tail:
        raise LogRefused(
            f"name region: {tail} bytes after its last whole entry (a record id and a "
            "NUL-terminated name)"
        )
    names = decoded_names(joined, raw_names)
    ids = np.frombuffer(b"".join(rids), order + "u8").tolist()
    if "" not in names:
        return dict(zip(reversed(ids), reversed(names), strict=True))  # the first one wins
    table = {}
    for rid, name in zip(ids, names, strict=True):
        if not table.get(rid):
            table[rid] = name
    return table


class _Region(NamedTuple):
    name: str  # "job", "name" or the module's
    offset: int
    length: int  # compressed, as the header declares it
    version: int = 0  # a module's record version


class _Header(NamedTuple):
    compression: int  # 0 zlib, 2 none (1, bzip2, is refused by the wheel's libdarshan-util)
    order: str  # "<" or ">"
    version: bytes
    regions: list  # [_Region] of the job and name regions and of the modules read, not empty


def _header(head: bytes) -> _Header | None:
    """The header of the log whose first bytes are head, or None when it is not one
    libdarshan-util reads (then it says why itself)."""
    version = head[:8].split(b"\0")[0]
    if version not in (b"3.00", b"3.10", b"3.20", b"3.21", b"3.41"):
        return None
    legacy = version != b"3.41"
    names_at, mods_at, slots = (24, 40, 16) if legacy else (32, 48, 64)
    if len(head) < mods_at + 20 * slots or head[16] not in (0, 2):
        return None
    magic = int.from_bytes(head[8:16], "little")
    order = "<" if magic == 6567223 else ">" if magic == 0x3735640000000000 else None
    if order is None:
        return None
    names = _Region("name", *struct.unpack_from(order + "QQ", head, names_at))
    # the job region: from the header's end (the module map, then a version per slot) to the
    # name region (the log-format reference, section 2.4)
    job_at = mods_at + 20 * slots
    regions = [_Region("job", job_at, max(0, names.offset - job_at)), names]
    maps = struct.unpack_from(f"{order}{2 * slots}Q", head, mods_at)  # (offset, length) per slot
    versions = struct.unpack_from(f"{order}{slots}I", head, mods_at + 16 * slots)
    for slot in [slot for slot, length in enumerate(maps[1::2]) if length]:
        if name := READ_MODULES.get(_module_id(slot, version)) or TRACE_MODULES.get(
            _module_id(slot, version)
        ):
            regions.append(_Region(name, maps[2 * slot], maps[2 * slot + 1], versions[slot]))
    return _Header(head[16], order, version, [r for r in regions if r.length])


def _module_id(slot, version: bytes) -> int:
    """The 3.41 id of module slot ``slot`` of a log of format ``version``: the reader inserts
    H5D at 4 below 3.20 and PNETCDF_VAR at 6 below 3.41 (the reference, section 2.1)."""
    if version < b"3.20" and slot >= 4:
        slot += 1
    if version < b"3.41" and slot >= 6:
        slot += 1
    return slot


def check_inflation(fd, limits: Limits) -> tuple[dict | None, dict, list | None, dict, object]:
    """Raise LogRefused if the regions read of the log at ``fd`` inflate past ``limits``, or
    are damaged: cut off by the end of the file, compressed data that zlib refuses (its
    Adler-32 check included: libdarshan-util stops inflating once it has the bytes it wants,
    so a flipped bit would otherwise pass as other counter values), or records that do not
    fill their region whole (:func:`walk_records`, :func:`native_records`, AutoPerf's walk).
    Returns what :class:`CheckedLog` holds beside its path: the name table, the records, the
    HEATMAP records and the AutoPerf records taken from the inflated bytes, and the DXT
    segments kept (an :class:`iostudy.logs.dxt.Trace`, None without DXT; nothing for a
    header libdarshan-util refuses, and says why itself). Memory
    is a few chunks plus the bytes kept, within the limits whatever the log."""
    file_size, total, kept, walks = os.fstat(fd).st_size, 0, {}, []
    # a small log (nearly all) is read at once; a large one in pieces, region by region
    whole = os.pread(fd, file_size, 0) if file_size <= SMALL_LOG else None
    header = _header(whole[:1328] if whole is not None else os.pread(fd, 1328, 0))
    if header is None:
        return None, {}, None, {}, None
    for region in header.regions:
        if region.offset + region.length > file_size:
            raise LogRefused(
                f"truncated: the header puts the {region.name} region at bytes {region.offset} "
                f"to {region.offset + region.length}, the file has {file_size}"
            )
        bounds = _bounds(region, limits, limits.max_bytes - total)
        stop = min(bounds)
        keep = kept.setdefault(region.name, []) if _parsed(region, header) else None
        if region.version in dxt.VERSIONS.get(region.name, ()):  # walked as it inflates
            keep = dxt.Walk(region.name, region.version, header.order)
            walks.append((region, keep))
        if header.compression == 0:
            size = _inflated_region(fd, whole, region, stop, keep)
        else:  # stored as is: what the file holds
            size = region.length
            if keep is not None and size <= stop:
                keep.append(os.pread(fd, size, region.offset))
        if size > stop:
            raise LogRefused(_bound_reason(region, limits, bounds, stop))
        if isinstance(keep, dxt.Walk) and (problem := keep.finish()):
            raise LogRefused(problem)
        total += size
    kept = {name: b"".join(pieces) for name, pieces in kept.items()}
    names = None if header.version == b"3.00" else parse_names(kept.pop("name", b""), header.order)
    heatmaps = _walked(kept, header)
    job_records = {
        mod: _autoperf(mod, kept.pop(mod), header.order) for mod in AUTOPERF if mod in kept
    }
    versions = {region.name: region.version for region in header.regions}
    records = {
        mod: stored
        for mod, raw in kept.items()
        if (stored := native_records(mod, raw, header.order, versions[mod])) is not None
    }
    return names, records, heatmaps, job_records, _traces(fd, whole, header, walks, names, limits)


def _traces(fd, whole, header: _Header, walks: list, names, limits: Limits):
    """The DXT segments kept (iostudy.logs.dxt.Trace; None: no DXT region walked), read by a
    second inflation of the walked regions (the first found how many there are) that the walk
    did not keep whole."""
    if not walks:
        return None
    plan = dxt.plan([walk for _, walk in walks], names, limits.dxt_segments)
    for (region, walk), extract in zip(walks, plan.extracts, strict=True):
        if extract.done:
            continue
        if header.compression == 0:
            _inflated_region(fd, whole, region, walk.size, extract)
        else:
            extract.append(os.pread(fd, region.length, region.offset))
    return plan.trace()


def _autoperf(mod: str, raw: bytes, order: str) -> list[dict]:
    """An AutoPerf module's records, walked from its inflated region; LogRefused naming why
    they are not whole."""
    try:
        return jobmodules.walk(mod, raw, order)
    except ValueError as exc:
        raise LogRefused(str(exc)) from None


def _walked(kept: dict, header: _Header) -> list | None:
    """Takes the variable-size modules' regions out of ``kept`` and walks them: the HEATMAP
    records (None when its region is not walked)."""
    versions = {region.name: region.version for region in header.regions}
    heatmaps = None
    for mod in [mod for mod in kept if (mod, versions[mod]) in VARIABLE]:
        raw = kept.pop(mod)
        starts = walk_records(mod, versions[mod], raw, header.order)
        if mod == "HEATMAP":
            heatmaps = heatmap_records(raw, starts, header.order)
    return heatmaps


def _inflated_region(fd, whole: bytes | None, region: _Region, stop: int, keep) -> int:
    """:func:`_inflated` of a region of the log at ``fd`` (``whole``: its bytes, when read at
    once). A region to keep that is larger than KEEP_UNMEASURED is measured first: a bomb is
    refused before any of it is kept."""

    def pieces():
        if whole is None:
            return _pieces(fd, region)
        return [whole[region.offset : region.offset + region.length]]

    if isinstance(keep, list) and region.length > KEEP_UNMEASURED:  # a walk keeps no bytes
        if (size := _inflated(pieces(), region, stop)) > stop:
            return size
    return _inflated(pieces(), region, stop, keep)


def _parsed(region: _Region, header: _Header) -> bool:
    """Whether check_inflation keeps the region's bytes: the name region (but of format
    3.00, whose entries differ), the record modules stored at a version libdarshan-util reads
    (record_size: the current one, to be taken, or an older one, to be checked whole) and the
    variable-size ones at a version walk_records knows."""
    if region.name == "name":
        return header.version != b"3.00"
    if region.name in AUTOPERF:  # never read by libdarshan-util: a version not walked is refused
        if region.version != CURRENT_VERSIONS[region.name]:
            raise LogRefused(
                f"{region.name} region: module version {region.version}, not "
                f"{CURRENT_VERSIONS[region.name]}, the one iostudy reads"
            )
        return True
    if region.name in GENERIC_MODULES:
        return record_size(region.name, region.version) is not None
    return (region.name, region.version) in VARIABLE


def native_records(mod: str, raw: bytes, order: str, version: int | None = None) -> bytes | None:
    """A module's inflated region of a log in byte order ``order``, stored at its current
    version, as _stored_records has it: the records side by side in this machine's byte
    order; None for an older ``version`` (libdarshan-util up-converts its records). LogRefused
    when it does not hold a whole number of records of its version's size (an older one's as
    libdarshan-util 3.5.0 reads it, which drops a short last record without a word)."""
    older = version not in (None, CURRENT_VERSIONS[mod])
    size = record_size(mod, version if older else CURRENT_VERSIONS[mod])
    if len(raw) % size:
        which = f" (module version {version})" if older else ""
        raise LogRefused(
            f"{mod} region: {len(raw)} bytes, not a whole number of {size}-byte records{which}"
        )
    if older:
        return None
    lay = record_layout(mod)
    if order == ("<" if sys.byteorder == "little" else ">"):
        return raw
    return np.frombuffer(raw, lay.dtype.newbyteorder(order)).astype(lay.dtype).tobytes()


def walk_records(mod: str, version: int, raw: bytes, order: str) -> list[int]:
    """Where each record of a variable-size module's inflated region (of a log in byte order
    ``order``) starts, read by the counts each declares as libdarshan-util reads it. LogRefused
    when they do not fill the region whole: a record whose counts are below their least, or
    that ends past the region (or whose fixed part does), or a LUSTRE component declaring more
    stripes than its record holds; the reason names the record, its counts, and how many
    records before it are whole."""
    layout = VARIABLE[(mod, version)]
    fixed = struct.Struct(order + layout.fixed)
    stripes = _stripes if (mod, version) == ("LUSTRE", 2) else None
    starts, at = [], 0
    while at < len(raw):
        if len(raw) - at < fixed.size:
            short = f"{len(raw) - at} bytes: not its fixed part of {fixed.size}"
            raise LogRefused(_unread(mod, raw, starts, at, short))
        head = fixed.unpack_from(raw, at)
        end, low = at + fixed.size, False
        for i, _, per, least in layout.counts:
            end += head[i] * per
            low |= head[i] < least
        if low or end > len(raw):
            declared = " and ".join(f"{head[i]} {what}" for i, what, _, _ in layout.counts)
            past = "" if low else ", past the region's end"
            raise LogRefused(_unread(mod, raw, starts, at, f"declares {declared}{past}"))
        if stripes and (problem := stripes(raw, at + fixed.size, head, order)):
            raise LogRefused(_unread(mod, raw, starts, at, problem))
        starts.append(at)
        at = end
    return starts


def _unread(mod: str, raw: bytes, starts: list, at: int, problem: str) -> str:
    """Why a variable-size region is refused: the record at byte ``at`` (``starts``: those
    before it, whole) and its ``problem``."""
    return (
        f"{mod} region: record {len(starts) + 1} (byte {at} of {len(raw)}) {problem}: "
        f"{len(starts)} records read whole, the last {len(raw) - at} bytes not"
    )


def _stripes(raw: bytes, first: int, head: tuple, order: str) -> str | None:
    """What is wrong with the stripes of a LUSTRE record (version 2; ``head``: its fixed part,
    its components from byte ``first``): libdarshan-util keeps its components up to the first
    of stripe size -1 and takes each one's OST ids (as many as its stripe count) from the
    record's, one after another."""
    _, _, comps, stripes = head
    total = 0
    for k in range(comps):
        size, count = struct.unpack_from(order + "qq", raw, first + LUSTRE_COMPONENT * k)
        if size == -1:
            break
        if count < 0:
            return f"component {k + 1} declares {count} stripes"
        total += count
    return f"declares {stripes} stripes, its components {total}" if total > stripes else None


def heatmap_records(raw: bytes, starts: list[int], order: str) -> list[dict]:
    """The HEATMAP records (version 1) of an inflated region, at ``starts`` (walk_records), as
    :func:`iostudy.logs.darshanlog_worker.read` gives libdarshan-util's: [{id, rank, nbins,
    bin_width, read [bytes per bin], write [...]}]."""
    fixed = struct.Struct(order + VARIABLE[("HEATMAP", 1)].fixed)
    records = []
    for at in starts:
        rid, rank, width, nbins = fixed.unpack_from(raw, at)
        bins = struct.unpack_from(f"{order}{2 * nbins}q", raw, at + fixed.size)
        write, read = list(bins[:nbins]), list(bins[nbins:])
        records.append(
            {
                "id": rid,
                "rank": rank,
                "nbins": nbins,
                "bin_width": width,
                "read": read,
                "write": write,
            }
        )
    return records


def _bounds(region: _Region, limits: Limits, left: int) -> tuple[int, int, int | None]:
    """The bytes the region may inflate to by each limit: the log's total left, the ratio to
    its compressed length, its module's record count (the job and name regions: the total)."""
    ratio = max(RATIO_FLOOR, int(limits.max_ratio * region.length))
    if region.name in ("job", "name"):
        return left, ratio, left
    return left, ratio, limits.max_records * _record_size(region.name)


@functools.cache
def _record_size(module: str) -> int:
    if module in AUTOPERF:
        return jobmodules.rank_record_size(module)
    return MIN_RECORD.get(module) or record_layout(module).size


def _bound_reason(region: _Region, limits: Limits, bounds: tuple, stop: int) -> str:
    """Why the region is refused: the first limit of bounds that is stop, in words."""
    what = f"decompression bound: {region.name} region inflates past {stop} bytes"
    left, ratio, _ = bounds
    if stop == left:
        return f"{what}, the rest of the log's limit of {limits.max_bytes} bytes"
    if stop == ratio:
        return (
            f"{what}, more than {limits.max_ratio:g}x the {region.length} compressed bytes "
            "the header declares"
        )
    size = _record_size(region.name)
    return f"{what}, more than {limits.max_records} records of {size} bytes"


def _inflated(pieces, region: _Region, stop: int, keep: list | None = None) -> int:
    """What the region's back-to-back zlib streams (its bytes: pieces) inflate to, counted up
    to past ``stop`` (the bytes appended to ``keep`` when it is a list); LogRefused when they
    are not whole, valid zlib streams."""
    total, inflater, inside = 0, isal_zlib.decompressobj(), False
    for data in pieces:
        while data:
            inside = True
            try:
                out = inflater.decompress(data, _CHUNK)
            except isal_zlib.error as exc:
                raise LogRefused(f"{region.name} region: damaged compressed data ({exc})") from None
            total += len(out)
            if keep is not None:
                keep.append(out)
            if total > stop:
                return total
            if inflater.eof:  # the next stream, if any (one per MPI rank)
                data, inflater, inside = inflater.unused_data, isal_zlib.decompressobj(), False
            else:
                data = inflater.unconsumed_tail
    if inside:
        raise LogRefused(f"{region.name} region: compressed data ends before its stream does")
    return total


def _pieces(fd, region: _Region):
    """The region's bytes in pieces of _PIECE: zlib copies the input left after a stream ends,
    and a region can hold thousands of streams (one per rank)."""
    pos, end = region.offset, region.offset + region.length
    while pos < end and (block := os.pread(fd, min(_CHUNK, end - pos), pos)):
        pos += len(block)
        view = memoryview(block)
        for at in range(0, len(block), _PIECE):
            yield view[at : at + _PIECE]
