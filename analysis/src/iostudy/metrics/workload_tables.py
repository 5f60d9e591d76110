"""Seed 000's workload tables: pure functions from the job table
(:func:`iostudy.metrics.jobstats.job_table`, one row per log) to the data of each figure and table
of :mod:`iostudy.metrics.workload` (which lists them), with the names and bins they share. A
module of its own: these are the numbers, the figures (:mod:`iostudy.metrics.workload_figures`)
only draw them.

Job sizes are bins of processes on powers of two, [2^k, 2^(k+1)). A job with no account is
in the project "(unknown)". Large jobs are those with at least ``large_procs`` processes that
moved at least ``large_mib`` MiB (seed 000: 1,024 and 500), the filter of Figs. 9, 10 and
Table IV.

Totals of bytes and counts are summed as float64 and shown as integers when every one is exact
(:func:`iostudy.core.numfmt.integral`): a store's values are each below 2^62, but many of them
add up past 2^63, where int64 sums wrap around.
"""

from __future__ import annotations

import re

from iostudy.collect import sacct
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB, integral
from iostudy.logs import modules, sizebins
from iostudy.metrics import iotime

np = deferred("numpy")
pd = deferred("pandas")

# Seed 000, section V: "at least 1,024 processes and moved at least 500 MiB of data".
LARGE_PROCS = 1024
LARGE_MIB = 500.0
# The seed's Fig. 4, Table II and section V look at the ten projects that moved the most data.
TOP = 10
UNKNOWN = "(unknown)"
OTHER = "(other projects)"

# The job table's interfaces (high level last, as in seed 000's Fig. 2 legend).
INTERFACES = modules.INTERFACE_ORDER
# Darshan's access-size bins: the job table's column suffixes and their labels (sizebins').
SIZE_BINS = {b.lower(): label for b, label in sizebins.LABELS.items()}
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
    """Seed 000's Fig. 2: per job-size bin and interface (POSIX, STDIO, MPI-IO, HDF5, PnetCDF,
    DFS, DAOS), one row per measure:

    - "jobs": value = jobs of the bin whose logs used the interface (the job table's
      ``interfaces``), pct = their share of the bin's jobs (a job may use several);
    - "bytes read", "bytes written": value = bytes through the interface's module (from
      ``module_bytes``: log_sha256, interface, bytes_read, bytes_written; per job and interface),
      pct = their share of the bin's bytes in the job table's scope (the layers that moved them,
      each byte once: POSIX, STDIO, DFS, DAOS; MPI-IO, HDF5 and PnetCDF sit above those, so
      their bytes are also those layers'). An interface with no row in module_bytes has no byte
      rows.

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
        for strategy in iotime.STRATEGIES:
            count = int(counts.get(strategy, 0))
            rows.append([*head, "jobs", strategy, count, 100.0 * count / len(g)])
        sums = {c: _num(g, col).sum() for c, col in iotime.CLASS_BYTES.items()}
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
    when it is one of projects, else "(other projects)": project, log_path, nprocs, files,
    strategy; in the order of projects, then by processes."""
    columns = ["project", "log_path", "nprocs", "files", "strategy"]
    if jobs.empty:
        return pd.DataFrame(columns=columns)
    project = project_of(jobs)
    out = pd.DataFrame(
        {
            "project": project.where(project.isin(projects), OTHER),
            "log_path": jobs["log_path"],
            "nprocs": pd.to_numeric(jobs["nprocs"], errors="coerce"),
            "files": pd.to_numeric(jobs["files"], errors="coerce").fillna(0),
            "strategy": jobs["strategy"],
        }
    )
    order = {p: i for i, p in enumerate([*projects, OTHER])}
    out["_o"] = out["project"].map(order)
    out = out.sort_values(["_o", "nprocs", "files", "log_path"], kind="stable").drop(columns="_o")
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
