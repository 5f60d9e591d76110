"""Seed 000's workload figures (matplotlib, no pyplot state) drawn from the tables of
:mod:`iostudy.metrics.workload_tables`: the interfaces and strategies per job size, the top
projects, files against processes, access sizes and the MiB/s/CN boxes of large jobs. A module of
its own: drawing (axes, colours, legends, names from logs as text) is apart from the numbers, and
matplotlib is imported only when a figure is drawn.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import binary_bytes, short
from iostudy.core.plotting import legend_below, panels
from iostudy.metrics.iotime import CLASS_BYTES, STRATEGIES
from iostudy.metrics.workload_tables import INTERFACES, OTHER, SIZE_BINS

np = deferred("numpy")
pd = deferred("pandas")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Fixed colours, so that a category has the same colour in every report.
_COLOURS = {
    "POSIX": "#1f77b4",
    "STDIO": "#17becf",
    "MPI-IO": "#ff7f0e",
    "HDF5": "#2ca02c",
    "PnetCDF": "#9467bd",
    "DFS": "#e377c2",
    "DAOS": "#bcbd22",
    "N:N": "#1f77b4",
    "N:1": "#d62728",
    "N:M": "#ff7f0e",
    "rank-0": "#8c564b",
    "none": "#c7c7c7",
    "read": "#1f77b4",
    "write": "#d62728",
}


def _text(value, width: int = 28) -> str:
    """A name from a log as matplotlib text: shortened, "$" escaped (matplotlib would read a
    pair as mathtext, and a lone one would fail to parse), a leading "_" kept visible (a legend
    leaves out labels that start with it)."""
    text = str(value)
    if len(text) > width:
        text = text[: width - 1] + "…"
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def _share_bars(ax, frame, measure, categories, stacked, ylabel, annotate_jobs=False):
    """Bars of each category's pct per job-size bin (stacked, or side by side); returns the
    categories drawn."""
    g = frame[frame["measure"] == measure]
    bins = frame.drop_duplicates("procs_min").sort_values("procs_min")
    x = np.arange(len(bins))
    present = [c for c in categories if (g.loc[g["category"] == c, "value"] > 0).any()]
    width = 0.8 if stacked else 0.8 / max(len(present), 1)
    bottom = np.zeros(len(bins))
    for i, category in enumerate(present):
        s = g[g["category"] == category].set_index("procs_min")["pct"]
        values = s.reindex(bins["procs_min"]).fillna(0).to_numpy(float)
        offset = 0 if stacked else (i - (len(present) - 1) / 2) * width
        ax.bar(
            x + offset,
            values,
            width,
            bottom=bottom if stacked else None,
            color=_COLOURS.get(category, "#777777"),
            label=category,
        )
        if stacked:
            bottom += values
    if annotate_jobs:
        for xi, n in zip(x, bins["jobs"], strict=True):
            ax.annotate(
                f"{int(n)}",
                (xi, 100),
                xytext=(0, 2),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=6,
                color="#555555",
            )
    ax.set_xticks(x, bins["procs_range"], rotation=45, ha="right", fontsize=7)
    ax.set_xlabel("processes per job", fontsize=8)
    ax.set_ylabel(ylabel, fontsize=8)
    ax.set_ylim(0, 112)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    if not present:
        what = "no job used one" if measure == "jobs" else "no bytes"
        ax.text(0.5, 0.5, what, transform=ax.transAxes, ha="center", color="#777777")
    return present


def _legend(fig, categories):
    """One legend for the figure's panels, above them."""
    from matplotlib.patches import Patch

    handles = [Patch(color=_COLOURS.get(c, "#777777"), label=c) for c in categories]
    if handles:
        fig.legend(
            handles=handles,
            loc="outside upper center",
            ncol=len(handles),
            fontsize=7,
            frameon=False,
        )


def _share_panels(frame: pd.DataFrame, n: int):
    """A figure of n panels over the job-size bins: side by side when the bins are few, one
    above the other when they are many (the page is some 1,100 pixels wide)."""
    from matplotlib.figure import Figure

    width = max(3.3, 0.45 * frame["procs_min"].nunique() + 1.6)
    side = n * width <= 11
    size = (n * width, 3.3) if side else (min(max(width, 6.0), 11.0), 2.9 * n + 0.3)
    fig = Figure(figsize=size, layout="constrained")
    axes = fig.subplots(1 if side else n, n if side else 1, squeeze=False).ravel()
    return fig, list(axes)


