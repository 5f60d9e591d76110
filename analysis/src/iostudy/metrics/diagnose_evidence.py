"""The evidence of diagnosis findings: for each finding of a rule with an
:class:`iostudy.metrics.diagnose_rules.Evidence`, the files with the most of the problem (the top
:data:`TOP_FILES` by the rule's measure, each with it) and the ranks concerned, from the store's
files rows of the jobs that have a finding.

Column-wise throughout (a facility's store: 10^5 jobs): jobs and files are grouped by integer
codes, and the texts of a job's files and ranks are joined a position at a time, not per job.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.metrics import diagnose_facts
from iostudy.metrics.diagnose_rules import RULES

np = deferred("numpy")
pd = deferred("pandas")

TOP_FILES = 3  # files named per finding
SHOWN_RANKS = 8  # ranks (or runs of ranks) named per finding before "..."
JOBS_AT_ONCE = 20_000  # jobs whose files rows are in memory at once


def with_evidence(con, found: pd.DataFrame, facts: pd.DataFrame, limits: dict) -> pd.DataFrame:
    """``found`` with each finding's ``files`` and ``ranks`` (None: the rule names none, or
    the job has no record of the problem's module); the jobs :data:`JOBS_AT_ONCE` at a time,
    so that their files rows stay a bounded share of memory."""
    if found.empty:
        return found
    found = found.copy()
    nprocs = facts.drop_duplicates("log_sha256").set_index("log_sha256")["nprocs"]
    logs = pd.unique(found["log_sha256"])
    for start in range(0, len(logs), JOBS_AT_ONCE):
        chunk = logs[start : start + JOBS_AT_ONCE]
        _fill(con, found, found["log_sha256"].isin(chunk).to_numpy(), nprocs, limits)
    return found


def _fill(con, found: pd.DataFrame, part, nprocs: pd.Series, limits: dict) -> None:
    """The files and ranks of ``found``'s findings ``part`` (a mask), in place."""
    rows = diagnose_facts.evidence_rows(con, found.loc[part, "log_sha256"])
    codes, logs = pd.factorize(rows["log_sha256"])
    rows = rows.drop(columns="log_sha256").assign(job=codes)
    by_module = dict(tuple(rows.groupby("module", sort=False)))
    nprocs = pd.Series(nprocs.reindex(logs).to_numpy(), index=range(len(logs)))
    for rule in RULES:
        mine = part & (found["rule"] == rule.name).to_numpy()
        recs = by_module.get(rule.evidence.module) if rule.evidence else None
        if recs is None or not mine.any():
            continue
        jobs = pd.Index(logs).get_indexer(found.loc[mine, "log_sha256"])
        files, ranks = _evidence(rule.evidence, recs, jobs, limits[rule.name], nprocs)
        found.loc[mine, "files"] = _or_none(files.reindex(jobs))
        found.loc[mine, "ranks"] = _or_none(ranks.reindex(jobs))


def _or_none(values: pd.Series) -> list:
    return [v if isinstance(v, str) else None for v in values.tolist()]


def _evidence(ev, recs: pd.DataFrame, jobs, limits: dict, nprocs: pd.Series) -> tuple:
    """Per job of ``jobs`` (its code, the index): the text of its top files, and of their
    ranks; ``recs``: the files rows of the rule's module."""
    measure = np.asarray(ev.measure(recs, limits), dtype=float)
    keep = recs["job"].isin(jobs).to_numpy().copy()
    if ev.agg != "spread":  # a record without any of the problem changes neither sum nor max
        keep &= measure > 0
    narrow = {c: recs[c].to_numpy()[keep] for c in ("job", "record_id", "rank")}
    if ev.extremes:
        narrow |= {c: recs[c].to_numpy()[keep] for c in ("slowest_rank", "fastest_rank")}
    narrow = pd.DataFrame(narrow).assign(measure=measure[keep])
    top = _top_files(narrow, ev.agg)
    paths = recs.drop_duplicates(["job", "record_id"]).set_index(["job", "record_id"])["path"]
    where = pd.MultiIndex.from_frame(top[["job", "record_id"]])
    top["text"] = paths.reindex(where).to_numpy() + " (" + top["measure"].map(ev.shown) + ")"
    files = _joined(top, TOP_FILES, "; ")
    behind = narrow.merge(top[["job", "record_id", "nth"]], on=["job", "record_id"])
    if ev.extremes:
        first = behind[behind["nth"] == 0].drop_duplicates("job").set_index("job")
        ranks = _int_text(first["slowest_rank"]) + " (slowest), "
        ranks += _int_text(first["fastest_rank"]) + " (fastest)"
        return files, ranks
    if ev.agg == "sum":
        behind = behind[behind["measure"] > 0]
    return files, _rank_texts(behind[["job", "rank"]].drop_duplicates(), nprocs)


