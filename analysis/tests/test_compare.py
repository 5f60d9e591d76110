"""iostudy.metrics.compare's verdicts on series whose answer is known by construction: a history of
runs' repetitions near 100 MiB/s then 24 (a regression, from two earlier runs), the headline's
fall, 5x swings between runs (never a confident verdict), bands that cannot fail (not judged),
an accepted run as the baseline, a ceiling, change-points. Then on real
campaign runs on local: an unchanged rerun passes, a run throttled by a CPU quota is flagged."""

import json
import math
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from iostudy.cli import cli
from iostudy.core.exitcodes import EXIT_REGRESSION
from iostudy.metrics import compare, cross_site

from . import chromium, cpuquota
from .testdata import REPO_ROOT

pytestmark = pytest.mark.campaign


def series(values, unit="MiB/s", band=(math.nan, math.nan), label="local", fp="f1"):
    start = pd.Timestamp("2026-01-01")
    return pd.DataFrame(
        {
            "label": label,
            "fingerprint": fp,
            "run_id": [f"r{i}" for i in range(len(values))],
            "started": [start + pd.Timedelta(days=i) for i in range(len(values))],
            "value": values,
            "unit": unit,
            "band_low": band[0],
            "band_high": band[1],
            "check": "iomodel_check",
            "variable": "fpp_write_mib_s",
            "version": "iostudy@0.1.0",
            "environ": "openmpi",
            "parameters": '{"size": "256M"}',
            "num_tasks": 2,
            "num_tasks_per_node": 2,
            "measured": "storage",
            "measures": "storage (O_DIRECT)",
        }
    )


def verdicts(frame, **kw):
    return list(compare.judge(frame, **kw).sort_values("started")["verdict"])


def with_reps(runs, **kw):
    """A series of runs given by their repetitions."""
    frame = series([float(pd.Series(r).median()) for r in runs], **kw)
    frame["repetitions"] = [list(map(float, r)) for r in runs]
    return frame


QUIET = [[98, 101, 100, 103, 99], [100, 97, 102, 99, 101], [101, 99, 100, 98, 102]]


def test_a_short_history_judges_a_clear_drop_from_the_repetitions():
    # two earlier runs of 5 repetitions at ~100, the latest at ~24: every latest repetition
    # under every earlier one (U = 0); ties (99, 100, 101 and 24 twice) make it the normal
    # approximation: sigma^2 = 50/12 x (16 - 4 x 6 / 210) = 66.19, z = (25 - 0.5) / 8.136
    # = 3.011, p = 0.0026
    judged = compare.judge(with_reps([*QUIET[:2], [24, 25, 23, 26, 24]]))
    last = judged.sort_values("started").iloc[-1]
    assert last["verdict"] == "regression"
    assert last["p_value"] == pytest.approx(
        math.erfc(24.5 / math.sqrt(50 / 12 * (16 - 24 / 210)) / math.sqrt(2))
    )
    # HL: median of (latest - baseline) differences = 24 - 100 = -76 of the median 100
    assert last["change_pct"] == pytest.approx(-76.0)
    assert last["change_high_pct"] < -5
    assert last["baseline"] == "runs r0..r1 (10 repetitions)"
    # one run, or one earlier run: not judged
    assert verdicts(with_reps([[24, 25, 23, 26, 24]])) == ["not judged"]
    assert verdicts(with_reps([QUIET[0], [24, 25, 23, 26, 24]])) == ["not judged"] * 2


def test_the_headline_case_a_fall_of_76_percent_is_a_regression():
    runs = [[4915, 4700, 5100], [4800, 5000, 4650], [4900, 4750, 5050], [769, 740, 800]]
    last = compare.judge(with_reps(runs)).sort_values("started").iloc[-1]
    # 3 against 9 with no ties, U = 0: exact p = 2 / C(12, 3) = 2 / 220
    assert last["p_value"] == pytest.approx(2 / 220)
    assert last["verdict"] == "regression"
    # every difference lies in 740 - 5100 .. 800 - 4650 = -4360 .. -3850, of the median 4900:
    # -89.0 .. -78.6 %; the interval's near edge beyond the 5 % tolerance by far
    assert -89.0 < last["change_pct"] < -78.5 and last["change_high_pct"] < -50


