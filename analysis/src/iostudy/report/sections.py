"""The report's sections, one registry (:data:`SECTIONS`): each section of the page with its
heading, the kinds of study whose page leads with it (and its place there), the command that
brings its data, and its builder. Every builder takes the one bundle of what sections read
(:class:`iostudy.report.sectiondata.SectionData`) and puts its figures, tables and notes on
the page through its ``add``; which sections a page shows, in which order, is
:mod:`iostudy.report.layout`'s, from this registry."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field

from iostudy.core.numfmt import short
from iostudy.report import (
    adaptive_report,
    apps,
    beforeafter,
    compare_report,
    components_report,
    devices,
    diagnoses,
    figures,
    filesystems,
    lustre,
    probe_report,
    runtables,
    scaling_report,
)
from iostudy.report.figures import safe
from iostudy.report.headers import TOLERANCE_PCT
from iostudy.report.sectiondata import SectionData

# Up to this many jobs, the report draws each job's MiB/s/CN (a bar and a row per job).
JOBS_SHOWN = 60


def histograms_section(d: SectionData) -> None:
    """Seed 003: the 2D histograms of the latest run of each system."""
    iomodel = d.data["iomodel"]
    latest = list(runtables.latest_runs(d.runs_df).itertuples())
    shown = iomodel[iomodel["run_id"].isin({run.run_id for run in latest})]
    scales = figures.histogram_scales(runtables.histograms(shown)) if len(shown) else None
    for run in latest:
        hist = runtables.histograms(iomodel[iomodel["run_id"] == run.run_id])
        if hist.empty:
            none = f"{run.system}, latest run {run.run_id}: no I/O-model results."
            d.add("histograms", "figure", f"histogram-{safe(run.system)}", none, hist)
            continue
        groups = list(hist.groupby(["environ", "bytes"], dropna=False))
        for (environ, size), h in groups:
            ident, what = f"histogram-{safe(run.system)}", run.system
            if len(groups) > 1:
                ident += f"-{safe(environ)}-{safe(size)}"
                what += f" ({environ}, {short(size / 2**20)} MiB)"
            d.add(
                "histograms",
                "figure",
                ident,
                "Maximum write throughput (left) and maximum throughput per node-hour (right) "
                "of the I/O models in each bin of processes doing I/O x processes per file, "
                "both on log2 bins (seed 003, Fig. 3); one colour scale per quantity for every "
                "system's panels.",
                h,
                fig=figures.histogram_figure(h, f"{what}: {run.run_id}", scales),
                label=f"{what}, latest run {run.run_id}",
            )


SIZE_CAPTION = (
    "MiB/s per compute node by job size (seed 000's rate against processes, at a facility's "
    "scale): per bin of processes (powers of two) a box of the jobs that moved data (median, "
    "quartiles, whiskers 10th to 90th percentile; log scale), their number above it."
)
# The job table's columns left out of the page (in the CSV): the page's table fits its width.
JOBS_HIDDEN = ["log_path", "repetition", "io_time_span_s", "log_sha256"]
JOBS_CAPTION = (
    "MiB/s per compute node (MiB/s/CN) of every job, from its log (seed 000, II-D): the bytes "
    "the layers that moved them counted, each once (POSIX and STDIO; DFS and DAOS where the I/O "
    "bypassed POSIX), over the slowest rank's I/O time (its time on its own "
    "files plus, per shared file, the slowest rank's; PyDarshan's agg_perf_by_slowest), "
    "divided by the job's compute nodes (nodes_source: slurm, the harness's tag, the log's "
    "job-level modules, the system's cores per node; else unknown, and no MiB/s/CN). The "
    "table also gives seed "
    "000's own form "
    "(mib_s_per_cn_span: the longest first-open to last-I/O span of a shared file when it "
    "is longer) and the file-sharing strategy that moved the most bytes."
)


def crosscheck_section(d: SectionData) -> None:
    d.add(
        "crosscheck",
        "table",
        "table-i-crosscheck",
        "Seed 000's Table I cross-check: the benchmark's own write MiB/s of the file-per-process "
        "and single-shared-file models against the MiB/s derived from our logs of the same "
        f"files; within {TOLERANCE_PCT:g}% passes.",
        d.crosscheck,
        table=True,
    )


def perf_section(d: SectionData) -> None:
    d.add(
        "perf",
        "table",
        "reframe-performance",
        "ReFrame performance variables of every run and ReFrame's verdict against the "
        "references of configs/references/ (accepted range: reference x (1 + lower) to "
        "reference x (1 + upper)); the test case's parameters in the last column.",
        runtables.parameter_text(d.data["perf"][runtables.PERF_COLUMNS]),
        table=True,
    )


def counts_section(d: SectionData) -> None:
    counts = runtables.counts_table(d.runs_df, d.data)
    d.add(
        "counts", "table", "counts", "What this report is made of, per system.", counts, table=True
    )
    quarantine = d.data["quarantine"][["run_id", "path", "sha256", "reason"]]
    d.add(
        "counts",
        "table",
        "quarantine",
        f"Quarantined inputs ({len(quarantine)}): files that could not be read, with the "
        "reason; they are in no figure or table.",
        quarantine,
        table=True,
    )
    jobs = d.data["jobs"]
    flagged = jobs.loc[jobs["flags"].notna(), ["run_id", "log_path", "flags"]]
    if len(flagged):  # listed where they are counted: what was stored as null, and why
        d.add(
            "counts",
            "table",
            "flagged-logs",
            f"Flagged logs ({len(flagged)}): values a log "
            "holds that cannot be right (iostudy.logs.plausibility), stored as null and left "
            "out of every figure and mean; the rest of the log is in.",
            flagged,
            table=True,
        )


def provenance_section(d: SectionData) -> None:
    d.add(
        "provenance",
        "table",
        "runs-provenance",
        "Each run with the harness commit, the tool versions and the Spack build (with the "
        "iostudy commit the view's programs were built from) its manifest recorded "
        "(MANIFEST.json has the effective configuration).",
        runtables.provenance_table(d.runs),
        table=True,
    )


def jobs_section(d: SectionData) -> None:
    """MiB/s/CN of every job (iostudy.metrics.jobstats): a bar and a row per job, or at a
    facility's scale their distribution by job size."""
    jobs = d.jobs
    unknown = figures.unknown_nodes(jobs)
    rated = jobs["mib_s_per_cn"].notna().any()  # a chart without a bar says nothing
    caption = JOBS_CAPTION + unknown
    if len(jobs) <= JOBS_SHOWN:
        d.add(
            "jobs",
            "figure" if rated else "table",
            "job-mib-s-per-cn",
            caption,
            jobs,
            fig=figures.job_rates_figure(jobs, d.colours) if rated else None,
            table=True,
            hide=JOBS_HIDDEN + ([] if d.by_environ else ["series", "environ"]),
        )
        return
    # a bar per job is unreadable at a facility's scale: the distributions show them
    d.add(
        "jobs",
        "note",
        "job-mib-s-per-cn",
        f"{caption} {len(jobs):,} jobs: too "
        "many to draw one by one; their distribution by job size below, per project in "
        "the large-jobs section (Fig. 10 and Table IV), and every job in the CSV.",
        jobs,
    )
    d.add(
        "jobs",
        "figure",
        "job-mib-s-per-cn-by-size",
        SIZE_CAPTION + unknown,
        figures.rates_by_size(jobs),
        fig=figures.rates_by_size_figure(jobs),
        table=True,
    )


