"""The top of a report's page: its verdict (iostudy.report.verdict), its kind of study
(iostudy.report.layout) and the summary of what the sections found."""

from __future__ import annotations

import pandas as pd

from iostudy.metrics import compare, scaling
from iostudy.report import layout
from iostudy.report import verdict as verdict_mod
from iostudy.report.figures import TOLERANCE_PCT
from iostudy.report.sections import TREE_STATUS, Report


def study_verdict(r: Report) -> verdict_mod.Verdict:
    """The study's verdict (iostudy.report.verdict) from its runs, values and their history."""
    perf = r.data["perf"]
    results = compare.results_of(perf, r.runs_df) if len(perf) else pd.DataFrame()
    judged = compare.judge(results) if len(results) else pd.DataFrame()
    return verdict_mod.verdict(r.runs, perf, judged, jobs=len(r.data["jobs"]))


def study_kind(r: Report) -> str:
    """The kind of study (iostudy.report.layout.kind_of): from its runs and the checks that
    ran or that its campaigns asked for."""
    checks = set(r.data["perf"]["check"].dropna()) | set(r.data["jobs"]["check"].dropna())
    for run in r.runs:
        checks |= {c.get("check") for c in (run.get("_manifest") or {}).get("not_run") or []}
    return layout.kind_of(r.runs, checks)


def summary(r: Report) -> dict:
    """The page's summary at its top, from the sections' findings."""
    runs_df, tables, cross = r.runs_df, r.data, r.found["crosscheck"]
    ior_cross = r.found["ior_cross"]
    verdicts = tables["perf"]["result"].astype(str).str.lower()
    # The runs' span: first start to last start, or to a log tree's last log's end.
    ends = [runs_df["started"]]
    if "status" in runs_df and "finished" in runs_df:
        ends.append(runs_df.loc[runs_df["status"] == TREE_STATUS, "finished"])
    last_time = pd.concat(ends).max()
    within = cross[f"within_{TOLERANCE_PCT:g}pct"] if len(cross) else []
    n_perf = len(tables["perf"])
    return {
        "runs": f"{len(runs_df)} ({runs_df['started'].min()} to {last_time})",
        "systems": ", ".join(sorted(runs_df["system"].fillna("?").unique())),
        "jobs": len(tables["jobs"]),
        "quarantined": len(tables["quarantine"]),
        "flagged": int(tables["jobs"]["flags"].notna().sum()) if "flags" in tables["jobs"] else 0,
        "perf": f"{int((verdicts == 'pass').sum())} of {n_perf} values pass"
        if n_perf
        else "no values",
        "crosscheck": f"{int(sum(within))} of {len(within)} models" if len(cross) else "no data",
        "ior_crosscheck": f"{int(ior_cross[scaling.WITHIN].sum())} of {len(ior_cross)} IOR "
        "runs and operations"
        if len(ior_cross)
        else "no data",
    }
