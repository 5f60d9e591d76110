"""The report's applications section (seeds 001 and 002): the application checks' performance
values, HMMER's per-file STDIO table and the access patterns of the applications' logs.

Tables are pure functions of store tables (pandas DataFrames); figures are matplotlib Figure
objects. The checks are BTIO, MADbench2, FLASH-IO, HACC-IO (seed 001, section 4.4) and HMMER's
hmmsearch (seed 002, section V-B); their parameters, tags and performance variables are in
reframe-checks/README.md and iostudy.{btio,madbench,flashio,haccio,hmmer}.

- Performance: per check, every performance value per run and parameter set (one column per
  variable), and a bar chart of the bandwidth (MiB/s) and time (s) variables per parameter set
  (mean over runs and repetitions, bars min to max).
- HMMER (seed 002, Table I): per hmmer_check job of each system's latest run, per file role
  (the HMM file, the sequence database, the output: <STDOUT> in configuration A, the -o file in
  B and C) and in total, from the STDIO records summed over ranks: file size (the highest byte
  accessed + 1), I/O volume (bytes read + written), I/O time (read + write + metadata time),
  I/O count (reads + writes) and seek count.
- Access patterns (what seeds 001 and 002 discuss), per run and application log: the share of
  POSIX accesses not aligned to the file system's block, the share of small ones (at most 1 MiB:
  Darshan's size bins up to 'over 100 KiB to 1 MiB', iostudy.logs.sizebins), MPI-IO collective
  and independent operations, and the bytes moved through each module.

Sums of counts and bytes are float64, integers when every one is exact
(:func:`iostudy.core.numfmt.integral`): a store's values are each below 2^62, but a few of them
add up past 2^63, where int64 sums wrap around.
"""

from __future__ import annotations

import json
import math
import re
import textwrap
from typing import TYPE_CHECKING

from iostudy.benchmarks.hmmer import RESULTS as HMMER_RESULTS
from iostudy.core import checknames
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import integral, short
from iostudy.core.plotting import headroom
from iostudy.metrics import scaling

np = deferred("numpy")
pd = deferred("pandas")

if TYPE_CHECKING:
    from matplotlib.figure import Figure

#: the application checks, with the name the report gives each
#: the units of the variables drawn: bandwidths and times
FIGURE_UNITS = ("MiB/s", "s")
#: log tags every check's log has: the rest are the check's parameters
GENERIC_TAGS = {
    "campaign",
    "check",
    "system",
    "partition",
    "environ",
    "run_id",
    "lib_ver",
    "repetition",
}
#: the modules whose bytes a log's row shows (H5F records have no byte counters)
BYTE_MODULES = ("posix", "stdio", "mpiio", "pnetcdf")
#: HMMER's file roles, in the order of seed 002's Table I
HMMER_ROLES = ("HMM (input)", "sequence DB (input)", "output", "other", "totals")
#: the figures of a file in HMMER's table
HMMER_FIGURES = ["file_size_bytes", "io_volume_bytes", "io_time_s", "io_count", "seek_count"]
HMMER_COLUMNS = [
    "run_id",
    "system",
    "environ",
    "config",
    "repetition",
    "jobid",
    "role",
    "file",
    "path",
    *HMMER_FIGURES,
]
#: the access table's sums of counts and bytes
ACCESS_SUMS = [
    "posix_ops",
    "mpiio_coll_ops",
    "mpiio_indep_ops",
    *(f"{m}_bytes" for m in BYTE_MODULES),
]
ACCESS_COLUMNS = [
    "run_id",
    "system",
    "environ",
    "check",
    "parameters",
    "repetition",
    "jobid",
    "nprocs",
    "posix_ops",
    "unaligned_pct",
    "small_pct",
    "mpiio_coll_ops",
    "mpiio_indep_ops",
    "collective_pct",
    *(f"{m}_bytes" for m in BYTE_MODULES),
]
# Seed 002's Fig. 4 (per-OST occupancy and I/O time) is iostudy.report.lustre's section.


def _parameters(text) -> dict:
    """A perf row's parameters or a log's tags (a JSON object; anything else: none)."""
    try:
        value = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        return {}
    return value if isinstance(value, dict) else {}


def _sortable(value):
    """A key that orders numbers numerically before text (parameter values may be either)."""
    try:
        number = float(value)
    except (TypeError, ValueError):
        return (1, 0.0, str(value))
    return (1, 0.0, str(value)) if math.isnan(number) else (0, number, "")


