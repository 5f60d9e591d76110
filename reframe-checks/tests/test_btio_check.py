"""The BTIO check (reframe-checks/btio_check.py) and its logic (iostudy.benchmarks.btio).

BTIO's reports are real output of the Spack view's `btio` (data/btio/, commands in
data/README.md); the tests read the values they expect from the raw text with their own
regular expressions. The campaign runs are ReFrame dry runs (job scripts written, nothing run),
with and without a Spack view, and one real run from the view under the runtime, whose logs
PyDarshan reads.
"""

import re
import subprocess
from pathlib import Path

import campaign_runs as runs
import pytest

from iostudy.benchmarks import btio, checks, spackenv
from iostudy.core.exitcodes import EXIT_FAILED

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "btio"
MIB = 1 << 20


def raw(text: str, label: str) -> float:
    """A value of BTIO's report, read straight from its line."""
    return float(re.search(rf"^{re.escape(label)}\s*:\s*([0-9.]+)", text, re.M).group(1))


# ---- the logic, on plain data and captured output ----------------------------------------------


def test_classes_are_npb_bts_and_class_e_is_seed_001s_table_1():
    assert btio.class_size("S") == (12, 12)  # 60 steps, a dump every 5
    assert btio.class_size("C") == (162, 40)
    # seed 001, Table 1 (class E): "Total data written 1976.65 GiB"
    points, dumps = btio.class_size("E")
    assert (points, dumps) == (1020, 50)
    assert round(btio.io_bytes(points, dumps) / 2**30, 2) == 1976.65
    with pytest.raises(ValueError, match="class 'F'"):
        btio.class_size("F")


@pytest.mark.parametrize(
    ("problem_class", "procs", "problem"),
    [
        ("S", 1, None),
        ("S", 4, None),
        ("S", 16, None),
        ("S", 2, "procs 2 is not a square number"),
        ("S", 0, "procs 0 is not a square number"),
        ("S", 25, "cells of 2 points per side, BTIO needs at least 3 (at most 16 processes"),
        ("W", 25, None),
        ("Z", 4, "problem_class 'Z' is not one of S, W, A, B, C, D, E"),
    ],
)
def test_problem(problem_class, procs, problem):
    found = btio.problem(problem_class, procs)
    assert found == problem if problem is None else problem in found


def test_input_text_is_what_btio_read_in_the_captured_runs():
    """The captured runs read these files (data/btio/*.data); the check writes the same."""
    for phase in btio.PHASES:
        assert btio.input_text(phase, 12, 12, Path(".")) == (
            (DATA / f"class-s-{phase}.data").read_text()
        )
        assert btio.input_text(phase, 24, 40, Path(".")) == (
            (DATA / f"class-w-{phase}.data").read_text()
        )
    assert btio.input_text("write", 12, 12, Path("."), method=1) == (
        (DATA / "class-s-independent-write.data").read_text()
    )
    with pytest.raises(ValueError, match="phase 'both'"):
        btio.input_text("both", 12, 12, Path("."))
    with pytest.raises(ValueError, match="at most 511"):
        btio.input_text("write", 12, 12, Path("d" * 600))


@pytest.mark.parametrize(
    ("name", "phase", "procs", "points", "dumps"),
    [
        ("class-s-1proc-write", "write", 1, 12, 12),
        ("class-s-1proc-read", "read", 1, 12, 12),
        ("class-s-4procs-write", "write", 4, 12, 12),
        ("class-s-4procs-read", "read", 4, 12, 12),
        ("class-w-4procs-write", "write", 4, 24, 40),
        ("class-w-4procs-read", "read", 4, 24, 40),
    ],
)
def test_parse_real_reports(name, phase, procs, points, dumps):
    text = (DATA / f"{name}.out").read_text()
    parsed = btio.parse(text)
    assert parsed["phase"] == phase
    assert parsed["procs"] == raw(text, "Number of MPI processes") == procs
    assert parsed["grid"] == (points, points, points)
    assert parsed["iterations"] == raw(text, "Number of I/O iterations") == dumps
    assert parsed["amount_mib"] == raw(text, "Total I/O amount")
    assert parsed["time_s"] == raw(text, "Total I/O time in sec")
    assert parsed["bandwidth_mib_s"] == raw(text, "I/O bandwidth") > 0
    opened = "Max file create time in sec" if phase == "write" else "Max file open   time in sec"
    assert parsed["open_s"] == raw(text, opened)
    assert parsed["method"] == "MPI collective I/O" and "Using MPI collective I/O method" in text
    assert parsed["path"] == "."
    # BTIO's MiB are 2^20 bytes: the amount it prints is the grid's bytes over 2^20
    assert raw(text, "Total I/O amount") == round(btio.io_bytes(points, dumps) / MIB, 2)


