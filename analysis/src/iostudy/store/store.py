"""The store: run directories ingested into Parquet tables, queried with DuckDB.

``iostudy ingest RUN_DIR... --store STORE`` reads a run directory (``results/<run-id>/``:
manifest.json, reframe/report.json, reframe/output/**/{iomodel,ior}.jsonl, darshan/**/*.darshan) and
writes one Parquet file per table and run, ``STORE/<table>/<run_id>.parquet``, for every table of
:data:`TABLES`, even when empty, so that the tables always exist once a run is in. DuckDB reads
them through views: :func:`connect` returns a connection that has them, and STORE/store.duckdb
holds the same views for ad-hoc queries (``duckdb STORE/store.duckdb``).

Ingest is incremental. A run whose manifest is unchanged since it was ingested is skipped. A
run ingested again (its manifest changed, e.g. it finished after a first ingest) keeps the rows
of the logs it already had; only new logs are read. A log whose sha256 the store already holds
for another run is skipped: logs are identified by content, not by path.

A log tree (any folder of logs without a manifest, e.g. a facility's Darshan log directory) is a
source too: see :func:`ingest_tree`. Its logs already read are found by path, size and mtime,
so a re-ingest of an unchanged tree reads and hashes nothing.

Every log is read by :func:`iostudy.logs.darshanlog_worker.dump` in a long-lived worker process of
:class:`iostudy.logs.logpool.ReaderPool`, one log at a time; a log that cannot be read, or that
crashes the reader, goes to the quarantine table with the reason, and the others go on. Results
are streamed into the Parquet files in large row groups as they arrive, so memory holds a batch
of rows, not the run. One ingest at a time writes a store (a lock file, STORE/.lock).

Times are UTC, stored without a time zone. Paths in the tables (manifest_path, log_path,
quarantine path, iomodel source_path) are relative to the folder that holds the run directories
(e.g. ``<run-id>/darshan/...`` for results/<run-id>/...), so that a store stays valid when
results/ moves.
"""

from __future__ import annotations

import argparse
import contextlib
import fcntl
import json
import os
import stat
import sys
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

import duckdb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from iostudy.core import config, paths, safeio
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.paths import add_store_option
from iostudy.core.provenance import sha256_file
from iostudy.core.reframe_names import display_parameters
from iostudy.logs.darshanlog import add_limit_options, limits_from
from iostudy.logs.darshanlog_worker import DEFAULT_LIMITS
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logrows import (
    INGEST_UNREAD,
    SIZE_BINS,
    Columns,
    Repeated,
    Strings,
    batch_rows,
    epoch_utc,
    int_or_none,
    read_for_ingest,
    utc_naive,
)
from iostudy.store import catalog as catalog_mod

DATABASE = "store.duckdb"
LOCK = ".lock"
DEFAULT_UMASK = "027"
# Logs a worker reads per answer of the pool, and the default --commit-every.
READ_BATCH = 64
DEFAULT_COMMIT_EVERY = 20_000

# Times are UTC, stored without a time zone: DuckDB hands TIMESTAMPTZ to pandas through a
# deprecated pandas call, and every reader of the store would see the warning.
_TS = pa.timestamp("us")