def over_runs_section(d: SectionData) -> None:
    """Each metric over the study's runs, in the series and colours of the jobs'."""
    runs_df, metric_table = d.runs_df, d.metrics
    several_runs = len(runs_df) and runs_df.groupby("system").size().max() > 1
    d.add(
        "over-runs",
        "figure",
        "metrics-over-runs",
        "Each metric over the study's runs (x: run start, UTC), one series per system; (n,p,f,m) "
        "= nodes, processes per node doing I/O, files per node, nodes sharing a file; shaded: "
        "the system's ReFrame reference range, red x: a value ReFrame failed.",
        metric_table,
        # a line needs two runs of a system: one run's dots say nothing over time
        fig=figures.over_runs_figure(metric_table, d.colours)
        if len(metric_table) and several_runs
        else None,
    )


def systems_section(d: SectionData) -> None:
    """Each metric per system side by side (drawn when the study has several systems)."""
    runs_df = d.runs_df
    sbs = runtables.side_by_side(d.metrics, runs_df)
    several_systems = runs_df["system"].nunique() > 1 if len(runs_df) else False
    d.add(
        "systems",
        "figure",
        "systems-side-by-side",
        "Each metric per system side by side: bar and label = the system's latest run, "
        "whisker = range over all its runs.",
        sbs,
        fig=figures.side_by_side_figure(sbs, d.colours) if len(sbs) and several_systems else None,
    )


