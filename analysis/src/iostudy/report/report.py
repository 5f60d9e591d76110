"""Versioned, self-contained HTML reports of a study: ``iostudy report build``.

A study's reports live in ``REPORTS/<study>/``; each build publishes a new version folder::

    REPORTS/<study>/index.html        every version (the only file a build rewrites)
    REPORTS/<study>/v<N>/index.html   the report: inline CSS, figures as inline SVG, no script,
                                      no external URL, so it opens offline from any copy
    REPORTS/<study>/v<N>/MANIFEST.json  inputs with sha256 (the store's Parquet files, the runs'
                                      manifests), git commit, tool versions, the runs' effective
                                      configs, and the sha256 of every file of the version
    REPORTS/<study>/v<N>/*.csv        the data behind each figure and table

A published version is never overwritten: the folder is built under a temporary name beside the
versions and renamed onto ``v<N>`` with RENAME_NOREPLACE (N = highest existing + 1; if another
build takes that name meanwhile, the next one). Asking for an existing version is an error.

The data come from the store (``iostudy.store.store.connect``). This module selects the study's
runs, versions and publishes the folder and writes the page; the sections, in one registry,
are :mod:`iostudy.report.sections`, their figures and tables :mod:`iostudy.report.figures`;
publishing a version (manifest, index) is :mod:`iostudy.report.publish`.
"""

from __future__ import annotations

import json
import math
import os
import re
import shutil
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from iostudy import __version__
from iostudy.core import provenance, safeio
from iostudy.core.anonymize import AnonymizeError, Anonymizer
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.processes import private_dir
from iostudy.core.runmanifest import study_of
from iostudy.metrics import compare, comparejobs, workload
from iostudy.report import figures, headers, headline, layout, pages, sections
from iostudy.report import publish as publish_mod
from iostudy.report.publish import (
    build_manifest,
    is_missing,
    manifest_text,
    publish,
    taken_versions,
    templates_env,
)
from iostudy.report.sectiondata import ReportOptions, SectionData
from iostudy.report.studydata import StudyData
from iostudy.report.verdict import Verdict
from iostudy.store import store as store_mod

pd = deferred("pandas")

NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# The status of a log tree's run (iostudy.store.ingest_logs.ingest_tree): its manifest_path is
# the tree's folder, it has no manifest, and its time span is its logs'.

# STUDY/.build-<pid>-<random>/: a build's pages before they are published as v<N>
BUILD_PREFIX = ".build-"


class ReportError(BadInput):
    """A report that cannot be built; the message says why."""


class VersionExistsError(ReportError):
    """The requested version is already published (versions are never overwritten)."""


# ---------------------------------------------------------------------------------------------
# Inputs


def _manifest_file(path, results: Path) -> Path | None:
    """Where a run's manifest is: the store records it relative to the folder of run dirs."""
    if path is None or (isinstance(path, float) and math.isnan(path)) or not str(path):
        return None
    path = Path(str(path))
    return path if path.is_absolute() else Path(results) / path


def _read_manifest(path: Path | None) -> dict | None:
    if path is None or not path.is_file():
        return None
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def select_study(all_runs: pd.DataFrame, study: str, results: Path, store: Path) -> list[dict]:
    """The study's runs (of :func:`iostudy.report.studydata.all_runs`) with their manifests
    (file and content)."""
    runs, known = [], set()
    for record in all_runs.to_dict("records"):
        # pandas gives a missing string as NaN: None, as JSON and every "or" expect
        run = {k: None if is_missing(v) else v for k, v in record.items()}
        # an imported run's manifest is in the store (STORE/sites/<site>/manifests/)
        imported = isinstance(run.get("site"), str)
        path = _manifest_file(run.get("manifest_path"), store if imported else results)
        manifest = _read_manifest(path)
        known.add(study_of(run, manifest))
        if study_of(run, manifest) != study:
            continue
        run["_manifest_file"] = path
        run["_manifest"] = manifest
        runs.append(run)
    if not runs:
        raise ReportError(
            f"no run of study {study!r} in the store "
            f"(studies there: {', '.join(sorted(known)) if known else 'none'})"
        )
    runs.sort(key=lambda r: (str(r.get("started")), r["run_id"]))
    return runs


def _tree_spans(runs: list[dict], data: StudyData) -> None:
    """A log tree's run has no start or end of its own: its logs' first start and last end."""
    trees = [r for r in runs if store_mod.is_tree(r) and pd.isna(r.get("started"))]
    if not trees:
        return
    spans = data.query(
        'SELECT run_id, MIN(start) AS started, MAX("end") AS finished FROM jobs '
        "WHERE run_id IN (SELECT unnest(?)) GROUP BY run_id",
        [[r["run_id"] for r in trees]],
    ).set_index("run_id")
    for run in trees:
        if run["run_id"] in spans.index:
            run["started"] = pd.to_datetime(spans.at[run["run_id"], "started"])
            run["finished"] = pd.to_datetime(spans.at[run["run_id"], "finished"])
    runs.sort(key=lambda r: (str(r.get("started")), r["run_id"]))


