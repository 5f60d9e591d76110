"""Seed 000's workload characterization of a study's job logs: pure functions from the job table
(:func:`iostudy.metrics.jobstats.job_table`, one row per log) to the data of each figure and table,
the figures (matplotlib, no pyplot state), and :func:`add_section` for ``iostudy.report.report``.

=============  ==========================================================================
Fig. 2         :func:`interfaces_by_size`: per job-size bin, the share of jobs using each
               interface and the share of the bytes read and written through it
Fig. 3         :func:`strategy_by_size`: per job-size bin, the share of jobs per file-access
               strategy and the share of bytes to unique (N:N), shared (N:1) and partially
               shared (N:M) files
Fig. 4         :func:`top_projects`: the projects (Slurm accounts) that moved the most data
Table II       :func:`coverage_table`: how much of each project's work the logs cover
Fig. 5         :func:`files_vs_procs`: files accessed against processes, per job and project
Fig. 10        :func:`large_jobs` and :func:`box_stats`: MiB/s/CN of each project's large jobs
Table IV       :func:`project_averages`: per project, the averages over its large jobs
Fig. 9         :func:`access_sizes`: per project, the share of accesses in each size bin
=============  ==========================================================================

Job sizes are bins of processes on powers of two, [2^k, 2^(k+1)). A job with no account is
in the project "(unknown)". Large jobs are those with at least ``large_procs`` processes that
moved at least ``large_mib`` MiB (seed 000: 1,024 and 500), the filter of Figs. 9, 10 and
Table IV.

Totals of bytes and counts are summed as float64 and shown as integers when every one is exact
(:func:`iostudy.core.numfmt.integral`): a store's values are each below 2^62, but many of them
add up past 2^63, where int64 sums wrap around.
"""

from __future__ import annotations

import math
import re
from typing import TYPE_CHECKING

import numpy as np
import pandas as pd

from iostudy.collect import sacct
from iostudy.core.numfmt import MIB, integral, panels, short
from iostudy.logs import logrows, modules
from iostudy.metrics import jobstats

if TYPE_CHECKING:
    from matplotlib.figure import Figure

# Seed 000, section V: "at least 1,024 processes and moved at least 500 MiB of data".
LARGE_PROCS = 1024
LARGE_MIB = 500.0
# The seed's Fig. 4, Table II and section V look at the ten projects that moved the most data.
TOP = 10
UNKNOWN = "(unknown)"
OTHER = "(other projects)"

# The job table's interfaces (high level last, as in seed 000's Fig. 2 legend) and strategies.
INTERFACES = modules.INTERFACE_ORDER
STRATEGIES = jobstats.STRATEGIES
# The byte classes of Fig. 3: files accessed by one process, by all, by some.
BYTE_CLASSES = {"N:N": "unique_bytes", "N:1": "shared_bytes", "N:M": "partial_bytes"}
# Darshan's access-size bins: the job table's column suffixes and their labels.
SIZE_BINS = dict(zip((b.lower() for b in logrows.SIZE_BINS),
                     ("0-100", "100-1K", "1K-10K", "10K-100K", "100K-1M", "1M-4M", "4M-10M",
                      "10M-100M", "100M-1G", "1G+"), strict=True))  # fmt: skip
# Table IV's columns: per large job, averaged per project.
AVERAGED = (
    "mib_s_per_cn",
    "md_cost_pct",
    "files_per_proc",
    "creates_per_proc",
    "seq_pct",
    "aligned_pct",
    "mib_per_proc",
)
SIZE_COLUMNS = ["procs_min", "procs_max", "procs_range", "jobs"]
SHARE_COLUMNS = [*SIZE_COLUMNS, "measure", "category", "value", "pct"]

# Fixed colours, so that a category has the same colour in every report.
_COLOURS = {
    "POSIX": "#1f77b4",
    "STDIO": "#17becf",
    "MPI-IO": "#ff7f0e",
    "HDF5": "#2ca02c",
    "PnetCDF": "#9467bd",
    "N:N": "#1f77b4",
    "N:1": "#d62728",
    "N:M": "#ff7f0e",
    "rank-0": "#8c564b",
    "none": "#c7c7c7",
    "read": "#1f77b4",
    "write": "#d62728",
}


# ---------------------------------------------------------------------------------------------
# Tables (pure functions of the job table)


