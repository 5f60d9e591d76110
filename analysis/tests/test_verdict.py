"""The report's verdict from hand-made runs, perf rows and judged results: each word and the
reasons a reader acts on (the rules: iostudy.report.verdict's docstring)."""

import math

import pandas as pd

from iostudy.report.verdict import verdict

from .judgedrows import judged, row

PERF_COLUMNS = [
    "check",
    "variable",
    "system",
    "value",
    "reference",
    "lower",
    "upper",
    "unit",
    "result",
]


def run(run_id="r1", status="passed", results=None, not_run=None, **manifest):
    m = {"results": results if results is not None else {"pass": 2}, **manifest}
    if not_run is not None:
        m["not_run"] = not_run
    return {"run_id": run_id, "system": "local", "status": status, "_manifest": m}


def perf(*rows):
    return pd.DataFrame(list(rows), columns=PERF_COLUMNS)


# a floor of 800 x (1 - 0.5) = 400 MiB/s: a reference that can fail
PASSING = perf(["ior_check", "write_mib_s", "local", 900.0, 800.0, -0.5, None, "MiB/s", "pass"])
NOT_BUILT = "ior is not built: no build/spack/local/view/bin/ior (run `make spack SYSTEM=local`)"


def test_every_case_ran_and_passed():
    v = verdict([run()], PASSING, judged())
    assert v.word == "PASS"
    assert v.reasons == ("2 test cases ran and passed", "1 value within references that can fail")


def test_skipped_cases_make_it_incomplete_naming_the_check_and_the_command():
    cases = [
        {
            "check": "ior_check",
            "name": "ior_check %.layout=shared",
            "environ": env,
            "result": "skip-optional",
            "reason": NOT_BUILT,
        }
        for env in ("openmpi", "mpich")
    ] + [
        {
            "check": "ior_check",
            "name": "ior_check %.layout=fpp",
            "environ": "openmpi",
            "result": "excluded",
            "reason": "excluded by the campaign: layout=fpp",
        }
    ]
    v = verdict([run(not_run=cases)], PASSING, judged())
    assert v.word == "INCOMPLETE"
    # two cases, one line; the excluded case is by design, not missing
    assert v.reasons == (f"ior_check: 2 cases did not run: {NOT_BUILT}",)


def test_an_old_manifest_without_reasons_still_counts_its_skips():
    v = verdict([run(results={"pass": 2, "skip-optional": 6})], PASSING, judged())
    assert v.word == "INCOMPLETE"
    assert v.reasons == ("run r1: 6 cases did not run (its iostudy kept no reasons)",)


def test_failures_come_first_with_the_worst_value():
    values = perf(
        ["ior_check", "write_mib_s", "local", 900.0, 800.0, 0.0, None, "MiB/s", "pass"],
        ["ior_check", "write_mib_s", "local", 300.0, 800.0, 0.0, None, "MiB/s", "fail"],
        ["ior_check", "write_mib_s", "local", 500.0, 800.0, 0.0, None, "MiB/s", "fail"],
    )
    runs = [run(), run("r2", status="failed", results={"pass": 1, "fail": 1}, exit_code=1)]
    v = verdict(runs, values, judged())
    assert v.word == "FAIL"
    assert v.reasons == (
        "run r2 on local: ReFrame failed, exit status 1",
        "run r2: 1 test case failed",
        "ior_check write_mib_s on local: 2 of 3 values outside the reference (e.g. 300 MiB/s "
        "against 800)",
    )


def test_a_regression_of_the_latest_run_only():
    earlier = dict(change_pct=-66.7, change_low_pct=-70.0, change_high_pct=-60.0, p_value=0.02)
    history = judged(
        # f1 regressed in run r0; its latest run r1 is no change: history, not the verdict
        row("r0", 1, value=300.0, verdict="regression", latest=False, **earlier),
        row("r1", 2, value=1000.0, verdict="no change", change_pct=1.0, p_value=0.7),
        row(
            "r1",
            2,
            fingerprint="f2",
            metric="mdtest_check file_create_ops_s",
            unit="ops/s",
            value=500.0,
            verdict="regression",
            change_pct=-50.0,
            change_low_pct=-55.2,
            change_high_pct=-44.1,
            p_value=0.0012,
            baseline="runs r-4..r0 (15 repetitions)",
            against="history",
        ),
        # judged against its reference floor alone (no change measured): a failing value,
        # not also a regression
        row(
            "r1",
            2,
            fingerprint="f3",
            value=50.0,
            verdict="regression",
            band_low=1000.0,
            against="reference",
        ),
    )
    v = verdict([run()], PASSING, history)
    assert v.word == "REGRESSED"
    assert v.reasons == (
        "mdtest_check file_create_ops_s on local: 500 ops/s, -50.0% (95% interval -55.2 to "
        "-44.1%) against runs r-4..r0 (15 repetitions) (p 0.0012; run r1)",
    )


