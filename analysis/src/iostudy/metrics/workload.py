"""Seed 000's workload characterization of a study's job logs as the report's sections:
:func:`add_section` for ``iostudy.report.report``, from the job table
(:func:`iostudy.metrics.jobstats.job_table`, one row per log) and the bytes per module
(:func:`module_bytes`). The numbers are pure functions of :mod:`iostudy.metrics.workload_tables`,
the figures those of :mod:`iostudy.metrics.workload_figures`:

=============  ==========================================================================
Fig. 2         :func:`~iostudy.metrics.workload_tables.interfaces_by_size`: per job-size bin,
               the share of jobs using each interface and the share of the bytes read and
               written through it
Fig. 3         :func:`~iostudy.metrics.workload_tables.strategy_by_size`: per job-size bin,
               the share of jobs per file-access strategy and the share of bytes to unique
               (N:N), shared (N:1) and partially shared (N:M) files
Fig. 4         :func:`~iostudy.metrics.workload_tables.top_projects`: the projects (Slurm
               accounts) that moved the most data
Table II       :func:`~iostudy.metrics.workload_tables.coverage_table`: how much of each
               project's work the logs cover
Fig. 5         :func:`~iostudy.metrics.workload_tables.files_vs_procs`: files accessed
               against processes, per job and project
Fig. 10        :func:`~iostudy.metrics.workload_tables.large_jobs` and
               :func:`~iostudy.metrics.workload_tables.box_stats`: MiB/s/CN of each project's
               large jobs
Table IV       :func:`~iostudy.metrics.workload_tables.project_averages`: per project, the
               averages over its large jobs
Fig. 9         :func:`~iostudy.metrics.workload_tables.access_sizes`: per project, the share
               of accesses in each size bin
=============  ==========================================================================
"""

from __future__ import annotations

from iostudy.collect import sacct
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import integral
from iostudy.logs import modules, sizebins
from iostudy.metrics import jobstats
from iostudy.metrics.workload_figures import (
    access_sizes_figure,
    box_figure,
    files_figure,
    interfaces_figure,
    projects_figure,
    strategy_figure,
)
from iostudy.metrics.workload_tables import (
    LARGE_MIB,
    LARGE_PROCS,
    TOP,
    UNKNOWN,
    access_sizes,
    box_stats,
    coverage_table,
    files_vs_procs,
    interfaces_by_size,
    large_jobs,
    project_averages,
    strategy_by_size,
    top_projects,
)

pd = deferred("pandas")

# Fig. 2's bytes per interface: the record modules whose bytes it shows (POSIX and STDIO, every
# byte that reached a file system; DFS and DAOS, those that bypassed it; MPI-IO, HDF5's datasets
# and PnetCDF's variables, the libraries' above them); their interfaces and the files table's
# tokens are the registry's (iostudy.logs.modules).
BYTES_MODULES = ("POSIX", "STDIO", "MPI-IO", "H5D", "PNETCDF_VAR", "DFS", "DAOS")

# Per job (every row of jobs, as jobstats.job_table has them) and module of BYTES_MODULES, the
# bytes of the module's records: job_table(con, module=...)'s bytes_read and bytes_written, of
# every module in one query.
_MODULE_BYTES = """
SELECT j.log_sha256, COALESCE(b.bytes_read, 0) AS bytes_read,
       COALESCE(b.bytes_written, 0) AS bytes_written, m.interface
FROM jobs j
CROSS JOIN (VALUES {modules}) m(position, token, interface)
LEFT JOIN (
    SELECT log_sha256, module, SUM(bytes_read) AS bytes_read, SUM(bytes_written) AS bytes_written
    FROM files WHERE module IN ({tokens}) GROUP BY ALL
) b ON b.log_sha256 = j.log_sha256 AND b.module = m.token
ORDER BY m.position, j.start, j.log_path
"""


def _rows(con, relation: str) -> int:
    """The rows of a relation of ``con``; 0 when it has none of that name."""
    found = con.execute(
        "SELECT count(*) FROM information_schema.tables WHERE table_name = ?", [relation]
    ).fetchone()[0]
    return con.execute(f'SELECT count(*) FROM "{relation}"').fetchone()[0] if found else 0


