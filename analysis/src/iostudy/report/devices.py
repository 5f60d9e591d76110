"""The report's storage-device section (seed 000, IV): the storage servers' block-device
throughput over time, its burstiness, peaks and gaps, from the store's iostat table
(:mod:`iostudy.collect.iostatmonitor` collects it, :mod:`iostudy.collect.iostatanalysis` computes
the series)."""

from __future__ import annotations

from iostudy.collect.iostatanalysis import (
    burstiness,
    daily_totals,
    gaps,
    io_rows,
    share_below,
    summary,
    throughput,
)
from iostudy.collect.iostatimport import TABLE
from iostudy.core.deferred import deferred
from iostudy.core.plotting import legend_below
from iostudy.report.figures import time_span

pd = deferred("pandas")

#: the page's section of this module's figures and tables
SECTION = "iostat"


def _rate_unit(series: pd.DataFrame) -> tuple[float, str]:
    peak = series[["read_mib_s", "write_mib_s"]].to_numpy().max() if len(series) else 0
    return (1024.0, "GiB/s") if peak >= 10 * 1024 else (1.0, "MiB/s")


def missing_spans(series: pd.DataFrame) -> list[tuple[pd.Timestamp, pd.Timestamp]]:
    """The spans of the :func:`throughput` series without a record from any host."""
    if len(series) < 2:
        return []
    bucket = pd.Timedelta(seconds=int(series["bucket_s"].iloc[0]))
    times = series["time"].sort_values().to_list()
    return [(a + bucket, b) for a, b in zip(times, times[1:], strict=False) if b - a > bucket]


def throughput_figure(series: pd.DataFrame):
    """Seed 000's Fig. 6: aggregate read and write throughput over time; the spans without a
    record from any host are shaded (the lines break there)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 3.6), layout="constrained")
    ax = fig.subplots()
    bucket = int(series["bucket_s"].iloc[0])
    full = pd.date_range(series["time"].min(), series["time"].max(), freq=f"{bucket}s")
    s = series.set_index("time").reindex(full)
    scale, unit = _rate_unit(series)
    ax.plot(s.index, s["read_mib_s"] / scale, linewidth=0.8, label="read", color="C0")
    ax.plot(s.index, s["write_mib_s"] / scale, linewidth=0.8, label="write", color="C3")
    for n, (a, b) in enumerate(missing_spans(series)):
        ax.axvspan(
            a, b, color="grey", alpha=0.25, linewidth=0, label="no record" if n == 0 else None
        )
    ax.set_xlim(*time_span(series["time"]))  # a capture of seconds on an axis of seconds
    ax.set_ylabel(f"aggregate {unit} ({bucket} s)", fontsize=8)
    ax.set_xlabel("time (UTC)", fontsize=8)
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=7)
    legend_below(fig)
    return fig


def burstiness_figure(cdf: pd.DataFrame, series: pd.DataFrame):
    """Seed 000's Fig. 7: the CDF of total throughput over the recorded intervals, with a third
    of the peak marked."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(6, 3.6), layout="constrained")
    ax = fig.subplots()
    ax.step(cdf["total_mib_s"], cdf["fraction"], where="post", color="C0", linewidth=1.2)
    peak = float(series["total_mib_s"].max())
    share = share_below(series)
    ax.axvline(
        peak / 3,
        color="C3",
        linestyle="--",
        linewidth=1,
        label=f"a third of peak ({peak / 3:.4g} MiB/s): {100 * share:.1f}% of time below",
    )
    ax.set_xlabel(
        f"total throughput, MiB/s ({int(series['bucket_s'].iloc[0])} s intervals)", fontsize=8
    )
    ax.set_ylabel("fraction of time", fontsize=8)
    ax.set_ylim(0, 1.02)
    ax.grid(alpha=0.3)
    ax.tick_params(labelsize=7)
    legend_below(fig)
    return fig


def add_section(add, tables: dict[str, pd.DataFrame]) -> None:
    """The report's storage-device section (seed 000, IV) through report.render's add(), under
    :data:`SECTION`; nothing when the store has no iostat-mon records."""
    iostat = tables.get(TABLE)
    if iostat is None or io_rows(iostat).empty:
        return
    series = throughput(iostat)
    gaps_df = gaps(iostat)
    add(
        SECTION,
        "figure",
        "iostat-throughput",
        "Aggregate read and write throughput at the block devices of the storage servers "
        "(iostat-mon, all hosts and selected devices summed per interval), over time; shaded: "
        "no record from any host (seed 000, Fig. 6).",
        series,
        fig=throughput_figure(series),
    )
    add(
        SECTION,
        "table",
        "iostat-summary",
        "Storage activity in numbers (seed 000, IV): data read and written, peak one-minute "
        "rates, mean throughput and the share of time below a third of the peak.",
        summary(iostat, series),
        table=True,
    )
    add(
        SECTION,
        "table",
        "iostat-daily",
        "Data read and written per day (UTC) at the storage servers' block devices, and how "
        "much of the day the record covers.",
        daily_totals(iostat),
        table=True,
    )
    add(
        SECTION,
        "figure",
        "iostat-burstiness",
        "Burstiness: cumulative distribution of the total (read + write) throughput over the "
        "recorded intervals, with a third of the peak marked (seed 000, Fig. 7).",
        cdf := burstiness(series),
        fig=burstiness_figure(cdf, series),
    )
    add(
        SECTION,
        "table",
        "iostat-gaps",
        "Gaps in the iostat-mon record: when no interval was recorded, and why (the monitor's "
        "gap and stop records).",
        gaps_df,
        table=True,
    )
