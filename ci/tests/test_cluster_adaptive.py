"""Seed 004's adaptive I/O on the test cluster, run as a facility runs it (`iostudy campaign run
adaptive --ingest STORE`, ReFrame submitting to Slurm): every core of both nodes a writer, one
group on each brick of the cluster's GlusterFS volume (the campaigns' scratch; each brick on an
ext4 file system on a loop device per node), its files named onto that brick, each mode with and
without a competing writer. The kernel's count of the sectors each loop device wrote is the
independent check that the data went through the volume to the brick the runs name."""

import json

from slurmtest import bytes_written, configs_copy, run_campaign, target_devices

from iostudy.report import report
from iostudy.store import store

SIZE = 2 << 20


def test_adaptive_campaign_runs_on_testcluster(cluster, volume, tmp_path, monkeypatch):
    configs = configs_copy(tmp_path)
    campaign = json.loads((configs / "campaigns" / "adaptive.json").read_text())
    campaign["checks"][0]["parameters"]["size"] = "2M"
    (configs / "campaigns" / "adaptive.json").write_text(json.dumps(campaign))
    devices = target_devices(cluster, monkeypatch)
    before = {name: bytes_written(device) for name, (_, device) in devices.items()}
    run_campaign(cluster, "adaptive", configs, tmp_path)
    rows = store.connect(tmp_path / "store").execute("SELECT * FROM adaptive").df()
    assert len(rows) == 6 and set(rows["mode"]) == {"adaptive", "mpiio", "posix-fpp"}
    cores = cluster.system["nodes"]["count"] * cluster.system["nodes"]["cores_per_node"]
    assert set(rows["writers"]) == {cores} and set(rows["nodes"]) == {2}
    assert set(rows["targets"]) == {len(devices)}
    # every run names its targets, the volume's bricks in the system's order
    assert {tuple(json.loads(t)) for t in rows["target_names"]} == {("n1-disk", "n2-disk")}
    placed = [json.loads(w) for w in rows["writers_per_target"]]
    assert all(sum(p) == cores for p in placed)
    # each target's device wrote at least the data the runs put there
    for k, (name, (_, device)) in enumerate(devices.items()):
        wanted = sum(p[k] for p in placed) * SIZE
        assert bytes_written(device) - before[name] >= wanted, (name, wanted)
    index = report.build(
        tmp_path / "store", "probe", tmp_path / "reports", results=tmp_path / "results"
    )
    assert 'id="section-adaptive"' in index.read_text()