# The adaptive campaign's values: ReFrame records reference 0 without bounds for a check
# configs/references gives none.
ADAPTIVE = perf(
    *[
        ["adaptive_check", variable, "local", 800.0 + i, 0.0, None, None, "MiB/s", "pass"]
        for variable in ("adaptive_mib_s", "mpiio_mib_s", "fpp_mib_s")
        for i in range(12)
    ]
)


def test_references_that_cannot_fail_are_not_judged_never_pass():
    v = verdict([run(results={"pass": 12})], ADAPTIVE, judged())
    assert v.word == "NOT JUDGED"
    assert v.reasons == (
        "12 test cases ran and passed, but nothing could fail",
        "adaptive_check adaptive_mib_s on local: 12 values not judged, no reference that can "
        "fail (reference 0)",
        "adaptive_check fpp_mib_s on local: 12 values not judged, no reference that can fail "
        "(reference 0)",
        "adaptive_check mpiio_mib_s on local: 12 values not judged, no reference that can fail "
        "(reference 0)",
    )
    # nor do a floor of 0 (reference 100, lower -1: 0..inf) and a missing reference
    vacuous = perf(
        ["ior_check", "write_mib_s", "local", 900.0, 100.0, -1.0, None, "MiB/s", "pass"],
        ["ior_check", "read_mib_s", "local", 900.0, None, None, None, "MiB/s", "pass"],
    )
    v = verdict([run()], vacuous, judged())
    assert v.word == "NOT JUDGED"
    assert v.reasons[1:] == (
        "ior_check read_mib_s on local: 1 value not judged, no reference that can fail "
        "(no reference)",
        "ior_check write_mib_s on local: 1 value not judged, no reference that can fail "
        "(band 0..inf)",
    )


def test_a_pass_says_what_could_not_fail():
    """A floor that can fail beside references that cannot: PASS, the others named."""
    both = pd.concat([PASSING, ADAPTIVE.head(2)], ignore_index=True)
    v = verdict([run()], both, judged())
    assert v.word == "PASS"
    assert v.reasons == (
        "2 test cases ran and passed",
        "1 value within references that can fail",
        "adaptive_check adaptive_mib_s on local: 2 values not judged, no reference that can "
        "fail (reference 0)",
    )


def test_a_baseline_judges_where_the_reference_cannot():
    """Without a reference that can fail, a series judged against its baseline passes; one
    too noisy to judge does not, and says why."""
    one = ADAPTIVE.head(1)
    fine = judged(row(verdict="no change", change_pct=2.0, baseline="runs r1..r4"))
    v = verdict([run()], one, fine)
    assert v.word == "PASS"
    assert v.reasons[1] == "latest runs against their baselines: 1 no change"
    why = "too noisy: CoV 0.62 of 9 repetitions, smallest detectable change 140%"
    noisy = judged(row(verdict="too noisy", basis=why))
    v = verdict([run()], one, noisy)
    assert v.word == "NOT JUDGED"
    assert v.reasons[-1] == f"iomodel_check ssf_write_mib_s on local: too noisy ({why}; run r1)"
    # series alike in why they were not judged: one line
    short = judged(row(), row(fingerprint="f2", metric="iomodel_check fpp_write_mib_s"))
    assert verdict([run()], one, short).reasons[-1] == (
        "2 series not judged: no reference and not enough history (e.g. iomodel_check "
        "ssf_write_mib_s on local)"
    )


def test_which_references_can_fail():
    from iostudy.report.verdict import can_fail

    inf, nan = math.inf, math.nan
    cannot = [(0, inf), (-inf, inf), (nan, nan), (-5, inf)]
    can = [(100, inf), (-inf, 50), (0, 50), (100, nan)]
    assert [can_fail(*b) for b in cannot] == [False] * 4
    assert [can_fail(*b) for b in can] == [True] * 4


def test_a_study_without_checks_is_data():
    v = verdict([run(results={})], perf(), judged(), jobs=3)
    assert v.word == "DATA"
    assert v.reasons == (
        "a characterization of 3 job logs: no checks in this study to pass or fail",
    )


def test_long_lists_are_cut_and_counted():
    values = perf(*[[f"c{i}", "v", "local", 1.0, 2.0, 0.0, 0.0, "s", "fail"] for i in range(12)])
    v = verdict([run()], values, judged())
    assert len(v.reasons) == 9 and v.reasons[-1].startswith("... and 4 more failing variables")


def test_a_run_without_its_manifest_cannot_pass():
    """Its values may all pass, but what the run left out is unknown: INCOMPLETE, saying why."""
    lost = {"run_id": "r9", "system": "site-b/local", "status": "passed", "_manifest": None}
    v = verdict([run(), lost], PASSING, judged())
    assert v.word == "INCOMPLETE"
    assert v.reasons == (
        "run r9: its manifest is missing (not found under --results, or left "
        "out of its site's bundle): what it ran and what it did not is "
        "unknown",
    )
    tree = {"run_id": "t1", "system": "facility", "status": "log tree", "_manifest": None}
    assert verdict([tree], perf(), judged(), jobs=3).word == "DATA"  # a log tree has none
