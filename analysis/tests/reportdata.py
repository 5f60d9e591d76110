"""A small, hand-made study in the store's layout, for the report tests.

Three runs of the quick campaign (two on ``local``, one on ``testcluster``): each run directory
has its manifest.json, and the store has STORE/<table>/<run_id>.parquet for every table, with
the rows a real campaign run would give (one iomodel job of 4 ranks, 256 MiB per model, files in
the model's directory n<n>-p<p>-f<f>-m<m>/), small scaling points (IOR results and their ReFrame
values, mdtest rates; no logs of them), plus a quarantined log in the last local run.
"""

import hashlib
import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from iostudy.store import store

SIZE = 256 * 2**20
MAX_PROCS = 4
PPN = 2
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=timezone.utc)
# (run id, system, start offset, bandwidth scale): the systems differ, the runs a little too.
RUNS = [
    ("20260302T090000Z-quick-local", "local", timedelta(0), 1.0),
    ("20260302T093000Z-quick-testcluster", "testcluster", timedelta(minutes=30), 1.6),
    ("20260303T090000Z-quick-local", "local", timedelta(days=1), 1.1),
]


def models(max_procs=MAX_PROCS, ppn=PPN):
    """Seed 003's models (n, p, f, m) for M ranks, P per node (the issue-4 contract)."""
    pow2 = lambda k: [2**i for i in range(k.bit_length()) if 2**i <= k]  # noqa: E731
    nodes = max_procs // ppn
    return [(n, p, f, m) for n in pow2(nodes) for p in pow2(ppn) for f in pow2(p) for m in pow2(n)]


def _named(n, p, f, m, nodes=MAX_PROCS // PPN, ppn=PPN):
    if (n, p, f, m) == (1, 1, 1, 1):
        return "serial"
    if f == p and m == 1 and n == nodes and p == ppn:
        return "file-per-process"
    if f == 1 and m == n == nodes and p == ppn:
        return "single-shared-file"
    if f == 1 and m == 1 and n == nodes and p == ppn:
        return "file-per-node"
    return None


def _write(table, rows, root, run_id):
    path = root / table / f"{run_id}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    schema = store.TABLES[table]
    pq.write_table(
        pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema), path
    )