def module_bytes(con) -> pd.DataFrame:
    """Per job and interface of :data:`BYTES_MODULES`, bytes read and written through the
    interface's module (what ``jobstats.job_table(con, module=...)`` counts), in one query:
    log_sha256, bytes_read, bytes_written, interface; a row per job and interface, 0 when the
    job has no record of the module."""
    found = [(modules.TOKENS[name], modules.BY_NAME[name].interface) for name in BYTES_MODULES]
    query = _MODULE_BYTES.format(
        modules=", ".join(f"({i}, '{token}', '{name}')" for i, (token, name) in enumerate(found)),
        tokens=", ".join(f"'{token}'" for token, _ in found),
    )
    frame = con.execute(query).df()
    for column in ("bytes_read", "bytes_written"):
        frame[column] = integral(frame[column])
    return frame


def _coverage(con):
    """sacct.coverage's table, or None when the study has no Slurm accounting."""
    return sacct.coverage(con) if _rows(con, "sched") else None


def large_filter_text(procs: int, mib: float) -> str:
    return f"at least {procs:,} processes that moved at least {mib:,g} MiB"


def add_section(
    add,
    con,
    large_procs: int = LARGE_PROCS,
    large_mib: float = LARGE_MIB,
    anonymizer=None,
    jobs: pd.DataFrame | None = None,
) -> None:
    """The report's workload sections (seed 000, sections III and V) through report.render's
    add(), from ``con``'s relations jobs, files and, when the study has Slurm accounting, sched
    (the study's views: iostudy.report.studydata): nothing when the study has no job log.
    anonymizer (iostudy.core.anonymize.Anonymizer): names in the job table are replaced before
    anything is drawn. jobs: the job table when the caller has it already."""
    if not _rows(con, "jobs"):
        return
    jobs = jobstats.job_table(con) if jobs is None else jobs
    by_module = module_bytes(con)
    coverage = _coverage(con)
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
    _add_shares(add, jobs, by_module)
    projects = _add_projects(add, jobs, coverage)
    _add_large_jobs(add, jobs, projects, large_procs, large_mib)


def _add_shares(add, jobs, by_module) -> None:
    """Figs. 2 and 3: the interfaces and the file-access strategies per job size."""
    n = len(jobs)
    _figure_or_note(
        add,
        "workload",
        "interfaces-by-size",
        f"Interfaces by job size (seed 000, Fig. 2) over {n:,} job logs: per bin of processes "
        "(powers of two), the share of jobs whose logs used each interface (a job may use "
        "several; number of jobs above the bars) and of the bytes read and written through it "
        "(of the bytes the layers that moved them counted, each once: POSIX, STDIO, DFS, DAOS; "
        "MPI-IO's, HDF5's and PnetCDF's bytes are theirs too).",
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


def _add_projects(add, jobs, coverage) -> list[str]:
    """Fig. 4, Table II and Fig. 5: the top projects, their coverage and their files against
    processes; returns the top projects, most data first."""
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
    _add_coverage(add, coverage, projects)
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
    return projects


def _add_coverage(add, coverage, projects: list[str]) -> None:
    """Table II, or a note saying what it needs or that accounting has no job of the study's."""
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
        return
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


def _add_large_jobs(add, jobs, projects: list[str], large_procs: int, large_mib: float) -> None:
    """Fig. 10, Table IV and Fig. 9: the top projects' large jobs, or notes saying none is."""
    large = large_jobs(jobs, large_procs, large_mib)
    which = large_filter_text(large_procs, large_mib)
    none = (
        f"no job of the top {TOP} projects has {which} (set the filter with `iostudy report "
        "build --large-procs N --large-mib M`)."
    )
    _figure_or_note(
        add,
        "large-jobs",
        "mib-s-per-cn-by-project",
        f"MiB/s per compute node of large jobs by project (seed 000, Fig. 10): jobs with {which}, "
        f"of the top {TOP} projects; box: first quartile, median (red), third quartile; "
        "whiskers: minimum and maximum.",
        box_stats(large, projects),
        box_figure,
        none,
        table=True,
    )
    _add_averages(add, project_averages(large, projects), which, none)
    _figure_or_note(
        add,
        "large-jobs",
        "access-sizes-by-project",
        f"Access sizes of large jobs by project (seed 000, Fig. 9): jobs with {which}; per "
        "project, the share of its reads and writes in each size bin (bars of a project sum "
        f"to 100%; {sizebins.EDGES}).",
        access_sizes(large, projects),
        access_sizes_figure,
        none,
    )


def _add_averages(add, averages: pd.DataFrame, which: str, none: str) -> None:
    """Table IV, or a note saying no job is large."""
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
