"""The HACC-IO check (reframe-checks/haccio_check.py) and its logic (iostudy.benchmarks.haccio).

HACC-IO's results are real output of the Spack view's hacc_io programs (data/haccio/, commands
in data/README.md); the tests read the values they expect from the raw text with their own
regular expressions, and the runs' parameters from the capture commands. The campaign runs are
ReFrame dry runs (job scripts written, nothing run), with and without a Spack view, and one real
run from the view under the runtime, whose logs PyDarshan reads.
"""

import os
import re
import subprocess
from pathlib import Path

import campaign_runs as runs
import pytest

from iostudy.benchmarks import checks, haccio, spackenv
from iostudy.cli.cli import main
from iostudy.core.exitcodes import EXIT_FAILED

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "haccio"
MIB = 1 << 20
#: the captured runs (data/README.md): ranks, particles per rank, layout of each command; the
#: write-only and read-only runs of one checkpoint are a pair
CASES = {
    "fpp-verify-1": (1, 100_000, "fpp"),
    "fpp-verify-2": (2, 100_000, "fpp"),
    "fpp-verify-4": (4, 50_000, "fpp"),
    "fpp-write-2": (2, 200_000, "fpp"),
    "fpp-read-2": (2, 200_000, "fpp"),
    "shared-verify-2": (2, 100_000, "shared"),
    "shared-write-4": (4, 50_000, "shared"),
    "shared-read-4": (4, 50_000, "shared"),
}
PAIRS = {"fpp-2": ("fpp-write-2", "fpp-read-2"), "shared-4": ("shared-write-4", "shared-read-4")}
#: the files' sizes the capture listed (ls -l after each run)
FILE_SIZES = {
    "fpp-verify-1": 28965824,
    "fpp-verify-2": 28965824,
    "fpp-verify-4": 27065824,
    "shared-verify-2": 32765824,
}


def text_of(name: str) -> str:
    return (DATA / f"{name}.out").read_text()


def raw_phase(text: str, operation: str) -> tuple[float, int, float] | None:
    """(printed bandwidth, Bytes, MaxTime) of the 'WRITE Checkpoint' or 'READ Restart' line."""
    m = re.search(
        rf"^ {operation} Perf: (\S+) BW\[MB/s\] (\d+) Bytes (\S+) MaxTime\[sec\] $", text, re.M
    )
    return (float(m.group(1)), int(m.group(2)), float(m.group(3))) if m else None


# ---- the logic, on plain data and captured output ----------------------------------------------


def test_programs_and_arguments():
    assert haccio.programs("fpp", False) == {"write": "hacc_io_write", "read": "hacc_io_read"}
    assert haccio.programs("fpp", True) == {"verify": "hacc_io"}
    assert haccio.programs("shared", False) == {
        "write": "hacc_io_write_shared",
        "read": "hacc_io_read_shared",
    }
    assert haccio.programs("shared", True) == {"verify": "hacc_io_shared"}
    with pytest.raises(ValueError, match="layout 'N-N': not one of fpp, shared"):
        haccio.programs("N-N", False)
    assert haccio.arguments(100_000, Path("dir/checkpoint")) == ["100000", "dir/checkpoint"]
    # the program reads the count with atoi()
    haccio.arguments(2**31 - 1, "p")
    for bad in (0, 2**31):
        with pytest.raises(ValueError, match="1 to 2147483647 per rank"):
            haccio.arguments(bad, "p")


def test_switches_of_iostudys_build():
    assert haccio.environment("mpiio", False) == {"HACC_IO_INTERFACE": "mpiio"}
    assert haccio.environment("posix", True) == {"HACC_IO_INTERFACE": "posix", "HACC_IO_OSYNC": "1"}
    with pytest.raises(ValueError, match="O_SYNC is an open flag of the POSIX interface only"):
        haccio.environment("mpiio", True)
    with pytest.raises(ValueError, match="interface 'hdf5': not one of mpiio, posix"):
        haccio.environment("hdf5", False)


def test_file_names_are_the_ones_real_runs_wrote():
    """As the capture listed them (data/README.md): a file per rank, or one."""
    assert haccio.file_names("checkpoint", "fpp", 2) == [
        "checkpoint-Part00000000-of-00000002.data",
        "checkpoint-Part00000001-of-00000002.data",
    ]
    assert haccio.file_names("checkpoint", "shared", 4) == [
        "checkpoint-Part00000000-of-00000001.data"
    ]


