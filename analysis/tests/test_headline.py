"""The headline of a check study: per system its latest run against its baseline (how many of
each verdict, the worst change with its interval), the best value ever measured only as
context. Issue 46's case: the best write (4915 MiB/s) came from run 1 while the latest
single-shared-file write had fallen 76 %."""

from iostudy.report import headline

from .judgedrows import judged, row

# local: runs r1..r3 of two series; r3, the latest, fell 76 % in the shared-file write and
# rose 3 % in the file-per-process write (no change); a time rose 40 % (a regression, but a
# smaller change than the fall). site-b/x: one run, nothing to compare with.
SERIES = judged(
    row("r1", 1, value=4915.0, verdict="not judged", latest=False),
    row("r2", 2, value=3200.0, verdict="no change", change_pct=-8.0, latest=False),
    row(
        "r3",
        3,
        value=769.0,
        verdict="regression",
        change_pct=-76.0,
        change_low_pct=-80.1,
        change_high_pct=-70.2,
        p_value=0.004,
        baseline="runs r1..r2 (6 repetitions)",
        change_point=True,
    ),
    row(
        "r3",
        3,
        fingerprint="f2",
        variable="fpp_write_mib_s",
        metric="iomodel_check fpp_write_mib_s",
        verdict="no change",
        change_pct=3.0,
        change_low_pct=-4.0,
        change_high_pct=9.5,
        baseline="runs r1..r2 (6 repetitions)",
    ),
    row(
        "r3",
        3,
        fingerprint="f3",
        metric="ior_check write_s",
        unit="s",
        direction="lower",
        value=14.0,
        verdict="regression",
        change_pct=40.0,
        change_low_pct=30.0,
        change_high_pct=52.0,
        baseline="runs r1..r2 (6 repetitions)",
    ),
    row("b1", 3, label="site-b/x", system="x", fingerprint="f1", verdict="not judged"),
)


def test_the_headline_is_each_systems_latest_run_against_its_baseline():
    assert headline.latest_lines(SERIES) == [
        "local, latest run r3 against its baseline: 2 regression, 1 no change; worst change "
        "iomodel_check ssf_write_mib_s: -76.0% (95% interval -80.1 to -70.2%), regression "
        "(against runs r1..r2 (6 repetitions))",
        "site-b/x, latest run b1 against its baseline: 1 not judged; no change measured (no "
        "baseline to compare with)",
    ]


def test_a_time_that_rises_is_the_worst_change():
    """Worse is lower for a rate, higher for a time: a +40 % time beats a -8 % rate."""
    rows = SERIES[(SERIES["fingerprint"] != "f1") | (SERIES["run_id"] == "r2")]
    rows = rows[rows["label"] == "local"].assign(latest=True)
    (line,) = headline.latest_lines(rows)
    assert line.endswith(
        "worst change ior_check write_s: +40.0% (95% interval +30.0 to +52.0%), regression "
        "(against runs r1..r2 (6 repetitions))"
    )
    assert "latest run r2, r3 " in line  # the series' latest runs differ: both named
