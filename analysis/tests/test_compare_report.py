"""The regression section (iostudy.report.compare_report) from hand-made judged series in the
columns of compare.judge: each series' verdict with its change and interval, its noise, its
change-points in the table and on its figure."""

import pandas as pd

from iostudy.report import compare_report

from .judgedrows import judged, row

NOISE = dict(noise_cov=0.052, min_detectable_pct=14.6)
# four runs of the shared-file write, a change-point at r3 (the fall) and r3 a regression; a
# file-per-process write that stayed, too noisy in its latest run
SERIES = judged(
    row("r1", 1, value=4000.0, verdict="not judged", latest=False, **NOISE),
    row("r2", 2, value=4100.0, verdict="no change", change_pct=2.5, latest=False, **NOISE),
    row(
        "r3",
        3,
        value=980.0,
        repetitions=[950.0, 980.0, 1010.0],
        verdict="regression",
        change_pct=-75.8,
        change_low_pct=-77.0,
        change_high_pct=-74.1,
        p_value=0.0495,
        baseline="runs r1..r2 (6 repetitions)",
        change_point=True,
        **NOISE,
    ),
    *[
        row(
            f"r{i}",
            i,
            fingerprint="f2",
            metric="iomodel_check fpp_write_mib_s",
            verdict="too noisy" if i == 3 else "not judged",
            latest=i == 3,
            noise_cov=0.61,
            min_detectable_pct=180.0,
        )
        for i in (1, 2, 3)
    ],
)


def test_each_series_verdict_noise_and_change_points():
    table = compare_report.series_table(SERIES)
    assert list(table["metric"]) == [
        "iomodel_check ssf_write_mib_s",  # the regression first
        "iomodel_check fpp_write_mib_s",
    ]
    first = table.iloc[0]
    assert first["verdict"] == "regression" and first["latest_run"] == "r3"
    assert first["change"] == "-75.8% (95% interval -77.0 to -74.1%)"
    assert first["noise_cov_pct"] == 5.2 and first["min_detectable_pct"] == 14.6
    assert first["change_points"] == "r3" and first["runs"] == 3
    assert table.iloc[1]["change_points"] == "none"
    assert table.iloc[1]["change"] == "no change measured"


def test_the_figure_marks_the_change_point_and_says_the_noise():
    from matplotlib import dates as mdates

    fig = compare_report.over_time_figure(SERIES)
    ssf = fig.axes[0]
    assert ssf.get_title().endswith("\nnoise CoV 5.2%, smallest detectable change 15%")
    at = mdates.date2num(pd.Timestamp("2026-03-04"))  # r3's start
    vertical = [
        line
        for line in ssf.get_lines()
        if line.get_label() == "change-point"
        and list(mdates.date2num(line.get_xdata())) == [at, at]
    ]
    assert len(vertical) == 1
    # the regression marked on r3's value; each repetition of r3 drawn behind it
    (mark,) = [line for line in ssf.get_lines() if line.get_label() == "regression"]
    assert list(mark.get_ydata()) == [980.0]
    (reps,) = [line for line in ssf.get_lines() if line.get_label() == "repetition"]
    xs = mdates.date2num(reps.get_xdata())
    at_r3 = [y for x, y in zip(xs, reps.get_ydata(), strict=True) if x == at]
    assert at_r3 == [950.0, 980.0, 1010.0] and len(reps.get_ydata()) == 9
    assert not [line for line in fig.axes[1].get_lines() if line.get_label() == "change-point"]
