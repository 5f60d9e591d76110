"""A report's verdict, the first thing on its page and in the index of versions.

One word and the reasons behind it, most severe first:
- FAIL: a run failed (ReFrame's exit status, an error, an interruption), a test case failed, or
  a performance value is outside its reference;
- REGRESSED: the latest run of a series is a regression against its baseline
  (:func:`iostudy.metrics.compare.judge`: the earlier runs' repetitions, an accepted run or a
  ceiling), by how much, with the change's interval;
- INCOMPLETE: something the campaign asked for did not run: each check with its cases and why
  (ReFrame's skip reason, e.g. a program not built, with the command that builds it); cases a
  campaign excludes on purpose are not missing; a run whose manifest is missing cannot say
  what it ran, so it cannot pass;
- NOT JUDGED: every case ran and passed, but nothing could have failed: no value has a
  reference that can fail (reference 0 or none, or no bound a measured value can cross: 0..inf)
  and no series' latest run could be judged against a baseline (no history, or too noisy);
  below INCOMPLETE (what is missing is the first thing to act on), above PASS (it is less);
- PASS: every case ran and passed, and something could have failed: a value within a
  reference that can fail, or a series' latest run judged against its baseline (no change,
  an improvement); the values that could not fail are listed as not judged;
- DATA: a study without checks (a characterization of a facility's job logs): nothing to pass
  or fail, its headline says what is there.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import short
from iostudy.metrics import compare
from iostudy.store.store import is_tree

pd = deferred("pandas")

SEVERITY = ("FAIL", "REGRESSED", "INCOMPLETE", "NOT JUDGED", "PASS", "DATA")
#: the latest runs' verdicts (compare.judge) that judged a series and found nothing wrong
JUDGED_FINE = ("no change", "improvement")
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
        return _passed(runs, perf, judged)
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


def _latest(judged: pd.DataFrame) -> pd.DataFrame:
    """The latest run of each series (compare.judge's ``latest``)."""
    return judged[judged["latest"].astype(bool)] if len(judged) else judged


def _regressions(judged: pd.DataFrame) -> list[str]:
    """The series whose latest run is a regression against its baseline or its system's ceiling,
    by how much; one judged against its reference band alone is a failing value already, not
    also a regression."""
    latest = _latest(judged)
    if latest.empty:
        return []
    bad = latest[(latest["verdict"] == "regression") & (latest["against"] != "reference")]
    out = [
        f"{r.metric} on {r.label}: {short(r.value)} {r.unit or ''}, {change_text(r)} against "
        f"{r.baseline} (p {r.p_value:.2g}; run {r.run_id})"
        for r in bad.itertuples()
    ]
    return _counted(out, "regressions")


def change_text(row) -> str:
    """A judged row's change against its baseline with its 95 % interval, as the page says it:
    -76.0% (95% interval -80.1 to -70.2%)."""
    if pd.isna(row.change_pct):
        return "no change measured"
    text = f"{row.change_pct:+.1f}%"
    if pd.isna(row.change_low_pct) or pd.isna(row.change_high_pct):
        return text
    return f"{text} (95% interval {row.change_low_pct:+.1f} to {row.change_high_pct:+.1f}%)"


def can_fail(low, high) -> bool:
    """Whether a reference band (compare.band's edges) can fail a measured value: it has an
    upper edge, or a lower edge above zero (rates, times and factors are never negative, so
    0..inf, -inf..inf and a missing reference, NaN..NaN, pass every value)."""
    return bool(
        (pd.notna(high) and high != math.inf) or (pd.notna(low) and low != -math.inf and low > 0)
    )


def _passed(runs: list[dict], perf: pd.DataFrame, judged: pd.DataFrame) -> Verdict:
    """PASS when something could have failed and nothing did, else NOT JUDGED; the values and
    series that could not fail are said either way."""
    ran = _n(sum(_ran_cases(r) for r in runs), "test case")
    fails = _failable(perf)
    latest = _latest(judged)
    fine = latest[latest["verdict"].isin(JUDGED_FINE)] if len(latest) else latest
    judged_lines = [f"{ran} ran and passed"]
    if fails.any():
        judged_lines.append(f"{_n(int(fails.sum()), 'value')} within references that can fail")
    if len(fine):
        counts = fine["verdict"].value_counts()
        judged_lines.append(
            "latest runs against their baselines: "
            + ", ".join(f"{counts[v]} {v}" for v in JUDGED_FINE if v in counts)
        )
    unjudged = _unjudged_values(perf, fails) + _unjudged_series(latest)
    if len(judged_lines) > 1:
        return Verdict("PASS", (*judged_lines, *unjudged))
    return Verdict("NOT JUDGED", (f"{ran} ran and passed, but nothing could fail", *unjudged))


def _failable(perf: pd.DataFrame) -> pd.Series:
    """Per perf row: whether its reference can fail it (:func:`can_fail`)."""
    if perf.empty:
        return pd.Series([], dtype=bool)
    edges = [compare.band(*r) for r in perf[["reference", "lower", "upper"]].itertuples(False)]
    return pd.Series([can_fail(lo, hi) for lo, hi in edges], index=perf.index, dtype=bool)


def _unjudged_values(perf: pd.DataFrame, fails: pd.Series) -> list[str]:
    """The values whose reference cannot fail, per check, variable and system."""
    out = []
    for (check, variable, system), rows in perf[~fails].groupby(
        ["check", "variable", "system"], dropna=False
    ):
        refs = sorted({_reference_text(r) for r in rows.itertuples()})
        out.append(
            f"{check} {variable} on {system}: {_n(len(rows), 'value')} not judged, "
            f"no reference that can fail ({', '.join(refs)})"
        )
    return _counted(out, "variables not judged")


def _reference_text(row) -> str:
    lo, hi = compare.band(row.reference, row.lower, row.upper)
    if pd.isna(lo) and pd.isna(hi):
        return "no reference" if pd.isna(row.reference) else f"reference {short(row.reference)}"
    return f"band {_edge(lo)}..{_edge(hi)}"


def _edge(x) -> str:
    return "inf" if x == math.inf else "-inf" if x == -math.inf else short(x)


def _unjudged_series(latest: pd.DataFrame) -> list[str]:
    """The series whose latest run could not be judged against a baseline, and why: one line
    per reason (a series alone with its reason is named)."""
    if latest.empty:
        return []
    rows = latest[latest["verdict"].isin(("too noisy", "not judged"))]
    out = []
    for (verdict, basis), g in rows.groupby(["verdict", "basis"], sort=False):
        r = g.iloc[0]
        if len(g) == 1:
            out.append(f"{r.metric} on {r.label}: {verdict} ({basis}; run {r.run_id})")
        else:
            out.append(f"{len(g)} series {verdict}: {basis} (e.g. {r.metric} on {r.label})")
    return _counted(out, "series not judged")


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
