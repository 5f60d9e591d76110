"""The job and project pages of a report version, beside its index.html:
``job-<the log's sha256>.html`` (iostudy.report.jobpage) and
``project-<first 12 hex of the name's sha256>.html`` (iostudy.report.projectpage), each with
the CSVs of its tables and figures.

Which pages: a page for every job a table of the report lists on the page (its first cell
links to it), for every project one lists, and for the jobs each project page lists (its
Table V: the jobs that moved the most bytes, as many as a page table shows). So every link
leads to a page, and their number is bounded by the tables' rows on the page, not by the
study's jobs: a facility's 100,000 jobs make at most a few hundred pages (the CSVs behind the
tables list every job, each with its log's sha256).
"""

from __future__ import annotations

import hashlib
from pathlib import Path

from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.report import dxtfigure, jobpage, projectpage
from iostudy.report.figures import fmt, unknown_nodes
from iostudy.report.publish import templates_env
from iostudy.report.studydata import StudyData

pd = deferred("pandas")

JOB_KEY, PROJECT_KEY = "log_sha256", ("project", "account")


def job_href(sha256: str) -> str:
    """A job's page: named by its log's whole sha256 (no two logs can share a page)."""
    return f"job-{sha256}.html"


def project_href(name: str) -> str:
    return f"project-{hashlib.sha256(name.encode()).hexdigest()[:12]}.html"


class Pages:
    """The pages a version links to (:meth:`links`, as its tables are made) and their writing
    (:meth:`write`, once the page's layout is known), from the store alone."""

    def __init__(self, data: StudyData, anonymizer=None):
        self.data, self.anonymizer = data, anonymizer
        self.jobs: dict[str, str] = {}  # href -> log sha256
        self.projects: dict[str, str] = {}  # href -> project name
        self.written: set[str] = set()  # the project pages written (a job page links up)
        self._table: pd.DataFrame | None = None

    def job_table(self) -> pd.DataFrame:
        """The study's job table as the pages show it (names anonymized when asked)."""
        if self._table is None:
            table = self.data.job_table()
            self._table = self.anonymizer.frame(table) if self.anonymizer else table
        return self._table

    def links(self, shown: pd.DataFrame) -> list[str | None] | None:
        """Per row of a table's rows on the page, the page its first cell links to: a job's
        (a row with a log's sha256), a project's (a first column that names projects the
        study's jobs have); None: the table links nowhere."""
        if JOB_KEY in shown.columns:
            hrefs = [job_href(s) if isinstance(s, str) else None for s in shown[JOB_KEY]]
            self.jobs.update((h, s) for h, s in zip(hrefs, shown[JOB_KEY], strict=True) if h)
            return hrefs
        if not len(shown.columns) or shown.columns[0] not in PROJECT_KEY:
            return None
        known = set(projectpage.project_of(self.job_table())) if len(self.job_table()) else set()
        hrefs = [project_href(p) if p in known else None for p in shown.iloc[:, 0]]
        self.projects.update((h, p) for h, p in zip(hrefs, shown.iloc[:, 0], strict=True) if h)
        return hrefs

    def write(self, out: Path, items: list[dict], found: pd.DataFrame | None, page: dict):
        """Writes the pages the page's ``items`` link to (and those their pages link to) into
        ``out``; ``found``: the study's diagnoses; ``page``: the template's common values."""
        wanted = {h for item in items for h in item.get("links", ())}
        found = found if found is not None else pd.DataFrame(columns=["log_sha256", "rule"])
        jobs = self.job_table()
        projects = projectpage.project_of(jobs) if len(jobs) else pd.Series(dtype=str)
        for href in sorted(h for h in wanted if h in self.projects):
            name = self.projects[href]
            mine = jobs[projects == name]
            theirs = found[found[JOB_KEY].isin(mine[JOB_KEY])]
            secs = projectpage.sections(name, mine, theirs, href.removesuffix(".html"), self.links)
            wanted |= {h for _, entries in secs for item, _ in entries for h in item["links"]}
            _write(out, href, f"Project {name}", _project_top(mine, theirs), secs, page)
            self.written.add(href)
        shas = sorted({self.jobs[h] for h in wanted if h in self.jobs})
        self._write_jobs(out, shas, found, page)

    def _write_jobs(self, out: Path, shas: list[str], found: pd.DataFrame, page: dict):
        if not shas:
            return
        jobs = self.job_table().drop_duplicates(JOB_KEY).set_index(JOB_KEY)
        stored = {t: self._by_log(r) for t, r in self.data.page_rows_of_logs(shas).items()}
        files, counters = stored["files"], stored["jobcounters"]
        common, heatmap = stored["accesssizes"], stored["heatmap"]
        ingested_from = self._ingested_from(shas)
        for sha in shas:
            job = jobs.loc[sha].copy()
            job[JOB_KEY] = sha
            job["ingested_from"] = self._show(ingested_from[sha])
            run_id = job["run_id"]  # a log ingested by several runs: this run's rows
            rows = jobpage.JobRows(
                files=files.of(sha, run_id),
                trace=self._trace(sha, job),
                counters=counters.of(sha, run_id, none=True),
                common_sizes=common.of(sha, run_id)[["module", "size", "accesses"]],
                heatmap=heatmap.of(sha, run_id).drop(columns=["run_id", JOB_KEY]),
            )
            secs = jobpage.sections(
                job, rows, found[found[JOB_KEY] == sha], job_href(sha).removesuffix(".html")
            )
            project = projectpage.project_of(job.to_frame().T).iloc[0]
            up = project_href(project) if project_href(project) in self.written else None
            top = _job_top(job, found, sha, jobpage.processes_moved(job, rows.files))
            _write(
                out,
                job_href(sha),
                f"Job {_job_name(job)}",
                top,
                secs,
                page,
                up=(up, f"project {project}"),
            )

    def _by_log(self, rows: pd.DataFrame) -> _ByLog:
        """A table's rows of the pages' logs, names anonymized when asked, by log."""
        return _ByLog(self.anonymizer.frame(rows) if self.anonymizer else rows)

    def _trace(self, sha: str, job: pd.Series) -> tuple[pd.DataFrame, pd.DataFrame] | None:
        """The job's DXT segments and their files' paths (names anonymized when asked);
        None when the store has none."""
        if not job.get("dxt_segments"):
            return None
        paths = dxtfigure.paths_of(self.data, sha, job["run_id"])
        paths = self.anonymizer.frame(paths) if self.anonymizer else paths
        return dxtfigure.trace_of(self.data, sha, job["run_id"]), paths

    def _ingested_from(self, shas: list[str]) -> dict[str, Path | None]:
        """Per job: where ingest read its log (its log_path under its run's source_root; None
        in a run imported from another site, or ingested before source_root was kept)."""
        jobs = self.data.job_table().drop_duplicates(JOB_KEY).set_index(JOB_KEY).loc[shas]
        roots = self.data.all_runs.set_index("run_id")["source_root"]
        out = {}
        for sha, run_id, log_path in zip(shas, jobs["run_id"], jobs["log_path"], strict=True):
            root = roots.get(run_id)
            out[sha] = Path(root) / str(log_path) if isinstance(root, str) else None
        return out

    def _show(self, path: Path | None) -> str | None:
        """A path as the pages show it: a pseudonym in an anonymized report."""
        if path is None:
            return None
        return self.anonymizer.path(str(path)) if self.anonymizer else str(path)


