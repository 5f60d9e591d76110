"""Read one Darshan log with PyDarshan's low-level backend (libdarshan-util through cffi).

:func:`dump` is the one place that turns a log into the plain data documented in
:mod:`iostudy.logs.darshanlog`. It runs only in a process of its own, because libdarshan-util may
abort or segfault on a damaged log: either a child started per log by
:func:`iostudy.logs.darshanlog.read_log` (``python -m iostudy.logs.darshanlog_worker LOG`` prints
the JSON), or a long-lived worker of :mod:`iostudy.logs.logpool` that reads many logs one at a time.
Everything written on stderr is treated by the caller as a complaint about the log, so callers run
it with warnings off.

Records come from ``log_get_generic_record`` one by one, which is what PyDarshan's
``DarshanReport`` does underneath, without its per-record pandas work: ingest reads thousands of
logs a second this way. Like ``DarshanReport``, only records whose id has a name are kept; the
raw counts include the others.

Before libdarshan-util sees a log, :func:`open_log` opens it without blocking and without
following a symbolic link, refuses anything but a regular file (a FIFO or a device would hang or
never end), and inflates the regions that will be read, counting and discarding the bytes, within
the :class:`Limits`: a 5 MB log can inflate to gigabytes of records (a decompression bomb), which
libdarshan-util would materialize whole. The log is then read through ``/proc/self/fd/N``: the
very file checked, and a name whose unlink by libdarshan-util's cleanup after a failed read (it
can use a path from freed memory) cannot remove the log.
"""

import contextlib
import errno
import functools
import json
import os
import re
import struct
import sys
import zlib
from typing import NamedTuple

import numpy as np
from darshan.backend import cffi_backend as backend

from iostudy.core import safeio
from iostudy.logs.modules import CURRENT_VERSIONS, READ_MODULES, RECORD_MODULES

# The modules read (iostudy.logs.modules): the record modules, LUSTRE and HEATMAP. Other
# modules (DXT traces...) are never inflated. Records stored at CURRENT_VERSIONS are laid out as
# record_layout says: the bytes check_inflation inflates are then the records, and
# libdarshan-util need not read them again (it up-converts older versions).
# The smallest record of the variable-size modules (base record and fixed part).
MIN_RECORD = {"LUSTRE": 32, "HEATMAP": 48}
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
    # modules the read leaves alone (ingest's: HEATMAP): not inflated, only checked to lie
    # inside the file
    unread: tuple = ()


DEFAULT_LIMITS = Limits()


class LogRefused(Exception):
    """The log was not handed to libdarshan-util (not a regular file, over the Limits); the
    message is the reason."""


class _Layout(NamedTuple):
    """A generic-record module's record as libdarshan-util hands it over: the counter names,
    the record's size and its numpy dtype."""

    cnames: list
    fnames: list
    size: int
    dtype: np.dtype


@functools.cache
def record_layout(mod) -> _Layout:
    """The layout of a module's records (base record, int64 counters, double fcounters), checked
    against cffi's struct size; once per process."""
    cnames, fnames = backend.counter_names(mod), backend.fcounter_names(mod)
    struct = backend._structdefs[mod].rstrip(" *")
    size = backend.ffi.sizeof(struct)
    if size != 16 + 8 * (len(cnames) + len(fnames)):
        raise RuntimeError(f"{mod}: unexpected record layout ({struct}: {size} bytes)")
    dtype = np.dtype(
        [
            ("id", np.uint64),
            ("rank", np.int64),
            ("counters", np.int64, len(cnames)),
            ("fcounters", np.float64, len(fnames)),
        ]
    )
    return _Layout(list(cnames), list(fnames), size, dtype)


class _Buffers:
    """The C objects every log of a process is read with, made once: a growing buffer that a
    module's records are read into side by side (its content is copied out before the next
    module), a record pointer per slot of it, and the name table's out-parameters."""

    def __init__(self, capacity=1 << 16):
        self.buf = backend.ffi.new("char[]", capacity)
        self.capacity = capacity
        self.cells = {}  # record size -> [void ** at each record slot of buf]
        self.table = backend.ffi.new("struct darshan_name_record **")
        self.count = backend.ffi.new("int *")

    def slots(self, size):
        """A pointer to each slot of ``size`` bytes of the buffer, in order."""
        cells = self.cells.get(size)
        if cells is None:
            new, buf = backend.ffi.new, self.buf
            cells = [new("void **", buf + off) for off in range(0, self.capacity - size + 1, size)]
            self.cells[size] = cells
        return cells

    def grow(self, used):
        """Twice the room, keeping the first ``used`` bytes."""
        grown = backend.ffi.new("char[]", 2 * self.capacity)
        backend.ffi.memmove(grown, self.buf, used)
        self.buf, self.capacity, self.cells = grown, 2 * self.capacity, {}