def probes_section(d: SectionData) -> None:
    probe_report.add_section(d.add, d.data["probes"])


def adaptive_section(d: SectionData) -> None:
    adaptive_report.add_section(d.add, d.data["adaptive"])


def cross_site_section(d: SectionData) -> None:
    """The results two systems share; one system has nothing to be compared with."""
    if len(d.comparable) and d.comparable["label"].nunique() > 1:
        compare_report.add_cross_site(d.add, d.comparable, d.options.systems or {})


def regressions_section(d: SectionData) -> None:
    if len(d.judged):
        compare_report.add_regressions(d.add, d.judged)


def applications_section(d: SectionData) -> None:
    apps.add_section(d.add, d.data)


def lustre_section(d: SectionData) -> None:
    lustre.add_section(d.add, d.data, d.runs)


def workload_section(d: SectionData) -> None:
    d.add_made(d.workload_items, "workload")


def large_jobs_section(d: SectionData) -> None:
    d.add_made(d.workload_items, "large-jobs")


def iostat_section(d: SectionData) -> None:
    devices.add_section(d.add, d.data)


def fsstats_section(d: SectionData) -> None:
    filesystems.add_section(d.add, d.data)


@dataclass(frozen=True)
class Section:
    """A section of the report's page: ``key`` names it (its items', anchor's), ``heading``
    is its title; ``build`` puts its items on the page. ``kinds``: the kinds of study
    (iostudy.report.layout.kind_of) whose page leads with it, each with its place there (1:
    right after the counts); on those pages a section without data says ``brought_by``, the
    command that brings its data (None: it always has some), and is left out without one.
    ``shown_in``: the only kinds whose pages show it at all (None: every kind's, where it has
    data)."""

    key: str
    heading: str
    build: Callable[[SectionData], None]
    brought_by: str | None = None
    kinds: Mapping[str, int] = field(default_factory=dict)
    shown_in: tuple[str, ...] | None = None


SYSTEM = "{system}"  # the study's system in a command (SYSTEM when it has several)
CAMPAIGN = f"iostudy campaign run CAMPAIGN --system {SYSTEM} --ingest STORE"

