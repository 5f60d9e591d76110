"""The diagnosis rules on programs with known behaviour, run under iostudy's runtime: every rule
fires on a program written to show it, with the numbers, files and ranks the program's pattern
gives, and no rule fires on the well-behaved ones (but one of the ranks' times, where they did the
same work: see BY_TIME). The logs go through the real path: a log tree, `iostudy ingest`,
`iostudy diagnose --json` with the default thresholds (slow-metadata also with its threshold
lowered: see LOWERED). Drishti 0.8 (tests/drishti.py) judges the same logs.

The programs: coreutils (dd, seq, cat), runtime/tests/programs/many_files.c, and
runtime/tests/programs/io_patterns.c on 2 ranks of Open MPI (3 for ``partial``; its header gives
each pattern). Open MPI runs with its shared-file-pointer component ``individual`` (files of its
own per rank, opened, never written while the program uses no shared file pointer): the default,
``sm``, makes a file beside every MPI-IO file (in Open MPI's session directory, opened by every
rank, 40 bytes written by one), a shared file with one rank's bytes that no program here asks for.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from iostudy.cli.cli import main
from iostudy.metrics import diagnose

from .diagnosejson import diagnose_json
from .rundirs import RUNTIME, runtime_env
from .testdata import REPO_ROOT

PROGRAMS = REPO_ROOT / "build" / "runtime" / "tests"
MIB = 1 << 20
#: io_patterns modes run, and on how many ranks
MODES = {
    "small": 2,
    "rank0": 2,
    "indep": 2,
    "imbalance": 2,
    "meta": 2,
    "good": 2,
    "memalign": 2,
    "backward": 2,
    "sharedsmall": 2,
    "sizeimb": 2,
    "straggler": 2,
    "partial": 3,
    "rewrite": 2,
}
#: seconds of one file's metadata above which slow-metadata fires in the lowered run (and
#: Drishti's P17, metadata_time_rank): the default, 30 s, would take the meta program minutes;
#: the 50,000 opens, fstats and closes of each of its files take well over this anywhere
META_SECONDS = 0.01
#: rule -> its thresholds in a second run of diagnose, where its program shows it
LOWERED = {"slow-metadata": {"seconds": META_SECONDS}}


def run_plain(name: str, cmd: list, tree: Path, stdout=subprocess.DEVNULL) -> None:
    """cmd under the runtime, its log tree/<name>.darshan."""
    log = tree / f"{name}.darshan"
    subprocess.run(
        [str(c) for c in cmd], env=runtime_env(log), stdout=stdout, check=True, timeout=120
    )
    assert log.is_file(), f"{name}: the runtime wrote no log"


def run_mpi(mode: str, tree: Path, work: Path, jobid: int | None = None, ranks: int = 2) -> None:
    """io_patterns MODE on ``ranks`` ranks of Open MPI under the runtime, its log
    tree/<mode>.darshan (with Slurm's job id ``jobid`` when given)."""
    prog = PROGRAMS / "io_patterns-openmpi"
    launcher = shutil.which("mpirun.openmpi")
    if launcher is None or not prog.is_file():
        pytest.skip(f"needs mpirun.openmpi and {prog} (make setup builds it with Open MPI)")
    log = tree / f"{mode}.darshan"
    cmd = [
        launcher,
        "--oversubscribe",
        "--allow-run-as-root",
        "-np",
        str(ranks),
        "--mca",
        "sharedfp",
        "individual",
    ]
    for key in ("LD_PRELOAD", "DARSHAN_LOGFILE"):  # to the ranks, not to mpirun
        cmd += ["-x", f"{key}={runtime_env(log, mpi=True)[key]}"]
    if jobid is not None:
        cmd += ["-x", f"SLURM_JOB_ID={jobid}"]
    env = dict(
        os.environ,
        OMPI_ALLOW_RUN_AS_ROOT="1",
        OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
        OMPI_MCA_rmaps_base_oversubscribe="1",
    )
    env.pop("LD_PRELOAD", None)
    out = subprocess.run(
        cmd + [str(prog), str(work), mode], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and f"done {mode}" in out.stdout, out.stdout + out.stderr
    assert log.is_file(), f"{mode}: the runtime wrote no log"


def run_all(tree: Path, work: Path) -> None:
    """Every program, each writing its log into tree and its files into work."""
    two = work / "two-mib.dat"
    two.write_bytes(os.urandom(2 * MIB))
    run_plain(
        "dd-good",
        ["dd", "if=/dev/zero", f"of={work / 'good.dat'}", "bs=4M", "count=4", "status=none"],
        tree,
    )
    run_plain("dd-small", ["dd", f"if={two}", "of=/dev/null", "bs=100", "status=none"], tree)
    run_plain("cat-thrice", ["cat", two, two, two], tree)
    with open(work / "seq.txt", "w") as out:
        run_plain("seq", ["seq", "1", "400000"], tree, stdout=out)
    run_plain("many-files", [PROGRAMS / "many_files", work, "3000"], tree)
    for mode, ranks in MODES.items():
        run_mpi(mode, tree, work, ranks=ranks)


def run_diagnose(store: Path, out: Path, limits: dict | None = None) -> dict[str, dict]:
    """`iostudy diagnose --json` on the store (with ``limits``, a diagnoses.json's rules, when
    given): log name -> {rule: its finding's row}."""
    found: dict[str, dict] = {}
    for row in diagnose_json(store, out, limits):
        found.setdefault(Path(row["log_path"]).stem, {})[row["rule"]] = row
    return found


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    """Every program run, its logs ingested as one tree: root/tree, root/work, root/store."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    root = tmp_path_factory.mktemp("diagnose")
    (root / "tree").mkdir()
    (root / "work").mkdir()
    run_all(root / "tree", root / "work")
    args = ["ingest", str(root / "tree"), "--store", str(root / "store"), "--study", "diagnose"]
    assert main(args) == 0
    return root


@pytest.fixture(scope="module")
def findings(root) -> dict[str, dict[str, dict]]:
    """Log name -> {rule: its finding} with the default thresholds (every log has its entry)."""
    found = run_diagnose(root / "store", root / "found.json")
    return {log.stem: found.get(log.stem, {}) for log in (root / "tree").iterdir()}


@pytest.fixture(scope="module")
def lowered(root) -> dict[str, dict[str, dict]]:
    """The same with the thresholds of LOWERED."""
    return run_diagnose(root / "store", root / "lowered.json", LOWERED)


@dataclass(frozen=True)
class Shows:
    """A rule's program and what its finding says: exact text ({work}: the programs' directory),
    or a regular expression (re.compile) where the machine's timing decides a number."""

    program: str
    found: str | re.Pattern
    files: str | re.Pattern | None
    ranks: str | re.Pattern | None


def timed(pattern: str) -> re.Pattern:
    """The form of a text whose numbers are times (or ranks ordered by time)."""
    return re.compile(pattern)


SECONDS = r"[0-9.]+(e-[0-9]+)?"
PERCENT = r"[0-9]+%"
BOTH = r"meta[01]\.dat \(" + SECONDS + r" s of metadata\)"
META_FILES = timed(rf"{{work}}/{BOTH}; {{work}}/{BOTH}")  # the two ranks' files, by their time

# Every rule and the program that shows it, with the numbers worked out from the pattern.
EXPECTED = {
    # seq 1 400000: 9 numbers of 1 digit, 90 of 2, ..., 300,001 of 6 (100,000-400,000), each with
    # its newline: 9x2 + 90x3 + 900x4 + 9,000x5 + 90,000x6 + 300,001x7 = 2,688,895 bytes = 2.56
    # MiB, all through fwrite_unlocked (STDIO; glibc's own write of its buffer is not a call the
    # runtime sees): 100% (test_stdio_heavy_counts_what_seq_wrote checks the size)
    "stdio-heavy": Shows(
        "seq",
        "STDIO moved 2.56 MiB, 100% of the bytes (STDIO, POSIX beyond MPI-IO, MPI-IO)",
        "<STDOUT> (2.56 MiB moved)",
        "0 (the job's one process)",
    ),
    # 2 MiB (2,097,152 bytes) in reads of 100: 20,971 whole ones, one of 52, one at the end of
    # the file that returns 0
    "small-reads": Shows(
        "dd-small",
        "20,973 of 20,973 POSIX reads (100%) at most 1 MiB",
        "{work}/two-mib.dat (20,973 reads at most 1 MiB)",
        "0 (the job's one process)",
    ),
    # 2 ranks x 2,000 writes of 100 bytes
    "small-writes": Shows(
        "small",
        "4,000 of 4,000 POSIX writes (100%) at most 1 MiB",
        "{work}/small0.dat (2,000 writes at most 1 MiB); {work}/small1.dat "
        "(2,000 writes at most 1 MiB)",
        "0-1 (2 of 2 processes)",
    ),
    # 2 ranks x 8 writes of 1 MiB, 4 of each rank's from buffer + 1 (memory alignment: 8 bytes)
    "misaligned-memory": Shows(
        "memalign",
        "8 of 16 POSIX accesses (50%) from memory not aligned to the system's boundary",
        "{work}/memalign0.dat (4 unaligned "
        "accesses (memory)); {work}/memalign1.dat (4 unaligned accesses "
        "(memory))",
        "0-1 (2 of 2 processes)",
    ),
    # dd-small's 20,973 reads at 100 k (k = 0..20,971) and at 2,097,152 (the read that returns
    # 0); with the file system's 4,096-byte blocks, 100 k is aligned when 1,024 divides k (k = 0,
    # 1,024, ..., 20,480: 21 reads), and 2,097,152 = 512 x 4,096 is: 22 aligned, 20,951 not
    "misaligned-file": Shows(
        "dd-small",
        "20,951 of 20,973 POSIX accesses (100%) at offsets not aligned to the file system's block",
        "{work}/two-mib.dat (20,951 unaligned accesses (file))",
        "0 (the job's one process)",
    ),
    # the 2 MiB file read three times by one process
    "repeated-reads": Shows(
        "cat-thrice",
        "6.0 MiB read in files of 2.0 MiB (3.0 times)",
        "{work}/two-mib.dat (3.0 times its size)",
        "0 (the job's one process)",
    ),
    # 2 ranks x the same 1 MiB of its own file written 4 times: 8 MiB in 2 x 1 MiB
    "repeated-writes": Shows(
        "rewrite",
        "8.0 MiB written in files of 2.0 MiB (4.0 times)",
        "{work}/rewrite0.dat (4.0 times its size); {work}/rewrite1.dat (4.0 times its size)",
        "0-1 (2 of 2 processes)",
    ),
    # 2 ranks x 1,024 reads of 4 KiB from the last block to the first: the first is past the
    # previous offset (none: 0), the 1,023 others below it; 2,046 of 2,048
    "random-reads": Shows(
        "backward",
        "2,046 of 2,048 POSIX reads (100%) not at a higher offset than the previous one",
        "{work}/backward0.dat (1,023 reads out of "
        "order); {work}/backward1.dat (1,023 reads out of order)",
        "0-1 (2 of 2 processes)",
    ),
    # the same of its 1,024 writes
    "random-writes": Shows(
        "backward",
        "2,046 of 2,048 POSIX writes (100%) not at a higher offset than the previous one",
        "{work}/backward0.dat (1,023 writes out of "
        "order); {work}/backward1.dat (1,023 writes out of order)",
        "0-1 (2 of 2 processes)",
    ),
    # one file opened by both ranks (one record of rank -1), each 600 reads of 4 KiB
    "shared-small-reads": Shows(
        "sharedsmall",
        "1,200 of 1,200 POSIX reads (100%) to files shared by all 2 processes at most 1 MiB",
        "{work}/sharedsmall.dat (1,200 reads at most 1 MiB)",
        "all 2",
    ),
    # and 600 writes of 4 KiB each
    "shared-small-writes": Shows(
        "sharedsmall",
        "1,200 of 1,200 POSIX writes (100%) to files shared by all 2 processes at most 1 MiB",
        "{work}/sharedsmall.dat (1,200 writes at most 1 MiB)",
        "all 2",
    ),
    # 50,000 opens, fstats and closes of each rank's own file, its time over META_SECONDS
    # (test_slow_metadata_says_the_log_s_time checks the seconds against the log)
    "slow-metadata": Shows(
        "meta",
        timed(
            r"a file's metadata took " + SECONDS + r" s \(its "
            r"records' ranks together\)"
        ),
        META_FILES,
        "0-1 (2 of 2 processes)",
    ),
    # one file of both ranks: rank 0 wrote 8 MiB, rank 1 1 MiB: |8 - 1| / 9 = 78%; which of
    # the two took longer is the machine's
    "shared-size-imbalance": Shows(
        "sizeimb",
        "in a file shared by all 2 processes, its slowest "
        "and fastest ranks' bytes differ by 78% of the file's bytes",
        "{work}/sizeimb.dat (78% of its bytes apart)",
        timed(
            r"0 \(slowest\), 1 \(fastest\)|1 \(slowest\), 0 "
            r"\(fastest\)"
        ),
    ),
    # one file of both ranks, 1 MiB each; rank 1's 500,000 lseeks are its metadata time: about
    # all of the file's time (the share is the machine's), rank 1 the slowest
    "stragglers": Shows(
        "straggler",
        timed(
            r"in a file shared by all 2 processes, its slowest "
            rf"and fastest ranks' I/O time differ by {PERCENT} of the file's I/O time"
        ),
        timed(rf"{{work}}/straggler\.dat \({PERCENT} of its I/O time apart\)"),
        "1 (slowest), 0 (fastest)",
    ),
    # a file of ranks 0 and 1 of 3 (a record each): 8 MiB and 1 MiB written, (8 - 1) / 8 = 88%
    "write-imbalance": Shows(
        "partial",
        "in a file of several processes (not all), the "
        "rank that wrote least wrote 88% less than the rank that wrote most",
        "{work}/partial.dat (88% apart)",
        "0-1 (2 of 3 processes)",
    ),
    # and the same read back
    "read-imbalance": Shows(
        "partial",
        "in a file of several processes (not all), the "
        "rank that read least read 88% less than the rank that read most",
        "{work}/partial.dat (88% apart)",
        "0-1 (2 of 3 processes)",
    ),
    # 2 ranks x 600 MPI_File_read_at (and 600 MPI_File_write_at) on one file: a record of rank -1
    "no-collective-reads": Shows(
        "indep",
        "1,200 of 1,200 MPI-IO reads (100%) independent",
        "{work}/indep.dat (1,200 independent reads)",
        "all 2",
    ),
    "no-collective-writes": Shows(
        "indep",
        "1,200 of 1,200 MPI-IO writes (100%) independent",
        "{work}/indep.dat (1,200 independent writes)",
        "all 2",
    ),
    # each rank's time is its metadata: 50,000 opens, fstats and closes beside one write of 1 KiB
    "metadata-dominated": Shows(
        "meta",
        timed(
            rf"metadata {PERCENT} of the I/O time \({SECONDS} s "
            r"over the processes\)"
        ),
        META_FILES,
        "0-1 (2 of 2 processes)",
    ),
    "rank0-only": Shows(
        "rank0",
        "rank 0 of 2 processes moved all 8.0 MiB",
        "{work}/rank0.dat (8 MiB moved)",
        "0 (1 of 2 processes)",
    ),
    # the 3,000 files it creates and the standard output it prints "done 3000" to
    "many-files": Shows("many-files", "3,001 files for 1 process (3,001 per process)", None, None),
    # rank 0 wrote 1 MiB to its file, rank 1 8 MiB to its own
    "rank-imbalance": Shows(
        "imbalance",
        "of the 2 processes that moved bytes in records of "
        "their own, the busiest (rank 1) moved 8 MiB, the least busy "
        "(rank 0) 1 MiB",
        "{work}/imb1.dat (8 MiB moved); {work}/imb0.dat (1 MiB moved)",
        "0-1 (2 of 2 processes)",
    ),
}
#: rules Drishti 0.8 does not set on their own programs, and why (tests/drishti.py's why names it
#: from the log): its P09 and P10 fire when the highest offset exceeds the bytes moved, the
#: inverse of their message
DRISHTI_DIFFERS = {"repeated-reads", "repeated-writes"}
#: rules that compare the ranks' times on a file, not their work. On good (one write of 8 MiB
#: per rank, about 2 ms) a rank that loses its core for a time slice is a gap of over 15%: its
#: stragglers' share, measured here in 12 runs at a load of 12 on 2 cores, was 5% to 95% (10 runs
#: over 15%), about 10% in runs nothing interrupted. Such a rule may fire on a well-behaved
#: program only where the file's ranks did the same work: the gap is then the machine's.
BY_TIME = {"stragglers"}


def says(value, expected, work: Path) -> bool:
    """A finding's column (value) is what Shows expects of it, in the programs' directory."""
    if isinstance(expected, re.Pattern):
        pattern = expected.pattern.replace("{work}", re.escape(str(work)))
        return isinstance(value, str) and re.fullmatch(pattern, value) is not None
    return value == (expected.format(work=work) if isinstance(expected, str) else expected)


@pytest.mark.parametrize("rule", list(EXPECTED))
def test_each_rule_fires_on_its_program(findings, lowered, root, rule):
    shows = EXPECTED[rule]
    fired = (lowered if rule in LOWERED else findings).get(shows.program, {})
    assert rule in fired, (shows.program, sorted(fired))
    row, work = fired[rule], root / "work"
    for column in ("found", "files", "ranks"):
        assert says(row[column], getattr(shows, column), work), (column, row[column])


@pytest.mark.parametrize("program", ["dd-good", "good"])
def test_no_rule_fires_on_a_well_behaved_program(findings, root, program):
    fired = {rule: row["found"] for rule, row in findings[program].items()}
    for rule in BY_TIME & set(fired):
        assert same_work(root / "tree" / f"{program}.darshan"), (rule, fired[rule])
        del fired[rule]
    assert fired == {}


def same_work(log: Path) -> bool:
    """The log has files shared by all ranks, and in each its slowest and fastest ranks moved
    the same bytes (PyDarshan's POSIX_SLOWEST_RANK_BYTES and POSIX_FASTEST_RANK_BYTES)."""
    import darshan

    posix = darshan.DarshanReport(str(log), read_all=True).records["POSIX"].to_df()["counters"]
    shared = posix[posix["rank"] == -1]
    slowest, fastest = shared["POSIX_SLOWEST_RANK_BYTES"], shared["POSIX_FASTEST_RANK_BYTES"]
    return len(shared) > 0 and bool((slowest == fastest).all())


def test_every_rule_has_its_own_program(findings):
    assert set(EXPECTED) == {r.name for r in diagnose.RULES}
    assert {shows.program for shows in EXPECTED.values()} <= set(findings)


def test_stdio_heavy_counts_what_seq_wrote(root):
    """The bytes STDIO moved are the size of seq's output (its file, measured by the OS)."""
    assert (root / "work" / "seq.txt").stat().st_size == 2_688_895


def test_slow_metadata_says_the_log_s_time(lowered, root):
    """slow-metadata's seconds are the meta log's largest POSIX_F_META_TIME (PyDarshan's)."""
    import darshan

    report = darshan.DarshanReport(str(root / "tree" / "meta.darshan"), read_all=True)
    seconds = report.records["POSIX"].to_df()["fcounters"]["POSIX_F_META_TIME"].max()
    assert seconds > META_SECONDS
    assert lowered["meta"]["slow-metadata"]["found"] == (
        f"a file's metadata took {seconds:,.3g} s (its records' ranks together)"
    )


def test_drishti_sets_p17_on_meta_with_its_threshold_lowered_alike(lowered, root):
    """With metadata_time_rank at META_SECONDS (LOWERED's slow-metadata), Drishti's P17 fires
    on the meta program's log, where iostudy's slow-metadata does."""
    from . import drishti

    log = root / "tree" / "meta.darshan"
    config = {"metadata": {"time_rank": META_SECONDS}}  # Drishti's metadata_time_rank
    ((codes, error),) = drishti.all_triggers([log], config).values()
    assert codes is not None, error
    assert "P17" in codes and "slow-metadata" in lowered["meta"]


def test_drishti_agrees_on_the_programs_or_the_reason_is_named(findings, root):
    """Drishti (an independent oracle) on the same logs: for every rule with a Drishti code, it
    sets the code where iostudy fires and not where it does not, but where tests/drishti.py
    names why; on each rule's own program both fire, but for DRISHTI_DIFFERS."""
    from . import drishti

    limits = diagnose.thresholds()
    coded = [rule for rule in diagnose.RULES if rule.drishti]
    logs = sorted((root / "tree").glob("*.darshan"))
    unexplained, agreed = [], set()
    for log, (codes, error) in drishti.all_triggers(logs).items():
        assert codes is not None, (log.name, error)
        for rule in coded:
            ours, theirs = rule.name in findings[log.stem], rule.drishti in codes
            if ours and theirs:
                agreed.add((log.stem, rule.name))
            elif ours != theirs and drishti.why(log, rule.drishti, ours, limits) is None:
                unexplained.append((log.stem, rule.name, rule.drishti, ours, theirs))
    assert not unexplained, unexplained
    own = {(EXPECTED[r.name].program, r.name) for r in coded}
    assert own - agreed == {(EXPECTED[r].program, r) for r in DRISHTI_DIFFERS | set(LOWERED)}