# The tables and their columns. The columns a table promises (issue 4 contract) come first;
# extra columns follow. Paths are relative (see the module docstring).
TABLES: dict[str, pa.Schema] = {
    "runs": pa.schema(
        [
            ("run_id", pa.string()),
            ("campaign", pa.string()),
            ("system", pa.string()),
            ("started", _TS),
            ("finished", _TS),
            ("status", pa.string()),
            ("git_commit", pa.string()),
            ("manifest_path", pa.string()),
            ("manifest_sha256", pa.string()),
            ("study", pa.string()),
            ("git_dirty", pa.bool_()),
            ("tool_versions", pa.string()),  # JSON
            ("ingested", _TS),
            # the site whose bundle the run came from (`iostudy import`); null: this store's own
            ("site", pa.string()),
            ("benchmark_versions", pa.string()),  # JSON: check -> its benchmark's version
        ]
    ),
    "jobs": pa.schema(
        [
            ("run_id", pa.string()),
            ("log_path", pa.string()),
            ("log_sha256", pa.string()),
            ("jobid", pa.int64()),
            ("nprocs", pa.int64()),
            ("nodes", pa.int64()),
            ("start", _TS),
            ("end", _TS),
            ("run_time", pa.float64()),
            ("exe", pa.string()),
            ("tags", pa.string()),  # JSON object of the log's metadata lines
            ("campaign", pa.string()),
            ("check", pa.string()),
            ("system", pa.string()),
            ("repetition", pa.int64()),
            ("environ", pa.string()),
            ("log_ver", pa.string()),
            ("partial", pa.bool_()),  # some module ran out of memory: records are missing
            ("uid", pa.int64()),
            ("modules", pa.string()),  # the log's modules with data, "+"-joined (PyDarshan names)
            # the log file's size and mtime when read: a log tree is re-scanned by stat alone
            ("log_size", pa.int64()),
            ("log_mtime_ns", pa.int64()),
            # why values of this log are doubtful (JSON list of reasons; null: none); values
            # known to be wrong are stored as null, never as read (iostudy.logs.plausibility)
            ("flags", pa.string()),
            # where nodes comes from: "tag" (the harness's), "system" (ranks over the system's
            # cores per node), "assumed" (1: nothing said); null in stores made before it
            ("nodes_source", pa.string()),
        ]
    ),
    "files": pa.schema(
        [
            ("run_id", pa.string()),
            ("log_sha256", pa.string()),
            # posix, stdio, mpiio; h5f, pnetcdf: HDF5's and PnetCDF's file-level records
            ("module", pa.string()),
            ("record_id", pa.uint64()),
            ("rank", pa.int64()),  # -1: a record shared by all ranks
            ("path", pa.string()),
            ("bytes_read", pa.int64()),
            ("bytes_written", pa.int64()),
            ("reads", pa.int64()),
            ("writes", pa.int64()),
            ("read_time", pa.float64()),
            ("write_time", pa.float64()),
            ("meta_time", pa.float64()),
            ("open_start", pa.float64()),  # seconds since the job started
            ("read_end", pa.float64()),
            ("write_end", pa.float64()),
            ("close_end", pa.float64()),
            ("slowest_rank_time", pa.float64()),
            ("shared", pa.bool_()),
            ("opens", pa.int64()),
            ("read_start", pa.float64()),  # seconds since the job started: the first read's start
            ("write_start", pa.float64()),
            # what seeds 000 and 002 look at: counters of the modules that have them, else null
            ("seeks", pa.int64()),
            ("max_byte", pa.int64()),  # the highest offset accessed: the file's size, or near
            ("unaligned", pa.int64()),  # accesses not aligned to the file system's block
            ("seq_ops", pa.int64()),  # reads and writes after the previous one's offset
            ("small_reads", pa.int64()),  # reads and writes below 1 MiB
            ("small_writes", pa.int64()),
            ("coll_ops", pa.int64()),  # MPI-IO: collective reads and writes
            ("indep_ops", pa.int64()),  # MPI-IO: independent ones
            ("mode", pa.int64()),  # POSIX_MODE: the mode given at open, set when it created
            # accesses per size bin (POSIX; MPI-IO's aggregate sizes), seed 000's Fig. 9
            *((f"{op}_{b.lower()}", pa.int64()) for op in ("read", "write") for b in SIZE_BINS),
        ]
    ),
    "perf": pa.schema(
        [
            ("run_id", pa.string()),
            ("system", pa.string()),
            ("partition", pa.string()),
            ("environ", pa.string()),
            ("check", pa.string()),
            ("parameters", pa.string()),  # JSON object
            ("variable", pa.string()),
            ("value", pa.float64()),
            ("unit", pa.string()),
            ("reference", pa.float64()),
            ("lower", pa.float64()),  # ReFrame thresholds: fractions of the reference
            ("upper", pa.float64()),
            ("result", pa.string()),  # of this variable: pass or fail
            ("case_result", pa.string()),  # of the test case
            ("jobid", pa.string()),
            ("completed", _TS),
            ("test_name", pa.string()),
            ("num_tasks", pa.int64()),  # the scale: ReFrame's processes, and per node
            ("num_tasks_per_node", pa.int64()),
        ]
    ),
    "iomodel": pa.schema(
        [
            ("run_id", pa.string()),
            ("system", pa.string()),
            ("repetition", pa.int64()),
            ("n", pa.int64()),
            ("p", pa.int64()),
            ("f", pa.int64()),
            ("m", pa.int64()),
            ("io_procs", pa.int64()),
            ("procs_per_file", pa.int64()),
            ("files", pa.int64()),
            ("nodes", pa.int64()),
            ("bytes", pa.int64()),
            ("write_seconds", pa.float64()),
            ("write_mib_s", pa.float64()),
            ("read_seconds", pa.float64()),
            ("read_mib_s", pa.float64()),
            ("model", pa.string()),
            ("partition", pa.string()),
            ("environ", pa.string()),
            ("check", pa.string()),
            ("parameters", pa.string()),  # JSON object
            ("source_path", pa.string()),
        ]
    ),
    # One row per IOR iteration and operation (reframe/output/**/ior.jsonl of ior_check).
    "ior": pa.schema(
        [
            ("run_id", pa.string()),
            ("system", pa.string()),
            ("partition", pa.string()),
            ("environ", pa.string()),
            ("repetition", pa.int64()),
            ("api", pa.string()),
            ("layout", pa.string()),  # shared (N-1) or fpp (N-N)
            ("target", pa.string()),  # scratch, or memory: the client ceiling
            ("transfer_size", pa.int64()),
            ("block_size", pa.int64()),
            ("procs", pa.int64()),
            ("procs_per_node", pa.int64()),
            ("nodes", pa.int64()),
            ("operation", pa.string()),  # write or read
            ("iteration", pa.int64()),
            ("bw_mib_s", pa.float64()),
            ("iops", pa.float64()),
            ("open_s", pa.float64()),
            ("wrrd_s", pa.float64()),
            ("close_s", pa.float64()),
            ("total_s", pa.float64()),
            ("aggregate_bytes", pa.int64()),
            ("source_path", pa.string()),
            ("log_tags", pa.string()),  # JSON object: the tags of the job's log (jobs.tags)
        ]
    ),
    # One row per writer of an interference probe sample (probe_check's logs;
    # iostudy.benchmarks.probe).
    "probes": pa.schema(
        [
            ("run_id", pa.string()),
            ("log_sha256", pa.string()),
            ("system", pa.string()),
            ("campaign", pa.string()),
            ("environ", pa.string()),
            ("jobid", pa.int64()),
            ("start", _TS),  # the sample's time: its job's start
            ("nodes", pa.int64()),
            ("writers", pa.int64()),
            ("writers_per_target", pa.int64()),
            ("targets", pa.int64()),
            ("target", pa.string()),  # scratch, or memory
            ("writer", pa.int64()),  # n of its file writer.<n>
            ("rank", pa.int64()),
            ("bytes", pa.int64()),
            ("write_time", pa.float64()),  # POSIX_F_WRITE_TIME: writes and fsync
            ("write_start", pa.float64()),
            ("write_end", pa.float64()),
        ]
    ),
    # One row per OST of each file layout the runtime's LUSTRE module recorded
    # (iostudy.report.lustre).
    "lustre": pa.schema(
        [
            ("run_id", pa.string()),
            ("log_sha256", pa.string()),
            ("record_id", pa.uint64()),  # the file's, as in the files table
            ("rank", pa.int64()),
            ("component", pa.int64()),  # of a progressive file layout; 0 otherwise
            ("stripe_size", pa.int64()),
            ("stripe_count", pa.int64()),
            ("ost", pa.int64()),  # an OST index the component stripes over
        ]
    ),
    # One row per Slurm job allocation (not step), from sacct output (iostudy.collect.sacct):
    # written by `iostudy sacct import` as STORE/sched/sacct-<source>.parquet, not by ingest (whose
    # part per run stays empty).
    "sched": pa.schema(
        [
            ("cluster", pa.string()),
            ("jobid", pa.int64()),  # JobIDRaw: an array task's own id, as in a log's jobid
            ("account", pa.string()),
            ("user", pa.string()),
            ("partition", pa.string()),
            ("nodes", pa.int64()),
            ("cores", pa.int64()),  # NCPUS (AllocCPUS)
            ("elapsed_s", pa.int64()),
            ("start", _TS),  # null: never started
            ("end", _TS),  # null: still running
            ("state", pa.string()),
            ("source", pa.string()),  # the file's name, or "live"
            ("imported", _TS),  # when several imports hold a job, the last one counts
        ]
    ),
    # One row per device per interval of iostat-mon (iostudy.collect.iostatmon), and a row per gap,
    # start and stop record of the monitor (kind): written by `iostudy iostat-mon import` as
    # STORE/iostat/iostat-<host>.parquet, not by ingest (whose part per run stays empty).
    "iostat": pa.schema(
        [
            ("host", pa.string()),
            ("device", pa.string()),  # null: not an io row
            ("kind", pa.string()),  # io, gap, start, stop
            ("start", _TS),  # io: the interval's start (end - seconds)
            ("end", _TS),  # io: the interval's end, iostat's timestamp
            ("seconds", pa.float64()),
            ("read_bytes", pa.int64()),  # rkB/s * 1024 * seconds
            ("write_bytes", pa.int64()),
            ("read_iops", pa.float64()),
            ("write_iops", pa.float64()),
            ("util_pct", pa.float64()),
            ("read_await_ms", pa.float64()),
            ("write_await_ms", pa.float64()),
            ("queue", pa.float64()),  # aqu-sz
            ("reason", pa.string()),  # gap, stop: why
            ("source", pa.string()),  # the monitor's DIR name
            ("imported", _TS),
        ]
    ),
    # File-system content snapshots (iostudy.collect.fsstats): per snapshot a row per histogram bin
    # (kind histogram; project set for the per-project file-size bins), per count and total
    # (kind count, value; project null: the whole scan), per error kind and file-system figure.
    # Written by `iostudy fsstats import` as STORE/fsstats/<snapshot>.parquet, not by ingest.
    "fsstats": pa.schema(
        [
            ("snapshot", pa.string()),
            ("root", pa.string()),
            ("taken", _TS),  # the scan's start: file ages are counted from it
            ("kind", pa.string()),  # histogram, count, error, filesystem
            ("name", pa.string()),  # file_size, mtime, ...; files, bytes, ...; permission, ...
            ("project", pa.string()),  # a top-level directory of the root; null: all of it
            ("bin", pa.int64()),
            ("lo", pa.int64()),  # the bin is [lo, hi) in unit
            ("hi", pa.int64()),
            ("unit", pa.string()),  # bytes, days, entries
            ("value", pa.int64()),  # count, error, filesystem rows
            ("count", pa.int64()),  # histogram rows: files, directories or names in the bin
            ("bytes", pa.int64()),  # their bytes (st_size)
            ("allocated", pa.int64()),  # their allocated bytes (st_blocks * 512)
            ("entries", pa.int64()),  # dir_entries: the directories' entries
            ("imported", _TS),
        ]
    ),
    "quarantine": pa.schema(
        [
            ("run_id", pa.string()),
            ("path", pa.string()),
            ("sha256", pa.string()),
            ("reason", pa.string()),
            ("size", pa.int64()),  # of a log, as for jobs.log_size / log_mtime_ns
            ("mtime_ns", pa.int64()),
        ]
    ),
}

