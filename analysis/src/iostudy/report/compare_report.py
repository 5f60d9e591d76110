"""The report's comparison sections (iostudy.metrics.compare): systems of every site side by side
per comparable result, with their component ceilings, what could not be compared and why; and per
system each result over time with its band and the flagged points."""

from __future__ import annotations

import textwrap

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import short
from iostudy.core.plotting import legend_below, panels
from iostudy.metrics import compare
from iostudy.report.figures import time_span

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
    from matplotlib import dates as mdates

    keys = list(dict.fromkeys(zip(judged["label"], judged["metric"], strict=True)))[:PANELS]
    fig, axes = panels(len(keys), 5.4, 2.6)
    span = time_span(pd.to_datetime(judged["started"]))
    for ax, (label, metric) in zip(axes, keys, strict=True):
        s = judged[(judged["label"] == label) & (judged["metric"] == metric)]
        s = s.sort_values("started")
        t = pd.to_datetime(s["started"])
        ax.plot(t, s["value"], "o-", color="#4878a8", markersize=4, label="value")
        ax.fill_between(
            t,
            s["history_low"],
            s["history_high"],
            color="#4878a8",
            alpha=0.15,
            linewidth=0,
            label="history band",
        )
        low = s["band_low"].astype(float).replace(-np.inf, np.nan)
        if low.notna().any():
            ax.plot(t, low, "--", color="#808080", linewidth=1, label="reference floor")
        bad = s[s["verdict"] == "regression"]
        if len(bad):
            ax.plot(
                pd.to_datetime(bad["started"]),
                bad["value"],
                "x",
                color="#c00000",
                markersize=10,
                markeredgewidth=2,
                label="regression",
            )
        ax.set_title(textwrap.fill(f"{label}: {metric}", 70), fontsize=7)
        ax.set_ylabel(s["unit"].iloc[0], fontsize=7)
        ax.set_ylim(bottom=0)
        ax.set_xlim(*span)
        locator = mdates.AutoDateLocator(maxticks=5)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    legend_below(fig)
    return fig


def add_cross_site(add, table: pd.DataFrame, descriptions: dict) -> None:
    """The cross-site section through report.render's add(), from compare.results_of's table."""
    side, apart = compare.cross_site(table, descriptions)
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


def add_regressions(add, table: pd.DataFrame) -> None:
    """The regression section through report.render's add(), from compare.results_of's table."""
    judged = compare.judge(table)
    series = judged.groupby(["label", "fingerprint"])["run_id"].transform("count")
    # the series drawn: of two runs or more, those with a regression first
    regressed = (
        (judged["verdict"] == "regression")
        .groupby([judged["label"], judged["fingerprint"]])
        .transform("any")
    )
    shown = judged[series > 1].assign(_first=~regressed[series > 1])
    shown = shown.sort_values("_first", kind="stable").drop(columns="_first")
    columns = [
        "label",
        "run_id",
        "started",
        "metric",
        "unit",
        "value",
        "history_median",
        "history_low",
        "history_high",
        "band_low",
        "band_high",
        "change_pct",
        "verdict",
    ]
    add(
        "regressions",
        "figure",
        "regressions",
        f"Each result over time per system (series of two runs or more, up to {PANELS}, "
        "those with a regression first; every series in the CSV): the value, the history "
        "band of iostudy compare (median of the previous 10 runs +/- max(3 x 1.4826 x MAD, 10% "
        "of the median), from 3 runs on), the reference floor when the system has one, and "
        "red x: a regression (worse than the band or the floor).",
        judged[columns].rename(columns={"label": "system"}),
        fig=over_time_figure(shown) if len(shown) else None,
    )
