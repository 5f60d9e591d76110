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
diagnoses) are on the pages of the kinds that study it.

The sections, their headings, the kinds that lead with them and the commands that bring
their data are one registry, :data:`iostudy.report.sections.SECTIONS`.
"""

from __future__ import annotations

from iostudy.core import checknames
from iostudy.report.sections import SECTIONS, SYSTEM
from iostudy.store.store import is_tree

ALWAYS = ("counts", "provenance")  # first and last on every page


def kind_of(runs: list[dict], checks: set[str]) -> str:
    """The study's kind from its runs (site, status, campaign, system) and the checks that
    ran or were asked for."""
    if any(isinstance(r.get("site"), str) and r.get("site") for r in runs):
        return "cross-site"
    if runs and all(is_tree(r) for r in runs):
        return "characterization"
    if checks & {checknames.PROBE.name, checknames.ADAPTIVE.name}:
        return "interference"
    if checks & set(checknames.APP_CHECKS):
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
    lead = sorted((s for s in SECTIONS if kind in s.kinds), key=lambda s: s.kinds[kind])
    needed = {s.key: s.brought_by for s in lead}
    first, last = ALWAYS
    rest = [
        s.key
        for s in SECTIONS
        if s.key not in needed and s.key not in ALWAYS and kind in (s.shown_in or (kind,))
    ]
    headings = {s.key: s.heading for s in SECTIONS}
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
                    "heading": headings[key],
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
