"""Versioned, self-contained HTML reports of a study: ``iostudy report build``.

A study's reports live in ``REPORTS/<study>/``; each build publishes a new version folder::

    REPORTS/<study>/index.html        every version (the only file a build rewrites)
    REPORTS/<study>/v<N>/index.html   the report: inline CSS, figures as inline SVG, no script,
                                      no external URL, so it opens offline from any copy
    REPORTS/<study>/v<N>/MANIFEST.json  inputs with sha256 (the store's Parquet files, the runs'
                                      manifests), git commit, tool versions, the runs' effective
                                      configs, and the sha256 of every file of the version
    REPORTS/<study>/v<N>/*.csv        the data behind each figure and table

A published version is never overwritten: the folder is built under a temporary name beside the
versions and renamed onto ``v<N>`` with RENAME_NOREPLACE (N = highest existing + 1; if another
build takes that name meanwhile, the next one). Asking for an existing version is an error.

The data come from the store (``iostudy.store.store.connect``) and the metrics from the pure
functions of ``iostudy.metrics.metrics``; this module only selects the study's runs, shapes tables
for display, draws the figures (matplotlib, Agg) and writes the files.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import io
import json
import math
import os
import re
import shutil
import sys
import tempfile
import textwrap
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING

import jinja2
import numpy as np
import pandas as pd

from iostudy import __version__
from iostudy.collect import fsstats, iostatmon
from iostudy.core import config, paths, provenance
from iostudy.core.anonymize import AnonymizeError, Anonymizer
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.numfmt import panels, short
from iostudy.core.paths import add_store_option
from iostudy.metrics import compare, jobstats, metrics, scaling, workload
from iostudy.report import apps, compare_report, lustre, probe_report
from iostudy.store import catalog
from iostudy.store import store as store_mod

if TYPE_CHECKING:
    from matplotlib.figure import Figure

TEMPLATES = config.REPO_ROOT / "reports" / "templates"
VERSION_RE = re.compile(r"^v([1-9][0-9]*)$")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
# Seed 000: the MiB/s derived from the logs is within 3% of the benchmark's (Table I).
TOLERANCE_PCT = 100 * metrics.TABLE1_TOLERANCE

# The status of a log tree's run (iostudy.store.store.ingest_tree): its manifest_path is the tree's
# folder, it has no manifest, and its time span is its logs'.
TREE_STATUS = store_mod.TREE_STATUS
# Up to this many jobs, the report draws each job's MiB/s/CN (a bar and a row per job).
JOBS_SHOWN = 60

# Python packages whose versions a report records (the ones that shape its numbers and figures).
PACKAGES = ("duckdb", "pyarrow", "pandas", "numpy", "matplotlib", "Jinja2", "darshan")


class ReportError(Exception):
    """A report that cannot be built; the message says why."""


class VersionExistsError(ReportError):
    """The requested version is already published (versions are never overwritten)."""


@dataclass(frozen=True)
class ReportOptions:
    """What a report build can be asked beyond its study: the large-job filter of seed 000's
    per-project figures (processes and MiB moved, at least), and the pseudonyms of names
    (None: names as they are)."""

    large_procs: int = workload.LARGE_PROCS
    large_mib: float = workload.LARGE_MIB
    anonymizer: Anonymizer | None = None
    systems: dict | None = None  # system label -> description (compare.system_descriptions)


# ---------------------------------------------------------------------------------------------
# Inputs


def _shown(path: Path) -> str:
    """A path as recorded in a manifest: relative to the working directory when inside it."""
    path = Path(path)
    if path.is_absolute():
        with contextlib.suppress(ValueError):
            return str(path.relative_to(Path.cwd()))
    return str(path)


def load_tables(store: Path) -> dict[str, pd.DataFrame]:
    """Every table of the store as a DataFrame (a table with no rows yet is empty)."""
    if not Path(store).is_dir():
        raise ReportError(f"store {store}: no such directory (run `iostudy ingest` first)")
    con = store_mod.connect(store)
    try:
        tables = {name: con.execute(f'SELECT * FROM "{name}"').df() for name in store_mod.TABLES}
    finally:
        con.close()
    runs = tables["runs"]
    if "site" not in runs:  # no import yet: every run is this site's own
        runs["site"] = None
    # Another site's systems are "site/system" everywhere in the report, so that its runs never
    # fall into a series of this site's system of the same name.
    imported = runs[runs["site"].notna()]
    labels = {
        r: compare.system_label(s, y)
        for r, s, y in zip(imported["run_id"], imported["site"], imported["system"], strict=True)
    }
    for df in tables.values():
        if labels and "run_id" in df and "system" in df:
            mask = df["run_id"].isin(labels.keys())
            df.loc[mask, "system"] = df.loc[mask, "run_id"].map(labels)
    return tables


def _manifest_file(path, results: Path) -> Path | None:
    """Where a run's manifest is: the store records it relative to the folder of run dirs."""
    if path is None or (isinstance(path, float) and math.isnan(path)) or not str(path):
        return None
    path = Path(str(path))
    return path if path.is_absolute() else Path(results) / path


def _read_manifest(path: Path | None) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def study_of(run: dict, manifest: dict | None) -> str:
    """A run belongs to the study its campaign names (the campaign's name when it names none)."""
    if isinstance(run.get("study"), str) and run["study"]:
        return run["study"]
    campaign = ((manifest or {}).get("effective_config") or {}).get("campaign") or {}
    return campaign.get("study") or run.get("campaign") or ""


def select_study(tables: dict[str, pd.DataFrame], study: str, results: Path, store: Path):
    """The study's rows of every table, and its runs with their manifests (file and content)."""
    runs, known = [], set()
    for record in tables["runs"].to_dict("records"):
        # pandas gives a missing string as NaN: None, as JSON and every "or" expect
        run = {k: None if _missing(v) else v for k, v in record.items()}
        # an imported run's manifest is in the store (STORE/sites/<site>/manifests/)
        imported = isinstance(run.get("site"), str)
        path = _manifest_file(run.get("manifest_path"), store if imported else results)
        manifest = _read_manifest(path)
        known.add(study_of(run, manifest))
        if study_of(run, manifest) != study:
            continue
        run["_manifest_file"] = path
        run["_manifest"] = manifest
        runs.append(run)
    if not runs:
        raise ReportError(
            f"no run of study {study!r} in the store "
            f"(studies there: {', '.join(sorted(known)) if known else 'none'})"
        )
    _tree_spans(runs, tables["jobs"])
    runs.sort(key=lambda r: (str(r.get("started")), r["run_id"]))
    ids = {r["run_id"] for r in runs}
    # A table of no run (sched: Slurm accounting, imported apart) is everyone's: the coverage
    # of the study's jobs is computed against all of it.
    selected = {
        name: df[df["run_id"].isin(ids)].reset_index(drop=True) if "run_id" in df else df
        for name, df in tables.items()
    }
    return selected, runs


def _missing(value) -> bool:
    return value is None or (np.ndim(value) == 0 and bool(pd.isna(value)))


def is_tree(run: dict) -> bool:
    return run.get("status") == TREE_STATUS


def _tree_spans(runs: list[dict], jobs: pd.DataFrame) -> None:
    """A log tree's run has no start or end of its own: its logs' first start and last end."""
    for run in runs:
        if not is_tree(run) or not pd.isna(run.get("started")):
            continue
        mine = jobs[jobs["run_id"] == run["run_id"]]
        if len(mine):
            run["started"] = pd.to_datetime(mine["start"]).min()
            run["finished"] = pd.to_datetime(mine["end"]).max()


