"""The report's before/after section (seed 000, Fig. 11): each pair of jobs asked for with
``iostudy report build --before-after A B``, compared by iostudy.metrics.comparejobs."""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.logs import sizebins
from iostudy.metrics import comparejobs
from iostudy.report import jobfigures

pd = deferred("pandas")

SECTION = "before-after"
#: the summary's figures drawn side by side (the rest are in its table)
DRAWN = ("MiB/s/CN", "I/O time, slowest rank", "metadata share of I/O time", "data moved")


def wide_levels(levels: pd.DataFrame) -> pd.DataFrame:
    """comparejobs.levels as a page reads it: a row per module and figure is long; a row per
    figure, with A's and B's value per module, is what Fig. 11's text compares."""
    t = levels.pivot_table(index="figure", columns="module", values=["a", "b"], sort=False)
    t.columns = [f"{module} {side.upper()}" for side, module in t.columns]
    order = [f"{m} {s}" for m in dict.fromkeys(levels["module"]) for s in ("A", "B")]
    return t[order].reset_index()


def add_section(add, con, pairs, anonymizer=None, jobs: pd.DataFrame | None = None) -> None:
    """One summary figure and table, the operations per level and the access sizes per pair
    (``pairs``: (A, B) names, checked by the build; ``jobs``: the study's job table)."""
    for n, (name_a, name_b) in enumerate(pairs, 1):
        pair = comparejobs.compare(con, name_a, name_b, jobs)
        a, b = (
            anonymizer.frame(pair[k].to_frame().T).iloc[0] if anonymizer else pair[k]
            for k in ("a", "b")
        )
        what = f"A = job {a['jobid']} ({a['log_path']}), B = job {b['jobid']} ({b['log_path']})"
        summary = pair["summary"]
        drawn = summary[summary["metric"].isin(DRAWN)]
        add(
            SECTION,
            "figure",
            f"before-after-{n}",
            f"Before (A) and after (B): {what}. B over A in the table: above 1, B is higher "
            "(faster for MiB/s/CN, slower for time).",
            summary,
            fig=jobfigures.pair_figure(drawn, ("A", "B")),
            table=True,
        )
        add(
            SECTION,
            "table",
            f"before-after-{n}-levels",
            "Operations, bytes and I/O time (s, summed over the processes) per level: POSIX is "
            "what the file system served, MPI-IO and HDF5 what the application asked for.",
            wide_levels(pair["levels"]),
            table=True,
            whole=True,
        )
        add(
            SECTION,
            "table",
            f"before-after-{n}-sizes",
            f"Accesses per size bin at each level (the bins either job used; {sizebins.EDGES}).",
            pair["sizes"],
            table=True,
        )


def section(d) -> None:
    """The section of a report being made (iostudy.report.sectiondata.SectionData)."""
    if d.options.pairs:  # the job table only when a pair asks for it
        add_section(d.add, d.data.con, d.options.pairs, d.options.anonymizer, d.data.job_table())
