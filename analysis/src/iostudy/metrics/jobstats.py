"""Per-job I/O characterization (seed 000): one row per job log, from the store's tables.

:func:`job_table` runs one SQL query over ``jobs``, ``files`` and, when it holds rows, ``sched``
(Slurm accounting, :mod:`iostudy.collect.sacct`), so it works on a whole facility's store without
loading the files table into memory. ``iostudy jobs --store STORE --csv`` prints it.

Definitions (module scope: the records of the modules counted; by default the layers that
moved the job's bytes, each byte once (iostudy.logs.modules.DEFAULT_SCOPE): POSIX and STDIO,
which see every byte that reaches a file system, and DFS and DAOS, where the I/O bypassed it;
MPI-IO, HDF5 and PnetCDF are layers above, whose bytes those moved):

- bytes_read, bytes_written: summed over the scope's records.
- io_time_slowest_s: PyDarshan's ``agg_time_by_slowest``: the slowest rank's metadata + read +
  write time over its own (per-rank) records, plus each shared (rank -1) record's slowest-rank
  time (``*_F_SLOWEST_RANK_TIME``), seed 000's definition as Darshan 2.0 made it exact.
- io_time_span_s: seed 000's form, written before Darshan 2.0 kept the slowest rank of a shared
  file: the slowest process's time on its N:N files, or the longest first-open to last-I/O span
  of an N:1 or N:M file, whichever is larger (:mod:`iostudy.metrics.iotime`, the one definition
  the I/O models' throughput uses too).
- agg_perf_mib_s: bytes / MiB / io_time_slowest_s (PyDarshan's ``agg_perf_by_slowest``);
  mib_s_span: bytes / MiB / io_time_span_s.
- mib_s_per_cn (MiB/s/CN, the one definition every table and figure shows): agg_perf_mib_s over
  the job's compute nodes; mib_s_per_cn_span: mib_s_span over them; both null when the nodes
  are unknown. nodes: known or unknown, never assumed (:mod:`iostudy.core.nodecount`): Slurm's
  count when accounting has the job, else the count ingest stored; nodes_source says which
  ("slurm", "tag", "system"; "unknown": nodes null, also for the 1 an older ingest assumed;
  "unrecorded" in stores made before sources were kept).
- md_cost_pct: metadata time as a share of all I/O time, summed over every process (Table IV).
- files, files_per_proc, creates_per_proc (POSIX files opened with a mode, i.e. with O_CREAT),
  seq_pct (POSIX sequential accesses), aligned_pct (POSIX accesses aligned to the file system
  block), mib_per_proc.
- Each file is N:N, N:1 or N:M (:mod:`iostudy.logs.sharing`, the one definition, stored by
  ingest); unique/shared/partial_bytes and _files count them. strategy: the class that moved the
  most bytes, "rank-0" when only rank 0 of a parallel job moved data, "none" when no byte moved
  (:mod:`iostudy.metrics.iotime`).
- io_procs (processes that moved bytes; all of them when a shared file moved bytes) and
  procs_per_file (processes per file, weighted by bytes; all of them for an N:1 file): seed
  003's model coordinates.
- interfaces: every layer the log's modules name (POSIX, STDIO, MPI-IO, HDF5, PnetCDF, DFS,
  DAOS), whatever the scope.
- read_* / write_*: accesses per size bin of the scope's modules that count them (Darshan's
  bins: :mod:`iostudy.logs.sizebins`, each holding its upper edge).
- key_access_size (seed 000's Table V): the size bin with the most accesses of the scope, by
  its label (sizebins.LABELS: "over 100 KiB to 1 MiB"), with their direction: (r), (w) or
  (r+w); empty when the job made no access.
- dxt_segments: the DXT segments the store holds of the log (the dxt table,
  :mod:`iostudy.logs.dxt`): fewer than the log's when they were more than ingest's bound (flags
  says how many were dropped).
- flags: why some of the log's values are stored as null (:mod:`iostudy.logs.plausibility`; JSON).

Totals are summed as HUGEINT (int64 when every one fits below 2^53, else float64): many
plausible values can add up past 2^63.
"""

from __future__ import annotations

from pathlib import Path

