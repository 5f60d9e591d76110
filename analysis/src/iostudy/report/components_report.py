"""The report's components section (seed 001, section 4.2; iostudy.metrics.ceiling): per system,
what its components measured against what it declares, the network across message sizes
(Fig. 2b), the storage target against jobs (Fig. 3), and the aggregate ceiling they set per
process count with IOR's points and their fraction of it (Fig. 4)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import short
from iostudy.core.plotting import count_ticks, legend_below, panels
from iostudy.metrics import ceiling, scaling
from iostudy.report.figures import safe

np = deferred("numpy")
pd = deferred("pandas")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SECTION = "components"
NO_IOR = "no IOR point on scratch (IOR comes from the Spack view: make spack)"
COLOURS = {"write": "#f58518", "read": "#4c78a8", "syncwrite": "#9d9d9d"}


def _run_system(run: dict) -> dict:
    """The system description a run's manifest recorded."""
    return ((run["_manifest"] or {}).get("effective_config") or {}).get("system") or {}


def declared_peaks(runs: list[dict]) -> dict:
    """Each run's declared peaks, from its manifest's system description."""
    return {r["run_id"]: _run_system(r).get("peaks") for r in runs}


def one_node_runs(runs: list[dict]) -> set[str]:
    """The runs on a system without a scheduler: one node, whatever the tasks per node."""
    return {r["run_id"] for r in runs if _run_system(r).get("scheduler") == "local"}


