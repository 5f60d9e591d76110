"""The diagnosis rules (iostudy.metrics.diagnose), each on facts worked out by hand: it fires on
its pathological job, with the numbers that fired it, and not on a well-behaved one; and the
thresholds file is validated."""

import json

import pandas as pd
import pytest

from iostudy.core import config
from iostudy.metrics import diagnose

MIB = 1 << 20

# A well-behaved job: 4 ranks, 64 MiB each in 4 MiB aligned writes to their own files, little
# metadata time, one file per rank, no STDIO, no read.
GOOD = {
    "log": "good.darshan", "jobid": 1, "run_id": "r", "account": "p", "log_sha256": "g",
    "nprocs": 4, "strategy": "N:N", "bytes_read": 0, "bytes_written": 256 * MIB,
    "md_cost_pct": 2.0, "files": 4, "files_per_proc": 1.0,
    "posix_reads": 0, "posix_writes": 64, "small_reads": 0, "small_writes": 0, "unaligned": 0,
    "stdio_bytes": 0, "posix_bytes": 256 * MIB, "meta_s": 0.01, "shared_indep_ops": 0,
    "shared_coll_ops": 0, "posix_read_bytes": 0, "read_extent": 0, "ranks_moving": 4,
    "busiest_bytes": 64 * MIB, "idlest_bytes": 64 * MIB,
}  # fmt: skip
# Each rule's own pathological job: the good one with what the rule looks for.
SICK = {
    "small-writes": {"posix_writes": 5000, "small_writes": 4990},
    "small-reads": {"posix_reads": 3000, "small_reads": 2000},
    "misaligned": {"unaligned": 16},  # 16 of 64 writes: 25%
    "metadata-dominated": {"md_cost_pct": 80.0, "meta_s": 3.0},
    "rank0-only": {"strategy": "rank-0"},
    "shared-file-independent": {"shared_indep_ops": 4000, "shared_coll_ops": 8},
    "many-files": {"files": 400, "files_per_proc": 100.0},
    "stdio-heavy": {"stdio_bytes": 64 * MIB, "posix_bytes": 192 * MIB},
    "rank-imbalance": {"idlest_bytes": 16 * MIB},  # 75% less than the busiest
    "repeated-reads": {"posix_read_bytes": 30 * MIB, "read_extent": 10 * MIB},
}
SAID = {
    "small-writes": "4,990 of 5,000 POSIX writes (100%) under 1 MiB",
    "small-reads": "2,000 of 3,000 POSIX reads (67%) under 1 MiB",
    "misaligned": "16 of 64 POSIX accesses (25%) not aligned",
    "metadata-dominated": "metadata 80% of the I/O time (3 s over the processes)",
    "rank0-only": "rank 0 of 4 processes moved all 256.0 MiB",
    "shared-file-independent": "4,000 of 4,008 MPI-IO operations on shared files independent",
    "many-files": "400 files for 4 processes (100 per process)",
    "stdio-heavy": "STDIO moved 64.0 MiB, 25% of the bytes",
    "rank-imbalance": "the busiest of 4 ranks moved 64.0 MiB, the least busy 16.0 MiB",
    "repeated-reads": "30.0 MiB read from files of 10.0 MiB (3.0 times)",
}


def facts(*changes) -> pd.DataFrame:
    return pd.DataFrame([{**GOOD, "log": f"job{i}", **c} for i, c in enumerate(changes)])


def test_the_rules_are_the_configured_ones():
    limits = diagnose.thresholds()
    assert [r.name for r in diagnose.RULES] == list(limits) == list(SICK)


@pytest.mark.parametrize("rule", list(SICK))
def test_each_rule_fires_on_its_own_job_only(rule):
    found = diagnose.diagnose(facts(GOOD, SICK[rule]), diagnose.thresholds())
    assert found["log"].tolist() == ["job1"], found
    assert found["rule"].tolist() == [rule]
    assert found["found"].tolist() == [SAID[rule]]
    assert found["advice"].iloc[0]


def test_thresholds_are_where_they_fire():
    """Drishti's triggers fire above their thresholds (as Drishti compares), the others from
    them; just short of either, nothing fires (values by hand)."""
    limits = diagnose.thresholds()
    short = facts({"posix_writes": 1000, "small_writes": 1000},  # count not above 1,000
                  {"posix_writes": 20000, "small_writes": 2000},  # share not above 10%
                  {"strategy": "rank-0", "nprocs": 1},  # one process is not a parallel job
                  {"md_cost_pct": 90.0, "meta_s": 0.05})  # share, but 0.05 s in all  # fmt: skip
    assert diagnose.diagnose(short, limits).empty
    above = facts({"posix_writes": 10000, "small_writes": 1001},
                  {"files": 256, "files_per_proc": 64.0})  # from 64 per process  # fmt: skip
    assert diagnose.diagnose(above, limits)["rule"].tolist() == ["small-writes", "many-files"]


def test_a_bad_threshold_is_refused_naming_file_and_key(tmp_path):
    path = tmp_path / "diagnoses.json"
    path.write_text(json.dumps({"rules": {"misaligned": {"share": 2}}}))
    with pytest.raises(config.ConfigError, match=r"diagnoses.json.*rules.misaligned.share"):
        diagnose.thresholds(path)
    path.write_text(json.dumps({"rules": {"small-writes": {"share": 0.5}}}))
    limits = diagnose.thresholds(path)  # what is left out takes its default
    assert limits["small-writes"] == {"share": 0.5, "min_count": 1000}
    assert limits["many-files"] == {"per_process": 64}


def test_the_reports_tables_count_jobs_per_rule_and_project():
    from iostudy.report import diagnoses

    jobs = facts(GOOD, SICK["small-writes"], {**SICK["small-writes"], **SICK["many-files"]},
                 {**SICK["misaligned"], "account": None})  # fmt: skip
    jobs["log_sha256"] = ["a", "b", "c", "d"]
    found = diagnose.diagnose(jobs, diagnose.thresholds())
    rules = diagnoses.by_rule(found, len(jobs))
    # two jobs of small writes (of 4: 50%), one of misaligned (its project unknown), one of
    # many files; the rules that did not fire are not listed
    assert rules[["rule", "jobs", "jobs_pct", "projects"]].values.tolist() == [
        ["small-writes", 2, 50.0, 1],
        ["misaligned", 1, 25.0, 1],
        ["many-files", 1, 25.0, 1],
    ]
    projects = diagnoses.by_project(found, jobs)
    assert projects.values.tolist() == [
        ["p", 3, 2, "small-writes (2), many-files (1)"],
        ["(unknown)", 1, 1, "misaligned (1)"],
    ]