# ---------------------------------------------------------------------------------------------
# Tables behind the figures (pure functions of DataFrames)


# ---------------------------------------------------------------------------------------------
# Figures: matplotlib Figure objects (no pyplot state), saved as SVG text to inline


# ---------------------------------------------------------------------------------------------
# Publishing


class Rendered(NamedTuple):
    """A rendered version: its items (figures, tables, notes) and its verdict."""

    items: list[dict]
    verdict: Verdict
    kind: str  # the kind of study (iostudy.report.layout)


def _page(report: SectionData, rendered: Rendered, page, study, version, title, now) -> str:
    """The report's index.html: the verdict and the summary at the top, then the sections of
    its kind's layout (``page``: iostudy.report.layout.sections)."""
    return (
        templates_env()
        .get_template("report.html.j2")
        .render(
            title=title,
            study=study,
            version=version,
            created=now.strftime("%Y-%m-%d %H:%M:%S UTC"),
            verdict=rendered.verdict,
            kind=rendered.kind,
            headline=headline.headline(report, rendered.kind),
            summary=headline.summary(report),
            tolerance=f"{headers.TOLERANCE_PCT:g}",
            page=page,
            anonymized=report.options.anonymizer is not None,
            missing_manifests=[
                r["run_id"]
                for r in report.runs
                if r["_manifest"] is None and not store_mod.is_tree(r)
            ],
            git_commit=provenance.git_state()[0],
            iostudy_version=__version__,
            style=(publish_mod.TEMPLATES / "style.css").read_text(),
        )
    )


class PageItems:
    """The page's items as its sections add them (figures.item's: a figure, a table, or a
    note), with the frame behind each, written as its CSV once the page's layout says the
    item is on it. With an anonymizer every frame goes through it (names by column,
    iostudy.core.anonymize); a job's row links to its page, a project's to its."""

    def __init__(self, anonymizer, links):
        self.anonymizer, self.links = anonymizer, links
        self.items: list[dict] = []
        self.frames: dict[str, pd.DataFrame] = {}

    def add(self, section, kind, ident, caption, df, *shown, **options):
        """figures.item's arguments; the frame kept (anonymized) for its CSV."""
        if self.anonymizer is not None:
            df = self.anonymizer.frame(df)
        self.frames[ident] = df
        item = figures.item(section, kind, ident, caption, df, *shown, links=self.links, **options)
        self.items.append(item)


def render(
    tables,
    runs,
    study: str,
    version: int,
    title: str,
    out: Path,
    now: datetime,
    *,
    options: ReportOptions | None = None,
):
    """Write index.html and the CSVs of one report into out; returns its figures and tables.

    A section item is a figure (drawn), a table, or a note: a sentence in place of a figure or
    table that has no data. With options.anonymizer every table and CSV goes through it (names
    by column, iostudy.core.anonymize), and the sections that draw names take it too."""
    options = options or ReportOptions()
    runs_df = pd.DataFrame([{k: v for k, v in r.items() if not k.startswith("_")} for r in runs])
    linked = pages.Pages(tables, options.anonymizer)
    made = PageItems(options.anonymizer, linked.links)
    report = SectionData(made.add, tables, runs, runs_df, options)
    for section in sections.SECTIONS:
        section.build(report)
    kind = headline.study_kind(report)
    systems = sorted(runs_df["system"].dropna().astype(str).unique()) if len(runs_df) else []
    page = layout.sections(kind, made.items, systems)
    shown = [item for sec in page for item in sec["entries"]]
    for item in shown:  # a section without data is not on the page: nor is its empty CSV
        made.frames[item["id"]].to_csv(out / item["csv"], index=False, lineterminator="\n")
    rendered = Rendered(shown, headline.study_verdict(report), kind)
    (out / "index.html").write_text(_page(report, rendered, page, study, version, title, now))
    linked.write(
        out,
        shown,
        report.found.get("diagnoses"),
        {
            "report_title": title,
            "study": study,
            "version": version,
            "created": now.strftime("%Y-%m-%d %H:%M:%S UTC"),
            "style": (publish_mod.TEMPLATES / "style.css").read_text(),
        },
    )
    return rendered


