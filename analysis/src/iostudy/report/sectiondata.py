"""What every section of a report reads, one bundle (:class:`SectionData`): the page being
made, the study's data and runs, the build's options, and the tables several sections draw
from, each made once whichever section asks first."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

from iostudy.core.anonymize import Anonymizer
from iostudy.core.deferred import deferred
from iostudy.metrics import compare, workload
from iostudy.report import components_report, figures, runtables
from iostudy.report.studydata import StudyData

pd = deferred("pandas")


@dataclass(frozen=True)
class ReportOptions:
    """What a report build can be asked beyond its study: the large-job filter of seed 000's
    per-project figures (processes and MiB moved, at least), and the pseudonyms of names
    (None: names as they are)."""

    large_procs: int = workload.LARGE_PROCS
    large_mib: float = workload.LARGE_MIB
    anonymizer: Anonymizer | None = None
    systems: dict | None = None  # system label -> description (compare.system_descriptions)
    pairs: tuple = ()  # (A, B) jobs to compare before and after (iostudy.report.beforeafter)


@dataclass
class SectionData:
    """A report being made, as its sections see it: add(section, kind, ident, caption, frame,
    fig=None, table=False, hide=(), label=None, whole=False) puts a figure, table or note on
    the page; the study's data (views of its runs' rows, iostudy.report.studydata) and runs
    (as read, and as a frame); the build's options. What a section finds that the top of the
    page or the job and project pages need goes into ``found`` (ceiling, ior_cross,
    diagnoses)."""

    add: Callable[..., None]
    data: StudyData
    runs: list[dict]
    runs_df: pd.DataFrame
    options: ReportOptions
    found: dict[str, Any] = field(default_factory=dict)

    @cached_property
    def by_environ(self) -> bool:
        """Whether the study ran several programming environments (MPI flavours): then a
        series is a system and environ, so that flavours are never averaged."""
        tables = (self.data["jobs"], self.data["iomodel"])
        return any(t["environ"].nunique() > 1 for t in tables if len(t))

    @cached_property
    def jobs(self) -> pd.DataFrame:
        """Each job's MiB/s/CN (runtables.job_table) in the order of its run's start, with the
        series it is drawn in."""
        jobs = runtables.job_table(self.data)
        jobs = jobs.merge(self.runs_df[["run_id", "started"]], on="run_id", how="left")
        jobs = jobs.sort_values(["started", "system", "jobid"]).drop(columns="started")
        jobs.insert(2, "series", runtables.series_of(jobs, self.by_environ).values)
        return jobs

    @cached_property
    def crosscheck(self) -> pd.DataFrame:
        """Seed 000's Table I cross-check (runtables.crosscheck_table)."""
        return runtables.crosscheck_table(self.data)

    @cached_property
    def metrics(self) -> pd.DataFrame:
        """Every metric per run and series (runtables.run_metrics)."""
        data = self.data
        return runtables.run_metrics(
            self.runs_df, data["iomodel"], self.jobs, self.crosscheck, data["perf"]
        )

    @cached_property
    def colours(self) -> dict:
        """One colour per series, the same in every figure of the runs and jobs."""
        return figures.colours(set(self.metrics["series"]) | set(self.jobs["series"]))

    @cached_property
    def limits(self) -> dict:
        """Each system's component limits (components_report.system_limits): the components
        section's table, the scaling figure's modelled ceiling."""
        return components_report.system_limits(self.data, self.runs, self.runs_df)

    @cached_property
    def comparable(self) -> pd.DataFrame:
        """The ReFrame results with their fingerprints (compare.results_of): the cross-site
        and regression sections'."""
        return compare.results_of(self.data["perf"], self.runs_df)

    @cached_property
    def judged(self) -> pd.DataFrame:
        """compare.judge of the comparable results, once: the page's verdict, its headline and
        the regression section's."""
        return compare.judge(self.comparable) if len(self.comparable) else pd.DataFrame()

    @cached_property
    def workload_items(self) -> list[tuple[str, tuple, dict]]:
        """The workload's and the large jobs' items as (section, add's other arguments):
        metrics.workload draws both from one ranking of the projects."""
        made: list[tuple[str, tuple, dict]] = []
        options = self.options
        workload.add_section(
            lambda section, *args, **kwargs: made.append((section, args, kwargs)),
            self.data.con,
            options.large_procs,
            options.large_mib,
            options.anonymizer,
            jobs=self.data.job_table(),
        )
        return made

    def add_made(self, made: list[tuple[str, tuple, dict]], section: str) -> None:
        """Puts on the page the items of ``made`` that are the section's, in their order."""
        for key, args, kwargs in made:
            if key == section:
                self.add(section, *args, **kwargs)