from iostudy.collect import sacct
from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.numfmt import MIB, integral
from iostudy.logs import modules, sharing, sizebins
from iostudy.metrics import iotime

pd = deferred("pandas")

CLASS_COLUMNS = [*iotime.CLASS_BYTES.values(), *iotime.CLASS_FILES.values()]
SIZE_COLUMNS = [f"{op}_{b.lower()}" for op in ("read", "write") for b in sizebins.NAMES]
# Totals the query sums: HUGEINT there (SUM of BIGINT), never cast back to BIGINT, where they could
# overflow; int64 here when they are exact (numfmt.integral).
SUMMED = ["bytes_read", "bytes_written", *iotime.CLASS_BYTES.values(), *SIZE_COLUMNS]
# The columns the issue asks for first, then the rest.
COLUMNS = [
    "log_path",
    "jobid",
    "nprocs",
    "nodes",
    "bytes_read",
    "bytes_written",
    "io_time_slowest_s",
    "agg_perf_mib_s",
    "mib_s_per_cn",
    "md_cost_pct",
    "files_per_proc",
    "seq_pct",
    "aligned_pct",
    "mib_per_proc",
    "interfaces",
    "strategy",
    "io_procs",
    "procs_per_file",
    "module",
    "run_id",
    "log_sha256",
    "system",
    "uid",
    "user",
    "account",
    "exe",
    "start",
    "cores",
    "elapsed_s",
    "files",
    "creates_per_proc",
    "nodes_source",
    "io_time_span_s",
    "mib_s_span",
    "mib_s_per_cn_span",
    "key_access_size",
    "unique_bytes",
    "shared_bytes",
    "partial_bytes",
    "unique_files",
    "shared_files",
    "partial_files",
    *SIZE_COLUMNS,
    "dxt_segments",
    "flags",
]