def build(
    store: Path,
    study: str,
    reports: Path,
    title: str | None = None,
    as_version: int | None = None,
    results: Path | None = None,
    argv: list[str] | None = None,
    large_procs: int = workload.LARGE_PROCS,
    large_mib: float = workload.LARGE_MIB,
    anonymize: bool = False,
    before_after: tuple = (),
) -> Path:
    """Publish a new version of the study's report; returns the path of its index.html.

    results: the folder of the run directories (the store records manifest paths relative to
    it); default the store's parent folder (results/store -> results/). large_procs, large_mib:
    seed 000's large jobs (at least that many processes and MiB moved). anonymize: names
    (users, projects, paths, command lines) replaced by pseudonyms keyed by the store's
    anonymize.key (iostudy.core.anonymize). before_after: pairs (A, B) of the study's jobs to
    compare (iostudy.metrics.comparejobs names)."""
    store, study_dir = Path(store), Path(reports) / study
    _check_request(store, study, study_dir, as_version, large_procs, large_mib)
    data = StudyData(store)
    try:
        results = results or store.parent
        runs = select_study(data.all_runs, study, results, store)
        data.restrict([r["run_id"] for r in runs])
        _tree_spans(runs, data)
        _check_pairs(data, before_after)
        options = _options(
            store,
            data.all_runs,
            large_procs,
            large_mib,
            anonymize,
            tuple(map(tuple, before_after)),
        )
        version = Version(study, study_dir, title or f"iostudy report: {study}", as_version)
        with safeio.space_in(study_dir):
            return _publish_new_version(data, runs, store, version, argv, options)
    finally:
        data.close()


def _check_request(store, study, study_dir, as_version, large_procs, large_mib) -> None:
    if not NAME_RE.match(study):
        raise ReportError(f"study {study!r}: use letters, digits, '.', '_' and '-' only")
    if as_version is not None and as_version in taken_versions(study_dir):
        raise VersionExistsError(
            f"{study_dir / f'v{as_version}'} exists: a published version is never overwritten "
            f"(omit --as-version to publish v{max(taken_versions(study_dir)) + 1})"
        )
    if large_procs < 1 or not large_mib >= 0:
        raise ReportError(
            f"large jobs: --large-procs {large_procs} must be at least 1 and --large-mib "
            f"{large_mib:g} at least 0"
        )
    if not store.is_dir():
        raise ReportError(f"store {store}: no such directory (run `iostudy ingest` first)")


def _check_pairs(data: StudyData, pairs) -> None:
    """Each name of a before/after pair is one job of the study."""
    for name in (n for pair in pairs for n in pair):
        try:
            comparejobs.resolve(data.job_table(), name)
        except comparejobs.JobNotFound as exc:
            raise ReportError(f"--before-after: {exc}") from None


def _options(store, all_runs, large_procs, large_mib, anonymize, pairs):
    try:
        anonymizer = Anonymizer.for_store(store) if anonymize else None
    except AnonymizeError as exc:
        raise ReportError(str(exc)) from None
    systems = compare.system_descriptions(store, all_runs)
    return ReportOptions(large_procs, large_mib, anonymizer, systems, pairs)


@dataclass(frozen=True)
class Version:
    """The version to publish: its study, the study's folder, title and the number asked for
    (None: the next free one)."""

    study: str
    study_dir: Path
    title: str
    asked: int | None


def _publish_new_version(data, runs, store, version: Version, argv, options) -> Path:
    """Render into a temporary folder beside the versions and rename it onto the next free
    v<N> (rendered again under a higher number when another build took it meanwhile)."""
    study_dir, study, title = version.study_dir, version.study, version.title
    all_ids = set(data.all_runs["run_id"])
    study_dir.mkdir(parents=True, exist_ok=True)
    tmp = private_dir(BUILD_PREFIX, study_dir)  # a killed build's folder goes at the next
    try:
        now = datetime.now(timezone.utc).replace(microsecond=0)
        n = version.asked or (max(taken_versions(study_dir), default=0) + 1)
        while True:
            rendered = render(data, runs, study, n, title, tmp, now, options=options)
            manifest = build_manifest(
                runs, all_ids, store, study, n, title, now, rendered, tmp, argv, options
            )
            text = manifest_text(manifest)
            (tmp / "MANIFEST.json").write_text(text)
            # Published reports are read by others (a web server, colleagues): 755 and 644.
            os.chmod(tmp, 0o755)
            for p in tmp.iterdir():
                os.chmod(p, 0o644)
            try:
                publish(tmp, study_dir, study, n, json.loads(text))
                return study_dir / f"v{n}" / "index.html"
            except FileExistsError:
                if version.asked is not None:
                    raise VersionExistsError(
                        f"{study_dir / f'v{n}'} exists: a published version is never overwritten"
                    ) from None
                # Another build published v<n> meanwhile (or a file took its name): take the
                # next number, always a higher one. It is in the page too, so render again.
                n = max(taken_versions(study_dir), default=n) + 1
                for p in tmp.iterdir():
                    p.unlink()
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
