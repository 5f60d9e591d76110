"""Metrics: pure functions from store tables (pandas DataFrames) to metric tables.

- :func:`io_time`: seed 000's aggregate I/O time of a group of records (section II-D) in its
  own form, as :mod:`iostudy.metrics.iotime` defines it for the job table too (io_time_span_s):
  the larger of the unique-file form, the slowest process's total (metadata + read + write)
  time over its N:N files, and the shared-file form, the longest elapsed time of an N:1 or N:M
  file from its first open to the end of its last I/O (the classes:
  :mod:`iostudy.logs.sharing`, stored by ingest). A job's MiB/s/CN is defined once, in
  :mod:`iostudy.metrics.jobstats`.
- :func:`model_throughput` and :func:`table1_crosscheck`: the same computation per I/O model of
  the seed-003 benchmark (its files live in a directory ``n<n>-p<p>-f<f>-m<m>/``), for write
  only, against the benchmark's own write_mib_s: seed 000's Table I check (within 3%).
- :func:`ior_log_bandwidth` and :func:`ior_crosscheck`: the same check for every run of
  ior_check: per operation, the bytes of IOR's test files over the larger of the slowest rank's
  write (or read) time and the span from the first to the last, against IOR's own bandwidth.
- :func:`iomodel_histogram`: seed 003's 2D histograms, bins of log2(processes doing I/O) x
  log2(processes per file), reduced with the maximum of write throughput and of throughput per
  node-hour.

:func:`compute_all` runs them on a store; ``iostudy metrics --store STORE --out DIR`` writes
each as DIR/<name>.csv.
"""

from __future__ import annotations

import json
from pathlib import Path

from iostudy.core import checknames
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB, integral
from iostudy.logs import modules, sharing
from iostudy.metrics import iotime, jobstats

np = deferred("numpy")
pd = deferred("pandas")

SECONDS_PER_HOUR = 3600.0
# Seed 000 found the Darshan-derived bandwidth within 3% of the benchmark's.
TABLE1_TOLERANCE = 0.03
# The benchmark's names of the models Table I compares (file per process, N-N; shared, N-1).
TABLE1_MODELS = ("file-per-process", "single-shared-file")
# The I/O model's directory in a file path: .../n<n>-p<p>-f<f>-m<m>/file<k>.dat
MODEL_DIR = r"(?:^|/)n(?P<n>\d+)-p(?P<p>\d+)-f(?P<f>\d+)-m(?P<m>\d+)/"

JOB_KEYS = ["run_id", "log_sha256"]
MODEL_KEYS = ["n", "p", "f", "m"]
# Totals of bytes and counts are summed as float64 (numfmt.integral): exact up to 2^53 (8 PiB),
# rounded beyond, never wrapped around as int64 sums silently are (a store's values are each
# below 2^62, iostudy.logs.plausibility, but many of them add up past 2^63).


