"""Which sections a report shows and in which order: one layout per kind of study.

A study is of one kind, told from its runs (:func:`kind_of`):
- cross-site: runs of another site imported (``iostudy import``) beside this site's;
- characterization: log trees only (a facility's Darshan logs, ``iostudy ingest LOGROOT``);
- interference: the interference probe or the adaptive-I/O benchmark (seed 004) ran;
- applications: the application checks (seeds 001, 002) ran;
- regression: three runs or more of one campaign on one system (a scheduled series);
- acceptance: the rest (the scaling campaign, the I/O models; ``quick`` is a small one).

A kind's sections come first, in its order, with what they say (a note where a figure could
not be drawn); one that has no data says, in one line, which command brings it, or is left
out when no command would (one system has nothing to be set beside). Every other section
appears only where it has data (a figure drawn, a table with rows): no section of notes
alone, no "no data" page after page. The sections about the jobs' own I/O (workload, large jobs,
diagnoses) are on the pages of the kinds that study it (:data:`ONLY_IN`).
"""

from __future__ import annotations

from iostudy.benchmarks import registry
from iostudy.store.store import is_tree

#: every section of the page: key -> heading, in the order of the sections outside a layout
HEADINGS = {
    "counts": "Runs, jobs and quarantined inputs",
    "histograms": "I/O models: 2D histograms (seed 003)",
    "jobs": "MiB/s per compute node of each job (seed 000)",
    "workload": "Workload: interfaces, strategies and projects (seed 000)",
    "large-jobs": "Large jobs by project (seed 000)",
    "diagnoses": "Diagnoses: what slows the jobs (seed 000, Drishti's triggers)",
    "before-after": "Before and after: two jobs compared (seed 000, Fig. 11)",
    "over-runs": "Metrics across runs",
    "systems": "Systems side by side",
    "cross-site": "Comparable results across systems and sites",
    "regressions": "Each result over time: bands and regressions",
    "crosscheck": "Table I cross-check: benchmark vs. logs",
    "components": "Components and the ceiling they set (seed 001, Figs. 2-4)",
    "scaling": "Scaling: components to system (seed 001)",
    "applications": "Application benchmarks (seeds 001, 002)",
    "lustre": "Lustre storage targets: per OST and per server (seed 002)",
    "probes": "Interference probes (seed 004)",
    "adaptive": "Adaptive I/O against MPI-IO and file per process (seed 004)",
    "iostat": "Storage devices: throughput and burstiness (seed 000)",
    "fsstats": "File systems: growth and file sizes (seed 000)",
    "perf": "ReFrame performance checks",
    "provenance": "Provenance",
}
SYSTEM = "{system}"  # the study's system in a command (SYSTEM when it has several)
CAMPAIGN = f"iostudy campaign run CAMPAIGN --system {SYSTEM} --ingest STORE"
#: kind -> its sections in order, each with the command that brings its data (None: always
#: has some)
KINDS: dict[str, dict[str, str | None]] = {
    "acceptance": {
        "scaling": f"make spack SYSTEM={SYSTEM}, then iostudy campaign run acceptance "
        f"--system {SYSTEM} (IOR, mdtest and metarates)",
        "components": CAMPAIGN.replace("CAMPAIGN", "components") + " (fio, netbw, IOR to memory)",
        "histograms": CAMPAIGN.replace("CAMPAIGN", "quick"),
        "crosscheck": CAMPAIGN.replace("CAMPAIGN", "quick"),
        "perf": CAMPAIGN,
        "systems": None,
        "jobs": None,
    },
    "regression": {
        "regressions": "iostudy schedule (the campaign run again, hourly or nightly)",
        "over-runs": None,
        "perf": CAMPAIGN,
    },
    "applications": {
        "applications": f"make spack SYSTEM={SYSTEM}, then iostudy campaign run applications "
        f"--system {SYSTEM}",
        "jobs": None,
        "diagnoses": None,
        "perf": CAMPAIGN,
    },
    "interference": {
        "probes": f"iostudy campaign run probe --system {SYSTEM} (hourly: iostudy schedule)",
        "adaptive": CAMPAIGN.replace("CAMPAIGN", "adaptive"),
        "perf": CAMPAIGN,
    },
    "characterization": {
        "jobs": None,
        "workload": f"iostudy ingest LOGROOT --system {SYSTEM} (a facility's Darshan logs)",
        "large-jobs": "iostudy report build --large-procs N --large-mib M (a size filter some "
        "jobs pass)",
        "diagnoses": None,
        "iostat": "iostudy iostat-mon on the storage servers, then iostudy iostat-mon import",
        "fsstats": "iostudy fsstats scan ROOT, then iostudy fsstats import",
    },
    "cross-site": {
        "cross-site": "iostudy export at the other site, then iostudy import BUNDLE",
        "systems": None,
        "perf": CAMPAIGN,
    },
}
ALWAYS = ("counts", "provenance")  # first and last on every page
#: sections about the jobs' own I/O, on the pages of the kinds that study it: a benchmark's
#: jobs are measured by their checks, not characterized (their CSVs are not written elsewhere)
ONLY_IN = {
    "workload": ("characterization", "applications"),
    "large-jobs": ("characterization",),
    "diagnoses": ("characterization", "applications"),
}