def real_phases(name="class-s-4procs"):
    return btio.phase_results(
        {phase: (DATA / f"{name}-{phase}.out").read_text() for phase in btio.PHASES}
    )


def test_sanity_of_real_runs():
    assert btio.sanity(real_phases(), 4, 12, 12) == []
    assert btio.sanity(real_phases("class-s-1proc"), 1, 12, 12) == []
    assert btio.sanity(real_phases("class-w-4procs"), 4, 24, 40) == []
    problems = btio.sanity(real_phases(), 1, 12, 12)
    assert problems == [
        "write phase: 4 processes, expected 1",
        "read phase: 4 processes, expected 1",
    ]
    problems = btio.sanity(real_phases("class-w-4procs"), 4, 12, 12)
    assert "write phase: grid (24, 24, 24), expected (12, 12, 12)" in problems
    assert "read phase: 40 dumps, expected 12" in problems
    assert any("21.09 MiB moved, expected 0.79" in p for p in problems)


def test_sanity_wants_both_phases_collective_and_in_their_order():
    write = (DATA / "class-s-4procs-write.out").read_text()
    read = (DATA / "class-s-4procs-read.out").read_text()
    swapped = btio.phase_results({"write": read, "read": write})
    assert btio.sanity(swapped, 4, 12, 12) == [
        "write phase: BTIO ran its read operation",
        "read phase: BTIO ran its write operation",
    ]
    independent = (DATA / "class-s-4procs-independent-write.out").read_text()
    parsed = btio.phase_results({"write": independent, "read": read})
    assert btio.sanity(parsed, 4, 12, 12) == [
        "write phase: MPI independent I/O method, expected MPI collective I/O"
    ]
    assert btio.sanity(btio.phase_results({"write": write}), 4, 12, 12) == ["no read phase"]


def test_refused_truncated_and_foreign_output_raise_naming_what_is_missing():
    # 2 ranks: BTIO refuses (and exits 0); the check must not pass it
    with pytest.raises(ValueError, match="BTIO did not run: Number of processes must be a square"):
        btio.parse((DATA / "nonsquare-2procs.out").read_text())
    text = (DATA / "class-s-4procs-write.out").read_text()
    cut = text[: text.index("I/O bandwidth")]
    with pytest.raises(ValueError, match="no 'I/O bandwidth' line"):
        btio.parse(cut)
    with pytest.raises(ValueError, match="no 'Using ... method' line"):
        btio.parse(text[: text.index("-----")])
    ior = (Path(__file__).parent / "data" / "ior" / "posix-shared.txt").read_text()
    with pytest.raises(ValueError, match=r"no '-- BT-IO Benchmark \(\.\.\. operation only\) --'"):
        btio.parse(ior)
    with pytest.raises(ValueError, match="'I/O bandwidth' overflowed its field"):
        btio.parse(re.sub(r"(I/O bandwidth\s*:\s*)\S+", r"\1************", text))
    with pytest.raises(ValueError, match="^read phase: BTIO did not run"):
        btio.phase_results({"write": text, "read": "Number of processes must be a square number"})


def test_performance_of_a_real_run():
    phases = real_phases("class-w-4procs")
    perf = btio.performance(phases)
    texts = {p: (DATA / f"class-w-4procs-{p}.out").read_text() for p in btio.PHASES}
    mib = btio.io_bytes(24, 40) / MIB
    for phase, text in texts.items():
        assert perf[f"{phase}_mib_s"] == (raw(text, "I/O bandwidth"), "MiB/s")
        seconds, unit = perf[f"{phase}_time_s"]
        # the amount over the bandwidth: BTIO's printed time, to its 2 decimals
        assert unit == "s" and seconds == pytest.approx(mib / raw(text, "I/O bandwidth"))
        assert abs(seconds - raw(text, "Total I/O time in sec")) <= 0.005 + 1e-9
    total_s = sum(mib / raw(t, "I/O bandwidth") for t in texts.values())
    assert perf["io_time_s"] == (pytest.approx(total_s), "s")
    assert perf["io_mib_s"] == (pytest.approx(2 * mib / total_s), "MiB/s")
    assert perf["io_gib"] == (pytest.approx(2 * mib / 1024), "GiB")


