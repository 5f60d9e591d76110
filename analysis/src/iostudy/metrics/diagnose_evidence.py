"""The evidence of diagnosis findings: for each finding of a rule with an
:class:`iostudy.metrics.diagnose_rules.Evidence`, the files with the most of the problem (the top
:data:`TOP_FILES` by the rule's measure, each with it) and the ranks concerned.

The store's files rows are ranked in SQL (DuckDB: a facility's store holds millions of them);
only the few rows per finding that name files and ranks reach pandas, where their texts are
joined a position at a time, not per job.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.metrics.diagnose_facts import SPREAD
from iostudy.metrics.diagnose_rules import RULES

pd = deferred("pandas")

TOP_FILES = 3  # files named per finding
SHOWN_RANKS = 8  # ranks (or runs of ranks) named per finding before "..."

# A job's ranks (relation ``ranked``: job, rank; -1: all) as words (``words``: job, text), for
# the jobs of relation ``fired`` (job, nprocs): "all 16", "0 (the job's one process)", or runs
# of consecutive ranks, "0-3, 7 (5 of 16 processes)" (the first SHOWN_RANKS runs, then "...").
_WORDS = f"""
spans AS (
    SELECT job, MIN(rank) AS low, MAX(rank) AS high FROM (
        SELECT job, rank, rank - row_number() OVER (PARTITION BY job ORDER BY rank) AS run
        FROM ranked WHERE rank >= 0
    ) GROUP BY job, run
),
own AS (
    SELECT job,
           string_agg(CASE WHEN low = high THEN low::VARCHAR ELSE low || '-' || high END, ', '
                      ORDER BY low) FILTER (WHERE k <= {SHOWN_RANKS}) AS runs,
           COUNT(*) > {SHOWN_RANKS} AS more, SUM(high - low + 1) AS count
    FROM (SELECT *, row_number() OVER (PARTITION BY job ORDER BY low) AS k FROM spans)
    GROUP BY job
),
words AS (
    SELECT job, CASE
        WHEN f.nprocs <= 1 THEN '0 (the job''s one process)'
        WHEN EXISTS (SELECT 1 FROM ranked a WHERE a.job = f.job AND a.rank < 0)
            THEN 'all ' || format('{{:,}}', f.nprocs)
        WHEN o.runs IS NOT NULL THEN o.runs || CASE WHEN o.more THEN ', ...' ELSE '' END
             || ' (' || format('{{:,}}', o.count) || ' of ' || format('{{:,}}', f.nprocs)
             || ' processes)'
    END AS text
    FROM fired f LEFT JOIN own o USING (job)
)
"""
# A rule's files rows of the jobs it fired on (relation ``fired``: log_sha256, job (an integer
# key: the groups below hash no 64-character digest), nprocs), each with its part of the
# problem (``measure``), per file, the top files of each job (``nth`` 0: the most of it) and
# the ranks of their records (``ranked``: all of them, or those with some of the problem); then
# each top file with its job's ranks in words (_WORDS), or the slowest and fastest ranks of
# the top file (``extremes``).
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
{words},
extremes AS (
    SELECT job, any_value(r.slowest_rank) || ' (slowest), '
           || any_value(r.fastest_rank) || ' (fastest)' AS text
    FROM recs r JOIN top t USING (job, record_id) WHERE t.nth = 0 AND r.rank < 0
    GROUP BY job
),
ranks AS (
    SELECT job, CASE WHEN {extremes} THEN e.text ELSE w.text END AS ranks
    FROM fired LEFT JOIN words w USING (job) LEFT JOIN extremes e USING (job)
)
SELECT log_sha256, path, measure, ranks FROM top JOIN per_file USING (job, record_id)
JOIN named USING (job, record_id) JOIN ranks USING (job) JOIN fired USING (job)
"""
# A file's measure from its records': Evidence.agg's
_PER_FILE = {
    "sum": "SUM(measure)",
    "max": "MAX(measure)",
    "spread": SPREAD.format(x="measure"),
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
        words=_WORDS.strip(),
        extremes="TRUE" if ev.extremes else "FALSE",
    )
    fired = pd.DataFrame({"log_sha256": logs.to_numpy(), "job": range(len(logs))})
    fired["nprocs"] = nprocs.reindex(fired["log_sha256"]).to_numpy()
    con.register("fired", fired)
    try:
        files = con.execute(query).df()
    finally:
        con.unregister("fired")
    ranks = files.drop_duplicates("log_sha256").set_index("log_sha256")["ranks"]
    return top_files(files, "measure", ev.shown), ranks


def top_files(rows: pd.DataFrame, measure: str, shown) -> pd.Series:
    """Per job log (index): its top :data:`TOP_FILES` files by ``measure`` (rows: log_sha256,
    path and the measure, a row a file), the most first (equal ones by path), written
    "path (shown(measure)); ...". Files of none of it (0) are left out."""
    order = ["log_sha256", measure, "path"]
    rows = rows[rows[measure] > 0].sort_values(order, ascending=[True, False, True])
    rows = rows.assign(nth=rows.groupby("log_sha256", sort=False).cumcount())
    rows = rows[rows["nth"] < TOP_FILES]
    rows = rows.assign(text=rows["path"] + " (" + rows[measure].map(shown) + ")")
    return _joined(rows, TOP_FILES, "; ")


def rank_texts(con, ranks: pd.DataFrame, nprocs: pd.Series) -> pd.Series:
    """Per job log (index): its ranks (rows: log_sha256, rank; -1: a record of all) in words,
    as findings name them; ``nprocs``: each log's processes."""
    logs = pd.unique(ranks["log_sha256"])
    fired = pd.DataFrame({"log_sha256": logs, "job": range(len(logs))})
    fired["nprocs"] = nprocs.reindex(logs).to_numpy()
    ranked = ranks.merge(fired[["log_sha256", "job"]])[["job", "rank"]].drop_duplicates()
    con.register("fired", fired)
    con.register("ranked", ranked)
    try:
        said = con.execute(f"WITH {_WORDS.strip()} SELECT job, text FROM words").df()
    finally:
        con.unregister("fired")
        con.unregister("ranked")
    return said.set_index(fired["log_sha256"].to_numpy()[said["job"]])["text"]


def _joined(parts: pd.DataFrame, most: int, sep: str) -> pd.Series:
    """Per job log, the ``text`` of its parts in the order of ``nth`` (0, 1, ... below
    ``most``), joined: one vectorized step per position."""
    out = parts.loc[parts["nth"] == 0].set_index("log_sha256")["text"]
    for nth in range(1, most):
        more = parts.loc[parts["nth"] == nth].set_index("log_sha256")["text"]
        out = out + (sep + more).reindex(out.index).fillna("")
    return out
