"""Read one Darshan log with PyDarshan's low-level backend (libdarshan-util through cffi).

:func:`dump` is the one place that turns a log into the plain data documented in
:mod:`iostudy.darshanlog`. It runs only in a process of its own, because libdarshan-util may
abort or segfault on a damaged log: either a child started per log by
:func:`iostudy.darshanlog.read_log` (``python -m iostudy.darshanlog_worker LOG`` prints the JSON),
or a long-lived worker of :mod:`iostudy.logpool` that reads many logs one at a time. Everything
written on stderr is treated by the caller as a complaint about the log, so callers run it with
warnings off.

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
import stat
import struct
import sys
import zlib
from typing import NamedTuple

import numpy as np
from darshan.backend import cffi_backend as backend

# The generic-record modules iostudy reads (PyDarshan names).
RECORD_MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "PNETCDF_FILE")
# Module ids of format 3.41 (the log-format reference, section 5) of every module read: the
# record modules, LUSTRE and HEATMAP. Other modules (DXT traces...) are never inflated.
READ_MODULES = {1: "POSIX", 2: "MPI-IO", 3: "H5F", 5: "PNETCDF_FILE", 8: "LUSTRE", 9: "STDIO",
                15: "HEATMAP"}  # fmt: skip
# The smallest record of the variable-size modules (base record and fixed part).
MIN_RECORD = {"LUSTRE": 32, "HEATMAP": 48}
# A region that inflates to less than this is harmless whatever its ratio: one compressed
# record of zeros inflates 30 to 40 times (the real test logs' regions: up to 39x).
RATIO_FLOOR = 1 << 20
_CHUNK = 1 << 20  # bytes read, and inflated, at a time by the bound check
_PIECE = 1 << 14  # bytes handed to zlib at a time
SMALL_LOG = 1 << 20  # a log up to this size is checked from one read of the whole file


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
    """{record id: name} of the log's name table. Like PyDarshan's log_get_name_records, but a
    name that is not UTF-8 (any bytes are a valid Linux path) keeps its bytes as \\xNN escapes
    instead of failing the whole log."""
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
    try:  # a C string holds no NUL: one decode for the whole table
        decoded = b"\0".join(raw).decode().split("\0")
    except UnicodeDecodeError:
        decoded = [name.decode("utf-8", "backslashreplace") for name in raw]
    return dict(zip(ids, decoded, strict=True))


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


def dump(path):
    """The content of the log at ``path`` as plain data (keys: see :mod:`iostudy.darshanlog`)."""
    log = read(path)
    log["records"] = {mod: arrays.as_dicts() for mod, arrays in log["records"].items()}
    return log


def read(path, full=True, stored=False):
    """The content of the log at ``path`` as :func:`dump` gives it, except that ``records`` is
    {module: RecordArrays}. With ``full=False`` (what ingest stores) the mounts and heatmap keys
    are empty: the mount table and the HEATMAP module are not read. With ``stored=True``
    ``records`` is {module: every record stored, named or not, as bytes in the layout of
    :func:`record_layout`}: ingest takes them apart a batch of logs at a time."""
    log = backend.log_open(path)
    handle = log["handle"]
    if not bool(handle):
        raise RuntimeError("Failed to open file.")
    try:
        job = backend.log_get_job(log)
        exe = backend.log_get_exe(log)
        mounts = [list(m) for m in backend.log_get_mounts(log)] if full else []
        modules = backend.log_get_modules(log)
        names = _names(handle)
        records, raw_counts = {}, {}
        for mod in RECORD_MODULES:
            if mod in modules:
                size = record_layout(mod).size
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


@contextlib.contextmanager
def open_log(path, limits: Limits, follow=False):
    """The log at ``path``, checked (see the module docstring), as a name to read it by while
    the context lasts. Raises LogRefused. ``follow``: follow a symbolic link (a path a user
    named, not one found in a tree)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise LogRefused("a symbolic link, not a regular file") from None
        raise LogRefused(f"cannot open: {exc.strerror}") from None
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            raise LogRefused(f"not a regular file (mode {stat.filemode(mode)})")
        check_inflation(fd, limits)
        yield f"/proc/self/fd/{fd}"
    finally:
        os.close(fd)


