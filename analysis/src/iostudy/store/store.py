"""The store: Parquet tables under one catalog, and the DuckDB views they are queried through.

Every table of :data:`TABLES` is a folder ``STORE/<table>/`` of Parquet parts; the catalog
(:mod:`iostudy.store.catalog`, ``STORE/catalog.json``) names the committed ones, so that a
commit of many parts is one atomic rename. DuckDB reads them through views: :func:`connect`
returns a connection that has them, and STORE/store.duckdb holds the same views for ad-hoc
queries (``duckdb STORE/store.duckdb``). :class:`Store` is a store directory: its catalog, its
write lock (one writer at a time, STORE/.lock) and its views.

Run directories and log trees are written by ingest (:mod:`iostudy.store.ingest`); the tables
of what is not a run (Slurm accounting, the storage servers' collectors) by
:mod:`iostudy.store.imports`. This module holds what every writer and every reader shares.

Times are UTC, stored without a time zone. Paths in the tables (manifest_path, log_path,
quarantine path, iomodel source_path) are relative to the folder that holds the run directories
(e.g. ``<run-id>/darshan/...`` for results/<run-id>/...), so that a store stays valid when
results/ moves. A log tree is mostly elsewhere (a facility's log directory): its paths are
relative to the tree's parent folder (``<tree>/2024/1/1/x.darshan``). The runs table's
``source_root`` is that folder as ingest saw it, absolute, for a run directory and a log tree
alike: a report's job page finds its log there wherever results/ is (:data:`LOCAL_COLUMNS`).
"""

from __future__ import annotations

import contextlib
import fcntl
from pathlib import Path

from iostudy.core import paths
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.progress import QUIET, Progress
from iostudy.logs import dxtrows
from iostudy.logs.accessrows import ACCESS_COLUMNS, HEATMAP_COLUMNS
from iostudy.logs.logrows import SIZE_BINS
from iostudy.store import catalog as catalog_mod
from iostudy.store.umask import store_umask_applied

duckdb = deferred("duckdb")
pa = deferred("pyarrow")
pc = deferred("pyarrow.compute")
pq = deferred("pyarrow.parquet")

