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

import json
import sys
from pathlib import Path

from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.paths import add_store_option
from iostudy.core.tableout import add_format_options, write_table
from iostudy.metrics import diagnose_beyond, diagnose_facts, jobstats
from iostudy.metrics.diagnose_evidence import with_evidence
from iostudy.metrics.diagnose_rules import NOT_RULES, RULES
from iostudy.store import store as store_mod

pd = deferred("pandas")

CONFIG = "diagnoses.json"
COLUMNS = [
    "log",
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


def as_text(found: pd.DataFrame) -> str:
    """The findings for a reader: per job its log, then each finding with its code, numbers,
    files, ranks, history and advice on lines of their own."""
    lines, job = [], None
    for r in found.sort_values("log", kind="stable").itertuples():  # rules in their order
        if r.log_sha256 != job:
            job = r.log_sha256
            code = r.executable if isinstance(r.executable, str) else "unknown"
            lines.append(f"{r.log} (job {r.jobid}, code {code}):")
        code = f" [Drishti {r.drishti}]" if isinstance(r.drishti, str) else ""
        lines.append(f"  {r.rule}{code}: {r.found}")
        for name in ("files", "ranks", "history", "advice"):
            value = getattr(r, name)
            lines += [f"    {name}: {value}"] if isinstance(value, str) else []
    return "\n".join(lines) if lines else "no finding"


def cmd_diagnose(args) -> int:
    if not jobstats.has_jobs(args.store):
        return EXIT_BAD_INPUT
    try:
        limits = thresholds(args.config)
    except config.ConfigError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    facts, found = findings(store_mod.connect(args.store), limits)
    write_table(found, args, sys.stdout, text=as_text)
    counts = found["rule"].value_counts().to_dict() if len(found) else {}
    print(
        f"diagnose: {len(facts)} jobs, {found['log_sha256'].nunique()} with a finding: "
        f"{json.dumps(counts)}",
        file=sys.stderr,
    )
    return 0


def register(groups) -> None:
    p = groups.add_parser(
        "diagnose",
        help="what is wrong with each job's I/O: rules with the numbers that fired them",
        description="Run the diagnosis rules (every Drishti 0.8 trigger, by its code, and "
        "iostudy's own) over every job log of the store; print one row per finding with the "
        "numbers that fired it, its top files and ranks, whether its code had it before, and "
        "advice. Thresholds: configs/diagnoses.json. Definitions: python -m pydoc "
        "iostudy.metrics.diagnose_rules.",
    )
    add_store_option(p)
    add_format_options(p, "print every column as CSV")
    p.add_argument("--config", type=Path, help="thresholds (default configs/diagnoses.json)")
    p.set_defaults(func=cmd_diagnose)