# ---------------------------------------------------------------------------------------------
# Tables behind the figures (pure functions of DataFrames)


def _to_time(values) -> pd.Series:
    return pd.to_datetime(pd.Series(values), utc=True, errors="coerce", format="mixed")


def latest_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The latest run (by start time) of each system, ordered by system."""
    runs = runs.assign(_t=_to_time(runs["started"]).to_numpy())
    latest = runs.sort_values(["_t", "run_id"]).groupby("system").tail(1)
    return latest.drop(columns="_t").sort_values("system").reset_index(drop=True)


def _series(frame: pd.DataFrame, by_environ: bool) -> pd.Series:
    """What a figure draws as one series: the system, or system/environ when the study ran
    several programming environments (MPI flavours), so that flavours are never averaged."""
    system = frame["system"].fillna("?").astype(str)
    if not by_environ or "environ" not in frame:
        return system
    return system + "/" + frame["environ"].fillna("?").astype(str)


def histograms(iomodel: pd.DataFrame) -> pd.DataFrame:
    """Seed 003's 2D histogram bins (metrics.iomodel_histogram) per run, system, environ and
    total size: x_log2_io_procs, y_log2_procs_per_file, models, max_write_mib_s,
    max_mib_s_per_node_hour."""
    return metrics.iomodel_histogram(iomodel)


JOB_COLUMNS = [
    "run_id", "system", "environ", "repetition", "jobid", "nprocs", "nodes", "nodes_source",
    "bytes", "io_time_slowest_s", "io_time_span_s", "strategy", "mib_s_per_cn",
    "mib_s_per_cn_span", "log_path",
]  # fmt: skip


def job_table(tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    """MiB/s/CN per job as :mod:`iostudy.metrics.jobstats` defines it (the one definition: the
    slowest rank's form, POSIX and STDIO; seed 000's shared-file span form beside it), with the
    columns a reader needs."""
    con = workload.connection(tables)
    try:
        t = jobstats.job_table(con)
    finally:
        con.close()
    t = t.rename(columns={"log": "log_path"})
    t["bytes"] = t["bytes_read"] + t["bytes_written"]
    runs = tables["jobs"][["log_sha256", "environ", "repetition"]].drop_duplicates("log_sha256")
    t = t.merge(runs, on="log_sha256", how="left")
    return t[JOB_COLUMNS]


def crosscheck_table(iomodel, files, jobs) -> pd.DataFrame:
    """Seed 000's Table I check (metrics.table1_crosscheck on metrics.model_throughput):
    model, benchmark MiB/s, MiB/s derived from the logs, difference %, within tolerance."""
    t = metrics.table1_crosscheck(metrics.model_throughput(files, jobs), iomodel)
    t = t.rename(
        columns={
            "write_mib_s": "benchmark_mib_s",
            "within_tolerance": f"within_{TOLERANCE_PCT:g}pct",
        }
    )
    t.insert(t.columns.get_loc("rel_diff"), "difference_pct", 100 * t["rel_diff"])
    columns = [
        "run_id",
        "system",
        "environ",
        "repetition",
        "model",
        "n",
        "p",
        "f",
        "m",
        "bytes",
        "benchmark_mib_s",
        "derived_mib_s",
        "difference_pct",
        f"within_{TOLERANCE_PCT:g}pct",
    ]
    return t[[c for c in columns if c in t.columns]]


def _parameter_labels(perf: pd.DataFrame) -> pd.Series:
    """Per row, the check's parameters that tell its parameter sets apart ("size=1G"), empty
    when the check ran with one set. Repetitions of one set are one metric (averaged)."""

    def parse(text):
        try:
            params = json.loads(text) if isinstance(text, str) and text else {}
        except ValueError:
            params = {"parameters": text}
        params = params if isinstance(params, dict) else {"parameters": params}
        return {k: v for k, v in params.items() if k != "repetition"}

    parsed = perf["parameters"].map(parse)
    labels = pd.Series("", index=perf.index)
    for _, idx in perf.groupby("check", dropna=False).groups.items():
        sets = parsed.loc[idx]
        keys = sorted({k for p in sets for k in p})
        varying = [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in sets}) > 1]
        labels.loc[idx] = [
            ", ".join(f"{k}={p[k]}" if k in p else f"{k} unset" for k in varying) for p in sets
        ]
    return labels


def run_metrics(runs, iomodel, jobs_t, cross, perf) -> pd.DataFrame:
    """One value per run, series and metric: run_id, system, environ, series, started, metric,
    unit, value, band_low, band_high (the ReFrame reference range), result (ReFrame's verdict).

    Metrics: the benchmark's write MiB/s of each named model at full scale, with its (n,p,f,m)
    (mean over repetitions); from the logs, the write MiB/s of the Table I models and the mean
    MiB/s/CN of the run's jobs; every ReFrame performance variable, per parameter set when a
    check has several."""
    rows = []

    def add(frame, metric, unit, value, low=np.nan, high=np.nan, result=None):
        for (run_id, environ), g in frame.groupby(["run_id", "environ"], dropna=False):
            v = pd.to_numeric(g[value], errors="coerce").dropna()
            if len(v):
                lo = g[low].iloc[0] if isinstance(low, str) else low
                hi = g[high].iloc[0] if isinstance(high, str) else high
                res = None
                if result is not None:
                    verdicts = set(g[result].dropna().astype(str).str.lower())
                    res = "fail" if "fail" in verdicts else ("pass" if verdicts else None)
                rows.append((run_id, environ, metric, unit, float(v.mean()), lo, hi, res))

    # A name can cover several models (file per process on 1 node or on all): the full-scale
    # one of each name, named with its coordinates, so that runs compare like with like.
    for source, frame, column in (
        ("benchmark", iomodel, "write_mib_s"),
        ("logs", cross.dropna(subset=["derived_mib_s"]), "derived_mib_s"),
    ):
        named = frame.dropna(subset=["model"])
        procs = named["n"] * named["p"]
        named = named[procs == procs.groupby(named["model"]).transform("max")]
        for (model, n, p, f, m), g in named.groupby(["model", "n", "p", "f", "m"]):
            add(g, f"{source}: {model} write ({n},{p},{f},{m})", "MiB/s", column)
    add(jobs_t, "logs: MiB/s/CN (mean of jobs)", "MiB/s/CN", "mib_s_per_cn")
    # The scaling points have their own section: one metric per point would bury the others.
    perf = perf[~perf["check"].isin(scaling.SCALING_CHECKS)]
    if len(perf):
        perf = perf.copy()
        refs = perf[["reference", "lower", "upper"]].itertuples(index=False)
        band = [compare.band(*r) for r in refs]
        perf["band_low"] = [b[0] for b in band]
        perf["band_high"] = [b[1] for b in band]
        perf["_label"] = _parameter_labels(perf)
        for (check, label, variable, unit), g in perf.groupby(
            ["check", "_label", "variable", "unit"], dropna=False
        ):
            name = f"ReFrame {check}: {variable}" + (f" ({label})" if label else "")
            for _, h in g.groupby(["run_id", "environ"], dropna=False):
                add(h, name, unit or "", "value", "band_low", "band_high", "result")
    columns = ["run_id", "environ", "metric", "unit", "value", "band_low", "band_high", "result"]
    out = pd.DataFrame(rows, columns=columns)
    out = runs[["run_id", "system", "started"]].merge(out, on="run_id", how="inner")
    out.insert(3, "series", _series(out, out["environ"].nunique(dropna=False) > 1).values)
    order = {"benchmark": 0, "logs": 1, "ReFrame": 2}
    out["_o"] = out["metric"].map(lambda m: order.get(m.split(":")[0].split(" ")[0], 3))
    out = out.sort_values(["_o", "metric", "started", "series"]).drop(columns="_o")
    return out.reset_index(drop=True)


def side_by_side(metric_table: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """Per metric and series: the value of the system's latest run and the range over all runs."""
    columns = ["metric", "unit", "series", "runs", "latest_run", "latest", "min", "max", "mean"]
    if metric_table.empty:
        return pd.DataFrame(columns=columns)
    latest = set(latest_runs(runs)["run_id"])
    rows = []
    for (metric, unit, series), g in metric_table.groupby(["metric", "unit", "series"], sort=False):
        g = g.sort_values("started")
        last = g[g["run_id"].isin(latest)]
        last = last if len(last) else g.tail(1)
        rows.append(
            {
                "metric": metric,
                "unit": unit,
                "series": series,
                "runs": g["run_id"].nunique(),
                "latest_run": last["run_id"].iloc[-1],
                "latest": float(last["value"].iloc[-1]),
                "min": float(g["value"].min()),
                "max": float(g["value"].max()),
                "mean": float(g["value"].mean()),
            }
        )
    return pd.DataFrame(rows, columns=columns)


def counts_table(runs: pd.DataFrame, tables: dict[str, pd.DataFrame]) -> pd.DataFrame:
    rows = []
    # A log tree ingested without --system has none: its runs are counted under "?".
    systems = runs["system"].fillna("?")
    for system in sorted(systems.unique()):
        ids = set(runs.loc[systems == system, "run_id"])
        rows.append(
            {
                "system": system,
                "runs": len(ids),
                "jobs (logs ingested)": int(tables["jobs"]["run_id"].isin(ids).sum()),
                "file records": int(tables["files"]["run_id"].isin(ids).sum()),
                "I/O models measured": int(tables["iomodel"]["run_id"].isin(ids).sum()),
                "ReFrame performance values": int(tables["perf"]["run_id"].isin(ids).sum()),
                "quarantined inputs": int(tables["quarantine"]["run_id"].isin(ids).sum()),
                # a flagged log is in the figures without the values it is known to hold wrongly
                "flagged logs (values known wrong, stored as null)": int(
                    tables["jobs"].loc[tables["jobs"]["run_id"].isin(ids), "flags"].notna().sum()
                ),
            }
        )
    total = {"system": "all"}
    for key in rows[0] if rows else []:
        if key != "system":
            total[key] = sum(r[key] for r in rows)
    return pd.DataFrame(rows + ([total] if len(rows) > 1 else []))


def provenance_table(runs: list[dict]) -> pd.DataFrame:
    rows = []
    for run in runs:
        m = run["_manifest"] or {}
        tools = m.get("tool_versions") or {}
        rows.append(
            {
                "run_id": run["run_id"],
                "system": run.get("system"),
                "campaign": run.get("campaign"),
                "started": run.get("started"),
                "finished": run.get("finished"),
                "status": run.get("status"),
                "git_commit": m.get("git_commit") or run.get("git_commit"),
                "git_dirty": m.get("git_dirty"),
                "tool_versions": "; ".join(f"{k} {v}" for k, v in sorted(tools.items()) if v),
                "manifest": "found"
                if run["_manifest"] is not None
                else (TREE_STATUS if is_tree(run) else "MISSING"),
            }
        )
    return pd.DataFrame(rows)


# ---------------------------------------------------------------------------------------------
# Figures: matplotlib Figure objects (no pyplot state), saved as SVG text to inline


def _colours(names) -> dict[str, str]:
    from matplotlib import colors as mcolors

    palette = [mcolors.to_hex(c) for c in mcolors.TABLEAU_COLORS.values()]
    return {s: palette[i % len(palette)] for i, s in enumerate(sorted(set(names)))}


# matplotlib's own tick labels of log axes are mathtext: "$\mathdefault{6\times10^{-1}}$"
_MATH_TICK = re.compile(r"^\$\\mathdefault\{(.*)\}\$$")
_SUPERSCRIPT = str.maketrans("0123456789-\u2212", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻⁻")


def _plain(text: str) -> str:
    """text as it is to be read: a mathtext tick label in plain characters (6×10⁻¹), a "\\$"
    as "$"."""
    if m := _MATH_TICK.match(text):
        label = m.group(1).replace("\\times", "×")
        return re.sub(r"\^\{([^}]*)\}", lambda e: e.group(1).translate(_SUPERSCRIPT), label)
    return text.replace(r"\$", "$")


def _plain_formatter(inner):
    """inner, a tick formatter, with its labels through _plain (tick labels are made again by
    the axis's formatter each time the figure is drawn)."""
    from matplotlib import ticker

    class Plain(ticker.Formatter):
        def __call__(self, x, pos=None):
            return _plain(inner(x, pos))

        def format_ticks(self, values):
            return [_plain(label) for label in inner.format_ticks(values)]

        def get_offset(self):
            return _plain(inner.get_offset())

        def set_locs(self, locs):
            inner.set_locs(locs)

    return Plain()


def _literal_text(fig: Figure) -> None:
    """Every text of fig drawn as it is, never as mathtext or TeX: names from logs and configs
    (systems, MPI flavours, checks, projects) may hold "$", and "$\\x$" would not even parse.
    No figure of the report uses mathtext. A "\\$" shows as "$", as matplotlib shows it in
    plain text, for the names already escaped that way (iostudy.metrics.workload)."""
    from matplotlib.text import Text

    for text in fig.findobj(Text):
        text.set_text(_plain(text.get_text()))
        text.set_parse_math(False)
        text.set_usetex(False)
    for ax in fig.axes:
        for axis in (ax.xaxis, ax.yaxis):
            axis.set_major_formatter(_plain_formatter(axis.get_major_formatter()))
            axis.set_minor_formatter(_plain_formatter(axis.get_minor_formatter()))


def _svg(fig: Figure, name: str) -> str:
    """The figure as an inline <svg> element, its texts literal (_literal_text). The hash salt
    is the figure's name so that the ids of clip paths and markers differ between figures
    sharing one HTML document; no date, so the same data give the same bytes."""
    from matplotlib import rc_context

    _literal_text(fig)
    buf = io.StringIO()
    # texts made while drawing (new ticks) are literal too
    settings = {"text.parse_math": False, "text.usetex": False}
    with rc_context({"svg.hashsalt": f"iostudy-{name}", "svg.fonttype": "none", **settings}):
        fig.savefig(buf, format="svg", metadata={"Date": None})
    text = buf.getvalue()
    return text[text.index("<svg") :]


def _fmt(value, digits=3) -> str:
    """A number for tables: integers in full, others to 3 significant digits, no exponent."""
    if value is None or isinstance(value, str):
        return value or ""
    v = float(value)
    if math.isnan(v):
        return ""
    if math.isinf(v):
        return "∞" if v > 0 else "-∞"
    if v == 0:
        return "0"
    if v.is_integer() and abs(v) < 1e15:
        return f"{int(v):,}"
    decimals = max(0, digits - 1 - int(math.floor(math.log10(abs(v)))))
    return f"{v:,.{decimals}f}"


def histogram_figure(hist: pd.DataFrame, title: str) -> Figure:
    from matplotlib import colors as mcolors
    from matplotlib import ticker
    from matplotlib.figure import Figure

    xs = np.arange(0, int(hist["x_log2_io_procs"].max()) + 1)
    ys = np.arange(0, int(hist["y_log2_procs_per_file"].max()) + 1)
    fig = Figure(figsize=(4.3 + 0.55 * len(xs) * 2, 1.9 + 0.55 * len(ys)), layout="constrained")
    axes = fig.subplots(1, 2)
    panels = [
        ("max_write_mib_s", "max write throughput", "MiB/s"),
        ("max_mib_s_per_node_hour", "max throughput per node-hour", "MiB/s per node-hour"),
    ]
    for ax, (column, label, unit) in zip(axes, panels, strict=True):
        grid = np.full((len(ys), len(xs)), np.nan)
        for row in hist.itertuples():
            grid[int(row.y_log2_procs_per_file), int(row.x_log2_io_procs)] = getattr(row, column)
        finite = grid[np.isfinite(grid) & (grid > 0)]
        if len(finite) and finite.max() / finite.min() > 30:
            norm = mcolors.LogNorm(finite.min(), finite.max())
        else:
            norm = mcolors.Normalize(0, finite.max() if len(finite) else 1)
        mesh = ax.pcolormesh(
            np.append(xs, xs[-1] + 1) - 0.5,
            np.append(ys, ys[-1] + 1) - 0.5,
            np.ma.masked_invalid(grid),
            cmap="viridis",
            norm=norm,
            edgecolors="white",
            linewidth=1.5,
        )
        for (j, i), value in np.ndenumerate(grid):
            if np.isfinite(value):
                r, g, b, _ = mesh.cmap(norm(value))
                dark = 0.299 * r + 0.587 * g + 0.114 * b < 0.55
                ax.text(
                    i,
                    j,
                    short(value),
                    ha="center",
                    va="center",
                    fontsize=8,
                    color="white" if dark else "black",
                )
        ax.set_xticks(xs, [str(2**x) for x in xs])
        ax.set_yticks(ys, [str(2**y) for y in ys])
        ax.set_xlabel("processes doing I/O")
        ax.set_ylabel("processes per file")
        ax.set_aspect("equal")
        ax.set_facecolor("#f2f2f2")
        ax.set_title(label, fontsize=9)
        bar = fig.colorbar(mesh, ax=ax, shrink=0.9)
        bar.set_label(unit, fontsize=8)
        bar.ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        bar.ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def job_rates_figure(rates: pd.DataFrame, colours: dict[str, str]) -> Figure:
    from matplotlib.figure import Figure

    rates = rates.reset_index(drop=True)
    fig = Figure(figsize=(9, min(1.0 + 0.32 * len(rates), 16)), layout="constrained")
    ax = fig.subplots()
    y = np.arange(len(rates))
    values = rates["mib_s_per_cn"].fillna(0)
    ax.barh(y, values, color=[colours.get(s, "#777777") for s in rates["series"]], height=0.7)
    for yi, value in zip(y, rates["mib_s_per_cn"], strict=True):
        ax.annotate(
            short(value) if pd.notna(value) else "no I/O",
            (0 if pd.isna(value) else value, yi),
            xytext=(3, 0),
            textcoords="offset points",
            va="center",
            fontsize=7,
        )
    labels = [f"{r.series} · {r.run_id} · job {r.jobid}" for r in rates.itertuples()]
    ax.set_yticks(y, labels, fontsize=7)
    ax.invert_yaxis()
    ax.set_xlabel("MiB/s per compute node (from the job's log)", fontsize=8)
    ax.tick_params(axis="x", labelsize=7)
    ax.margins(x=0.12)
    ax.grid(axis="x", alpha=0.3)
    return fig


def over_runs_figure(metric_table: pd.DataFrame, colours: dict[str, str]) -> Figure:
    from matplotlib import dates as mdates
    from matplotlib import ticker

    names = list(dict.fromkeys(metric_table["metric"]))
    fig, axes = panels(len(names), 5.4, 2.9)
    times = _to_time(metric_table["started"]).dt.tz_convert(None)
    table = metric_table.assign(_t=times.to_numpy())
    # The runs' time span with a margin of at least 10 minutes, so that a single run is a point
    # on a readable axis rather than in a span of years.
    pad = max((times.max() - times.min()) * 0.05, pd.Timedelta(minutes=10))
    span = (times.min() - pad, times.max() + pad)
    for ax, name in zip(axes, names, strict=True):
        g = table[table["metric"] == name]
        # Room above the values and the reference range's finite edges, so that a threshold
        # is in sight.
        edges = g[["band_low", "band_high"]].astype(float).to_numpy().ravel()
        top = max(g["value"].max(), *edges[np.isfinite(edges)], 1e-9) * 1.25
        for series, s in g.groupby("series"):
            s = s.sort_values("_t")
            colour = colours[series]
            ax.plot(s["_t"], s["value"], marker="o", markersize=4, color=colour, label=series)
            band = s[["band_low", "band_high"]].astype(float).dropna()
            if len(band):  # ReFrame's reference range of this system, as a band
                lo, hi = band.iloc[-1]
                ax.axhspan(max(lo, 0), min(hi, top), color=colour, alpha=0.12, linewidth=0)
            failed = s[s["result"] == "fail"]
            if len(failed):  # regressions: outside the reference range
                ax.plot(
                    failed["_t"],
                    failed["value"],
                    linestyle="none",
                    marker="x",
                    markersize=9,
                    color="#c00000",
                    label=f"{series}: fail",
                )
        ax.set_title(textwrap.fill(name, 70), fontsize=8)
        ax.set_ylabel(g["unit"].iloc[0], fontsize=8)
        ax.set_ylim(0, top)
        ax.set_xlim(*span)
        locator = mdates.AutoDateLocator(maxticks=5)
        ax.xaxis.set_major_locator(locator)
        ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.tick_params(labelsize=7)
        ax.grid(alpha=0.3)
        ax.legend(fontsize=6, loc="lower right")
    return fig


def side_by_side_figure(table: pd.DataFrame, colours: dict[str, str]) -> Figure:
    from matplotlib import ticker

    names = list(dict.fromkeys(table["metric"]))
    width = max(3.4, 0.9 * table["series"].nunique() + 1.5)
    fig, axes = panels(len(names), width, 2.7, ncols=3)
    for ax, name in zip(axes, names, strict=True):
        g = table[table["metric"] == name].sort_values("series")
        x = np.arange(len(g))
        ax.bar(x, g["latest"], color=[colours[s] for s in g["series"]], width=0.6)
        # Whisker: the range over all runs of the system.
        ax.errorbar(
            x,
            g["latest"],
            yerr=[g["latest"] - g["min"], g["max"] - g["latest"]],
            fmt="none",
            ecolor="black",
            capsize=4,
            linewidth=1,
        )
        for xi, hi, value in zip(x, g["max"], g["latest"], strict=True):
            ax.annotate(
                short(value),
                (xi, hi),
                xytext=(0, 3),
                textcoords="offset points",
                ha="center",
                va="bottom",
                fontsize=7,
            )
        ax.set_xticks(x, g["series"], fontsize=7)
        ax.set_title(textwrap.fill(name, 45), fontsize=8)
        ax.set_ylabel(g["unit"].iloc[0], fontsize=8)
        ax.set_ylim(0, max(g["max"].max() * 1.2, 1e-9))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.tick_params(labelsize=7)
        ax.grid(axis="y", alpha=0.3)
    return fig


# ---------------------------------------------------------------------------------------------
# Publishing


def versions(study_dir: Path) -> list[int]:
    """The published version numbers of a study, ascending."""
    return [n for n in _taken(study_dir) if (study_dir / f"v{n}").is_dir()]


def _taken(study_dir: Path) -> list[int]:
    """Every number whose name v<N> is in the study folder, whatever it is (a folder, a file,
    a dangling symlink): a new version takes none of them."""
    if not study_dir.is_dir():
        return []
    found = (VERSION_RE.match(p.name) for p in study_dir.iterdir())
    return sorted(int(m.group(1)) for m in found if m)


_RENAME_NOREPLACE = 1
_AT_FDCWD = -100


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename src onto dst, which must not exist (FileExistsError if it does), atomically.

    os.rename would silently replace an empty directory, so use renameat2(RENAME_NOREPLACE);
    where the kernel or file system lacks it, claim dst with mkdir (exclusive) and rename onto
    the empty claim."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        renameat2.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        if (
            renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)
            == 0
        ):
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), str(dst))
        if err not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(dst))
    os.mkdir(dst)
    os.rename(src, dst)