# The store's own tables, filled by imports of what is not a run (Slurm accounting, the storage
# servers' collectors: iostudy.collect.sacct, iostatmon, fsstats), and the tables a run directory
# fills (one file each, even empty).
IMPORTED_TABLES = ("sched", "iostat", "fsstats")
RUN_TABLES = tuple(t for t in TABLES if t not in IMPORTED_TABLES)


class IngestError(Exception):
    """A run directory cannot be ingested at all (e.g. its manifest is unreadable)."""


# -- small helpers -------------------------------------------------------------------------------


def _timestamp(value):
    """A UTC datetime from an ISO 8601 string or a number of seconds; None when not parseable."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return epoch_utc(value)
    try:
        return utc_naive(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return None


def _float_or_none(value):
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result


def _rel(path: Path, base: Path) -> str:
    try:
        return Path(path).resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def _table(name: str, rows: list[dict]) -> pa.Table:
    schema = TABLES[name]
    return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema)


# -- one log -> rows (runs in a worker process) ---------------------------------------------------


# -- ReFrame report and benchmark output ---------------------------------------------------------


def _case_parameters(case: dict, campaign_parameters=None) -> dict:
    """A test case's parameters: those its display name shows (display_parameters; typed
    as ReFrame recorded them in the case when it did), and the values in the case of the
    variables the campaign set for its check (``campaign_parameters``: check -> names), which
    ReFrame does not show in the name."""
    display = case.get("display_name") or case.get("name") or ""
    shown = display_parameters(display)
    params = {k: case.get(k, v) if "." not in k else v for k, v in shown.items()}
    for name in (campaign_parameters or {}).get(_case_check(case), ()):
        if name in case and name not in params:
            params[name] = case[name]
    return params


def campaign_parameters(manifest: dict) -> dict[str, list[str]]:
    """check -> the variables the run's campaign set for it (its parameters and repetition),
    from the manifest's effective campaign."""
    effective = manifest.get("effective_config") or {}
    campaign = effective.get("campaign") if isinstance(effective, dict) else None
    names = {}
    for entry in (campaign or {}).get("checks") or []:
        if isinstance(entry, dict) and entry.get("check"):
            names[entry["check"]] = [*(entry.get("parameters") or {}), "repetition"]
    return names


def _case_check(case: dict) -> str:
    return (case.get("display_name") or case.get("name") or "").split(" ")[0] or None


def _report_cases(report: dict) -> list[dict]:
    return [case for run in report.get("runs", []) for case in run.get("testcases", [])]


def perf_rows(report: dict, run_id: str, campaign_params=None) -> list[dict]:
    """One row per performance value of ReFrame's run report (report.json).

    ReFrame records each value as ``perfvalues["<system>:<partition>:<variable>"] = [value,
    reference, lower, upper, unit, result]``. campaign_params: see :func:`_case_parameters`.
    """
    rows = []
    for case in _report_cases(report):
        params = json.dumps(_case_parameters(case, campaign_params), sort_keys=True)
        for key, entry in (case.get("perfvalues") or {}).items():
            variable = key.split(":")[-1]
            value, ref, lower, upper, unit, result = (list(entry) + [None] * 6)[:6]
            rows.append(
                {
                    "run_id": run_id,
                    "system": case.get("system"),
                    "partition": case.get("partition"),
                    "environ": case.get("environ"),
                    "check": _case_check(case),
                    "parameters": params,
                    "variable": variable,
                    "value": _float_or_none(value),
                    "unit": unit,
                    "reference": _float_or_none(ref),
                    "lower": _float_or_none(lower),
                    "upper": _float_or_none(upper),
                    "result": result,
                    "case_result": case.get("result"),
                    "jobid": None if case.get("jobid") is None else str(case.get("jobid")),
                    "completed": _timestamp(case.get("job_completion_time_unix")),
                    "test_name": case.get("display_name") or case.get("name"),
                    "num_tasks": int_or_none(case.get("num_tasks")),
                    "num_tasks_per_node": int_or_none(case.get("num_tasks_per_node")),
                }
            )
    return rows


def _case_by_outputdir(report: dict) -> dict[str, dict]:
    """Test cases keyed by their output folder relative to ReFrame's output prefix, so that they
    are found again after the run directory moved."""
    prefix = (report.get("session_info") or {}).get("prefix_output") or ""
    cases = {}
    for case in _report_cases(report):
        out = case.get("outputdir")
        if not out:
            continue
        rel = os.path.relpath(out, prefix) if prefix and os.path.isabs(out) else out
        cases[Path(rel).as_posix()] = case
    return cases


IOMODEL_FIELDS = (
    "n",
    "p",
    "f",
    "m",
    "io_procs",
    "procs_per_file",
    "files",
    "nodes",
    "bytes",
    "write_seconds",
    "write_mib_s",
    "read_seconds",
    "read_mib_s",
    "model",
)


def iomodel_rows(lines, run_id: str, case: dict | None, system: str | None, campaign_params=None):
    """Rows of one iomodel.jsonl and the problems of the lines that are not benchmark output.
    case: the ReFrame test case that wrote it (system, environ, parameters), when known."""
    case = case or {}
    params = _case_parameters(case, campaign_params)
    rows, problems = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            if not isinstance(rec, dict) or rec.get("benchmark") != "iomodel":
                raise ValueError("not an iomodel record")
            for key in ("n", "p", "f", "m", "bytes", "write_seconds", "write_mib_s"):
                if rec.get(key) is None:
                    raise ValueError(f"no {key}")
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        row = {k: rec.get(k) for k in IOMODEL_FIELDS}
        row.update(
            run_id=run_id,
            system=case.get("system") or system,
            repetition=int_or_none(params.get("repetition")),
            partition=case.get("partition"),
            environ=case.get("environ"),
            check=_case_check(case) if case else None,
            parameters=json.dumps(params, sort_keys=True),
        )
        rows.append(row)
    return rows, problems


# The ior table's columns of one line of ior.jsonl: IOR's result and the job's log tags.
IOR_FIELDS = tuple(
    name for name in TABLES["ior"].names if name not in ("run_id", "source_path", "log_tags")
)


def log_tags_json(tags: dict) -> str:
    """Tags as the jobs table's tags column has them: a JSON object of strings, keys sorted
    (a log's metadata lines are text)."""
    return json.dumps({str(k): str(v) for k, v in tags.items()}, sort_keys=True)


