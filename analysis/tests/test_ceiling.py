"""Seed 001's aggregate ceiling (iostudy.metrics.ceiling) on hand-made component rows; every
expected value is worked out in the comments."""

from __future__ import annotations

import pandas as pd
import pytest

from iostudy.metrics import ceiling

PEAKS = {"storage_targets": 2, "client_network_mib_s": 500.0, "aggregate_mib_s": None}


def component(kind, op, rate, aggregate, jobs=None, nodes=1, procs=1, size=None, target=None):
    return {
        "run_id": "r1",
        "system": "two",
        "component": kind,
        "target": target,
        "operation": op,
        "block": 4 << 20 if kind == "storage" else None,
        "jobs": jobs,
        "bytes": size,
        "procs": procs,
        "nodes": nodes,
        "mib_s": rate,
        "aggregate_mib_s": aggregate,
    }


# fio on one target: writes 100 (1 job) and 180 MiB/s (2 jobs), reads 250: x 2 targets
# -> storage 360 (write), 500 (read). netbw across two nodes: one pair 300, all pairs 550;
# on one node (shared memory) 9,000, which is no network. 64 KiB messages went at 700 and 900
# (a burst), but the limits come from the largest messages (1 MiB and 1 MiB - 3): 300 and 550.
COMPONENTS = pd.DataFrame(
    [
        component("storage", "write", 100, 100, jobs=1),
        component("storage", "write", 90, 180, 2),
        component("storage", "read", 250, 250, jobs=1),
        component("storage", "syncwrite", 6, 6, jobs=1),
        component("network", "pingpong", 300, 550, nodes=2, procs=4, size=1 << 20),
        # a smaller message through a link's token bucket: faster than the link, not its rate
        component("network", "pingpong", 700, 900, nodes=2, procs=4, size=64 << 10),
        component("network", "pingpong", 290, 540, nodes=2, procs=4, size=(1 << 20) - 3),
        component("network", "pingpong", 9000, 9000, nodes=1, procs=2, size=1 << 20),
    ]
)
# IOR to memory: 800 MiB/s writing on 2 nodes (400 a node), 1,000 reading (500 a node)
MEMORY = pd.DataFrame(
    [
        {"target": "memory", "operation": "write", "mib_s": 800.0, "nodes": 2, "procs": 4},
        {"target": "memory", "operation": "read", "mib_s": 1000.0, "nodes": 2, "procs": 4},
    ]
)


@pytest.fixture
def limits():
    return ceiling.limits("two", COMPONENTS, MEMORY, PEAKS)


def test_each_limit_is_measured_where_measured_and_declared_otherwise(limits):
    used = limits.set_index(["limit", "operation"])
    assert used.at[("storage", "write"), "used_mib_s"] == 360
    assert used.at[("storage", "read"), "used_mib_s"] == 500
    # the measured client (400 a node) wins over the declared 500
    assert used.at[("client", "write"), "used_mib_s"] == 400
    assert used.at[("client", "write"), "declared_mib_s"] == 500
    assert used.at[("node link", "read"), "used_mib_s"] == 300  # not the one node's 9,000
    assert used.at[("network", "write"), "used_mib_s"] == 550


def test_netbw_on_one_node_says_what_it_measured_and_that_it_is_no_network():
    """netbw passed on one node only (9,000 MiB/s through shared memory): the network limits
    stay unknown, and their source says why rather than "neither measured"."""
    one_node = COMPONENTS[~((COMPONENTS["component"] == "network") & (COMPONENTS["nodes"] == 2))]
    table = ceiling.limits("one", one_node, MEMORY, PEAKS).set_index(["limit", "operation"])
    for limit in ("node link", "network"):
        row = table.loc[(limit, "write")]
        assert pd.isna(row["used_mib_s"])
        assert (
            "netbw_check ran on one node only: 9,000 MiB/s through shared memory" in row["source"]
        )
    without = COMPONENTS[COMPONENTS["component"] != "network"]
    source = ceiling.limits("one", without, MEMORY, PEAKS).set_index(["limit", "operation"])
    assert source.loc[("node link", "write"), "source"].startswith("neither measured (netbw_check")


@pytest.mark.parametrize(
    "op, nodes, value, name",
    [
        ("write", 1, 300, "node link"),  # min(360, 400, 300, 550)
        ("write", 2, 360, "storage"),  # min(360, 800, 600, 550)
        ("read", 1, 300, "node link"),  # min(500, 500, 300, 550)
        ("read", 2, 500, "storage"),  # min(500, 1000, 600, 550)
        ("read", 4, 500, "storage"),  # min(500, 2000, 1200, 550)
    ],
)
def test_the_ceiling_is_the_smallest_limit_at_each_scale(limits, op, nodes, value, name):
    assert ceiling.ceiling(limits, op, nodes) == (value, name)


