"""make bench-compare's counting (analysis/bench/bench_compare.py): which judgements it asks of
a trial, what counts as a detection and as a false alarm, and its last line. The measuring part
needs root and minutes: make bench-compare runs it."""

import datetime as dt
import importlib.util
import sys
from pathlib import Path

import pandas as pd

BENCH = Path(__file__).resolve().parents[1] / "bench" / "bench_compare.py"
spec = importlib.util.spec_from_file_location("iostudy_bench_compare", BENCH)
bc = importlib.util.module_from_spec(spec)
sys.modules[spec.name] = bc  # dataclasses look their module up
spec.loader.exec_module(bc)

T0 = dt.datetime(2026, 12, 1, tzinfo=dt.timezone.utc)
QUIET = [100.0, 101.0, 99.0, 100.5, 99.5]  # each quiet run: the same five values, turned


def run(i: int, values: list[float]) -> bc.Run:
    turned = values[i % 5 :] + values[: i % 5]
    return bc.Run(turned, T0 + dt.timedelta(minutes=i), 0.01)


def measured(fresh: int = 0) -> bc.Measured:
    """10 quiet runs and one trial from them; ``fresh`` more quiet runs before it (the rolling
    history: the trial then branches from the last 10)."""
    quiet = [run(i, QUIET) for i in range(10 + fresh)]
    return bc.Measured(quiet, [trial(quiet[-10:])])


def trial(quiet) -> bc.Trial:
    after = int((quiet[-1].started - T0).total_seconds() // 60) + 1  # slowed runs come after
    slowed = {
        "50%": [run(after, [v / 2 for v in QUIET])],
        "25%": [run(after, [v * 0.75 for v in QUIET])],
        "10%": [run(after + k, [v * 0.9 for v in QUIET]) for k in range(3)],
        "cpu": [run(after + k, [v / 2 for v in QUIET]) for k in range(3)],
    }
    return bc.Trial(quiet, slowed, 0.05)


def test_cuts_each_nightly_judgement_once():
    """A quiet cut per quiet run (each with the runs before it, at most the 13 a judgement of
    the latest can look at: its window of 10 and the 2 judged with it), one for 50 % and 25 %,
    three for 10 % and the CPU quota; a slowed cut holds the trial's 10 quiet runs and its
    case's first k slowed runs, never another's."""
    cuts = bc.cuts(measured(fresh=6))
    assert len(cuts) == 16 + 1 + 1 + 3 + 3
    quiet = [series for _, case, _, series in cuts if case == "quiet"]
    assert [len(s) for s in quiet] == [*range(1, 14), 13, 13, 13]
    assert quiet[-1][-1].started == T0 + dt.timedelta(minutes=15)
    ten = [series for _, case, _, series in cuts if case == "10%"]
    assert [len(s) for s in ten] == [11, 12, 13]
    assert ten[0][0].started == T0 + dt.timedelta(minutes=6)  # the last 10 of 16
    assert all(sorted(s[-1].values) == sorted(v * 0.9 for v in QUIET) for s in ten)


def test_score_counts_detections_within_their_runs_and_judged_quiet_runs():
    rows = [
        ("t0", "quiet", 1, "no baseline"),
        ("t0", "quiet", 2, "not judged"),
        ("t0", "quiet", 3, "no change"),
        ("t0", "quiet", 4, "regression"),
        ("t0", "50%", 1, "regression"),
        ("t0", "25%", 1, "no change"),
        ("t0", "10%", 1, "no change"),
        ("t0", "10%", 2, "no change"),
        ("t0", "10%", 3, "regression"),
        ("t0", "cpu", 1, "regression"),
        ("t1", "50%", 1, "improvement"),
        ("t1", "25%", 1, "regression"),
        ("t1", "10%", 1, "too noisy"),
        ("t1", "10%", 2, "no change"),
        ("t1", "10%", 3, "no change"),
    ]
    verdicts = pd.DataFrame(rows, columns=["trial", "case", "k", "verdict"])
    scores = bc.score(verdicts)
    assert scores["50%"] == (1, 2)
    assert scores["25%"] == (1, 2)
    assert scores["10%"] == (1, 2)  # t0 at its third run; t1 never
    assert scores["10% first"] == (0, 2)
    assert scores["quiet"] == (1, 2)  # two quiet runs had enough history
    assert bc.last_line(scores) == (
        "detected 25%: 1/2, 50%: 1/2, 10% within 3 runs: 1/2; false alarms: 1/2"
    )


def test_a_halved_run_is_caught_and_a_steady_history_is_not_through_the_real_judge():
    """Through compare.results_of and compare.judge: quiet runs of the same five values are
    never a regression; a run at half their rate is, at its first run."""
    scores = bc.score(bc.judged(measured()))
    assert scores["50%"] == (1, 1)
    assert scores["cpu first"] == (1, 1)
    hits, judged = scores["quiet"]
    assert hits == 0 and judged >= 5
