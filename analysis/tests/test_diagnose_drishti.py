"""iostudy diagnose beside Drishti (drishti-io 0.8, an independent oracle) on the shared test
logs: for the triggers both have (tests/drishti.py's PAIRS), every log on which they disagree
has its reason named from the log's own counters, and a log Drishti cannot read is named with
its error."""

import pytest

from iostudy.cli.cli import main
from iostudy.metrics import diagnose
from iostudy.store import store as store_mod

from . import drishti
from .testdata import DARSHAN_LOGS as LOGS_DIR

# Drishti runs on every test log (half a minute)
pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def compared(tmp_path_factory):
    """(log path -> iostudy's rules, Drishti's codes or None, and its error)."""
    store = tmp_path_factory.mktemp("drishti") / "store"
    assert main(["ingest", str(LOGS_DIR), "--store", str(store), "--study", "logs"]) == 0
    facts = diagnose.job_facts(store_mod.connect(store))
    found = diagnose.diagnose(facts, diagnose.thresholds())
    ours = {LOGS_DIR.parent / log: set() for log in facts["log"]}
    for row in found.itertuples():
        ours[LOGS_DIR.parent / row.log].add(row.rule)
    return ours, drishti.all_triggers(sorted(ours))


def test_every_disagreement_with_drishti_has_a_named_reason(compared):
    ours, theirs = compared
    limits = diagnose.thresholds()
    unexplained, explained, agreed = [], [], 0
    for log, (codes, _) in theirs.items():
        if codes is None:
            continue  # the next test
        differ = drishti.disagreements(ours[log], codes)
        agreed += len(drishti.PAIRS) - len(differ)
        for rule, mine, its in differ:
            reason = drishti.why(log, rule, mine, limits)
            (explained if reason else unexplained).append((log.name, rule, mine, its, reason))
    assert not unexplained, unexplained
    # the shared logs: six agree on misaligned requests, both fire nothing else of the pairs
    # but STDIO and metadata, where the reasons differ (printed with -s)
    print("\n".join(f"{log}: {rule}: iostudy {mine}, Drishti {its}: {reason}"
                    for log, rule, mine, its, reason in explained))  # fmt: skip
    assert agreed >= 0.95 * len(drishti.PAIRS) * len(theirs)
    both_misaligned = [log for log, (codes, _) in theirs.items()
                       if codes and "P08" in codes and "misaligned" in ours[log]]  # fmt: skip
    assert len(both_misaligned) >= 1


def test_logs_drishti_cannot_read_are_named(compared):
    _, theirs = compared
    failed = {log.name: error for log, (codes, error) in theirs.items() if codes is None}
    # Drishti 0.8 fails on a log whose MPI-IO hints are missing (handle_darshan.py, 'cb_nodes');
    # iostudy reads it (its STDIO module is marked partial)
    assert set(failed) <= {"partial_data_stdio.darshan"}, failed
    assert len(failed) < len(theirs) / 10