#: every section of the page, in the order of the sections outside a kind's lead (the order
#: they are built in too: a section reads what others draw from SectionData, made once)
SECTIONS: tuple[Section, ...] = (
    Section("counts", "Runs, jobs and quarantined inputs", counts_section),
    Section(
        "histograms",
        "I/O models: 2D histograms (seed 003)",
        histograms_section,
        CAMPAIGN.replace("CAMPAIGN", "quick"),
        {"acceptance": 3},
    ),
    Section(
        "jobs",
        "MiB/s per compute node of each job (seed 000)",
        jobs_section,
        kinds={"acceptance": 7, "applications": 2, "characterization": 1},
    ),
    Section(
        "workload",
        "Workload: interfaces, strategies and projects (seed 000)",
        workload_section,
        f"iostudy ingest LOGROOT --system {SYSTEM} (a facility's Darshan logs)",
        {"characterization": 2},
        # a benchmark's jobs are measured by their checks, not characterized
        shown_in=("characterization", "applications"),
    ),
    Section(
        "large-jobs",
        "Large jobs by project (seed 000)",
        large_jobs_section,
        "iostudy report build --large-procs N --large-mib M (a size filter some jobs pass)",
        {"characterization": 3},
        shown_in=("characterization",),
    ),
    Section(
        "diagnoses",
        "Diagnoses: what slows the jobs (seed 000, Drishti's triggers)",
        diagnoses.section,
        kinds={"applications": 3, "characterization": 4},
        shown_in=("characterization", "applications"),
    ),
    Section(
        "before-after",
        "Before and after: two jobs compared (seed 000, Fig. 11)",
        beforeafter.section,
    ),
    Section("over-runs", "Metrics across runs", over_runs_section, kinds={"regression": 2}),
    Section(
        "systems",
        "Systems side by side",
        systems_section,
        kinds={"acceptance": 6, "cross-site": 2},
    ),
    Section(
        "cross-site",
        "Comparable results across systems and sites",
        cross_site_section,
        "iostudy export at the other site, then iostudy import BUNDLE",
        {"cross-site": 1},
    ),
    Section(
        "regressions",
        "Each result over time: verdicts against the baseline, noise, change-points",
        regressions_section,
        "iostudy schedule (the campaign run again, hourly or nightly)",
        {"regression": 1},
    ),
    Section(
        "crosscheck",
        "Table I cross-check: benchmark vs. logs",
        crosscheck_section,
        CAMPAIGN.replace("CAMPAIGN", "quick"),
        {"acceptance": 4},
    ),
    Section(
        "components",
        "Components and the ceiling they set (seed 001, Figs. 2-4)",
        components_report.section,
        CAMPAIGN.replace("CAMPAIGN", "components") + " (fio, netbw, IOR to memory)",
        {"acceptance": 2},
    ),
    Section(
        "scaling",
        "Scaling: components to system (seed 001)",
        scaling_report.section,
        f"make spack SYSTEM={SYSTEM}, then iostudy campaign run acceptance --system {SYSTEM} "
        "(IOR, mdtest and metarates)",
        {"acceptance": 1},
    ),
    Section(
        "applications",
        "Application benchmarks (seeds 001, 002)",
        applications_section,
        f"make spack SYSTEM={SYSTEM}, then iostudy campaign run applications --system {SYSTEM}",
        {"applications": 1},
    ),
    Section("lustre", "Lustre storage targets: per OST and per server (seed 002)", lustre_section),
    Section(
        "probes",
        "Interference probes (seed 004)",
        probes_section,
        f"iostudy campaign run probe --system {SYSTEM} (hourly: iostudy schedule)",
        {"interference": 1},
    ),
    Section(
        "adaptive",
        "Adaptive I/O against MPI-IO and file per process (seed 004)",
        adaptive_section,
        CAMPAIGN.replace("CAMPAIGN", "adaptive"),
        {"interference": 2},
    ),
    Section(
        "iostat",
        "Storage devices: throughput and burstiness (seed 000)",
        iostat_section,
        "iostudy iostat-mon on the storage servers, then iostudy iostat-mon import",
        {"characterization": 5},
    ),
    Section(
        "fsstats",
        "File systems: growth and file sizes (seed 000)",
        fsstats_section,
        "iostudy fsstats scan ROOT, then iostudy fsstats import",
        {"characterization": 6},
    ),
    Section(
        "perf",
        "ReFrame performance checks",
        perf_section,
        CAMPAIGN,
        {"acceptance": 5, "regression": 3, "applications": 4, "interference": 3, "cross-site": 3},
    ),
    Section("provenance", "Provenance", provenance_section),
)
