"""The report's comparison sections (iostudy.metrics.compare): systems of every site side by side
per comparable result, with their component ceilings, what could not be compared and why; and per
system each result over time with its verdict against its baseline, its noise and its
change-points."""

from __future__ import annotations

import textwrap

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import short
from iostudy.core.plotting import legend_below, panels
from iostudy.metrics import cross_site
from iostudy.report import verdict as verdict_mod
from iostudy.report.figures import date_axis, time_span

np = deferred("numpy")
pd = deferred("pandas")

PANELS = 6  # per figure: more series are in the CSV


def cross_site_figure(side: pd.DataFrame):
    from matplotlib import ticker

    metrics = list(dict.fromkeys(side["metric"]))[:PANELS]
    fig, axes = panels(len(metrics), 5.4, 2.4)
    for ax, metric in zip(axes, metrics, strict=True):
        g = side[side["metric"] == metric].reset_index(drop=True)
        y = np.arange(len(g))
        ax.barh(y, g["latest"], color="#4878a8", label="latest run")
        ax.plot(g["median"], y, "k|", markersize=12, label="median of runs")
        ceilings = g["ceiling"].astype(float)
        if ceilings.notna().any():
            ax.plot(ceilings, y, "v", color="#c07000", label="component ceiling")
        ax.set_yticks(y, g["system"], fontsize=7)
        ax.set_xlabel(g["unit"].iloc[0], fontsize=7)
        ax.set_title(textwrap.fill(metric, 70), fontsize=7)
        ax.tick_params(labelsize=7)
        ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.grid(axis="x", alpha=0.3)
    legend_below(fig)
    return fig


def over_time_figure(judged: pd.DataFrame):
    """Per series (up to PANELS): each run's value (the median of its repetitions, dots), the
    reference floor, the change-points (dashed vertical lines: a run that starts a new
    segment), the latest verdicts' marks; the title says the series' noise and the smallest
    change it can detect."""
    keys = list(dict.fromkeys(zip(judged["label"], judged["metric"], strict=True)))[:PANELS]
    fig, axes = panels(len(keys), 5.4, 2.6)
    span = time_span(pd.to_datetime(judged["started"]))
    for ax, (label, metric) in zip(axes, keys, strict=True):
        s = judged[(judged["label"] == label) & (judged["metric"] == metric)]
        _draw_series(ax, s.sort_values("started"))
        ax.set_title(textwrap.fill(f"{label}: {metric}", 70) + f"\n{noise_text(s)}", fontsize=7)
        date_axis(ax, span)
    legend_below(fig)
    return fig


# How a run's verdict is marked on its series: (marker, colour); the other verdicts unmarked.
MARKS = {"regression": ("x", "#c00000"), "improvement": ("^", "#17692a")}


def _draw_series(ax, s: pd.DataFrame) -> None:
    t = pd.to_datetime(s["started"])
    if "repetitions" in s:  # each repetition of a run, behind its median
        reps = [(when, v) for when, vs in zip(t, s["repetitions"], strict=True) for v in vs]
        if reps:
            ax.plot(
                *zip(*reps, strict=True), ".", color="#9db8d4", markersize=3, label="repetition"
            )
    ax.plot(t, s["value"], "o-", color="#4878a8", markersize=4, label="value (median)")
    low = s["band_low"].astype(float).replace(-np.inf, np.nan)
    if low.notna().any():
        ax.plot(t, low, "--", color="#808080", linewidth=1, label="reference floor")
    for when in t[s["change_point"].fillna(False).astype(bool).to_numpy()]:
        ax.axvline(when, color="#7030a0", linestyle="--", linewidth=1.2, label="change-point")
    for verdict, (marker, colour) in MARKS.items():
        marked = s[s["verdict"] == verdict]
        if len(marked):
            ax.plot(
                pd.to_datetime(marked["started"]),
                marked["value"],
                marker,
                color=colour,
                markersize=10,
                markeredgewidth=2,
                linestyle="none",
                label=verdict,
            )
    ax.set_ylabel(s["unit"].iloc[0], fontsize=7)
    ax.set_ylim(bottom=0)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)


def noise_text(s: pd.DataFrame) -> str:
    """A series' noise as the page says it: the CoV of its repetitions and the smallest change
    detectable at it (compare.judge's, the same on every row of a series: its latest's)."""
    last = s.sort_values("started").iloc[-1]
    if pd.isna(last["noise_cov"]):
        return "noise: no repetitions"
    text = f"noise CoV {100 * last['noise_cov']:.1f}%"
    if pd.notna(last["min_detectable_pct"]):
        text += f", smallest detectable change {last['min_detectable_pct']:.0f}%"
    return text