_QUERY = """
WITH f AS (
    SELECT * FROM files WHERE {counted}
),
j AS (
    SELECT jobs.*, s.account, s."user", s.nodes AS sched_nodes, s.cores, s.elapsed_s
    FROM jobs LEFT JOIN ({sched}) s ON s.jobid = jobs.jobid
),
rank_time AS (  -- each rank's time in its own records
    SELECT log_sha256, rank,
           SUM(COALESCE(meta_time, 0) + COALESCE(read_time, 0) + COALESCE(write_time, 0)) AS t
    FROM f WHERE rank >= 0 GROUP BY ALL
),
unique_time AS (
    SELECT log_sha256, MAX(t) AS t FROM rank_time GROUP BY ALL
),
per_file AS (
    SELECT f.log_sha256, record_id,
           any_value(sharing) AS stored_class,
           bool_or(rank = -1) AS reduced,
           COUNT(DISTINCT rank) FILTER (WHERE rank >= 0) AS ranks,
           SUM(bytes_read::HUGEINT + bytes_written) AS bytes,
           bool_or(mode > 0) AS created
    FROM f GROUP BY ALL
),
classed AS (
    SELECT p.*, j.nprocs,
           -- the class ingest stored (iostudy.logs.sharing); the same rule in stores before it
           COALESCE(stored_class, {sharing_sql}) AS class,
           -- an N:1 file is every process's, whatever module's records show fewer ranks
           CASE WHEN class = 'N:1' OR reduced THEN j.nprocs ELSE ranks END AS procs
    FROM per_file p JOIN j USING (log_sha256)
),
by_file AS (
    SELECT log_sha256,
           COUNT(*) AS files,
           COUNT(*) FILTER (WHERE created) AS created_files,
           SUM(bytes * procs) / NULLIF(SUM(bytes), 0) AS procs_per_file
    FROM classed GROUP BY ALL
),
classed_records AS (
    SELECT f.*, c.class, c.nprocs FROM f JOIN classed c USING (log_sha256, record_id)
),
by_class AS (  -- seed 000's file classes and span time (iostudy.metrics.iotime)
    {by_class}
),
movers AS (  -- processes that moved bytes
    SELECT log_sha256, bool_or(rank = -1) AS all_ranks,
           COUNT(DISTINCT rank) FILTER (WHERE rank >= 0) AS ranks
    FROM f WHERE bytes_read > 0 OR bytes_written > 0 GROUP BY ALL
),
by_log AS (
    SELECT log_sha256,
           SUM(bytes_read) AS bytes_read, SUM(bytes_written) AS bytes_written,
           SUM(slowest_rank_time) FILTER (WHERE rank = -1) AS shared_time,
           SUM(meta_time) AS meta, SUM(meta_time + read_time + write_time) AS io,
           SUM(reads::HUGEINT + writes) FILTER (WHERE module = 'posix') AS posix_ops,
           SUM(seq_ops) AS seq_ops, SUM(unaligned) AS unaligned,
           bool_or(module = 'posix') AS has_posix,
           {size_sums}
    FROM f GROUP BY ALL
)
SELECT j.log_path, j.jobid, j.nprocs,
       -- an older ingest's 1 "assumed" is no count
       COALESCE(j.sched_nodes, CASE WHEN j.nodes_source <> 'assumed' OR j.nodes_source IS NULL
                                    THEN j.nodes END) AS nodes,
       CASE WHEN j.sched_nodes IS NOT NULL THEN '{slurm}'
            WHEN j.nodes IS NULL OR j.nodes_source IN ('assumed', '{unknown}') THEN '{unknown}'
            ELSE COALESCE(j.nodes_source, 'unrecorded') END AS nodes_source,
       COALESCE(b.bytes_read, 0) AS bytes_read, COALESCE(b.bytes_written, 0) AS bytes_written,
       COALESCE(u.t, 0) + COALESCE(b.shared_time, 0) AS io_time_slowest_s,
       GREATEST(COALESCE(c.unique_time, 0), COALESCE(c.shared_time, 0)) AS io_time_span_s,
       j.run_id, j.log_sha256, j.system, j.uid, j."user", j.account, j.exe, j.start,
       j.cores, COALESCE(j.elapsed_s, j.run_time) AS elapsed_s, j.modules AS log_modules,
       j.flags,
       COALESCE(fl.files, 0) AS files,
       CASE WHEN b.has_posix THEN fl.created_files END AS created_files,
       100.0 * b.meta / NULLIF(b.io, 0) AS md_cost_pct,
       100.0 * b.seq_ops / NULLIF(b.posix_ops, 0) AS seq_pct,
       100.0 * (1 - b.unaligned / NULLIF(b.posix_ops, 0)) AS aligned_pct,
       {class_cols},
       c.rank0_only, fl.procs_per_file,
       CASE WHEN m.all_ranks THEN j.nprocs ELSE COALESCE(m.ranks, 0) END AS io_procs,
       COALESCE(d.segments, 0) AS dxt_segments,
       {size_cols}
FROM j
LEFT JOIN ({dxt}) d USING (run_id, log_sha256)
LEFT JOIN by_log b USING (log_sha256)
LEFT JOIN unique_time u USING (log_sha256)
LEFT JOIN by_file fl USING (log_sha256)
LEFT JOIN movers m USING (log_sha256)
LEFT JOIN by_class c USING (log_sha256)
ORDER BY j.start, j.log_path
"""

# Slurm accounting rows, one per job id (the latest import wins); empty when none imported.
_NO_SCHED = (
    'SELECT NULL::BIGINT AS jobid, NULL AS account, NULL AS "user", NULL::BIGINT AS nodes, '
    "NULL::BIGINT AS cores, NULL::DOUBLE AS elapsed_s WHERE false"
)


def _has(con, table: str) -> bool:
    """Whether ``con`` has the relation (a store's connection has every table; frames
    registered may not)."""
    return bool(
        con.execute(
            "SELECT count(*) FROM information_schema.tables WHERE table_name = $1", [table]
        ).fetchone()[0]
    )


def _dxt_sql(con) -> str:
    """The DXT segments stored per log (none when ``con`` has no dxt relation)."""
    if not _has(con, "dxt"):
        return "SELECT NULL::VARCHAR AS run_id, NULL::VARCHAR AS log_sha256, 0 AS segments LIMIT 0"
    return "SELECT run_id, log_sha256, COUNT(*) AS segments FROM dxt GROUP BY ALL"