def project_of(jobs: pd.DataFrame) -> pd.Series:
    """Each job's project: its Slurm account, or "(unknown)"."""
    account = jobs["account"] if "account" in jobs else pd.Series(None, index=jobs.index)
    account = account.astype("object").where(account.notna(), None)
    return account.map(lambda a: a if isinstance(a, str) and a.strip() else UNKNOWN)


def _num(jobs: pd.DataFrame, column: str) -> pd.Series:
    return pd.to_numeric(jobs[column], errors="coerce").astype(float).fillna(0.0)


def moved(jobs: pd.DataFrame) -> pd.Series:
    """Bytes read + written of each job (in the job table's module scope)."""
    return _num(jobs, "bytes_read") + _num(jobs, "bytes_written")


def size_bins(nprocs: pd.Series) -> pd.DataFrame:
    """Each job's size bin: procs_min = 2^k <= nprocs < 2^(k+1) = procs_max + 1, and the label
    procs_range ("1", "2-3", "1024-2047"). A job without a process count is in bin 1."""
    n = pd.to_numeric(nprocs, errors="coerce").fillna(1).clip(lower=1).astype("int64")
    low = n.map(lambda v: 1 << (int(v).bit_length() - 1))
    high = 2 * low - 1
    label = [str(lo) if lo == hi else f"{lo}-{hi}" for lo, hi in zip(low, high, strict=True)]
    return pd.DataFrame({"procs_min": low, "procs_max": high, "procs_range": label}, index=n.index)


def _with_bins(jobs: pd.DataFrame) -> pd.DataFrame:
    out = jobs.join(size_bins(jobs["nprocs"]))
    out["jobs"] = out.groupby("procs_min")["procs_min"].transform("size")
    return out


def interfaces_by_size(jobs: pd.DataFrame, module_bytes: pd.DataFrame | None = None):
    """Seed 000's Fig. 2: per job-size bin and interface (POSIX, STDIO, MPI-IO, HDF5, PnetCDF),
    one row per measure:

    - "jobs": value = jobs of the bin whose logs used the interface (the job table's
      ``interfaces``), pct = their share of the bin's jobs (a job may use several);
    - "bytes read", "bytes written": value = bytes through the interface's module (from
      ``module_bytes``: log_sha256, interface, bytes_read, bytes_written; per job and interface),
      pct = their share of the bin's bytes in the job table's scope (POSIX+STDIO: every byte that
      reached the file system; MPI-IO, HDF5 and PnetCDF sit above POSIX, so their bytes are also
      POSIX's). An interface with no row in module_bytes has no byte rows.

    Columns: procs_min, procs_max, procs_range, jobs (in the bin), measure, category, value, pct.
    """
    if jobs.empty:
        return pd.DataFrame(columns=SHARE_COLUMNS)
    binned = _with_bins(jobs)
    names = binned["interfaces"].fillna("").astype(str)
    used = pd.DataFrame(
        {i: names.str.contains(rf"(?:^|\+){re.escape(i)}(?:\+|$)") for i in INTERFACES}
    )
    rows = []
    measured = set()
    per_job = None
    if module_bytes is not None and len(module_bytes):
        measured = set(module_bytes["interface"])
        summed = module_bytes.astype({"bytes_read": float, "bytes_written": float})
        per_job = summed.groupby(["log_sha256", "interface"])[["bytes_read", "bytes_written"]].sum()
    for _, g in binned.groupby("procs_min", sort=True):
        head = g[SIZE_COLUMNS].iloc[0].tolist()
        n = len(g)
        totals = {
            "bytes read": _num(g, "bytes_read").sum(),
            "bytes written": _num(g, "bytes_written").sum(),
        }
        for interface in INTERFACES:
            count = int(used.loc[g.index, interface].sum())
            rows.append([*head, "jobs", interface, count, 100.0 * count / n])
        for measure, column in (("bytes read", "bytes_read"), ("bytes written", "bytes_written")):
            for interface in INTERFACES:
                if interface not in measured:
                    continue
                keys = pd.MultiIndex.from_arrays(
                    [g["log_sha256"], [interface] * len(g)], names=per_job.index.names
                )
                value = float(per_job[column].reindex(keys).fillna(0).sum())
                total = totals[measure]
                rows.append(
                    [*head, measure, interface, value, 100.0 * value / total if total else np.nan]
                )
    return _integral_values(pd.DataFrame(rows, columns=SHARE_COLUMNS))


