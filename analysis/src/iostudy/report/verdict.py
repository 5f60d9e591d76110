"""A report's verdict, the first thing on its page and in the index of versions.

One word and the reasons behind it, most severe first:
- FAIL: a run failed (ReFrame's exit status, an error, an interruption), a test case failed, or
  a performance value is outside its reference;
- REGRESSED: the latest run of a series regressed against its baseline (its history's or an
  accepted run's repetitions) or its system's ceiling (:func:`iostudy.metrics.compare.judge`),
  by how much;
- INCOMPLETE: something the campaign asked for did not run: each check with its cases and why
  (ReFrame's skip reason, e.g. a program not built, with the command that builds it); cases a
  campaign excludes on purpose are not missing; a run whose manifest is missing cannot say
  what it ran, so it cannot pass;
- PASS: every case ran and passed;
- DATA: a study without checks (a characterization of a facility's job logs): nothing to pass
  or fail, its headline says what is there.
"""

from __future__ import annotations

from dataclasses import dataclass

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import short
from iostudy.store.store import is_tree

pd = deferred("pandas")

SEVERITY = ("FAIL", "REGRESSED", "INCOMPLETE", "PASS", "DATA")
#: run statuses (the campaign's manifest) that fail a report
FAILED_RUNS = {"failed": "ReFrame failed", "error": "no ReFrame report", "interrupted": "stopped"}
#: not-run results of the campaign's manifest that leave a study incomplete (not "excluded")
MISSING = ("skip", "skip-optional")
SHOWN = 8  # reasons of one kind listed; the rest counted


@dataclass(frozen=True)
class Verdict:
    word: str
    reasons: tuple[str, ...]

    def as_dict(self) -> dict:
        return {"verdict": self.word, "reasons": list(self.reasons)}


def verdict(runs: list[dict], perf: pd.DataFrame, judged: pd.DataFrame, jobs: int = 0) -> Verdict:
    """The study's verdict: ``runs`` with their manifests (``_manifest``), the study's perf
    rows, ``judged``: compare.judge of its results (may be empty), ``jobs``: its job logs."""
    found = {
        "FAIL": _failed_runs(runs) + _failed_values(perf),
        "REGRESSED": _regressions(judged),
        "INCOMPLETE": _not_run(runs),
    }
    for word in SEVERITY[:3]:
        if found[word]:
            lines = [line for w in SEVERITY[:3] for line in found[w]]
            return Verdict(word, tuple(lines))
    if len(perf) or any(_ran_cases(r) for r in runs):
        ran = sum(_ran_cases(r) for r in runs)
        return Verdict(
            "PASS",
            (
                f"{_n(ran, 'test case')} ran and passed, {_n(len(perf), 'value')} "
                "within the references",
            ),
        )
    return Verdict(
        "DATA",
        (f"a characterization of {_n(jobs, 'job log')}: no checks in this study to pass or fail",),
    )


def _n(count: int, thing: str) -> str:
    return f"{count} {thing}" if count == 1 else f"{count} {thing}s"


def _counted(lines: list[str], what: str) -> list[str]:
    if len(lines) <= SHOWN:
        return lines
    return [*lines[:SHOWN], f"... and {len(lines) - SHOWN} more {what} (see the sections below)"]


def _failed_runs(runs: list[dict]) -> list[str]:
    out = []
    for run in runs:
        why = FAILED_RUNS.get(run.get("status") or "")
        if why:
            code = (run.get("_manifest") or {}).get("exit_code")
            exit_text = f", exit status {code}" if code not in (None, 0) else ""
            out.append(f"run {run['run_id']} on {run.get('system')}: {why}{exit_text}")
        failed = ((run.get("_manifest") or {}).get("results") or {}).get("fail", 0)
        if failed:
            out.append(f"run {run['run_id']}: {_n(failed, 'test case')} failed")
    return _counted(out, "runs")


def _failed_values(perf: pd.DataFrame) -> list[str]:
    if perf.empty:
        return []
    bad = perf[perf["result"].astype(str).str.lower() == "fail"]
    if bad.empty:
        return []
    out = []
    for (check, variable, system), rows in bad.groupby(["check", "variable", "system"]):
        of = (
            (perf["check"] == check) & (perf["variable"] == variable) & (perf["system"] == system)
        ).sum()
        worst = rows.iloc[(rows["value"] - rows["reference"]).abs().argmax()]
        out.append(
            f"{check} {variable} on {system}: {len(rows)} of {of} values outside the reference "
            f"(e.g. {short(worst['value'])} {worst['unit'] or ''} against "
            f"{short(worst['reference'])})"
        )
    return _counted(out, "failing variables")


def _regressions(judged: pd.DataFrame) -> list[str]:
    """The series whose latest run regressed against its baseline or its system's ceiling (a
    value outside its reference band is a failing value already, not also a regression)."""
    if judged.empty:
        return []
    latest = judged.sort_values(["started", "run_id"]).groupby(["label", "fingerprint"]).tail(1)
    bad = latest[(latest["verdict"] == "regression") & (latest["against"] != "reference")]
    out = [
        f"{r.metric} on {r.label}: {short(r.value)} {r.unit or ''}, {_change(r.change_pct)} "
        f"({r.basis}; run {r.run_id})"
        for r in bad.itertuples()
    ]
    return _counted(out, "regressions")


def _change(pct) -> str:
    """The change as `iostudy compare` states it: against the baseline's median."""
    return "no baseline to compare with" if pd.isna(pct) else f"{pct:+.1f}% against the median"


def _not_run(runs: list[dict]) -> list[str]:
    """What the campaigns asked for and did not get, per check and reason."""
    groups: dict[tuple, list] = {}
    unexplained = []
    for run in runs:
        manifest = run.get("_manifest") or {}
        if not manifest and not is_tree(run):  # a log tree has none
            unexplained.append(
                f"run {run['run_id']}: its manifest is missing (not found under "
                "--results, or left out of its site's bundle): what it ran and "
                "what it did not is unknown"
            )
            continue
        cases = manifest.get("not_run")
        if cases is None:  # a manifest of before the reasons were kept: its counts only
            results = manifest.get("results") or {}
            if n := sum(results.get(m, 0) for m in MISSING):
                unexplained.append(
                    f"run {run['run_id']}: {_n(n, 'case')} did not run "
                    "(its iostudy kept no reasons)"
                )
            continue
        for case in cases:
            if case.get("result") in MISSING:
                key = (case.get("check") or "?", case.get("reason") or "no reason given")
                groups.setdefault(key, []).append(case)
    out = [
        f"{check}: {_n(len(cases), 'case')} did not run: {reason}"
        for (check, reason), cases in sorted(groups.items())
    ]
    return _counted(out + unexplained, "checks")


def _ran_cases(run: dict) -> int:
    results = (run.get("_manifest") or {}).get("results") or {}
    return int(results.get("pass", 0))
