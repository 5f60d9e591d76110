# Configuration, paths and input functions shared by the rules.

import json
import sys
from pathlib import Path

from snakemake.utils import validate

from iostudy.core.runmanifest import is_dry_run, study_of


validate(config, schema="../schemas/config.schema.yaml")

RESULTS = config["results"]
STORE = config["store"]
METRICS = config["metrics"]
REPORTS = config["reports"]
LOGS = config["logs"]
REPORT_INDEX = f"{REPORTS}/{{study}}/index.html"
# A rule's marker of what it put in the store: the store names its own files (a catalog of
# parts, iostudy.store.catalog), so the workflow keeps a file of its own per run and import, in the
# store (a new store is filled again) but outside its tables.
DONE = f"{STORE}/.workflow"


wildcard_constraints:
    run=r"[^/]+",
    name=r"[A-Za-z0-9][A-Za-z0-9._-]*",
    study=r"[A-Za-z0-9][A-Za-z0-9._-]*",


def iostudy():
    """The iostudy command of the environment that runs Snakemake (so that the workflow works
    from .venv/bin/snakemake without an activated venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("iostudy")
    return str(beside) if beside.is_file() else "iostudy"


def run_manifests() -> dict:
    """{run: its manifest} of the run directories under the results folder (each has a
    manifest.json), but dry runs: nothing ran, ingest leaves them out. A manifest that cannot
    be read is {} here; ingest says what is wrong with it."""
    out = {}
    for path in sorted(Path(RESULTS).glob("*/manifest.json")):
        try:
            manifest = json.loads(path.read_text())
        except (OSError, ValueError):
            manifest = {}
        manifest = manifest if isinstance(manifest, dict) else {}
        if not is_dry_run(manifest):
            out[path.parent.name] = manifest
    return out


def get_runs():
    runs = sorted(run_manifests())
    if not runs:
        raise ValueError(
            f"no run directory (with manifest.json) under {RESULTS}: run a campaign first "
            "(`iostudy campaign run CAMPAIGN --system SYSTEM`)"
        )
    return runs


def get_studies():
    """The studies to report: config's study, else every study the runs' manifests name (a
    run belongs to the study its campaign names, as the report says)."""
    if config.get("study"):
        return [config["study"]]
    found = {study_of(m, m) for m in run_manifests().values()}
    return sorted(s for s in found if s)


def get_ingested_runs(wildcards):
    """The markers of every run ingested."""
    return expand(f"{DONE}/ingest_run/{{run}}", run=get_runs())


def get_study_runs(wildcards):
    """The markers of the runs of one study ingested (every run when config names the study:
    a log tree's or another site's runs are in the store under it)."""
    if config.get("study"):
        return get_ingested_runs(wildcards)
    runs = [r for r, m in run_manifests().items() if study_of(m, m) == wildcards.study]
    return expand(f"{DONE}/ingest_run/{{run}}", run=runs)


# The markers of what config imports: Slurm accounting and the collectors' output.
IMPORTED = {
    "sacct": f"{DONE}/import_sacct/{{name}}",
    "iostat": f"{DONE}/import_iostat/{{name}}",
    "fsstats": f"{DONE}/import_fsstats/{{name}}",
}


def get_imported(wildcards):
    """The markers of every configured import (config keys sacct, iostat, fsstats)."""
    return [path.format(name=name) for key, path in IMPORTED.items() for name in config[key]]