def test_a_point_gets_its_fraction_of_the_ceiling_at_its_nodes(limits):
    curves = pd.DataFrame(
        [
            {
                "run_id": "r1",
                "system": "two",
                "api": "POSIX",
                "layout": "shared",
                "target": t,
                "transfer": "4 MiB, aligned",
                "procs": p,
                "nodes": n,
                "operation": op,
                "mib_s": v,
            }
            for t, p, n, op, v in [
                ("scratch", 4, 2, "write", 306.0),
                ("scratch", 2, 1, "read", 150.0),
                ("memory", 4, 2, "write", 800.0),
            ]
        ]
    )
    iomodel = pd.DataFrame(
        [
            {
                "run_id": "r1",
                "system": "two",
                "model": "fpp",
                "io_procs": 4,
                "nodes": 2,
                "write_mib_s": 180.0,
                "read_mib_s": None,
            }
        ]
    )
    table = ceiling.fractions(ceiling.points(curves, iomodel), limits)
    assert len(table) == 3  # two IOR points on scratch (memory is the client), one model
    cached = ceiling.fractions(ceiling.points(curves.assign(mib_s=3000.0), iomodel), limits)
    assert set(cached.loc[cached["benchmark"] == "IOR POSIX", "note"]) == {ceiling.ABOVE}
    best = ceiling.best_fractions(table)
    assert best["write"]["ceiling_pct"] == pytest.approx(85.0)  # 306 of 360
    assert best["read"]["ceiling_pct"] == pytest.approx(50.0)  # 150 of 300 (node link)
    assert best["read"]["limited_by"] == "node link"
    # the verdict's point is the nearest from below: one above the ceiling measured a cache
    doubled = pd.concat([curves, curves.assign(mib_s=3000.0)], ignore_index=True)
    both = ceiling.fractions(ceiling.points(doubled, iomodel), limits)
    assert ceiling.best_fractions(both)["write"]["ceiling_pct"] == pytest.approx(85.0)
    assert ceiling.best_fractions(cached)["write"]["ceiling_pct"] > 100  # all above: that one
    model = table[table["benchmark"] == "I/O model"].iloc[0]
    assert model["ceiling_pct"] == pytest.approx(50.0) and model["note"] == ""  # 180 of 360


def test_nothing_known_is_no_ceiling():
    empty = pd.DataFrame(columns=COMPONENTS.columns)
    table = ceiling.limits("bare", empty, MEMORY.iloc[:0], None)
    assert table["used_mib_s"].isna().all()
    assert ceiling.ceiling(table, "write", 1) == (None, None)
    curve = ceiling.ceiling_curve(table, [1, 2], 2)
    assert curve["ceiling_mib_s"].isna().all()


def test_the_scaling_figure_draws_the_modelled_ceiling_at_each_points_nodes(limits):
    from iostudy.metrics import scaling

    curves = pd.DataFrame(
        {"system": "two", "operation": ["write", "write", "read"], "nodes": [1, 2, 4]}
    )
    drawn = scaling.with_ceiling(curves, {"two": limits})
    assert list(drawn["modelled_ceiling_mib_s"]) == [300, 360, 500]  # as worked out above
    assert scaling.with_ceiling(curves, {})["modelled_ceiling_mib_s"].isna().all()


def test_listed_targets_add_up_each_at_its_best():
    # n1: writes 100 (1 job), 170 (2 jobs); n2: 120, 90; scratch (not a listed target) 999:
    # the listed targets measured -> 170 + 120 = 290, whatever peaks.storage_targets says
    rows = pd.DataFrame(
        [
            component("storage", "write", 100, 100, 1, target="n1"),
            component("storage", "write", 85, 170, 2, target="n1"),
            component("storage", "write", 120, 120, 1, target="n2"),
            component("storage", "write", 45, 90, 2, target="n2"),
            component("storage", "write", 999, 999, 1, target="scratch"),
        ]
    )
    table = ceiling.limits("two", rows, MEMORY.iloc[:0], PEAKS).set_index(["limit", "operation"])
    assert table.at[("storage", "write"), "used_mib_s"] == 290
    assert "each of 2 target(s)" in table.at[("storage", "write"), "source"]
    # none listed: the best on scratch x the declared 2 targets
    scratch = ceiling.limits("two", rows.iloc[4:], MEMORY.iloc[:0], PEAKS)
    assert scratch.set_index(["limit", "operation"]).at[("storage", "write"), "used_mib_s"] == 1998


def test_applications_are_held_against_the_ceiling_at_their_nodes(limits):
    def perf(check, variable, value, tasks, per_node, run="r1"):
        return {
            "run_id": run,
            "system": "two",
            "check": check,
            "variable": variable,
            "value": value,
            "num_tasks": tasks,
            "num_tasks_per_node": per_node,
        }

    rows = pd.DataFrame(
        [
            perf("btio_check", "write_mib_s", 306.0, 4, 2),  # 2 nodes: 306 of 360 (storage)
            perf("btio_check", "write_time_s", 9.0, 4, 2),  # a time: not a point
            perf("flashio_check", "checkpoint_mib_s", 150.0, 4, 2, run="local"),  # 1 node: of 300
            perf("haccio_check", "read_mib_s", float("nan"), 4, 2),  # no value: no point
            perf("ior_check", "write_mib_s", 1.0, 4, 2),  # IOR comes from its own table
        ]
    )
    apps = ceiling.application_points(rows, one_node={"local"})
    assert sorted(zip(apps["benchmark"], apps["operation"], apps["nodes"], strict=True)) == [
        ("BTIO", "write", 2),
        ("FLASH-IO", "write", 1),
    ]
    empty_ior = pd.DataFrame(columns=["target", "api", *ceiling.POINT_COLUMNS])
    held = ceiling.fractions(ceiling.points(empty_ior, pd.DataFrame(), apps), limits)
    pct = dict(zip(held["benchmark"], held["ceiling_pct"], strict=True))
    assert pct["BTIO"] == pytest.approx(85.0) and pct["FLASH-IO"] == pytest.approx(50.0)
    assert ceiling.best_fractions(held) == {}  # the verdict's fraction is IOR's alone
