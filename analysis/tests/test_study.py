"""A run's study, one definition (iostudy.core.runmanifest.study_of): the store's runs row
(ingest), the report's choice of runs and the workflow's studies say the same of one
manifest."""

import json

import pytest

from iostudy.cli.cli import main
from iostudy.core.runmanifest import study_of
from iostudy.report import report
from iostudy.store import store
from tests import rundirs

SYSTEM = {"name": "local", "nodes": {"count": 1, "cores_per_node": 2}}
# (the manifest's own keys, the study a reader of it finds by hand)
MANIFESTS = {
    # a campaign that names no study: its own name
    "r-nightly": ({"campaign": "nightly", "effective_config": {"system": SYSTEM}}, "nightly"),
    # the campaign's configuration names one
    "r-quick": ({}, "quick"),
    # the manifest's own study key over the campaign's
    "r-paper": ({"study": "paper"}, "paper"),
}


@pytest.mark.parametrize("run_id", sorted(MANIFESTS))
def test_ingest_the_report_and_the_workflow_agree(tmp_path, run_id):
    extra, expected = MANIFESTS[run_id]
    results = tmp_path / "results"
    run = results / run_id
    (run / "darshan").mkdir(parents=True)
    manifest = rundirs.manifest(run_id, **extra)
    (run / "manifest.json").write_text(json.dumps(manifest))
    assert main(["ingest", str(run), "--store", str(tmp_path / "store")]) == 0

    runs = store.connect(tmp_path / "store").execute("SELECT * FROM runs").df()
    assert runs["study"].tolist() == [expected]  # was null for a campaign naming none
    chosen = report.select_study(runs, expected, results, tmp_path / "store")
    assert [r["run_id"] for r in chosen] == [run_id]
    assert study_of(manifest, manifest) == expected  # the workflow's reading of the manifest
