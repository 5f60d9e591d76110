"""The scaling campaign's report section (seed 001): IOR bandwidth and metadata rates against
processes, with the component ceilings, the per-run Table I check of IOR, and pass/fail per
scaling point against the references.

Tables are pure functions of store tables (pandas DataFrames); figures are matplotlib Figure
objects, drawn per system from its latest run that has the data.

- IOR: every iteration of every job (the ior table), averaged per point: run, API, layout
  (N-1 shared file, N-N file per process), transfer size (aligned: a multiple of 1 MiB, the
  usual stripe size; else unaligned), target (scratch, or memory: the client-side ceiling) and
  processes; min and max over the iterations and repetitions are the error bars.
- Ceilings drawn: the best memory-target bandwidth at each process count (measured), the
  ceiling the measured components set (iostudy.metrics.ceiling, seed 001's Fig. 4), and the
  peaks the system declares (configs/systems/<system>/system.json "peaks"): aggregate, client
  network x nodes, storage target x targets; null peaks are not drawn.
- Metadata: the ops/s performance values of mdtest_check and metarates_check per point.
"""

from __future__ import annotations

import json
import textwrap
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from matplotlib.figure import Figure
from iostudy.core import checknames
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB, short
from iostudy.core.plotting import fitted_title, legend_below, panels
from iostudy.metrics import ceiling, metrics

np = deferred("numpy")
pd = deferred("pandas")

#: The checks of the scaling campaign: their points are drawn here, not as metrics over runs.
SCALING_CHECKS = (checknames.IOR.name, checknames.MDTEST.name, checknames.METARATES.name)
METADATA_CHECKS = {checknames.MDTEST.name: "mdtest", checknames.METARATES.name: "metarates"}
#: A transfer is aligned when it is a multiple of this (1 MiB: the usual Lustre stripe size).
ALIGNMENT = MIB
LAYOUTS = {"shared": "N-1 (shared file)", "fpp": "N-N (file per process)"}
OPERATIONS = tuple(metrics.IOR_OPERATIONS)  # write, read: the figure's rows
#: The verdict column of the IOR cross-check, named as the report's other Table I check.
WITHIN = f"within_{100 * metrics.TABLE1_TOLERANCE:g}pct"


def transfer_label(size) -> str:
    """'4 MiB, aligned' or '4000000 B, unaligned' (aligned: a multiple of ALIGNMENT)."""
    size = int(size)
    if size % ALIGNMENT == 0:
        return f"{size // MIB} MiB, aligned"
    return f"{size} B, unaligned"


def ior_curves(ior: pd.DataFrame) -> pd.DataFrame:
    """IOR's MiB/s per point (mean, min, max over iterations and repetitions, and their
    count): run_id, system, environ, api, layout, target, transfer_size, transfer, procs,
    nodes, operation, mib_s, min_mib_s, max_mib_s, results."""
    keys = ["run_id", "system", "environ", "api", "layout", "target", "transfer_size", "procs"]
    cols = [*keys, "transfer", "nodes", "operation", "mib_s", "min_mib_s", "max_mib_s", "results"]
    if ior.empty:
        return pd.DataFrame(columns=cols)
    out = (
        ior.groupby([*keys, "operation"], dropna=False)
        .agg(
            nodes=("nodes", "max"),
            mib_s=("bw_mib_s", "mean"),
            min_mib_s=("bw_mib_s", "min"),
            max_mib_s=("bw_mib_s", "max"),
            results=("bw_mib_s", "size"),
        )
        .reset_index()
    )
    out["transfer"] = out["transfer_size"].map(transfer_label)
    out["environ"] = out["environ"].fillna("unknown")
    return out[cols].sort_values(["run_id", "api", "operation", "layout", "transfer", "procs"])


def _parameters(text) -> dict:
    """A perf row's parameters (a JSON object; anything else: none)."""
    try:
        params = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {}
    return params if isinstance(params, dict) else {}


def _int(value):
    try:
        return int(float(value))
    except (TypeError, ValueError):
        return None


