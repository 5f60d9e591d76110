"""PyDarshan's view of the DXT traces of a log (test_dxt.py, test_mpi_unfinished.py)."""

from __future__ import annotations

import json
import subprocess
import sys

READER = r"""
import json, sys
import darshan
r = darshan.DarshanReport(sys.argv[1], read_all=True)
out = {"modules": {k: bool(v.get("partial_flag")) for k, v in r.modules.items()}, "traces": {}}
for mod in ("DXT_POSIX", "DXT_MPIIO"):
    if mod not in r.records:
        continue
    recs = []
    for rec in r.records[mod].to_df():
        def segs(df):
            return [[int(o), int(n)] for o, n in zip(df.get("offset", []), df.get("length", []))]
        recs.append({"name": r.name_records[rec["id"]], "rank": int(rec["rank"]),
                     "hostname": rec["hostname"], "write_count": int(rec["write_count"]),
                     "read_count": int(rec["read_count"]),
                     "writes": segs(rec["write_segments"]), "reads": segs(rec["read_segments"])})
    out["traces"][mod] = recs
print(json.dumps(out))
"""


def read_dxt(log) -> dict:
    """PyDarshan's view of a log's DXT: modules (name -> partial flag) and traces (module -> list
    of records with name, rank, counts and [offset, length] segments)."""
    res = subprocess.run(
        [sys.executable, "-c", READER, str(log)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def traced(dxt: dict, names) -> dict:
    """The traces of the named files: (module, name, rank) -> (writes, reads)."""
    out = {}
    for mod, recs in dxt["traces"].items():
        for rec in recs:
            if rec["name"] in names:
                key = (mod, rec["name"], rec["rank"])
                assert key not in out, f"two records for {key}"
                assert rec["write_count"] == len(rec["writes"])
                assert rec["read_count"] == len(rec["reads"])
                out[key] = (rec["writes"], rec["reads"])
    return out


def joined(dxt: dict, names) -> dict:
    """The traces of the named files, a file's records joined in log order (a memory-mapped log
    keeps a file's trace in several records): (module, name, rank) -> (writes, reads)."""
    out = {}
    for mod, recs in dxt["traces"].items():
        for rec in recs:
            if rec["name"] in names:
                writes, reads = out.setdefault((mod, rec["name"], rec["rank"]), ([], []))
                assert rec["write_count"] == len(rec["writes"])
                assert rec["read_count"] == len(rec["reads"])
                writes += rec["writes"]
                reads += rec["reads"]
    return out
