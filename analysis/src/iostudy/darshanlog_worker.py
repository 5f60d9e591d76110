"""Dump one Darshan log as JSON on stdout, using PyDarshan.

Run only through :func:`iostudy.darshanlog.read_log`, which documents the output and turns the
JSON back into Python data: libdarshan-util may abort or segfault on a damaged log, so it must
not share a process with the caller. Everything written on stderr is treated by the caller as a
complaint about the log, so the caller runs it with warnings off.
"""

import json
import sys

import darshan
from darshan.backend import cffi_backend as backend

# The generic-record modules iostudy reads (PyDarshan names).
RECORD_MODULES = ("POSIX", "STDIO", "MPI-IO", "H5F", "PNETCDF_FILE")
U64 = 0xFFFFFFFFFFFFFFFF


def _columns(frame, cast):
    """Ids, ranks and per-record {counter: value} of one frame, read column by column: a row
    of a mixed-dtype frame is upcast to float64, which would round 64-bit ids and counters."""
    ids = [int(x) & U64 for x in frame["id"].tolist()]  # unsigned even if stored as int64
    ranks = [int(x) for x in frame["rank"].tolist()]
    names = [c for c in frame.columns if c not in ("id", "rank")]
    rows = zip(*([cast(x) for x in frame[c].tolist()] for c in names), strict=True)
    return ids, ranks, [dict(zip(names, row, strict=True)) for row in rows]


def _records(report, mod):
    """Records of one module as [{id, rank, counters{}, fcounters{}}], as PyDarshan sees them
    (``report.records[mod].to_df()``, which keeps only records that have a name)."""
    report.mod_read_all_records(mod)
    if len(report.records[mod]) == 0:
        return []  # to_df() fails on a module without (named) records
    frames = report.records[mod].to_df()
    ids, ranks, counters = _columns(frames["counters"], int)
    fids, franks, fcounters = _columns(frames["fcounters"], float)
    if (ids, ranks) != (fids, franks):
        raise RuntimeError(f"{mod}: counters and fcounters frames differ in record order")
    return [
        {"id": i, "rank": r, "counters": c, "fcounters": f}
        for i, r, c, f in zip(ids, ranks, counters, fcounters, strict=True)
    ]


def _lustre(report):
    """Lustre layouts as [{id, rank, components [{counters {}, pool_name, ost_ids []}]}], from
    PyDarshan's one row per component (in the record's order; named records only)."""
    report.mod_read_all_lustre_records()
    if len(report.records["LUSTRE"]) == 0:
        return []
    frame = report.records["LUSTRE"].to_df()["components"]
    counters = [c for c in frame.columns if c.startswith("LUSTRE_COMP_")]
    records = []
    for row in frame.to_dict("records"):
        rid, rank = int(row["id"]) & U64, int(row["rank"])
        if not records or (records[-1]["id"], records[-1]["rank"]) != (rid, rank):
            records.append({"id": rid, "rank": rank, "components": []})
        records[-1]["components"].append(
            {
                "counters": {c: int(row[c]) for c in counters},
                "pool_name": str(row["LUSTRE_POOL_NAME"]),
                "ost_ids": [int(x) for x in row["LUSTRE_OST_IDS"]],
            }
        )
    return records


def _heatmaps(report):
    """Heatmaps per API as PyDarshan combines them (it raises if their nbins/bin widths
    disagree); its Heatmap keeps the data in private attributes only."""
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


def _raw(path, modules):
    """Second, independent pass with the low-level backend: the number of records per module,
    named or not (PyDarshan drops unnamed ones silently), and every HEATMAP record as stored
    (PyDarshan merges them per API and rank)."""
    log = backend.log_open(path)
    try:
        counts = {}
        for mod in RECORD_MODULES:
            if mod in modules:
                counts[mod] = 0
                while backend.log_get_generic_record(log, mod) is not None:
                    counts[mod] += 1
        heatmap_records = []
        if "HEATMAP" in modules:
            while (rec := backend._log_get_heatmap_record(log)) is not None:
                heatmap_records.append(
                    {
                        "id": int(rec["id"]),
                        "rank": int(rec["rank"]),
                        "nbins": int(rec["nbins"]),
                        "bin_width": float(rec["bin_width_seconds"]),
                        "read": [int(x) for x in rec["read_bins"]],
                        "write": [int(x) for x in rec["write_bins"]],
                    }
                )
            counts["HEATMAP"] = len(heatmap_records)
        return counts, heatmap_records
    finally:
        backend.log_close(log)


def dump(path):
    report = darshan.DarshanReport(path, read_all=False)
    report.read_name_records()
    modules = report.modules
    raw_counts, heatmap_records = _raw(path, modules)
    return {
        "job": report.metadata["job"],
        "exe": report.metadata["exe"],
        "mounts": [list(m) for m in report.mounts],
        "modules": {
            name: {"len": m["len"], "ver": m["ver"], "partial_flag": bool(m["partial_flag"])}
            for name, m in modules.items()
        },
        "name_records": {int(k): v for k, v in report.name_records.items()},
        "records": {mod: _records(report, mod) for mod in RECORD_MODULES if mod in modules},
        "lustre": _lustre(report) if "LUSTRE" in modules else [],
        "heatmaps": _heatmaps(report) if "HEATMAP" in modules else {},
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
