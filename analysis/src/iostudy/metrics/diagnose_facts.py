"""What the diagnosis rules (:mod:`iostudy.metrics.diagnose_rules`) read: one row of facts per
job log, and the files rows behind a finding (its evidence), from the store in one SQL query each.

A job's facts are :func:`iostudy.metrics.jobstats.job_table`'s columns and the counters below,
summed as Drishti 0.8 sums Darshan's (its handle_darshan.py): POSIX's accesses, their sizes
(Darshan's bins: "small" is at most 1 MiB, the bins 0_100 to 100K_1M), alignment in the file and
in memory, sequential reads and writes; the records shared by all ranks (rank -1) with their
slowest and fastest ranks; per file not shared by all, the spread of its ranks' bytes; MPI-IO's
collective and independent reads and writes; STDIO's bytes. A time stored as null (a value
Darshan wrote wrong, such as -2e-304 s) counts as none in a sum of times, as Drishti reads it.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.logs import modules
from iostudy.metrics import jobstats

pd = deferred("pandas")

# A record shared by all ranks (rank -1): how far apart its slowest and fastest ranks are, as a
# share of the file's bytes, or of its I/O time (Drishti P18, P19); the job facts take each
# job's largest, the rules' evidence each file's.
SHARED_BYTES_APART = (
    "ABS(slowest_rank_bytes - fastest_rank_bytes) / NULLIF(bytes_read::DOUBLE + bytes_written, 0)"
)
SHARED_TIME_APART = (
    "ABS(slowest_rank_time - fastest_rank_time)"
    " / NULLIF(read_time + write_time + COALESCE(meta_time, 0), 0)"
)

# A file's records' spread of a value (Drishti P21, P22's): (max - min) / max, 0 for a file of
# one record or none of it; ``{x}``: the value (null in a record: left out).
SPREAD = (
    "CASE WHEN COUNT({x}) > 1 AND MAX({x}) > 0 THEN (MAX({x}) - MIN({x})) / MAX({x}) ELSE 0 END"
)

# Per log, what job_table does not give (POSIX unless named): see the module docstring.
_COUNTERS = """
WITH rank_bytes AS (
    SELECT log_sha256, rank, SUM(bytes_read::HUGEINT + bytes_written) AS bytes
    FROM files f WHERE {counted} AND rank >= 0 GROUP BY ALL
    HAVING SUM(bytes_read::HUGEINT + bytes_written) > 0
),
ranks AS (
    SELECT log_sha256, COUNT(*) AS ranks_moving, MAX(bytes) AS busiest_bytes,
           MIN(bytes) AS idlest_bytes, arg_max(rank, bytes) AS busiest_rank,
           arg_min(rank, bytes) AS idlest_rank
    FROM rank_bytes GROUP BY ALL
),
file_spread AS (
    SELECT log_sha256, record_id,
           {written_spread} AS w, {read_spread} AS r
    FROM files WHERE module = 'posix' AND rank >= 0 GROUP BY ALL HAVING COUNT(*) > 1
),
spread AS (
    SELECT log_sha256, MAX(w) AS write_spread, MAX(r) AS read_spread FROM file_spread GROUP BY ALL
)
SELECT f.log_sha256,
    SUM(reads) FILTER (WHERE module = 'posix') AS posix_reads,
    SUM(writes) FILTER (WHERE module = 'posix') AS posix_writes,
    SUM(small_reads) FILTER (WHERE module = 'posix') AS small_reads,
    SUM(small_writes) FILTER (WHERE module = 'posix') AS small_writes,
    SUM(unaligned) FILTER (WHERE module = 'posix') AS unaligned,
    SUM(unaligned_mem) FILTER (WHERE module = 'posix') AS unaligned_mem,
    SUM(seq_reads) FILTER (WHERE module = 'posix') AS seq_reads,
    SUM(seq_ops - seq_reads) FILTER (WHERE module = 'posix') AS seq_writes,
    SUM(reads) FILTER (WHERE module = 'posix' AND rank = -1) AS shared_reads,
    SUM(writes) FILTER (WHERE module = 'posix' AND rank = -1) AS shared_writes,
    SUM(small_reads) FILTER (WHERE module = 'posix' AND rank = -1) AS shared_small_reads,
    SUM(small_writes) FILTER (WHERE module = 'posix' AND rank = -1) AS shared_small_writes,
    SUM(bytes_read::HUGEINT + bytes_written) FILTER (WHERE module = 'stdio') AS stdio_bytes,
    SUM(bytes_read::HUGEINT + bytes_written) FILTER (WHERE module = 'posix') AS posix_bytes,
    SUM(bytes_read::HUGEINT + bytes_written) FILTER (WHERE module = 'mpiio') AS mpiio_bytes,
    SUM(meta_time) FILTER (WHERE {counted}) AS meta_s,
    MAX(meta_time) FILTER (WHERE module = 'posix') AS file_meta_s,
    MAX({bytes_apart}) FILTER (WHERE module = 'posix' AND rank = -1) AS shared_size_spread,
    MAX({time_apart}) FILTER (WHERE module = 'posix' AND rank = -1) AS shared_time_spread,
    SUM(coll_reads) FILTER (WHERE module = 'mpiio') AS coll_reads,
    SUM(indep_reads) FILTER (WHERE module = 'mpiio') AS indep_reads,
    SUM(coll_ops - coll_reads) FILTER (WHERE module = 'mpiio') AS coll_writes,
    SUM(indep_ops - indep_reads) FILTER (WHERE module = 'mpiio') AS indep_writes,
    SUM(bytes_read) FILTER (WHERE module = 'posix') AS posix_read_bytes,
    SUM(max_byte + 1) FILTER (WHERE module = 'posix' AND bytes_read > 0) AS read_extent,
    SUM(bytes_written) FILTER (WHERE module = 'posix') AS posix_write_bytes,
    SUM(max_byte + 1) FILTER (WHERE module = 'posix' AND bytes_written > 0) AS write_extent,
    any_value(r.ranks_moving) AS ranks_moving, any_value(r.busiest_bytes) AS busiest_bytes,
    any_value(r.idlest_bytes) AS idlest_bytes, any_value(r.busiest_rank) AS busiest_rank,
    any_value(r.idlest_rank) AS idlest_rank,
    any_value(s.write_spread) AS write_spread, any_value(s.read_spread) AS read_spread