def metadata_curves(perf: pd.DataFrame) -> pd.DataFrame:
    """The ops/s values of mdtest_check and metarates_check per point (mean, min and max over
    repetitions): run_id, system, environ, benchmark, target, variable, procs, ops_s,
    min_ops_s, max_ops_s."""
    cols = [
        "run_id",
        "system",
        "environ",
        "benchmark",
        "target",
        "variable",
        "procs",
        "ops_s",
        "min_ops_s",
        "max_ops_s",
    ]
    rows = perf[perf["check"].isin(list(METADATA_CHECKS))].copy()
    if rows.empty:
        return pd.DataFrame(columns=cols)
    params = rows["parameters"].map(_parameters)
    rows["benchmark"] = rows["check"].map(METADATA_CHECKS)
    rows["target"] = params.map(lambda p: p.get("target", "scratch"))
    rows["procs"] = params.map(lambda p: _int(p.get("procs")))
    rows = rows.dropna(subset=["procs", "value"])
    keys = ["run_id", "system", "environ", "benchmark", "target", "variable", "procs"]
    out = (
        rows.groupby(keys, dropna=False)["value"]
        .agg(ops_s="mean", min_ops_s="min", max_ops_s="max")
        .reset_index()
    )
    out["procs"] = out["procs"].astype(int)
    out["environ"] = out["environ"].fillna("unknown")
    return out[cols].sort_values(keys)


def _point_labels(params: pd.Series, checks: pd.Series) -> pd.Series:
    """Per row, the parameters that tell a check's points apart ("api=POSIX, procs=2"): those
    whose value varies among the check's rows, the repetition left out."""
    labels = pd.Series("", index=params.index)
    for _, idx in checks.groupby(checks).groups.items():
        sets = params.loc[idx]
        keys = sorted({k for p in sets for k in p} - {"repetition"})
        varying = [k for k in keys if len({json.dumps(p.get(k)) for p in sets}) > 1]
        labels.loc[idx] = [", ".join(f"{k}={p.get(k)}" for k in varying) for p in sets]
    return labels


def pass_fail_table(perf: pd.DataFrame) -> pd.DataFrame:
    """One row per run, check and scaling point (repetitions apart): how many of its
    performance values ReFrame passed against the references, the variables that failed, and
    the point's result (fail when any value failed). run_id, system, environ, check, point,
    repetition, values, passed, failed, result."""
    cols = [
        "run_id",
        "system",
        "environ",
        "check",
        "point",
        "repetition",
        "values",
        "passed",
        "failed",
        "result",
    ]
    rows = perf[perf["check"].isin(list(SCALING_CHECKS))]
    if rows.empty:
        return pd.DataFrame(columns=cols)
    params = rows["parameters"].map(_parameters)
    rows = rows.assign(
        point=_point_labels(params, rows["check"]),
        repetition=params.map(lambda p: _int(p.get("repetition"))),
        _ok=rows["result"].astype(str).str.lower() == "pass",
    )
    out = []
    keys = ["run_id", "system", "environ", "check", "point", "repetition"]
    for key, g in rows.groupby(keys, dropna=False, sort=True):
        failed = sorted(g.loc[~g["_ok"], "variable"].astype(str))
        out.append(
            {
                **dict(zip(keys, key, strict=True)),
                "values": len(g),
                "passed": int(g["_ok"].sum()),
                "failed": ", ".join(failed),
                "result": "fail" if failed else "pass",
            }
        )
    return pd.DataFrame(out, columns=cols)


def ior_crosscheck_table(ior, files, jobs) -> pd.DataFrame:
    """metrics.ior_crosscheck with the columns a reader needs and the difference in %; a run
    without a log is not judged (its verdict is missing, not "no")."""
    t = metrics.ior_crosscheck(ior, files, jobs)
    t.insert(t.columns.get_loc("rel_diff"), "difference_pct", 100 * t["rel_diff"])
    t = t.rename(columns={"within_tolerance": WITHIN})
    t[WITHIN] = metrics.judged(t[WITHIN], t["log_mib_s"])
    cols = [
        "run_id",
        "system",
        "environ",
        "repetition",
        "api",
        "layout",
        "target",
        "transfer_size",
        "procs",
        "nodes",
        "operation",
        "iterations",
        "ior_mib_s",
        "log_mib_s",
        "ior_seconds",
        "log_seconds",
        "difference_pct",
        WITHIN,
    ]
    return t[cols]


# ---------------------------------------------------------------------------------------------
# Figures