def test_five_fold_swings_between_runs_are_never_a_confident_verdict():
    swing = [[100, 110, 95], [500, 520, 480], [102, 108, 97]]
    for latest in ([490, 505, 515], [99, 104, 96]):
        last = compare.judge(with_reps([*swing, latest])).sort_values("started").iloc[-1]
        assert last["verdict"] in ("too noisy", "not judged"), last["basis"]
        assert last["min_detectable_pct"] > 50
    # two runs of 3 against 3 cannot reach p < 0.01 (smallest p 2 / C(9, 3) = 0.024)
    assert verdicts(with_reps([*swing[:2], [490, 505, 515]]))[-1] == "not judged"


def test_a_band_that_cannot_fail_is_not_judged():
    values = [4000, 4100, 4200]
    for edges in ((100.0, math.inf), (0.0, math.inf), (-math.inf, math.inf)):
        assert verdicts(series(values, band=edges)) == ["not judged"] * 3
    # a band that can fail still judges: inside it is no change, under it a regression
    assert verdicts(series([3000], band=(2000.0, math.inf))) == ["no change"]
    assert verdicts(series([1000], band=(2000.0, math.inf))) == ["regression"]


def test_direction_follows_the_unit():
    assert compare.direction("MiB/s") == "higher" and compare.direction("s") == "lower"
    # no ties: 3 against 9 tested exactly, U at its edge: p = 2 / C(12, 3) = 0.009
    times = [[10.0, 10.2, 9.9], [10.1, 9.8, 10.05], [9.95, 10.3, 10.15]]
    assert verdicts(with_reps([*times, [20.1, 19.8, 20.3]], unit="s"))[-1] == "regression"
    assert verdicts(with_reps([*times, [5.1, 4.9, 5.0]], unit="s"))[-1] == "improvement"


def test_quiet_runs_are_no_change_and_small_shifts_within_tolerance_too():
    assert verdicts(with_reps([*QUIET, [99, 102, 100, 98, 101]]))[-1] == "no change"
    # 3 % lower, significant but inside the 5 % tolerance
    assert verdicts(with_reps([*QUIET, [96, 97, 98, 97, 96]]))[-1] == "no change"


def test_accepted_run_is_the_baseline_of_the_runs_after_it():
    # no ties within the latest and r0: 5 against 5 tested exactly (p = 2 / 252 at U = 0)
    runs = [QUIET[0], [60, 61, 59, 62, 60.5], [59, 60, 61, 58, 60.5], [60, 59, 61, 62, 58]]
    # against the history of its 2 runs before (at ~60) the latest is no change; against r0:
    # -40 %
    assert verdicts(with_reps(runs), window=2)[-1] == "no change"
    judged = compare.judge(with_reps(runs), baseline_run="r0").sort_values("started")
    assert list(judged["verdict"])[1:] == ["regression"] * 3
    assert judged["baseline"].iloc[-1] == "accepted run r0 (5 repetitions)"


def test_a_value_under_a_fraction_of_its_ceiling_regressed():
    desc = {"local": {"peaks": {"aggregate_mib_s": 10000}}}
    judged = compare.judge(series([500, 2000]), descriptions=desc)
    assert list(judged.sort_values("started")["verdict"]) == ["regression", "no change"]
    assert judged["baseline"].iloc[0] == "ceiling 10,000 MiB/s x 10%"


def test_change_points_mark_the_run_starting_a_new_segment():
    values = [100, 102, 99, 101, 100, 60, 61, 59, 60, 62]
    judged = compare.judge(series(values)).sort_values("started")
    assert list(judged["change_point"]) == [i == 5 for i in range(10)]


def test_results_keep_the_repetitions():
    perf = pd.DataFrame(
        {
            "run_id": ["a", "a", "a"],
            "system": "local",
            "check": "ior_check",
            "variable": "write_mib_s",
            "unit": "MiB/s",
            "value": [300.0, 100.0, 200.0],
            "parameters": ['{"repetition": 0}', '{"repetition": 1}', '{"repetition": 2}'],
            "environ": "openmpi",
            "reference": None,
            "lower": None,
            "upper": None,
        }
    )
    runs = pd.DataFrame({"run_id": ["a"], "system": ["local"], "started": ["2026-01-01"]})
    (row,) = compare.results_of(perf, runs).to_dict("records")
    assert row["value"] == 200.0 and sorted(row["repetitions"]) == [100.0, 200.0, 300.0]


