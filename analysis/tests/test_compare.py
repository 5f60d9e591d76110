"""iostudy.compare's verdicts on series whose answer is known by construction: a history of
values near 100 MiB/s then 50 (a regression), 99 (ok), 200 (an improvement); a time (s) that
doubles; a value under its reference floor with no history; too short a history."""

import math

import pandas as pd

from iostudy import compare


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
        }
    )


def verdicts(frame, **kw):
    return list(compare.judge(frame, **kw).sort_values("started")["verdict"])


def test_history_flags_the_slow_run_only():
    history = [100, 104, 97, 101, 99]
    assert verdicts(series(history + [50]))[-1] == "regression"
    assert verdicts(series(history + [99]))[-1] == "ok"
    assert verdicts(series(history + [200]))[-1] == "improvement"
    # the first points have no history yet
    assert verdicts(series(history))[:3] == ["no baseline"] * 3


def test_direction_follows_the_unit():
    assert compare.direction("MiB/s") == "higher" and compare.direction("s") == "lower"
    assert verdicts(series([10, 10.5, 9.8, 10.1, 20], unit="s"))[-1] == "regression"
    assert verdicts(series([10, 10.5, 9.8, 10.1, 5], unit="s"))[-1] == "improvement"


def test_reference_floor_without_history():
    assert verdicts(series([50], band=(105.0, math.inf))) == ["regression"]
    assert verdicts(series([3000], band=(105.0, math.inf))) == ["ok"]


def test_tolerance_keeps_equal_history_from_flagging_noise():
    assert verdicts(series([100, 100, 100, 100, 95]))[-1] == "ok"  # within 10%
    assert verdicts(series([100, 100, 100, 100, 85]))[-1] == "regression"


def test_cross_site_says_why_results_cannot_be_compared():
    a = series([100, 101], label="local")
    b = series([90, 91], label="site-b/testcluster", fp="f2").assign(num_tasks=4)
    c = series([95], label="site-c/x")
    side, apart = compare.cross_site(pd.concat([a, b, c], ignore_index=True))
    assert set(side["system"]) == {"local", "site-c/x"}
    (reason,) = apart["reason"]
    assert reason.startswith("differs: num_tasks 4 vs 2")
