"""The interference probe on a GlusterFS scratch storage: its targets are the volume's bricks,
ioprobe names writer r's file onto brick r mod K, and the store's rows name each writer's target.
The probe on the real volume: ci/tests/test_cluster_placement.py."""

import json

import pandas as pd
import pytest

from iostudy.benchmarks import probe
from iostudy.collect import placement
from iostudy.core import config
from iostudy.logs import proberows
from iostudy.report import probe_report

STATE = "/srv/cluster"
MIB = 1 << 20


def cluster(monkeypatch):
    monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", STATE)
    monkeypatch.delenv("IOSTUDY_GLUSTER_UNAVAILABLE", raising=False)  # the volume is served
    return config.load_system("testcluster")


def test_the_probe_on_the_volume_passes_each_targets_brick(monkeypatch):
    system = cluster(monkeypatch)
    found = placement.scratch_bricks(system, f"{STATE}/gluster/scratch")
    assert found == [
        ("n1-disk", f"{STATE}/targets/n1-disk/brick"),
        ("n2-disk", f"{STATE}/targets/n2-disk/brick"),
    ]
    args = probe.arguments("/w", "8M", "1M", 2, found)
    assert args[-4:] == ["--brick", found[0][1], "--brick", found[1][1]]
    # elsewhere (a run by hand in its stage folder; memory) the probe places nothing
    assert placement.scratch_bricks(system, "/stage/scratch") == []
    assert placement.scratch_bricks(system, False) == []
    assert placement.scratch_bricks(config.load_system("local"), f"{STATE}/gluster/scratch") == []


def test_rows_name_the_target_each_writer_was_placed_on():
    job = {
        "check": "probe_check",
        "tags": json.dumps({"target": "scratch", "writer_targets": "n1-disk,n2-disk"}),
        **{k: 1 for k in ("run_id", "log_sha256", "system", "campaign", "environ", "jobid")},
        **{k: 1 for k in ("start", "nodes", "nprocs")},
    }
    names = ["/v/w/writer.0.1", "/v/w/writer.1", "/v/w/writer.2.2", "/v/w/writer.3.17"]
    files = [
        {"module": "posix", "path": p, "bytes_written": 8, "rank": r, "write_time": 0.1}
        | {"write_start": 0, "write_end": 1}
        for r, p in enumerate(names)
    ]
    rows = proberows.probe_rows(job, files)
    assert [(r["writer"], r["target"]) for r in rows] == [
        (0, "n1-disk"),
        (1, "n2-disk"),
        (2, "n1-disk"),
        (3, "n2-disk"),
    ]
    plain = {**job, "tags": json.dumps({"target": "scratch"})}
    assert {r["target"] for r in proberows.probe_rows(plain, files)} == {"scratch"}
    # a name that is no writer's (a placement suffix that is not a number) is no row
    odd = [{**files[0], "path": "/v/w/writer.0.x"}]
    assert proberows.probe_rows(job, odd) == []


def test_sanity_counts_the_files_named():
    line = {"writers": 2, "bytes_per_writer": 1, "write_s": [0.1, 0.1], "files": ["writer.0"]}
    assert probe.sanity(line, 2, 1) == ["1 files named, expected 2"]


def test_the_report_shows_each_targets_writers():
    rows = pd.DataFrame(
        [
            # two samples; writer r on brick r mod 2; 64 MiB each
            {
                "system": "tc",
                "log_sha256": "a",
                "target": "n1-disk",
                "bytes": 64 * MIB,
                "write_time": 0.5,
            },
            {
                "system": "tc",
                "log_sha256": "a",
                "target": "n2-disk",
                "bytes": 64 * MIB,
                "write_time": 2.0,
            },
            {
                "system": "tc",
                "log_sha256": "b",
                "target": "n1-disk",
                "bytes": 64 * MIB,
                "write_time": 1.0,
            },
            {
                "system": "tc",
                "log_sha256": "b",
                "target": "n2-disk",
                "bytes": 64 * MIB,
                "write_time": 4.0,
            },
        ]
    )
    table = probe_report.per_target(rows).set_index("target")
    # n1-disk: 128 and 64 MiB/s -> mean 96; n2-disk: 32 and 16 -> mean 24
    assert table.loc["n1-disk", ["samples", "writers"]].tolist() == [2, 2]
    assert table.loc["n1-disk", "mean_writer_mib_s"] == pytest.approx(96.0)
    assert table.loc["n2-disk", "slowest_writer_mib_s"] == pytest.approx(16.0)
    assert table.loc["n2-disk", "fastest_writer_mib_s"] == pytest.approx(32.0)
    assert probe_report.per_target(rows.assign(target=None)).empty