DATABASE = "store.duckdb"
LOCK = ".lock"


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
            # the folder the run's paths are relative to, absolute, as its last ingest saw it
            ("source_root", pa.string()),
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
            # iostudy.logs.modules' tokens: posix, stdio, mpiio, h5f (HDF5's files), h5d (its
            # datasets), pnetcdf (PnetCDF's files), pnetcdf_var (its variables), dfs, daos
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
            # N:N (one process), N:1 (all), N:M (some): the file's class over all its records
            ("sharing", pa.string()),
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
            ("coll_ops", pa.int64()),  # MPI-IO, PnetCDF's variables: collective reads, writes
            ("indep_ops", pa.int64()),  # MPI-IO, PnetCDF's variables: independent ones
            ("mode", pa.int64()),  # POSIX_MODE: the mode given at open, set when it created
            # what Drishti's triggers read beyond the above: POSIX reads after the previous
            # one's offset, accesses from memory not aligned (POSIX_MEM_NOT_ALIGNED), MPI-IO's
            # (and PnetCDF variables') collective and independent reads
            ("seq_reads", pa.int64()),
            ("unaligned_mem", pa.int64()),
            ("coll_reads", pa.int64()),
            ("indep_reads", pa.int64()),
            # a record shared by all ranks: the ranks that spent the least and the most time
            # on it, their bytes, and the least time (slowest_rank_time: the most)
            ("fastest_rank", pa.int64()),
            ("fastest_rank_bytes", pa.int64()),
            ("slowest_rank", pa.int64()),
            ("slowest_rank_bytes", pa.int64()),
            ("fastest_rank_time", pa.float64()),
            # accesses per size bin (POSIX, DFS, DAOS; MPI-IO's aggregate sizes, HDF5's
            # datasets', PnetCDF's variables'), seed 000's Fig. 9
            *((f"{op}_{b.lower()}", pa.int64()) for op in ("read", "write") for b in SIZE_BINS),
            # an HDF5 dataset's or PnetCDF variable's file (H5D's and PNETCDF_VAR's
            # file_rec_id): the record id of the file's path, the record_id of its h5f or
            # pnetcdf rows (and posix's); null for other modules and H5D version 1 records
            ("file_record_id", pa.uint64()),
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
            ("measures", pa.string()),  # the case's label (iostudy.benchmarks.measures); null: none
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
            ("measures", pa.string()),  # as perf's
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
    # One row per measured point of a component check (fio_check, netbw_check: their
    # components.jsonl; iostudy.benchmarks.components): seed 001's component analysis.
    "components": pa.schema(
        [
            ("run_id", pa.string()),
            ("system", pa.string()),
            ("environ", pa.string()),
            ("repetition", pa.int64()),
            ("check", pa.string()),
            ("component", pa.string()),  # storage, network
            ("target", pa.string()),  # storage: scratch, or a listed target's name
            ("operation", pa.string()),  # write, read, syncwrite; pingpong
            ("block", pa.int64()),  # storage: bytes per request
            ("jobs", pa.int64()),  # storage: processes on the target
            ("iodepth", pa.int64()),  # storage: requests in flight per job
            ("bytes", pa.int64()),  # network: the message size
            ("procs", pa.int64()),
            ("nodes", pa.int64()),
            ("mib_s", pa.float64()),  # one job's, or one pair's
            ("aggregate_mib_s", pa.float64()),  # all jobs', or all pairs' at once
            ("source_path", pa.string()),
            ("log_tags", pa.string()),  # JSON object: the check's tags
        ]
    ),
    # One row per run of seed 004's adaptive benchmark (adaptive_check's adaptive.jsonl;
    # iostudy.benchmarks.adaptive).
    "adaptive": pa.schema(
        [
            ("run_id", pa.string()),
            ("system", pa.string()),
            ("environ", pa.string()),
            ("repetition", pa.int64()),
            ("mode", pa.string()),  # adaptive, mpiio, posix-fpp
            ("adapt", pa.bool_()),  # writers moved (adaptive mode)
            ("interference", pa.bool_()),  # a competing writer on half the targets
            ("writers", pa.int64()),
            ("targets", pa.int64()),
            ("nodes", pa.int64()),
            ("bytes_per_writer", pa.int64()),
            ("bytes", pa.int64()),
            ("seconds", pa.float64()),  # a barrier to the last close
            ("mib_s", pa.float64()),
            ("moves", pa.int64()),  # adaptive writes
            ("index_s", pa.float64()),
            ("target_s", pa.string()),  # JSON list: per target, when its last write closed
            ("writers_per_target", pa.string()),  # JSON list: where the data went
            # JSON list: each target's name, where the files were named onto its GlusterFS brick
            ("target_names", pa.string()),
            ("interferer_targets", pa.string()),  # JSON list: where the competing writer wrote
            ("source_path", pa.string()),
            ("log_tags", pa.string()),  # JSON object: the check's tags
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
    # One row per DXT segment kept of a log: its columns are iostudy.logs.dxtrows.COLUMNS.
    "dxt": pa.schema([(name, getattr(pa, kind)()) for name, kind in dxtrows.COLUMNS]),
    # One row per counter not 0 of each record of a log's job-level modules (BG/Q, APXC,
    # APMPI: iostudy.logs.jobmodules), named as darshan-parser prints it, an integer (value) or
    # a float (fvalue); record: its index among its module's (0: AutoPerf's header); node: its
    # rank's host (APMPI's MPI_PROCESSOR_NAME; else null)
    "jobcounters": pa.schema(
        [
            ("run_id", pa.string()),
            ("log_sha256", pa.string()),
            ("module", pa.string()),
            ("record", pa.int64()),
            ("rank", pa.int64()),
            ("node", pa.string()),
            ("counter", pa.string()),
            ("value", pa.int64()),
            ("fvalue", pa.float64()),
        ]
    ),
    # A log's most common access sizes per module and its heatmap's bins (a job page's): their
    # columns are iostudy.logs.accessrows' ACCESS_COLUMNS and HEATMAP_COLUMNS.
    "accesssizes": pa.schema([(name, getattr(pa, kind)()) for name, kind in ACCESS_COLUMNS]),
    "heatmap": pa.schema([(name, getattr(pa, kind)()) for name, kind in HEATMAP_COLUMNS]),
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
    # One row per device per interval of iostat-mon (iostudy.collect.iostatmonitor), and a row
    # per gap, start and stop record of the monitor (kind): written by `iostudy iostat-mon import`
    # as STORE/iostat/iostat-<host>.parquet, not by ingest (whose part per run stays empty).
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

# A facility's log tree (iostudy.store.ingest_logs) is in the store as a run whose runs row has
# this status and, unless told otherwise, this study; readers tell trees from runs by it.
TREE_STATUS = "log tree"


def is_tree(run: dict) -> bool:
    """Whether a runs row is a log tree (``iostudy ingest LOGROOT``): it has no manifest."""
    return run.get("status") == TREE_STATUS


DEFAULT_STUDY = "characterization"
#: columns that name this machine's folders: of no use at another site, so never exported
#: (iostudy.store.bundle_export) nor imported (iostudy.store.bundlecheck)
LOCAL_COLUMNS = ("source_root",)


class IngestError(BadInput):
    """A run directory cannot be ingested at all (e.g. its manifest is unreadable)."""


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
    def locked(self, progress: Progress = QUIET):
        """Held by every write. Taking it rolls an interrupted commit back (catalog.recover);
        what is created meanwhile gets the store's umask."""
        with store_umask_applied():
            self.root.mkdir(parents=True, exist_ok=True)
            with open(self.root / LOCK, "w") as lock:
                try:
                    fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    progress.note(f"waiting for another write into {self.root} to finish")
                    fcntl.flock(lock, fcntl.LOCK_EX)
                catalog_mod.recover(self.root, TABLES)
                yield

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
        return all(
            p is not None and pq.read_schema(p).names == TABLES[t].names
            for t, p in zip(RUN_TABLES, paths, strict=True)
        )

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

    def refresh_views(self, progress: Progress = QUIET) -> None:
        """write_views, warning when the database could not be updated."""
        problem = self.write_views()
        if problem:
            progress.warn(f"{DATABASE} not updated: {problem}")

    def write_views(self) -> str | None:
        """(Re)create STORE/store.duckdb with one view per table over the Parquet files; returns
        why it could not (e.g. another process holds the database open), else None. The tables
        do not depend on it: :func:`connect` makes its own views."""
        try:
            con = duckdb.connect(str(self.root / DATABASE))
        except duckdb.Error as exc:
            return str(exc).splitlines()[0]
        try:
            _create_views(con, self.catalog())
        finally:
            con.close()
        return None


# -- queries -------------------------------------------------------------------------------------

_DUCKDB_TYPES = {
    pa.string(): "VARCHAR",
    pa.int64(): "BIGINT",
    pa.uint64(): "UBIGINT",
    pa.float64(): "DOUBLE",
    pa.bool_(): "BOOLEAN",
    _TS: "TIMESTAMP",
}


def _create_views(con, catalog: catalog_mod.Catalog):
    """One view per table over the files the store's catalog names (iostudy.store.catalog): what one
    commit made visible, all of it."""
    for table, schema in TABLES.items():
        files = [str(p.resolve()) for p in catalog.files(table)]
        # Today's columns, typed, in order; a column added since the store's oldest parts were
        # written reads as null in them (UNION BY NAME: no pass over the files to find out).
        cols = ", ".join(f'CAST(NULL AS {_DUCKDB_TYPES[f.type]}) AS "{f.name}"' for f in schema)
        source = f"SELECT {cols} WHERE false"
        if files:
            listed = ", ".join("'" + f.replace("'", "''") + "'" for f in files)  # SQL text
            source += (
                f" UNION ALL BY NAME SELECT * FROM read_parquet([{listed}], union_by_name = true)"
            )
        con.execute(f'CREATE OR REPLACE VIEW "{table}" AS {source}')


def connect(store=paths.STORE, catalog=None) -> duckdb.DuckDBPyConnection:
    """An in-memory DuckDB connection with one view per table of the store (:data:`TABLES`),
    over the Parquet files as they are now (or as ``catalog``, a snapshot of the store's, names
    them). A store that does not exist gives empty tables."""
    con = duckdb.connect()
    _create_views(con, catalog or catalog_mod.load(Path(store)))
    return con


def read_table(store, table: str):
    """A whole table as a pandas DataFrame."""
    if table not in TABLES:
        raise KeyError(f"no table {table!r} in the store (tables: {', '.join(TABLES)})")
    return connect(store).execute(f'SELECT * FROM "{table}"').df()