def test_drop_cached_pages_of_btios_file(tmp_path):
    """The command the check runs between its phases, on a real file: none of its pages are
    in the page cache after it, and the data is untouched."""
    data = bytes(range(256)) * 4096
    with open(tmp_path / btio.FILE_NAME, "wb") as f:
        f.write(data)
    cached = lambda: int(  # noqa: E731
        subprocess.check_output(["fincore", "-nbr", "-o", "RES", tmp_path / "btio.mpi"], text=True)
    )
    subprocess.run(["bash", "-c", btio.drop_cached_pages_command(tmp_path)], check=True)
    assert cached() == 0
    assert (tmp_path / btio.FILE_NAME).read_bytes() == data


# ---- campaigns: dry runs --------------------------------------------------------------------


# procs_per_node given: campaigns fill in the defaults of a check's parameter schema only
POINT = {
    "check": "btio_check",
    "parameters": {"problem_class": "S", "procs": [1, 4], "procs_per_node": "system"},
}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_missing_btio_is_skipped_named_and_never_passed(
    configs_copy, spack_build, tmp_path, capsys, system
):
    runs.write_campaign(configs_copy, "btiopoints", [POINT])
    status, out, run_dir = runs.dry_run(capsys, "btiopoints", system, tmp_path / "results")
    assert status == EXIT_FAILED
    skips = runs.skip_lines(out, "btio_check")
    assert len(skips) == 2 * 2, out  # two process counts, both MPI flavours
    program = spack_build / system / "view" / "bin" / "btio"
    assert all(f"btio is not built: no {program}" in line for line in skips), out
    assert all(f"make spack SYSTEM={system}" in line for line in skips), out
    manifest = runs.manifest(run_dir)
    assert manifest["status"] == "incomplete" and manifest["results"] == {"skip": 4}