def kind_of(runs: list[dict], checks: set[str]) -> str:
    """The study's kind from its runs (site, status, campaign, system) and the checks that
    ran or were asked for."""
    if any(isinstance(r.get("site"), str) and r.get("site") for r in runs):
        return "cross-site"
    if runs and all(is_tree(r) for r in runs):
        return "characterization"
    if checks & {"probe_check", "adaptive_check"}:
        return "interference"
    if checks & set(registry.APP_CHECKS):
        return "applications"
    series: dict[tuple, int] = {}
    for r in runs:
        key = (r.get("campaign"), r.get("system"))
        series[key] = series.get(key, 0) + 1
    return "regression" if max(series.values(), default=0) >= 3 else "acceptance"


def has_data(item: dict) -> bool:
    """A figure drawn or a table with rows (a note alone is no data)."""
    return bool(item.get("svg") or item.get("table"))


def sections(kind: str, items: list[dict], systems: list[str]) -> list[dict]:
    """The page's sections in order: {key, heading, items, missing (the command's line, when
    the kind needs the section and it has no data)}."""
    by_key: dict[str, list] = {}
    for item in items:
        by_key.setdefault(item["section"], []).append(item)
    needed = KINDS[kind]
    first, last = ALWAYS
    rest = [
        k
        for k in HEADINGS
        if k not in needed and k not in ALWAYS and kind in ONLY_IN.get(k, (kind,))
    ]
    out = []
    for key in [first, *needed, *rest, last]:
        mine = by_key.get(key, [])
        data = any(has_data(i) for i in mine)
        command = needed.get(key) if not data else None
        if command:  # the command's line and the notes saying why; no empty table or figure
            command = command.replace(SYSTEM, systems[0] if len(systems) == 1 else "SYSTEM")
            mine = [i for i in mine if i.get("kind") == "note"]
        if key in ALWAYS or data or (key in needed and command):
            out.append(
                {
                    "key": key,
                    "heading": HEADINGS[key],
                    "entries": mine,
                    "blocks": blocks(mine),
                    "missing": command,
                }
            )
    return out


def blocks(entries: list[dict]) -> list[dict]:
    """A section's entries as the page lays them out: {item} alone, or {gallery, about} for
    consecutive labelled figures of one caption (a figure per system: side by side, the
    caption once)."""
    out: list[dict] = []
    for item in entries:
        last = out[-1] if out else {}
        if item.get("label") and item.get("svg") and last.get("about") == item["about"]:
            last["gallery"].append(item)
        elif item.get("label") and item.get("svg"):
            out.append({"gallery": [item], "about": item["about"]})
        else:
            out.append({"item": item})
    return out