def _integral_values(frame: pd.DataFrame) -> pd.DataFrame:
    """Counts and bytes are whole numbers: shown and written without a fraction when exact."""
    frame["value"] = integral(frame["value"])
    return frame


def strategy_by_size(jobs: pd.DataFrame) -> pd.DataFrame:
    """Seed 000's Fig. 3: per job-size bin, measure "jobs": jobs per file-access strategy (N:N,
    N:1, N:M, rank-0, none) and their share of the bin's jobs; measure "bytes": bytes to files
    only one process accessed (N:N), all processes (N:1), some (N:M), and their share of the
    three's sum. Columns as :func:`interfaces_by_size`."""
    if jobs.empty:
        return pd.DataFrame(columns=SHARE_COLUMNS)
    binned = _with_bins(jobs)
    rows = []
    for _, g in binned.groupby("procs_min", sort=True):
        head = g[SIZE_COLUMNS].iloc[0].tolist()
        counts = g["strategy"].fillna("none").value_counts()
        for strategy in STRATEGIES:
            count = int(counts.get(strategy, 0))
            rows.append([*head, "jobs", strategy, count, 100.0 * count / len(g)])
        sums = {c: _num(g, col).sum() for c, col in BYTE_CLASSES.items()}
        total = sum(sums.values())
        for category, value in sums.items():
            rows.append(
                [*head, "bytes", category, value, 100.0 * value / total if total else np.nan]
            )
    return _integral_values(pd.DataFrame(rows, columns=SHARE_COLUMNS))


def top_projects(jobs: pd.DataFrame, n: int = TOP) -> pd.DataFrame:
    """Seed 000's Fig. 4: the n projects that moved the most bytes (read + written), most first
    (ties by name): project, jobs, bytes_read, bytes_written, bytes_moved."""
    columns = ["project", "jobs", "bytes_read", "bytes_written", "bytes_moved"]
    if jobs.empty:
        return pd.DataFrame(columns=columns)
    frame = pd.DataFrame(
        {
            "project": project_of(jobs),
            "bytes_read": _num(jobs, "bytes_read"),
            "bytes_written": _num(jobs, "bytes_written"),
        }
    )
    out = frame.groupby("project").agg(
        jobs=("project", "size"),
        bytes_read=("bytes_read", "sum"),
        bytes_written=("bytes_written", "sum"),
    )
    out["bytes_moved"] = out["bytes_read"] + out["bytes_written"]
    for column in columns[2:]:
        out[column] = integral(out[column])
    out = out.reset_index().sort_values(["bytes_moved", "project"], ascending=[False, True])
    return out.head(n).reset_index(drop=True)[columns]


def files_vs_procs(jobs: pd.DataFrame, projects: list[str]) -> pd.DataFrame:
    """Seed 000's Fig. 5: per job, its processes and the files it accessed, with its project
    when it is one of projects, else "(other projects)": project, log, nprocs, files,
    strategy; in the order of projects, then by processes."""
    columns = ["project", "log", "nprocs", "files", "strategy"]
    if jobs.empty:
        return pd.DataFrame(columns=columns)
    project = project_of(jobs)
    out = pd.DataFrame(
        {
            "project": project.where(project.isin(projects), OTHER),
            "log": jobs["log"],
            "nprocs": pd.to_numeric(jobs["nprocs"], errors="coerce"),
            "files": pd.to_numeric(jobs["files"], errors="coerce").fillna(0),
            "strategy": jobs["strategy"],
        }
    )
    order = {p: i for i, p in enumerate([*projects, OTHER])}
    out["_o"] = out["project"].map(order)
    out = out.sort_values(["_o", "nprocs", "files", "log"], kind="stable").drop(columns="_o")
    return out.reset_index(drop=True)


def large_jobs(jobs: pd.DataFrame, procs: int = LARGE_PROCS, mib: float = LARGE_MIB):
    """The jobs with at least procs processes that moved at least mib MiB (read + written)."""
    if jobs.empty:
        return jobs
    nprocs = pd.to_numeric(jobs["nprocs"], errors="coerce").fillna(0)
    return jobs[(nprocs >= procs) & (moved(jobs) >= mib * MIB)]


