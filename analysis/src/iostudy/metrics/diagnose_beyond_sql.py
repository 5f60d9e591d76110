"""The queries of :mod:`iostudy.metrics.diagnose_beyond`'s rules, over the store's dxt, lustre,
files and sched tables (DuckDB; ``$name``: a threshold, bound as a parameter). Each runs once
over every job of the store: the rules are vectorised, never a query per job.
"""

from __future__ import annotations

# --- DXT ----------------------------------------------------------------------------------

# Each rank's last traced access (any module) against the median rank's (quantile_disc: of an
# even count, the lower), from the job's first traced access: the late ranks.
STRAGGLERS = """
WITH ends AS (
    SELECT log_sha256, rank, MIN(start) AS first_start, MAX("end") AS last_end
    FROM dxt GROUP BY ALL
),
job AS (
    SELECT log_sha256, quantile_disc(last_end, 0.5) AS median_end,
           MIN(first_start) AS first_start, COUNT(*) AS traced
    FROM ends GROUP BY ALL HAVING COUNT(*) >= 2
),
late AS (
    SELECT e.log_sha256, e.rank, e.last_end, j.median_end, j.traced
    FROM ends e JOIN job j USING (log_sha256)
    WHERE e.last_end - j.median_end > GREATEST($seconds, $share * (j.median_end - j.first_start))
)
"""
LATE = STRAGGLERS + "SELECT * FROM late"
# the late ranks' files: their seconds of I/O after the median rank's end
LATE_FILES = (
    STRAGGLERS
    + """
SELECT d.log_sha256, d.path, SUM(d."end" - GREATEST(d.start, l.median_end)) AS seconds
FROM dxt d JOIN late l USING (log_sha256, rank) WHERE d."end" > l.median_end GROUP BY ALL
"""
)

# Per log, file and rank: its traced POSIX accesses, and those that neither start where the
# previous one (same rank, file, direction) ended nor keep the stride of the two before.
RANDOM = """
WITH seg AS (
    SELECT log_sha256, path, rank, "offset" AS here,
           LAG("offset") OVER w AS before, LAG("offset" + length) OVER w AS before_end,
           LAG("offset", 2) OVER w AS before2
    FROM dxt WHERE module = 'posix' AND "offset" IS NOT NULL
    WINDOW w AS (PARTITION BY log_sha256, record_id, rank, operation
                 ORDER BY start, "end", "offset", length)
)
SELECT log_sha256, path, rank, COUNT(*) AS accesses,
       COUNT(*) FILTER (WHERE before2 IS NOT NULL AND here <> before_end
                        AND here - before <> before - before2) AS random
FROM seg GROUP BY ALL
"""

# The phases of each log's traced POSIX I/O: segments of every rank in start order (numbered,
# so that both windows see one order), a new phase where one starts more than $gap seconds
# after every earlier one ended.
PHASES = """
WITH seg AS (
    SELECT log_sha256, start, "end", length,
           row_number() OVER (PARTITION BY log_sha256
                              ORDER BY start, "end", rank, record_id, "offset", operation) AS n
    FROM dxt WHERE module = 'posix'
),
held AS (
    SELECT *, MAX("end") OVER (PARTITION BY log_sha256 ORDER BY n
                               ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS busy_until
    FROM seg
),
marked AS (
    SELECT *, SUM((busy_until IS NULL OR start > busy_until + $gap)::INTEGER)
              OVER (PARTITION BY log_sha256 ORDER BY n ROWS UNBOUNDED PRECEDING) AS phase
    FROM held
)
SELECT log_sha256, phase, MIN(start) AS start, MAX("end") AS "end", SUM(length) AS bytes
FROM marked GROUP BY ALL ORDER BY log_sha256, phase
"""
# the traced POSIX bytes per file and rank of the logs of the relation beyond_fired
TRACED = """
SELECT log_sha256, path, rank, SUM(length) AS bytes FROM dxt
WHERE module = 'posix' AND log_sha256 IN (SELECT log_sha256 FROM beyond_fired) GROUP BY ALL
"""