def _env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = _fmt
    return env


# Display headers of table columns (the CSVs keep the column names).
HEADERS = {
    "benchmark_mib_s": "benchmark MiB/s",
    "derived_mib_s": "derived from logs MiB/s",
    "difference_pct": "difference %",
    f"within_{TOLERANCE_PCT:g}pct": f"within {TOLERANCE_PCT:g}%?",
    "mib_s": "MiB/s",
    "ior_mib_s": "IOR MiB/s",
    "log_mib_s": "derived from log MiB/s",
    "mib_s_per_cn": "MiB/s/CN",
    "io_time": "aggregate I/O time (s)",
    "form": "time form",
    "lower": "lower (fraction)",
    "upper": "upper (fraction)",
    # seed 000's workload tables (iostudy.metrics.workload)
    "bytes_read": "bytes read",
    "bytes_written": "bytes written",
    "bytes_moved": "bytes moved",
    "jobs_instrumented": "jobs with a log",
    "jobs_total": "jobs",
    "job_coverage_pct": "job coverage %",
    "core_hours_instrumented": "core-hours with a log",
    "core_hours_total": "core-hours",
    "core_hour_coverage_pct": "core-hour coverage %",
    "apis": "APIs",
    "md_cost_pct": "metadata cost %",
    "files_per_proc": "files per process",
    "creates_per_proc": "creates per process",
    "seq_pct": "sequential %",
    "aligned_pct": "aligned %",
    "mib_per_proc": "MiB per process",
}
# Columns that are identifiers or small counts: shown as they are, without digit grouping.
PLAIN = {"jobid", "repetition", "n", "p", "f", "m", "nprocs", "nodes", "runs", "procs"}
# Columns whose yes/no or pass/fail is a verdict (coloured).
VERDICTS = {f"within_{TOLERANCE_PCT:g}pct", "result"}