@functools.cache
def _buffers() -> _Buffers:
    if backend.ffi.sizeof("struct darshan_name_record") != 16:
        raise RuntimeError("unexpected name record layout")
    return _Buffers()


class RecordArrays(NamedTuple):
    """The named records of one module, column-wise: ids (uint64), ranks (int64), counters
    (records x counters, int64), fcounters (records x fcounters, float64), and the names of the
    counter columns."""

    ids: np.ndarray
    ranks: np.ndarray
    counters: np.ndarray
    fcounters: np.ndarray
    cnames: list
    fnames: list

    def as_dicts(self) -> list[dict]:
        """[{id, rank, counters {name: int}, fcounters {name: float}}] (exact Python numbers)."""
        return [
            {
                "id": rid,
                "rank": rank,
                "counters": dict(zip(self.cnames, c, strict=True)),
                "fcounters": dict(zip(self.fnames, f, strict=True)),
            }
            for rid, rank, c, f in zip(
                self.ids.tolist(),
                self.ranks.tolist(),
                self.counters.tolist(),
                self.fcounters.tolist(),
                strict=True,
            )
        ]


def _stored_records(handle, idx, size) -> bytes:
    """Every record of one module, named or not, side by side as libdarshan-util hands them
    over.

    libdarshan-util's darshan_log_get_record fills the record buffer it is given (byte-swapped
    and up-converted to the current version), so the records are read into one buffer, a slot
    each: PyDarshan's log_get_generic_record builds numpy arrays and a dict per record, ten
    times slower on logs of thousands of records."""
    bufs, get = _buffers(), backend.libdutil.darshan_log_get_record
    count = 0
    while True:
        for slot in bufs.slots(size)[count:]:
            if get(handle, idx, slot) <= 0:
                return backend.ffi.buffer(bufs.buf, count * size)[:]
            count += 1
        bufs.grow(count * size)


def _record_arrays(mod, stored: bytes, names) -> RecordArrays:
    """The records of ``stored`` (a module's, of :func:`_stored_records`) whose id is in
    ``names``, as RecordArrays."""
    lay = record_layout(mod)
    records = np.frombuffer(stored, dtype=lay.dtype)
    named = np.fromiter(map(names.__contains__, records["id"].tolist()), bool, len(records))
    kept = records[named]
    return RecordArrays(
        kept["id"].copy(),
        kept["rank"].copy(),
        kept["counters"].reshape(len(kept), len(lay.cnames)).copy(),
        kept["fcounters"].reshape(len(kept), len(lay.fnames)).copy(),
        lay.cnames,
        lay.fnames,
    )


def _names(handle) -> dict:
    """{record id: name} of the log's name table, read by libdarshan-util: for the logs whose
    name region :func:`check_inflation` does not parse itself (format 3.00). Like PyDarshan's
    log_get_name_records, but a name that is not UTF-8 keeps its bytes as \\xNN escapes (see
    :func:`_decoded`)."""
    ffi, lib, bufs = backend.ffi, backend.libdutil, _buffers()
    bufs.count[0] = 0  # not set when libdarshan-util fails to read the table
    lib.darshan_log_get_name_records(handle, bufs.table, bufs.count)
    count = bufs.count[0]
    if not count:
        return {}
    entries = bufs.table[0]
    # struct darshan_name_record {u64 id; char *name}: the ids at once, the names one by one
    ids = np.frombuffer(ffi.buffer(entries, 16 * count), np.uint64)[::2].tolist()
    pointers, string, free = ffi.cast("char **", entries), ffi.string, lib.darshan_free
    raw = []
    for i in range(1, 2 * count, 2):
        name = pointers[i]
        raw.append(string(name))
        free(name)
    free(entries)
    return dict(zip(ids, _decoded(b"\0".join(raw), raw), strict=True))


def _decoded(joined: bytes, raw) -> list[str]:
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
    names = _decoded(joined, raw_names)
    ids = np.frombuffer(b"".join(rids), order + "u8").tolist()
    if "" not in names:
        return dict(zip(reversed(ids), reversed(names), strict=True))  # the first one wins
    table = {}
    for rid, name in zip(ids, names, strict=True):
        if not table.get(rid):
            table[rid] = name
    return table


