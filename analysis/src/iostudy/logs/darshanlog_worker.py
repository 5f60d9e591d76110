"""Read one Darshan log with PyDarshan's low-level backend (libdarshan-util through cffi).

:func:`dump` is the one place that turns a log into the plain data documented in
:mod:`iostudy.logs.darshanlog`. It runs only in a process of its own, because libdarshan-util may
abort or segfault on a damaged log: a long-lived worker of :mod:`iostudy.logs.logpool` that reads
logs one at a time, for :func:`iostudy.logs.darshanlog.read_log` or for ingest.
Everything written on stderr is treated by the caller as a complaint about the log, so callers run
it with warnings off.

Records come from ``log_get_generic_record`` one by one, which is what PyDarshan's
``DarshanReport`` does underneath, without its per-record pandas work: ingest reads thousands of
logs a second this way. Like ``DarshanReport``, only records whose id has a name are kept; the
raw counts include the others.

Before libdarshan-util sees a log, :func:`open_log` opens it without blocking and without
following a symbolic link, refuses anything but a regular file (a FIFO or a device would hang or
never end), and has :func:`iostudy.logs.logregions.check_inflation` inflate the regions that will
be read, counting and discarding the bytes, within the :class:`~iostudy.logs.logregions.Limits`:
a 5 MB log can inflate to gigabytes of records (a decompression bomb), which libdarshan-util
would materialize whole. The log is then read through ``/proc/self/fd/N``: the
very file checked, and a name whose unlink by libdarshan-util's cleanup after a failed read (it
can use a path from freed memory) cannot remove the log.
"""

from __future__ import annotations

import contextlib
import errno
import functools
from typing import NamedTuple

from iostudy.core import safeio
from iostudy.core.deferred import deferred
from iostudy.logs import jobmodules
from iostudy.logs.logregions import (
    Limits,
    LogRefused,
    check_inflation,
    decoded_names,
)
from iostudy.logs.modules import GENERIC_MODULES, JOB_MODULES
from iostudy.logs.recordlayout import FILE_ID, record_layout

np = deferred("numpy")
backend = deferred("darshan.backend.cffi_backend")


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
    (records x counters, int64), fcounters (records x fcounters, float64), the names of the
    counter columns, and the file record ids (uint64: H5D's and PNETCDF_VAR's link from a
    dataset or variable to its file's record; None for a module without one)."""

    ids: np.ndarray
    ranks: np.ndarray
    counters: np.ndarray
    fcounters: np.ndarray
    cnames: list
    fnames: list
    file_ids: np.ndarray | None = None

    def as_dicts(self) -> list[dict]:
        """[{id, rank, counters {name: int}, fcounters {name: float}}] (exact Python numbers),
        with file_rec_id where the module has it."""
        records = [
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
        if self.file_ids is not None:
            for record, file_id in zip(records, self.file_ids.tolist(), strict=True):
                record["file_rec_id"] = file_id
        return records


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
        kept[FILE_ID].copy() if FILE_ID in lay.dtype.names else None,
    )


def _names(handle) -> dict:
    """{record id: name} of the log's name table, read by libdarshan-util: for the logs whose
    name region :func:`check_inflation` does not parse itself (format 3.00). Like PyDarshan's
    log_get_name_records, but a name that is not UTF-8 keeps its bytes as \\xNN escapes (see
    :func:`iostudy.logs.logregions.decoded_names`)."""
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
    return dict(zip(ids, decoded_names(b"\0".join(raw), raw), strict=True))


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
    for mod in GENERIC_MODULES:
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
    and heatmaps are empty: libdarshan-util reads neither the mount table nor the HEATMAP
    module, whose ``heatmap_records`` are those the check took from its bytes. With
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
        for mod in GENERIC_MODULES:
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
    # a job-level module's records are no files' (BG/Q's has no name): its own, as AutoPerf's
    job_records = checked.job_records | {
        mod: jobmodules.generic_records(mod, records.pop(mod))
        for mod in JOB_MODULES
        if mod in records
    }
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
        "heatmap_records": heatmap_records if full else checked.heatmaps or [],
        "job_records": job_records,
    }


class CheckedLog(NamedTuple):
    """A log :func:`open_log` checked: the name to read it by, and what the check took from the
    bytes it inflated anyway: the name table (None: libdarshan-util reads it), {module: every
    record stored, in this machine's byte order} of the modules stored at their current
    versions (iostudy.logs.modules.CURRENT_VERSIONS; the others: libdarshan-util reads them),
    the HEATMAP records as :func:`read` gives them (None: no HEATMAP region walked), and
    {module: its records} of AutoPerf's modules (iostudy.logs.jobmodules.walk: never read by
    libdarshan-util), and the DXT segments kept (iostudy.logs.dxt.Trace; None: no DXT read;
    never read by libdarshan-util either)."""

    path: str
    names: dict | None
    records: dict
    heatmaps: list | None
    job_records: dict
    traces: object


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
