"""The diagnosis rules on programs with known behaviour, run under iostudy's runtime: each rule
fires on its own pathological program, with the numbers the program's pattern gives, and no
rule fires on the well-behaved ones. The logs go through the real path: a log tree, `iostudy
ingest`, `iostudy diagnose --json` with the default thresholds.

The programs: coreutils (dd, seq, cat), runtime/tests/programs/many_files.c, and
runtime/tests/programs/io_patterns.c on 2 ranks of Open MPI (its header gives each pattern).
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

from iostudy.cli.cli import main

from .rundirs import RUNTIME, runtime_env
from .testdata import REPO_ROOT

PROGRAMS = REPO_ROOT / "build" / "runtime" / "tests"
MIB = 1 << 20


def run_plain(name: str, cmd: list, tree: Path, stdout=subprocess.DEVNULL) -> None:
    """cmd under the runtime, its log tree/<name>.darshan."""
    log = tree / f"{name}.darshan"
    subprocess.run([str(c) for c in cmd], env=runtime_env(log), stdout=stdout, check=True,
                   timeout=120)  # fmt: skip
    assert log.is_file(), f"{name}: the runtime wrote no log"


def run_mpi(mode: str, tree: Path, work: Path, jobid: int | None = None) -> None:
    """io_patterns MODE on 2 ranks of Open MPI under the runtime, its log tree/<mode>.darshan
    (with Slurm's job id ``jobid`` when given)."""
    prog = PROGRAMS / "io_patterns-openmpi"
    launcher = shutil.which("mpirun.openmpi")
    if launcher is None or not prog.is_file():
        pytest.skip(f"needs mpirun.openmpi and {prog} (make setup builds it with Open MPI)")
    log = tree / f"{mode}.darshan"
    cmd = [launcher, "--oversubscribe", "--allow-run-as-root", "-np", "2"]
    for key in ("LD_PRELOAD", "DARSHAN_LOGFILE"):  # to the ranks, not to mpirun
        cmd += ["-x", f"{key}={runtime_env(log, mpi=True)[key]}"]
    if jobid is not None:
        cmd += ["-x", f"SLURM_JOB_ID={jobid}"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1")  # fmt: skip
    env.pop("LD_PRELOAD", None)
    out = subprocess.run(cmd + [str(prog), str(work), mode], env=env, capture_output=True,
                         text=True, timeout=300)  # fmt: skip
    assert out.returncode == 0 and f"done {mode}" in out.stdout, out.stdout + out.stderr
    assert log.is_file(), f"{mode}: the runtime wrote no log"


@pytest.fixture(scope="module")
def root(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("diagnose")


@pytest.fixture(scope="module")
def findings(root) -> dict[str, dict[str, str]]:
    """Every program's log, ingested as one tree; log name -> {rule: what it found}."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    tree, work = root / "tree", root / "work"
    tree.mkdir()
    work.mkdir()
    two = work / "two-mib.dat"
    two.write_bytes(os.urandom(2 * MIB))
    run_plain("dd-good", ["dd", "if=/dev/zero", f"of={work / 'good.dat'}", "bs=4M", "count=4",
                          "status=none"], tree)  # fmt: skip
    run_plain("dd-small", ["dd", f"if={two}", "of=/dev/null", "bs=100", "status=none"], tree)
    run_plain("cat-thrice", ["cat", two, two, two], tree)
    with open(work / "seq.txt", "w") as out:
        run_plain("seq", ["seq", "1", "400000"], tree, stdout=out)
    run_plain("many-files", [PROGRAMS / "many_files", work, "3000"], tree)
    for mode in ("small", "rank0", "indep", "imbalance", "meta", "good"):
        run_mpi(mode, tree, work)
    store = root / "store"
    assert main(["ingest", str(tree), "--store", str(store), "--study", "diagnose"]) == 0
    out = root / "found.json"
    with open(out, "w") as f, pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdout", f)
        assert main(["diagnose", "--store", str(store), "--json"]) == 0
    found: dict[str, dict[str, str]] = {Path(p).stem: {} for p in tree.iterdir()}
    for row in json.loads(out.read_text()):
        found[Path(row["log"]).stem][row["rule"]] = row["found"]
    return found


# program -> the rules its pattern must fire (others may fire too: 100-byte reads are small
# and misaligned), and what the numbers are, worked out from the pattern
EXPECTED = {
    # 2 MiB in reads of 100 bytes: 20,971 whole ones, one of 52 bytes, one at the end of the
    # file that returns 0
    "dd-small": {"small-reads": "20,973 of 20,973 POSIX reads (100%) under 1 MiB",
                 "misaligned": None},
    "cat-thrice": {"repeated-reads": "6.0 MiB read from files of 2.0 MiB (3.0 times)"},
    # seq writes through fwrite_unlocked: STDIO only (glibc's own write of its buffer is
    # not a call the runtime sees); the bytes are the output file's size (test below)
    "seq": {"stdio-heavy": None},
    # the 3,000 files it creates and the standard output it prints "done 3000" to
    "many-files": {"many-files": "3,001 files for 1 process (3,001 per process)"},
    "meta": {"metadata-dominated": None},
    "small": {"small-writes": "4,000 of 4,000 POSIX writes (100%) under 1 MiB"},
    "rank0": {"rank0-only": "rank 0 of 2 processes moved all 8.0 MiB"},
    "indep": {"shared-file-independent": "1,200 of 1,200 MPI-IO operations on shared files "
                                         "independent"},
    "imbalance": {"rank-imbalance": "the busiest of 2 ranks moved 8.0 MiB, the least busy "
                                    "1.0 MiB"},
}  # fmt: skip


@pytest.mark.parametrize("program", list(EXPECTED))
def test_each_rule_fires_on_its_pathological_program(findings, program):
    for rule, said in EXPECTED[program].items():
        assert rule in findings[program], (program, findings[program])
        if said is not None:
            assert findings[program][rule] == said


@pytest.mark.parametrize("program", ["dd-good", "good"])
def test_no_rule_fires_on_a_well_behaved_program(findings, program):
    assert findings[program] == {}


def test_every_rule_has_its_own_program(findings):
    fired = {rule for program in EXPECTED for rule in EXPECTED[program]}
    from iostudy.metrics import diagnose

    assert fired == {r.name for r in diagnose.RULES}


def test_stdio_heavy_counts_what_seq_wrote(findings, root):
    """The bytes STDIO moved are the size of seq's output (its file, measured by the OS)."""
    out = root / "work" / "seq.txt"
    assert findings["seq"]["stdio-heavy"] == (
        f"STDIO moved {out.stat().st_size / MIB:,.1f} MiB, 100% of the bytes"
    )


def test_drishti_agrees_on_the_programs_or_the_reason_is_named(findings, root):
    """Drishti (an independent oracle) on the same logs: on the triggers both have, it fires
    where iostudy does, but where tests/drishti.py names why it cannot."""
    from iostudy.metrics import diagnose

    from . import drishti

    limits = diagnose.thresholds()
    logs = sorted((root / "tree").glob("*.darshan"))
    unexplained, agreed = [], set()
    for log, (codes, error) in drishti.all_triggers(logs).items():
        assert codes is not None, (log.name, error)
        differ = drishti.disagreements(set(findings[log.stem]), codes)
        fired = {(log.stem, rule) for rule in findings[log.stem]}
        agreed |= fired - {(log.stem, rule) for rule, *_ in differ}
        unexplained += [(log.stem, rule, mine, its) for rule, mine, its in differ
                        if drishti.why(log, rule, mine, limits) is None]  # fmt: skip
    assert not unexplained, unexplained
    # both fire on these programs' own patterns
    assert {("dd-small", "small-reads"), ("dd-small", "misaligned"), ("small", "small-writes"),
            ("seq", "stdio-heavy"), ("indep", "shared-file-independent")} <= agreed  # fmt: skip