def _run_tables(run_id, system, started, scale):
    ok_log = f"{run_id}/darshan/2026/3/2/iomodel_id1.darshan"
    sha = hashlib.sha256(run_id.encode()).hexdigest()
    iomodel, files = [], []
    clock = 0.5
    for n, p, f, m in models():
        io_procs, ppf = n * p, (p // f) * m
        mib_s = scale * 180.0 * io_procs**0.8 / ppf**0.25
        seconds = SIZE / 2**20 / mib_s
        iomodel.append(
            {
                "run_id": run_id,
                "system": system,
                "repetition": 0,
                "n": n,
                "p": p,
                "f": f,
                "m": m,
                "io_procs": io_procs,
                "procs_per_file": ppf,
                "files": n * f // m,
                "nodes": n,
                "bytes": SIZE,
                "write_seconds": seconds,
                "write_mib_s": mib_s,
                "read_seconds": None,
                "read_mib_s": None,
                "model": _named(n, p, f, m),
                "environ": "openmpi",
                "check": "iomodel_check",
            }
        )
        # The log's records: every participating rank opens its file, writes its chunk.
        for j in range(n):
            for local in range(p):
                k = (j // m) * f + local // (p // f)
                files.append(
                    {
                        "run_id": run_id,
                        "log_sha256": sha,
                        "module": "posix",
                        "record_id": hash((n, p, f, m, k)) % 2**63,
                        "rank": j * PPN + local,
                        "path": f"/scratch/{run_id}/n{n}-p{p}-f{f}-m{m}/file{k}.dat",
                        "bytes_read": 0,
                        "bytes_written": SIZE // io_procs,
                        "reads": 0,
                        "writes": 1,
                        "read_time": 0.0,
                        "write_time": 0.97 * seconds,
                        "meta_time": 0.02 * seconds,
                        "open_start": clock,
                        "read_end": 0.0,
                        "write_end": clock + 0.99 * seconds,
                        "close_end": clock + seconds,
                        "slowest_rank_time": seconds,
                        "shared": ppf > 1,
                        "opens": 1,
                    }
                )
        clock += seconds + 0.01
    tags = {
        "campaign": "quick",
        "check": "iomodel_check",
        "system": system,
        "size": "256M",
        "max_procs": str(MAX_PROCS),
        "procs_per_node": str(PPN),
        "repetition": "0",
    }
    jobs = [
        {
            "run_id": run_id,
            "log_path": ok_log,
            "log_sha256": sha,
            "jobid": 4242,
            "nprocs": MAX_PROCS,
            "nodes": MAX_PROCS // PPN,
            "nodes_source": "tag",  # as ingest counts them: the procs_per_node tag
            "start": started + timedelta(seconds=5),
            "end": started + timedelta(seconds=5 + clock),
            "run_time": clock,
            "exe": "iomodel-openmpi --size 256M --max-procs 4 --procs-per-node 2",
            "tags": json.dumps(tags, sort_keys=True),
            "campaign": "quick",
            "check": "iomodel_check",
            "system": system,
            "repetition": 0,
            "environ": "openmpi",
        }
    ]
    fpp = next(r for r in iomodel if r["model"] == "file-per-process")
    ssf = next(r for r in iomodel if r["model"] == "single-shared-file")
    perf = []
    for name, row, ref in (("fpp_write_bw", fpp, 400.0), ("ssf_write_bw", ssf, 2000.0)):
        perf.append(
            {
                "run_id": run_id,
                "system": system,
                "partition": "default",
                "environ": "openmpi",
                "check": "iomodel_check",
                "parameters": json.dumps({"size": "256M", "max_procs": MAX_PROCS}),
                "variable": name,
                "value": row["write_mib_s"],
                "unit": "MiB/s",
                "reference": ref,
                "lower": -0.5,
                "upper": None,
                "result": "pass" if row["write_mib_s"] >= ref * 0.5 else "fail",
            }
        )
    ior, perf_scaling = _scaling_rows(run_id, system, scale)
    return {
        "jobs": jobs,
        "files": files,
        "iomodel": iomodel,
        "ior": ior,
        "perf": perf + perf_scaling,
        "quarantine": [],
    }


def _scaling_rows(run_id, system, scale):
    """The acceptance campaign's points, small: IOR (POSIX, shared and file per process, 4 MiB,
    scratch and memory, 1 to 4 processes; write 100 MiB/s per process on scratch, 300 in memory,
    reads twice that) as ior rows, their ReFrame values, and an mdtest file creation rate per
    process count (1000 ops/s per process) whose 4-process value fails its reference."""
    ior, perf = [], []
    for layout in ("shared", "fpp"):
        for target, per_proc in (("scratch", 100.0), ("memory", 300.0)):
            for procs in (1, 2, 4):
                params = {"layout": layout, "target": target, "procs": procs, "api": "POSIX"}
                for op, factor in (("write", 1), ("read", 2)):
                    bw = per_proc * procs * factor * scale
                    ior.append(
                        {
                            "run_id": run_id,
                            "system": system,
                            "partition": "default",
                            "environ": "openmpi",
                            "repetition": 0,
                            "api": "POSIX",
                            "layout": layout,
                            "target": target,
                            "transfer_size": 4 * 2**20,
                            "block_size": 2**30,
                            "procs": procs,
                            "procs_per_node": PPN,
                            "nodes": max(procs // PPN, 1),
                            "operation": op,
                            "iteration": 0,
                            "bw_mib_s": bw,
                            "aggregate_bytes": procs * 2**30,
                            "total_s": procs * 1024 / bw,
                            "log_tags": "{}",
                        }
                    )
                    perf.append(
                        _perf(
                            run_id, system, "ior_check", params, f"{op}_mib_s", bw, "MiB/s", 100.0
                        )
                    )
    for procs in (1, 2, 4):
        rate = 1000.0 * procs if procs < 4 else 50.0
        perf.append(
            _perf(
                run_id,
                system,
                "mdtest_check",
                {"procs": procs},
                "file_create_ops_s",
                rate,
                "ops/s",
                1000.0,
            )
        )
    return ior, perf


def _perf(run_id, system, check, params, variable, value, unit, floor):
    return {
        "run_id": run_id,
        "system": system,
        "partition": "default",
        "environ": "openmpi",
        "check": check,
        "parameters": json.dumps(params),
        "variable": variable,
        "value": value,
        "unit": unit,
        "reference": floor * 2,
        "lower": -0.5,
        "upper": None,
        "result": "pass" if value >= floor else "fail",
    }


def make_study(root: Path) -> tuple[Path, Path]:
    """Writes ROOT/results/<run-id>/manifest.json and ROOT/results/store; returns both folders."""
    results = Path(root) / "results"
    store_dir = results / "store"
    for run_id, system, offset, scale in RUNS:
        started = T0 + offset
        finished = started + timedelta(minutes=3)
        manifest = {
            "run_id": run_id,
            "campaign": "quick",
            "system": system,
            "started": started.isoformat(),
            "finished": finished.isoformat(),
            "status": "completed",
            "git_commit": "0123456789abcdef0123456789abcdef01234567",
            "git_dirty": False,
            "tool_versions": {"iostudy": "0.1.0", "reframe": "4.10.0", "openmpi": "4.1.4"},
            "command_line": ["iostudy", "campaign", "run", "quick", "--system", system],
            "effective_config": {
                "system": {"name": system, "nodes": {"count": 2, "cores_per_node": PPN}},
                "campaign": {"name": "quick", "study": "quick", "checks": []},
                "references": {},
            },
            "spack_build": None,
        }
        run_dir = results / run_id
        run_dir.mkdir(parents=True)
        (run_dir / "manifest.json").write_text(json.dumps(manifest, indent=2))
        tables = _run_tables(run_id, system, started, scale)
        if run_id == RUNS[-1][0]:
            tables["quarantine"].append(
                {
                    "run_id": run_id,
                    "path": f"{run_id}/darshan/2026/3/3/cut_id2.darshan",
                    "sha256": "ab" * 32,
                    "reason": "darshan-util could not read the log: truncated",
                }
            )
        tables["runs"] = [
            {
                "run_id": run_id,
                "campaign": "quick",
                "system": system,
                "started": started,
                "finished": finished,
                "status": "completed",
                "git_commit": manifest["git_commit"],
                "manifest_path": f"{run_id}/manifest.json",
                "study": "quick",
                "git_dirty": False,
                "tool_versions": json.dumps(manifest["tool_versions"]),
            }
        ]
        for table in store.TABLES:
            _write(table, tables.get(table, []), store_dir, run_id)
    return results, store_dir
