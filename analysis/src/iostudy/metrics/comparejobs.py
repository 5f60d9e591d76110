"""Two jobs side by side, before and after (seed 000, Fig. 11: the same application before and
after tuning): ``iostudy compare-jobs A B`` and the report's before/after section.

A and B name a job of the store (:func:`resolve`, for every command that names one): its Slurm
job id (any length), its log (its path as the store has it, its file name, or a log file here,
relative or absolute, found by its sha256), or its log's sha256 or a prefix of it (8 hex digits
or more). A name may be read several ways (12345678 is a job id and a sha256 prefix): the job is
the one that its readings name, and what it was named by is said; readings that name different
jobs are refused, naming each. One that names no job, or several, is an error that lists them.

What is compared (every figure from :mod:`iostudy.metrics.jobstats` and
:mod:`iostudy.metrics.jobdetail`, the definitions every page uses):
- :func:`summary`: MiB/s/CN, the aggregate MiB/s, the slowest rank's I/O time, bytes moved,
  metadata %, files, processes and nodes, with B's change against A (B / A);
- :func:`levels`: per module, operations and bytes and the I/O time split: the file system's
  level (POSIX) against the application's (MPI-IO, HDF5, PnetCDF), where seed 000 saw MPI-IO
  turn 16,388 writes into 4,096;
- :func:`sizes`: the accesses per size bin each level saw (the bins either job used).
"""

from __future__ import annotations

import re
from pathlib import Path

from iostudy.core import provenance
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.numfmt import MIB
from iostudy.metrics import jobdetail, jobstats

pd = deferred("pandas")

_HEX = re.compile(r"^[0-9a-f]{8,64}$")
_DIGITS = re.compile(r"^[0-9]+$")
#: the summary's figures: (job table column, what it is, unit)
SUMMARY = (
    ("mib_s_per_cn", "MiB/s/CN", "MiB/s per node"),
    ("agg_perf_mib_s", "aggregate bandwidth", "MiB/s"),
    ("io_time_slowest_s", "I/O time, slowest rank", "s"),
    ("mib_moved", "data moved", "MiB"),
    ("md_cost_pct", "metadata share of I/O time", "%"),
    ("files", "files", "files"),
    ("nprocs", "processes", "processes"),
    ("nodes", "nodes", "nodes"),
)


class JobNotFound(BadInput, ValueError):
    """A name that is no job of the store, or several; the message says which."""


def resolve(jobs: pd.DataFrame, name: str) -> pd.Series:
    """The job table's row ``name`` names (see the module docstring), with ``named_by``: the
    readings that named it ("job id", "log", "sha256 prefix")."""
    # one log ingested by several runs is one job
    hits = {how: rows.drop_duplicates("log_sha256") for how, rows in _readings(jobs, name)}
    hits = {how: rows for how, rows in hits.items() if len(rows)}
    shas = {sha for rows in hits.values() for sha in rows["log_sha256"]}
    if not shas:
        raise JobNotFound(f"{name!r}: no job has this log sha256, job id or log")
    if len(shas) > 1:
        said = "; ".join(
            f"as a {how}, {len(rows)} job{'s' * (len(rows) > 1)}: {_listed(rows)}"
            for how, rows in hits.items()
        )
        what = "is ambiguous" if len(hits) > 1 else "names several jobs"
        raise JobNotFound(f"{name!r} {what}: {said}; give a log's sha256 or path")
    row = next(iter(hits.values())).iloc[0].copy()
    row["named_by"] = " and ".join(hits)
    return row


def _readings(jobs: pd.DataFrame, name: str):
    """(how, the jobs rows it names) for each way name can be read."""
    key = name.strip()
    if _DIGITS.match(key):
        jobid = int(key)
        yield "job id", jobs[jobs["jobid"] == jobid] if jobid < 2**63 else jobs.iloc[:0]
    if _HEX.match(key.lower()):
        yield "sha256 prefix", jobs[jobs["log_sha256"].str.startswith(key.lower())]
    paths = jobs["log_path"].astype(str)
    named = (paths == key) | (paths.str.rsplit("/", n=1).str[-1] == key)
    path = Path(key)
    if path.is_file():  # a log file here, wherever it was ingested from: its content names it
        named |= jobs["log_sha256"] == provenance.sha256_file(path)
    yield "log", jobs[named]


def _listed(rows: pd.DataFrame) -> str:
    shown = ", ".join(
        f"job {jobid_text(r.jobid)} {r.log_path} ({r.log_sha256[:12]})"
        for r in rows.head(5).itertuples()
    )
    return shown + (", ..." if len(rows) > 5 else "")


def jobid_text(value) -> str:
    return str(int(value)) if pd.notna(value) else "(none)"


def summary(a: pd.Series, b: pd.Series) -> pd.DataFrame:
    """metric, unit, a, b, b_over_a (null where A's value is 0 or missing)."""
    rows = []
    for column, metric, unit in SUMMARY:
        va, vb = (_value(j, column) for j in (a, b))
        ratio = vb / va if pd.notna(va) and pd.notna(vb) and va else None
        rows.append({"metric": metric, "unit": unit, "a": va, "b": vb, "b_over_a": ratio})
    return pd.DataFrame(rows)


def _value(job: pd.Series, column: str) -> float:
    if column == "mib_moved":
        return (job["bytes_read"] + job["bytes_written"]) / MIB
    value = job.get(column)
    return float(value) if pd.notna(value) else float("nan")


def levels(files_a: pd.DataFrame, files_b: pd.DataFrame) -> pd.DataFrame:
    """Per module, each figure of jobdetail.per_module for A and B: module, figure, a, b."""
    pa, pb = (jobdetail.per_module(f).set_index("module") for f in (files_a, files_b))
    modules = list(dict.fromkeys([*pa.index, *pb.index]))
    figures = [
        "reads",
        "writes",
        "bytes_read",
        "bytes_written",
        "opens",
        "read_time",
        "write_time",
        "meta_time",
    ]
    rows = [
        {
            "module": m,
            "figure": f,
            "a": pa.at[m, f] if m in pa.index else 0,
            "b": pb.at[m, f] if m in pb.index else 0,
        }
        for m in modules
        for f in figures
    ]
    return pd.DataFrame(rows, columns=["module", "figure", "a", "b"])


def sizes(files_a: pd.DataFrame, files_b: pd.DataFrame) -> pd.DataFrame:
    """Accesses per level, direction and size bin of A and B: module, operation, size, a, b;
    the bins neither job used left out."""
    keys = ["module", "operation", "size"]
    a, b = (jobdetail.size_bins(f).set_index(keys)["accesses"] for f in (files_a, files_b))
    both = pd.concat([a.rename("a"), b.rename("b")], axis=1).fillna(0).astype("int64")
    return both[(both["a"] > 0) | (both["b"] > 0)].reset_index()


def compare(con, name_a: str, name_b: str, jobs: pd.DataFrame | None = None) -> dict:
    """The pair's tables: a, b (their job table rows), summary, levels, sizes. ``jobs``: the
    store's jobstats.job_table when the caller has it (a report does). Raises JobNotFound."""
    jobs = jobstats.job_table(con) if jobs is None else jobs
    a, b = resolve(jobs, name_a), resolve(jobs, name_b)
    files = jobdetail.files_of(con, [a["log_sha256"], b["log_sha256"]])
    fa, fb = (
        files[(files["log_sha256"] == j["log_sha256"]) & (files["run_id"] == j["run_id"])]
        for j in (a, b)
    )
    return {
        "a": a,
        "b": b,
        "summary": summary(a, b),
        "levels": levels(fa, fb),
        "sizes": sizes(fa, fb),
    }
