"""The FLASH-IO check (reframe-checks/flashio_check.py) and its logic (iostudy.benchmarks.flashio).

FLASH-IO's results are real output of the Spack view's `flash_benchmark_io` (data/flashio/,
commands in data/README.md); the tests read the values they expect from the raw text with their
own regular expressions, and the runs' parameters from the capture commands. The campaign runs
are ReFrame dry runs (job scripts written, nothing run), with and without a Spack view, and one
real run from the view under the runtime, whose log PyDarshan reads.
"""

import re
from pathlib import Path

import campaign_runs as runs
import pytest

from iostudy.benchmarks import checks, flashio, spackenv
from iostudy.cli.cli import main
from iostudy.core.exitcodes import EXIT_FAILED

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "flashio"
MIB = 1 << 20
#: the captured runs (data/README.md): ranks, MPI-IO access, PnetCDF API of each command
CASES = {
    "coll-nb-1": (1, "collective", "nonblocking"),
    "coll-nb-2": (2, "collective", "nonblocking"),
    "coll-nb-4": (4, "collective", "nonblocking"),
    "indep-nb-2": (2, "independent", "nonblocking"),
    "coll-b-2": (2, "collective", "blocking"),
    "indep-b-4": (4, "independent", "blocking"),
}
LABELS = {
    "checkpoint": "checkpoint time",
    "plot_centered": "plot no corner",
    "plot_corner": "plot    corner",
}


def text_of(name: str) -> str:
    return (DATA / f"{name}.out").read_text()


def raw_file(text: str, name: str) -> tuple[float, float]:
    """(seconds, MiB) of a file, straight from its time line and the next 'I/O amount' line."""
    label = LABELS[name]
    seconds = re.search(rf"^ {re.escape(label)}\s+:\s+([0-9.]+)  sec$", text, re.M)
    after = text[seconds.end() :]
    mib = re.search(r"^\s+I/O amount\s+:\s+([0-9.]+)  MiB$", after, re.M)
    return float(seconds.group(1)), float(mib.group(1))


def raw_row(text: str) -> list[str]:
    """The fields of the row under 'nproc    array size      exec (sec)   bandwidth (MiB/s)'."""
    lines = text.splitlines()
    head = next(i for i, line in enumerate(lines) if line.startswith(" nproc    array size"))
    return lines[head + 1].split()


# ---- the logic, on plain data and captured output ----------------------------------------------


def test_arguments():
    assert flashio.arguments() == ["-f", "flash_"]
    assert flashio.arguments("independent", "blocking") == ["-i", "-b", "-f", "flash_"]
    assert flashio.arguments("collective", "blocking", "run_") == ["-b", "-f", "run_"]
    with pytest.raises(ValueError, match="access 'coll'"):
        flashio.arguments("coll")
    with pytest.raises(ValueError, match="requests 'async'"):
        flashio.arguments("collective", "async")
    # the program keeps the prefix in a character(len=128)
    flashio.arguments(prefix="p" * 128)
    with pytest.raises(ValueError, match="1 to 128 characters"):
        flashio.arguments(prefix="p" * 129)


