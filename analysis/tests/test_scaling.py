"""The scaling section's tables and figures on hand-made store rows (results worked out in the
comments)."""

import json

import pandas as pd
import pytest

from iostudy.metrics import metrics, scaling
from iostudy.store import store

MiB = 2**20


def ior_result(
    run,
    op,
    bw,
    procs=1,
    layout="shared",
    transfer=4 * MiB,
    target="scratch",
    api="POSIX",
    environ="openmpi",
    repetition=0,
):
    return {
        "run_id": run,
        "system": "local",
        "environ": environ,
        "repetition": repetition,
        "api": api,
        "layout": layout,
        "target": target,
        "transfer_size": transfer,
        "block_size": 256 * transfer,
        "procs": procs,
        "procs_per_node": 2,
        "nodes": 1 + (procs > 2),
        "operation": op,
        "iteration": 0,
        "bw_mib_s": bw,
        "aggregate_bytes": procs * 256 * transfer,
        "total_s": 1.0,
        "log_tags": "{}",
    }


# Point (shared, 4 MiB, 2 procs, scratch, write): three repetitions at 90, 100 and 140 MiB/s
#   -> mean 110, min 90, max 140, 3 results. The 4000000-byte transfer is unaligned.
IOR = pd.DataFrame(
    [ior_result("r1", "write", bw, procs=2, repetition=k) for k, bw in enumerate((90, 100, 140))]
    + [ior_result("r1", "write", 50, procs=1), ior_result("r1", "read", 500, procs=1)]
    + [ior_result("r1", "write", 60, procs=1, transfer=4_000_000)]
    + [
        ior_result("r1", "write", 400, procs=1, target="memory"),
        ior_result("r1", "write", 700, procs=2, target="memory", layout="fpp"),
    ]
)