def test_cross_site_says_why_results_cannot_be_compared():
    a = series([100, 101], label="local")
    b = series([90, 91], label="site-b/testcluster", fp="f2").assign(num_tasks=4)
    c = series([95], label="site-c/x")
    side, apart = cross_site.cross_site(pd.concat([a, b, c], ignore_index=True))
    assert set(side["system"]) == {"local", "site-c/x"}
    (reason,) = apart["reason"]
    assert reason.startswith("differs: num_tasks 4 vs 2")


# -- on real runs -------------------------------------------------------------------------------

# The I/O-model check on both cores of this machine, three repetitions (a result is their
# median), with one MPI flavour: a few seconds a run.
REGRESSION_CAMPAIGN = {
    "name": "regression",
    "description": "test: the I/O-model check, a run's figures compared with the runs before",
    "study": "regression",
    "environs": ["openmpi"],
    "checks": [
        {
            "check": "iomodel_check",
            "parameters": {"size": "256M", "max_procs": 2, "procs_per_node": "system"},
            "repetitions": 3,
        }
    ],
}
# A twentieth of one CPU for the whole run (ReFrame, mpirun, both ranks): the benchmark's
# writes into the page cache are CPU work, so its MiB/s drop to a small fraction of an
# unthrottled run's (37 against a median of 4,250 here; a tenth of a CPU gave 424 against
# 3,900, too close to the band below).
THROTTLE = 0.05
# A change counts when its interval's near edge passes this fraction of the baseline's median.
# Page-cache writes on a shared 2-core VM vary between unchanged runs by a factor of two for a
# file per process and up to four and a half for the shared file (the interval is widened by
# that spread); the throttled run falls by 78 to 95 %.
TOLERANCE = "0.5"


def campaign_run(campaign: Path, results: Path, wrap=None) -> str:
    """`iostudy campaign run CAMPAIGN --system local` as a subprocess (so that ``wrap`` can put
    it under a CPU quota). The run's id; the run must finish, and pass unless ``wrap`` slows it
    (then a value under its reference floor fails the check: exit status 1)."""
    cmd = [
        Path(sys.executable).with_name("iostudy"),
        "campaign",
        "run",
        campaign,
        "--system",
        "local",
        "--results",
        results,
    ]
    cmd = wrap(cmd) if wrap else cmd
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=900, cwd=REPO_ROOT)
    allowed = (0, 1) if wrap else (0,)
    assert proc.returncode in allowed, proc.stdout[-3000:] + proc.stderr[-3000:]
    return Path(proc.stdout.splitlines()[-1]).name


@pytest.mark.exclusive
def test_throttled_run_is_flagged_and_unchanged_rerun_is_not(tmp_path, capsys):
    if why := cpuquota.unavailable():
        pytest.skip(f"no real slow-down possible: {why}")
    campaign = tmp_path / "regression.json"
    campaign.write_text(json.dumps(REGRESSION_CAMPAIGN))
    results, store = tmp_path / "results", tmp_path / "store"

    def add_run(wrap=None) -> str:
        run_id = campaign_run(campaign, results, wrap)
        assert cli.main(["ingest", str(results / run_id), "--store", str(store)]) == 0
        return run_id

    def compare_latest() -> tuple[int, str]:
        capsys.readouterr()
        status = cli.main(["compare", "--store", str(store), "--tolerance", TOLERANCE])
        out = capsys.readouterr()
        return status, out.out + out.err

    for _ in range(4):  # the history
        add_run()
    rerun = add_run()
    status, out = compare_latest()
    assert status == 0 and "REGRESSION" not in out and rerun in out, out

    with cpuquota.cpu_quota(THROTTLE) as wrap:
        slow = add_run(wrap)
    status, out = compare_latest()
    assert status == EXIT_REGRESSION, out
    flagged = [line for line in out.splitlines() if line.startswith("REGRESSION: ")]
    assert flagged and all(f"in run {slow}" in line for line in flagged), out
    # Which of the three rates is flagged depends on its history: page-cache writes on this
    # shared 2-core VM vary between unchanged runs (the shared file's by up to 4.5x, and a CI
    # run saw the file-per-process rate's CoV at 0.38), and a series whose smallest detectable
    # change is over 50 % is "too noisy" rather than flagged. Every rate fell past the tolerance.
    judged = compare.judge(compare.results(store), tolerance=float(TOLERANCE))
    slow_rows = judged[judged["run_id"] == slow]
    assert len(slow_rows) == 3 and (slow_rows["change_pct"] < -100 * float(TOLERANCE)).all()
    assert set(slow_rows["verdict"]) <= {"regression", "too noisy"}, slow_rows
    report_of_the_series(store, results, slow)


