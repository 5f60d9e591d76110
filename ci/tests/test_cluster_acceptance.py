"""A subset of the acceptance campaign on the test cluster's GlusterFS volume, small enough for
CI: metarates (iostudy's own, no Spack view needed) on scratch and the I/O-model benchmark at
full scale (both nodes), as a facility runs it (`iostudy campaign run --ingest STORE`). The
campaigns' scratch is the volume (the system marks it), so the jobs' files are on it: the logs
name paths under the volume's mount, and the bricks' loop devices wrote the data. IOR and
mdtest, the rest of acceptance, need the Spack view (make spack)."""

import json

from slurmtest import bytes_written, configs_copy, run_campaign, target_devices

from iostudy.store import store

MIB = 1 << 20


def test_acceptance_subset_runs_on_the_volume(cluster, volume, tmp_path, monkeypatch):
    configs = configs_copy(tmp_path)
    campaign = json.loads((configs / "campaigns" / "acceptance.json").read_text())
    picked = {e["check"]: e for e in campaign["checks"]}
    metarates, iomodel = picked["metarates_check"], picked["iomodel_check"]
    metarates["parameters"] |= {"files_per_proc": 100, "target": "scratch"}
    iomodel["parameters"] |= {"size": "16M"}
    campaign |= {"name": "accsub", "study": "tests", "checks": [metarates, iomodel]}
    campaign["environs"] = ["openmpi"]
    (configs / "campaigns" / "accsub.json").write_text(json.dumps(campaign))
    devices = target_devices(cluster, monkeypatch)
    before = {name: bytes_written(device) for name, (_, device) in devices.items()}
    run_campaign(cluster, "accsub", configs, tmp_path)
    con = store.connect(tmp_path / "store")
    jobs = con.execute('SELECT "check", nodes FROM jobs').df()
    assert set(jobs["check"]) == {"metarates_check", "iomodel_check"}
    assert jobs.loc[jobs["check"] == "iomodel_check", "nodes"].max() == 2
    files = con.execute("SELECT path, bytes_written FROM files WHERE module = 'posix'").df()
    written = files[files["bytes_written"] > 0]
    on_volume = written["path"].str.startswith(volume["mount"] + "/")
    assert on_volume.all(), written.loc[~on_volume, "path"].head().tolist()
    # the I/O model's data reached the bricks' devices (each brick holds what hashed to it)
    wrote = sum(bytes_written(d) - before[name] for name, (_, d) in devices.items())
    assert wrote >= written["bytes_written"].sum() * 0.9, (wrote, written["bytes_written"].sum())
