"""Seed 001's component analysis on the test cluster, run as a facility runs it (`iostudy
campaign run components --ingest STORE`, ReFrame submitting to Slurm): fio on the cluster's
scratch storage from one node, netbw with one rank on each node (its pairs cross the bridge),
the rows stored and the report's components section drawn."""

import json
import shutil

from slurmtest import REPO_ROOT, VENV_BIN

from iostudy.report import report
from iostudy.store import store


def test_components_campaign_runs_on_testcluster(cluster, tmp_path):
    configs = tmp_path / "configs"
    shutil.copytree(REPO_ROOT / "configs", configs, ignore=shutil.ignore_patterns("__pycache__"))
    campaign = json.loads((configs / "campaigns" / "components.json").read_text())
    fio, netbw = campaign["checks"][:2]  # without IOR: no Spack view here
    fio["parameters"] |= {"size": "16M", "jobs": [1, 2]}
    netbw["parameters"] |= {"max_size": "1M", "seconds": 0.01}
    campaign |= {"name": "parts", "study": "tests", "checks": [fio, netbw]}
    (configs / "campaigns" / "parts.json").write_text(json.dumps(campaign))
    proc = cluster.run(
        VENV_BIN / "iostudy", "campaign", "run", "parts", "--system", "testcluster",
        "--results", tmp_path / "results", "--ingest", tmp_path / "store",
        check=False, timeout=900, cwd=REPO_ROOT, env={"IOSTUDY_CONFIGS": str(configs)},
    )  # fmt: skip
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    rows = store.connect(tmp_path / "store").execute("SELECT * FROM components").df()
    network = rows[rows["component"] == "network"]
    # 1 KiB to 1 MiB, each with 3 bytes more and less, between the two nodes
    assert len(network) == 11 * 3 and set(network["nodes"]) == {2}
    assert (network["mib_s"] > 0).all()
    storage = rows[rows["component"] == "storage"]
    assert set(storage["operation"]) == {"write", "read", "syncwrite"}
    assert (storage["aggregate_mib_s"] > 0).all()
    index = report.build(tmp_path / "store", "tests", tmp_path / "reports",
                         results=tmp_path / "results")  # fmt: skip
    page = index.read_text()
    for ident in ("network-testcluster", "storage-testcluster", "component-limits-testcluster"):
        assert f'id="{ident}"' in page, ident
    limits = (index.parent / "component-limits-testcluster.csv").read_text()
    assert "node link" in limits and "netbw_check between two nodes" in limits
