"""The tables behind the report's run and job sections, pure functions of the study's data
(:class:`iostudy.report.studydata.StudyData`) and runs: each job's MiB/s/CN, seed 000's Table I
cross-check, every metric per run and the systems side by side, the counts, the runs'
provenance, the ReFrame values with their parameters."""

from __future__ import annotations

import json

from iostudy.benchmarks import measures
from iostudy.core.deferred import deferred
from iostudy.metrics import compare, metrics, scaling
from iostudy.metrics.scaling import WITHIN
from iostudy.report.figures import to_time
from iostudy.report.studydata import StudyData
from iostudy.store import store as store_mod
from iostudy.store.measured import moved as labels_moved

np = deferred("numpy")
pd = deferred("pandas")


def latest_runs(runs: pd.DataFrame) -> pd.DataFrame:
    """The latest run (by start time) of each system, ordered by system."""
    runs = runs.assign(_t=to_time(runs["started"]).to_numpy())
    latest = runs.sort_values(["_t", "run_id"]).groupby("system").tail(1)
    return latest.drop(columns="_t").sort_values("system").reset_index(drop=True)


def series_of(frame: pd.DataFrame, by_environ: bool) -> pd.Series:
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
    "run_id",
    "system",
    "environ",
    "repetition",
    "jobid",
    "nprocs",
    "nodes",
    "nodes_source",
    "bytes",
    "io_time_slowest_s",
    "io_time_span_s",
    "strategy",
    "mib_s_per_cn",
    "mib_s_per_cn_span",
    "log_path",
    "log_sha256",
]


def job_table(data: StudyData) -> pd.DataFrame:
    """MiB/s/CN per job as :mod:`iostudy.metrics.jobstats` defines it (the one definition: the
    slowest rank's form over the layers that moved the bytes; seed 000's shared-file span form
    beside it), with the columns a reader needs."""
    t = data.job_table()
    t = t.assign(bytes=t["bytes_read"] + t["bytes_written"])  # the study's table stays as it is
    runs = data["jobs"][["log_sha256", "environ", "repetition"]].drop_duplicates("log_sha256")
    t = t.merge(runs, on="log_sha256", how="left")
    return t[JOB_COLUMNS]


def crosscheck_table(data: StudyData) -> pd.DataFrame:
    """Seed 000's Table I check (metrics.table1_crosscheck on metrics.model_throughput of the
    files in the benchmark's model directories): model, benchmark MiB/s, MiB/s derived from the
    logs, difference %, within tolerance."""
    files = data.files_matching(metrics.MODEL_DIR)
    t = metrics.table1_crosscheck(metrics.model_throughput(files, data["jobs"]), data["iomodel"])
    t = t.rename(
        columns={
            "write_mib_s": "benchmark_mib_s",
            "within_tolerance": WITHIN,
        }
    )
    t.insert(t.columns.get_loc("rel_diff"), "difference_pct", 100 * t["rel_diff"])
    t[WITHIN] = metrics.judged(t[WITHIN], t["derived_mib_s"])
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
        WITHIN,
    ]
    return t[[c for c in columns if c in t.columns]]


def parameters_of(text) -> dict:
    """A perf row's parameters (ReFrame's JSON) as a dict; text that is no JSON object is kept
    whole as the one parameter "parameters"."""
    try:
        params = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        params = text
    return params if isinstance(params, dict) else {"parameters": params}


def _parameter_labels(perf: pd.DataFrame) -> pd.Series:
    """Per row, the check's parameters that tell its parameter sets apart ("size=1G"), and what
    it measured ("measured=storage": iostudy.benchmarks.measures.kind), empty when the check
    ran with one set. Repetitions of one set are one metric (averaged)."""
    perf = labels_moved(perf)
    parsed = pd.Series(
        [
            {k: v for k, v in parameters_of(text).items() if k != "repetition"}
            | ({"measured": kind} if (kind := measures.kind(label)) else {})
            for text, label in zip(perf["parameters"], perf["measures"], strict=True)
        ],
        index=perf.index,
    )
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
    out.insert(3, "series", series_of(out, out["environ"].nunique(dropna=False) > 1).values)
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


def counts_table(runs: pd.DataFrame, data: StudyData) -> pd.DataFrame:
    counted = {
        "jobs (logs ingested)": data.count_by_run("jobs"),
        "file records": data.count_by_run("files"),
        "I/O models measured": data.count_by_run("iomodel"),
        "ReFrame performance values": data.count_by_run("perf"),
        "quarantined inputs": data.count_by_run("quarantine"),
        # a flagged log is in the figures without the values it is known to hold wrongly
        "flagged logs (values known wrong, stored as null)": data.count_by_run(
            "jobs", "flags IS NOT NULL"
        ),
    }
    rows = []
    # A log tree ingested without --system has none: its runs are counted under "?".
    systems = runs["system"].fillna("?")
    for system in sorted(systems.unique()):
        ids = set(runs.loc[systems == system, "run_id"])
        row = {"system": system, "runs": len(ids)}
        row |= {
            what: sum(n for r, n in per_run.items() if r in ids)
            for what, per_run in counted.items()
        }
        rows.append(row)
    total = {"system": "all"}
    for key in rows[0] if rows else []:
        if key != "system":
            total[key] = sum(r[key] for r in rows)
    return pd.DataFrame(rows + ([total] if len(rows) > 1 else []))


def spack_build_text(entry: dict | None, missing: str | None = None) -> str:
    """A run's Spack build in a line: Spack's version and source, and the iostudy commit its
    programs were built from, saying when that is not the run's checkout; without one, whether
    its system expected one (``missing``: the manifest's spack_build_missing)."""
    if entry is None:
        expected = "NONE, though the system expects one" if missing else "none"
        return f"{expected}: make setup's builds"
    source = f", {entry['spack_source']}" if entry.get("spack_source") else ""
    text = f"Spack {entry.get('spack_version')}{source}"
    commits = sorted(set((entry.get("iostudy_packages") or {}).values()))
    if commits:
        text += f"; iostudy programs from {', '.join(c[:12] for c in commits)}"
    differ = entry.get("differs_from_checkout") or []
    if differ and len(differ) == len(entry.get("iostudy_packages") or {}):
        text += " (NOT the checkout's commit)"
    elif differ:
        text += f" (NOT the checkout's commit: {', '.join(differ)})"
    return text


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
                "spack_build": spack_build_text(m.get("spack_build"), m.get("spack_build_missing")),
                "manifest": "found"
                if run["_manifest"] is not None
                else (store_mod.TREE_STATUS if store_mod.is_tree(run) else "MISSING"),
            }
        )
    return pd.DataFrame(rows)


# the value and its verdict beside the check, the parameters (as many as the checks have) last
PERF_COLUMNS = [
    "run_id",
    "system",
    "partition",
    "environ",
    "check",
    "variable",
    "value",
    "unit",
    "reference",
    "lower",
    "upper",
    "result",
    "measures",
    "parameters",
]


def parameter_text(perf: pd.DataFrame) -> pd.DataFrame:
    """The perf rows with their parameters (JSON) as "name=value, ..." text: one column
    whatever the checks and their parameters, so that the table fits its page; what each
    measured in its own column, in a store of either layout (iostudy.store.measured)."""
    perf = labels_moved(perf)
    text = perf["parameters"].map(
        lambda p: ", ".join(f"{k}={v}" for k, v in parameters_of(p).items())
    )
    return perf.assign(parameters=text)