def network_figure(rows: pd.DataFrame) -> Figure:
    """MiB/s against message size: one pair (a line through the powers of two, dots at the
    perturbed sizes) and all pairs at once."""
    fig, (ax,) = panels(1, 7, 3.0, extra_height=0.3)
    rows = rows.sort_values("bytes")
    aligned = (rows["bytes"] & (rows["bytes"] - 1)) == 0
    ax.plot(
        rows.loc[aligned, "bytes"],
        rows.loc[aligned, "mib_s"],
        marker="o",
        markersize=3,
        color="#4c78a8",
        label="one pair, powers of two",
    )
    ax.plot(
        rows.loc[~aligned, "bytes"],
        rows.loc[~aligned, "mib_s"],
        linestyle="none",
        marker="x",
        markersize=4,
        color="#d62728",
        label="one pair, perturbed sizes",
    )
    if rows["procs"].max() > 2:
        ax.plot(
            rows.loc[aligned, "bytes"],
            rows.loc[aligned, "aggregate_mib_s"],
            marker="s",
            markersize=3,
            color="#54a24b",
            label="all pairs at once",
        )
    ax.set_xscale("log", base=2)
    ax.set_xlabel("message size (bytes)", fontsize=8)
    ax.set_ylabel("MiB/s", fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    legend_below(fig)
    return fig


TARGET_MARKERS = "osD^v<>p*h"


def storage_figure(rows: pd.DataFrame) -> Figure:
    """A target's aggregate MiB/s against the jobs on it, per operation and requests in flight
    (solid: one at a time; dashed: a queue), and per target (a marker each) when there are
    several."""
    fig, (ax,) = panels(1, 5.5, 3.0, extra_height=0.3)
    rows = rows.assign(
        iodepth=rows["iodepth"].fillna(1).astype(int), target=rows["target"].fillna("scratch")
    )
    targets = sorted(rows["target"].unique())
    for (target, op, qd), mine in rows.groupby(["target", "operation", "iodepth"]):
        best = mine.groupby("jobs")["aggregate_mib_s"].max()
        block = short(mine["block"].iloc[0] / 2**10)
        where = f"{target}: " if len(targets) > 1 else ""
        marker = TARGET_MARKERS[targets.index(target) % len(TARGET_MARKERS)]
        ax.plot(
            best.index,
            best.values,
            marker=marker,
            markersize=4,
            color=COLOURS.get(op),
            linestyle="-" if qd == 1 else "--",
            label=f"{where}{op} ({block} KiB requests, {qd} in flight a job)",
        )
    ax.set_xlabel("fio jobs on the target", fontsize=8)
    ax.set_ylabel("MiB/s (all jobs)", fontsize=8)
    ax.set_yscale("log")
    count_ticks(ax.xaxis)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    legend_below(fig)
    return fig


def ceiling_figure(curve: pd.DataFrame, points: pd.DataFrame) -> Figure:
    """Per operation, the modelled ceiling against processes and IOR's points on scratch, the
    nearest to the ceiling labelled with its fraction."""
    fig, axes = panels(2, 4.6, 3.0, extra_height=0.3)
    for ax, op in zip(axes, ceiling.OPERATIONS, strict=True):
        mine = curve[curve["operation"] == op].dropna(subset=["ceiling_mib_s"])
        ax.step(
            mine["procs"],
            mine["ceiling_mib_s"],
            where="mid",
            color="black",
            linestyle="--",
            label="modelled ceiling",
        )
        held = points[points["operation"] == op]
        for benchmark, g in held.groupby("benchmark"):
            g = g.groupby("procs")["mib_s"].max()
            ax.plot(g.index, g.values, marker="o", markersize=3, label=f"{benchmark}, best")
        rated = held[held["ceiling_pct"].notna() & held["benchmark"].str.startswith("IOR")]
        if len(rated):
            top = rated.loc[rated["ceiling_pct"].idxmax()]
            ax.annotate(
                f"{top['ceiling_pct']:.0f}%",
                (top["procs"], top["mib_s"]),
                textcoords="offset points",
                xytext=(4, 4),
                fontsize=8,
            )
        ax.set_xscale("log", base=2)
        ax.set_ylim(bottom=0)
        ax.set_title(f"{op}", fontsize=9)
        ax.set_xlabel("processes", fontsize=8)
        ax.set_ylabel("MiB/s", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
    legend_below(fig)
    return fig


STORAGE_COLUMNS = [
    "storage",
    "fs_type",
    "volume",
    "servers",
    "scratch",
    "unavailable",
    "target",
    "node",
    "brick",
    "write_mib_s",
    "read_mib_s",
]


def storage_table(description: dict, rows: pd.DataFrame) -> pd.DataFrame:
    """The system's storage as its description says (a row per storage target, or per storage
    entry without targets): its file system, volume and servers, whether campaigns write there
    (scratch: config.scratch_storage; unavailable: why not, where the run found it not
    served), each target's node and brick, and the best aggregate
    MiB/s fio_check measured on that target (the target's ceiling; empty where not measured)."""
    storage = description.get("storage") or []
    scratch = config.scratch_storage(description)["name"] if storage else None
    fio = rows[(rows["component"] == "storage") & rows["target"].notna()]
    out = []
    for entry in storage:
        shared = {
            "storage": entry["name"],
            "fs_type": entry.get("fs_type"),
            "volume": entry.get("volume"),
            "servers": ", ".join(entry.get("servers") or []) or None,
            "scratch": entry["name"] == scratch,
            # why campaigns did not write there (config.with_availability), as the run recorded
            "unavailable": entry.get("unavailable"),
        }
        for target in entry.get("targets") or [{}]:
            mine = fio[fio["target"] == target.get("name")]
            best = mine.groupby("operation")["aggregate_mib_s"].max()
            out.append(
                shared
                | {
                    "target": target.get("name"),
                    "node": target.get("node"),
                    "brick": target.get("brick"),
                    "write_mib_s": best.get("write"),
                    "read_mib_s": best.get("read"),
                }
            )
    return pd.DataFrame(out, columns=STORAGE_COLUMNS)


def _system_items(add, system, run_id, rows, held, limits, description=None) -> dict:
    """One system's figures and tables (``held``: its ceiling.points; ``description``: its
    system description as the run recorded it); returns its best fractions
    (ceiling.best_fractions)."""
    label = f"{system}, latest run {run_id}"
    if description and description.get("storage"):
        add(
            SECTION,
            "table",
            f"storage-targets-{safe(system)}",
            f"{system}: its storage as its description says (run {run_id}): the file system "
            "campaigns write to (scratch; unavailable: why not, where the run found it not "
            "served), its servers, and its targets (GlusterFS: the bricks a file's "
            "trusted.glusterfs.pathinfo names), each with the best MiB/s fio_check measured on "
            "it from its node: the target's ceiling.",
            storage_table(description, rows),
            table=True,
            whole=True,
        )
    _component_items(add, system, run_id, rows, limits, label)
    return _ceiling_items(add, system, held, limits, label)


def _component_items(add, system, run_id, rows, limits, label) -> None:
    """A system's components: their limits, the network's and the storage targets' curves."""
    add(
        SECTION,
        "table",
        f"component-limits-{safe(system)}",
        f"{system}: each component's limit, measured in run {run_id} (the latest with "
        "component checks) and as the system description declares it; the ceiling uses the "
        "measured one (iostudy.metrics.ceiling).",
        limits,
        table=True,
        whole=True,
    )
    network = rows[rows["component"] == "network"]
    if len(network):
        add(
            SECTION,
            "figure",
            f"network-{safe(system)}",
            "The network (seed 001, Fig. 2b: NetPIPE): netbw's ping-pong MiB/s against message "
            "size, one pair, and all pairs at once; crosses: sizes 3 bytes off a power of two "
            "(NetPIPE's perturbations), where irregular networks lose most.",
            network,
            fig=network_figure(network),
            label=label,
        )
    storage = rows[rows["component"] == "storage"]
    if len(storage):
        add(
            SECTION,
            "figure",
            f"storage-{safe(system)}",
            "The storage targets (seed 001, Fig. 3: sgp_dd): fio's aggregate MiB/s against "
            "its jobs on one target (each target the system lists, from its node; else the "
            "scratch storage), large direct sequential writes and reads, and small writes "
            "each followed by fsync (seed 001's metadata updates, 5-8 MiB/s there).",
            storage,
            fig=storage_figure(storage),
            label=label,
        )


def _ceiling_items(add, system, held, limits, label) -> dict:
    """A system's ceiling against its points (``held``: ceiling.points) and each point's
    fraction of it; returns the best fractions (ceiling.best_fractions), or why there are
    none."""
    points = ceiling.fractions(held, limits)
    if points.empty or points["ceiling_mib_s"].isna().all():
        return {"why": NO_IOR if points.empty else "no component limit measured or declared"}
    per_node = int(points["procs"].max() / max(points["nodes"].max(), 1))
    procs = sorted({int(p) for p in points["procs"]})
    curve = ceiling.ceiling_curve(limits, procs, max(per_node, 1))
    add(
        SECTION,
        "figure",
        f"ceiling-{safe(system)}",
        "The aggregate ceiling per process count (seed 001, Fig. 4): at each scale the "
        "smallest of the components' limits (dashed), and the best of IOR's points on "
        "scratch, of seed 003's I/O models and of each application's write and read "
        "bandwidth (those the study ran); IOR's point nearest the ceiling is labelled with its "
        "fraction (seed 001: 85% for writes, 79% for reads). A point above the ceiling did "
        "more than a component measured: the page cache, or more requests in flight than "
        "fio_check made.",
        curve,
        fig=ceiling_figure(curve, points),
        label=label,
    )
    add(
        SECTION,
        "table",
        f"ceiling-fractions-{safe(system)}",
        f"{system}: each IOR point on scratch, each I/O model and each application's "
        "bandwidth with the ceiling at its nodes, the limit that sets it and the point's "
        "fraction of it, %.",
        points,
        table=True,
    )
    return ceiling.best_fractions(points)


def system_limits(data, runs: list[dict], runs_df: pd.DataFrame) -> dict[str, tuple]:
    """Per system with component measurements: (the latest run that has them, its rows, its
    limits: iostudy.metrics.ceiling.limits, with IOR's memory-target points of the study)."""
    rows = data["components"]
    if rows.empty:
        return {}
    curves, peaks = scaling.ior_curves(data["ior"]), declared_peaks(runs)
    out = {}
    for system, run_id in scaling.latest_with(rows, runs_df).itertuples(index=False):
        mine = rows[rows["run_id"] == run_id]
        ior = curves[curves["system"] == system]
        out[system] = (run_id, mine, ceiling.limits(system, mine, ior, peaks.get(run_id)))
    return out


def add_section(add, data, measured: dict, one_node=frozenset(), systems=None) -> dict:
    """The section through report.render's add() (``measured``: :func:`system_limits`;
    ``one_node``: :func:`one_node_runs`; ``systems``: run id -> its system description);
    returns {system: {operation: the IOR point nearest its ceiling}} for the verdict."""
    curves, iomodel = scaling.ior_curves(data["ior"]), data["iomodel"]
    apps = ceiling.application_points(data["perf"], one_node)
    best = {}
    for system, (run_id, mine, limits) in measured.items():
        held = ceiling.points(
            curves[curves["system"] == system],
            iomodel[iomodel["system"] == system],
            apps[apps["system"] == system],
        )
        described = (systems or {}).get(run_id)
        best[system] = _system_items(add, system, run_id, mine, held, limits, described)
    return best


def verdict_lines(best: dict) -> list[str]:
    """The verdict's lines: per system, the fraction of the ceiling IOR reached."""
    lines = []
    for system, ops in best.items():
        if not ops or "why" in ops:
            why = (ops or {}).get(
                "why"
            ) or "no IOR point on scratch (IOR comes from the Spack view)"
            lines.append(f"{system}: not held against the ceiling: {why}")
            continue
        parts = [
            f"{np.round(row['ceiling_pct']):.0f}% of the {op} ceiling ({short(row['mib_s'])} "
            f"of {short(row['ceiling_mib_s'])} MiB/s, {row['limited_by']} limit"
            f"{'; every point above it: a cache' if row['ceiling_pct'] > 100 else ''})"
            for op, row in ops.items()
        ]
        lines.append(f"{system}: IOR reached " + " and ".join(parts) + " (seed 001: 85%, 79%)")
    return lines


def section(d) -> None:
    """The section of a report being made (iostudy.report.sectiondata.SectionData); the
    ceiling it finds goes into d.found["ceiling"] for the page's verdict."""
    systems = {r["run_id"]: _run_system(r) for r in d.runs}
    d.found["ceiling"] = add_section(d.add, d.data, d.limits, one_node_runs(d.runs), systems)
