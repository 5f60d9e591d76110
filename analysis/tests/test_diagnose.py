"""The diagnosis rules (iostudy.metrics.diagnose), each on facts worked out by hand: it fires on
its pathological job, with the numbers that fired it, and not on a well-behaved one; and the
thresholds file is validated."""

import json

import pandas as pd
import pytest

from iostudy.cli.diagnose import as_text
from iostudy.core import config
from iostudy.metrics import diagnose

MIB = 1 << 20

# A well-behaved job: 4 ranks, 64 MiB each in 4 MiB aligned, sequential writes to their own
# files, little metadata time, one file per rank, no STDIO, no read, no MPI-IO.
GOOD = {
    "log_path": "good.darshan",
    "jobid": 1,
    "run_id": "r",
    "account": "p",
    "log_sha256": "g",
    "nprocs": 4,
    "strategy": "N:N",
    "bytes_read": 0,
    "bytes_written": 256 * MIB,
    "md_cost_pct": 2.0,
    "files": 4,
    "files_per_proc": 1.0,
    "posix_reads": 0,
    "posix_writes": 64,
    "small_reads": 0,
    "small_writes": 0,
    "unaligned": 0,
    "unaligned_mem": 0,
    "seq_reads": 0,
    "seq_writes": 64,
    "shared_reads": 0,
    "shared_writes": 0,
    "shared_small_reads": 0,
    "shared_small_writes": 0,
    "stdio_bytes": 0,
    "posix_bytes": 256 * MIB,
    "mpiio_bytes": 0,
    "meta_s": 0.01,
    "file_meta_s": 0.003,
    "shared_size_spread": None,
    "shared_time_spread": None,
    "coll_reads": 0,
    "indep_reads": 0,
    "coll_writes": 0,
    "indep_writes": 0,
    "posix_read_bytes": 0,
    "read_extent": 0,
    "posix_write_bytes": 256 * MIB,
    "write_extent": 256 * MIB,
    "ranks_moving": 4,
    "busiest_bytes": 64 * MIB,
    "idlest_bytes": 64 * MIB,
    "busiest_rank": 0,
    "idlest_rank": 1,
    "write_spread": None,
    "read_spread": None,
}
# Each rule's own pathological job: the good one with what the rule looks for.
SICK = {
    "stdio-heavy": {"stdio_bytes": 64 * MIB, "posix_bytes": 192 * MIB},
    "small-reads": {"posix_reads": 3000, "small_reads": 2000, "seq_reads": 3000},
    "small-writes": {"posix_writes": 5000, "small_writes": 4990, "seq_writes": 5000},
    "misaligned-memory": {"unaligned_mem": 8},  # 8 of 64 accesses: 12.5%
    "misaligned-file": {"unaligned": 16},  # 16 of 64 writes: 25%
    "repeated-reads": {"posix_read_bytes": 30 * MIB, "read_extent": 10 * MIB},
    "repeated-writes": {"posix_write_bytes": 512 * MIB},  # twice the 256 MiB written to
    "random-reads": {"posix_reads": 4000, "seq_reads": 1000},
    "random-writes": {"posix_writes": 4064, "seq_writes": 64},
    "shared-small-reads": {"shared_reads": 2000, "shared_small_reads": 1500},
    "shared-small-writes": {"shared_writes": 3000, "shared_small_writes": 3000},
    "slow-metadata": {"file_meta_s": 31.0},
    "shared-size-imbalance": {"shared_size_spread": 0.5},
    "stragglers": {"shared_time_spread": 0.25},
    "write-imbalance": {"write_spread": 0.875},
    "read-imbalance": {"read_spread": 0.5},
    "no-collective-reads": {"indep_reads": 2000},
    "no-collective-writes": {"indep_writes": 1200, "coll_writes": 0},
    "metadata-dominated": {"md_cost_pct": 80.0, "meta_s": 3.0},
    "rank0-only": {"strategy": "rank-0"},
    "many-files": {"files": 400, "files_per_proc": 100.0},
    "rank-imbalance": {"idlest_bytes": 16 * MIB},  # 75% less than the busiest
}
SAID = {
    "stdio-heavy": "STDIO moved 64 MiB, 25% of the bytes (STDIO, POSIX beyond MPI-IO, MPI-IO)",
    "small-reads": "2,000 of 3,000 POSIX reads (67%) at most 1 MiB",
    "small-writes": "4,990 of 5,000 POSIX writes (100%) at most 1 MiB",
    "misaligned-memory": "8 of 64 POSIX accesses (12%) from memory not aligned to the "
    "system's boundary",
    "misaligned-file": "16 of 64 POSIX accesses (25%) at offsets not aligned to the file "
    "system's block",
    "repeated-reads": "30.0 MiB read in files of 10.0 MiB (3.0 times)",
    "repeated-writes": "512.0 MiB written in files of 256.0 MiB (2.0 times)",
    "random-reads": "3,000 of 4,000 POSIX reads (75%) not at a higher offset than the previous one",
    "random-writes": "4,000 of 4,064 POSIX writes (98%) not at a higher offset than the "
    "previous one",
    "shared-small-reads": "1,500 of 2,000 POSIX reads (75%) to files shared by all 4 "
    "processes at most 1 MiB",
    "shared-small-writes": "3,000 of 3,000 POSIX writes (100%) to files shared by all 4 "
    "processes at most 1 MiB",
    "slow-metadata": "a file's metadata took 31 s (its records' ranks together)",
    "shared-size-imbalance": "in a file shared by all 4 processes, its slowest and fastest "
    "ranks' bytes differ by 50% of the file's bytes",
    "stragglers": "in a file shared by all 4 processes, its slowest and fastest ranks' "
    "I/O time differ by 25% of the file's I/O time",
    "write-imbalance": "in a file of several processes (not all), the rank that wrote least wrote "
    "88% less than the rank that wrote most",
    "read-imbalance": "in a file of several processes (not all), the rank that read least read "
    "50% less than the rank that read most",
    "no-collective-reads": "2,000 of 2,000 MPI-IO reads (100%) independent",
    "no-collective-writes": "1,200 of 1,200 MPI-IO writes (100%) independent",
    "metadata-dominated": "metadata 80% of the I/O time (3 s over the processes)",
    "rank0-only": "rank 0 of 4 processes moved all 256.0 MiB",
    "many-files": "400 files for 4 processes (100 per process)",
    "rank-imbalance": "of the 4 processes that moved bytes in records of their own, the "
    "busiest (rank 0) moved 64 MiB, the least busy (rank 1) "
    "16 MiB",
}


