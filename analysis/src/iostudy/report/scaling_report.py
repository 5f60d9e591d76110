"""The report's scaling section (seed 001; iostudy.metrics.scaling): per system, its latest run's
IOR and metadata curves with their ceilings (the declared peaks, the best memory-target
bandwidth, and the ceiling modelled from the measured components: iostudy.metrics.ceiling),
the Table I check of every IOR run, and pass/fail per scaling point."""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.metrics import metrics, scaling
from iostudy.report import components_report
from iostudy.report.figures import safe
from iostudy.report.headers import TOLERANCE_PCT
from iostudy.report.studydata import StudyData

pd = deferred("pandas")


def add_scaling(
    add, data: StudyData, runs: list[dict], runs_df: pd.DataFrame, limits: dict | None = None
) -> pd.DataFrame:
    """The scaling campaign's section (seed 001; iostudy.metrics.scaling): per system, its latest
    run's IOR and metadata curves with the ceilings; the Table I check of every IOR run; pass/fail
    per scaling point. Returns the IOR cross-check table."""
    _scaling_figures(add, data, runs, runs_df, limits or {})
    test_files = data.files_matching(metrics.IOR_TEST_FILE)
    cross = scaling.ior_crosscheck_table(data["ior"], test_files, data["jobs"])
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
        scaling.pass_fail_table(data["perf"]),
        table=True,
    )
    return cross


def _scaling_figures(add, data: StudyData, runs, runs_df: pd.DataFrame, limits: dict) -> None:
    """Per system, its latest run's IOR and metadata curves with the peaks it declares and,
    for IOR, the ceiling its measured components set (``limits``: per system, its
    iostudy.metrics.ceiling.limits)."""
    peaks = components_report.declared_peaks(runs)
    figures = (
        (
            "ior-scaling",
            scaling.with_ceiling(scaling.ior_curves(data["ior"]), limits),
            scaling.ior_scaling_figure,
            "IOR bandwidth against processes (mean of the iterations and repetitions, bars min "
            "to max) on the scratch target, shared file (N-1) and file per process (N-N), "
            "aligned (a multiple of 1 MiB) and unaligned transfers; dotted: the best bandwidth "
            "to the memory target (the client-side ceiling); dashed black: the ceiling the "
            "measured components set (the components section; none without component checks); "
            "grey: the peaks the system declares (none drawn when it declares none).",
        ),
        (
            "metadata-scaling",
            scaling.metadata_curves(data["perf"]),
            scaling.metadata_figure,
            "Metadata rates against processes, mdtest (one directory per process) and iostudy's "
            "metarates (create+close, stat, utime, remove between barriers), on scratch and in "
            "memory (mean over repetitions, bars min to max; log scale); grey: the declared "
            "metadata peak.",
        ),
    )
    for ident, curves, draw, what in figures:
        for system, run_id in scaling.latest_with(curves, runs_df).itertuples(index=False):
            drawn = scaling.with_peaks(curves[curves["run_id"] == run_id], peaks.get(run_id))
            add(
                "scaling",
                "figure",
                f"{ident}-{safe(system)}",
                what,
                drawn,
                fig=draw(drawn, peaks.get(run_id), f"{system}: {run_id}"),
                label=f"{system}, latest run {run_id}",
            )


def section(d) -> None:
    """The section of a report being made (iostudy.report.sectiondata.SectionData), with the
    components' limits (d.limits) drawn; its IOR cross-check goes into d.found["ior_cross"]
    for the page's summary."""
    limits = {system: table for system, (_, _, table) in d.limits.items()}
    d.found["ior_cross"] = add_scaling(d.add, d.data, d.runs, d.runs_df, limits)