def ior_rows(lines, run_id: str, system: str | None):
    """Rows of one ior.jsonl (ior_check: one IOR result per line, with the job's log tags under
    "log_tags") and the problems of the lines that are not."""
    rows, problems = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            tags = rec.get("log_tags") if isinstance(rec, dict) else None
            if not isinstance(tags, dict) or tags.get("check") != "ior_check":
                raise ValueError("not an ior_check record")
            for key in ("operation", "iteration", "bw_mib_s", "aggregate_bytes"):
                if rec.get(key) is None:
                    raise ValueError(f"no {key}")
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        fields = {**rec, **tags}
        row = {k: fields.get(k) for k in IOR_FIELDS}
        row.update(
            run_id=run_id,
            system=fields.get("system") or system,
            repetition=int_or_none(fields.get("repetition")),
            log_tags=log_tags_json(tags),
        )
        for key in ("procs", "procs_per_node", "nodes"):
            row[key] = int_or_none(row[key])
        rows.append(row)
    return rows, problems


# -- a run ---------------------------------------------------------------------------------------


@dataclass
class Counts:
    runs_ingested: int = 0
    runs_skipped: int = 0
    logs_ingested: int = 0
    logs_skipped: int = 0
    quarantined: int = 0
    problems: list[str] = field(default_factory=list)


def load_manifest(run_dir: Path) -> dict:
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise IngestError(f"{run_dir}: not a run directory (no manifest.json)")
    try:
        manifest = json.loads(safeio.read_text(path))
    except (OSError, ValueError) as exc:
        raise IngestError(f"{path}: cannot read the manifest: {exc}") from None
    if not isinstance(manifest, dict):
        raise IngestError(f"{path}: the manifest is not a JSON object")
    return manifest


def store_umask() -> int:
    """The umask of everything a store write creates: IOSTUDY_STORE_UMASK (octal), by default
    027: the store holds every user's paths and command lines, so owner and group only, as the
    logs themselves are kept."""
    text = os.environ.get("IOSTUDY_STORE_UMASK", DEFAULT_UMASK)
    try:
        value = int(text, 8)
    except ValueError:
        value = -1
    if not 0 <= value <= 0o777:
        raise IngestError(f"IOSTUDY_STORE_UMASK={text!r}: not an octal umask such as 027")
    return value


class Store:
    """A store directory: the Parquet tables its catalog names (iostudy.store.catalog), the DuckDB
    views and the write lock."""

    def __init__(self, root):
        self.root = Path(root)

    def catalog(self) -> catalog_mod.Catalog:
        return catalog_mod.load(self.root)

    def run_row(self, run_id: str) -> dict | None:
        path = self.catalog().part_path("runs", run_id)
        if path is None:
            return None
        rows = pq.read_table(path).to_pylist()
        return rows[0] if rows else None

    @contextlib.contextmanager
    def locked(self, console=None):
        """Held by every write. Taking it rolls an interrupted commit back (catalog.recover);
        what is created meanwhile gets the store's umask."""
        umask = os.umask(store_umask())
        try:
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.root / LOCK, "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    if console:
                        console.print(f"waiting for another write into {self.root} to finish")
                    fcntl.flock(lock, fcntl.LOCK_EX)
                catalog_mod.recover(self.root, TABLES)
                yield
        finally:
            os.umask(umask)

    def known_hashes(self, exclude_run: str | None = None) -> set[str]:
        """sha256 of every log the store holds (ingested or quarantined), or only for runs other
        than exclude_run."""
        con = connect(self.root)
        rows = con.execute(
            "SELECT log_sha256 FROM jobs WHERE run_id IS DISTINCT FROM $1 "
            "UNION SELECT sha256 FROM quarantine WHERE run_id IS DISTINCT FROM $1 "
            "AND sha256 IS NOT NULL",
            [exclude_run],
        ).fetchall()
        return {r[0] for r in rows}

    def has_current_tables(self, run_id: str) -> bool:
        """Whether every table of the run exists with today's columns (TABLES)."""
        catalog = self.catalog()
        paths = [catalog.part_path(t, run_id) for t in RUN_TABLES]
        return all(p is not None and pq.read_schema(p).names == TABLES[t].names
                   for t, p in zip(RUN_TABLES, paths, strict=True))  # fmt: skip

    def old_rows(self, table: str, run_id: str, column: str, keep: set[str], part=None):
        """Record batches of the table's committed part (by default the run's) whose
        ``column`` is in keep."""
        path = self.catalog().part_path(table, part or run_id)
        if path is None or not keep:
            return
        keep_arr = pa.array(sorted(keep), pa.string())
        for batch in pq.ParquetFile(path).iter_batches(batch_size=65536):
            mask = pc.is_in(batch.column(column), value_set=keep_arr)
            batch = batch.filter(mask)
            if batch.num_rows:
                yield pa.Table.from_batches([batch]).cast(TABLES[table])

    def refresh_views(self, console) -> None:
        """write_views, saying on the console when the database could not be updated."""
        problem = self.write_views()
        if problem:
            console.print(
                f"warning: {DATABASE} not updated: {problem}", highlight=False, soft_wrap=True
            )

    def write_views(self) -> str | None:
        """(Re)create STORE/store.duckdb with one view per table over the Parquet files; returns
        why it could not (e.g. another process holds the database open), else None. The tables
        do not depend on it: :func:`connect` makes its own views."""
        try:
            con = duckdb.connect(str(self.root / DATABASE))
        except duckdb.Error as exc:
            return str(exc).splitlines()[0]
        try:
            _create_views(con, self.root)
        finally:
            con.close()
        return None


def _columns_table(table: str, chunks: list[Columns]) -> pa.Table:
    """One pyarrow table from many Columns chunks; chunks with the same columns (e.g. one
    module's records) are joined column by column, and a column a chunk lacks is null."""
    schema = TABLES[table]
    groups: dict[tuple, list[Columns]] = {}
    for chunk in chunks:
        groups.setdefault(tuple(chunk.data), []).append(chunk)
    tables = []
    for keys, group in groups.items():
        n = sum(c.n for c in group)
        arrays = []
        for f in schema:
            if f.name not in keys:
                arrays.append(pa.nulls(n, f.type))
                continue
            parts = [c.data[f.name] for c in group]
            if isinstance(parts[0], Strings):  # taken as they are: no Python string per row
                arrays.append(pa.chunked_array([pa.StringArray.from_buffers(
                    len(p.offsets) - 1, pa.py_buffer(p.offsets), pa.py_buffer(p.data))
                    for p in parts], f.type))  # fmt: skip
            elif isinstance(parts[0], Repeated):
                values = pa.array([v for p in parts for v in p.values], f.type)
                counts = np.concatenate([p.counts for p in parts])
                arrays.append(values.take(np.repeat(np.arange(len(counts)), counts)))
            elif isinstance(parts[0], np.ndarray):
                arrays.append(pa.array(np.concatenate(parts)).cast(f.type))
            else:
                arrays.append(pa.array([x for p in parts for x in p], f.type))
        tables.append(pa.Table.from_arrays(arrays, schema=schema))
    return pa.concat_tables(tables)