def _safe(name) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "-", str(name)).strip("-") or "x"


def _verdict(results: pd.Series):
    verdicts = set(results.dropna().astype(str).str.lower())
    return "fail" if "fail" in verdicts else ("pass" if verdicts else None)


# ---------------------------------------------------------------------------------------------
# Performance values


def perf_table(perf: pd.DataFrame, check: str) -> pd.DataFrame:
    """One row per run, programming environment and parameter set (each repetition apart) of
    the check: run_id, system, environ, the parameters (repetition last), one column per
    performance variable (its value; the mean if the set has several), result (fail when any
    value failed)."""
    rows = perf[perf["check"] == check]
    if rows.empty:
        return pd.DataFrame(columns=["run_id", "system", "environ", "result"])
    params = rows["parameters"].map(_parameters)
    keys = sorted({k for p in params for k in p} - {"repetition"})
    keys += ["repetition"] if any("repetition" in p for p in params) else []
    variables = list(dict.fromkeys(rows["variable"]))
    out = []
    for (run_id, system, environ, _), g in rows.groupby(
        ["run_id", "system", "environ", "parameters"], dropna=False, sort=False
    ):
        p = params.loc[g.index[0]]
        record = {"run_id": run_id, "system": system, "environ": environ}
        record |= {k: p.get(k) for k in keys}
        values = pd.to_numeric(g["value"], errors="coerce").groupby(g["variable"]).mean()
        record |= {v: values.get(v, np.nan) for v in variables}
        record["result"] = _verdict(g["result"])
        out.append(record)
    out.sort(key=lambda r: (str(r["run_id"]), str(r["environ"]), [_sortable(r[k]) for k in keys]))
    return pd.DataFrame(out, columns=["run_id", "system", "environ", *keys, *variables, "result"])


def perf_bars(perf: pd.DataFrame, check: str) -> pd.DataFrame:
    """The figure's bars: per parameter set (the parameters that vary among the check's values,
    repetition left out; per system, and environment when there are several) and bandwidth or
    time variable, the mean, min and max over runs and repetitions. Columns: series, point,
    group (the x label), unit, variable, mean, min, max, values, runs."""
    columns = [
        "series",
        "point",
        "group",
        "unit",
        "variable",
        "mean",
        "min",
        "max",
        "values",
        "runs",
    ]
    rows = perf[(perf["check"] == check) & perf["unit"].isin(FIGURE_UNITS)].copy()
    rows["value"] = pd.to_numeric(rows["value"], errors="coerce")
    rows = rows.dropna(subset=["value"])
    if rows.empty:
        return pd.DataFrame(columns=columns)
    params = rows["parameters"].map(_parameters)
    keys = sorted({k for p in params for k in p} - {"repetition"})
    varying = [k for k in keys if len({json.dumps(p.get(k), sort_keys=True) for p in params}) > 1]
    rows["point"] = [", ".join(f"{k}={p.get(k)}" for k in varying) or "all" for p in params]
    environ = rows["environ"].fillna("?").astype(str)
    rows["series"] = rows["system"].fillna("?").astype(str)
    if environ.nunique() > 1:
        rows["series"] += "/" + environ
    several = rows["series"].nunique() > 1
    rows["group"] = (rows["series"] + ": " + rows["point"]) if several else rows["point"]
    keyed = sorted(
        zip(rows["series"], params, rows["group"], strict=True),
        key=lambda t: (t[0], [_sortable(t[1].get(k)) for k in varying]),
    )
    order = {g: i for i, g in enumerate(dict.fromkeys(t[2] for t in keyed))}
    out = (
        rows.groupby(["series", "point", "group", "unit", "variable"], sort=False)
        .agg(
            mean=("value", "mean"),
            min=("value", "min"),
            max=("value", "max"),
            values=("value", "size"),
            runs=("run_id", "nunique"),
        )
        .reset_index()
    )
    units = {u: i for i, u in enumerate(FIGURE_UNITS)}
    out["_o"] = [(order[g], units[u]) for g, u in zip(out["group"], out["unit"], strict=True)]
    return out.sort_values("_o", kind="stable").drop(columns="_o")[columns].reset_index(drop=True)


