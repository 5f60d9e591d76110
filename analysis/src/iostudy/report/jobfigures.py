"""The figures of a job page (iostudy.report.jobpage) and of a before/after pair: I/O time per
module, accesses per size bin, time per rank, and the heatmap of bytes over time; and the
page's tables' cells of values the job's log did not record."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import binary_bytes
from iostudy.core.plotting import count_ticks, legend_below, panels
from iostudy.logs import upconversion

np = deferred("numpy")
pd = deferred("pandas")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: one colour per part of the I/O time, on every page
TIME_PARTS = (
    ("read_time", "read", "#4c78a8"),
    ("write_time", "write", "#f58518"),
    ("meta_time", "metadata", "#9d9d9d"),
)
#: ranks drawn one bar each; above, a histogram of their times
RANKS_DRAWN = 64
#: the job page's columns made of others: not recorded when none of them is
DERIVED = {
    "bytes": ("bytes_read", "bytes_written"),
    "meta_pct": ("meta_time",),
    "file": ("file_record_id",),  # a dataset's file (jobdetail.dataset_table)
}


def not_recorded(table: pd.DataFrame, flags) -> pd.DataFrame:
    """A job page's table (a row per module, or per file and module: its ``module`` column)
    with each empty cell of a value the job's module version did not record (as its jobs row's
    ``flags`` say: iostudy.logs.upconversion.flagged) reading "not recorded (module version
    N)"."""
    unrecorded = upconversion.flagged(flags)
    if not unrecorded:
        return table
    out = table.copy()
    for module, (version, columns) in unrecorded.items():
        gone = set(columns) | {c for c, parts in DERIVED.items() if set(parts) <= set(columns)}
        for column in gone & set(out.columns):
            cells = (out["module"] == module) & out[column].isna()
            if cells.any():
                out[column] = out[column].astype(object)
                out.loc[cells, column] = upconversion.text(version)
    return out


def time_split_figure(per_module: pd.DataFrame) -> Figure:
    """Per module, a bar of its read, write and metadata time (seconds summed over the
    processes)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 0.6 + 0.42 * len(per_module)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(per_module))
    left = np.zeros(len(per_module))
    for column, label, colour in TIME_PARTS:
        values = per_module[column].fillna(0).to_numpy(float)
        ax.barh(y, values, left=left, color=colour, label=label, height=0.6)
        left += values
    ax.set_yticks(y, per_module["module"], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("seconds, summed over the processes", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    legend_below(fig)
    return fig


def sizes_figure(bins: pd.DataFrame) -> Figure:
    """Per module (those of jobdetail.size_bins), reads and writes per size bin."""
    names = list(dict.fromkeys(bins["module"]))
    fig, axes = panels(len(names), 4.6, 2.6, extra_height=0.3)
    for ax, name in zip(axes, names, strict=True):
        mine = bins[bins["module"] == name]
        labels = list(dict.fromkeys(mine["size"]))
        x = np.arange(len(labels))
        for shift, (op, colour) in zip(
            (-0.2, 0.2), (("read", "#4c78a8"), ("write", "#f58518")), strict=True
        ):
            counts = mine[mine["operation"] == op].set_index("size")["accesses"]
            ax.bar(x + shift, counts.reindex(labels).fillna(0), width=0.4, color=colour, label=op)
        ax.set_xticks(x, labels, rotation=45, ha="right", fontsize=6)
        ax.set_title(f"{name} accesses per size", fontsize=9)
        ax.tick_params(axis="y", labelsize=7)
        count_ticks(ax.yaxis)
        ax.grid(axis="y", alpha=0.3)
    legend_below(fig)
    return fig


def ranks_figure(per_rank: pd.DataFrame) -> Figure:
    """Each rank's I/O time in its own records: a bar per rank (up to RANKS_DRAWN), else a
    histogram of the processes' times."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(7, 2.6), layout="constrained")
    ax = fig.subplots()
    if len(per_rank) <= RANKS_DRAWN:
        ax.bar(per_rank["rank"].astype(str), per_rank["io_time"], color="#4c78a8")
        ax.set_xlabel("rank", fontsize=8)
        ax.set_ylabel("I/O time (s)", fontsize=8)
        ax.tick_params(axis="x", labelsize=6)
    else:
        ax.hist(per_rank["io_time"], bins=30, color="#4c78a8")
        ax.set_xlabel("I/O time of a process in its own records (s)", fontsize=8)
        ax.set_ylabel("processes", fontsize=8)
        count_ticks(ax.yaxis)
    ax.tick_params(axis="y", labelsize=7)
    ax.grid(axis="y", alpha=0.3)
    return fig


def heatmap_figure(hm: pd.DataFrame) -> Figure:
    """Per API, the bytes each rank moved (read + written) in each time bin, as PyDarshan's
    heatmap: ranks down, time across, a logarithmic colour scale shared by the APIs."""
    from matplotlib import colors as mcolors
    from matplotlib import ticker

    apis = list(dict.fromkeys(hm["api"]))
    ranks = int(hm["rank"].max()) + 1
    fig, axes = panels(len(apis), 7.2, 1.1 + min(2.6, 0.08 * ranks), ncols=1)
    moved = (hm["read_bytes"] + hm["write_bytes"]).to_numpy(float)
    norm = mcolors.LogNorm(max(1.0, moved.min()), max(2.0, moved.max()))
    end = float(((hm["bin"] + 1) * hm["bin_width_s"]).max())  # one time axis for the APIs
    for ax, api in zip(axes, apis, strict=True):
        mine = hm[hm["api"] == api]
        width = float(mine["bin_width_s"].iloc[0])
        nbins = int(mine["bin"].max()) + 1
        grid = np.full((ranks, nbins), np.nan)
        grid[mine["rank"].to_numpy(int), mine["bin"].to_numpy(int)] = (
            mine["read_bytes"] + mine["write_bytes"]
        ).to_numpy(float)
        mesh = ax.pcolormesh(
            np.arange(nbins + 1) * width,
            np.arange(ranks + 1) - 0.5,
            np.ma.masked_invalid(grid),
            cmap="viridis",
            norm=norm,
        )
        ax.invert_yaxis()
        ax.set_xlim(0, end)
        ax.set_title(f"{api}: bytes per {width:g} s bin", fontsize=9)
        ax.set_ylabel("rank", fontsize=8)
        ax.set_xlabel("seconds since the job started", fontsize=8)
        ax.tick_params(labelsize=7)
        count_ticks(ax.yaxis)
        bar = fig.colorbar(mesh, ax=ax, shrink=0.9, pad=0.01)
        bar.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: binary_bytes(v)))
        bar.ax.tick_params(labelsize=6)
    return fig


def pair_figure(summary: pd.DataFrame, labels: tuple[str, str]) -> Figure:
    """A before/after pair (iostudy.metrics.comparejobs): per figure of ``summary`` (metric,
    unit, a, b), the two values side by side."""
    fig, axes = panels(len(summary), 2.3, 2.1, ncols=4, extra_height=0.3)
    for ax, row in zip(axes, summary.itertuples(), strict=True):
        ax.bar([0, 1], [row.a, row.b], color=["#9d9d9d", "#4c78a8"], tick_label=list(labels))
        ax.set_title(f"{row.metric}\n({row.unit})", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    return fig
