"""A subset of the acceptance campaign on the test cluster's GlusterFS volume, small enough for
CI: metarates (iostudy's own, no Spack view needed) on scratch and the I/O-model benchmark at
full scale (both nodes), as a facility runs it (`iostudy campaign run --ingest STORE`). The
campaigns' scratch is the volume (the system marks it), so the jobs' files are on it: the logs
name paths under the volume's mount, and the bricks' loop devices wrote the data. IOR and
mdtest, the rest of acceptance, need the Spack view (make spack)."""

import json
import shutil

from slurmtest import REPO_ROOT, VENV_BIN, bytes_written, target_devices

from iostudy.store import store

MIB = 1 << 20


def test_acceptance_subset_runs_on_the_volume(cluster, volume, tmp_path, monkeypatch):
    configs = tmp_path / "configs"
    shutil.copytree(REPO_ROOT / "configs", configs, ignore=shutil.ignore_patterns("__pycache__"))
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
    proc = cluster.run(
        VENV_BIN / "iostudy",
        "campaign",
        "run",
        "accsub",
        "--system",
        "testcluster",
        "--results",
        tmp_path / "results",
        "--ingest",
        tmp_path / "store",
        check=False,
        timeout=900,
        cwd=REPO_ROOT,
        env={"IOSTUDY_CONFIGS": str(configs)},
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
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