def with_sharing(files: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """``files`` with each row's ``sharing`` class (:mod:`iostudy.logs.sharing`): as ingest
    stored it, or by the same rule over the rows given for rows of stores made before it."""
    missing = files["sharing"].isna() if "sharing" in files.columns else None
    if missing is not None and not missing.any():
        return files
    logs = files["log_sha256"].astype("category")
    nprocs = jobs.drop_duplicates("log_sha256").set_index("log_sha256")["nprocs"]
    of_log = nprocs.reindex(logs.cat.categories).fillna(0).to_numpy(np.int64)
    index = sharing.classes(
        logs.cat.codes.to_numpy(np.int64),
        files["record_id"].to_numpy(np.uint64),
        files["rank"].to_numpy(np.int64),
        of_log,
    )
    computed = pd.Series(np.array(sharing.CLASSES)[index], index=files.index)
    out = files.copy()
    out["sharing"] = computed if missing is None else files["sharing"].where(~missing, computed)
    return out


def io_time(files: pd.DataFrame, jobs: pd.DataFrame, keys, kind: str = "both") -> pd.DataFrame:
    """Bytes and aggregate I/O time per group of ``keys`` (seed 000, section II-D), as
    :mod:`iostudy.metrics.iotime` defines them for the job table too.

    files: rows of the store's files table (at least the keys, log_sha256, rank, record_id,
    open_start, the byte, time and end columns of ``kind``; sharing when stored,
    :func:`with_sharing`); jobs: their jobs rows (log_sha256, nprocs). kind: "both" (read +
    write), "write" or "read". Returns keys + bytes, unique_bytes (N:N files), shared_bytes
    (N:1), partial_bytes (N:M), unique_files, shared_files, partial_files, unique_time
    (slowest process over its N:N files), shared_time (longest first-open-to-last-I/O-end of
    an N:1 or N:M file), io_time (the larger), strategy, mib_s (NaN when io_time is 0).
    """
    import duckdb

    keys = list(keys)
    nprocs = jobs.drop_duplicates("log_sha256")[["log_sha256", "nprocs"]]
    records = with_sharing(files, jobs).rename(columns={"sharing": "class"})
    records = records.merge(nprocs, on="log_sha256", how="left", suffixes=("_", ""))
    con = duckdb.connect()
    con.register("records", records)
    order = ", ".join(keys)
    out = con.execute(f"{iotime.groups_sql('records', keys, kind)} ORDER BY {order}").df()
    for col in ("bytes", *iotime.CLASS_BYTES.values()):
        out[col] = integral(out[col].astype(float).fillna(0))
    for col in iotime.CLASS_FILES.values():
        out[col] = out[col].fillna(0).astype("int64")
    out["io_time"] = out[["unique_time", "shared_time"]].max(axis=1)
    out["strategy"] = iotime.strategies(out)
    out["mib_s"] = (out["bytes"] / MIB / out["io_time"].where(out["io_time"] > 0)).astype(float)
    return out[keys + _IO_TIME_COLUMNS]


_IO_TIME_COLUMNS = [
    "bytes",
    "unique_bytes",
    "unique_files",
    "unique_time",
    "shared_bytes",
    "shared_files",
    "partial_bytes",
    "partial_files",
    "shared_time",
    "io_time",
    "strategy",
    "mib_s",
]


def model_of_path(paths: pd.Series) -> pd.DataFrame:
    """n, p, f, m of each path from its I/O-model directory (nullable ints; NA elsewhere)."""
    found = paths.astype("string").str.extract(MODEL_DIR)
    return found.astype("Int64")


def model_throughput(
    files: pd.DataFrame, jobs: pd.DataFrame, scope=modules.DEFAULT_SCOPE, kind: str = "write"
) -> pd.DataFrame:
    """Throughput per job and I/O model derived from the logs: :func:`io_time` over the files
    of each model directory (kind "write" by default, the benchmark's timed phase), of the
    modules of ``scope`` (by default the layers that moved the bytes, as a job's totals count
    them: iostudy.logs.modules.counted; MPI-IO above POSIX would count them twice).

    Returns run_id, log_sha256, n, p, f, m, the job's system, repetition, environ, nodes when
    present, and bytes, unique_time, shared_time, io_time, strategy, mib_s.
    """
    sel = files[files["module"].isin(scope)] if "module" in files.columns else files
    sel = pd.concat(
        [sel.reset_index(drop=True), model_of_path(sel["path"]).reset_index(drop=True)], axis=1
    )
    agg = io_time(sel.dropna(subset=MODEL_KEYS), jobs, JOB_KEYS + MODEL_KEYS, kind)
    job_cols = [c for c in ("system", "repetition", "environ", "nodes") if c in jobs.columns]
    out = agg.merge(jobs[JOB_KEYS + job_cols], on=JOB_KEYS, how="left")
    return out[
        JOB_KEYS
        + MODEL_KEYS
        + job_cols
        + [c for c in agg.columns if c not in JOB_KEYS + MODEL_KEYS]
    ]


_TABLE1_KEYS = ["run_id", *MODEL_KEYS, "bytes", "repetition"]
_TABLE1_COLUMNS = [
    "run_id",
    "system",
    "environ",
    "repetition",
    "model",
    *MODEL_KEYS,
    "io_procs",
    "procs_per_file",
    "nodes",
    "bytes",
    "write_seconds",
    "write_mib_s",
    "derived_seconds",
    "derived_mib_s",
    "rel_diff",
    "within_tolerance",
    "log_sha256",
]


def _match_keys(bench: pd.DataFrame, models: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    """The benchmark rows and the derived ones with their match keys of one type (nullable
    ints) and the derived side's own columns renamed."""
    derived = models.rename(
        columns={
            "mib_s": "derived_mib_s",
            "io_time": "derived_seconds",
            "environ": "job_environ",
            "system": "job_system",
            "nodes": "job_nodes",
        }
    ).copy()
    for col in _TABLE1_KEYS[1:]:
        bench[col] = bench[col].astype("Int64")
        if col in derived.columns:
            derived[col] = derived[col].astype("Int64")
        else:
            derived[col] = pd.array([pd.NA] * len(derived), dtype="Int64")
    if "job_environ" not in derived.columns:
        derived["job_environ"] = None
    return bench, derived


def judged(within: pd.Series, derived: pd.Series) -> pd.Series:
    """A cross-check's verdict as a reader takes it: within_tolerance where the log gave a
    derived value, missing (not judged) where no log did."""
    return within.astype("boolean").mask(derived.isna())


def table1_crosscheck(
    models: pd.DataFrame,
    iomodel: pd.DataFrame,
    names=TABLE1_MODELS,
    tolerance: float = TABLE1_TOLERANCE,
) -> pd.DataFrame:
    """Seed 000's Table I check: the benchmark's write MiB/s against the one derived from the
    logs (:func:`model_throughput`), per benchmark row of the named models (None: all).

    Rows match on run_id, n, p, f, m, bytes (the logs' bytes written in the model directory),
    repetition, and environ when both sides know it. Returns run_id, system, environ,
    repetition, model, n, p, f, m, io_procs, procs_per_file, nodes, bytes, write_seconds,
    write_mib_s (benchmark), derived_seconds, derived_mib_s, rel_diff ((derived - benchmark) /
    benchmark), within_tolerance, log_sha256. A benchmark row without a matching log has NaN
    derived values and within_tolerance False.
    """
    bench = iomodel if names is None else iomodel[iomodel["model"].isin(list(names))]
    bench, derived = _match_keys(bench.copy(), models)
    bench["_row"] = range(len(bench))
    found = ["derived_seconds", "derived_mib_s", "log_sha256"]
    cand = bench[["_row", "environ", *_TABLE1_KEYS]].merge(
        derived[[*_TABLE1_KEYS, "job_environ", *found]], on=_TABLE1_KEYS, how="inner"
    )
    # Jobs of another MPI flavour (when both sides say which) are not candidates.
    clash = (
        cand["environ"].notna()
        & cand["job_environ"].notna()
        & (cand["environ"].astype("string") != cand["job_environ"].astype("string"))
    )
    cand = cand[~clash.fillna(False).astype(bool)]
    out = bench.merge(cand[["_row", *found]], on="_row", how="left").drop(columns="_row")
    out["rel_diff"] = (out["derived_mib_s"] - out["write_mib_s"]) / out["write_mib_s"]
    out["within_tolerance"] = (out["rel_diff"].abs() <= tolerance).fillna(False).astype(bool)
    return out[[c for c in _TABLE1_COLUMNS if c in out.columns]].reset_index(drop=True)


# ior_check's test files: -o <dir>/testfile; with a file per process IOR appends .<8-digit rank>.
IOR_TEST_FILE = r"(?:^|/)testfile(?:\.\d{8})?$"
# Where IOR's bytes show: POSIX calls for the POSIX API, MPI-IO for the others (HDF5 and PnetCDF
# write through MPI-IO; their POSIX calls beneath would count collective buffering's bytes).
IOR_MODULE = {"POSIX": "posix"}
# The libraries' own file records, whose first open and last close bracket what IOR times for
# HDF5 and PnetCDF: their work before MPI_File_open and after MPI_File_close, and not the MPI-IO
# open and close IOR adds after each phase to learn the file's size.
IOR_FILE_MODULE = {"HDF5": "h5f", "NCMPI": "pnetcdf"}
IOR_OPERATIONS = {"write": ("bytes_written", "write_time"), "read": ("bytes_read", "read_time")}


_IOR_FOUND = ["log_bytes", "busy_seconds", "span_seconds", "log_seconds", "log_mib_s"]
_IOR_LOG_COLUMNS = ["run_id", "log_sha256", "tags", "api", "module", "operation", *_IOR_FOUND]


def ior_log_bandwidth(files: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """Per ior_check log and operation, the bandwidth the log gives: bytes of IOR's test files,
    in the API's module, over the operation's time, the larger of two lower bounds of it:

    - busy: the slowest rank's write (or read) time on the files (seed 000: the time of the
      slowest process). It includes fsync (-e), as IOR's time does, but not the library's
      work between calls (HDF5's and PnetCDF's own, ~3-5 ms per phase here).
    - span: seed 000's shared-file form, from the start of the first open to the end of the
      last write (read) over all ranks, when the log is of that phase alone (ior_check
      launches each phase apart and tags its log with it: a log records only a file's first
      open). It includes opening the files and the work between calls, not a final fsync.
      For HDF5 and PnetCDF, when the log has their file-level records (H5F, PNETCDF_FILE), it
      runs from the library's first open to its last close: their collective open and close
      across nodes took up to a third of a read phase, partly outside any MPI-IO call. In a
      log of both phases the span starts at the first write (read) instead.

    The slowest rank's metadata time is left out: IOR also opens its files outside the timed
    phases (with MPI-IO a collective open and close after each, to learn the file's size).
    The busy form needs a record per rank: ior_check keeps them for the shared file too
    (DARSHAN_DISABLE_SHARED_REDUCTION); a log whose test files were reduced to rank -1 records
    has NaN seconds. A log of one phase has a row of that operation only, a log of both a row
    of each. Returns run_id, log_sha256, tags (the log's), api, module, operation, log_bytes,
    busy_seconds, span_seconds, log_seconds, log_mib_s.
    """
    ior_jobs = jobs[jobs["check"] == checknames.IOR.name]
    rows = []
    test_files = files[files["path"].fillna("").str.contains(IOR_TEST_FILE, regex=True)]
    by_log = dict(tuple(test_files.groupby("log_sha256")))
    for job in ior_jobs.itertuples(index=False):
        tags = json.loads(job.tags or "{}")
        api = tags.get("api", "POSIX")
        module = IOR_MODULE.get(api, "mpiio")
        of_log = by_log.get(job.log_sha256, test_files.iloc[:0])
        mine = of_log[of_log["module"] == module]
        library = of_log[of_log["module"] == IOR_FILE_MODULE.get(api)]
        phase = tags.get("phase")
        for op in IOR_OPERATIONS:
            if phase not in (None, op):
                continue
            base = {
                "run_id": job.run_id,
                "log_sha256": job.log_sha256,
                "tags": job.tags,
                "api": api,
                "module": module,
                "operation": op,
            }
            rows.append(base | _ior_phase_bandwidth(mine, library, op, phase == op))
    return pd.DataFrame(rows, columns=_IOR_LOG_COLUMNS)


def _ior_phase_bandwidth(mine, library, op: str, own_log: bool) -> dict:
    """One operation's log_bytes, busy_seconds, span_seconds, log_seconds and log_mib_s from
    the test files' records of the API's module (``mine``) and of its library (``library``);
    own_log: the log is of that phase only (it holds the phase's opens)."""
    byte_col, time_col = IOR_OPERATIONS[op]
    nbytes = int(mine[byte_col].astype(float).sum())
    per_rank = mine[time_col].fillna(0).groupby(mine["rank"]).sum()
    reduced = bool((mine["rank"] == -1).any())
    busy = float(per_rank.max()) if len(per_rank) and not reduced else np.nan
    moved = mine[mine[byte_col].fillna(0) > 0]
    if own_log and len(library) and library["close_end"].notna().all():
        span = float(library["close_end"].max() - library["open_start"].min())
    else:  # seed 000's form from the phase's first open; in a log of both, its first I/O
        starts = mine["open_start"] if own_log else moved.get(f"{op}_start")
        span = (
            float(moved[f"{op}_end"].max() - starts.min())
            if len(moved) and starts is not None and starts.notna().all()
            else np.nan
        )
    seconds = np.nan if np.isnan(busy) else float(np.nanmax([busy, span]))
    return {
        "log_bytes": nbytes,
        "busy_seconds": busy,
        "span_seconds": span,
        "log_seconds": seconds,
        "log_mib_s": nbytes / MIB / seconds if nbytes and seconds > 0 else np.nan,
    }


def _log_of_run(log_tags: str, jobs: pd.DataFrame):
    """The log_sha256 of the one job whose tags include every tag of an IOR run (None when no
    job, or more than one, has them: the run's results cannot be told apart)."""
    wanted = json.loads(log_tags).items()
    found = [
        job.log_sha256
        for job in jobs.itertuples(index=False)
        if wanted <= json.loads(job.tags or "{}").items()
    ]
    return found[0] if len(found) == 1 else None


# An IOR run of ior_check, one operation: what ior_crosscheck matches a log to
_IOR_RUN_KEYS = [
    "run_id",
    "log_tags",
    "system",
    "environ",
    "repetition",
    "api",
    "layout",
    "target",
    "transfer_size",
    "block_size",
    "procs",
    "nodes",
    "operation",
]


def _ior_runs(ior: pd.DataFrame) -> pd.DataFrame:
    """IOR's own figures per run and operation (the ior table's rows are its iterations):
    iterations, ior_bytes, ior_seconds (their sums), ior_mean_mib_s and ior_mib_s (the bytes
    over the seconds)."""
    runs = (
        ior.astype({"aggregate_bytes": float})
        .groupby(_IOR_RUN_KEYS, dropna=False)
        .agg(
            iterations=("iteration", "nunique"),
            ior_bytes=("aggregate_bytes", "sum"),
            ior_seconds=("total_s", "sum"),
            ior_mean_mib_s=("bw_mib_s", "mean"),
        )
        .reset_index()
    )
    runs["ior_mib_s"] = runs["ior_bytes"] / MIB / runs["ior_seconds"]
    return runs


def ior_crosscheck(
    ior: pd.DataFrame, files: pd.DataFrame, jobs: pd.DataFrame, tolerance=TABLE1_TOLERANCE
) -> pd.DataFrame:
    """Seed 000's Table I check for every run of ior_check and operation: the bandwidth derived
    from the job's log (:func:`ior_log_bandwidth`) against IOR's own over the run's iterations,
    the bytes of all of them over the sum of their times (the log accumulates the iterations;
    ior_mean_mib_s is IOR's mean of the iterations' bandwidths, for reference). A run's log is
    the one whose tags include the run's log_tags (ior_check: its phase's). With several
    iterations the log can only undercut IOR's time: it sums each rank's time over them, while
    IOR adds up the slowest rank of each (a different one each time when the ranks' waits
    vary); hence one iteration per job, repeated, in the campaigns.

    Returns run_id, system, environ, repetition, api, layout, target, transfer_size, block_size,
    procs, nodes, operation, iterations, ior_bytes, ior_seconds, ior_mib_s, ior_mean_mib_s,
    log_bytes, busy_seconds, span_seconds, log_seconds, log_mib_s, rel_diff ((log - IOR) /
    IOR), within_tolerance, log_sha256. A run without a log has NaN log values and
    within_tolerance False.
    """
    runs = _ior_runs(ior)
    derived = ior_log_bandwidth(files, jobs)
    candidates = jobs[jobs["log_sha256"].isin(derived["log_sha256"])]
    runs["log_sha256"] = pd.Series(
        [
            _log_of_run(tags, candidates[candidates["run_id"] == run_id])
            for run_id, tags in zip(runs["run_id"], runs["log_tags"], strict=True)
        ],
        index=runs.index,
        dtype="object",
    )
    found = ["log_sha256", "operation", *_IOR_FOUND]
    out = runs.merge(derived[found], on=["log_sha256", "operation"], how="left")
    out["rel_diff"] = (out["log_mib_s"] - out["ior_mib_s"]) / out["ior_mib_s"]
    out["within_tolerance"] = (out["rel_diff"].abs() <= tolerance).fillna(False).astype(bool)
    ior_cols = ["iterations", "ior_bytes", "ior_seconds", "ior_mib_s", "ior_mean_mib_s"]
    judged_cols = ["rel_diff", "within_tolerance", "log_sha256"]
    keys = [k for k in _IOR_RUN_KEYS if k != "log_tags"]
    return out[[*keys, *ior_cols, *_IOR_FOUND, *judged_cols]]


def iomodel_histogram(iomodel: pd.DataFrame, by=("run_id", "system", "environ", "bytes")):
    """Seed 003's 2D histograms: per group of ``by`` and bin (x = log2 io_procs, y = log2
    procs_per_file), the number of models, the maximum write MiB/s and the maximum throughput per
    node-hour (write_mib_s / (nodes * write_seconds / 3600), MiB/s per node-hour charged).

    Returns by + x_log2_io_procs, y_log2_procs_per_file, io_procs, procs_per_file, models,
    max_write_mib_s, max_mib_s_per_node_hour.
    """
    by = [c for c in by if c in iomodel.columns]
    t = iomodel.copy()
    t["x_log2_io_procs"] = np.log2(t["io_procs"].astype(float)).round().astype("int64")
    t["y_log2_procs_per_file"] = np.log2(t["procs_per_file"].astype(float)).round().astype("int64")
    node_hours = t["nodes"].astype(float) * t["write_seconds"].astype(float) / SECONDS_PER_HOUR
    t["mib_s_per_node_hour"] = t["write_mib_s"] / node_hours.where(node_hours > 0)
    out = (
        t.groupby([*by, "x_log2_io_procs", "y_log2_procs_per_file"], dropna=False)
        .agg(
            io_procs=("io_procs", "first"),
            procs_per_file=("procs_per_file", "first"),
            models=("write_mib_s", "size"),
            max_write_mib_s=("write_mib_s", "max"),
            max_mib_s_per_node_hour=("mib_s_per_node_hour", "max"),
        )
        .reset_index()
    )
    return out


# -- on a store ----------------------------------------------------------------------------------

_FILE_COLUMNS = (
    "run_id, log_sha256, module, record_id, rank, path, bytes_read, bytes_written, read_time, "
    "write_time, meta_time, open_start, read_end, write_end, shared"
)


def compute_all(con) -> dict[str, pd.DataFrame]:
    """Every metric table from a store connection (:func:`iostudy.store.store.connect`): jobs
    (:func:`iostudy.metrics.jobstats.job_table`: MiB/s/CN and the rest per job), model_throughput,
    table1_crosscheck, ior_crosscheck, iomodel_histogram."""
    counted = modules.counted(modules.DEFAULT_SCOPE)
    files = con.execute(f"SELECT {_FILE_COLUMNS} FROM files WHERE {counted}").df()
    jobs = con.execute("SELECT * FROM jobs").df()
    iomodel = con.execute("SELECT * FROM iomodel").df()
    ior = con.execute("SELECT * FROM ior").df()
    # IOR's logs in every module (MPI-IO runs are judged on their MPI-IO records), with every
    # column: a store ingested before the first and last I/O's start were kept lacks them.
    ior_files = con.execute(
        'SELECT * FROM files WHERE log_sha256 IN (SELECT log_sha256 FROM jobs WHERE "check" = ?)',
        [checknames.IOR.name],
    ).df()
    models = model_throughput(files, jobs)
    return {
        "jobs": jobstats.job_table(con),
        "model_throughput": models,
        "table1_crosscheck": table1_crosscheck(models, iomodel),
        "ior_crosscheck": ior_crosscheck(ior, ior_files, jobs),
        "iomodel_histogram": iomodel_histogram(iomodel),
    }


def write_csvs(tables: dict[str, pd.DataFrame], out: Path) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    paths = []
    for name, table in tables.items():
        path = out / f"{name}.csv"
        table.to_csv(path, index=False)
        paths.append(path)
    return paths


__all__ = [
    "io_time",
    "model_of_path",
    "model_throughput",
    "table1_crosscheck",
    "ior_log_bandwidth",
    "ior_crosscheck",
    "iomodel_histogram",
    "compute_all",
    "write_csvs",
]