class _RunWriter:
    """A set of parts (a run's tables, or one part of a log tree's), written to temporary files
    and committed together by :meth:`commit` (iostudy.store.catalog). Rows are buffered and written
    in large row groups: a row group per log would make the files slow to read."""

    FLUSH_ROWS = 50_000

    def __init__(self, store: Store, name: str, tables=RUN_TABLES, all_tables=True,
                 run_id=None, names=None):  # fmt: skip
        self.store, self.run_id = store, run_id or name
        self.tables = tables  # the tables this writer may write
        self.all_tables = all_tables  # write every table, even empty (a run's set is complete)
        # each table's part name: name, unless names says otherwise (a tree's runs row)
        self.names = {t: (names or {}).get(t, name) for t in tables}
        self.tmp = {t: store.root / t / f"{self.names[t]}.parquet.tmp" for t in tables}
        self.writers = {}
        self.rows, self.columns, self.chunks = ({t: [] for t in tables} for _ in range(3))
        self.buffered = dict.fromkeys(tables, 0)
        self.written = dict.fromkeys(tables, 0)

    def write(self, table: str, data):
        """Add rows: a list of row dicts, a list of Columns, or a pyarrow table."""
        if isinstance(data, pa.Table):
            if data.num_rows:
                self.chunks[table].append(data)
            self.buffered[table] += data.num_rows
        elif data and isinstance(data[0], Columns):
            self.columns[table].extend(data)
            self.buffered[table] += sum(c.n for c in data)
        else:
            self.rows[table].extend(data)
            self.buffered[table] += len(data)
        if self.buffered[table] >= self.FLUSH_ROWS:
            self._flush(table)

    def _flush(self, table: str):
        if self.rows[table]:
            self.chunks[table].append(_table(table, self.rows[table]))
            self.rows[table] = []
        if self.columns[table]:
            self.chunks[table].append(_columns_table(table, self.columns[table]))
            self.columns[table] = []
        if not self.chunks[table] and (table in self.writers or not self.all_tables):
            return
        if table not in self.writers:
            self.tmp[table].parent.mkdir(parents=True, exist_ok=True)
            self.writers[table] = pq.ParquetWriter(self.tmp[table], TABLES[table])
        if self.chunks[table]:
            data = pa.concat_tables(self.chunks[table])
            self.writers[table].write_table(data)
            self.written[table] += data.num_rows
        self.chunks[table], self.buffered[table] = [], 0

    def commit(self, commit: catalog_mod.Commit | None = None):
        """Puts every table written in place in one commit (with what ``commit`` already
        holds): readers see all of them or none."""
        for table in self.tables:
            self._flush(table)
        for w in self.writers.values():
            w.close()
        commit = commit or catalog_mod.Commit(self.store.root)
        for table in self.writers:
            name = self.names[table]
            commit.put(table, name, self.tmp[table], self.run_id, self.written[table])
        commit.apply()

    def abort(self):
        for w in self.writers.values():
            with contextlib.suppress(Exception):
                w.close()
        for path in self.tmp.values():
            path.unlink(missing_ok=True)


def _read_report(run_dir: Path, base: Path, writer: _RunWriter, run_id: str, counts: Counts):
    """ReFrame's report.json, or None (missing: the run did not get that far; unreadable:
    quarantined)."""
    path = run_dir / "reframe" / "report.json"
    if not os.path.lexists(path):
        return None
    try:
        report = json.loads(safeio.read_text(path))
        if not isinstance(report, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        reason = f"unreadable ReFrame report: {exc}"
        writer.write("quarantine", [_quarantine_file(run_id, path, base, reason)])
        counts.quarantined += 1
        counts.problems.append(f"{path}: {reason}")
        return None
    return report


def _quarantine_file(run_id, path, base, reason):
    sha = sha256_file(path, follow=False) if Path(path).is_file() else None
    return {"run_id": run_id, "path": _rel(path, base), "sha256": sha, "reason": reason}


def _benchmark_rows(run_dir, base, writer, run_id, report, system, counts, campaign_params):
    output = run_dir / "reframe" / "output"
    cases = _case_by_outputdir(report or {})
    names = ("iomodel.jsonl", "ior.jsonl")
    found = [p for n in names for p in sorted(output.rglob(n))] if output.is_dir() else []
    for path in found:
        case = cases.get(path.parent.relative_to(output).as_posix())
        try:
            lines = safeio.read_text(path).splitlines()
        except OSError as exc:
            lines, problems = [], [str(exc)]
        else:
            if path.name == "ior.jsonl":
                table, (rows, problems) = "ior", ior_rows(lines, run_id, system)
            else:
                table = "iomodel"
                rows, problems = iomodel_rows(lines, run_id, case, system, campaign_params)
            for row in rows:
                row["source_path"] = _rel(path, base)
            writer.write(table, rows)
        if problems:
            reason = "benchmark output lines left out: " + "; ".join(problems)
            writer.write("quarantine", [_quarantine_file(run_id, path, base, reason)])
            counts.quarantined += 1
            counts.problems.append(f"{path}: {reason}")


class LogFile(NamedTuple):
    """A log found in a run or a tree: its path, its path relative to the store's base, lstat
    (never followed: a link is not read), and, once hashed, its sha256; problem: why it is
    quarantined without being read (not a regular file, cannot be hashed)."""

    path: str
    rel: str
    st: os.stat_result
    sha: str | None = None
    problem: str | None = None


_FILE_KINDS = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a FIFO"),
               (stat.S_ISSOCK, "a socket"), (stat.S_ISCHR, "a character device"),
               (stat.S_ISBLK, "a block device"), (stat.S_ISDIR, "a directory"))  # fmt: skip


def _not_regular(st: os.stat_result) -> str | None:
    if stat.S_ISREG(st.st_mode):
        return None
    kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a regular file")
    return f"not read: {kind}, not a regular file"


def scan_logs(folder: Path, base: Path):
    """The folder's Darshan logs (*.darshan, any depth; symlinks, to files or folders, never
    followed) as LogFile items with lstat, in a stable order; a generator: a facility tree is
    walked, not listed into memory first. A *.darshan that is not a regular file comes with its
    problem, to be quarantined without being opened."""
    top, base = str(Path(folder).resolve()), str(Path(base).resolve()).rstrip("/") + "/"
    # the link's path relative to base, not its target's: a slice when top is below base
    rel = (
        (lambda p: p[len(base) :]) if top.startswith(base) else (lambda p: os.path.relpath(p, base))
    )
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        names = sorted(files) + [d for d in dirs if d.endswith(".darshan")]
        for name in names:
            if name.endswith(".darshan"):
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                yield LogFile(path, rel(path), st, problem=_not_regular(st))


def hashed(log: LogFile) -> LogFile:
    """log with its sha256, or with the problem that kept it from being hashed."""
    if log.problem:
        return log
    try:
        return log._replace(sha=sha256_file(log.path, follow=False))
    except OSError as exc:
        return log._replace(problem=f"not read: {exc.strerror or exc}")


def _facts(log: LogFile) -> tuple:
    """What the pool hands the reader with the log: logrows.LOG_FACTS."""
    return log.rel, log.sha, log.st.st_size, log.st.st_mtime_ns


def _read_logs(logs, run_info: dict, writers, pool, counts: Counts, progress=None, task=None):
    """Reads logs (LogFile items) with the pool and writes their rows, or quarantines each one
    that fails with its reason, as they come back; yields the number of logs done after each
    batch. ``writers()`` is the writer to write to at that moment (a tree commits and starts a
    new one every commit_every logs, while the pool still reads)."""
    run_id = run_info["run_id"]

    def readable():
        for log in logs:
            if log.problem:  # never handed to a reader
                _quarantine(writers(), counts, run_id, log.path, _facts(log), log.problem)
                yield None
            else:
                yield log.path, _facts(log)

    for batch in pool.map((item for item in readable() if item), context=run_info):
        writer = writers()
        if batch.payload:
            jobs, files, probes, layouts = batch.payload
            writer.write("jobs", jobs)
            writer.write("files", files)
            writer.write("probes", probes)
            writer.write("lustre", layouts)
            counts.logs_ingested += len(batch.done)
        for (path, facts), reason in batch.failed:
            _quarantine(writer, counts, run_id, path, facts, reason)
        if progress:
            progress.advance(task, len(batch.done) + len(batch.failed))
        yield len(batch.done) + len(batch.failed)