@pytest.mark.parametrize("name", sorted(CASES))
def test_parse_real_output(name):
    text = text_of(name)
    parsed = haccio.parse(text)
    for phase, operation in (("write", "WRITE Checkpoint"), ("read", "READ Restart")):
        raw = raw_phase(text, operation)
        if raw is None:
            assert phase not in parsed["phases"]
            continue
        got = parsed["phases"][phase]
        assert (got["printed_bw"], got["bytes"], got["seconds"]) == raw
    assert parsed["verified"] == ("\n CONTENTS VERIFIED... Success \n" in text)
    assert parsed["verified"] == ("verify" in name)
    assert parsed["failures"] == []


@pytest.mark.parametrize("name", sorted(CASES))
def test_printed_bandwidth_is_mib_per_second(name):
    """The programs label their bandwidth MB/s, but it is Bytes / MaxTime / 2^20: MiB/s (to
    the 6 significant digits printed), not 10^6 bytes a second."""
    text = text_of(name)
    for operation in ("WRITE Checkpoint", "READ Restart"):
        if (raw := raw_phase(text, operation)) is not None:
            printed, nbytes, seconds = raw
            assert printed == pytest.approx(nbytes / seconds / MIB, rel=1e-5)
            assert printed != pytest.approx(nbytes / seconds / 1e6, rel=1e-3)


@pytest.mark.parametrize("name", sorted(CASES))
def test_bytes_are_the_particles_and_headers(name):
    """Bytes each phase reports: the files' size written (the capture's listing), and every
    rank's particles and the 24 MiB header read."""
    procs, particles, layout = CASES[name]
    text = text_of(name)
    expected = haccio.expected_bytes(particles, procs, layout)
    for phase, operation in (("write", "WRITE Checkpoint"), ("read", "READ Restart")):
        if (raw := raw_phase(text, operation)) is not None:
            assert raw[1] == expected[phase]
    if name in FILE_SIZES:
        files = len(haccio.file_names("checkpoint", layout, procs))
        assert raw_phase(text, "WRITE Checkpoint")[1] == files * FILE_SIZES[name]


@pytest.mark.parametrize("name", [n for n in CASES if "verify" in n])
def test_sanity_of_real_verified_runs(name):
    procs, particles, layout = CASES[name]
    parsed = haccio.merge({"verify": text_of(name)})
    assert haccio.sanity(parsed, particles, procs, layout, True) == []


@pytest.mark.parametrize("layout", ["fpp", "shared"])
def test_sanity_of_real_mpiio_runs(layout):
    """iostudy's build through MPI-IO (data/README.md): 2 ranks of 100,000 particles; the read
    phase counts the particles only, as the raw Bytes field says."""
    write, read, verify = (text_of(f"mpiio-{layout}-{p}-2") for p in ("write", "read", "verify"))
    assert raw_phase(read, "READ Restart")[1] == 2 * 100_000 * haccio.PARTICLE_BYTES
    pair = haccio.merge({"write": write, "read": read})
    assert haccio.sanity(pair, 100_000, 2, layout, False, "mpiio") == []
    assert haccio.sanity(haccio.merge({"verify": verify}), 100_000, 2, layout, True, "mpiio") == []
    # the POSIX expectation (headers read too) does not hold for them
    assert "read: 7600000 bytes" in haccio.sanity(pair, 100_000, 2, layout, False)[0]


@pytest.mark.parametrize("pair", sorted(PAIRS))
def test_sanity_of_real_write_then_read_runs(pair):
    write, read = PAIRS[pair]
    procs, particles, layout = CASES[write]
    parsed = haccio.merge({"write": text_of(write), "read": text_of(read)})
    assert haccio.sanity(parsed, particles, procs, layout, False) == []
    # without hacc_io's comparison there is no verdict to want
    assert haccio.sanity(parsed, particles, procs, layout, True) == [
        "no 'CONTENTS VERIFIED... Success': the data read back was not verified"
    ]