@functools.cache
def _lustre_counters() -> tuple[list, int]:
    """The counter names of a Lustre layout component, and where its stripe count is."""
    cnames = backend.counter_names("LUSTRE_COMP")
    return cnames, cnames.index("LUSTRE_COMP_STRIPE_COUNT")


def _lustre(log, names):
    """Lustre layouts as [{id, rank, components [{counters {}, pool_name, ost_ids []}]}], named
    records only, components in the record's order. What PyDarshan's _log_get_lustre_record
    reads, without its numpy arrays and C counter-name lookups per component (like it, the
    record libdarshan-util allocates is not freed)."""
    ffi, get = backend.ffi, backend.libdutil.darshan_log_get_record
    cnames, stripes = _lustre_counters()
    handle, idx = log["handle"], log["modules"]["LUSTRE"]["idx"]
    layouts = []
    while True:
        buf = ffi.new("void **")
        if get(handle, idx, buf) < 1:
            return layouts
        rec = ffi.cast("struct darshan_lustre_record *", buf[0])
        osts, first, components = ffi.cast("int64_t *", rec.ost_ids), 0, []
        for i in range(rec.num_comps):
            comp = rec.comps[i]
            counters = ffi.unpack(comp.counters, len(comp.counters))
            count = counters[stripes]
            components.append(
                {
                    "counters": dict(zip(cnames, counters, strict=False)),
                    "pool_name": ffi.string(comp.pool_name).decode("utf-8"),
                    "ost_ids": ffi.unpack(osts + first, count),
                }
            )
            first += count
        if rec.base_rec.id in names:
            layouts.append(
                {"id": rec.base_rec.id, "rank": rec.base_rec.rank, "components": components}
            )


def _heatmap_records(log):
    """Every stored HEATMAP record, unmerged."""
    out = []
    while (rec := backend._log_get_heatmap_record(log)) is not None:
        out.append(
            {
                "id": int(rec["id"]),
                "rank": int(rec["rank"]),
                "nbins": int(rec["nbins"]),
                "bin_width": float(rec["bin_width_seconds"]),
                "read": [int(x) for x in rec["read_bins"]],
                "write": [int(x) for x in rec["write_bins"]],
            }
        )
    return out


def _heatmaps(path):
    """Heatmaps per API as PyDarshan's report combines them (it raises if their nbins/bin widths
    disagree); its Heatmap keeps the data in private attributes only."""
    import darshan  # the report layer (pandas and all) only where heatmaps are asked for

    report = darshan.DarshanReport(path, read_all=False)
    report.read_all_heatmap_records()
    return {
        str(api): {
            "nbins": int(hm._nbins),
            "bin_width": float(hm._bin_width_seconds),
            "ranks": sorted(int(r) for r in hm._ranks),
            "read": {int(r): [int(x) for x in v] for r, v in hm._data["read"].items()},
            "write": {int(r): [int(x) for x in v] for r, v in hm._data["write"].items()},
        }
        for api, hm in report.heatmaps.items()
    }


def warm_up():
    """Fill the per-process caches a read fills (record layouts, the record buffer and its
    slots): a process that forks readers does it once, and each reader inherits them."""
    for mod in RECORD_MODULES:
        _buffers().slots(record_layout(mod).size)
    _lustre_counters()


def dump(checked):
    """The content of a log (a :class:`CheckedLog`) as plain data (keys: see
    :mod:`iostudy.logs.darshanlog`)."""
    log = read(checked)
    log["records"] = {mod: arrays.as_dicts() for mod, arrays in log["records"].items()}
    return log