def _quarantine(writer, counts: Counts, run_id: str, path: str, facts: tuple, reason: str):
    rel, sha, size, mtime_ns = facts
    writer.write("quarantine", [{"run_id": run_id, "path": rel, "sha256": sha, "reason": reason,
                                 "size": size, "mtime_ns": mtime_ns}])  # fmt: skip
    counts.quarantined += 1
    counts.problems.append(f"{path}: {reason}")


def _manifest_run_id(run_dir: Path, manifest: dict) -> str:
    run_id = str(manifest.get("run_id") or run_dir.name)
    try:
        return catalog_mod.check_part_name(run_id)
    except catalog_mod.CatalogError as exc:
        raise IngestError(f"{run_dir / 'manifest.json'}: run_id: {exc}") from None


def ingest_run(run_dir, store: Store, pool: ReaderPool, counts: Counts, progress=None) -> bool:
    """Ingest one run directory; returns False when it was skipped (already in the store)."""
    run_dir = Path(run_dir)
    manifest = load_manifest(run_dir)
    run_id = _manifest_run_id(run_dir, manifest)
    base = run_dir.resolve().parent
    manifest_sha = sha256_file(run_dir / "manifest.json")
    old = store.run_row(run_id)
    if old and old.get("manifest_sha256") == manifest_sha:
        counts.runs_skipped += 1
        return False

    effective = manifest.get("effective_config") or {}
    system_config = effective.get("system") if isinstance(effective, dict) else None
    system = manifest.get("system") or (system_config or {}).get("name")
    run_info = {
        "run_id": run_id,
        "campaign": manifest.get("campaign"),
        "system": system,
        "system_config": system_config if isinstance(system_config, dict) else None,
    }

    logs = [hashed(log) for log in scan_logs(run_dir / "darshan", base)]
    elsewhere = store.known_hashes(exclude_run=run_id)
    # Logs this run already has (a re-ingest after the manifest changed) are carried over,
    # unless its tables were written with other columns (an older iostudy): then read again.
    current = old and store.has_current_tables(run_id)
    carried = {g.sha for g in logs if g.sha and g.sha not in elsewhere} if current else set()
    todo, seen = [], set()
    for log in logs:
        if log.sha and (log.sha in elsewhere or log.sha in seen):
            counts.logs_skipped += 1
        else:
            todo.append(log)
        seen.add(log.sha)

    writer = _RunWriter(store, run_id)
    try:
        already = set()
        for table in ("jobs", "files", "probes", "lustre"):
            for chunk in store.old_rows(table, run_id, "log_sha256", carried):
                writer.write(table, chunk)
                if table == "jobs":
                    already |= set(chunk.column("log_sha256").to_pylist())
        for chunk in store.old_rows("quarantine", run_id, "sha256", carried):
            writer.write("quarantine", chunk)
            already |= set(chunk.column("sha256").to_pylist())
        todo = [log for log in todo if log.sha is None or log.sha not in already]
        counts.logs_skipped += len(already)
        task = progress.add_task(run_id, total=len(todo)) if progress else None
        for _ in _read_logs(todo, run_info, lambda: writer, pool, counts, progress, task):
            pass

        report = _read_report(run_dir, base, writer, run_id, counts)
        params = campaign_parameters(manifest)
        if report:
            writer.write("perf", perf_rows(report, run_id, params))
        _benchmark_rows(run_dir, base, writer, run_id, report, system, counts, params)
        writer.write(
            "runs",
            [
                {
                    "run_id": run_id,
                    "campaign": manifest.get("campaign"),
                    "system": system,
                    "started": _timestamp(manifest.get("started")),
                    "finished": _timestamp(manifest.get("finished")),
                    "status": manifest.get("status"),
                    "git_commit": manifest.get("git_commit"),
                    "manifest_path": _rel(run_dir / "manifest.json", base),
                    "manifest_sha256": manifest_sha,
                    "study": manifest.get("study")
                    or ((effective or {}).get("campaign") or {}).get("study"),
                    "git_dirty": manifest.get("git_dirty"),
                    "tool_versions": json.dumps(manifest.get("tool_versions"), sort_keys=True),
                    "ingested": utc_naive(datetime.now(timezone.utc)),
                    "benchmark_versions": json.dumps(
                        manifest.get("benchmark_versions") or {}, sort_keys=True
                    ),
                }
            ],
        )
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    counts.runs_ingested += 1
    return True


# -- a log tree ------------------------------------------------------------------------------

# A facility's log tree (Darshan's <year>/<month>/<day>/ or any layout) is a source like a run:
# its rows carry run_id "logs-<tree name>" and go into parts <run_id>.<NNNNNN>, one part per
# commit: every commit_every logs, and at the end, so that a long ingest keeps what it read.
# Each commit puts the tree's runs row (part <run_id>) in place with the part.
TREE_PREFIX = "logs-"
TREE_STATUS = "log tree"  # a log tree's runs.status
DEFAULT_STUDY = "characterization"
# The tables a log tree fills (no ReFrame report, no benchmark output).
LOG_TABLES = ("jobs", "files", "probes", "lustre", "quarantine")


def is_run_manifest(path: Path) -> bool:
    """Whether path is an iostudy run's manifest.json (a JSON object with a run_id and a
    campaign), not any file of that name a facility's tree may hold."""
    try:
        data = json.loads(safeio.read_text(path))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "run_id" in data and "campaign" in data


def source_kind(path: Path) -> str:
    """ "run" (a run directory: it has an iostudy manifest.json) or "tree" (a folder of logs,
    any depth); raises IngestError for anything else, and for a folder of run directories (each
    must be named: a tree ingest would lose their manifests)."""
    if not path.is_dir():
        raise IngestError(f"{path}: not a directory (give a run directory or a tree of logs)")
    manifest = path / "manifest.json"
    if manifest.is_file() and is_run_manifest(manifest):
        return "run"
    runs = sorted(p.parent.name for p in path.glob("*/manifest.json"))
    if runs:
        shown = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise IngestError(
            f"{path}: holds run directories ({shown}); give them as RUN_DIR arguments "
            f"(e.g. {path}/*) so that their manifests are read"
        )
    if next(scan_logs(path, path), None) is None:
        what = "manifest.json is not an iostudy run manifest" if manifest.exists() else (
            "no manifest.json")  # fmt: skip
        raise IngestError(f"{path}: not a run directory ({what}) and no *.darshan log below it")
    return "tree"


def _tree_index(store: Store, run_id: str) -> dict[str, tuple[int, int, str | None]]:
    """{log path: (size, mtime_ns, sha256)} of every log of the tree already read (ingested or
    quarantined): those whose size and mtime are unchanged are not read, nor even hashed,
    again."""
    con = connect(store.root)
    try:
        rows = con.execute(
            "SELECT log_path, log_size, log_mtime_ns, log_sha256 FROM jobs WHERE run_id = $1 "
            "UNION ALL SELECT path, size, mtime_ns, sha256 FROM quarantine WHERE run_id = $1",
            [run_id],
        ).fetchall()
    except duckdb.BinderException:  # a store written before the columns existed
        return {}
    return {path: (size, mtime, sha) for path, size, mtime, sha in rows}


