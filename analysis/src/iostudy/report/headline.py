"""The top of a report's page: its verdict (iostudy.report.verdict), its kind of study
(iostudy.report.layout) and the summary of what the sections found."""

from __future__ import annotations

from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import short
from iostudy.metrics import scaling
from iostudy.report import components_report, layout, probe_report
from iostudy.report import verdict as verdict_mod
from iostudy.report.sectiondata import SectionData
from iostudy.store.store import TREE_STATUS

pd = deferred("pandas")


def study_verdict(r: SectionData) -> verdict_mod.Verdict:
    """The study's verdict (iostudy.report.verdict) from its runs, values and their history."""
    found = verdict_mod.verdict(r.runs, r.data["perf"], r.judged, jobs=len(r.data["jobs"]))
    ceiling = components_report.verdict_lines(r.found.get("ceiling") or {})
    return verdict_mod.Verdict(found.word, (*found.reasons, *ceiling)) if ceiling else found


def study_kind(r: SectionData) -> str:
    """The kind of study (iostudy.report.layout.kind_of): from its runs and the checks that
    ran or that its campaigns asked for."""
    checks = set(r.data["perf"]["check"].dropna()) | set(r.data["jobs"]["check"].dropna())
    for run in r.runs:
        checks |= {c.get("check") for c in (run.get("_manifest") or {}).get("not_run") or []}
    return layout.kind_of(r.runs, checks)


def summary(r: SectionData) -> dict:
    """The page's summary at its top, from the sections' findings."""
    runs_df, tables, cross = r.runs_df, r.data, r.crosscheck
    ior_cross = r.found["ior_cross"]
    verdicts = tables["perf"]["result"].astype(str).str.lower()
    # The runs' span: first start to last start, or to a log tree's last log's end.
    ends = [runs_df["started"]]
    if "status" in runs_df and "finished" in runs_df:
        ends.append(runs_df.loc[runs_df["status"] == TREE_STATUS, "finished"])
    last_time = pd.concat(ends).max()
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
        "crosscheck": _judged(cross, scaling.WITHIN, "models"),
        "ior_crosscheck": _judged(ior_cross, scaling.WITHIN, "IOR runs and operations"),
    }


def _judged(table: pd.DataFrame, column: str, what: str) -> str:
    """How many of a cross-check's rows passed, of those judged (the others had no log)."""
    if table.empty:
        return "no data"
    verdicts = table[column]
    text = f"{int(verdicts.fillna(False).sum())} of {int(verdicts.notna().sum())} {what}"
    missing = int(verdicts.isna().sum())
    return f"{text} ({missing} without a log)" if missing else text


# The headline's context of a check study, the best value ever measured: (what, unit, a variable
# name's word, the system peak it is a fraction of).
BEST = (
    ("best write", "MiB/s", "write", "aggregate_mib_s"),
    ("best read", "MiB/s", "read", "aggregate_mib_s"),
    ("best metadata rate", "ops/s", "", "metadata_ops_s"),
)


def headline(r: SectionData, kind: str) -> list[str]:
    """The kind's headline figures, a line each, with where each comes from: acceptance,
    regression and cross-site per system its latest run against its baseline, then as context
    the best bandwidths and metadata rate ever measured against the system's declared peak;
    interference the probes' variability; characterization the jobs' MiB/s/CN."""
    if kind == "interference":
        return probe_lines(r.data["probes"])
    if kind == "characterization":
        return job_lines(r.jobs)
    if kind in ("acceptance", "regression", "cross-site"):
        return latest_lines(r.judged) + best_lines(r.data["perf"], r.options.systems or {})
    return []


# The order a headline counts its verdicts in: what a reader acts on first; a verdict not named
# here comes last.
READING_ORDER = ("regression", "too noisy", "not judged", "improvement", "no change")


def latest_lines(judged: pd.DataFrame) -> list[str]:
    """Per system, its series' latest runs against their baselines (compare.judge): how many
    of each verdict, and the worst change with its interval and verdict."""
    if judged.empty:
        return []
    latest = judged[judged["latest"].astype(bool)]
    out = []
    for label, rows in latest.groupby("label", sort=True):
        runs = ", ".join(dict.fromkeys(rows.sort_values("started")["run_id"]))
        counts = rows["verdict"].value_counts()
        order = sorted(
            counts.index,
            key=lambda v: READING_ORDER.index(v) if v in READING_ORDER else len(READING_ORDER),
        )
        text = ", ".join(f"{counts[v]} {v}" for v in order)
        out.append(f"{label}, latest run {runs} against its baseline: {text}; {_worst(rows)}")
    return out


def _worst(rows: pd.DataFrame) -> str:
    """The latest run's worst change: the largest fall of a rate, rise of a time, or change
    of a value either way."""
    measured = rows[rows["change_pct"].notna()]
    if measured.empty:
        return "no change measured (no baseline to compare with)"
    sign = measured["direction"].map({"higher": -1.0, "lower": 1.0})
    worse = (measured["change_pct"] * sign).fillna(measured["change_pct"].abs())
    r = measured.loc[worse.idxmax()]
    return (
        f"worst change {r['metric']}: {verdict_mod.change_text(r)}, {r['verdict']} "
        f"(against {r['baseline']})"
    )


def best_lines(perf: pd.DataFrame, systems: dict) -> list[str]:
    out = []
    for what, unit, word, peak in BEST:
        rows = perf[(perf["unit"] == unit) & perf["variable"].str.contains(word)]
        rows = rows[rows["value"].notna()]
        if rows.empty:
            continue
        best = rows.loc[rows["value"].idxmax()]
        declared = ((systems.get(best["system"]) or {}).get("peaks") or {}).get(peak)
        share = (
            f"{100 * best['value'] / declared:.0f}% of its declared {short(declared)} {unit}"
            if declared
            else "no peak declared"
        )
        where = f"{best['check']} {best['variable']} on {best['system']}, run {best['run_id']}"
        out.append(
            f"context, {what} ever measured: {short(best['value'])} {unit} ({where}; {share})"
        )
    return out


def probe_lines(probes: pd.DataFrame) -> list[str]:
    table = probe_report.variability(probe_report.samples(probes)) if len(probes) else None
    if table is None or table.empty:
        return []
    return [
        f"interference on {t.system} ({t.writers} writers): bandwidth CoV {t.cov_pct:.1f}% "
        f"over {t.samples} probes (mean {short(t.mean_mib_s)} MiB/s), imbalance mean "
        f"{t.mean_imbalance:.2f}, worst {t.max_imbalance:.2f}"
        for t in table.itertuples()
    ]


def job_lines(jobs: pd.DataFrame | None) -> list[str]:
    if jobs is None or jobs.empty:
        return []
    rates = jobs["mib_s_per_cn"].dropna()
    unknown = int(jobs["nodes"].isna().sum())
    if rates.empty:
        return [
            f"{len(jobs):,} jobs, "
            + (
                f"no MiB/s per compute node: {nodecount.WHY_UNKNOWN}"
                if unknown
                else "none moved data"
            )
        ]
    without = f"; {unknown:,} jobs without, {nodecount.WHY_UNKNOWN}" if unknown else ""
    return [
        f"{len(jobs):,} jobs; MiB/s per compute node of the {len(rates):,} that moved data: "
        f"median {short(rates.median())} (10th to 90th percentile {short(rates.quantile(0.1))}"
        f" to {short(rates.quantile(0.9))}; iostudy jobs){without}"
    ]