def test_file_names_are_the_ones_a_real_run_wrote():
    """The three files a 1-rank run left in its folder (listed when it was captured)."""
    assert sorted(flashio.file_names().values()) == [
        "flash_ncmpi_chk_0000.nc",
        "flash_ncmpi_plt_cnt_0000.nc",
        "flash_ncmpi_plt_crn_0000.nc",
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_parse_real_output(name):
    procs, access, requests = CASES[name]
    text = text_of(name)
    parsed = flashio.parse(text)
    assert (parsed["procs"], parsed["access"], parsed["requests"]) == (procs, access, requests)
    assert parsed["prefix"] == "flash_"
    assert parsed["blocks"] == int(re.search(r"number of blocks\s+:\s+(\d+)", text).group(1))
    assert parsed["variables"] == 24 and parsed["guards"] == 4
    for file in LABELS:
        seconds, mib = raw_file(text, file)
        assert parsed["files"][file]["seconds"] == seconds
        assert parsed["files"][file]["mib"] == mib
    row = raw_row(text)
    assert parsed["block_cells"] == (int(row[1]), int(row[3]), int(row[5]))
    assert parsed["total_seconds"] == float(row[6]) and parsed["total_mib_s"] == float(row[7])
    total = re.search(r"Total I/O amount\s+:\s+([0-9.]+)", text).group(1)
    assert parsed["total_mib"] == float(total)
    # the hint the source sets for the access: independent data mode is allowed or not
    hint = re.search(r"key =\s+romio_no_indep_rw, value =(\w+)", text).group(1)
    assert parsed["hints"]["romio_no_indep_rw"] == hint == str(access == "collective").lower()


def test_expected_amounts_are_every_ranks_blocks():
    """Rank r holds 80 + r % 3 blocks of 16^3 cells: 60 MiB of checkpoint per 80 blocks (24
    doubles a cell), 5 MiB of centred plot (4 floats), 4 floats at 17^3 corners."""
    parsed = flashio.parse(text_of("coll-nb-1"))
    assert flashio.expected_mib(parsed, 1) == {
        "checkpoint": 60.0,
        "plot_centered": 5.0,
        "plot_corner": 80 * 4 * 17**3 * 4 / MIB,
    }
    assert flashio.blocks_of_run(80, 4) == 80 + 81 + 82 + 80
    assert flashio.expected_mib(parsed, 4)["checkpoint"] == 323 * 24 * 16**3 * 8 / MIB


@pytest.mark.parametrize("name", sorted(CASES))
def test_sanity_of_real_runs(name):
    assert flashio.sanity(flashio.parse(text_of(name)), *CASES[name]) == []


def test_sanity_catches_wrong_counts_and_modes():
    parsed = flashio.parse(text_of("coll-nb-2"))
    problems = flashio.sanity(parsed, 3, "independent", "blocking")
    assert "2 processes reported, expected 3" in problems
    assert "MPI collective I/O reported, expected independent" in problems
    assert "PnetCDF nonblocking API reported, expected blocking" in problems
    # 3 ranks would have written 80 + 81 + 82 blocks, not 161
    assert any(
        p.startswith("checkpoint: 120.78 MiB written, expected 182.25 MiB") for p in problems
    )
    assert sum(" MiB written, expected " in p for p in problems) == 3
    # a file short of one rank's data (a rank that wrote nothing)
    short = text_of("coll-nb-2").replace("120.78  MiB", " 60.02  MiB", 1)
    problems = flashio.sanity(flashio.parse(short), 2, "collective", "nonblocking")
    assert any(p.startswith("checkpoint: 60.02 MiB written, expected 120.75") for p in problems)
    # the files no longer add up to the total the program printed
    total = re.search(r"Total I/O amount\s+:\s+([0-9.]+)", short).group(1)
    assert any(p.startswith(f"total {total} MiB is not the files' sum") for p in problems)


def test_truncated_and_foreign_output_raise_naming_what_is_missing():
    text = text_of("coll-nb-2")
    cut = text[: text.index(" plot    corner")]
    with pytest.raises(ValueError, match=r"no 'plot    corner', 'Total I/O amount', 'nproc"):
        flashio.parse(cut)
    # quiet mode (-q) prints nothing; -h its usage (exit status 0 both)
    for name in ("quiet-2", "usage-1"):
        with pytest.raises(ValueError, match="not FLASH-IO's results .* no 'checkpoint time'"):
            flashio.parse(text_of(name))
    for other in ("haccio/fpp-verify-2.out", "ior/posix-fpp.txt"):
        with pytest.raises(ValueError, match="no 'checkpoint time'"):
            flashio.parse((DATA.parent / other).read_text())


@pytest.mark.parametrize("name", ["coll-nb-4", "indep-b-4"])
def test_performance_of_a_real_run(name):
    text = text_of(name)
    perf = flashio.performance(flashio.parse(text))
    for file in LABELS:
        seconds, mib = raw_file(text, file)
        assert perf[f"{file}_time_s"] == (seconds, "s")
        assert perf[f"{file}_mib_s"] == (pytest.approx(mib / seconds), "MiB/s")
    row = raw_row(text)
    assert perf["total_time_s"] == (float(row[6]), "s")
    assert perf["total_mib_s"] == (float(row[7]), "MiB/s")
    assert len(perf) == 2 * 3 + 2


def test_a_time_printed_as_zero_has_no_bandwidth():
    text = re.sub(r"(plot no corner\s+:\s+)0\.0[0-9]", r"\g<1>0.00", text_of("coll-nb-2"))
    perf = flashio.performance(flashio.parse(text))
    assert perf["plot_centered_time_s"] == (0.0, "s") and "plot_centered_mib_s" not in perf


# ---- campaigns: dry runs --------------------------------------------------------------------


POINT = {
    "check": "flashio_check",
    "parameters": {"access": ["collective", "independent"], "procs": 2, "procs_per_node": "system"},
}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_missing_flashio_is_skipped_named_and_never_passed(
    configs_copy, spack_build, tmp_path, capsys, system
):
    runs.write_campaign(configs_copy, "flashpoints", [POINT])
    status, out, run_dir = runs.dry_run(capsys, "flashpoints", system, tmp_path / "results")
    assert status == EXIT_FAILED
    skips = runs.skip_lines(out, "flashio_check")
    assert len(skips) == 2 * 2, out  # two accesses, both MPI flavours
    program = spack_build / system / "view" / "bin" / "flash_benchmark_io"
    assert all(f"flash_benchmark_io is not built: no {program}" in s for s in skips), out
    assert all(f"make spack SYSTEM={system}" in line for line in skips), out
    manifest = runs.manifest(run_dir)
    assert manifest["status"] == "incomplete" and manifest["results"] == {"skip": 4}


def test_unknown_access_is_refused_naming_it(configs_copy, spack_build, tmp_path, capsys):
    """A value the program has no option for: the campaign's schema refuses it before anything
    runs (and flashio.arguments, the check's own guard, names it too)."""
    runs.write_campaign(
        configs_copy, "flashbad", [{"check": "flashio_check", "parameters": {"access": "coll"}}]
    )
    argv = ["campaign", "run", "flashbad", "--system", "local", "--dry-run"]
    assert main(argv + ["--results", str(tmp_path / "results")]) == 2
    assert "checks[0].parameters.access: 'coll'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="FLASH-IO access 'coll': not one of collective"):
        flashio.arguments("coll", "nonblocking")


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_job_scripts_with_the_view(configs_copy, tmp_path, capsys, system):
    """With the Spack view: each point's job runs the view's flash_benchmark_io with its
    options in its scratch folder, under the runtime with its log tags, with the view's MPI."""
    mpi = runs.require_view(system, flashio.PROGRAM)
    entry = {
        "check": "flashio_check",
        "parameters": {
            "access": ["collective", "independent"],
            "requests": ["nonblocking", "blocking"],
            "procs": [1, 4],
            "procs_per_node": "system",
        },
    }
    runs.write_campaign(configs_copy, "flashpoints", [entry])
    status, out, run_dir = runs.dry_run(capsys, "flashpoints", system, tmp_path / "results")
    assert status == 0, out
    scripts = runs.job_scripts(run_dir, "flashio_check_*")
    assert len(scripts) == 2 * 2 * 2 and all(f"/{mpi}/" in str(s) for s in scripts), scripts
    program = spackenv.view_program(system, "flash_benchmark_io")
    seen = set()
    for script in scripts:
        text, stage = script.read_text(), script.parent
        tags = runs.log_tags(text)
        procs, access, requests = int(tags["procs"]), tags["access"], tags["requests"]
        seen.add((procs, access, requests))
        assert tags["check"] == "flashio_check" and tags["campaign"] == "flashpoints"
        assert tags["run_id"] == run_dir.name and tags["system"] == system
        assert runs.exported(text, "LD_PRELOAD") == str(checks.runtime_library(system, mpi))
        assert runs.exported(text, "DARSHAN_LOGPATH") == str(run_dir / "darshan")
        lines = text.splitlines()
        workdir = re.search(r"^mkdir -p (\S+) ", text, re.M).group(1)
        assert Path(workdir).is_relative_to(run_dir / "scratch")
        launch = next(i for i, line in enumerate(lines) if str(program) in line)
        options = " ".join(flashio.arguments(access, requests))
        assert lines[launch].endswith(f"{program} {options}")
        assert ("-i" in lines[launch].split()) == (access == "independent")
        assert ("-b" in lines[launch].split()) == (requests == "blocking")
        # in the scratch folder, then back to the stage folder and the scratch folder removed
        assert lines[launch - 1] == f"cd {workdir}"
        assert lines[launch + 1 :] == [f"cd {stage}", f"rm -rf {workdir}"]
        if system == "local":
            assert lines[launch].startswith(f'"${{IOSTUDY_MPIRUN:-mpirun}}" -np {procs} ')
            assert runs.exported(text, "IOSTUDY_MPIRUN") == "mpirun.openmpi"
        else:
            assert lines[launch].startswith("srun ")
            assert f"#SBATCH --ntasks={procs}" in lines
            assert f"#SBATCH --ntasks-per-node={min(procs, 2)}" in lines
            assert tags["nodes"] == str(-(-procs // 2))
            assert runs.exported(text, "SLURM_MPI_TYPE") == "pmix"
    assert len(seen) == 8
    assert not runs.darshan_logs(run_dir)


# ---- a real run from the Spack view -----------------------------------------------------------


def test_real_run_passes_and_its_log_shows_the_three_pnetcdf_files(configs_copy, tmp_path, capsys):
    """Collective and independent I/O on 2 ranks, from the local Spack view under the runtime:
    both jobs pass with every performance variable, and each leaves a log with a PNETCDF_FILE
    and an MPI-IO record of each of the three files, as many bytes as the program's amounts,
    written collectively or not as asked."""
    import darshan

    runs.require_view("local", flashio.PROGRAM)
    entry = {
        "check": "flashio_check",
        "parameters": {"access": ["collective", "independent"], "procs": 2},
    }
    run_dir = runs.real_run(capsys, configs_copy, "flashreal", [entry], tmp_path / "results")
    cases = runs.report_cases(run_dir)
    assert len(cases) == 2
    names = {f"{f}_{v}" for f in LABELS for v in ("time_s", "mib_s")}
    for case in cases:
        assert case["result"] == "pass"
        perf = runs.perf_values(case)
        # a plot file written in under 5 ms would have no bandwidth: not on this machine
        assert set(perf) == names | {"total_time_s", "total_mib_s"}
        assert all(v[0] > 0 for v in perf.values())
        assert perf["checkpoint_mib_s"][4] == "MiB/s" and perf["checkpoint_time_s"][4] == "s"
    logs = runs.darshan_logs(run_dir)
    assert len(logs) == 2, logs
    amounts = flashio.expected_mib(flashio.parse(text_of("coll-nb-2")), 2)
    accesses = set()
    for path in logs:
        report = darshan.DarshanReport(str(path), read_all=True)
        tags = report.metadata["job"]["metadata"]
        assert tags["check"] == "flashio_check" and report.metadata["job"]["nprocs"] == 2
        accesses.add(tags["access"])
        assert {"PNETCDF_FILE", "MPI-IO"} <= set(report.modules), report.modules
        records = {}
        for module in ("PNETCDF_FILE", "MPI-IO"):
            rows = runs.records_by_name(report, module)
            records[module] = {Path(name).name: row for name, row in rows.items()}
            assert set(records[module]) == set(flashio.file_names().values()), module
        for file, name in flashio.file_names().items():
            pnetcdf, mpiio = records["PNETCDF_FILE"][name], records["MPI-IO"][name]
            assert pnetcdf["PNETCDF_FILE_CREATES"] == 2  # a collective create: both ranks
            written = mpiio["MPIIO_BYTES_WRITTEN"]
            assert pnetcdf["PNETCDF_FILE_BYTES_WRITTEN"] == written
            # the variables of both ranks' 80 + 81 blocks, and a little metadata
            assert amounts[file] * MIB <= written <= amounts[file] * MIB * 1.01
            if tags["access"] == "collective":
                assert mpiio["MPIIO_COLL_WRITES"] >= 2  # both ranks' data, collectively
            else:
                assert mpiio["MPIIO_COLL_WRITES"] == 0 and mpiio["MPIIO_INDEP_WRITES"] >= 2
    assert accesses == {"collective", "independent"}