def read(checked, full=True, stored=False):
    """The content of a log (a :class:`CheckedLog`) as :func:`dump` gives it, except that
    ``records`` is {module: RecordArrays}. With ``full=False`` (what ingest stores) the mounts
    and heatmap keys are empty: the mount table and the HEATMAP module are not read. With
    ``stored=True`` ``records`` is {module: every record stored, named or not, as bytes in the
    layout of :func:`record_layout`}: ingest takes them apart a batch of logs at a time."""
    path = checked.path
    log = backend.log_open(path)
    handle = log["handle"]
    if not bool(handle):
        raise RuntimeError("Failed to open file.")
    try:
        job = backend.log_get_job(log)
        exe = backend.log_get_exe(log)
        mounts = [list(m) for m in backend.log_get_mounts(log)] if full else []
        modules = backend.log_get_modules(log)
        names = _names(handle) if checked.names is None else checked.names
        records, raw_counts = {}, {}
        for mod in RECORD_MODULES:
            if mod in modules:
                size = record_layout(mod).size
                records[mod] = checked.records.get(mod)
                if records[mod] is None:
                    records[mod] = _stored_records(handle, modules[mod]["idx"], size)
                raw_counts[mod] = len(records[mod]) // size
        lustre = _lustre(log, names) if "LUSTRE" in modules else []
        heatmap_records = []
        if full and "HEATMAP" in modules:
            heatmap_records = _heatmap_records(log)
            raw_counts["HEATMAP"] = len(heatmap_records)
    finally:
        backend.log_close(log)
    if not stored:
        records = {mod: _record_arrays(mod, data, names) for mod, data in records.items()}
    return {
        "job": job,
        "exe": exe,
        "mounts": mounts,
        "modules": {
            name: {"len": m["len"], "ver": m["ver"], "partial_flag": bool(m["partial_flag"])}
            for name, m in modules.items()
        },
        "name_records": names,
        "records": records,
        "lustre": lustre,
        "heatmaps": _heatmaps(path) if full and "HEATMAP" in modules else {},
        "raw_record_counts": raw_counts,
        "heatmap_records": heatmap_records,
    }


class CheckedLog(NamedTuple):
    """A log :func:`open_log` checked: the name to read it by, and what the check took from the
    bytes it inflated anyway: the name table (None: libdarshan-util reads it) and {module:
    every record stored, in this machine's byte order} of the modules stored at their
    CURRENT_VERSIONS (the others: libdarshan-util reads them)."""

    path: str
    names: dict | None
    records: dict


@contextlib.contextmanager
def open_log(path, limits: Limits, follow=False):
    """The log at ``path``, checked (see the module docstring), as a :class:`CheckedLog` while
    the context lasts. Raises LogRefused. ``follow``: follow a symbolic link (a path a user
    named, not one found in a tree)."""
    with contextlib.ExitStack() as opened:
        try:
            fd = opened.enter_context(safeio.open_regular(path, follow))
        except OSError as exc:
            raise LogRefused(_refusal(exc)) from None
        yield CheckedLog(f"/proc/self/fd/{fd}", *check_inflation(fd, limits))


def _refusal(exc: OSError) -> str:
    """Why open_regular refused a log, in a quarantine's words."""
    if exc.errno == errno.ELOOP:
        return "a symbolic link, not a regular file"
    if exc.errno == errno.EINVAL:
        return exc.strerror
    return f"cannot open: {exc.strerror}"


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
        if name := READ_MODULES.get(_module_id(slot, version)):
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


def check_inflation(fd, limits: Limits) -> tuple[dict | None, dict]:
    """Raise LogRefused if the regions read of the log at ``fd`` inflate past ``limits``, or
    are damaged: cut off by the end of the file, or compressed data that zlib refuses (its
    Adler-32 check included: libdarshan-util stops inflating once it has the bytes it wants,
    so a flipped bit would otherwise pass as other counter values). Returns what
    :class:`CheckedLog` holds beside its path: the name table and the records taken from the
    inflated bytes (nothing for a header libdarshan-util refuses, and says why itself). Memory
    is a few chunks plus the bytes kept, within the limits whatever the log."""
    file_size, total, kept = os.fstat(fd).st_size, 0, {}
    # a small log (nearly all) is read at once; a large one in pieces, region by region
    whole = os.pread(fd, file_size, 0) if file_size <= SMALL_LOG else None
    header = _header(whole[:1328] if whole is not None else os.pread(fd, 1328, 0))
    if header is None:
        return None, {}
    for region in header.regions:
        if region.offset + region.length > file_size:
            raise LogRefused(
                f"truncated: the header puts the {region.name} region at bytes {region.offset} "
                f"to {region.offset + region.length}, the file has {file_size}"
            )
        if region.name in limits.unread:
            continue
        bounds = _bounds(region, limits, limits.max_bytes - total)
        stop = min(bounds)
        keep = kept.setdefault(region.name, []) if _parsed(region, header) else None
        if header.compression == 0:
            size = _inflated_region(fd, whole, region, stop, keep)
        else:  # stored as is: what the file holds
            size = region.length
            if keep is not None and size <= stop:
                keep.append(os.pread(fd, size, region.offset))
        if size > stop:
            raise LogRefused(_bound_reason(region, limits, bounds, stop))
        total += size
    kept = {name: b"".join(pieces) for name, pieces in kept.items()}
    names = None if header.version == b"3.00" else parse_names(kept.pop("name", b""), header.order)
    return names, {mod: native_records(mod, raw, header.order) for mod, raw in kept.items()}