def _in_projects(jobs: pd.DataFrame, projects: list[str]) -> pd.DataFrame:
    out = jobs.assign(project=project_of(jobs))
    return out[out["project"].isin(projects)]


def box_stats(large: pd.DataFrame, projects: list[str]) -> pd.DataFrame:
    """Seed 000's Fig. 10: per project (in the order of projects, those with large jobs), the
    minimum, first quartile, median, third quartile and maximum of its large jobs' MiB/s/CN
    (quartiles interpolated linearly); jobs without a value (no I/O time) are left out."""
    columns = ["project", "jobs", "min", "q1", "median", "q3", "max"]
    mine = _in_projects(large, projects) if len(large) else large
    rows = []
    for project in projects:
        if mine.empty:
            break
        v = pd.to_numeric(mine.loc[mine["project"] == project, "mib_s_per_cn"], errors="coerce")
        v = v[np.isfinite(v)]
        if len(v):
            q = np.percentile(v.to_numpy(float), [0, 25, 50, 75, 100])
            rows.append([project, len(v), *q])
    return pd.DataFrame(rows, columns=columns)


def project_averages(large: pd.DataFrame, projects: list[str]) -> pd.DataFrame:
    """Seed 000's Table IV: per project with large jobs (in the order of projects), the number
    of its large jobs and the mean over them of MiB/s/CN, metadata cost (% of I/O time), files
    and creates per process, sequential and aligned accesses (%) and MiB per process."""
    columns = ["project", "jobs", *AVERAGED]
    if large.empty:
        return pd.DataFrame(columns=columns)
    mine = _in_projects(large, projects)
    values = mine[list(AVERAGED)].apply(pd.to_numeric, errors="coerce").astype(float)
    values = values.replace([np.inf, -np.inf], np.nan)
    out = values.groupby(mine["project"]).mean()
    out.insert(0, "jobs", mine.groupby("project").size())
    out = out.reindex([p for p in projects if p in out.index])
    return out.reset_index(names="project")[columns]


def access_sizes(large: pd.DataFrame, projects: list[str]) -> pd.DataFrame:
    """Seed 000's Fig. 9: per project with large jobs (in the order of projects), operation
    (read, write) and access-size bin, the accesses of its large jobs and their share of all
    its accesses (reads + writes: a project's bars sum to 100%)."""
    columns = ["project", "operation", "size", "accesses", "pct"]
    if large.empty:
        return pd.DataFrame(columns=columns)
    mine = _in_projects(large, projects)
    rows = []
    for project in projects:
        g = mine[mine["project"] == project]
        if g.empty:
            continue
        counts = {
            (op, label): _num(g, f"{op}_{suffix}").sum()
            for op in ("read", "write")
            for suffix, label in SIZE_BINS.items()
        }
        total = sum(counts.values())
        for (op, label), count in counts.items():
            rows.append(
                [project, op, label, int(count), 100.0 * count / total if total else np.nan]
            )
    return pd.DataFrame(rows, columns=columns)


def coverage_table(coverage: pd.DataFrame, projects: list[str]) -> pd.DataFrame:
    """Seed 000's Table II from :func:`iostudy.collect.sacct.coverage`: the rows of projects (in
    their order), then its rows that are not accounts (jobs without accounting, the total "all");
    "account" is called project."""
    if coverage.empty:
        return coverage.rename(columns={"account": "project"})

    special = [sacct.NO_ACCOUNTING, sacct.ALL]
    by = coverage.set_index("account", drop=False)
    chosen = [p for p in projects if p in by.index] + [s for s in special if s in by.index]
    return by.loc[chosen].reset_index(drop=True).rename(columns={"account": "project"})


# ---------------------------------------------------------------------------------------------
# Figures


def _text(value, width: int = 28) -> str:
    """A name from a log as matplotlib text: shortened, "$" escaped (matplotlib would read a
    pair as mathtext, and a lone one would fail to parse), a leading "_" kept visible (a legend
    leaves out labels that start with it)."""
    text = str(value)
    if len(text) > width:
        text = text[: width - 1] + "…"
    text = text.replace("$", r"\$")
    return " " + text if text.startswith("_") else text


