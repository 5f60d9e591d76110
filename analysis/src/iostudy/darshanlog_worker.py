"""Dump one Darshan log as JSON on stdout, using PyDarshan.

Run only through :func:`iostudy.darshanlog.read_log`: libdarshan-util may abort or segfault on a
damaged log, so it must not share a process with the caller. Everything written on stderr is
treated by the caller as a complaint about the log, so the caller runs it with warnings off.
"""

import json
import sys

import darshan

# The generic-record modules iostudy analyses (PyDarshan names).
RECORD_MODULES = ("POSIX", "STDIO", "MPI-IO")


def _records(report, mod):
    """Records of one module as [{id, rank, counters{}, fcounters{}}]."""
    report.mod_read_all_records(mod)
    frames = report.records[mod].to_df()
    # to_dict("records") yields native Python ints/floats, ready for JSON.
    counters = frames["counters"].to_dict("records")
    fcounters = frames["fcounters"].to_dict("records")
    records = []
    for c, f in zip(counters, fcounters, strict=True):
        rec_id, rank = c.pop("id"), c.pop("rank")
        f.pop("id"), f.pop("rank")
        records.append({"id": str(rec_id), "rank": rank, "counters": c, "fcounters": f})
    return records


def _heatmaps(report):
    """Heatmaps per API; PyDarshan's Heatmap keeps its data in private attributes only."""
    report.read_all_heatmap_records()
    out = {}
    for api, hm in report.heatmaps.items():
        ranks = sorted(hm._ranks)
        out[str(api)] = {
            "nbins": hm._nbins,
            "bin_width": hm._bin_width_seconds,
            "ranks": ranks,
            "write_bins": [hm._data["write"][r].tolist() for r in ranks],
            "read_bins": [hm._data["read"][r].tolist() for r in ranks],
        }
    return out


def dump(path):
    report = darshan.DarshanReport(path, read_all=False)
    report.read_name_records()
    modules = report.modules
    return {
        "job": report.metadata["job"],
        "exe": report.metadata["exe"],
        "mounts": [list(m) for m in report.mounts],
        "modules": {
            name: {"len": m["len"], "ver": m["ver"], "partial_flag": bool(m["partial_flag"])}
            for name, m in modules.items()
        },
        "name_records": {str(k): v for k, v in report.name_records.items()},
        "records": {mod: _records(report, mod) for mod in RECORD_MODULES if mod in modules},
        "heatmaps": _heatmaps(report) if "HEATMAP" in modules else {},
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