def facts(*changes) -> pd.DataFrame:
    return pd.DataFrame([{**GOOD, "log_path": f"job{i}", **c} for i, c in enumerate(changes)])


def test_the_rules_are_the_configured_ones():
    limits = diagnose.thresholds()
    assert [r.name for r in diagnose.RULES] == list(SICK)
    assert set(SICK) <= set(limits)


@pytest.mark.parametrize("rule", list(SICK))
def test_each_rule_fires_on_its_own_job_only(rule):
    found = diagnose.diagnose(facts(GOOD, SICK[rule]), diagnose.thresholds())
    assert found["log_path"].tolist() == ["job1"], found
    assert found["rule"].tolist() == [rule]
    assert found["found"].tolist() == [SAID[rule]]
    assert found["advice"].iloc[0]


def test_thresholds_are_where_they_fire():
    """Drishti's triggers fire above their thresholds (as Drishti compares), the others from
    them; just short of either, nothing fires (values by hand)."""
    limits = diagnose.thresholds()
    short = facts(
        {"posix_writes": 1000, "small_writes": 1000, "seq_writes": 1000},  # not above 1,000
        {"posix_writes": 20000, "small_writes": 2000, "seq_writes": 20000},  # not above 10%
        {"strategy": "rank-0", "nprocs": 1},  # one process is not a parallel job
        {"md_cost_pct": 90.0, "meta_s": 0.05},  # share, but 0.05 s in all
        {"posix_writes": 5000, "seq_writes": 4000},  # 1,000 random (20%): not above either
        {"shared_size_spread": 0.15, "shared_time_spread": 0.15},  # Drishti's 15%: not above
        {"write_spread": 0.3, "file_meta_s": 30.0},  # 30%, 30 s: not above
        {"indep_writes": 1000},  # 1,000 independent writes: not above
    )
    assert diagnose.diagnose(short, limits).empty
    above = facts(
        {"posix_writes": 10000, "small_writes": 1001, "seq_writes": 10000},
        {"files": 256, "files_per_proc": 64.0},  # from 64 per process
        {"posix_writes": 5000, "seq_writes": 3999},  # 1,001 random: 20.02%
    )
    fired = diagnose.diagnose(above, limits)[["log_path", "rule"]].values.tolist()
    assert fired == [["job0", "small-writes"], ["job2", "random-writes"], ["job1", "many-files"]]


def test_a_bad_threshold_is_refused_naming_file_and_key(tmp_path):
    path = tmp_path / "diagnoses.json"
    path.write_text(json.dumps({"rules": {"misaligned-file": {"share": 2}}}))
    with pytest.raises(config.ConfigError, match=r"diagnoses.json.*rules.misaligned-file.share"):
        diagnose.thresholds(path)
    path.write_text(json.dumps({"rules": {"small-writes": {"share": 0.5}}}))
    limits = diagnose.thresholds(path)  # what is left out takes its default
    assert limits["small-writes"] == {"share": 0.5, "min_count": 1000}
    assert limits["many-files"] == {"per_process": 64}


