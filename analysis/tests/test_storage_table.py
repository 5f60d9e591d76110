"""The components section's storage table (iostudy.report.components_report.storage_table):
testcluster's description, its GlusterFS volume the scratch, its bricks the targets, each
with the best fio figure of hand-made rows."""

import pandas as pd
import pytest

from iostudy.core import config
from iostudy.report import components_report


def fio(target, op, aggregate):
    return {"component": "storage", "target": target, "operation": op, "aggregate_mib_s": aggregate}


def test_the_volume_is_the_storage_and_its_bricks_the_targets_with_their_ceilings(monkeypatch):
    monkeypatch.delenv("IOSTUDY_GLUSTER_UNAVAILABLE", raising=False)  # the volume is served
    description = config.load_system("testcluster")
    rows = pd.DataFrame(
        [
            fio("n1-disk", "write", 300.0),
            fio("n1-disk", "write", 420.0),  # 2 jobs: the best is the target's
            fio("n1-disk", "read", 900.0),
            fio("n2-disk", "write", 250.0),
            fio("n2-disk", "syncwrite", 6.0),  # no large transfers: not a ceiling column
            {"component": "network", "target": None, "operation": "pingpong"},
        ]
    )
    table = components_report.storage_table(description, rows)
    assert list(table["storage"]) == ["scratch", "gluster", "gluster"]
    local, n1, n2 = (table.iloc[i] for i in range(3))
    assert (local["fs_type"], bool(local["scratch"])) == ("local", False)
    assert pd.isna(local["target"])  # a storage entry without targets: one row
    assert (n1["fs_type"], n1["volume"], n1["servers"]) == ("glusterfs", "iostudy", "n1, n2")
    assert bool(n1["scratch"]) and bool(n2["scratch"])
    assert (n1["target"], n1["node"]) == ("n1-disk", "n1")
    assert n1["brick"] == "$IOSTUDY_CLUSTER_STATE/targets/n1-disk/brick"
    assert (n1["write_mib_s"], n1["read_mib_s"]) == (420.0, 900.0)
    assert n2["write_mib_s"] == 250.0 and pd.isna(n2["read_mib_s"])


def test_a_run_without_the_volume_shows_why_and_its_scratch_the_local_one(monkeypatch):
    monkeypatch.setenv("IOSTUDY_GLUSTER_UNAVAILABLE", "switched off (IOSTUDY_GLUSTER=off)")
    description = config.load_system("testcluster")  # as the run's manifest records it
    rows = pd.DataFrame(columns=["component", "target", "operation", "aggregate_mib_s"])
    table = components_report.storage_table(description, rows)
    assert [bool(x) for x in table["scratch"]] == [True, False, False]
    assert pd.isna(table["unavailable"].iloc[0])
    assert set(table["unavailable"].iloc[1:]) == {"switched off (IOSTUDY_GLUSTER=off)"}


def test_a_system_without_storage_has_an_empty_table():
    assert components_report.storage_table(
        {"name": "x"}, pd.DataFrame(columns=["component", "target", "operation", "aggregate_mib_s"])
    ).empty
    with pytest.raises(KeyError):  # a storage entry has a name (the schema requires it)
        components_report.storage_table(
            {"storage": [{"path": "p"}]},
            pd.DataFrame(columns=["component", "target", "operation", "aggregate_mib_s"]),
        )
