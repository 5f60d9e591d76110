"""PyDarshan oracle for the runtime tests.

``read_log(path)`` runs the real PyDarshan (``darshan`` package, 3.5.0) in a *subprocess*
and returns its view of a log as plain Python data.  The subprocess is needed because
libdarshan-util aborts or segfaults on some malformed logs; any non-zero exit status or any
line on stderr is turned into a test failure (``OracleError``).

The returned dict has the keys

* ``job``: PyDarshan's ``metadata['job']`` (uid, start/end sec+nsec, nprocs, jobid, run_time,
  log_ver, metadata{k: v})
* ``exe``: the command line, ``mounts``: list of [mount point, fs type]
* ``modules``: {name: {len, ver, idx, partial_flag, num_records}}
* ``raw_record_counts``: {module: number of records in the log, including any whose id has no
  name (PyDarshan silently drops those from ``records``)}
* ``name_records``: {int id: name}
* ``records``: {module: [{id, rank, counters{name: int}, fcounters{name: float}}]}
  (POSIX, STDIO, MPI-IO, ... read through ``report.records[mod].to_df()``)
* ``heatmaps``: {api: {nbins, bin_width, num_recs, ranks, read{rank: [..]}, write{rank: [..]}}}
  as built by ``report.heatmaps`` (which raises if nbins/bin_width are inconsistent)
* ``heatmap_records``: every raw HEATMAP record: [{id, rank, nbins, bin_width, read, write}]

The reader is self-contained on purpose: the runtime tests must not depend on the analysis
package; PyDarshan itself is the oracle.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

# The script executed by the subprocess.  It prints exactly one JSON document on stdout.
_READER_SCRIPT = r"""
import json
import sys

import darshan
from darshan.backend import cffi_backend as backend

path = sys.argv[1]
report = darshan.DarshanReport(path, read_all=True)

out = {}
job = dict(report.metadata["job"])
job["metadata"] = dict(job.get("metadata", {}))
out["job"] = job
out["exe"] = report.metadata["exe"]
out["mounts"] = [list(m) for m in report.mounts]
out["darshan_version"] = darshan.__version__

modules = {}
for name, info in report.modules.items():
    modules[name] = {k: (bool(v) if k == "partial_flag" else v) for k, v in info.items()}
out["modules"] = modules
out["name_records"] = {str(int(k)): v for k, v in report.name_records.items()}

records = {}
for mod in report.records:
    if mod in ("HEATMAP", "LUSTRE", "DXT_POSIX", "DXT_MPIIO"):
        continue
    dfs = report.records[mod].to_df()
    cdf = dfs["counters"]
    fdf = dfs["fcounters"]
    # column-wise access: a row Series of mixed dtypes would be upcast to float64 and lose
    # the low bits of 64-bit ids/counters
    ccols = [c for c in cdf.columns if c not in ("id", "rank")]
    fcols = [c for c in fdf.columns if c not in ("id", "rank")]
    cvals = {c: [int(x) for x in cdf[c].tolist()] for c in ccols}
    fvals = {c: [float(x) for x in fdf[c].tolist()] for c in fcols}
    cids = [int(x) & 0xFFFFFFFFFFFFFFFF for x in cdf["id"].tolist()]
    fids = [int(x) & 0xFFFFFFFFFFFFFFFF for x in fdf["id"].tolist()]
    cranks = [int(x) for x in cdf["rank"].tolist()]
    franks = [int(x) for x in fdf["rank"].tolist()]
    if cids != fids or cranks != franks:
        raise SystemExit("counters and fcounters frames are not in the same record order")
    recs = []
    for i in range(len(cids)):
        recs.append(
            {
                "id": cids[i],
                "rank": cranks[i],
                "counters": {c: cvals[c][i] for c in ccols},
                "fcounters": {c: fvals[c][i] for c in fcols},
            }
        )
    records[mod] = recs
out["records"] = records

heatmaps = {}
for api, hm in report.heatmaps.items():
    heatmaps[str(api)] = {
        "nbins": int(hm._nbins),
        "bin_width": float(hm._bin_width_seconds),
        "num_recs": int(hm._num_recs),
        "ranks": sorted(int(r) for r in hm._ranks),
        "read": {str(int(r)): [int(x) for x in v] for r, v in hm._data["read"].items()},
        "write": {str(int(r)): [int(x) for x in v] for r, v in hm._data["write"].items()},
    }
