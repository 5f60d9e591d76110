"""The report's adaptive-I/O section (seed 004, section III-B and Figs. 5-7): adaptive I/O
against one shared file (MPI-IO) and a file per process, per system, size per process and
writers, with and without induced interference, from the store's adaptive table
(:mod:`iostudy.benchmarks.adaptive`): the bandwidth, how unevenly the targets finished (what the
adaptive method balances) and the writers it moved."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB, short
from iostudy.core.plotting import legend_below, panels
from iostudy.report.figures import safe

if TYPE_CHECKING:
    from matplotlib.figure import Figure

np = deferred("numpy")
pd = deferred("pandas")

SECTION = "adaptive"
MODES = ("adaptive", "mpiio", "posix-fpp")
COLOURS = {"adaptive": "#54a24b", "mpiio": "#4c78a8", "posix-fpp": "#f58518"}
SUMMARY_COLUMNS = [
    "system",
    "writers",
    "targets",
    "size_mib",
    "mode",
    "interference",
    "runs",
    "mean_mib_s",
    "min_mib_s",
    "max_mib_s",
    "mean_s",
    "target_spread",
    "moves",
    "writers_per_target",
]


def _spread(target_s: str) -> float:
    """The last target's completion time over the first's (1: every target finished together),
    NaN with one target or a zero time."""
    times = [t for t in json.loads(target_s or "[]") if t]
    return max(times) / min(times) if len(times) > 1 else np.nan


def summary(rows: pd.DataFrame) -> pd.DataFrame:
    """One row per system, writers, targets, size, mode and interference: the runs' MiB/s (mean,
    min, max), seconds, the targets' spread (mean of slowest over fastest completion), the mean
    adaptive writes, and where the last run put the writers (SUMMARY_COLUMNS)."""
    if rows.empty:
        return pd.DataFrame(columns=SUMMARY_COLUMNS)
    rows = rows.assign(
        size_mib=rows["bytes_per_writer"] / 2**20, spread=rows["target_s"].map(_spread)
    )
    keys = ["system", "writers", "targets", "size_mib", "mode", "interference"]
    out = (
        rows.groupby(keys, sort=True)
        .agg(
            runs=("mib_s", "size"),
            mean_mib_s=("mib_s", "mean"),
            min_mib_s=("mib_s", "min"),
            max_mib_s=("mib_s", "max"),
            mean_s=("seconds", "mean"),
            target_spread=("spread", "mean"),
            moves=("moves", "mean"),
            writers_per_target=("writers_per_target", "last"),
        )
        .reset_index()
    )
    return out[SUMMARY_COLUMNS]


TARGET_COLUMNS = [
    "system",
    "size_mib",
    "mode",
    "interference",
    "target",
    "runs",
    "writers",
    "bytes",
    "seconds",
    "mib_s",
    "competing_writer",
]


def _target_rows(run) -> list[dict]:
    """One run's targets: each one's name, the writers whose data went there, their bytes, when
    its last write closed, and whether the competing writer's file was named onto it (None
    where the run names no target the competing writer loaded: not placed)."""
    names = json.loads(run["target_names"])
    writers = json.loads(run["writers_per_target"] or "[]")
    times = json.loads(run["target_s"] or "[]")
    placed = run.get("interferer_targets")
    if not run["interference"]:
        loaded = []
    else:  # a competing writer that was not placed wrote where its name hashed: unknown
        loaded = json.loads(placed) if isinstance(placed, str) else None
    out = []
    for k, name in enumerate(names):
        data = writers[k] * run["bytes_per_writer"]
        seconds = times[k] if k < len(times) and times[k] else np.nan
        out.append(
            {
                "target": name,
                "writers": writers[k],
                "bytes": data,
                "seconds": seconds,
                "mib_s": data / MIB / seconds if data else np.nan,
                "competing_writer": name in loaded if loaded is not None else None,
            }
        )
    return out


def per_target(rows: pd.DataFrame) -> pd.DataFrame:
    """Per system, size, mode, interference and target (the runs that name their targets: on
    GlusterFS, each group's files named onto its brick): the runs, the writers whose data went
    there and its bytes (means over the runs), the time to its last close, its MiB/s, and
    whether the competing writer wrote there (TARGET_COLUMNS). Empty without such runs."""
    if rows.empty or "target_names" not in rows or rows["target_names"].isna().all():
        return pd.DataFrame(columns=TARGET_COLUMNS)
    flat = [
        {**{k: run[k] for k in ("system", "mode", "interference")}, **target}
        | {"size_mib": run["bytes_per_writer"] / MIB}
        for run in rows[rows["target_names"].notna()].to_dict("records")
        for target in _target_rows(run)
    ]
    keys = ["system", "size_mib", "mode", "interference", "target"]
    table = (
        pd.DataFrame(flat)
        .groupby(keys, sort=False)
        .agg(
            runs=("writers", "size"),
            writers=("writers", "mean"),
            bytes=("bytes", "mean"),
            seconds=("seconds", "mean"),
            mib_s=("mib_s", "mean"),
            competing_writer=("competing_writer", "first"),
        )
        .reset_index()
    )
    order = {mode: i for i, mode in enumerate(MODES)}
    table = table.sort_values(
        ["system", "size_mib", "mode", "interference"],
        key=lambda c: c.map(order) if c.name == "mode" else c,
        kind="stable",
    )
    return table[TARGET_COLUMNS].reset_index(drop=True)


def bandwidth_figure(table: pd.DataFrame) -> Figure:
    """Per size a panel: each mode's mean MiB/s (bars min to max), without interference
    (solid) and with it (hatched)."""
    sizes = sorted(table["size_mib"].unique())
    fig, axes = panels(len(sizes), 4.2, 3.0, extra_height=0.3)
    width = 0.38
    for ax, size in zip(axes, sizes, strict=False):
        mine = table[table["size_mib"] == size]
        for i, mode in enumerate(MODES):
            for k, loaded in enumerate((False, True)):
                row = mine[(mine["mode"] == mode) & (mine["interference"] == loaded)]
                if row.empty:
                    continue
                mean, low, high = (
                    float(row[c].iloc[0]) for c in ("mean_mib_s", "min_mib_s", "max_mib_s")
                )
                ax.bar(
                    i + (k - 0.5) * width,
                    mean,
                    width,
                    color=COLOURS[mode],
                    hatch="//" if loaded else None,
                    edgecolor="black",
                    linewidth=0.4,
                    yerr=[[mean - low], [high - mean]],
                    capsize=2,
                    label=f"{mode}{', interference' if loaded else ''}",
                )
        ax.set_xticks(range(len(MODES)), MODES, fontsize=7)
        ax.set_title(f"{short(size)} MiB per process", fontsize=9)
        ax.set_ylabel("MiB/s", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, axis="y")
    legend_below(fig)
    return fig


def add_section(add, rows: pd.DataFrame) -> None:
    """The section through report.render's add(); nothing without adaptive runs (the layout
    then names the campaign that brings them)."""
    table = summary(rows)
    for (system, writers, targets), mine in table.groupby(["system", "writers", "targets"]):
        ident = safe(f"{system}-{writers}w-{targets}t")
        add(
            SECTION,
            "figure",
            f"adaptive-{ident}",
            f"{system}, {writers} writers on {targets} storage target(s): adaptive I/O against "
            "one shared file (MPI-IO, collective) and a file per process, mean MiB/s of the "
            "runs (bars: min to max), without and with a competing writer on half the targets "
            "(hatched; seed 004, Figs. 5-7). Time from a barrier to the last close, after a "
            "flush. With one target there is nowhere to move a writer: adaptive I/O is then "
            "one writer at a time.",
            mine,
            fig=bandwidth_figure(mine),
        )
        add(
            SECTION,
            "table",
            f"adaptive-runs-{ident}",
            f"{system}: per size, mode and interference, the runs' MiB/s, the targets' spread "
            "(the last target's completion over the first's: what adaptive I/O evens out), the "
            "adaptive writes (moves, mean) and the writers per target of the last run.",
            mine,
            table=True,
        )
        same = (rows["system"] == system) & (rows["writers"] == writers)
        targets_df = per_target(rows[same & (rows["targets"] == targets)])
        if len(targets_df):  # the runs named their targets: the data's place is known
            add(
                SECTION,
                "table",
                f"adaptive-targets-{ident}",
                f"{system}: per size, mode and interference, each storage target (on GlusterFS "
                "the brick its group's files were named onto, as trusted.glusterfs.pathinfo "
                "says): the writers whose data went there and its bytes (adaptive I/O moves "
                "writers to idle targets; MPI-IO's one shared file is on the first), the time "
                "to its last close and its MiB/s (means over the runs), and whether the "
                "competing writer's file was named onto it.",
                targets_df,
                table=True,
                whole=True,
            )
