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
"""

import functools
import json
import sys
from typing import NamedTuple

import numpy as np
from darshan.backend import cffi_backend as backend

# The generic-record modules iostudy reads (PyDarshan names).
RECORD_MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "PNETCDF_FILE")
U64 = 0xFFFFFFFFFFFFFFFF


class _Layout(NamedTuple):
    """A generic-record module's record as libdarshan-util hands it over: the counter names,
    the record's size and its numpy dtype."""

    cnames: list
    fnames: list
    size: int
    dtype: np.dtype


@functools.cache
def _layout(mod) -> _Layout:
    """The layout of a module's records, checked against cffi's struct size; once per process."""
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


class _Arena:
    """One growing C buffer that a module's records are read into side by side (one per
    process, reused from module to module: its content is copied out before the next)."""

    def __init__(self, capacity=1 << 16):
        self.buf = backend.ffi.new("char[]", capacity)
        self.capacity = capacity
        self.slot = backend.ffi.new("void **")

    def at(self, offset, size):
        """``slot`` pointing at ``offset``, with room for ``size`` bytes there."""
        if offset + size > self.capacity:
            grown = backend.ffi.new("char[]", 2 * (offset + size))
            backend.ffi.memmove(grown, self.buf, offset)
            self.buf, self.capacity = grown, 2 * (offset + size)
        self.slot[0] = self.buf + offset
        return self.slot


@functools.cache
def _arena() -> _Arena:
    return _Arena()


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


def _records(log, mod, names):
    """Named records of one module as RecordArrays, and the number of records stored, named or
    not (PyDarshan drops unnamed ones silently). ``names``: {record id: name}.

    libdarshan-util's darshan_log_get_record fills the record buffer it is given (byte-swapped
    and up-converted to the current version), so the records are read side by side into one
    buffer and taken as one array: PyDarshan's log_get_generic_record builds numpy arrays and a
    dict per record, ten times slower on logs of thousands of records. The record layout (base
    record, int64 counters, double fcounters) is checked against cffi's struct size."""
    lay, arena = _layout(mod), _arena()
    get, size = backend.libdutil.darshan_log_get_record, lay.size
    handle, idx = log["handle"], log["modules"][mod]["idx"]
    count = 0
    while get(handle, idx, arena.at(count * size, size)) > 0:
        count += 1
    stored = np.frombuffer(backend.ffi.buffer(arena.buf, count * size), dtype=lay.dtype)
    named = np.fromiter(map(names.__contains__, stored["id"].tolist()), bool, len(stored))
    kept = stored[named]
    arrays = RecordArrays(
        kept["id"].copy(),
        kept["rank"].copy(),
        kept["counters"].reshape(len(kept), len(lay.cnames)).copy(),
        kept["fcounters"].reshape(len(kept), len(lay.fnames)).copy(),
        lay.cnames,
        lay.fnames,
    )
    return arrays, len(stored)


def _names(log) -> dict:
    """{record id: name} of the log's name table. Like PyDarshan's log_get_name_records, but a
    name that is not UTF-8 (any bytes are a valid Linux path) keeps its bytes as \\xNN escapes
    instead of failing the whole log."""
    ffi, lib = backend.ffi, backend.libdutil
    table, count = ffi.new("struct darshan_name_record **"), ffi.new("int *")
    lib.darshan_log_get_name_records(log["handle"], table, count)
    entries, names = table[0], {}
    if not count[0]:
        return names
    for i in range(count[0]):
        entry = entries[i]  # cffi indexes the C array and reads the struct's fields in C
        name = entry.name
        names[entry.id] = ffi.string(name).decode("utf-8", "backslashreplace")
        lib.darshan_free(name)
    lib.darshan_free(entries)
    return names


def _lustre(log, names):
    """Lustre layouts as [{id, rank, components [{counters {}, pool_name, ost_ids []}]}], named
    records only, components in the record's order."""
    layouts = []
    while (rec := backend._log_get_lustre_record(log, dtype="dict")) is not None:
        rid = int(rec["id"]) & U64
        if rid not in names:
            continue
        layouts.append(
            {
                "id": rid,
                "rank": int(rec["rank"]),
                "components": [
                    {
                        "counters": {k: int(v) for k, v in comp["counters"].items()},
                        "pool_name": str(comp["pool_name"]),
                        "ost_ids": [int(x) for x in comp["ost_ids"]],
                    }
                    for comp in rec["components"]
                ],
            }
        )
    return layouts


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


def dump(path):
    """The content of the log at ``path`` as plain data (keys: see :mod:`iostudy.darshanlog`)."""
    log = read(path)
    log["records"] = {mod: arrays.as_dicts() for mod, arrays in log["records"].items()}
    return log


def read(path, full=True):
    """The content of the log at ``path`` as :func:`dump` gives it, except that ``records`` is
    {module: RecordArrays}. With ``full=False`` (what ingest stores) the mounts and heatmap keys
    are empty: the mount table and the HEATMAP module are not read."""
    log = backend.log_open(path)
    if not bool(log["handle"]):
        raise RuntimeError("Failed to open file.")
    try:
        job = backend.log_get_job(log)
        exe = backend.log_get_exe(log)
        mounts = [list(m) for m in backend.log_get_mounts(log)] if full else []
        modules = backend.log_get_modules(log)
        names = _names(log)
        records, raw_counts = {}, {}
        for mod in RECORD_MODULES:
            if mod in modules:
                records[mod], raw_counts[mod] = _records(log, mod, names)
        lustre = _lustre(log, names) if "LUSTRE" in modules else []
        heatmap_records = []
        if full and "HEATMAP" in modules:
            heatmap_records = _heatmap_records(log)
            raw_counts["HEATMAP"] = len(heatmap_records)
    finally:
        backend.log_close(log)
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


def main():
    if len(sys.argv) != 2:
        print("usage: python -m iostudy.darshanlog_worker LOG", file=sys.stderr)
        return 2
    try:
        data = dump(sys.argv[1])
    except Exception as exc:  # report PyDarshan's failure to the parent, which names the file
        json.dump({"error": f"{type(exc).__name__}: {exc}"}, sys.stdout)
        return 1
    json.dump(data, sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