def perf_figure(bars: pd.DataFrame, title: str) -> Figure:
    """One panel per unit (MiB/s, s): per parameter set (x), a bar per variable (colour) at the
    mean over runs and repetitions, whiskers min to max."""
    from matplotlib import ticker
    from matplotlib.figure import Figure

    units = [u for u in FIGURE_UNITS if (bars["unit"] == u).any()]
    groups = list(dict.fromkeys(bars["group"]))
    widest = max(bars.groupby("unit")["variable"].nunique())
    width = min(max(6.0, 0.28 * len(groups) * widest + 3.0), 16.0)
    fig = Figure(figsize=(width, 2.9 * len(units) + 0.4), layout="constrained")
    axes = fig.subplots(len(units), 1, squeeze=False).ravel()
    x = np.arange(len(groups))
    for ax, unit in zip(axes, units, strict=True):
        of_unit = bars[bars["unit"] == unit]
        variables = list(dict.fromkeys(of_unit["variable"]))
        step = 0.8 / len(variables)
        label_bars = len(groups) * len(variables) <= 24
        for i, variable in enumerate(variables):
            v = of_unit[of_unit["variable"] == variable].set_index("group").reindex(groups)
            xs = x - 0.4 + step * (i + 0.5)
            mean = v["mean"].to_numpy(dtype=float)
            ax.bar(xs, mean, width=step * 0.9, color=f"C{i % 10}", label=variable)
            ax.errorbar(
                xs,
                mean,
                yerr=[mean - v["min"].to_numpy(dtype=float), v["max"].to_numpy(dtype=float) - mean],
                fmt="none",
                ecolor="black",
                capsize=2,
                linewidth=0.8,
            )
            if label_bars:
                for xi, top, value in zip(xs, v["max"], mean, strict=True):
                    if np.isfinite(value):
                        ax.annotate(
                            short(value),
                            (xi, top),
                            xytext=(0, 2),
                            textcoords="offset points",
                            ha="center",
                            va="bottom",
                            fontsize=6,
                        )
        ax.set_xticks(x, [textwrap.fill(g, 22) for g in groups], fontsize=7)
        ax.set_ylabel(unit, fontsize=8)
        ax.set_ylim(0, headroom(of_unit["max"]))
        ax.yaxis.set_major_formatter(ticker.FuncFormatter(lambda v, _: short(v)))
        ax.tick_params(axis="y", labelsize=7)
        ax.grid(axis="y", alpha=0.3)
        ax.set_title("bandwidth" if unit == "MiB/s" else "time", fontsize=9)
        ax.legend(fontsize=6, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.suptitle(title, fontsize=10)
    return fig


# ---------------------------------------------------------------------------------------------
# HMMER's per-file STDIO table (seed 002, Table I)


def hmmer_role(path, config) -> str:
    """A STDIO file's role in an hmmsearch job: the HMM file (.hmm), the sequence database
    (.fa, .fasta), the output (<STDOUT> in configuration A, the -o file in B and C), or other."""
    path = str(path)
    if path.endswith(".hmm"):
        return "HMM (input)"
    if path.endswith((".fa", ".fasta")):
        return "sequence DB (input)"
    output = path == "<STDOUT>" if config == "A" else path.endswith("/" + HMMER_RESULTS)
    return "output" if output else "other"


def _whole(sums: pd.Series) -> pd.Series:
    """Sums (float64, NaN: unknown) as integers when every one is exact (numfmt.integral),
    an unknown one kept unknown."""
    exact = integral(sums)
    return exact.astype("Int64").where(sums.notna()) if exact.dtype == "int64" else sums


def _file_figures(records: pd.DataFrame) -> dict:
    """A file's figures from its records (one per rank, or one shared): size from the highest
    byte accessed, the others summed over the records (as float64, see the module docstring)."""
    top = pd.to_numeric(records["max_byte"], errors="coerce").max()

    def fill(column):
        return pd.to_numeric(records[column], errors="coerce").astype(float).fillna(0)

    return {
        "file_size_bytes": float(top) + 1 if pd.notna(top) else np.nan,
        "io_volume_bytes": (fill("bytes_read") + fill("bytes_written")).sum(),
        "io_time_s": (fill("read_time") + fill("write_time") + fill("meta_time")).sum(),
        "io_count": (fill("reads") + fill("writes")).sum(),
        "seek_count": fill("seeks").sum(),
    }


def hmmer_files(jobs: pd.DataFrame, files: pd.DataFrame) -> pd.DataFrame:
    """Seed 002's Table I from the STDIO records of hmmer_check jobs: per job (its config tag A,
    B or C) a row per file with its role, and a totals row over all the job's STDIO files;
    ordered by role, then configuration, so that A, B and C of a role are together. Columns:
    HMMER_COLUMNS (file: the file's name, path: its full path)."""
    hmmer = jobs[jobs["check"] == checknames.HMMER.name]
    stdio = files[(files["module"] == "stdio") & files["log_sha256"].isin(hmmer["log_sha256"])]
    by_log = dict(tuple(stdio.groupby("log_sha256")))  # a log's sha256 is its identity
    rows = []
    for job in hmmer.to_dict("records"):
        config = str(_parameters(job.get("tags")).get("config") or "?")
        recs = by_log.get(job["log_sha256"], stdio.iloc[:0])
        base = {
            "run_id": job["run_id"],
            "system": job.get("system"),
            "environ": job.get("environ"),
            "config": config,
            "repetition": job.get("repetition"),
            "jobid": job.get("jobid"),
        }
        of_job = []
        for path, g in recs.groupby("path", sort=True, dropna=False):
            name = str(path).rsplit("/", 1)[-1]
            of_job.append(
                base
                | {"role": hmmer_role(path, config), "file": name, "path": path}
                | _file_figures(g)
            )
        if not of_job:
            continue
        totals = {k: sum(r[k] for r in of_job if pd.notna(r[k])) for k in HMMER_FIGURES}
        rows += of_job + [base | {"role": "totals", "file": f"{len(of_job)} files"} | totals]
    if not rows:
        return pd.DataFrame(columns=HMMER_COLUMNS)
    roles = {r: i for i, r in enumerate(HMMER_ROLES)}
    rows.sort(
        key=lambda r: (
            roles[r["role"]],
            r["config"],
            str(r["environ"]),
            _sortable(r["repetition"]),
            _sortable(r["jobid"]),
            str(r.get("path")),
        )
    )
    out = pd.DataFrame(rows, columns=HMMER_COLUMNS)
    for column in HMMER_FIGURES:
        if column != "io_time_s":
            out[column] = _whole(out[column])
    return out.astype({"repetition": "Int64", "jobid": "Int64"})


# ---------------------------------------------------------------------------------------------
# Access patterns of the applications' logs (seeds 001 and 002)


def _share(part, whole) -> float:
    return 100 * part / whole if whole else np.nan


#: the records' columns access_table sums, once per log (its sha256 is its identity) and module
COUNTED = [
    "reads",
    "writes",
    "unaligned",
    "small_reads",
    "small_writes",
    "coll_ops",
    "indep_ops",
    "bytes_read",
    "bytes_written",
]


def access_table(jobs: pd.DataFrame, files: pd.DataFrame) -> pd.DataFrame:
    """One row per log of an application check (in jobs): the check and its parameters (the
    log's tags beyond the generic ones), then from its records: POSIX reads + writes, the share
    of them not aligned to the file system's block (unaligned_pct) and at most 1 MiB (small_pct),
    MPI-IO collective and independent reads + writes and the collective share, and the bytes
    read + written through each module. Shares are empty when there is no operation."""
    apps = jobs[jobs["check"].isin(list(checknames.APP_CHECKS))]
    mine = files[files["log_sha256"].isin(apps["log_sha256"])]
    numbers = mine[COUNTED].apply(pd.to_numeric, errors="coerce").astype(float).fillna(0)
    sums = numbers.groupby([mine["log_sha256"], mine["module"]]).sum()
    rows = [_access_row(job, sums) for job in apps.to_dict("records")]
    if not rows:
        return pd.DataFrame(columns=ACCESS_COLUMNS)
    rows.sort(key=lambda r: (str(r["_start"]), r["check"], _sortable(r["jobid"])))
    out = pd.DataFrame(rows, columns=ACCESS_COLUMNS)
    for column in ACCESS_SUMS:
        out[column] = _whole(out[column])
    return out.astype({"repetition": "Int64", "jobid": "Int64", "nprocs": "Int64"})


def _access_row(job: dict, sums: pd.DataFrame) -> dict:
    """access_table's row of one job, from the sums of its records per log and module (and
    its start, "_start", to order the rows by)."""
    tags = _parameters(job.get("tags"))

    def total(module, *columns, sha=job["log_sha256"]):
        key = (sha, module)
        return sums.loc[key, list(columns)].sum() if key in sums.index else 0.0

    ops = total("posix", "reads", "writes")
    coll, indep = total("mpiio", "coll_ops"), total("mpiio", "indep_ops")
    return {
        "run_id": job["run_id"],
        "system": job.get("system"),
        "environ": job.get("environ"),
        "check": job["check"],
        "parameters": ", ".join(f"{k}={tags[k]}" for k in sorted(tags) if k not in GENERIC_TAGS),
        "repetition": job.get("repetition"),
        "jobid": job.get("jobid"),
        "nprocs": job.get("nprocs"),
        "posix_ops": ops,
        "unaligned_pct": _share(total("posix", "unaligned"), ops),
        "small_pct": _share(total("posix", "small_reads", "small_writes"), ops),
        "mpiio_coll_ops": coll,
        "mpiio_indep_ops": indep,
        "collective_pct": _share(coll, coll + indep),
        **{f"{m}_bytes": total(m, "bytes_read", "bytes_written") for m in BYTE_MODULES},
        "_start": job.get("start"),
    }


# ---------------------------------------------------------------------------------------------
# The section


def add_section(add, data) -> None:
    """The report's applications section (seeds 001 and 002) through report.render's add();
    nothing when the study has no application-check data (the section then says so)."""
    perf, jobs, runs = (data[t] for t in ("perf", "jobs", "runs"))
    app_jobs = jobs[jobs["check"].isin(list(checknames.APP_CHECKS))]
    files = data.files_of_logs(app_jobs["log_sha256"])
    _add_perf(add, perf, jobs)
    _add_hmmer_files(add, jobs, files, runs)
    _add_access(add, app_jobs, files, runs)


def _add_perf(add, perf: pd.DataFrame, jobs: pd.DataFrame) -> None:
    """Per application check, its performance values (table) and their bars (figure)."""
    present = [
        c for c in checknames.APP_CHECKS if (perf["check"] == c).any() or (jobs["check"] == c).any()
    ]
    for check in present:
        name = checknames.APP_CHECKS[check]
        table = perf_table(perf, check)
        if table.empty:
            continue
        add(
            "applications",
            "table",
            f"app-perf-{check}",
            f"{name} ({check}): its ReFrame performance values per run and parameter set (one "
            "column per variable, each repetition a row) and ReFrame's verdict.",
            table,
            table=True,
        )
        bars = perf_bars(perf, check)
        add(
            "applications",
            "figure",
            f"app-perf-{check}-bars",
            f"{name} ({check}): bandwidth (MiB/s) and time (s) variables per parameter set, "
            "mean over runs and repetitions, whiskers min to max.",
            bars,
            fig=perf_figure(bars, name) if len(bars) else None,
        )


def _add_hmmer_files(add, jobs: pd.DataFrame, files: pd.DataFrame, runs: pd.DataFrame) -> None:
    """Per system, HMMER's per-file table of its latest run (seed 002, Table I)."""
    hmmer_jobs = jobs[jobs["check"] == checknames.HMMER.name]
    for system, run_id in scaling.latest_with(hmmer_jobs, runs).itertuples(index=False):
        table = hmmer_files(hmmer_jobs[hmmer_jobs["run_id"] == run_id], files)
        add(
            "applications",
            "table",
            f"hmmer-files-{_safe(system)}",
            f"{system}, latest run {run_id}: HMMER's per-file STDIO characteristics (seed 002, "
            "Table I) per configuration (A: results to stdout, B: to a file, C: as B with the "
            "database in node memory): file size (highest byte accessed + 1), I/O volume (bytes "
            "read + written), I/O time (read + write + metadata), I/O count (reads + writes) "
            "and seeks, summed over ranks.",
            table,
            table=True,
            hide=["run_id", "path"],
        )


def _add_access(add, app_jobs: pd.DataFrame, files: pd.DataFrame, runs: pd.DataFrame) -> None:
    """Per run with application logs, each log's access patterns."""
    ordered = runs[runs["run_id"].isin(set(app_jobs["run_id"]))]
    ordered = ordered.assign(_t=pd.to_datetime(ordered["started"], utc=True, errors="coerce"))
    for run in ordered.sort_values(["_t", "run_id"]).itertuples():
        table = access_table(app_jobs[app_jobs["run_id"] == run.run_id], files)
        add(
            "applications",
            "table",
            f"app-access-{_safe(run.run_id)}",
            f"{run.system}, run {run.run_id}: access patterns of each application log (seeds "
            "001, 002): POSIX accesses not aligned to the file system block and at most 1 MiB "
            "(% of reads + writes), MPI-IO collective and independent operations, bytes read + "
            "written per module.",
            table,
            table=True,
            hide=["run_id"],
        )