FROM files f LEFT JOIN ranks r USING (log_sha256) LEFT JOIN spread s USING (log_sha256)
GROUP BY ALL
"""


def job_facts(con, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per job log: jobstats.job_table's columns (``jobs`` when the caller has them)
    and the counters the rules read (0 where a log has none; the spreads: null)."""
    jobs = jobstats.job_table(con) if jobs is None else jobs
    if jobs.empty:
        return jobs
    # the records of the layers that moved the bytes (md_cost_pct's, the rank balance's)
    counted = modules.counted(modules.DEFAULT_SCOPE, "f")
    query = _COUNTERS.format(
        counted=counted,
        bytes_apart=SHARED_BYTES_APART,
        time_apart=SHARED_TIME_APART,
        written_spread=SPREAD.format(x="bytes_written"),
        read_spread=SPREAD.format(x="bytes_read"),
    )
    counters = con.execute(query).df()
    facts = jobs.merge(counters, on="log_sha256", how="left")
    spreads = [
        "shared_size_spread",
        "shared_time_spread",
        "write_spread",
        "read_spread",
        "busiest_rank",
        "idlest_rank",
    ]
    numeric = counters.columns.drop(["log_sha256", *spreads])
    facts[numeric] = facts[numeric].astype(float).fillna(0)
    facts[spreads] = facts[spreads].astype(float)
    return facts


def code_of(exe: pd.Series) -> pd.Series:
    """Each job's code: its executable's file name, the first word of Darshan's exe line
    (null: none)."""
    exe = exe.astype(object)
    first = exe.where(exe.map(lambda e: isinstance(e, str))).str.split().str[0]
    return first.str.rsplit("/", n=1).str[-1]
