"""One project's page of a report (a Slurm account; "(unknown)": jobs without accounting):
seed 000's Table V (its jobs: MiB/s/CN, metadata %, key access size, strategy) and Table VI
(MiB/s/CN by job size), the distribution of its jobs' MiB/s/CN, and its diagnoses per rule."""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.logs import sizebins
from iostudy.report import diagnoses, figures

pd = deferred("pandas")

UNKNOWN = "(unknown)"
#: the distribution is drawn from this many jobs with a MiB/s/CN (a box of fewer says no more
#: than Table VI's rows)
DRAWN_FROM = 5
TABLE_V = [
    "log_path",
    "jobid",
    "user",
    "nprocs",
    "nodes",
    "mib_s_per_cn",
    "md_cost_pct",
    "key_access_size",
    "strategy",
    "bytes_moved",
    "start",
    "log_sha256",
]


def project_of(jobs: pd.DataFrame) -> pd.Series:
    """Each job's project: its account, UNKNOWN without one."""
    return jobs["account"].fillna(UNKNOWN).astype(str)


def table_v(jobs: pd.DataFrame) -> pd.DataFrame:
    """The project's jobs, those that moved the most bytes first (Table V's columns)."""
    t = jobs.assign(bytes_moved=jobs["bytes_read"] + jobs["bytes_written"])
    return t.sort_values(["bytes_moved", "log_sha256"], ascending=[False, True])[TABLE_V]


def table_vi(jobs: pd.DataFrame) -> pd.DataFrame:
    """MiB/s/CN by job size (compute nodes): jobs, median, and the slowest and fastest job."""
    rated = jobs[jobs["mib_s_per_cn"].notna()]
    g = rated.groupby("nodes")["mib_s_per_cn"]
    out = g.agg(
        jobs="size",
        median_mib_s_per_cn="median",
        slowest_mib_s_per_cn="min",
        fastest_mib_s_per_cn="max",
    )
    return out.reset_index()


def rules(found: pd.DataFrame, jobs: int) -> pd.DataFrame:
    """Per diagnosis rule that fired on the project's jobs: its Drishti code, jobs, their
    share, the advice; the most frequent first."""
    table = diagnoses.by_rule(found, jobs)
    return table.drop(columns="projects")


def summary(name: str, jobs: pd.DataFrame, found: pd.DataFrame) -> pd.DataFrame:
    """The project in a row: its jobs, users, bytes moved, median MiB/s/CN and the jobs a
    diagnosis fired on."""
    moved = jobs["bytes_read"] + jobs["bytes_written"]
    return pd.DataFrame(
        [
            {
                "project": name,
                "jobs": len(jobs),
                "users": jobs["user"].nunique(),
                "bytes_moved": moved.sum(),
                "median_mib_s_per_cn": jobs["mib_s_per_cn"].median(),
                "jobs_with_a_finding": found["log_sha256"].nunique(),
            }
        ]
    )


def sections(name: str, jobs: pd.DataFrame, found: pd.DataFrame, prefix: str, links):
    """The page's sections as [(heading, [(item, frame)])]; ``jobs``: the project's rows of
    jobstats.job_table, ``found``: their diagnoses, links: figures.item's (to job pages)."""

    def item(kind, ident, caption, df, **kw):
        return figures.item("project", kind, f"{prefix}-{ident}", caption, df, **kw), df

    v = table_v(jobs)
    caption = (
        f"The {len(figures.page_rows(v))} of its {len(jobs):,} jobs that moved the most bytes "
        "(each links to its page; every job in the CSV): MiB/s/CN, metadata share of the I/O "
        "time, key access size (the size bin of most accesses, r: reads, w: writes; "
        f"{sizebins.EDGES}) and strategy."
    )
    r = rules(found, len(jobs))
    fired = "The diagnosis rules that fired on its jobs, how often, and their advice."
    return [
        (
            "Project",
            [
                item(
                    "table",
                    "summary",
                    "The project's jobs with a log, their bytes "
                    "and median MiB/s/CN (seed 000's metric, as on every page).",
                    summary(name, jobs, found),
                    table=True,
                )
            ],
        ),
        (
            "Its jobs (seed 000, Table V)",
            [item("table", "jobs", caption, v, table=True, hide=["log_sha256"], links=links)],
        ),
        ("Performance by job size (seed 000, Table VI)", _by_size(item, jobs)),
        (
            "Diagnoses",
            [
                item("table", "diagnoses", fired, r, table=True)
                if len(r)
                else item("note", "diagnoses", f"{fired} None fired.", r)
            ],
        ),
    ]


def _by_size(item, jobs: pd.DataFrame) -> list:
    """Table VI, and the distribution of the jobs' MiB/s/CN when enough jobs have one."""
    vi = table_vi(jobs)
    out = [
        item(
            "table",
            "by-size",
            "MiB/s/CN by job size: the jobs of each node count, "
            f"their median, slowest and fastest.{figures.unknown_nodes(jobs)}",
            vi,
            table=True,
        )
    ]
    if vi["jobs"].sum() >= DRAWN_FROM:
        out.append(
            item(
                "figure",
                "distribution",
                "The distribution of its jobs' MiB/s/CN "
                "by job size (a box per bin of processes: 10th to 90th percentile).",
                figures.rates_by_size(jobs),
                fig=figures.rates_by_size_figure(jobs),
            )
        )
    return out