def test_the_reports_tables_count_jobs_per_rule_and_project():
    from iostudy.report import diagnoses

    jobs = facts(
        GOOD,
        SICK["small-writes"],
        {**SICK["small-writes"], **SICK["many-files"]},
        {**SICK["misaligned-file"], "account": None},
    )
    jobs["log_sha256"] = ["a", "b", "c", "d"]
    found = diagnose.diagnose(jobs, diagnose.thresholds())
    rules = diagnoses.by_rule(found, len(jobs))
    # two jobs of small writes (of 4: 50%), one of misaligned (its project unknown), one of
    # many files; the rules that did not fire are not listed
    assert rules[["rule", "jobs", "jobs_pct", "projects"]].values.tolist() == [
        ["small-writes", 2, 50.0, 1],
        ["misaligned-file", 1, 25.0, 1],
        ["many-files", 1, 25.0, 1],
    ]
    projects = diagnoses.by_project(found, jobs)
    assert projects.values.tolist() == [
        ["p", 3, 2, "small-writes (2), many-files (1)"],
        ["(unknown)", 1, 1, "misaligned-file (1)"],
    ]


def test_a_findings_files_and_ranks_are_pydarshans_top_three(tmp_path):
    """MACSio's log (16 ranks, HDF5 through POSIX): the small-writes finding names the three
    files with the most writes of at most 1 MiB, counted here from PyDarshan's records, and
    all 16 ranks (its files are shared by all: rank -1 records)."""
    import darshan

    from iostudy.cli.cli import main
    from iostudy.store import store as store_mod

    from .testdata import corpus_logs

    log = next(p for p in corpus_logs() if p.name.startswith("shane_macsio_"))
    store = tmp_path / "store"
    assert main(["ingest", str(log), "--store", str(store), "--study", "logs"]) == 0
    _, found = diagnose.findings(store_mod.connect(store), diagnose.thresholds())
    small = found.set_index("rule").loc["small-writes"]
    report = darshan.DarshanReport(str(log), read_all=True)
    counters = report.records["POSIX"].to_df()["counters"]
    bins = [f"POSIX_SIZE_WRITE_{b}" for b in ("0_100", "100_1K", "1K_10K", "10K_100K", "100K_1M")]
    per_file = counters[bins].sum(axis=1).groupby(counters["id"]).sum().sort_values()
    top = per_file[per_file > 0].iloc[::-1][:3]
    said = [f"{report.name_records[i]} ({n:,} writes at most 1 MiB)" for i, n in top.items()]
    assert small["files"] == "; ".join(said)
    assert small["ranks"] == "all 16" and small["drishti"] == "P06"
    assert small["history"] == "first job of its code" and small["executable"] == "macsio"


def test_history_says_whether_a_finding_is_new_or_usual_for_its_code():
    """Four jobs of one code in time order, small writes in the 2nd, 3rd and 4th (by hand):
    new at the 2nd (none of 1 earlier), usual at the 3rd (1 of 2) and 4th (2 of 3); a job of
    another code is its first."""
    sick = SICK["small-writes"]
    jobs = facts(GOOD, sick, sick, sick, {**sick, "exe": "/bin/other -x"})
    jobs["log_sha256"] = ["a", "b", "c", "d", "e"]
    jobs["exe"] = ["/opt/lmp -in x"] * 4 + ["/bin/other -x"]
    days = ["2026-01-01", "2026-01-02", "2026-01-03", "2026-01-04", "2026-01-05"]
    jobs["start"] = pd.to_datetime(days)
    found = diagnose.with_history(diagnose.diagnose(jobs, diagnose.thresholds()), jobs)
    assert found["executable"].tolist() == ["lmp"] * 3 + ["other"]
    assert found.set_index("log_sha256")["history"].to_dict() == {
        "b": "new: none of 1 earlier jobs of its code",
        "c": "usual: 1 of 2 earlier jobs of its code",
        "d": "usual: 2 of 3 earlier jobs of its code",
        "e": "first job of its code",
    }


def test_a_jobs_code_is_its_executables_file_name():
    """Darshan's exe line: the program's path, then its arguments (by hand)."""
    from iostudy.metrics.diagnose_facts import code_of

    lines = pd.Series(["/opt/lammps/bin/lmp -in in.lj", "a.out", "./ior -a MPIIO", None, "  "])
    assert code_of(lines).tolist()[:3] == ["lmp", "a.out", "ior"]
    assert code_of(lines).isna().tolist()[3:] == [True, True]


def test_the_text_for_a_reader_groups_the_findings_by_job():
    jobs = facts(SICK["small-writes"], {**SICK["small-writes"], **SICK["many-files"]})
    jobs["log_sha256"] = ["a", "b"]
    found = diagnose.diagnose(jobs, diagnose.thresholds()).assign(executable="lmp")
    lines = as_text(found).splitlines()
    heads = [line for line in lines if not line.startswith(" ")]
    assert heads == ["job0 (job 1, code lmp):", "job1 (job 1, code lmp):"]
    job1 = lines[lines.index(heads[1]) + 1 :]
    assert [line.split(":")[0] for line in job1 if not line.startswith("    ")] == [
        "  small-writes [Drishti P06]",
        "  many-files",
    ]
    assert f"    advice: {diagnose.RULES[2].advice}" in lines
    assert as_text(found.iloc[:0]) == "no finding"
