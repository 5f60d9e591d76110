"""Diagnoses: what is wrong with a job's I/O, named with the numbers that show it, the files and
ranks behind it, and whether it is new or usual for the job's code (seed 000's causes of slow
jobs, Drishti 0.8's triggers).

The rules are :mod:`iostudy.metrics.diagnose_rules` (the list, with each one's definition and
Drishti code); they read one row of facts per job log (:mod:`iostudy.metrics.diagnose_facts`),
and fire where their numbers pass the thresholds of ``configs/diagnoses.json`` (a site edits
the file). A finding says which rule and its Drishti code (``drishti``; null: iostudy's own),
the numbers that fired it in one line (``found``), the files with the most of the problem
(``files``: the top three by the rule's measure), the ranks concerned (``ranks``), the job's
code (``executable``) and how often its earlier jobs had it (``history``), and one line of
advice.
"""

from __future__ import annotations

from pathlib import Path

from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.metrics import diagnose_beyond, diagnose_facts
from iostudy.metrics.diagnose_evidence import with_evidence
from iostudy.metrics.diagnose_rules import NOT_RULES, RULES

pd = deferred("pandas")

CONFIG = "diagnoses.json"
COLUMNS = [
    "log_path",
    "jobid",
    "run_id",
    "account",
    "executable",
    "nprocs",
    "rule",
    "drishti",
    "found",
    "files",
    "ranks",
    "history",
    "advice",
    "log_sha256",
]
job_facts = diagnose_facts.job_facts
__all__ = ["NOT_RULES", "RULES", "diagnose", "job_facts", "thresholds", "with_evidence"]


def thresholds(path: Path | None = None) -> dict:
    """The rules' thresholds: configs/diagnoses.json (or ``path``), validated, defaults
    filled."""
    return config.load(path or config.configs_dir() / CONFIG, "diagnoses")["rules"]


def diagnose(facts: pd.DataFrame, limits: dict) -> pd.DataFrame:
    """Every rule that fires on a job of ``facts`` (:func:`job_facts`): one row each, with its
    Drishti code, the numbers that fired it and the advice (files, ranks and history: see
    :func:`with_evidence` and :func:`with_history`)."""
    found, numbers = [], facts.select_dtypes("number")  # what a rule's words read
    for rule in RULES:
        mask = rule.fires(facts, limits[rule.name]).fillna(False).astype(bool)
        fired = facts[mask]
        if fired.empty:
            continue
        said = [rule.says(r) for r in numbers[mask].itertuples()]
        found.append(
            fired.assign(
                rule=rule.name,
                drishti=rule.drishti,
                advice=rule.advice,
                found=said,
                files=None,
                ranks=None,
                history=None,
            )
        )
    if not found:
        return pd.DataFrame(columns=COLUMNS)
    out = pd.concat(found, ignore_index=True).reindex(columns=COLUMNS)
    return out.astype(dict.fromkeys(("drishti", "files", "ranks", "history", "executable"), object))


def with_history(found: pd.DataFrame, facts: pd.DataFrame) -> pd.DataFrame:
    """``found`` with each finding's job's code (``executable``:
    :func:`iostudy.metrics.diagnose_facts.code_of`) and how often the earlier jobs of that code
    had the same finding (``history``): "first job of its code",
    "new: none of N earlier jobs of its code", "usual: K of N earlier jobs of its code"."""
    if found.empty:
        return found
    jobs = facts[["log_sha256", "exe", "start"]].drop_duplicates("log_sha256")
    jobs = jobs.assign(code=diagnose_facts.code_of(jobs["exe"]).to_numpy())
    jobs = jobs.sort_values(["start", "log_sha256"])
    jobs["earlier"] = jobs.groupby("code", dropna=False).cumcount()
    mine = found[["log_sha256", "rule"]].reset_index()
    mine = mine.merge(jobs[["log_sha256", "code", "start", "earlier"]], on="log_sha256")
    mine = mine.sort_values(["start", "log_sha256"])
    mine["earlier_with"] = mine.groupby(["code", "rule"], dropna=False).cumcount()
    said = [_history(r.earlier, r.earlier_with) for r in mine.itertuples()]
    mine = mine.set_index("index").assign(history=said)
    return found.assign(executable=mine["code"], history=mine["history"])


def _history(earlier: int, earlier_with: int) -> str:
    if earlier == 0:
        return "first job of its code"
    if earlier_with == 0:
        return f"new: none of {earlier:,} earlier jobs of its code"
    return f"usual: {earlier_with:,} of {earlier:,} earlier jobs of its code"


def findings(con, limits: dict, jobs: pd.DataFrame | None = None) -> tuple:
    """The store's job facts and every finding on them, with evidence and history."""
    facts = job_facts(con, jobs)
    if facts.empty:
        return facts, pd.DataFrame(columns=COLUMNS)
    found = with_evidence(con, diagnose(facts, limits), facts, limits)
    beyond = diagnose_beyond.findings(con, facts, limits, found)
    found = pd.concat([found, beyond], ignore_index=True) if len(beyond) else found
    return facts, with_history(found, facts)