out["heatmaps"] = heatmaps

# Second, independent pass with the low-level backend: raw record counts (named or not) and
# every raw heatmap record.
log = backend.log_open(path)
raw_counts = {}
hm_records = []
for mod in backend.log_get_modules(log):
    if mod == "HEATMAP":
        rec = backend._log_get_heatmap_record(log)
        while rec is not None:
            hm_records.append(
                {
                    "id": int(rec["id"]),
                    "rank": int(rec["rank"]),
                    "nbins": int(rec["nbins"]),
                    "bin_width": float(rec["bin_width_seconds"]),
                    "write": [int(x) for x in rec["write_bins"]],
                    "read": [int(x) for x in rec["read_bins"]],
                }
            )
            rec = backend._log_get_heatmap_record(log)
        raw_counts[mod] = len(hm_records)
    elif mod in ("POSIX", "STDIO", "MPI-IO"):
        n = 0
        rec = backend.log_get_generic_record(log, mod)
        while rec is not None:
            n += 1
            rec = backend.log_get_generic_record(log, mod)
        raw_counts[mod] = n
backend.log_close(log)
out["raw_record_counts"] = raw_counts
out["heatmap_records"] = hm_records

sys.stdout.write(json.dumps(out))
"""


class OracleError(AssertionError):
    """PyDarshan could not read the log cleanly."""


def pydarshan_python() -> str:
    """Interpreter that has PyDarshan installed (the one running pytest by default)."""
    return os.environ.get("IOSTUDY_PYDARSHAN_PYTHON", sys.executable)


def read_log(path, timeout: float = 120) -> dict:
    """Read a Darshan log with PyDarshan in a subprocess; fail on any error output."""
    path = os.fspath(path)
    if not os.path.isfile(path):
        raise OracleError(f"log file {path} does not exist")
    env = dict(os.environ)
    # never instrument the reader itself
    for var in ("LD_PRELOAD", "DARSHAN_ENABLE_NONMPI", "DARSHAN_LOGFILE", "DARSHAN_LOGPATH"):
        env.pop(var, None)
    env.setdefault("MPLBACKEND", "Agg")
    proc = subprocess.run(
        [pydarshan_python(), "-c", _READER_SCRIPT, path],
        capture_output=True,
        text=True,
        env=env,
        timeout=timeout,
    )
    if proc.returncode != 0:
        raise OracleError(
            f"PyDarshan reader exited with status {proc.returncode} on {path}"
            f" (134 = abort, 139 = segfault)\nstderr:\n{proc.stderr}"
        )
    if proc.stderr.strip():
        raise OracleError(f"PyDarshan printed on stderr while reading {path}:\n{proc.stderr}")
    data = json.loads(proc.stdout)
    data["name_records"] = {int(k): v for k, v in data["name_records"].items()}
    for hm in data["heatmaps"].values():
        hm["read"] = {int(k): v for k, v in hm["read"].items()}
        hm["write"] = {int(k): v for k, v in hm["write"].items()}
    return data


# ---------------------------------------------------------------------------------------------
# small helpers on the returned data


def ids_by_name(log: dict) -> dict:
    return {name: rid for rid, name in log["name_records"].items()}


def records_named(log: dict, module: str, name: str) -> list:
    """All records of ``module`` whose name is ``name`` (one per rank, or one rank -1)."""
    rid = ids_by_name(log).get(name)
    if rid is None:
        return []
    return [r for r in log["records"].get(module, []) if r["id"] == rid]


def record(log: dict, module: str, name: str, rank: int | None = None) -> dict:
    """The single record of ``module`` named ``name`` (optionally of a given rank)."""
    recs = records_named(log, module, name)
    if rank is not None:
        recs = [r for r in recs if r["rank"] == rank]
    names = sorted(log["name_records"].get(r["id"], "?") for r in log["records"].get(module, []))
    assert len(recs) == 1, (
        f"expected exactly one {module} record for {name!r} (rank {rank}), got {len(recs)};"
        f" {module} records present: {names}"
    )
    return recs[0]


def module_names(log: dict, module: str) -> list:
    return sorted(log["name_records"].get(r["id"], "?") for r in log["records"].get(module, []))
