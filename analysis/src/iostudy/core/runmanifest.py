"""What a run's manifest (results/<run-id>/manifest.json) says of the run, in one place for
ingest, the report and the workflow, which must agree; light to import (the workflow reads it
while Snakemake parses the DAG)."""


def is_dry_run(manifest: dict) -> bool:
    """A campaign's dry run (`campaign run --dry-run`): its manifest says so."""
    return manifest.get("dry_run") is True or manifest.get("status") == "dry-run"


def manifest_study(manifest: dict) -> str | None:
    """The study a manifest names: its own key, else its campaign's."""
    effective = manifest.get("effective_config")
    campaign = effective.get("campaign") if isinstance(effective, dict) else None
    study = manifest.get("study") or (campaign.get("study") if isinstance(campaign, dict) else None)
    return study if isinstance(study, str) else None


def study_of(run: dict, manifest: dict | None) -> str:
    """A run (a row of the store's runs table, or a manifest) belongs to the study it names,
    else to the one its manifest names, else to its campaign's name."""
    if isinstance(run.get("study"), str) and run["study"]:
        return run["study"]
    return manifest_study(manifest or {}) or run.get("campaign") or ""