def test_a_class_btio_cannot_split_fails_naming_why(configs_copy, spack_build, tmp_path, capsys):
    """Not a square number of processes: the test fails at setup (before the missing program
    is even looked at), with the reason."""
    runs.write_campaign(
        configs_copy, "btiobad", [dict(POINT, parameters={"procs": 2, "procs_per_node": "system"})]
    )
    status, out, run_dir = runs.dry_run(capsys, "btiobad", "local", tmp_path / "results")
    assert status == EXIT_FAILED
    assert "btio_check: procs 2 is not a square number" in out, out
    assert runs.manifest(run_dir)["results"] == {"fail": 2}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_job_scripts_with_the_view(configs_copy, tmp_path, capsys, system):
    """With the system's Spack view: each point's job writes, drops the file's cached pages and
    reads, each phase under its log tags, with the view's btio and runtime and MPI only, and
    the input files name the job's scratch folder."""
    mpi = runs.require_view(system, "btio")
    runs.write_campaign(configs_copy, "btiopoints", [POINT])
    status, out, run_dir = runs.dry_run(capsys, "btiopoints", system, tmp_path / "results")
    assert status == 0, out
    scripts = runs.job_scripts(run_dir, "btio_check_*")
    assert len(scripts) == 2 and all(f"/{mpi}/" in str(s) for s in scripts), scripts
    program = spackenv.view_program(system, "btio")
    for script in scripts:
        text, stage = script.read_text(), script.parent
        tags = runs.log_tags(text)
        procs = int(tags["procs"])
        assert (tags["check"], tags["problem_class"], tags["points"], tags["dumps"]) == (
            "btio_check",
            "S",
            "12",
            "12",
        )
        assert tags["method"] == "full" and tags["campaign"] == "btiopoints"
        assert tags["run_id"] == run_dir.name and tags["system"] == system
        assert runs.exported(text, "LD_PRELOAD") == str(checks.runtime_library(system, mpi))
        assert runs.exported(text, "DARSHAN_LOGPATH") == str(run_dir / "darshan")
        lines = text.splitlines()
        write = next(i for i, line in enumerate(lines) if "phase=write" in line)
        launch, drop, read_tags = lines[write + 1 : write + 4]
        assert launch.endswith(f"{program} {stage / 'btio-write.data'} > btio-write.out")
        assert "iflag=nocache count=0" in drop and "btio.mpi" in drop
        assert "phase=read" in read_tags and "check=btio_check" in read_tags
        (read,) = [line for line in lines if line.endswith(f"{program} {stage}/btio-read.data")]
        if system == "local":
            assert launch.startswith(f'"${{IOSTUDY_MPIRUN:-mpirun}}" -np {procs} ')
            assert read.startswith(f'"${{IOSTUDY_MPIRUN:-mpirun}}" -np {procs} ')
        else:
            assert launch.startswith("srun ") and read.startswith("srun ")
            assert f"#SBATCH --ntasks={procs}" in lines
            assert f"#SBATCH --ntasks-per-node={min(procs, 2)}" in lines
            assert tags["nodes"] == str(-(-procs // 2))
        # the input files BTIO reads: the class's grid and dumps, the job's scratch folder
        workdir = re.search(r"^mkdir -p (\S+) ", text, re.M).group(1)
        assert Path(workdir).is_relative_to(run_dir / "scratch")
        for phase in btio.PHASES:
            assert (stage / f"btio-{phase}.data").read_text() == (
                f"{phase[0]}\n0\n12\n12 12 12\n{workdir}\n"
            )
    assert not runs.darshan_logs(run_dir)


# ---- a real run from the Spack view -----------------------------------------------------------


def test_real_run_passes_and_its_logs_show_collective_mpiio(configs_copy, tmp_path, capsys):
    """Class S on 1 and 4 ranks, from the local Spack view under the runtime: both jobs pass with
    every performance variable, and each phase leaves a log whose MPI-IO record of btio.mpi has
    the class's bytes, written (or read) collectively by every rank."""
    import darshan

    runs.require_view("local", "btio")
    run_dir = runs.real_run(capsys, configs_copy, "btioreal", [POINT], tmp_path / "results")
    cases = runs.report_cases(run_dir)
    assert sorted(c["procs"] for c in cases) == [1, 4]
    names = {
        "write_mib_s",
        "read_mib_s",
        "write_time_s",
        "read_time_s",
        "io_mib_s",
        "io_time_s",
        "io_gib",
    }
    for case in cases:
        assert case["result"] == "pass"
        perf = runs.perf_values(case)
        assert set(perf) == names
        assert all(v[0] > 0 for v in perf.values())
        assert perf["write_mib_s"][4] == "MiB/s" and perf["io_time_s"][4] == "s"
        kept = Path(case["outputdir"])
        assert btio.parse((kept / "btio-write.out").read_text())["procs"] == case["procs"]
    size = btio.io_bytes(12, 12)
    logs = runs.darshan_logs(run_dir)
    assert len(logs) == 2 * 2, logs  # a log per phase of each job
    seen = set()
    for path in logs:
        report = darshan.DarshanReport(str(path), read_all=True)
        tags = report.metadata["job"]["metadata"]
        phase, procs = tags["phase"], int(tags["procs"])
        seen.add((procs, phase))
        assert tags["check"] == "btio_check" and tags["problem_class"] == "S"
        assert report.metadata["job"]["nprocs"] == procs
        assert "MPI-IO" in report.modules, report.modules
        mpiio = report.records["MPI-IO"].to_df()["counters"]
        names_ = report.name_records
        mine = mpiio[[names_[i].endswith("/btio.mpi") for i in mpiio["id"]]]
        assert len(mine) >= 1
        op = "WRITE" if phase == "write" else "READ"
        assert mine[f"MPIIO_BYTES_{'WRITTEN' if phase == 'write' else 'READ'}"].sum() == size
        # collective: one MPI_File_write_all (read_all) per dump and rank, none independent
        assert mine[f"MPIIO_COLL_{op}S"].sum() == 12 * procs
        assert mine[f"MPIIO_INDEP_{op}S"].sum() == 0
    assert seen == {(p, ph) for p in (1, 4) for ph in btio.PHASES}