def test_sanity_catches_wrong_counts_and_failures():
    parsed = haccio.merge({"verify": text_of("fpp-verify-2")})
    problems = haccio.sanity(parsed, 100_000, 3, "fpp", True)
    assert any(p.startswith("write: 57931648 bytes, expected 86897472 (3 ranks") for p in problems)
    assert any(p.startswith("read: 57931648 bytes, expected 86897472") for p in problems)
    problems = haccio.sanity(parsed, 120_000, 2, "fpp", True)
    assert sum("bytes, expected" in p for p in problems) == 2
    # the shared file has one header, not one per rank
    problems = haccio.sanity(parsed, 100_000, 2, "shared", True)
    assert problems == [
        "write: 57931648 bytes, expected 32765824 (2 ranks of 100000 particles, shared, posix)"
    ]
    # what the programs print when something failed, even after a phase's results
    failed = text_of("fpp-verify-2") + text_of("fpp-read-mismatch-2")
    problems = haccio.sanity(haccio.parse(failed), 100_000, 2, "fpp", True)
    assert problems == ["HACC-IO printed: Particles Counts Do NOT MATCH"] * 2


def test_truncated_and_foreign_output_raise_naming_what_is_missing():
    # hacc_io_read of a checkpoint of other particle counts aborts: no phase
    with pytest.raises(ValueError, match=r"no 'WRITE .* \(Particles Counts Do NOT MATCH\)"):
        haccio.parse(text_of("fpp-read-mismatch-2"))
    # without arguments the usage is lost: printf without newline, then MPI_Abort
    assert text_of("usage-1") == ""
    with pytest.raises(ValueError, match="not HACC-IO's results"):
        haccio.parse(text_of("usage-1"))
    for other in ("flashio/coll-nb-2.out", "ior/posix-fpp.txt"):
        with pytest.raises(ValueError, match="no 'WRITE Checkpoint Perf:'"):
            haccio.parse((DATA.parent / other).read_text())
    text = text_of("fpp-verify-2")
    cut = text[: text.index(" READ Restart")]
    with pytest.raises(ValueError, match="verify launch: HACC-IO reported no read phase"):
        haccio.merge({"verify": cut})
    with pytest.raises(ValueError, match="read launch: HACC-IO reported no read phase"):
        haccio.merge({"write": text_of("fpp-write-2"), "read": text_of("fpp-write-2")})
    with pytest.raises(ValueError, match="read launch: not HACC-IO's results"):
        haccio.merge({"write": text_of("fpp-write-2"), "read": ""})


@pytest.mark.parametrize("name", ["fpp-verify-4", "shared-verify-2"])
def test_performance_of_a_real_run(name):
    text = text_of(name)
    perf = haccio.performance(haccio.parse(text))
    for phase, operation in (("write", "WRITE Checkpoint"), ("read", "READ Restart")):
        _, nbytes, seconds = raw_phase(text, operation)
        assert perf[f"{phase}_time_s"] == (seconds, "s")
        assert perf[f"{phase}_mib_s"] == (pytest.approx(nbytes / seconds / MIB), "MiB/s")
    assert len(perf) == 4


def test_drop_cached_pages_of_a_checkpoint(tmp_path):
    """The command the check runs between its phases, on files written as hacc-io writes them
    (no fsync: their pages are dirty): none of their pages are cached after it, and the data is
    untouched; other files are left alone."""
    data = os.urandom(4 * MIB)
    names = haccio.file_names("checkpoint", "fpp", 2)
    for name in [*names, "other"]:
        (tmp_path / name).write_bytes(data)

    def cached(name):
        out = subprocess.check_output(["fincore", "-nbr", "-o", "RES", tmp_path / name], text=True)
        return int(out)

    if not cached(names[0]):
        pytest.fail(f"nothing of the files written in {tmp_path} is in the page cache")
    subprocess.run(["bash", "-c", haccio.drop_cached_pages_command(tmp_path)], check=True)
    assert [cached(name) for name in names] == [0, 0]
    assert cached("other") > 0
    assert all((tmp_path / name).read_bytes() == data for name in names)


# ---- campaigns: dry runs --------------------------------------------------------------------


POINT = {
    "check": "haccio_check",
    "parameters": {
        "particles": 100_000,
        "verify": [False, True],
        "procs": 2,
        "procs_per_node": "system",
    },
}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_missing_haccio_is_skipped_named_and_never_passed(
    configs_copy, spack_build, tmp_path, capsys, system
):
    runs.write_campaign(configs_copy, "haccpoints", [POINT])
    status, out, run_dir = runs.dry_run(capsys, "haccpoints", system, tmp_path / "results")
    assert status == EXIT_FAILED
    skips = runs.skip_lines(out, "haccio_check")
    assert len(skips) == 2 * 2, out  # verify or not, both MPI flavours
    bin_dir = spack_build / system / "view" / "bin"
    for line in skips:
        # each program the job would launch is named
        wanted = ["hacc_io"] if "%.verify=true" in line else ["hacc_io_write", "hacc_io_read"]
        for program in wanted:
            assert f"{program} is not built: no {bin_dir / program} " in line, line
        assert f"make spack SYSTEM={system}" in line, line
    manifest = runs.manifest(run_dir)
    assert manifest["status"] == "incomplete" and manifest["results"] == {"skip": 4}