def _tree_parts(store: Store, run_id: str) -> dict[str, list[str]]:
    """table -> the names of the tree's committed parts in it."""
    catalog = store.catalog()
    return {t: sorted(n for n, p in catalog.parts(t).items() if p.run_id == run_id and n != run_id)
            for t in LOG_TABLES}  # fmt: skip


def _next_part(store: Store, run_id: str) -> int:
    numbers = [int(n.rsplit(".", 1)[1]) for names in _tree_parts(store, run_id).values()
               for n in names if n.rsplit(".", 1)[-1].isdigit()]  # fmt: skip
    return max(numbers, default=0) + 1


def _drop_rewritten(store: Store, run_id: str, paths: set[str], commit: catalog_mod.Commit):
    """Adds to commit the tree's committed parts without the rows of the logs at paths (logs
    rewritten in place since they were read: their new content replaces them)."""
    if not paths:
        return
    parts, catalog = _tree_parts(store, run_id), store.catalog()
    wanted = pa.array(sorted(paths), pa.string())
    old_shas = set()
    for name in parts["jobs"]:
        jobs = pq.read_table(catalog.part_path("jobs", name), columns=["log_path",
                             "log_sha256"])  # fmt: skip
        hit = jobs.filter(pc.is_in(jobs["log_path"], value_set=wanted))
        old_shas |= set(hit["log_sha256"].to_pylist())
    shas = pa.array(sorted(old_shas), pa.string())
    keys = {"quarantine": ("path", wanted), "jobs": ("log_path", wanted)}
    for table, names in parts.items():
        column, values = keys.get(table, ("log_sha256", shas))
        for name in names:
            _put_filtered(catalog, table, name, run_id, column, values, commit)


def _put_filtered(catalog, table, name, run_id, column, values, commit: catalog_mod.Commit):
    """Adds to commit a copy of the part without the rows whose column is in values (when it
    has any)."""
    data = pq.read_table(catalog.part_path(table, name))
    drop = pc.is_in(data[column], value_set=values)
    if not pc.any(drop).as_py():
        return
    kept = data.filter(pc.invert(drop))
    tmp = catalog.root / table / f"{name}.parquet.tmp"
    pq.write_table(kept, tmp)
    commit.put(table, name, tmp, run_id, kept.num_rows)


def _tree_run_row(run_id: str, tree: Path, base: Path, study, system) -> dict:
    return {"run_id": run_id, "system": system, "status": TREE_STATUS,
            "manifest_path": _rel(tree, base), "study": study,
            "ingested": utc_naive(datetime.now(timezone.utc))}  # fmt: skip


def _tree_run_id(tree: Path, name) -> str:
    run_id = TREE_PREFIX + (name or tree.resolve().name)
    try:
        return catalog_mod.check_part_name(run_id)
    except catalog_mod.CatalogError as exc:
        raise IngestError(f"{tree}: the tree's name (--name): {exc}") from None


def ingest_tree(  # noqa: C901
    tree, store: Store, pool: ReaderPool, counts: Counts, progress=None, name=None,
    study=DEFAULT_STUDY, system=None, commit_every=DEFAULT_COMMIT_EVERY,
) -> bool:  # fmt: skip
    """Ingest the logs of a tree that are new since its last ingest; returns False when there
    were none. A log is new when its path is not in the store with the same size and mtime
    (checked by stat alone) and its content (sha256) is in no run or tree of the store. A log
    rewritten in place (same path, new size or mtime) replaces its earlier rows."""
    tree = Path(tree)
    run_id = _tree_run_id(tree, name)
    base = tree.resolve().parent
    read_before = _tree_index(store, run_id)
    known = store.known_hashes()
    rewritten: set[str] = set()  # found since the last commit: their old rows go with the next
    found = 0
    task = progress.add_task(f"{run_id} (finding new logs)", total=None) if progress else None

    def new_logs():
        """The tree's logs to read, found while the first ones are read; the progress total
        grows with them."""
        nonlocal found
        for log in scan_logs(tree, base):
            size, mtime_ns, old_sha = read_before.get(log.rel, (None, None, None))
            if (size, mtime_ns) == (log.st.st_size, log.st.st_mtime_ns):
                counts.logs_skipped += 1
                continue
            log = hashed(log)
            if log.sha is not None and log.sha == old_sha:  # touched, not changed
                counts.logs_skipped += 1
                continue
            if size is not None:
                rewritten.add(log.rel)
            if log.sha is not None and log.sha in known:  # under another path, or source
                counts.logs_skipped += 1
                continue
            known.add(log.sha)
            found += 1
            if progress:
                progress.update(task, total=found)
            yield log

    system_config = config.load_system(system) if system else None
    run_info = {"run_id": run_id, "campaign": None, "system": system,
                "system_config": system_config}  # fmt: skip
    part = _next_part(store, run_id)

    def part_writer():
        return _RunWriter(store, f"{run_id}.{part:06d}", tables=(*LOG_TABLES, "runs"),
                          all_tables=False, run_id=run_id, names={"runs": run_id})  # fmt: skip

    def commit_part():
        writer.write("runs", [_tree_run_row(run_id, tree, base, study, system)])
        commit = catalog_mod.Commit(store.root)
        _drop_rewritten(store, run_id, rewritten, commit)
        writer.commit(commit)
        rewritten.clear()

    def current_writer():
        return writer

    writer = part_writer()
    try:
        since_commit = 0
        for n in _read_logs(new_logs(), run_info, current_writer, pool, counts, progress, task):
            since_commit += n
            if since_commit >= commit_every:  # keep what is read so far
                commit_part()
                since_commit, part = 0, part + 1
                writer = part_writer()
        if progress:
            progress.update(task, total=found, description=run_id)
        if not found and not rewritten and store.run_row(run_id):
            writer.abort()
            counts.runs_skipped += 1
            return False
        commit_part()
    except BaseException:
        writer.abort()
        raise
    counts.runs_ingested += 1
    return True


# -- imported tables (Slurm accounting, the collectors) -------------------------------------------


def import_parts(store_root, table: str, parts, console) -> str:
    """Writes each (name, rows) of parts with :func:`write_import` under the store's lock, all
    with one imported time, then refreshes the views; returns where the rows went (the part,
    or the table's folder and the number of parts), for the command's last line."""
    store = Store(store_root)
    imported = utc_naive(datetime.now(timezone.utc))
    with store.locked(console):
        written = [write_import(store_root, name, rows, imported, table) for name, rows in parts]
        store.refresh_views(console)
    return str(written[0]) if len(written) == 1 else f"{store.root / table} ({len(written)} parts)"


def write_import(store_root, name: str, rows: list[dict], imported: datetime, table: str) -> Path:
    """Commits rows as the part ``name`` of a table of IMPORTED_TABLES (an import of the same
    name replaces it), each with the imported time; returns the part's file. The caller holds
    the store's lock."""
    schema = TABLES[table]
    catalog_mod.check_part_name(name)
    folder = Path(store_root) / table
    folder.mkdir(parents=True, exist_ok=True)
    data = [{c: r.get(c) for c in schema.names} | {"imported": imported} for r in rows]
    tmp = folder / f"{name}.parquet.tmp"
    try:
        pq.write_table(pa.Table.from_pylist(data, schema), tmp)
        commit = catalog_mod.Commit(Path(store_root))
        commit.put(table, name, tmp, None, len(data))
        return commit.apply().part_path(table, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


# -- queries -------------------------------------------------------------------------------------

_DUCKDB_TYPES = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.uint64(): "UBIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    _TS: "TIMESTAMP",
}