def _rows(df: pd.DataFrame) -> dict:
    """A DataFrame as header + rows of (text, CSS class) cells for the template."""
    rows = []
    for record in df.to_dict("records"):
        row = []
        for c, v in record.items():
            if v is None or v is pd.NA or v is pd.NaT or (isinstance(v, float) and math.isnan(v)):
                row.append(("", ""))
            elif isinstance(v, bool | np.bool_):
                text = "yes" if v else "no"
                row.append((text, text if c in VERDICTS else ""))
            elif isinstance(v, int | float | np.integer | np.floating):
                plain = c in PLAIN and float(v).is_integer()
                row.append((str(int(v)) if plain else _fmt(v), "num"))
            else:
                text = str(v)
                row.append((text, text.lower() if c in VERDICTS else ""))
        rows.append(row)
    return {"header": [HEADERS.get(c, c) for c in df.columns], "rows": rows}


def _safe(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip("-") or "x"


def render(
    tables,
    runs,
    study: str,
    version: int,
    title: str,
    out: Path,
    now: datetime,
    *,
    options: ReportOptions | None = None,
):
    """Write index.html and the CSVs of one report into out; returns its figures and tables.

    A section item is a figure (drawn), a table, or a note: a sentence in place of a figure or
    table that has no data. With options.anonymizer every table and CSV goes through it (names
    by column, iostudy.core.anonymize), and the sections that draw names take it too."""
    options = options or ReportOptions()
    anonymizer = options.anonymizer
    runs_df = pd.DataFrame([{k: v for k, v in r.items() if not k.startswith("_")} for r in runs])
    sections = []

    def add(section, kind, ident, caption, df, fig=None, table=False, hide=()):
        csv = f"{ident}.csv"
        if anonymizer is not None:
            df = anonymizer.frame(df)
        df.to_csv(out / csv, index=False, lineterminator="\n")
        sections.append(
            {
                "section": section,
                "kind": kind,
                "id": ident,
                "caption": caption,
                "csv": csv,
                "svg": _svg(fig, ident) if fig is not None else None,
                "table": _rows(df.drop(columns=list(hide))) if table and len(df) else None,
            }
        )

    # Seed 003: the 2D histograms of the latest run of each system.
    iomodel = tables["iomodel"]
    for run in latest_runs(runs_df).itertuples():
        hist = histograms(iomodel[iomodel["run_id"] == run.run_id])
        if hist.empty:
            add(
                "histograms",
                "figure",
                f"histogram-{_safe(run.system)}",
                f"{run.system}, latest run {run.run_id}: no I/O-model results.",
                hist,
            )
            continue
        groups = list(hist.groupby(["environ", "bytes"], dropna=False))
        for (environ, size), h in groups:
            ident = f"histogram-{_safe(run.system)}"
            what = run.system
            if len(groups) > 1:
                ident += f"-{_safe(environ)}-{_safe(size)}"
                what += f" ({environ}, {short(size / 2**20)} MiB)"
            add(
                "histograms",
                "figure",
                ident,
                f"{what}, latest run {run.run_id}: maximum write throughput (left) and maximum "
                "throughput per node-hour (right) of the I/O models in each bin of processes "
                "doing I/O x processes per file, both on log2 bins (seed 003, Fig. 3).",
                h,
                fig=histogram_figure(h, f"{what}: {run.run_id}"),
            )

    ior_cross = add_scaling(add, tables, runs, runs_df)
    probe_report.add_section(add, tables["probes"])
    compare_report.add_section(add, tables["perf"], runs_df, options.systems or {})
    apps.add_section(add, tables)
    lustre.add_section(add, tables, runs)
    workload.add_section(add, tables, options.large_procs, options.large_mib, anonymizer)
    iostatmon.add_section(add, tables)
    fsstats.add_section(add, tables)

    by_environ = any(t["environ"].nunique() > 1 for t in (tables["jobs"], iomodel) if len(t))
    jobs_t = job_table(tables)
    jobs_t = jobs_t.merge(runs_df[["run_id", "started"]], on="run_id", how="left")
    jobs_t = jobs_t.sort_values(["started", "system", "jobid"]).drop(columns="started")
    jobs_t.insert(2, "series", _series(jobs_t, by_environ).values)
    metric_table = run_metrics(
        runs_df,
        iomodel,
        jobs_t,
        cross := crosscheck_table(iomodel, tables["files"], tables["jobs"]),
        tables["perf"],
    )
    series = set(metric_table["series"]) | set(jobs_t["series"])
    colours = _colours(series)
    caption = (
        "MiB/s per compute node (MiB/s/CN) of every job, from its log (seed 000, II-D): the bytes "
        "moved through POSIX and STDIO over the slowest rank's I/O time (its time on its own "
        "files plus, per shared file, the slowest rank's; PyDarshan's agg_perf_by_slowest), "
        "divided by the job's compute nodes (nodes_source: slurm, the harness's tag, the "
        "system's cores per node, or assumed 1). The table also gives seed 000's own form "
        "(mib_s_per_cn_span: the longest first-open to last-I/O span of a shared file when it "
        "is longer) and the file-sharing strategy that moved the most bytes."
    )
    if len(jobs_t) <= JOBS_SHOWN:
        add("jobs", "figure", "job-mib-s-per-cn", caption, jobs_t,
            fig=job_rates_figure(jobs_t, colours) if len(jobs_t) else None, table=True,
            hide=["log_path"] + ([] if by_environ else ["series"]))  # fmt: skip
    else:  # a bar per job is unreadable at a facility's scale: the distributions show them
        add("jobs", "note", "job-mib-s-per-cn", f"{caption} {len(jobs_t):,} jobs: too many to "
            "draw one by one; their distribution per project is in the large-jobs section "
            "(Fig. 10 and Table IV), and every job is in the CSV.", jobs_t)  # fmt: skip
    add(
        "over-runs",
        "figure",
        "metrics-over-runs",
        "Each metric over the study's runs (x: run start, UTC), one series per system; (n,p,f,m) "
        "= nodes, processes per node doing I/O, files per node, nodes sharing a file; shaded: "
        "the system's ReFrame reference range, red x: a value ReFrame failed.",
        metric_table,
        fig=over_runs_figure(metric_table, colours) if len(metric_table) else None,
    )
    sbs = side_by_side(metric_table, runs_df)
    add(
        "systems",
        "figure",
        "systems-side-by-side",
        "Each metric per system side by side: bar and label = the system's latest run, "
        "whisker = range over all its runs.",
        sbs,
        fig=side_by_side_figure(sbs, colours) if len(sbs) else None,
    )
    add(
        "crosscheck",
        "table",
        "table-i-crosscheck",
        "Seed 000's Table I cross-check: the benchmark's own write MiB/s of the file-per-process "
        "and single-shared-file models against the MiB/s derived from our logs of the same "
        f"files; within {TOLERANCE_PCT:g}% passes.",
        cross,
        table=True,
    )
    perf_cols = [
        "run_id",
        "system",
        "partition",
        "environ",
        "check",
        "parameters",
        "variable",
        "value",
        "unit",
        "reference",
        "lower",
        "upper",
        "result",
    ]
    perf = tables["perf"][perf_cols]
    add(
        "perf",
        "table",
        "reframe-performance",
        "ReFrame performance variables of every run and ReFrame's verdict against the "
        "references of configs/references/ (accepted range: reference x (1 + lower) to "
        "reference x (1 + upper)).",
        perf,
        table=True,
    )
    counts = counts_table(runs_df, tables)
    add("counts", "table", "counts", "What this report is made of, per system.", counts, table=True)
    quarantine = tables["quarantine"][["run_id", "path", "sha256", "reason"]]
    add(
        "counts",
        "table",
        "quarantine",
        f"Quarantined inputs ({len(quarantine)}): files that could not be read, with the "
        "reason; they are in no figure or table.",
        quarantine,
        table=True,
    )
    prov = provenance_table(runs)
    add(
        "provenance",
        "table",
        "runs-provenance",
        "Each run with the harness commit and the tool versions its manifest recorded "
        "(MANIFEST.json has the effective configuration).",
        prov,
        table=True,
    )

    verdicts = perf["result"].astype(str).str.lower()
    # The runs' span: first start to last start, or to a log tree's last log's end.
    ends = [runs_df["started"]]
    if "status" in runs_df and "finished" in runs_df:
        ends.append(runs_df.loc[runs_df["status"] == TREE_STATUS, "finished"])
    last_time = pd.concat(ends).max()
    within = cross[f"within_{TOLERANCE_PCT:g}pct"] if len(cross) else []
    summary = {
        "runs": f"{len(runs_df)} ({runs_df['started'].min()} to {last_time})",
        "systems": ", ".join(sorted(runs_df["system"].fillna("?").unique())),
        "jobs": len(tables["jobs"]),
        "quarantined": len(quarantine),
        "flagged": int(tables["jobs"]["flags"].notna().sum()) if "flags" in tables["jobs"] else 0,
        "perf": f"{int((verdicts == 'pass').sum())} of {len(perf)} values pass"
        if len(perf)
        else "no values",
        "crosscheck": f"{int(sum(within))} of {len(within)} models" if len(cross) else "no data",
        "ior_crosscheck": f"{int(ior_cross[scaling.WITHIN].sum())} of {len(ior_cross)} IOR "
        "runs and operations"
        if len(ior_cross)
        else "no data",
    }
    html = (
        _env()
        .get_template("report.html.j2")
        .render(
            title=title,
            study=study,
            version=version,
            created=now.strftime("%Y-%m-%d %H:%M:%S UTC"),
            summary=summary,
            tolerance=f"{TOLERANCE_PCT:g}",
            sections=sections,
            present={s["section"] for s in sections},
            anonymized=anonymizer is not None,
            missing_manifests=[
                r["run_id"] for r in runs if r["_manifest"] is None and not is_tree(r)
            ],
            git_commit=provenance.git_state()[0],
            iostudy_version=__version__,
            style=(TEMPLATES / "style.css").read_text(),
        )
    )
    (out / "index.html").write_text(html)
    return sections


def add_scaling(add, tables, runs: list[dict], runs_df: pd.DataFrame) -> pd.DataFrame:
    """The scaling campaign's section (seed 001; iostudy.metrics.scaling): per system, its latest
    run's IOR and metadata curves with the ceilings; the Table I check of every IOR run; pass/fail
    per scaling point. Returns the IOR cross-check table."""
    peaks = {
        r["run_id"]: (
            ((r["_manifest"] or {}).get("effective_config") or {}).get("system") or {}
        ).get("peaks")
        for r in runs
    }
    figures = (
        (
            "ior-scaling",
            scaling.ior_curves(tables["ior"]),
            scaling.ior_scaling_figure,
            "IOR bandwidth against processes (mean of the iterations and repetitions, bars min "
            "to max) on the scratch target, shared file (N-1) and file per process (N-N), "
            "aligned (a multiple of 1 MiB) and unaligned transfers; dotted: the best bandwidth "
            "to the memory target (the client-side ceiling); grey: the peaks the system "
            "declares (none drawn when it declares none).",
        ),
        (
            "metadata-scaling",
            scaling.metadata_curves(tables["perf"]),
            scaling.metadata_figure,
            "metadata rates against processes, mdtest (one directory per process) and iostudy's "
            "metarates (create+close, stat, utime, remove between barriers), on scratch and in "
            "memory (mean over repetitions, bars min to max; log scale); grey: the declared "
            "metadata peak.",
        ),
    )
    for ident, curves, draw, what in figures:
        for system, run_id in scaling.latest_with(curves, runs_df).itertuples(index=False):
            data = scaling.with_peaks(curves[curves["run_id"] == run_id], peaks.get(run_id))
            add(
                "scaling",
                "figure",
                f"{ident}-{_safe(system)}",
                f"{system}, latest run {run_id}: {what}",
                data,
                fig=draw(data, peaks.get(run_id), f"{system}: {run_id}"),
            )
    cross = scaling.ior_crosscheck_table(tables["ior"], tables["files"], tables["jobs"])
    add(
        "scaling",
        "table",
        "ior-crosscheck",
        "Seed 000's Table I check for every IOR run: IOR's own MiB/s (bytes of all iterations "
        "over the sum of their times) against the MiB/s derived from the job's log (bytes of "
        "IOR's test files, in the API's module, over the larger of the slowest rank's write or "
        "read time and the span from the first to the end of the last); "
        f"within {TOLERANCE_PCT:g}% passes.",
        cross,
        table=True,
    )
    add(
        "scaling",
        "table",
        "scaling-pass-fail",
        "Every scaling point of every run (each repetition) against the references of "
        "configs/references/: values passed, the variables that failed.",
        scaling.pass_fail_table(tables["perf"]),
        table=True,
    )
    return cross


def _parts(committed: catalog.Catalog, table: str):
    """(file, Part) of each committed part of the table."""
    return [(committed.part_path(table, name), part)
            for name, part in sorted(committed.parts(table).items())]  # fmt: skip


def _manifest(
    runs,
    all_run_ids,
    store: Path,
    study,
    version,
    title,
    now,
    sections,
    out: Path,
    argv,
    options: ReportOptions | None = None,
):
    options = options or ReportOptions()
    inputs = []
    # The store's committed files of the study's runs, and those that belong to no known run
    # (Slurm accounting, the collectors); the other studies' runs have no part in this report.
    ids = {r["run_id"] for r in runs}
    committed = catalog.load(store)
    for path, run in sorted((p, part.run_id) for table in sorted(committed.tables)
                            for p, part in _parts(committed, table)):  # fmt: skip
        if run not in ids and run in all_run_ids:
            continue
        inputs.append(
            {
                "kind": "store-parquet",
                "path": _shown(path),
                "sha256": provenance.sha256_file(path),
                "bytes": path.stat().st_size,
            }
        )
    run_entries = []
    for run in runs:
        m = run["_manifest"] or {}
        path = run["_manifest_file"]
        entry = {
            "kind": "log-tree" if is_tree(run) else "run-manifest",
            "run_id": run["run_id"],
            "path": _shown(path) if path else None,
        }
        if run["_manifest"] is not None:
            entry |= {"sha256": provenance.sha256_file(path), "bytes": path.stat().st_size}
        elif not is_tree(run):  # a tree's logs are inputs by their sha256 in the store's parts
            entry["missing"] = True
        inputs.append(entry)
        run_entries.append(
            {
                "run_id": run["run_id"],
                "campaign": run.get("campaign"),
                "system": run.get("system"),
                "started": str(run.get("started")),
                "finished": str(run.get("finished")),
                "status": run.get("status"),
                "git_commit": m.get("git_commit") or run.get("git_commit"),
                "git_dirty": m.get("git_dirty"),
                "tool_versions": m.get("tool_versions"),
                "command_line": m.get("command_line"),
                "spack_build": m.get("spack_build"),
                "effective_config": m.get("effective_config"),
            }
        )
    files = [
        {"path": p.name, "sha256": provenance.sha256_file(p), "bytes": p.stat().st_size}
        for p in sorted(out.iterdir())
        if p.is_file()
    ]
    commit, dirty = provenance.git_state()
    return {
        "report": {
            "study": study,
            "version": version,
            "title": title,
            "created": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "command_line": argv,
            "large_jobs": {"min_procs": options.large_procs, "min_mib": options.large_mib},
            # Which key made the pseudonyms (an HMAC of a constant: the key stays secret).
            "anonymized": {"key_id": options.anonymizer.key_id()} if options.anonymizer else None,
        },
        "git": {
            "commit": commit,
            "dirty": dirty,
        },
        "tool_versions": provenance.package_versions({p.lower(): p for p in PACKAGES}),
        "store": _shown(Path(store)),
        "inputs": inputs,
        "runs": run_entries,
        "contents": [
            {"id": s["id"], "kind": s["kind"], "caption": s["caption"], "csv": s["csv"]}
            for s in sections
        ],
        "files": files,
    }


def _strict_json(value):
    """value with NaN, NaT and infinities as None: MANIFEST.json is strict JSON, which any
    reader parses (NaN is not JSON)."""
    if isinstance(value, dict):
        return {k: _strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict_json(v) for v in value]
    if isinstance(value, str | bool | int) or value is None:
        return value
    if _missing(value) or (isinstance(value, float) and math.isinf(value)):
        return None
    return value


def _manifest_text(manifest: dict) -> str:
    return json.dumps(_strict_json(manifest), indent=2, default=str, allow_nan=False) + "\n"


@contextlib.contextmanager
def _locked(study_dir: Path):
    """The study folder's lock: of two builds finishing together, the second writes an index
    that has both versions."""
    fd = os.open(study_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _text(value, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _index_entry(n: int, m) -> dict:
    """The index's line of version n from its MANIFEST.json, whatever that holds (a version
    of an older iostudy, a damaged file: what cannot be read is left blank)."""
    m = m if isinstance(m, dict) else {}
    report = m.get("report") if isinstance(m.get("report"), dict) else {}
    git = m.get("git") if isinstance(m.get("git"), dict) else {}
    runs = m.get("runs") if isinstance(m.get("runs"), list) else []
    runs = [r for r in runs if isinstance(r, dict)]
    return {
        "version": n,
        "href": f"v{n}/index.html",
        "title": _text(report.get("title"), ""),
        "created": _text(report.get("created"), "?"),
        "runs": len(runs),
        "systems": ", ".join(sorted({_text(r.get("system"), "?") for r in runs})),
        "last_run": max((_text(r.get("run_id"), "") for r in runs), default=""),
        "commit": _text(git.get("commit"), "")[:12],
    }


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _index_file(study_dir: Path, study: str, new: dict | None = None) -> Path:
    """A temporary file beside the versions holding the index (REPORTS/<study>/index.html) of
    every published version, newest first, and of new ({number: manifest}: a version about to
    be published)."""
    manifests = {n: _read_json(study_dir / f"v{n}" / "MANIFEST.json") for n in versions(study_dir)}
    manifests |= new or {}
    entries = [_index_entry(n, manifests[n]) for n in sorted(manifests, reverse=True)]
    html = (
        _env()
        .get_template("versions.html.j2")
        .render(study=study, entries=entries, style=(TEMPLATES / "style.css").read_text())
    )
    fd, tmp = tempfile.mkstemp(dir=study_dir, prefix=".index-", suffix=".html")
    with os.fdopen(fd, "w") as fh:
        fh.write(html)
    os.chmod(tmp, 0o644)
    return Path(tmp)


def _publish(tmp: Path, study_dir: Path, study: str, n: int, manifest: dict) -> None:
    """Renames the complete version tmp onto v<n> (FileExistsError if taken) and puts the index
    listing it in place. The index is made first: once the version appears, nothing is left
    that could fail and leave it unlisted."""
    with _locked(study_dir):
        index = _index_file(study_dir, study, {n: manifest})
        try:
            rename_noreplace(tmp, study_dir / f"v{n}")
        except BaseException:
            index.unlink()
            raise
        os.replace(index, study_dir / "index.html")


def build(
    store: Path,
    study: str,
    reports: Path,
    title: str | None = None,
    as_version: int | None = None,
    results: Path | None = None,
    argv: list[str] | None = None,
    large_procs: int = workload.LARGE_PROCS,
    large_mib: float = workload.LARGE_MIB,
    anonymize: bool = False,
) -> Path:
    """Publish a new version of the study's report; returns the path of its index.html.

    results: the folder of the run directories (the store records manifest paths relative to
    it); default the store's parent folder (results/store -> results/). large_procs, large_mib:
    seed 000's large jobs (at least that many processes and MiB moved). anonymize: names
    (users, projects, paths, command lines) replaced by pseudonyms keyed by the store's
    anonymize.key (iostudy.core.anonymize)."""
    if not NAME_RE.match(study):
        raise ReportError(f"study {study!r}: use letters, digits, '.', '_' and '-' only")
    store, reports = Path(store), Path(reports)
    study_dir = reports / study
    if as_version is not None and as_version in _taken(study_dir):
        raise VersionExistsError(
            f"{study_dir / f'v{as_version}'} exists: a published version is never overwritten "
            f"(omit --as-version to publish v{max(_taken(study_dir)) + 1})"
        )
    if large_procs < 1 or not large_mib >= 0:
        raise ReportError(
            f"large jobs: --large-procs {large_procs} must be at least 1 and --large-mib "
            f"{large_mib:g} at least 0"
        )
    tables = load_tables(store)
    selected, runs = select_study(tables, study, results or store.parent, store)
    try:
        anonymizer = Anonymizer.for_store(store) if anonymize else None
    except AnonymizeError as exc:
        raise ReportError(str(exc)) from None
    systems = compare.system_descriptions(store, tables["runs"])
    options = ReportOptions(large_procs, large_mib, anonymizer, systems)
    all_ids = set(tables["runs"]["run_id"])
    study_dir.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(dir=study_dir, prefix=".build-"))
    try:
        now = datetime.now(timezone.utc).replace(microsecond=0)
        n = as_version or (max(_taken(study_dir), default=0) + 1)
        title = title or f"iostudy report: {study}"
        sections = render(selected, runs, study, n, title, tmp, now, options=options)
        while True:
            manifest = _manifest(
                runs, all_ids, store, study, n, title, now, sections, tmp, argv, options
            )
            text = _manifest_text(manifest)
            (tmp / "MANIFEST.json").write_text(text)
            # Published reports are read by others (a web server, colleagues): 755 and 644.
            os.chmod(tmp, 0o755)
            for p in tmp.iterdir():
                os.chmod(p, 0o644)
            try:
                _publish(tmp, study_dir, study, n, json.loads(text))
                break
            except FileExistsError:
                if as_version is not None:
                    raise VersionExistsError(
                        f"{study_dir / f'v{n}'} exists: a published version is never overwritten"
                    ) from None
                # Another build published v<n> meanwhile (or a file took its name): take the
                # next number, always a higher one. It is in the page too, so render again.
                n = max(_taken(study_dir), default=n) + 1
                for p in tmp.iterdir():
                    p.unlink()
                sections = render(selected, runs, study, n, title, tmp, now, options=options)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return study_dir / f"v{n}" / "index.html"


# ---------------------------------------------------------------------------------------------
# CLI


def cmd_build(args) -> int:
    try:
        index = build(
            Path(args.store),
            args.study,
            Path(args.reports),
            title=args.title,
            as_version=args.as_version,
            results=Path(args.results) if args.results else None,
            argv=["iostudy", *sys.argv[1:]],
            large_procs=args.large_procs,
            large_mib=args.large_mib,
            anonymize=args.anonymize,
        )
    except ReportError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    manifest = json.loads((index.parent / "MANIFEST.json").read_text())
    runs = manifest["runs"]
    print(
        f"report {args.study} v{manifest['report']['version']}: {len(runs)} runs "
        f"({', '.join(sorted({r['system'] or '?' for r in runs}))}), "
        f"{len(manifest['contents'])} figures and tables, "
        f"index of versions {index.parent.parent / 'index.html'}"
    )
    # The last line is the new report's page alone, for scripts (`make demo`) to take.
    print(index)
    return 0


def _positive(text: str) -> int:
    value = int(text.removeprefix("v"))
    if value < 1:
        raise ValueError(text)
    return value


def _non_negative(text: str) -> float:
    value = float(text)
    if not value >= 0 or math.isinf(value):
        raise ValueError(text)
    return value


def register(groups) -> None:
    """Adds the ``report`` command group to the CLI's group subparsers."""
    rep = groups.add_parser(
        "report",
        help="build versioned, self-contained HTML reports",
        description="Reports of a study: REPORTS/<study>/v<N>/ (index.html, MANIFEST.json, one "
        "CSV per figure and table) and REPORTS/<study>/index.html listing the versions.",
    )
    cmds = rep.add_subparsers(title="commands", dest="command", required=True)
    b = cmds.add_parser(
        "build",
        help="publish a new version of a study's report from the store",
        description="Publish REPORTS/<study>/v<N+1>/ from the study's runs in the store (a "
        "run belongs to the study its campaign names). A published version is never "
        "overwritten. The last line of output is the path of the new index.html.",
    )
    add_store_option(b)
    b.add_argument(
        "--results",
        metavar="DIR",
        help="folder of the run directories, where the runs' manifests are (default: the "
        "store's parent folder)",
    )
    b.add_argument("--study", required=True, help="study name, e.g. quick")
    b.add_argument(
        "--reports",
        type=Path,
        default=paths.REPORTS,
        help=f"reports folder (default {paths.REPORTS})",
    )
    b.add_argument("--title", help="page title (default: iostudy report: STUDY)")
    b.add_argument(
        "--large-procs",
        type=_positive,
        default=workload.LARGE_PROCS,
        metavar="N",
        help="seed 000's large jobs (Figs. 9, 10, Table IV) have at least N processes "
        f"(default {workload.LARGE_PROCS})",
    )
    b.add_argument(
        "--large-mib",
        type=_non_negative,
        default=workload.LARGE_MIB,
        metavar="M",
        help=f"... and moved at least M MiB, read + written (default {workload.LARGE_MIB:g})",
    )
    b.add_argument(
        "--anonymize",
        action="store_true",
        help="replace user names, projects, command lines and paths with pseudonyms (keyed "
        "HMAC; the same name, the same pseudonym, in every table, figure, CSV and version; the "
        "key is STORE/anonymize.key, made on first use and never published)",
    )
    b.add_argument(
        "--as-version",
        type=_positive,
        metavar="N",
        help="publish as v<N>; an error if v<N> exists (default: the next version)",
    )
    b.set_defaults(func=cmd_build)