def report_of_the_series(store: Path, results: Path, slow: str) -> None:
    """The study's report is of the regression kind (six runs of one campaign on one system):
    at its top the throttled run fails (its values under the reference floor: FAIL comes
    first) and its fall against the history's median is among the reasons; the page keeps
    its budget and loads in Chromium."""
    reports = store.parent / "reports"
    assert (
        cli.main(
            [
                "report",
                "build",
                "--store",
                str(store),
                "--results",
                str(results),
                "--study",
                "regression",
                "--reports",
                str(reports),
            ]
        )
        == 0
    )
    page = reports / "regression" / "v1" / "index.html"
    report = chromium.verdict_at_top(page)
    assert report["kind"] == "regression" and report["verdict"] == "FAIL", report
    assert any(
        line.startswith(f"run {slow} on local: ReFrame failed") for line in report["reasons"]
    ), report
    fell = [
        line
        for line in report["reasons"]
        if "_write_mib_s" in line and slow in line and "% (95% interval " in line
    ]
    assert fell, report["reasons"]
    sections = chromium.assert_no_empty_section(page)
    assert sections[:3] == ["counts", "regressions", "over-runs"], sections
    chromium.assert_within_budget(page)


def test_json_lists_every_series_with_its_evidence():
    from iostudy.cli import compare as compare_cmd

    frame = with_reps([*QUIET[:2], [24, 25, 23, 26, 24]]).assign(site=None, system="local")
    judged = compare.judge(frame, descriptions={})
    out = json.loads(compare_cmd.as_json(judged, EXIT_REGRESSION))
    assert out["exit_status"] == EXIT_REGRESSION
    assert out["verdicts"] == {
        "regression": 1,
        "improvement": 0,
        "no change": 0,
        "too noisy": 0,
        "not judged": 2,
    }
    last = out["series"][-1]
    assert set(compare_cmd.JSON_COLUMNS) <= set(last)
    assert last["verdict"] == "regression" and last["repetitions"] == [24, 25, 23, 26, 24]
    # every piece of evidence the judgement gives, how many runs it judged together too
    assert last["judged_runs"] == 1
    assert out["series"][0]["p_value"] is None and out["series"][0]["band_high"] is None


# ten quiet runs whose levels spread by a CoV of 3.2 % (sd of the levels 3.162 of 100), each
# run's five repetitions within +-1 of its level; then runs at 90 % of 99, 101 and 100
LEVELS = [100, 96, 104, 97, 103, 98, 102, 96, 104, 100]


def around(level):
    return [level - 1, level + 0.5, level, level + 1, level - 0.5]


def test_a_ten_percent_shift_lost_in_one_run_is_seen_over_two_or_three():
    quiet = [around(v) for v in LEVELS]
    slowed = [around(0.9 * v) for v in (99, 101, 100)]
    judged = [compare.judge(with_reps(quiet + slowed[:k])).iloc[-1] for k in (1, 2, 3)]
    # alone: widened by 1.96 x 0.0316 x sqrt(1 + 1/10) = 6.5 % the interval's near edge does
    # not clear the 5 % tolerance; two runs together (x sqrt(1/2 + 1/10)): it does
    assert [j["verdict"] for j in judged] == ["no change", "regression", "regression"]
    # the third: the last two's baseline holds the first slowed run; all three together
    assert [j["judged_runs"] for j in judged] == [1, 2, 3]
    assert judged[1]["basis"].startswith("runs r10..r11 together: -10.0%")
    assert judged[1]["baseline"] == "runs r0..r9 (50 repetitions)"
    # a run back at its level after two slowed ones is not flagged: the three do not lie on one
    # side of the baseline, and alone it is no change
    back = compare.judge(with_reps(quiet + slowed[:2] + [around(100)])).iloc[-1]
    assert back["verdict"] == "no change" and back["judged_runs"] == 1