def test_unknown_layout_is_refused_naming_it(configs_copy, spack_build, tmp_path, capsys):
    """A layout hacc-io has no programs for: the campaign's schema refuses it before anything
    runs (and haccio.programs, the check's own guard, names it too)."""
    runs.write_campaign(
        configs_copy, "haccbad", [{"check": "haccio_check", "parameters": {"layout": "N-1"}}]
    )
    argv = ["campaign", "run", "haccbad", "--system", "local", "--dry-run"]
    assert main(argv + ["--results", str(tmp_path / "results")]) == 2
    assert "checks[0].parameters.layout: 'N-1'" in capsys.readouterr().err
    with pytest.raises(ValueError, match="HACC-IO layout 'N-1': not one of fpp, shared"):
        haccio.programs("N-1", False)


def require_hacc_io(system: str) -> str:
    """The MPI flavour of the system's Spack view, when it has every HACC-IO program."""
    names = [name for launch in haccio.PROGRAMS.values() for name in launch.values()]
    return runs.require_view(system, *names, what="HACC-IO")


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_job_scripts_with_the_view(configs_copy, tmp_path, capsys, system):
    """With the system's Spack view: without verify, the job writes the checkpoint, drops its
    cached pages on scratch (not in memory) and reads it back, each phase under its log tags;
    with verify one launch of hacc_io; the view's programs, runtime and MPI only."""
    mpi = require_hacc_io(system)
    entry = {
        "check": "haccio_check",
        "parameters": {
            "particles": 100_000,
            "layout": ["fpp", "shared"],
            "verify": [False, True],
            "target": ["scratch", "memory"],
            "procs": 4,
            "procs_per_node": "system",
        },
    }
    runs.write_campaign(configs_copy, "haccpoints", [entry])
    status, out, run_dir = runs.dry_run(capsys, "haccpoints", system, tmp_path / "results")
    assert status == 0, out
    scripts = runs.job_scripts(run_dir, "haccio_check_*")
    assert len(scripts) == 2 * 2 * 2 and all(f"/{mpi}/" in str(s) for s in scripts), scripts
    seen = set()
    for script in scripts:
        text = script.read_text()
        # the job's tags (its first export; the phases export their own later)
        first = next(line for line in text.splitlines() if "IOSTUDY_LOG_TAGS=" in line)
        tags = runs.log_tags(first)
        layout, verify, target = tags["layout"], tags["verify"] == "true", tags["target"]
        seen.add((layout, verify, target))
        assert (tags["check"], tags["particles"], tags["procs"]) == ("haccio_check", "100000", "4")
        assert tags["campaign"] == "haccpoints" and tags["run_id"] == run_dir.name
        assert tags["drop_cache"] == "true" and "phase" not in tags
        # the MPI-IO path of iostudy's build, seed 002's (no O_SYNC there)
        assert tags["interface"] == "mpiio" and tags["osync"] == "false"
        assert runs.exported(text, "HACC_IO_INTERFACE") == "mpiio"
        assert "HACC_IO_OSYNC" not in text
        assert runs.exported(text, "LD_PRELOAD") == str(checks.runtime_library(system, mpi))
        assert runs.exported(text, "DARSHAN_LOGPATH") == str(run_dir / "darshan")
        workdir = Path(re.search(r"^mkdir -p (\S+) ", text, re.M).group(1))
        root = (
            run_dir / "scratch" if target == "scratch" else Path(f"/dev/shm/iostudy-{run_dir.name}")
        )
        assert workdir.is_relative_to(root), workdir
        args = f"100000 {workdir / 'checkpoint'}"
        lines = text.splitlines()
        launches = [line for line in lines if str(spackenv.view_dir(system)) + "/bin/" in line]
        launcher = '"${IOSTUDY_MPIRUN:-mpirun}" -np 4 ' if system == "local" else "srun "
        assert all(line.startswith(launcher) for line in launches), launches
        if system == "testcluster":
            assert "#SBATCH --ntasks=4" in lines and "#SBATCH --ntasks-per-node=2" in lines
            assert tags["nodes"] == "2"
        programs = {
            p: spackenv.view_program(system, n) for p, n in haccio.programs(layout, verify).items()
        }
        if verify:
            assert launches == [f"{launcher}{programs['verify']} {args}"]
            assert "phase=" not in text and "iflag=nocache" not in text
            continue
        write = next(i for i, line in enumerate(lines) if "phase=write" in line)
        assert lines[write + 1] == f"{launcher}{programs['write']} {args} > haccio-write.out"
        if target == "scratch":
            drop = lines[write + 2]
            assert f"for f in {workdir}/checkpoint-Part*.data; do" in drop
            assert 'sync "$f"' in drop and "iflag=nocache count=0" in drop
            read_tags = lines[write + 3]
        else:  # the memory target's pages are its storage
            assert "iflag=nocache" not in text
            read_tags = lines[write + 2]
        assert read_tags.startswith("export IOSTUDY_LOG_TAGS=") and "phase=read" in read_tags
        assert launches[1] == f"{launcher}{programs['read']} {args}"
        assert lines.index(launches[1]) > lines.index(read_tags)
    assert len(seen) == 8
    assert not runs.darshan_logs(run_dir)