def interfaces_figure(frame: pd.DataFrame) -> Figure:
    measures = [m for m in ("jobs", "bytes read", "bytes written") if (frame["measure"] == m).any()]
    fig, axes = _share_panels(frame, len(measures))
    shown = set()
    for ax, measure in zip(axes, measures, strict=True):
        ylabel = "% of jobs using it" if measure == "jobs" else f"% of {measure}"
        shown |= set(_share_bars(ax, frame, measure, INTERFACES, False, ylabel, measure == "jobs"))
        ax.set_title(
            "jobs (number of jobs above the bars)"
            if measure == "jobs"
            else f"{measure} through it",
            fontsize=8,
        )
    _legend(fig, [i for i in INTERFACES if i in shown])
    return fig


def strategy_figure(frame: pd.DataFrame) -> Figure:
    fig, (left, right) = _share_panels(frame, 2)
    shown = set(_share_bars(left, frame, "jobs", STRATEGIES, True, "% of jobs", True))
    left.set_title("jobs per strategy (number of jobs above the bars)", fontsize=8)
    shown |= set(_share_bars(right, frame, "bytes", list(CLASS_BYTES), True, "% of bytes"))
    right.set_title("bytes per file sharing: N:N, N:1, N:M", fontsize=8)
    _legend(fig, [c for c in STRATEGIES if c in shown])
    return fig


def projects_figure(top: pd.DataFrame) -> Figure:
    from matplotlib import ticker
    from matplotlib.figure import Figure

    top = top.reset_index(drop=True)
    fig = Figure(figsize=(7.5, 1.2 + 0.42 * len(top)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(top))
    for offset, column, label in ((-0.2, "bytes_read", "read"), (0.2, "bytes_written", "write")):
        ax.barh(
            y + offset,
            top[column].astype(float),
            0.4,
            color=_COLOURS[label],
            label="written" if label == "write" else "read",
        )
        for yi, value in zip(y + offset, top[column].astype(float), strict=True):
            ax.annotate(
                binary_bytes(value),
                (value, yi),
                xytext=(2, 0),
                va="center",
                textcoords="offset points",
                fontsize=6,
                color="#333333",
            )
    ax.set_yticks(y, [_text(p) for p in top["project"]], fontsize=7)
    ax.invert_yaxis()
    values = top[["bytes_read", "bytes_written"]].astype(float).to_numpy().ravel()
    positive = values[values > 0]
    if len(positive) and positive.max() / positive.min() > 100:
        # Orders of magnitude apart (seed 000: "a few projects moved orders of magnitude more
        # data than most others"): log axis, ticks on powers of two (binary units).
        ax.set_xscale("log", base=2)
        ax.xaxis.set_major_locator(ticker.LogLocator(base=2, numticks=8))
        ax.set_xlim(positive.min() / 2, positive.max() * 8)
    else:
        # Ticks every power of two bytes (256 MiB, 512 MiB, ...), at most 8 of them.
        high = max(values.max(), 1) * 1.2
        ax.xaxis.set_major_locator(ticker.MultipleLocator(2 ** math.ceil(math.log2(high / 8))))
        ax.set_xlim(0, high)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: binary_bytes(v)))
    ax.set_xlabel("bytes (the layers that moved them: POSIX, STDIO, DFS, DAOS)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    legend_below(fig)
    return fig


def _project_colours(projects: list[str]) -> dict[str, str]:
    from matplotlib import colors as mcolors

    palette = [mcolors.to_hex(c) for c in mcolors.TABLEAU_COLORS.values() if c != "tab:gray"]
    out = {p: palette[i % len(palette)] for i, p in enumerate(projects)}
    out[OTHER] = "#b0b0b0"
    return out


def files_figure(points: pd.DataFrame, projects: list[str]) -> Figure:
    from matplotlib import ticker
    from matplotlib.figure import Figure

    colours = _project_colours(projects)
    fig = Figure(figsize=(7.5, 4.6), layout="constrained")
    ax = fig.subplots()
    # Many points: drawn as one embedded image, so that the page stays small.
    raster = len(points) > 2000
    # No file is plotted on a row of its own below 1 (a log axis has no 0).
    zero_row = 0.5
    for project in [OTHER, *projects]:
        g = points[points["project"] == project]
        if g.empty:
            continue
        files = g["files"].astype(float).where(g["files"] > 0, zero_row)
        ax.scatter(
            g["nprocs"].astype(float),
            files,
            s=14,
            alpha=0.75,
            color=colours[project],
            edgecolors="none",
            label=_text(project),
            rasterized=raster,
        )
    ax.set_xscale("log", base=2)
    ax.set_yscale("log")
    top = max(points["files"].max(), points["nprocs"].max(), 2)
    span = np.array([1, max(points["nprocs"].max(), 2)], dtype=float)
    ax.plot(span, span, ":", color="#555555", linewidth=1, label="one file per process")
    ax.axhline(1, linestyle="--", color="#999999", linewidth=0.8)
    ax.set_ylim(zero_row / 1.6, top * 2)
    ax.axhspan(zero_row / 1.6, 0.75, color="#f2f2f2", zorder=0, linewidth=0)
    ax.xaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
    ax.yaxis.set_major_formatter(
        ticker.FuncFormatter(lambda v, _: "0" if v < 0.75 else short(v) if v >= 1 else "")
    )
    ax.set_yticks([zero_row, *[t for t in (1, 10, 100, 1e3, 1e4, 1e5, 1e6, 1e7) if t <= top * 2]])
    ax.yaxis.set_minor_formatter(ticker.NullFormatter())  # a short log axis labels its minor ticks
    ax.set_xlabel("processes", fontsize=8)
    ax.set_ylabel("files accessed", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.01, 1), borderaxespad=0)
    return fig


