"""The report's verdict from hand-made runs, perf rows and judged results: each word and the
reasons a reader acts on (the rules: iostudy.report.verdict's docstring)."""

import pandas as pd

from iostudy.report.verdict import verdict

PERF_COLUMNS = ["check", "variable", "system", "value", "reference", "unit", "result"]
JUDGED_COLUMNS = [
    "label",
    "fingerprint",
    "started",
    "run_id",
    "metric",
    "unit",
    "value",
    "change_pct",
    "verdict",
    "direction",
    "against",
    "basis",
]
HIST = "history median 1000 (900..1100, 3 runs)"


def run(run_id="r1", status="passed", results=None, not_run=None, **manifest):
    m = {"results": results if results is not None else {"pass": 2}, **manifest}
    if not_run is not None:
        m["not_run"] = not_run
    return {"run_id": run_id, "system": "local", "status": status, "_manifest": m}


def perf(*rows):
    return pd.DataFrame(list(rows), columns=PERF_COLUMNS)


def judged(*rows):
    return pd.DataFrame(list(rows), columns=JUDGED_COLUMNS)


PASSING = perf(["ior_check", "write_mib_s", "local", 900.0, 800.0, "MiB/s", "pass"])
NOT_BUILT = "ior is not built: no build/spack/local/view/bin/ior (run `make spack SYSTEM=local`)"


def test_every_case_ran_and_passed():
    v = verdict([run()], PASSING, judged())
    assert v.word == "PASS"
    assert v.reasons == ("2 test cases ran and passed, 1 value within the references",)


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
        ["ior_check", "write_mib_s", "local", 900.0, 800.0, "MiB/s", "pass"],
        ["ior_check", "write_mib_s", "local", 300.0, 800.0, "MiB/s", "fail"],
        ["ior_check", "write_mib_s", "local", 500.0, 800.0, "MiB/s", "fail"],
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
    history = judged(
        [
            "local",
            "f1",
            "2026-03-01",
            "r0",
            "ior write_mib_s",
            "MiB/s",
            300.0,
            -66.7,
            "regression",
            "higher",
            "history",
            HIST,
        ],
        [
            "local",
            "f1",
            "2026-03-02",
            "r1",
            "ior write_mib_s",
            "MiB/s",
            1000.0,
            0.0,
            "no change",
            "higher",
            "history",
            HIST,
        ],
        [
            "local",
            "f2",
            "2026-03-02",
            "r1",
            "mdtest create",
            "ops/s",
            500.0,
            -50.0,
            "regression",
            "higher",
            "history",
            HIST,
        ],
        # worse than its reference floor only: a failing value, not a regression
        [
            "local",
            "f3",
            "2026-03-02",
            "r1",
            "mdtest stat",
            "ops/s",
            50.0,
            -95.0,
            "regression",
            "higher",
            "reference",
            "band 1000..inf",
        ],
    )
    v = verdict([run()], PASSING, history)
    assert v.word == "REGRESSED"  # f1's regression is history: its latest run is ok
    assert v.reasons == (
        f"mdtest create on local: 500 ops/s, -50.0% against the median ({HIST}; run r1)",
    )


def test_a_study_without_checks_is_data():
    v = verdict([run(results={})], perf(), judged(), jobs=3)
    assert v.word == "DATA"
    assert v.reasons == (
        "a characterization of 3 job logs: no checks in this study to pass or fail",
    )


def test_long_lists_are_cut_and_counted():
    values = perf(*[[f"c{i}", "v", "local", 1.0, 2.0, "s", "fail"] for i in range(12)])
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