def _sched_sql(con) -> str:
    if not _has(con, "sched"):
        return _NO_SCHED
    return (
        f'SELECT jobid, account, "user", nodes, cores, elapsed_s FROM ({sacct.sched_view_sql()}) '
        "QUALIFY row_number() OVER (PARTITION BY jobid ORDER BY imported DESC NULLS LAST) = 1"
    )


class UnknownModule(BadInput, ValueError):
    """A --module value that names no Darshan module."""


def scope_modules(module: str | None) -> tuple[str, ...]:
    """The store's module tokens a --module value counts (None: the default scope)."""
    if module is None:
        return modules.DEFAULT_SCOPE
    try:
        return (modules.token_of(module),)
    except ValueError as exc:
        raise UnknownModule(f"--{exc}") from None


def _interfaces(names: str | None) -> str:
    names = names if isinstance(names, str) else ""  # null in rows of an older iostudy
    return "+".join(modules.interfaces(names.split("+")))


def job_table(con, module: str | None = None) -> pd.DataFrame:
    """One row per job log (see the module docstring); ``con`` has relations jobs and files
    (and sched, optional): a store's :func:`iostudy.store.store.connect`, or frames registered."""
    scope = scope_modules(module)
    query = _QUERY.format(
        counted=modules.counted(scope),
        sched=_sched_sql(con),
        dxt=_dxt_sql(con),
        sharing_sql=sharing.SQL,
        slurm=nodecount.SLURM,
        unknown=nodecount.UNKNOWN,
        size_sums=", ".join(f"SUM({c}) AS {c}" for c in SIZE_COLUMNS),
        size_cols=", ".join(f"COALESCE(b.{c}, 0) AS {c}" for c in SIZE_COLUMNS),
        by_class=iotime.groups_sql("classed_records", ["log_sha256"]),
        class_cols=", ".join(f"COALESCE(c.{c}, 0) AS {c}" for c in CLASS_COLUMNS),
    )
    df = con.execute(query).df()
    for col in SUMMED:
        df[col] = integral(df[col])
    nprocs = df["nprocs"].where(df["nprocs"] > 0)
    total = df["bytes_read"] + df["bytes_written"]
    nodes = df["nodes"].astype(float)
    nodes = nodes.where(nodes > 0)  # null: unknown, and so is the rate per node
    for form, rate in (("slowest", "agg_perf_mib_s"), ("span", "mib_s_span")):
        time = df[f"io_time_{form}_s"]
        df[rate] = total / MIB / time.where(time > 0)
    df["mib_s_per_cn"] = df["agg_perf_mib_s"] / nodes
    df["mib_s_per_cn_span"] = df["mib_s_span"] / nodes
    df["files_per_proc"] = df["files"] / nprocs
    df["creates_per_proc"] = df["created_files"] / nprocs
    df["mib_per_proc"] = total / MIB / nprocs
    df["procs_per_file"] = df["procs_per_file"].round()
    df["interfaces"] = df["log_modules"].map(_interfaces)
    df["strategy"] = iotime.strategies(df)
    df["key_access_size"] = _key_access_sizes(df)
    df["module"] = "+".join(modules.display(m) for m in scope)
    return df[COLUMNS]


def _key_access_sizes(df: pd.DataFrame) -> list[str]:
    bins = [b.lower() for b in sizebins.NAMES]
    reads = df[[f"read_{b}" for b in bins]].to_numpy(float)
    writes = df[[f"write_{b}" for b in bins]].to_numpy(float)
    best = (reads + writes).argmax(axis=1) if len(df) else []
    labels = list(sizebins.LABELS.values())
    out = []
    for i, b in enumerate(best):
        r, w = reads[i, b], writes[i, b]
        out.append(f"{labels[b]} ({'r+w' if r and w else 'r' if r else 'w'})" if r or w else "")
    return out


class NoJobs(BadInput):
    """A folder that is no store with a jobs table."""


def require_jobs(store) -> None:
    """Raises NoJobs unless ``store`` is a store with a jobs table."""
    if not (Path(store) / "jobs").is_dir():
        raise NoJobs(
            f"{store}: no store here (no jobs table); run "
            "`iostudy ingest SOURCE --store STORE` first"
        )