class _ByLog:
    """Rows of several logs, found by log and run."""

    def __init__(self, rows: pd.DataFrame):
        self.empty = rows.iloc[:0]
        self.logs = dict(iter(rows.groupby(JOB_KEY)))

    def of(self, sha: str, run_id: str, none: bool = False) -> pd.DataFrame | None:
        """The rows of a log's ingest by the run (``none``: None when the log has no rows)."""
        rows = self.logs.get(sha)
        if rows is None:
            return None if none else self.empty
        return rows[rows["run_id"] == run_id].reset_index(drop=True)


def _job_name(job: pd.Series) -> str:
    jobid = job.get("jobid")
    return f"{int(jobid)}" if pd.notna(jobid) else Path(str(job.get("log_path"))).name


def _job_top(job: pd.Series, found: pd.DataFrame, sha: str, moved: str) -> tuple[str, list[str]]:
    """The job page's verdict: DIAGNOSED or NO FINDING, and its first lines: what is wrong
    with its I/O, then its key figures (``moved``: how many of its processes moved bytes,
    when not all, jobpage.processes_moved)."""
    mine = found[found[JOB_KEY] == sha]
    lines = [f"{r.rule}: {r.found}" for r in mine.itertuples()] or [
        "No diagnosis rule fired on this job."
    ]
    said = [
        _rate_on_nodes(job),
        moved,
        f"strategy {job['strategy']}",
        f"metadata {_pct(job.get('md_cost_pct'))} of the I/O time.",
    ]
    lines.append("; ".join(part for part in said if part))
    return ("DIAGNOSED" if len(mine) else "NO FINDING"), lines


def _rate_on_nodes(job: pd.Series) -> str:
    """The job's MiB/s/CN and where it ran, or why it has none."""
    procs = jobpage.processes_text(int(job["nprocs"]))
    nodes, rate = job.get("nodes"), job.get("mib_s_per_cn")
    if pd.isna(nodes):
        return f"no MiB/s/CN ({nodecount.WHY_UNKNOWN}); {procs}"
    rate = f"{fmt(rate)} MiB/s/CN" if pd.notna(rate) else "no MiB/s/CN (no I/O time)"
    return f"{rate}; {procs} on {int(nodes):,} node{'s' if nodes != 1 else ''}"


def _pct(value) -> str:
    return f"{value:.0f}%" if pd.notna(value) else "(no I/O time)"


def _project_top(jobs: pd.DataFrame, found: pd.DataFrame) -> tuple[str, list[str]]:
    """The project page's first lines: its jobs, how many a rule fired on, their MiB/s/CN."""
    rates = jobs["mib_s_per_cn"].dropna()
    median = f"median {fmt(rates.median())} MiB/s/CN" if len(rates) else "no MiB/s/CN"
    diagnosed = found[JOB_KEY].nunique()
    line = (
        f"{len(jobs):,} jobs with a log, {median}; a diagnosis rule fired on {diagnosed:,} of "
        f"them.{unknown_nodes(jobs)}"
    )
    return f"{len(jobs):,} JOBS", [line]


def _write(
    out: Path, href: str, title: str, top: tuple[str, list[str]], secs, page: dict, up=(None, "")
):
    """One page and its CSVs."""
    for _, entries in secs:
        for item, frame in entries:
            frame.to_csv(out / item["csv"], index=False, lineterminator="\n")
    html = (
        templates_env()
        .get_template("detail.html.j2")
        .render(
            title=title,
            word=top[0],
            top=top[1],
            up=up,
            sections=[{"heading": h, "entries": [i for i, _ in entries]} for h, entries in secs],
            **page,
        )
    )
    (out / href).write_text(html)