def binary_bytes(value: float) -> str:
    """Bytes with a binary prefix: 0 B, 512 B, 1.5 KiB, 3.2 TiB."""
    v = float(value)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if abs(v) < 1024 or unit == "PiB":
            return f"{v:.0f} {unit}" if unit == "B" else f"{v:.3g} {unit}"
        v /= 1024
    return f"{v:.3g} EiB"  # pragma: no cover


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
    shown |= set(_share_bars(right, frame, "bytes", list(BYTE_CLASSES), True, "% of bytes"))
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
    ax.set_xlabel("bytes (the jobs' POSIX and STDIO records)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.grid(axis="x", alpha=0.3)
    ax.legend(fontsize=7, loc="lower right")
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
        ax.grid(axis="y", alpha=0.3)
    axes[0].legend(fontsize=6, loc="upper right")
    fig.supxlabel("access size (bytes)", fontsize=8)
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


# ---------------------------------------------------------------------------------------------
# The report's section


def _has_rows(tables: dict, name: str) -> bool:
    return name in tables and tables[name] is not None and len(tables[name]) > 0


def connection(tables: dict[str, pd.DataFrame]):
    """A DuckDB connection with the relations jobstats and sacct read: jobs, files and, when
    the study has Slurm accounting, sched."""
    import duckdb

    con = duckdb.connect()
    for name in ("jobs", "files", "sched"):
        if name in tables and tables[name] is not None:
            con.register(name, tables[name])
    return con


# The job table's modules for Fig. 2's bytes: interface -> the module jobstats is asked for.
INTERFACE_MODULES = {"POSIX": "POSIX", "STDIO": "STDIO", "MPI-IO": "MPI-IO"}


def module_bytes(con, job_table) -> pd.DataFrame:
    """Per job and interface, bytes read and written through the interface's module
    (job_table(con, module=...)); an interface whose module the job table cannot scope is left
    out."""
    frames = []
    for interface, module in INTERFACE_MODULES.items():
        try:
            t = job_table(con, module=module)
        except (ValueError, KeyError):
            continue
        frames.append(t[["log_sha256", "bytes_read", "bytes_written"]].assign(interface=interface))
    if not frames:
        return pd.DataFrame(columns=["log_sha256", "interface", "bytes_read", "bytes_written"])
    return pd.concat(frames, ignore_index=True)


def _coverage(con, tables):
    """sacct.coverage's table, or None when the study has no Slurm accounting."""
    if not _has_rows(tables, "sched"):
        return None

    return sacct.coverage(con)


def large_filter_text(procs: int, mib: float) -> str:
    return f"at least {procs:,} processes that moved at least {mib:,g} MiB"


def add_section(
    add,
    tables: dict[str, pd.DataFrame],
    large_procs: int = LARGE_PROCS,
    large_mib: float = LARGE_MIB,
    anonymizer=None,
) -> None:
    """The report's workload sections (seed 000, sections III and V) through report.render's
    add(): nothing when the study has no job log. anonymizer (iostudy.core.anonymize.Anonymizer):
    names in the job table are replaced before anything is drawn."""
    if not _has_rows(tables, "jobs"):
        return

    con = connection(tables)
    try:
        jobs = jobstats.job_table(con)
        by_module = module_bytes(con, jobstats.job_table)
        coverage = _coverage(con, tables)
    finally:
        con.close()
    if anonymizer is not None:
        jobs = anonymizer.frame(jobs)
        coverage = anonymizer.frame(coverage) if coverage is not None else None
    add_figures(add, jobs, by_module, coverage, large_procs, large_mib)


def _figure_or_note(add, section, ident, caption, data, draw, empty, table=False):
    """A figure with its caption, or, when data is empty, a note saying so (with its CSV)."""
    if len(data):
        add(section, "figure", ident, caption, data, fig=draw(data), table=table)
    else:
        add(section, "note", ident, f"{caption.split(':')[0]}: {empty}", data)


def add_figures(add, jobs, by_module, coverage, large_procs=LARGE_PROCS, large_mib=LARGE_MIB):
    """add_section's figures and tables from the job table (jobstats.job_table), the bytes per
    module (:func:`module_bytes`) and the coverage (sacct.coverage, None without accounting)."""
    n = len(jobs)
    _figure_or_note(
        add,
        "workload",
        "interfaces-by-size",
        f"Interfaces by job size (seed 000, Fig. 2) over {n:,} job logs: per bin of processes "
        "(powers of two), the share of jobs whose logs used each interface (a job may use "
        "several; number of jobs above the bars) and of the bytes read and written through it "
        "(of the bytes that reached the file system through POSIX and STDIO: MPI-IO's bytes "
        "are POSIX's too).",
        interfaces_by_size(jobs, by_module),
        interfaces_figure,
        "no job log.",
    )
    _figure_or_note(
        add,
        "workload",
        "strategy-by-size",
        f"File-access strategy by job size (seed 000, Fig. 3) over {n:,} job logs: per bin of "
        "processes, the share of jobs using unique files (N:N), one shared file (N:1), files "
        "shared by some processes (N:M), rank 0 alone, or no file; and the share of bytes to "
        "unique, shared and partially shared files.",
        strategy_by_size(jobs),
        strategy_figure,
        "no job log.",
    )
    top = top_projects(jobs)
    projects = list(top["project"])
    _figure_or_note(
        add,
        "workload",
        "top-projects",
        f"Top {TOP} projects by data moved (seed 000, Fig. 4): bytes read and written by the "
        f"jobs of each Slurm account (jobs without one: {UNKNOWN}), most first.",
        top,
        projects_figure,
        "no job log.",
        table=True,
    )
    coverage_caption = (
        "Coverage of the top projects (seed 000, Table II): jobs and core-hours (cores x "
        "elapsed time, from Slurm accounting) with a log, out of all the project's jobs that "
        "started, and the APIs the logs used (H: HDF5, N: PnetCDF, M: MPI-IO, S: STDIO, P: POSIX)."
    )
    if coverage is None:
        add(
            "workload",
            "note",
            "coverage",
            "Coverage of the top projects (seed 000, Table II): needs Slurm accounting; import it "
            "with `iostudy sacct import` (sacct output into the store's sched table) and build "
            "the report again.",
            pd.DataFrame(columns=["project"]),
        )
    else:
        table = coverage_table(coverage, projects)
        if len(table):
            add("workload", "table", "coverage", coverage_caption, table, table=True)
        else:
            add(
                "workload",
                "note",
                "coverage",
                "Coverage of the top projects (seed 000, "
                "Table II): Slurm accounting has no job of this study's period.",
                table,
            )
    points = files_vs_procs(jobs, projects)
    _figure_or_note(
        add,
        "workload",
        "files-vs-procs",
        "Files accessed against processes (seed 000, Fig. 5), one point per job log, coloured "
        f"by project (the top {TOP}; others grey); dotted: one file per process (N:N), dashed: "
        "one file (N:1); jobs that accessed no file on the shaded row 0.",
        points,
        lambda d: files_figure(d, projects),
        "no job log.",
    )

    large = large_jobs(jobs, large_procs, large_mib)
    which = large_filter_text(large_procs, large_mib)
    none = (
        f"no job of the top {TOP} projects has {which} (set the filter with `iostudy report "
        "build --large-procs N --large-mib M`)."
    )
    stats = box_stats(large, projects)
    _figure_or_note(
        add,
        "large-jobs",
        "mib-s-per-cn-by-project",
        f"MiB/s per compute node of large jobs by project (seed 000, Fig. 10): jobs with {which}, "
        f"of the top {TOP} projects; box: first quartile, median (red), third quartile; "
        "whiskers: minimum and maximum.",
        stats,
        box_figure,
        none,
        table=True,
    )
    averages = project_averages(large, projects)
    if len(averages):
        add(
            "large-jobs",
            "table",
            "large-job-averages",
            f"Average I/O characteristics of large jobs by project (seed 000, Table IV): jobs "
            f"with {which}; per project, the mean over its jobs of MiB/s/CN, metadata time (% of "
            "I/O time), files and creates per process, sequential and aligned accesses (% of "
            "reads and writes) and MiB moved per process.",
            averages,
            table=True,
        )
    else:
        add(
            "large-jobs",
            "note",
            "large-job-averages",
            f"Average I/O characteristics of large jobs by project (seed 000, Table IV): {none}",
            averages,
        )
    _figure_or_note(
        add,
        "large-jobs",
        "access-sizes-by-project",
        f"Access sizes of large jobs by project (seed 000, Fig. 9): jobs with {which}; per "
        "project, the share of its reads and writes in each size bin (bars of a project sum "
        "to 100%).",
        access_sizes(large, projects),
        access_sizes_figure,
        none,
    )