def access_sizes_figure(sizes: pd.DataFrame) -> Figure:
    projects = list(dict.fromkeys(sizes["project"]))
    fig, axes = panels(len(projects), 5.2, 2.1, extra_height=0.4, sharey=True)
    labels = list(SIZE_BINS.values())
    x = np.arange(len(labels))
    for ax, project in zip(axes, projects, strict=True):
        g = sizes[sizes["project"] == project]
        for offset, op in ((-0.2, "read"), (0.2, "write")):
            s = g[g["operation"] == op].set_index("size")["pct"].reindex(labels).fillna(0)
            ax.bar(
                x + offset,
                s.to_numpy(float),
                0.4,
                color=_COLOURS[op],
                label="reads" if op == "read" else "writes",
            )
        ax.set_title(_text(project, 50), fontsize=8)
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=6)
        ax.tick_params(axis="y", labelsize=7)
        ax.set_ylabel("% of accesses", fontsize=7)
        ax.set_xlabel("access size", fontsize=7)  # a panel's own: a figure's would meet the legend
        ax.grid(axis="y", alpha=0.3)
    legend_below(fig)
    return fig


def box_figure(stats: pd.DataFrame) -> Figure:
    from matplotlib import ticker
    from matplotlib.figure import Figure

    fig = Figure(figsize=(max(4.5, 0.75 * len(stats) + 1.8), 3.6), layout="constrained")
    ax = fig.subplots()
    boxes = [
        {
            "label": _text(r.project, 18),
            "whislo": r.min,
            "q1": r.q1,
            "med": r.median,
            "q3": r.q3,
            "whishi": r.max,
            "fliers": [],
        }
        for r in stats.itertuples()
    ]
    ax.bxp(
        boxes,
        showfliers=False,
        widths=0.55,
        patch_artist=True,
        boxprops={"facecolor": "#cfe0f1", "edgecolor": "#1f5f99"},
        medianprops={"color": "#d62728", "linewidth": 1.5},
    )
    for i, n in enumerate(stats["jobs"], start=1):
        ax.annotate(
            f"{int(n)} job{'s' if n != 1 else ''}",
            (i, 1),
            xycoords=("data", "axes fraction"),
            xytext=(0, -2),
            textcoords="offset points",
            ha="center",
            va="top",
            fontsize=6,
            color="#555555",
        )
    low, high = stats["min"].min(), stats["max"].max()
    if low > 0 and high / low > 100:
        ax.set_yscale("log")
    else:
        ax.set_ylim(0, high * 1.15 if high > 0 else 1)
    ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
    ax.tick_params(axis="x", labelsize=7, rotation=30)
    ax.tick_params(axis="y", labelsize=7)
    ax.set_ylabel("MiB/s per compute node", fontsize=8)
    ax.grid(axis="y", alpha=0.3)
    return fig
