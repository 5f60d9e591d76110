"""The evidence of diagnosis findings: for each finding of a rule with an
:class:`iostudy.metrics.diagnose_rules.Evidence`, the files with the most of the problem (the top
:data:`TOP_FILES` by the rule's measure, each with it) and the ranks concerned.

The store's files rows are ranked in SQL (DuckDB: a facility's store holds millions of them);
only the few rows per finding that name files and ranks reach pandas, where their texts are
joined a position at a time, not per job.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.metrics.diagnose_rules import RULES

pd = deferred("pandas")

TOP_FILES = 3  # files named per finding
SHOWN_RANKS = 8  # ranks (or runs of ranks) named per finding before "..."

# A rule's files rows of the jobs it fired on (relation ``fired``: log_sha256, job (an integer
# key: the groups below hash no 64-character digest), nprocs), each
# with its part of the problem (``measure``), per file, the top files of each job (``nth`` 0:
# the most of it) and the ranks of their records (``ranked``: all of them, or those with some of
# the problem); then each top file with its job's ranks as text (``ranks``): "all 16", "0 (the
# job's one process)", or runs of consecutive ranks, "0-3, 7 (5 of 16 processes)", or the
# slowest and fastest ranks of the top file (``extremes``).
_QUERY = """
WITH recs AS (
    SELECT job, record_id, rank, slowest_rank, fastest_rank, ({measure})::DOUBLE AS measure
    FROM files JOIN fired USING (log_sha256) WHERE module = '{module}'
),
per_file AS (
    SELECT job, record_id, {per_file} AS measure
    FROM recs {kept} GROUP BY job, record_id HAVING {per_file} > 0
),
top AS (  -- each job's top files: max_by keeps the best few per group, no sort of them all
    SELECT job, unnest(ids) AS record_id, generate_subscripts(ids, 1) - 1 AS nth
    FROM (
        SELECT job, max_by(record_id, {{'m': measure, 'r': -record_id::HUGEINT}},
                                  {most}) AS ids
        FROM per_file GROUP BY job
    )
),
named AS (  -- the paths of the top files only: a path is the widest column
    SELECT DISTINCT job, record_id, path
    FROM files JOIN fired USING (log_sha256) SEMI JOIN top USING (job, record_id)
    WHERE module = '{module}'
),
ranked AS (
    SELECT DISTINCT job, r.rank FROM recs r JOIN top t USING (job, record_id)
    {ranked}
),
spans AS (
    SELECT job, MIN(rank) AS low, MAX(rank) AS high FROM (
        SELECT job, rank,
               rank - row_number() OVER (PARTITION BY job ORDER BY rank) AS run
        FROM ranked WHERE rank >= 0
    ) GROUP BY job, run
),
own AS (
    SELECT job,
           string_agg(CASE WHEN low = high THEN low::VARCHAR ELSE low || '-' || high END, ', '
                      ORDER BY low) FILTER (WHERE k <= {shown}) AS runs,
           COUNT(*) > {shown} AS more, SUM(high - low + 1) AS count
    FROM (SELECT *, row_number() OVER (PARTITION BY job ORDER BY low) AS k FROM spans)
    GROUP BY job
),
extremes AS (
    SELECT job, any_value(r.slowest_rank) || ' (slowest), '
           || any_value(r.fastest_rank) || ' (fastest)' AS text
    FROM recs r JOIN top t USING (job, record_id) WHERE t.nth = 0 AND r.rank < 0
    GROUP BY job
),
ranks AS (
    SELECT job, CASE
        WHEN {extremes} THEN e.text
        WHEN f.nprocs <= 1 THEN '0 (the job''s one process)'
        WHEN EXISTS (SELECT 1 FROM ranked a WHERE a.job = f.job AND a.rank < 0)
            THEN 'all ' || format('{{:,}}', f.nprocs)
        ELSE o.runs || CASE WHEN o.more THEN ', ...' ELSE '' END || ' ('
             || format('{{:,}}', o.count) || ' of ' || format('{{:,}}', f.nprocs)
             || ' processes)'
    END AS ranks
    FROM fired f LEFT JOIN own o USING (job) LEFT JOIN extremes e USING (job)
)
SELECT log_sha256, path, measure, ranks FROM top JOIN per_file USING (job, record_id)
JOIN named USING (job, record_id) JOIN ranks USING (job) JOIN fired USING (job)
"""
# A file's measure from its records': Evidence.agg's
_PER_FILE = {
    "sum": "SUM(measure)",
    "max": "MAX(measure)",
    "spread": "CASE WHEN COUNT(measure) > 1 AND MAX(measure) > 0 "
    "THEN (MAX(measure) - MIN(measure)) / MAX(measure) ELSE 0 END",
}


def with_evidence(con, found: pd.DataFrame, facts: pd.DataFrame, limits: dict) -> pd.DataFrame:
    """``found`` with each finding's ``files`` and ``ranks`` (None: the rule names none, or
    the job has no record of the problem's module)."""
    if found.empty:
        return found
    found = found.copy()
    nprocs = facts.drop_duplicates("log_sha256").set_index("log_sha256")["nprocs"]
    for rule in RULES:
        mine = (found["rule"] == rule.name).to_numpy()
        if rule.evidence is None or not mine.any():
            continue
        logs = found.loc[mine, "log_sha256"]
        files, ranks = _evidence(con, rule.evidence, logs, limits[rule.name], nprocs)
        found.loc[mine, "files"] = _or_none(files.reindex(logs))
        found.loc[mine, "ranks"] = _or_none(ranks.reindex(logs))
    return found


def _or_none(values: pd.Series) -> list:
    return [v if isinstance(v, str) else None for v in values.tolist()]


def _evidence(con, ev, logs: pd.Series, limits: dict, nprocs: pd.Series) -> tuple:
    """Per job log of ``logs`` (the index): the text of its top files, and of their ranks."""
    query = _QUERY.format(
        measure=ev.measure.format(**limits),
        module=ev.module,
        per_file=_PER_FILE[ev.agg],
        kept="" if ev.agg == "spread" else "WHERE measure > 0",  # 0 adds to no sum, no max
        ranked="WHERE r.measure > 0" if ev.agg == "sum" else "",
        most=TOP_FILES,
        shown=SHOWN_RANKS,
        extremes="TRUE" if ev.extremes else "FALSE",
    )
    fired = pd.DataFrame({"log_sha256": logs.to_numpy(), "job": range(len(logs))})
    fired["nprocs"] = nprocs.reindex(fired["log_sha256"]).to_numpy()
    con.register("fired", fired)
    try:
        files = con.execute(query).df()
    finally:
        con.unregister("fired")
    # a job's top files, the most of the problem first (equal ones by path)
    files = files.sort_values(["log_sha256", "measure", "path"], ascending=[True, False, True])
    files["nth"] = files.groupby("log_sha256", sort=False).cumcount()
    files["text"] = files["path"] + " (" + files["measure"].map(ev.shown) + ")"
    ranks = files.loc[files["nth"] == 0].set_index("log_sha256")["ranks"]
    return _joined(files, TOP_FILES, "; "), ranks


def _joined(parts: pd.DataFrame, most: int, sep: str) -> pd.Series:
    """Per job log, the ``text`` of its parts in the order of ``nth`` (0, 1, ... below
    ``most``), joined: one vectorized step per position."""
    out = parts.loc[parts["nth"] == 0].set_index("log_sha256")["text"]
    for nth in range(1, most):
        more = parts.loc[parts["nth"] == nth].set_index("log_sha256")["text"]
        out = out + (sep + more).reindex(out.index).fillna("")
    return out