def _inflated_region(fd, whole: bytes | None, region: _Region, stop: int, keep) -> int:
    """:func:`_inflated` of a region of the log at ``fd`` (``whole``: its bytes, when read at
    once). A region to keep that is larger than KEEP_UNMEASURED is measured first: a bomb is
    refused before any of it is kept."""

    def pieces():
        if whole is None:
            return _pieces(fd, region)
        return [whole[region.offset : region.offset + region.length]]

    if keep is not None and region.length > KEEP_UNMEASURED:
        if (size := _inflated(pieces(), region, stop)) > stop:
            return size
    return _inflated(pieces(), region, stop, keep)


def _parsed(region: _Region, header: _Header) -> bool:
    """Whether check_inflation keeps the region's bytes: the name region (but of format
    3.00, whose entries differ) and the record modules stored at their current version."""
    if region.name == "name":
        return header.version != b"3.00"
    return region.version == CURRENT_VERSIONS.get(region.name)


def native_records(mod: str, raw: bytes, order: str) -> bytes:
    """A module's inflated region of a log in byte order ``order``, stored at its current
    version, as _stored_records has it: the records side by side in this machine's byte
    order. LogRefused when it does not hold a whole number of records."""
    lay = record_layout(mod)
    if len(raw) % lay.size:
        raise LogRefused(
            f"{mod} region: {len(raw)} bytes, not a whole number of {lay.size}-byte records"
        )
    if order == ("<" if sys.byteorder == "little" else ">"):
        return raw
    return np.frombuffer(raw, lay.dtype.newbyteorder(order)).astype(lay.dtype).tobytes()


def _bounds(region: _Region, limits: Limits, left: int) -> tuple[int, int, int | None]:
    """The bytes the region may inflate to by each limit: the log's total left, the ratio to
    its compressed length, its module's record count (the job and name regions: the total)."""
    ratio = max(RATIO_FLOOR, int(limits.max_ratio * region.length))
    if region.name in ("job", "name"):
        return left, ratio, left
    return left, ratio, limits.max_records * _record_size(region.name)


@functools.cache
def _record_size(module: str) -> int:
    return MIN_RECORD.get(module) or record_layout(module).size


def _bound_reason(region: _Region, limits: Limits, bounds: tuple, stop: int) -> str:
    """Why the region is refused: the first limit of bounds that is stop, in words."""
    what = f"decompression bound: {region.name} region inflates past {stop} bytes"
    left, ratio, _ = bounds
    if stop == left:
        return f"{what}, the rest of the log's limit of {limits.max_bytes} bytes"
    if stop == ratio:
        return (f"{what}, more than {limits.max_ratio:g}x the {region.length} compressed bytes "
                "the header declares")  # fmt: skip
    size = _record_size(region.name)
    return f"{what}, more than {limits.max_records} records of {size} bytes"


def _inflated(pieces, region: _Region, stop: int, keep: list | None = None) -> int:
    """What the region's back-to-back zlib streams (its bytes: pieces) inflate to, counted up
    to past ``stop`` (the bytes appended to ``keep`` when it is a list); LogRefused when they
    are not whole, valid zlib streams."""
    total, inflater, inside = 0, zlib.decompressobj(), False
    for data in pieces:
        while data:
            inside = True
            try:
                out = inflater.decompress(data, _CHUNK)
            except zlib.error as exc:
                raise LogRefused(f"{region.name} region: damaged compressed data ({exc})") from None
            total += len(out)
            if keep is not None:
                keep.append(out)
            if total > stop:
                return total
            if inflater.eof:  # the next stream, if any (one per MPI rank)
                data, inflater, inside = inflater.unused_data, zlib.decompressobj(), False
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


def main():
    if len(sys.argv) not in (2, 3):
        print("usage: python -m iostudy.logs.darshanlog_worker LOG [LIMITS-JSON]", file=sys.stderr)
        return 2
    limits = Limits(**json.loads(sys.argv[2])) if len(sys.argv) == 3 else DEFAULT_LIMITS
    try:
        with open_log(sys.argv[1], limits, follow=True) as checked:
            data = dump(checked)
    except LogRefused as exc:
        json.dump({"error": str(exc)}, sys.stdout)
        return 1
    except Exception as exc:  # report PyDarshan's failure to the parent, which names the file
        json.dump({"error": f"{type(exc).__name__}: {exc}"}, sys.stdout)
        return 1
    json.dump(data, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
