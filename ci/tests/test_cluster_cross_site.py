"""Cross-site comparison as two sites do it: one campaign run on testcluster (through Slurm) by
the site "hpc-centre" and on local by the site "dev-lab", each ingested into its own store and
exported as a bundle signed by the site's key; the third store trusts both sites' keys (each
site prints its key with `iostudy trust own`, the third adds it with `iostudy trust add`) and
imports both bundles, which gives the cross-site report (checked in headless Chromium). A bundle
with one byte changed is rejected, so are a bundle of a site not yet trusted and one site's key
offered for another; importing a bundle twice changes nothing."""

import csv
import json
import subprocess
import tarfile
from pathlib import Path

from analysis.tests import chromium
from analysis.tests.filestate import snapshot
from slurmtest import REPO_ROOT, SYSTEM, VENV_BIN

# The I/O-model check on one rank (the same on both systems: comparable) and on every core
# (4 ranks on 2 nodes there, 2 here: not comparable), with one MPI flavour.
CAMPAIGN = {
    "name": "crosssite",
    "description": "test: the I/O-model check on one rank and on every core of the system",
    "study": "crosssite",
    "environs": ["openmpi"],
    "checks": [
        {
            "check": "iomodel_check",
            "parameters": {"size": "64M", "max_procs": [1, "system"], "procs_per_node": "system"},
        }
    ],
}
SITES = {"hpc-centre": SYSTEM, "dev-lab": "local"}
LABELS = {f"{site}/{system}" for site, system in SITES.items()}


def iostudy(*args, check=True):
    proc = subprocess.run(
        [VENV_BIN / "iostudy", *map(str, args)], capture_output=True, text=True, timeout=600
    )
    if check:
        assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc


def site_bundle(cluster, tmp_path, campaign, site, system):
    """The campaign run on system (through Slurm on testcluster), ingested into the site's own
    store, exported: the bundle's path and the site's public key file."""
    results = tmp_path / site / "results"
    run = [
        VENV_BIN / "iostudy",
        "campaign",
        "run",
        campaign,
        "--system",
        system,
        "--results",
        results,
    ]
    if system == SYSTEM:
        proc = cluster.run(*run, check=False, timeout=900, cwd=REPO_ROOT)
    else:
        proc = subprocess.run(run, capture_output=True, text=True, timeout=900, cwd=REPO_ROOT)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    run_dir = proc.stdout.splitlines()[-1]
    store = results / "store"
    iostudy("ingest", run_dir, "--store", store)
    bundle = tmp_path / f"{site}.tar"
    iostudy("export", "--store", store, "--out", bundle, "--site", site, "--results", results)
    key = tmp_path / f"{site}.pub"
    iostudy("trust", "own", "--store", store, "--out", key)
    return bundle, key


def test_two_sites_compared_in_a_third_store(cluster, tmp_path):
    campaign = tmp_path / "crosssite.json"
    campaign.write_text(json.dumps(CAMPAIGN))
    made = {
        site: site_bundle(cluster, tmp_path, campaign, site, system)
        for site, system in SITES.items()
    }
    bundles = {site: bundle for site, (bundle, _) in made.items()}
    third = tmp_path / "third"

    # One byte changed in a table of hpc-centre's bundle: rejected, nothing imported.
    good = bundles["hpc-centre"]
    with tarfile.open(good) as tar:
        table = next(m for m in tar.getmembers() if m.name.startswith("tables/perf/"))
    data = bytearray(good.read_bytes())
    data[table.offset_data + table.size // 2] ^= 0x20
    tampered = tmp_path / "tampered.tar"
    tampered.write_bytes(bytes(data))
    proc = iostudy("import", tampered, "--store", third, check=False)
    assert proc.returncode == 2 and "tampered.tar" in proc.stderr, proc.stderr
    assert not list(third.glob("*/*.parquet"))

    # before the key exchange, a site's bundle is refused
    proc = iostudy("import", good, "--store", third, check=False)
    assert proc.returncode == 2 and "not trusted" in proc.stderr, proc.stderr
    for site, (_, key) in made.items():
        iostudy("trust", "add", site, key, "--store", third)
    # dev-lab's key does not sign hpc-centre's bundles
    proc = iostudy("trust", "add", "hpc-centre", made["dev-lab"][1], "--store", third, check=False)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    for bundle in bundles.values():
        proc = iostudy("import", bundle, "--store", third)
        assert "signed by key SHA256:" in proc.stdout
    before = snapshot(third)
    proc = iostudy("import", good, "--store", third)
    assert "nothing changed" in proc.stdout and snapshot(third) == before

    reports = tmp_path / "reports"
    page = iostudy(
        "report", "build", "--store", third, "--study", "crosssite", "--reports", reports
    ).stdout.splitlines()[-1]
    version = reports / "crosssite" / "v1"
    with open(version / "cross-site.csv", newline="") as f:
        side = list(csv.DictReader(f))
    # the one-rank results of both sites side by side, each site's system named site/system
    assert {row["system"] for row in side} == LABELS
    assert all("1 procs" in row["metric"] for row in side), side
    assert {row["metric"] for row in side if row["system"] == "dev-lab/local"} == {
        row["metric"] for row in side if row["system"] == f"hpc-centre/{SYSTEM}"
    }
    assert all(float(row["latest"]) > 0 for row in side)
    # every core: 4 ranks there, 2 here; said so, per site
    with open(version / "not-comparable.csv", newline="") as f:
        apart = list(csv.DictReader(f))
    assert {row["system"] for row in apart} == LABELS
    assert all("num_tasks" in row["reason"] for row in apart), apart

    html = (version / "index.html").read_text()
    assert f"hpc-centre/{SYSTEM}" in html and "dev-lab/local" in html
    load = chromium.load(Path(page).resolve().as_uri())
    assert load.errors() == []
    chromium.assert_not_blank(load.screenshot)