def storms(window: float) -> str:
    """Per log, the window of ``window`` seconds from a small access's start that holds the
    most small POSIX accesses (at least $min_count), with those accesses per file and rank.
    (A RANGE frame takes a constant: the validated number is written as a float literal.)"""
    w = repr(float(window))
    return f"""
WITH small AS (
    SELECT log_sha256, path, rank, start FROM dxt WHERE module = 'posix' AND length <= $max_bytes
),
counted AS (
    SELECT log_sha256, start, COUNT(*) OVER (PARTITION BY log_sha256 ORDER BY start
                                             RANGE BETWEEN CURRENT ROW AND {w} FOLLOWING) AS n
    FROM small
),
peak AS (
    SELECT log_sha256, MAX(n) AS n, first(start ORDER BY n DESC, start) AS window_start
    FROM counted GROUP BY ALL HAVING MAX(n) >= $min_count
)
SELECT s.log_sha256, p.window_start, p.n, s.path, s.rank, COUNT(*) AS accesses
FROM small s JOIN peak p ON s.log_sha256 = p.log_sha256 AND s.start >= p.window_start
                          AND s.start <= p.window_start + {w}
GROUP BY ALL
"""


# --- Lustre -------------------------------------------------------------------------------

# Per file with a layout: its OSTs (all components), the first component's stripe count, and
# its POSIX records' size (highest offset + 1), bytes and writers (all_wrote: a record of rank
# -1 that wrote, every rank's).
LAYOUTS = """
WITH layout AS (
    SELECT log_sha256, record_id, COUNT(DISTINCT ost) AS osts, MIN(ost) AS ost,
           arg_min(stripe_count, component) AS first_stripes
    FROM lustre GROUP BY ALL
),
moved AS (
    SELECT log_sha256, record_id, any_value(path) AS path, MAX(max_byte) + 1 AS size,
           SUM(bytes_read::DOUBLE + bytes_written) AS bytes,
           bool_or(rank = -1 AND bytes_written > 0) AS all_wrote,
           COUNT(DISTINCT rank) FILTER (WHERE rank >= 0 AND bytes_written > 0) AS writers
    FROM files SEMI JOIN layout USING (log_sha256, record_id)
    WHERE module = 'posix' GROUP BY ALL
)
SELECT * FROM layout JOIN moved USING (log_sha256, record_id)
"""

# The job's bytes per OST (a file's POSIX bytes split evenly over its OSTs) where the busiest
# OST holds $factor times the mean: the job's figures, and its files' bytes on that OST.
PER_OST = """
WITH stripes AS (SELECT DISTINCT log_sha256, record_id, ost FROM lustre),
per_file AS (SELECT log_sha256, record_id, COUNT(*) AS osts FROM stripes GROUP BY ALL),
moved AS (
    SELECT log_sha256, record_id, any_value(path) AS path,
           SUM(bytes_read::DOUBLE + bytes_written) AS bytes
    FROM files SEMI JOIN per_file USING (log_sha256, record_id)
    WHERE module = 'posix' GROUP BY ALL
),
share AS (
    SELECT s.log_sha256, s.ost, m.path, m.bytes / p.osts AS bytes
    FROM stripes s JOIN per_file p USING (log_sha256, record_id)
    JOIN moved m USING (log_sha256, record_id)
),
per_ost AS (SELECT log_sha256, ost, SUM(bytes) AS bytes FROM share GROUP BY ALL),
fired AS (
    SELECT log_sha256, COUNT(*) AS osts, SUM(bytes) AS total, MAX(bytes) AS busiest,
           first(ost ORDER BY bytes DESC, ost) AS ost
    FROM per_ost GROUP BY ALL
    HAVING COUNT(*) >= $min_osts AND SUM(bytes) >= $min_bytes
       AND MAX(bytes) >= $factor * SUM(bytes) / COUNT(*)
)
SELECT f.*, s.path, s.bytes FROM fired f JOIN share s USING (log_sha256, ost)
"""

