"""Seed 002's HMMER configurations and seed 004's interference probe on the test cluster, run
as a facility runs them (`iostudy campaign run ... --ingest STORE`, ReFrame submitting to Slurm
under the runtime), and the hourly probe installed in the user's scrontab."""

import json
import os
import re

import pandas as pd
from analysis.tests import chromium
from slurmtest import SYSTEM, VENV_BIN, configs_copy, poll, run_campaign

from iostudy.report import report
from iostudy.store import store

ENTRY_NAME = f"iostudy-probe-{SYSTEM}"


def queued(cluster):
    return cluster.run("squeue", "-h", f"--name={ENTRY_NAME}", "-o", "%i").stdout.split()


def test_schedule_probe_installs_one_scrontab_entry(cluster, own_scrontab, tmp_path):
    iostudy = [
        VENV_BIN / "iostudy",
        "schedule",
        "probe",
        "--system",
        SYSTEM,
        "--store",
        tmp_path / "store",
        "--results",
        tmp_path / "results",
    ]
    shown = cluster.run(*iostudy, "--dry-run").stdout.splitlines()
    assert shown[:2] == [
        f"# iostudy schedule probe --system {SYSTEM}",
        f"#SCRON --job-name={ENTRY_NAME}",
    ]
    assert re.match(rf"0 \* \* \* \* mkdir -p .* campaign run probe --system {SYSTEM}", shown[-1])
    for _ in range(2):  # installing twice leaves one entry
        cluster.run(*iostudy)
        listed = cluster.run("scrontab", "-l").stdout.splitlines()
        assert [line for line in listed if "campaign run probe" in line] == [shown[-1]]
    (job,) = queued(cluster)
    assert "CronJob=Yes" in cluster.run("scontrol", "show", "job", job).stdout
    cluster.run(*iostudy, "--remove")
    listed = cluster.run("scrontab", "-l", check=False).stdout
    assert "campaign run probe" not in listed
    poll(lambda: not queued(cluster), 30, "the probe's cron job to leave the queue")


def test_hmmer_and_probe_run_on_testcluster(cluster, tmp_path):
    configs = configs_copy(tmp_path)
    campaign = {
        "name": "appsprobe",
        "description": "test",
        "study": "tests",
        "environs": ["openmpi"],
        "checks": [
            {
                "check": "hmmer_check",
                "parameters": {
                    "config": ["A", "B", "C"],
                    "procs": 2,
                    "families": 3,
                    "sequences": 2000,
                },
            },
            # the probe's writers on both nodes, one per brick of the volume (its 2 targets)
            {
                "check": "probe_check",
                "parameters": {"writers_per_target": 1, "size": "32M", "procs_per_node": 1},
            },
        ],
    }
    (configs / "campaigns" / "appsprobe.json").write_text(json.dumps(campaign))
    proc = run_campaign(cluster, "appsprobe", configs, tmp_path)
    assert "runs 1 ingested" in proc.stdout
    con = store.connect(tmp_path / "store")
    probes = con.execute("SELECT * FROM probes").df()
    assert sorted(probes["writer"]) == [0, 1] and set(probes["nodes"]) == {2}
    assert (probes["bytes"] == 32 << 20).all() and (probes["write_time"] > 0).all()
    why = cluster.env.get("IOSTUDY_GLUSTER_UNAVAILABLE")
    if why:  # on the local scratch (test_cluster_storage_guard): the check's target only
        assert set(probes["target"]) == {"scratch"}, f"no volume ({why}) yet bricks named"
        return
    # writer r on target r mod 2, in the system's order of the volume's bricks
    assert dict(zip(probes["writer"], probes["target"], strict=True)) == {
        0: "n1-disk",
        1: "n2-disk",
    }
    # the report's interference section shows each brick's writers
    index = report.build(
        tmp_path / "store", "tests", tmp_path / "reports", results=tmp_path / "results"
    )
    assert 'id="probe-targets"' in index.read_text()
    targets = pd.read_csv(index.parent / "probe-targets.csv")
    assert list(targets["target"]) == ["n1-disk", "n2-disk"] and (targets["writers"] == 1).all()
    chromium.assert_within_budget(index)
    # the section's tables fit its box: no last column behind a scroll bar
    assert [t for t in chromium.overflowing_tables(index) if t[0] == "section-probes"] == []
    jobs = con.execute("SELECT * FROM jobs WHERE \"check\" = 'hmmer_check'").df()
    files = con.execute("SELECT * FROM files WHERE module = 'stdio'").df()
    configs_seen = set()
    for job in jobs.itertuples():
        tags = json.loads(job.tags)
        configs_seen.add(tags["config"])
        mine = files[files["log_sha256"] == job.log_sha256]
        db = mine[mine["path"].str.endswith("/db.fa")]
        # read once per family (query): three times its size (the highest offset read + 1)
        assert len(db) >= 1 and db["bytes_read"].sum() >= 3 * (db["max_byte"].max() + 1)
        # C's copy in a folder of the run's own in /dev/shm, which the campaign removed
        memory = f"/dev/shm/iostudy-{tags['run_id']}/"
        assert db["path"].iloc[0].startswith(memory) == (tags["config"] == "C")
        assert not os.path.exists(memory), f"{memory} left behind"
        out = "<STDOUT>" if tags["config"] == "A" else "/hmmsearch.out"
        assert mine[mine["path"].str.endswith(out)]["bytes_written"].sum() > 0, tags
    assert configs_seen == {"A", "B", "C"}
