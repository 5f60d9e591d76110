"""``iostudy diagnose``: what is wrong with each job's I/O, by the rules of
:mod:`iostudy.metrics.diagnose`, one finding a row."""

from __future__ import annotations

import json
import sys
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.cli.tableout import add_format_options, write_table
from iostudy.metrics import diagnose, jobstats
from iostudy.store import store as store_mod


def as_text(found) -> str:
    """The findings for a reader: per job its log, then each finding with its code, numbers,
    files, ranks, history and advice on lines of their own."""
    lines, job = [], None
    for r in found.sort_values("log_path", kind="stable").itertuples():  # rules in their order
        if r.log_sha256 != job:
            job = r.log_sha256
            code = r.executable if isinstance(r.executable, str) else "unknown"
            lines.append(f"{r.log_path} (job {r.jobid}, code {code}):")
        code = f" [Drishti {r.drishti}]" if isinstance(r.drishti, str) else ""
        lines.append(f"  {r.rule}{code}: {r.found}")
        for name in ("files", "ranks", "history", "advice"):
            value = getattr(r, name)
            lines += [f"    {name}: {value}"] if isinstance(value, str) else []
    return "\n".join(lines) if lines else "no finding"


def cmd_diagnose(args) -> int:
    jobstats.require_jobs(args.store)
    limits = diagnose.thresholds(args.config)
    facts, found = diagnose.findings(store_mod.connect(args.store), limits)
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