# Per OST of the files on one OST alone (their time is that OST's): bytes over read and write
# seconds, against the median OST's of the job; the slow OSTs' records (file, rank, seconds).
SLOW_OST = """
WITH single AS (
    SELECT log_sha256, record_id, MIN(ost) AS ost FROM lustre GROUP BY ALL
    HAVING COUNT(DISTINCT ost) = 1
),
on_ost AS (
    SELECT log_sha256, record_id, s.ost, rank, path,
           bytes_read::DOUBLE + bytes_written AS bytes,
           COALESCE(read_time, 0) + COALESCE(write_time, 0) AS seconds
    FROM files JOIN single s USING (log_sha256, record_id) WHERE module = 'posix'
),
per_ost AS (
    SELECT log_sha256, ost, SUM(bytes) AS bytes, SUM(seconds) AS seconds,
           COUNT(DISTINCT record_id) AS files
    FROM on_ost GROUP BY ALL HAVING SUM(bytes) > 0 AND SUM(seconds) > 0
),
rated AS (
    SELECT *, bytes / seconds AS rate,
           median(bytes / seconds) OVER (PARTITION BY log_sha256) AS median_rate,
           COUNT(*) OVER (PARTITION BY log_sha256) AS osts
    FROM per_ost
),
slow AS (
    SELECT * FROM rated
    WHERE osts >= $min_osts AND rate < $share * median_rate AND seconds >= $min_seconds
)
SELECT s.*, o.path, o.rank, o.seconds AS file_seconds
FROM slow s JOIN on_ost o USING (log_sha256, ost)
"""


# --- Slurm accounting, the facility -------------------------------------------------------


def elapsed(sched_view: str) -> str:
    """Slurm's elapsed seconds per job id, the last import's (as jobstats joins them)."""
    return (
        f"SELECT jobid, elapsed_s FROM ({sched_view}) WHERE elapsed_s IS NOT NULL "
        "QUALIFY row_number() OVER (PARTITION BY jobid ORDER BY imported DESC NULLS LAST) = 1"
    )


# each file's I/O time of the layers counted ({counted}) of the logs of beyond_fired
FILE_TIME = """
SELECT f.log_sha256, f.path,
       SUM(COALESCE(f.read_time, 0) + COALESCE(f.write_time, 0) + COALESCE(f.meta_time, 0))
           AS seconds
FROM files f WHERE ({counted}) AND f.log_sha256 IN (SELECT log_sha256 FROM beyond_fired)
GROUP BY ALL
"""

# Per group ({key} of beyond_jobs: account or code) of $min_jobs jobs or more, each per-job rule
# (diagnosed) on $min_jobs of them or more and on $share of them or more; the group's latest job
# (by start, then sha256), which the finding is attached to.
SPREAD = """
WITH groups AS (
    SELECT {key} AS grp, COUNT(DISTINCT log_sha256) AS jobs,
           first(log_sha256 ORDER BY start DESC NULLS LAST, log_sha256 DESC) AS log_sha256
    FROM beyond_jobs
    WHERE {key} IS NOT NULL GROUP BY ALL HAVING COUNT(DISTINCT log_sha256) >= $min_jobs
),
hits AS (
    SELECT j.{key} AS grp, d.rule, COUNT(DISTINCT d.log_sha256) AS n
    FROM diagnosed d JOIN beyond_jobs j USING (log_sha256) GROUP BY ALL
)
SELECT g.log_sha256, h.rule, h.n, g.jobs FROM hits h JOIN groups g USING (grp)
WHERE h.n >= $min_jobs AND h.n >= $share * g.jobs
ORDER BY g.log_sha256, h.n DESC, h.rule
"""