def _top_files(recs: pd.DataFrame, agg: str) -> pd.DataFrame:
    """The :data:`TOP_FILES` files of each job with the most of the measure (above 0): job,
    record_id, measure and nth (0: the most)."""
    per_file = _per_file(recs.groupby(["job", "record_id"], sort=False)["measure"], agg)
    per_file = per_file[per_file > 0].rename("measure").reset_index()
    top = per_file.sort_values(["job", "measure", "record_id"], ascending=[True, False, True])
    top["nth"] = top.groupby("job", sort=False).cumcount()
    return top[top["nth"] < TOP_FILES].copy()


def _per_file(measures, agg: str) -> pd.Series:
    """Each file's measure from its records': their sum, maximum, or spread ((max - min) /
    max, 0 for a file of one record)."""
    if agg != "spread":
        return measures.agg(agg)
    stats = measures.agg(["max", "min", "count"])
    spread = (stats["max"] - stats["min"]) / stats["max"].where(stats["max"] > 0)
    return spread.where(stats["count"] > 1, 0)


def _joined(parts: pd.DataFrame, most: int, sep: str) -> pd.Series:
    """Per job, the ``text`` of its parts in the order of ``nth`` (0, 1, ... below ``most``),
    joined: one vectorized step per position."""
    out = parts.loc[parts["nth"] == 0].set_index("job")["text"]
    for nth in range(1, most):
        more = parts.loc[parts["nth"] == nth].set_index("job")["text"]
        out = out + (sep + more).reindex(out.index).fillna("")
    return out


def _int_text(values: pd.Series) -> pd.Series:
    return values.astype("Int64").astype(str)


def _rank_texts(ranks: pd.DataFrame, nprocs: pd.Series) -> pd.Series:
    """Per job, its ranks (job, rank rows; -1: all): "all 16", "0 (the job's one process)",
    or "0-3, 7 (5 of 16 processes)" (runs of consecutive ranks joined; the first
    :data:`SHOWN_RANKS` runs, then "...")."""
    text = _some_ranks(ranks[ranks["rank"] >= 0].sort_values(["job", "rank"]), nprocs)
    every = ranks.loc[ranks["rank"] < 0, "job"].unique()
    text = text.reindex(text.index.union(every)).astype(object)
    text.loc[every] = ["all " + f"{n:,.0f}" for n in nprocs.reindex(every)]
    text.loc[text.index[(nprocs.reindex(text.index) <= 1).to_numpy()]] = "0 (the job's one process)"
    return text


def _some_ranks(own: pd.DataFrame, nprocs: pd.Series) -> pd.Series:
    """Per job, its ranks of their own (job, rank rows, sorted) as runs: "0-3, 7 (5 of 16
    processes)"."""
    if own.empty:
        return pd.Series(dtype=object)
    starts = (own["job"].diff() != 0) | (own["rank"].diff() != 1)
    runs = own.groupby(starts.cumsum().to_numpy()).agg(
        job=("job", "first"), low=("rank", "min"), high=("rank", "max")
    )
    low, high = _int_text(runs["low"]), _int_text(runs["high"])
    runs["text"] = low.where(runs["low"] == runs["high"], low + "-" + high)
    runs["nth"] = runs.groupby("job").cumcount()
    text = _joined(runs[runs["nth"] < SHOWN_RANKS], SHOWN_RANKS, ", ")
    more = runs.groupby("job").size().reindex(text.index) > SHOWN_RANKS
    text = text.where(~more, text + ", ...")
    count = own.groupby("job").size().reindex(text.index)
    said = [
        f" ({c:,} of {n:,.0f} processes)"
        for c, n in zip(count, nprocs.reindex(text.index), strict=True)
    ]
    return text + said
