"""The report's figures compare across panels: one colour scale per quantity for every
system's seed-003 histogram (values worked out by hand), and long tables cut with failing rows
first."""

import pandas as pd
import pytest

from iostudy.report import figures


def hist(write, per_node_hour):
    return pd.DataFrame(
        {
            "x_log2_io_procs": [0, 1],
            "y_log2_procs_per_file": [0, 0],
            "max_write_mib_s": write,
            "max_mib_s_per_node_hour": per_node_hour,
        }
    )


def test_one_colour_scale_for_every_systems_histogram():
    local, cluster = hist([198.0, 600.0], [5e5, 2.5e6]), hist([288.0, 873.0], [1e6, 4e7])
    scales = figures.histogram_scales(pd.concat([local, cluster]))
    write = scales["max_write_mib_s"]
    # 873 / 198 < 30: linear from 0 to the largest of both systems
    assert (type(write).__name__, write.vmin, write.vmax) == ("Normalize", 0, 873.0)
    # 4e7 / 5e5 = 80 > 30: logarithmic over both
    rate = scales["max_mib_s_per_node_hour"]
    assert (type(rate).__name__, rate.vmin, rate.vmax) == ("LogNorm", 5e5, 4e7)
    for h in (local, cluster):  # each system's colour bars span the same range
        fig = figures.histogram_figure(h, "t", scales)
        bars = [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]
        assert [b.get_ylim() for b in bars] == [(0.0, 873.0), pytest.approx((5e5, 4e7))]


def test_a_long_table_shows_its_failing_rows_first():
    table = pd.DataFrame({"value": range(30), "result": ["pass"] * 25 + ["fail"] * 5})
    shown = figures.page_rows(table)
    assert len(shown) == figures.ROWS_SHOWN == 12
    assert list(shown["value"][:5]) == [25, 26, 27, 28, 29] and list(shown["value"][5:]) == [
        0,
        1,
        2,
        3,
        4,
        5,
        6,
    ]
    assert figures.page_rows(table.head(16)).equals(table.head(16))  # a short one whole


def test_time_axes_fit_the_data():
    t0 = pd.Timestamp("2026-03-02 09:00:00")
    # runs 100 s apart: 100 s and 5 s either side, not a 20-minute axis
    assert figures.time_span(pd.Series([t0, t0 + pd.Timedelta(seconds=100)])) == (
        t0 - pd.Timedelta(seconds=5),
        t0 + pd.Timedelta(seconds=105),
    )
    # runs milliseconds apart: a second either side, where a date axis still has ticks
    assert figures.time_span(pd.Series([t0, t0 + pd.Timedelta(milliseconds=3)])) == (
        t0 - pd.Timedelta(seconds=1),
        t0 + pd.Timedelta(milliseconds=1003),
    )
    # one run: a minute either side, not a span of years
    assert figures.time_span(pd.Series([t0])) == (
        t0 - pd.Timedelta(minutes=1),
        t0 + pd.Timedelta(minutes=1),
    )


def test_a_table_shows_its_verdict_second_and_states_shared_values_once():
    table = pd.DataFrame(
        {
            "run_id": ["r1", "r2", "r3"],
            "api": ["POSIX"] * 3,
            "transfer_size": [4 << 20] * 3,
            "value": [1.0, 2.0, 3.0],
            "result": ["pass", "fail", "pass"],
        }
    )
    shown = figures.rows(table)
    assert shown["header"] == ["run_id", "result", "value"]
    assert shown["rows"][1] == [("r2", "", None), ("fail", "fail", None), ("2", "num", None)]
    # stated once under the table, in the page's units (a size in MiB, not 4,194,304)
    assert shown["same"] == [("api", "POSIX"), ("transfer_size", "4 MiB")]
    # two rows alike are not yet a pattern: every column stays
    assert figures.rows(table.head(2))["header"] == [
        "run_id",
        "result",
        "api",
        "transfer_size",
        "value",
    ]


def test_a_cross_check_without_its_log_reads_no_log_not_no():
    table = pd.DataFrame({"run_id": ["r1"], figures.WITHIN: pd.array([pd.NA], "boolean")})
    assert figures.rows(table)["rows"] == [[("r1", "", None), ("no log", "", None)]]


def test_a_row_links_from_its_job_id_else_its_first_cell():
    table = pd.DataFrame({"log_path": ["a.darshan", "b.darshan"], "jobid": [7, 8], "value": [1, 2]})
    shown = figures.rows(table, ["job-a.html", None])
    assert shown["rows"] == [
        [("a.darshan", "", None), ("7", "num", "job-a.html"), ("1", "num", None)],
        [("b.darshan", "", None), ("8", "num", None), ("2", "num", None)],
    ]
    projects = figures.rows(pd.DataFrame({"project": ["climate"], "jobs": [3]}), ["p.html"])
    assert projects["rows"] == [[("climate", "", "p.html"), ("3", "num", None)]]


def test_legends_go_below_the_panels_and_axes_of_zeros_still_read():
    from iostudy.core.plotting import headroom, legend_below, panels

    fig, axes = panels(2, 3.0, 2.0)
    for ax in axes:
        ax.plot([0, 1], [0, 1], label="local")
        ax.plot([0, 1], [1, 0], label="a label long enough to need its own column of the legend")
        ax.legend()
    legend_below(fig)
    assert all(ax.get_legend() is None for ax in axes)  # nothing drawn over the data
    (legend,) = fig.legends
    assert [t.get_text() for t in legend.get_texts()] == [
        "local",
        "a label long enough to need its own column of the legend",
    ]
    assert legend._ncols == 1  # a 6-inch figure holds one column of that label
    assert headroom([0.0, 0.0]) == 1.0 and headroom([2.0, float("inf")], [5.0]) == 6.0


def test_a_figures_provenance_names_its_runs_and_systems():
    one = pd.DataFrame({"run_id": ["r1", "r1"], "system": ["local", "local"]})
    assert figures.provenance(one) == "from run r1 of local"
    many = pd.DataFrame(
        {"run_id": ["r2", "r1", "r3", "r4", "r5"], "system": ["a", "b", "c", "d", "a"]}
    )
    assert figures.provenance(many) == "from 5 runs of a, b, c and 1 more (r1 to r5)"
    assert figures.provenance(pd.DataFrame({"bytes": [1]})) is None  # no run named