def test_transfer_labels():
    assert scaling.transfer_label(4 * MiB) == "4 MiB, aligned"
    assert scaling.transfer_label(4_000_000) == "4000000 B, unaligned"
    assert scaling.transfer_label(MiB // 2) == "524288 B, unaligned"


def test_ior_curves_average_iterations_and_repetitions():
    curves = scaling.ior_curves(IOR)
    point = curves[(curves["procs"] == 2) & (curves["target"] == "scratch")].iloc[0]
    assert point["mib_s"] == pytest.approx(110.0)
    assert (point["min_mib_s"], point["max_mib_s"], point["results"]) == (90, 140, 3)
    assert point["transfer"] == "4 MiB, aligned" and point["nodes"] == 1
    assert set(curves["transfer"]) == {"4 MiB, aligned", "4000000 B, unaligned"}
    assert len(curves) == 6
    assert scaling.ior_curves(IOR.iloc[0:0]).empty


def test_declared_ceilings_scale_with_nodes_and_skip_nulls():
    peaks = {
        "aggregate_mib_s": 1000,
        "client_network_mib_s": 300,
        "storage_target_mib_s": 200,
        "storage_targets": 4,
        "metadata_ops_s": None,
    }
    got = dict(scaling.declared_ceilings(peaks, pd.Series([1, 1, 2])))
    assert list(got["client network peak x nodes"]) == [300, 300, 600]
    assert list(got["declared aggregate peak"]) == [1000] * 3
    assert list(got["storage target peak x targets"]) == [800] * 3
    none = {k: None for k in peaks}
    assert scaling.declared_ceilings(none, pd.Series([1])) == []
    assert scaling.declared_ceilings(None, pd.Series([1])) == []


def test_ior_figure_draws_storage_curves_the_memory_ceiling_and_peaks():
    fig = scaling.ior_scaling_figure(scaling.ior_curves(IOR), {"aggregate_mib_s": 1000}, "t")
    write = fig.axes[0]
    labels = set(write.get_legend_handles_labels()[1])
    assert labels == {
        "N-1 (shared file), 4 MiB, aligned",
        "N-1 (shared file), 4000000 B, unaligned",
        "client ceiling (memory target, best)",
        "declared aggregate peak",
    }
    # The client ceiling: the best memory-target value per process count, 400 at 1, 700 at 2.
    ceiling = next(line for line in write.get_lines() if line.get_label().startswith("client"))
    assert list(ceiling.get_xdata()) == [1, 2] and list(ceiling.get_ydata()) == [400, 700]


# perf rows of the metadata checks: mdtest file_create at 1 and 2 procs (scratch; two
# repetitions at 2 procs: 100 and 300 -> mean 200), metarates create in memory under two MPIs.
def perf_row(check, variable, value, params, result="pass", environ="openmpi"):
    return {
        "run_id": "r1",
        "system": "local",
        "partition": "default",
        "environ": environ,
        "check": check,
        "parameters": json.dumps(params),
        "variable": variable,
        "value": value,
        "unit": "ops/s",
        "result": result,
    }


PERF = pd.DataFrame(
    [
        perf_row("mdtest_check", "file_create_ops_s", 50, {"procs": 1, "repetition": 0}),
        perf_row("mdtest_check", "file_create_ops_s", 100, {"procs": 2, "repetition": 0}),
        perf_row(
            "mdtest_check", "file_create_ops_s", 300, {"procs": 2, "repetition": 1}, result="fail"
        ),
        perf_row("mdtest_check", "file_stat_ops_s", 900, {"procs": 2, "repetition": 1}),
        perf_row(
            "metarates_check",
            "create_ops_s",
            70,
            {"procs": "1", "target": "memory"},
            environ="mpich",
        ),
        perf_row("metarates_check", "create_ops_s", 80, {"procs": "1", "target": "memory"}),
        perf_row("iomodel_check", "fpp_write_mib_s", 1.0, {"size": "256M"}),
    ]
)


def test_metadata_curves_per_benchmark_target_and_flavour():
    curves = scaling.metadata_curves(PERF)
    md = curves[curves["benchmark"] == "mdtest"].set_index(["variable", "procs"])
    assert md.loc[("file_create_ops_s", 2), "ops_s"] == pytest.approx(200)
    assert md.loc[("file_create_ops_s", 2), "min_ops_s"] == 100
    assert md.loc[("file_create_ops_s", 1), "ops_s"] == 50
    assert set(md["target"]) == {"scratch"}  # no target parameter: the default
    mr = curves[curves["benchmark"] == "metarates"]
    assert sorted(mr["environ"]) == ["mpich", "openmpi"] and set(mr["target"]) == {"memory"}
    fig = scaling.metadata_figure(curves, {"metadata_ops_s": 1000}, "t")
    labels = {lab for ax in fig.axes for lab in ax.get_legend_handles_labels()[1]}
    assert {"create (mpich)", "create (openmpi)", "declared metadata peak"} <= labels


def test_pass_fail_per_point_and_repetition():
    table = scaling.pass_fail_table(PERF)
    assert "iomodel_check" not in set(table["check"])
    md = table[table["check"] == "mdtest_check"].set_index(["point", "repetition"])
    # The label names what varies among the check's points: procs.
    assert md.loc[("procs=2", 1), "values"] == 2 and md.loc[("procs=2", 1), "passed"] == 1
    assert md.loc[("procs=2", 1), "failed"] == "file_create_ops_s"
    assert md.loc[("procs=2", 1), "result"] == "fail"
    assert md.loc[("procs=1", 0), "result"] == "pass" and md.loc[("procs=1", 0), "failed"] == ""


def test_ior_crosscheck_table_on_an_empty_store_has_its_columns():
    empty = {name: pd.DataFrame(columns=store.TABLES[name].names) for name in store.TABLES}
    table = scaling.ior_crosscheck_table(empty["ior"], empty["files"], empty["jobs"])
    assert table.empty and scaling.WITHIN in table.columns and "difference_pct" in table
    assert scaling.WITHIN == f"within_{100 * metrics.TABLE1_TOLERANCE:g}pct"


def test_curves_carry_the_declared_peaks():
    curves = scaling.ior_curves(IOR)
    data = scaling.with_peaks(curves, {"aggregate_mib_s": 1000, "client_network_mib_s": None})
    assert set(data["declared_aggregate_mib_s"]) == {1000}
    assert data["declared_client_network_mib_s"].isna().all()
    assert data["declared_storage_targets"].isna().all() and len(data) == len(curves)