def add_cross_site(add, table: pd.DataFrame, descriptions: dict) -> None:
    """The cross-site section through report.render's add(), from compare.results_of's table."""
    side, apart = cross_site.cross_site(table, descriptions)
    add(
        "cross-site",
        "figure",
        "cross-site",
        "Each result that two or more systems share (equal fingerprint: check, variable, "
        "benchmark version, MPI flavour, parameters and scale), the systems side by side: bar = "
        "latest run, | = median of the runs, triangle = the system's component ceiling "
        "(aggregate storage bandwidth for MiB/s, metadata rate for ops/s, from its system "
        "description). Another site's systems are named site/system.",
        side,
        fig=cross_site_figure(side) if len(side) else None,
        table=True,
        hide=["fingerprint"],
    )
    add(
        "cross-site",
        "table",
        "not-comparable",
        "Results that no other system can be compared with, and why: what differs from the "
        "nearest fingerprint of another system.",
        apart,
        table=True,
    )


#: the regression section's CSV: every judged run of every series (compare.judge's columns)
JUDGED_COLUMNS = [
    "label",
    "run_id",
    "started",
    "metric",
    "measures",
    "unit",
    "value",
    "verdict",
    "change_pct",
    "change_low_pct",
    "change_high_pct",
    "p_value",
    "baseline",
    "basis",
    "noise_cov",
    "min_detectable_pct",
    "change_point",
    "band_low",
    "band_high",
]


def series_table(judged: pd.DataFrame) -> pd.DataFrame:
    """One row per series, its latest run's verdict first (regressions at the top): the change
    with its interval against its baseline, the series' noise, and its change-points."""
    rows = []
    for _, s in judged.groupby(["label", "fingerprint"], sort=False):
        s = s.sort_values(["started", "run_id"])
        last = s.iloc[-1]
        points = s.loc[s["change_point"].fillna(False).astype(bool), "run_id"]
        rows.append(
            {
                "system": last["label"],
                "verdict": last["verdict"],
                "metric": last["metric"],
                "change": verdict_mod.change_text(last),
                # noise and change-points in the table's first screen: what says how far a
                # verdict can be trusted, before the evidence's long texts
                "noise_cov_pct": 100 * last["noise_cov"],
                "min_detectable_pct": last["min_detectable_pct"],
                "change_points": ", ".join(points) or "none",
                "runs": len(s),
                "value": last["value"],
                "unit": last["unit"],
                "p_value": last["p_value"],
                "measures": last["measures"],
                "latest_run": last["run_id"],
                "baseline": last["baseline"],
                "basis": last["basis"],
            }
        )
    table = pd.DataFrame(rows)
    if table.empty:
        return table
    first = (table["verdict"] != "regression").astype(int)
    return table.assign(_o=first).sort_values("_o", kind="stable").drop(columns="_o")


def add_regressions(add, judged: pd.DataFrame) -> None:
    """The regression section through report.render's add(), from compare.judge's table."""
    add(
        "regressions",
        "table",
        "regression-verdicts",
        "Each series' latest run against its baseline (iostudy compare): its verdict, what it "
        "measured (storage, or memory: the page cache), the "
        "change in % of the baseline's median with its 95% interval, the rank test's p value, "
        "what it was compared with; the series' noise (the coefficient of variation of the "
        "repetitions within a run), the smallest change detectable at that noise, and the runs "
        "that start a new segment of the series (change-points over its whole history). "
        "Regressions first.",
        series_table(judged),
        table=True,
    )
    series = judged.groupby(["label", "fingerprint"])["run_id"].transform("count")
    # the series drawn: of two runs or more, those with a regression first
    regressed = (
        (judged["verdict"] == "regression")
        .groupby([judged["label"], judged["fingerprint"]])
        .transform("any")
    )
    shown = judged[series > 1].assign(_first=~regressed[series > 1])
    shown = shown.sort_values("_first", kind="stable").drop(columns="_first")
    add(
        "regressions",
        "figure",
        "regressions",
        f"Each result over time per system (series of two runs or more, up to {PANELS}, "
        "those with a regression first; every run of every series in the CSV): each run's "
        "repetitions (small dots) and their median (the value), the reference floor when the "
        "system has one, dashed vertical lines: change-points (a run that starts a new "
        "segment), red x: a regression, green triangle: an improvement against the run's "
        "baseline. Each title gives the series' noise.",
        judged[JUDGED_COLUMNS].rename(columns={"label": "system"}),
        fig=over_time_figure(shown) if len(shown) else None,
    )