class _Region(NamedTuple):
    name: str  # "name" or the module's
    offset: int
    length: int  # compressed, as the header declares it


def _header(head: bytes):
    """(compression type, [_Region] of the job and name regions and of the modules read) of the
    log whose first bytes are head, or None when the header is not one libdarshan-util accepts
    (then it says why itself)."""
    version = head[:8].split(b"\0")[0]
    if version not in (b"3.00", b"3.10", b"3.20", b"3.21", b"3.41"):
        return None
    legacy = version != b"3.41"
    names_at, mods_at, slots = (24, 40, 16) if legacy else (32, 48, 64)
    if len(head) < mods_at + 16 * slots:
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
    for slot in range(slots):
        name = READ_MODULES.get(_module_id(slot, version)) if maps[2 * slot + 1] else None
        if name:
            regions.append(_Region(name, maps[2 * slot], maps[2 * slot + 1]))
    return head[16], [r for r in regions if r.length]


def _module_id(slot, version: bytes) -> int:
    """The 3.41 id of module slot ``slot`` of a log of format ``version``: the reader inserts
    H5D at 4 below 3.20 and PNETCDF_VAR at 6 below 3.41 (the reference, section 2.1)."""
    if version < b"3.20" and slot >= 4:
        slot += 1
    if version < b"3.41" and slot >= 6:
        slot += 1
    return slot


def check_inflation(fd, limits: Limits):
    """Raise LogRefused if the regions read of the log at ``fd`` inflate past ``limits``, or
    are damaged: cut off by the end of the file, or compressed data that zlib refuses (its
    Adler-32 check included: libdarshan-util stops inflating once it has the bytes it wants,
    so a flipped bit would otherwise pass as other counter values). Memory stays at a few
    chunks whatever the log; a header libdarshan-util refuses is left to it, which says why."""
    file_size, total = os.fstat(fd).st_size, 0
    # a small log (nearly all) is read at once; a large one in pieces, region by region
    whole = os.pread(fd, file_size, 0) if file_size <= SMALL_LOG else None
    header = _header(whole[:1328] if whole is not None else os.pread(fd, 1328, 0))
    if header is None:
        return
    compression, regions = header
    for region in regions:
        if region.offset + region.length > file_size:
            raise LogRefused(
                f"truncated: the header puts the {region.name} region at bytes {region.offset} "
                f"to {region.offset + region.length}, the file has {file_size}"
            )
        if region.name in limits.unread:
            continue
        bounds = _bounds(region, limits, limits.max_bytes - total)
        stop = min(bounds)
        if compression == 0:  # zlib; bzip2 (1) is refused by the wheel's libdarshan-util
            end = region.offset + region.length
            pieces = _pieces(fd, region) if whole is None else [whole[region.offset : end]]
            size = _inflated(pieces, region, stop)
        else:  # stored as is (2): what the file holds
            size = region.length
        if size > stop:
            raise LogRefused(_bound_reason(region, limits, bounds, stop))
        total += size


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


def _inflated(pieces, region: _Region, stop: int) -> int:
    """What the region's back-to-back zlib streams (its bytes: pieces) inflate to, counted up
    to past ``stop``; LogRefused when they are not whole, valid zlib streams."""
    total, inflater, inside = 0, zlib.decompressobj(), False
    for data in pieces:
        while data:
            inside = True
            try:
                total += len(inflater.decompress(data, _CHUNK))
            except zlib.error as exc:
                raise LogRefused(f"{region.name} region: damaged compressed data ({exc})") from None
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
        print("usage: python -m iostudy.darshanlog_worker LOG [LIMITS-JSON]", file=sys.stderr)
        return 2
    limits = Limits(**json.loads(sys.argv[2])) if len(sys.argv) == 3 else DEFAULT_LIMITS
    try:
        with open_log(sys.argv[1], limits, follow=True) as name:
            data = dump(name)
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