def with_peaks(curves: pd.DataFrame, peaks: dict | None) -> pd.DataFrame:
    """The curves with the system's declared peaks beside them (declared_<name> columns, empty
    where the system declares none), so that the figure's CSV holds what it draws."""
    names = [
        "client_network_mib_s",
        "storage_target_mib_s",
        "aggregate_mib_s",
        "metadata_ops_s",
        "storage_targets",
    ]
    return curves.assign(**{f"declared_{k}": (peaks or {}).get(k) for k in names})


def with_ceiling(curves: pd.DataFrame, limits: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """The curves with the ceiling the measured components set at each point's nodes
    (modelled_ceiling_mib_s: iostudy.metrics.ceiling; ``limits``: per system, its
    ceiling.limits; empty for a system without component checks)."""
    values = [
        ceiling.ceiling(limits[s], op, int(n or 1))[0] if s in limits else None
        for s, op, n in zip(curves["system"], curves["operation"], curves["nodes"], strict=True)
    ]
    return curves.assign(modelled_ceiling_mib_s=pd.Series(values, index=curves.index, dtype=float))


def latest_with(frame: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per system, the latest run (by start) that has rows in frame: system, run_id."""
    have = runs[runs["run_id"].isin(set(frame["run_id"]))]
    have = have.assign(_t=pd.to_datetime(have["started"], utc=True, errors="coerce"))
    latest = have.sort_values(["_t", "run_id"]).groupby("system").tail(1)
    return latest[["system", "run_id"]].sort_values("system").reset_index(drop=True)


def declared_ceilings(peaks: dict | None, nodes: pd.Series) -> list[tuple[str, np.ndarray]]:
    """The system's declared peaks as ceilings over a curve's points (their node counts), as
    iostudy.metrics.ceiling reads them: aggregate; client network x nodes; storage target x
    targets. None values are not drawn."""
    nodes = np.asarray(nodes, dtype=float)
    values = ceiling.declared(peaks)
    return [
        (label, values[limit] * (nodes if scales == "per node" else np.ones(len(nodes))))
        for limit, _, scales, label in ceiling.DECLARED
        if values[limit]
    ]


def _log2_axis(ax, values):
    from matplotlib import ticker

    ax.set_xscale("log", base=2)
    ticks = sorted({int(v) for v in values})
    ax.set_xticks(ticks, [str(t) for t in ticks])
    ax.xaxis.set_minor_locator(ticker.NullLocator())
    ax.set_xlabel("processes", fontsize=8)


def _environ_styles(curves: pd.DataFrame, styles):
    """A style per MPI flavour, and the legend suffix that names it when there are several
    (flavours are drawn apart, never averaged)."""
    environs = sorted(set(curves["environ"]))
    style = {e: styles[i % len(styles)] for i, e in enumerate(environs)}

    def suffix(environ) -> str:
        return f" ({environ})" if len(environs) > 1 else ""

    return style, suffix


def ior_scaling_figure(curves: pd.DataFrame, peaks: dict | None, title: str) -> Figure:
    """Panels: rows write and read, columns the APIs. Lines: the scratch target per layout
    (colour) and transfer (solid aligned, dashed unaligned), with min-max bars; black dotted:
    the best memory-target bandwidth (the client-side ceiling); grey: declared peaks."""
    from matplotlib import ticker
    from matplotlib.figure import Figure

    apis = list(dict.fromkeys(curves["api"]))
    fig = Figure(figsize=(3.6 * len(apis) + 0.6, 5.6), layout="constrained")
    axes = fig.subplots(len(OPERATIONS), len(apis), squeeze=False)
    styles = _environ_styles(curves, "osD^v")
    for row, op in enumerate(OPERATIONS):
        for col, api in enumerate(apis):
            ax = axes[row][col]
            g = curves[(curves["api"] == api) & (curves["operation"] == op)]
            _ior_storage_lines(ax, g[g["target"] != "memory"], *styles)
            _ior_ceiling_lines(ax, g, peaks)
            if len(g):
                _log2_axis(ax, g["procs"])
            ax.set_ylim(bottom=0)
            ax.set_title(f"{api} {op}", fontsize=9)
            ax.set_ylabel("MiB/s", fontsize=8)
            ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
    legend_below(fig)
    fitted_title(fig, title)
    return fig


_LAYOUT_COLOURS = {"shared": "#1f77b4", "fpp": "#d62728"}


def _ior_storage_lines(ax, storage: pd.DataFrame, markers, by_environ) -> None:
    """One panel's IOR curves on the storage: a line per MPI flavour, layout and transfer, with
    its min-max bars."""
    for (environ, layout, transfer), s in storage.groupby(
        ["environ", "layout", "transfer"], dropna=False
    ):
        s = s.sort_values("procs")
        ax.errorbar(
            s["procs"],
            s["mib_s"],
            yerr=[s["mib_s"] - s["min_mib_s"], s["max_mib_s"] - s["mib_s"]],
            color=_LAYOUT_COLOURS.get(layout, "#555555"),
            linestyle="-" if transfer.endswith(" aligned") else "--",
            marker=markers[environ],
            markersize=3,
            capsize=2,
            linewidth=1.2,
            label=f"{LAYOUTS.get(layout, layout)}, {transfer}" + by_environ(environ),
        )


def _ior_ceiling_lines(ax, g: pd.DataFrame, peaks: dict | None) -> None:
    """One panel's ceilings: the best memory-target bandwidth (the client's), the ceiling the
    measured components model, and the declared peaks at the points' nodes."""
    memory = g[g["target"] == "memory"]
    if len(memory):
        best = memory.groupby("procs").agg(mib_s=("mib_s", "max"), nodes=("nodes", "max"))
        ax.plot(
            best.index,
            best["mib_s"],
            color="black",
            linestyle=":",
            marker="^",
            markersize=3,
            label="client ceiling (memory target, best)",
        )
    modelled = (
        g.groupby("procs")["modelled_ceiling_mib_s"].max().dropna()
        if ("modelled_ceiling_mib_s" in g)
        else pd.Series(dtype=float)
    )
    if len(modelled):
        ax.step(
            modelled.index,
            modelled.values,
            where="mid",
            color="black",
            linestyle="--",
            label="modelled ceiling (measured components)",
        )
    points = g.groupby("procs")["nodes"].max().sort_index()
    for (name, values), style in zip(
        declared_ceilings(peaks, points.values),
        ("-.", (0, (1, 1)), (0, (5, 1))),
        strict=False,
    ):
        ax.plot(points.index, values, color="grey", linestyle=style, label=name)


def metadata_figure(curves: pd.DataFrame, peaks: dict | None, title: str) -> Figure:
    """Panels: benchmark x target; one line per operation (ops/s, log scale) with min-max
    bars; grey: the declared metadata peak."""
    from matplotlib import ticker

    shown = list(dict.fromkeys(zip(curves["benchmark"], curves["target"], strict=True)))
    fig, axes = panels(len(shown), 4.6, 3.0)
    peak = (peaks or {}).get("metadata_ops_s")
    palette = [f"C{i}" for i in range(10)]
    colours = {v: palette[i % 10] for i, v in enumerate(sorted(set(curves["variable"])))}
    styles, by_environ = _environ_styles(curves, ["-", "--", ":", "-."])
    for ax, (bench, target) in zip(axes, shown, strict=True):
        g = curves[(curves["benchmark"] == bench) & (curves["target"] == target)]
        for (variable, environ), s in g.groupby(["variable", "environ"], dropna=False):
            s = s.sort_values("procs")
            ax.errorbar(
                s["procs"],
                s["ops_s"],
                yerr=[s["ops_s"] - s["min_ops_s"], s["max_ops_s"] - s["ops_s"]],
                color=colours[variable],
                linestyle=styles[environ],
                marker="o",
                markersize=3,
                capsize=2,
                linewidth=1.2,
                label=variable.removesuffix("_ops_s") + by_environ(environ),
            )
        if peak:
            ax.axhline(peak, color="grey", linestyle="-.", label="declared metadata peak")
        _log2_axis(ax, g["procs"])
        ax.set_yscale("log")
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.yaxis.set_major_locator(ticker.LogLocator(subs=(1.0, 2.0, 5.0)))
        ax.yaxis.set_minor_formatter(ticker.NullFormatter())
        ax.set_title(textwrap.fill(f"{bench}, {target} target", 50), fontsize=9)
        ax.set_ylabel("ops/s", fontsize=8)
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3, which="both")
    legend_below(fig)
    fitted_title(fig, title)
    return fig