def _sql_string(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def _create_views(con, root: Path):
    """One view per table over the files the store's catalog names (iostudy.store.catalog): what one
    commit made visible, all of it."""
    catalog = catalog_mod.load(root)
    for table, schema in TABLES.items():
        files = [str(p.resolve()) for p in catalog.files(table)]
        # Today's columns, typed, in order; a column added since the store's oldest parts were
        # written reads as null in them (UNION BY NAME: no pass over the files to find out).
        cols = ", ".join(f'CAST(NULL AS {_DUCKDB_TYPES[f.type]}) AS "{f.name}"' for f in schema)
        source = f"SELECT {cols} WHERE false"
        if files:
            listed = ", ".join(_sql_string(f) for f in files)
            source += (
                f" UNION ALL BY NAME SELECT * FROM read_parquet([{listed}], union_by_name = true)"
            )
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS {source}')


def connect(store=paths.STORE) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per table of the store (:data:`TABLES`),
    over the Parquet files as they are now. A store that does not exist gives empty tables."""
    con = duckdb.connect()
    _create_views(con, Path(store))
    return con


def read_table(store, table: str):
    """A whole table as a pandas DataFrame."""
    if table not in TABLES:
        raise KeyError(f"no table {table!r} in the store (tables: {', '.join(TABLES)})")
    return connect(store).execute(f'SELECT * FROM "{table}"').df()


# -- command -------------------------------------------------------------------------------------


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def ingest(
    sources, store_root, jobs=None, timeout=120.0, console=None, tree_options=None,
    limits=DEFAULT_LIMITS,
) -> Counts:  # fmt: skip
    """Ingest run directories and log trees (see :func:`source_kind`) into the store; returns
    the counts. tree_options: keyword arguments of :func:`ingest_tree` (name, study, system,
    commit_every); limits: each log's decompression bounds (darshanlog_worker.Limits)."""
    store = Store(store_root)
    counts = Counts()
    console = console or Console(stderr=True)
    kinds = [(Path(d), source_kind(Path(d))) for d in sources]  # all checked before any is read
    for path, kind in kinds:
        if kind == "run":
            _manifest_run_id(path, load_manifest(path))
    if (tree_options or {}).get("name") and sum(k == "tree" for _, k in kinds) > 1:
        raise IngestError("--name names one log tree; give one LOGTREE per ingest to use it")
    # a commit comes between batches: none larger than the commit interval
    commit_every = (tree_options or {}).get("commit_every") or DEFAULT_COMMIT_EVERY
    batch = max(1, min(READ_BATCH, commit_every))
    # ingest reads no heatmap (read_for_ingest): its region is not inflated beforehand either
    limits = limits._replace(unread=INGEST_UNREAD)
    pool = ReaderPool(read_for_ingest, batch_rows, jobs or default_jobs(), timeout, batch, limits)
    pool.start()  # now, while this process runs one thread: the workers are forked, not spawned
    with pool, store.locked(console):
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        with progress, pool:
            for path, kind in kinds:
                if kind == "run":
                    ingest_run(path, store, pool, counts, progress)
                else:
                    ingest_tree(path, store, pool, counts, progress, **(tree_options or {}))
        # the views change only with the tables: an ingest that added nothing changes nothing
        if counts.runs_ingested or not (store.root / DATABASE).is_file():
            store.refresh_views(console)
    return counts


def ingest_and_report(
    sources, store_root, jobs=None, timeout=120.0, tree_options=None, limits=DEFAULT_LIMITS
) -> int:
    """ingest() with its problems and counts said; the exit status of `iostudy ingest`."""
    console = Console(stderr=True)
    try:
        counts = ingest(sources, store_root, jobs, timeout, console, tree_options, limits)
    except IngestError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for problem in counts.problems:
        console.print(f"quarantined: {problem}", highlight=False, markup=False, soft_wrap=True)
    print(
        f"ingest: store {store_root} ({DATABASE}): runs {counts.runs_ingested} ingested, "
        f"{counts.runs_skipped} skipped; logs {counts.logs_ingested} ingested, "
        f"{counts.logs_skipped} skipped, {counts.quarantined} quarantined"
    )
    return 0


def cmd_ingest(args):
    if args.system:
        try:
            config.load_system(args.system)
        except config.ConfigError as exc:
            print(f"iostudy: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    options = {"name": args.name, "study": args.study, "system": args.system,
               "commit_every": args.commit_every}  # fmt: skip
    return ingest_and_report(
        args.sources, args.store, args.jobs, args.timeout, options, limits_from(args)
    )


def _log_count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a number of logs, at least 1")
    return value


def register(groups) -> None:
    """Adds the ``ingest`` command to the CLI's group subparsers."""
    p = groups.add_parser(
        "ingest",
        help="ingest run directories and trees of Darshan logs into the store",
        description="Read each SOURCE into the Parquet tables of the store (STORE/<table>/"
        "*.parquet, DuckDB views in STORE/store.duckdb). A SOURCE is either a RUN_DIR "
        "(results/<run-id>/: manifest.json, darshan/**/*.darshan, reframe/report.json, "
        "reframe/output/**/{iomodel,ior}.jsonl) or a LOGTREE: any folder of *.darshan logs, at "
        "any depth (a facility's Darshan log directory), of format 3.00 to 3.41 in either byte "
        "order. Incremental: a run whose manifest is unchanged is skipped; a tree's logs already "
        "read (same path, size and mtime) are not even hashed again; a log whose content "
        "(sha256) the store already holds is not read again. Logs are read in worker processes, "
        "one at a time each: a log that cannot be read, or that crashes the reader, is "
        "quarantined with its reason (the quarantine table) and the others go on. The last line "
        "says where things went and the counts.",
    )
    p.add_argument("sources", nargs="+", type=Path, metavar="SOURCE", help="RUN_DIR or LOGTREE")
    add_store_option(p)
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help=f"worker processes reading logs (default {default_jobs()} here: CPUs, at most 4)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SEC",
        help="give up reading one log after SEC seconds and quarantine it (default 120)",
    )
    add_limit_options(p)
    tree = p.add_argument_group("log trees")
    tree.add_argument(
        "--name",
        help="the tree's name in the store: its rows get run_id logs-NAME (default: the "
        "folder's name; give the same name for every ingest of one tree)",
    )
    tree.add_argument(
        "--study",
        default=DEFAULT_STUDY,
        help=f"the study the tree belongs to, for iostudy report build --study "
        f"(default {DEFAULT_STUDY})",
    )
    tree.add_argument(
        "--system",
        help="the system (configs/systems/<SYSTEM>) the logs come from: their system column, "
        "and node counts from its cores per node when Slurm accounting is not imported",
    )
    tree.add_argument(
        "--commit-every",
        type=_log_count,
        default=DEFAULT_COMMIT_EVERY,
        metavar="N",
        help="commit what is read every N logs, so that an interrupted ingest keeps it; a "
        f"commit puts every table's part in place at once (default {DEFAULT_COMMIT_EVERY})",
    )
    p.set_defaults(func=cmd_ingest)
