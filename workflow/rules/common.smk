# Configuration, paths and input functions shared by the rules.

import sys
from pathlib import Path

from snakemake.utils import validate


validate(config, schema="../schemas/config.schema.yaml")

RESULTS = config["results"]
STORE = config["store"]
METRICS = config["metrics"]
REPORTS = config["reports"]
STUDY = config["study"]
LOGS = config["logs"]
REPORT_INDEX = f"{REPORTS}/{STUDY}/index.html"
# A rule's marker of what it put in the store: the store names its own files (a catalog of
# parts, iostudy.store.catalog), so the workflow keeps a file of its own per run and import, in the
# store (a new store is filled again) but outside its tables.
DONE = f"{STORE}/.workflow"


wildcard_constraints:
    run=r"[^/]+",
    name=r"[A-Za-z0-9][A-Za-z0-9._-]*",


def iostudy():
    """The iostudy command of the environment that runs Snakemake (so that the workflow works
    from .venv/bin/snakemake without an activated venv), else the one on PATH."""
    beside = Path(sys.executable).with_name("iostudy")
    return str(beside) if beside.is_file() else "iostudy"


def get_runs():
    """Run directories under the results folder: each has a manifest.json."""
    runs = sorted(p.parent.name for p in Path(RESULTS).glob("*/manifest.json"))
    if not runs:
        raise ValueError(
            f"no run directory (with manifest.json) under {RESULTS}: run a campaign first "
            "(`iostudy campaign run CAMPAIGN --system SYSTEM`)"
        )
    return runs


def get_ingested_runs(wildcards):
    """The markers of every run ingested."""
    return expand(f"{DONE}/ingest_run/{{run}}", run=get_runs())


# The markers of what config imports: Slurm accounting and the collectors' output.
IMPORTED = {
    "sacct": f"{DONE}/import_sacct/{{name}}",
    "iostat": f"{DONE}/import_iostat/{{name}}",
    "fsstats": f"{DONE}/import_fsstats/{{name}}",
}


def get_imported(wildcards):
    """The markers of every configured import (config keys sacct, iostat, fsstats)."""
    return [path.format(name=name) for key, path in IMPORTED.items() for name in config[key]]
