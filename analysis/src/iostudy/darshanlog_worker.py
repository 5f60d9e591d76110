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

import json
import sys

from darshan.backend import cffi_backend as backend

# The generic-record modules iostudy reads (PyDarshan names).
RECORD_MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "PNETCDF_FILE")
U64 = 0xFFFFFFFFFFFFFFFF

_NAMES = {}  # module -> (counter names, fcounter names), looked up once per process


def _counter_names(mod):
    if mod not in _NAMES:
        _NAMES[mod] = (backend.counter_names(mod), backend.fcounter_names(mod))
    return _NAMES[mod]


def _records(log, mod, names):
    """Named records of one module as [{id, rank, counters{}, fcounters{}}], and the number of
    records stored, named or not (PyDarshan drops unnamed ones silently)."""
    cnames, fnames = _counter_names(mod)
    records, stored = [], 0
    while (rec := backend.log_get_generic_record(log, mod, dtype="numpy")) is not None:
        stored += 1
        rid = int(rec["id"]) & U64  # unsigned even if handed over as a signed int
        if rid not in names:
            continue
        records.append(
            {
                "id": rid,
                "rank": int(rec["rank"]),
                # tolist(): exact Python ints and floats, never a float64 row
                "counters": dict(zip(cnames, rec["counters"].tolist(), strict=True)),
                "fcounters": dict(zip(fnames, rec["fcounters"].tolist(), strict=True)),
            }
        )
    return records, stored


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


def dump(path, heatmaps=True):
    """The content of the log at ``path`` (keys: see :mod:`iostudy.darshanlog`). With
    ``heatmaps=False`` the heatmap keys are empty and the HEATMAP module is not read."""
    log = backend.log_open(path)
    if not bool(log["handle"]):
        raise RuntimeError("Failed to open file.")
    try:
        job = backend.log_get_job(log)
        exe = backend.log_get_exe(log)
        mounts = [list(m) for m in backend.log_get_mounts(log)]
        modules = backend.log_get_modules(log)
        names = backend.log_get_name_records(log)
        records, raw_counts = {}, {}
        for mod in RECORD_MODULES:
            if mod in modules:
                records[mod], raw_counts[mod] = _records(log, mod, names)
        lustre = _lustre(log, names) if "LUSTRE" in modules else []
        heatmap_records = []
        if heatmaps and "HEATMAP" in modules:
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
        "name_records": {int(k) & U64: v for k, v in names.items()},
        "records": records,
        "lustre": lustre,
        "heatmaps": _heatmaps(path) if heatmaps and "HEATMAP" in modules else {},
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
