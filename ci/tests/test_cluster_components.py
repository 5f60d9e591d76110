"""Seed 001's component analysis on the test cluster, run as a facility runs it (`iostudy
campaign run components --ingest STORE`, ReFrame submitting to Slurm): fio on each of the
cluster's storage targets (an ext4 file system on a loop device per node, cluster-up's) from
the target's node, netbw with one rank on each node (its pairs cross the bridge), the rows
stored and the report's components section drawn. The kernel's own count of the sectors each
loop device wrote is the independent check that fio wrote where the row says."""

import json
from pathlib import Path

import pandas as pd
import pytest
from analysis.tests import chromium
from slurmtest import SYSTEM, bytes_written, configs_copy, run_campaign, target_devices

from iostudy.report import report
from iostudy.store import store

MIB = 1 << 20


def test_components_campaign_runs_on_testcluster(cluster, tmp_path, monkeypatch):
    configs = configs_copy(tmp_path)
    campaign = json.loads((configs / "campaigns" / "components.json").read_text())
    fio, netbw = campaign["checks"][:2]  # without IOR: no Spack view here
    fio["parameters"] |= {"size": "16M", "jobs": [1, 2]}
    # up to 16 MiB: messages far larger than the links' token bucket (128 KiB), whose rate
    # only they see
    netbw["parameters"] |= {"max_size": "16M", "seconds": 0.01}
    campaign |= {"name": "parts", "study": "tests", "checks": [fio, netbw]}
    (configs / "campaigns" / "parts.json").write_text(json.dumps(campaign))
    devices = target_devices(cluster, monkeypatch)
    assert len(devices) == 2 and len({d for _, d in devices.values()}) == 2
    before = {name: bytes_written(device) for name, (_, device) in devices.items()}
    proc = run_campaign(cluster, "parts", configs, tmp_path)
    rows = store.connect(tmp_path / "store").execute("SELECT * FROM components").df()
    network = rows[rows["component"] == "network"]
    # 1 KiB to 16 MiB, each with 3 bytes more and less, between the two nodes
    assert len(network) == 15 * 3 and set(network["nodes"]) == {2}
    assert (network["mib_s"] > 0).all()
    # the largest messages see the link: below its rate (plus what one burst of the bucket
    # adds to a 16 MiB message) and above a floor that a working link clears
    largest = network[network["bytes"] > 8 * MIB]
    top = link_mib_s(cluster.system) * (1 + 128 / (16 << 10))
    assert (largest["mib_s"] < top).all() and (largest["mib_s"] > 40).all(), largest
    storage = rows[rows["component"] == "storage"]
    assert (storage["aggregate_mib_s"] > 0).all()
    for name, (_, device) in devices.items():
        mine = storage[storage["target"] == name]
        assert set(mine["operation"]) == {"write", "read", "syncwrite"}, name
        # its direct writes at least (1 and 2 jobs, 1 and 16 in flight, then one synced job,
        # 16 MiB a job) reached its device; the files fio lays out to read back may not
        direct = 16 * MIB * (sum(mine.loc[mine["operation"] == "write", "jobs"]) + 1)
        assert bytes_written(device) - before[name] >= direct, (name, device)
    run_dir = Path(proc.stdout.splitlines()[-1])
    report_file = run_dir / "reframe" / "report.json"
    # the combinations the campaign excludes are skipped cases
    cases = [
        c
        for run in json.loads(report_file.read_text())["runs"]
        for c in run["testcases"]
        if c["name"] == "fio_check" and c["result"] != "skip"
    ]
    assert len(cases) == 2 * 9  # a target's 4 writes, 4 reads, 1 synced write: each its node
    for case in cases:
        ran = cluster.run("sacct", "-X", "-n", "-j", str(case["jobid"]), "-o", "NodeList%20")
        assert ran.stdout.split() == [devices[case["storage_target"]][0]], case["storage_target"]
    index = report.build(
        tmp_path / "store", "tests", tmp_path / "reports", results=tmp_path / "results"
    )
    page = index.read_text()
    for ident in (f"network-{SYSTEM}", f"storage-{SYSTEM}", f"component-limits-{SYSTEM}"):
        assert f'id="{ident}"' in page, ident
    limits = (index.parent / f"component-limits-{SYSTEM}.csv").read_text()
    assert "node link" in limits and "netbw_check between two nodes" in limits
    # the model's node link is the best of the largest messages, not a small one's burst
    # the system's storage: the volume the campaigns write to, its bricks the targets, each
    # with what fio measured on it from its node (its ceiling)
    assert f'id="storage-targets-{SYSTEM}"' in page
    storage = pd.read_csv(index.parent / f"storage-targets-{SYSTEM}.csv")
    volume = storage[storage["fs_type"] == "glusterfs"]
    # ... unless cluster-up did not serve it: the campaigns then wrote to the local scratch
    served = not cluster.env.get("IOSTUDY_GLUSTER_UNAVAILABLE")
    assert (volume["scratch"] == served).all() and set(volume["volume"]) == {"iostudy"}
    assert list(volume["target"]) == ["n1-disk", "n2-disk"]
    assert (volume["write_mib_s"] > 0).all() and (volume["read_mib_s"] > 0).all()
    chromium.assert_within_budget(index)
    table = pd.read_csv(index.parent / f"component-limits-{SYSTEM}.csv")
    link = table[(table["limit"] == "node link") & (table["operation"] == "write")]
    assert link["measured_mib_s"].tolist() == pytest.approx([largest["mib_s"].max()], rel=1e-3)


def link_mib_s(system: dict) -> float:
    """The system's tc link rate (testbed.network.link_rate, "<n>gbit" or "<n>mbit") in MiB/s."""
    rate = system["testbed"]["network"]["link_rate"]
    bits = float(rate[:-4]) * {"gbit": 1e9, "mbit": 1e6}[rate[-4:]]
    return bits / 8 / MIB