# ---- a real run from the Spack view -----------------------------------------------------------


def test_real_run_passes_and_its_logs_show_a_file_per_rank(configs_copy, tmp_path, capsys):
    """100,000 particles on 2 ranks, file per process, from the local Spack view under the
    runtime, through MPI-IO (iostudy's build, seed 002's) and POSIX (upstream's), with and
    without hacc_io's verification: every job passes with every performance variable, and
    the logs (one per phase without verify, one with) show one file per rank, opened by that
    rank only, holding its particles and the header: in the MPI-IO module and, under it, POSIX
    for interface mpiio; in POSIX alone for interface posix."""
    import darshan

    require_hacc_io("local")
    particles = 100_000
    parameters = {
        "particles": particles,
        "verify": [False, True],
        "procs": 2,
        "interface": ["mpiio", "posix"],
    }
    entry = {"check": "haccio_check", "parameters": parameters}
    run_dir = runs.real_run(capsys, configs_copy, "haccreal", [entry], tmp_path / "results")
    cases = runs.report_cases(run_dir)
    assert len(cases) == 4
    for case in cases:
        assert case["result"] == "pass"
        perf = runs.perf_values(case)
        assert set(perf) == {"write_mib_s", "write_time_s", "read_mib_s", "read_time_s"}
        assert all(v[0] > 0 for v in perf.values())
        assert perf["write_mib_s"][4] == "MiB/s" and perf["read_time_s"][4] == "s"
    per_file = haccio.HEADER_BYTES + particles * haccio.PARTICLE_BYTES
    names = haccio.file_names(haccio.PREFIX, "fpp", 2)
    phases = []
    for path in runs.darshan_logs(run_dir):
        report = darshan.DarshanReport(str(path), read_all=True)
        tags = report.metadata["job"]["metadata"]
        assert tags["check"] == "haccio_check" and report.metadata["job"]["nprocs"] == 2
        phase = tags.get("phase", "both")
        phases.append((tags["interface"], tags["verify"], phase))
        mpiio = tags["interface"] == "mpiio"
        assert ("MPI-IO" in report.modules) == mpiio, (tags, report.modules)
        written = per_file if phase in ("write", "both") else 0
        read = per_file if phase in ("read", "both") else 0
        for module, prefix in (("MPI-IO", "MPIIO"), ("POSIX", "POSIX")):
            if module == "MPI-IO" and not mpiio:
                continue
            records = runs.records_by_name(report, module)
            # (OMPIO leaves files of its own beside them: <file>.locktest..., shared pointers)
            mine = {
                Path(name).name: row for name, row in records.items() if Path(name).name in names
            }
            assert sorted(mine) == names, sorted(Path(n).name for n in records)
            for rank, name in enumerate(names):
                assert mine[name]["rank"] == rank  # a file per rank, no other rank opened it
                # the whole file, header and particles, in either module
                assert mine[name][f"{prefix}_BYTES_WRITTEN"] == written
                assert mine[name][f"{prefix}_BYTES_READ"] == read
    assert sorted(phases) == sorted(
        (i, v, p)
        for i in ("mpiio", "posix")
        for v, p in (("false", "read"), ("false", "write"), ("true", "both"))
    )
