"""The MADbench2 check (reframe-checks/madbench_check.py) and its logic
(iostudy.benchmarks.madbench).

MADbench2's reports are real output of the Spack view's `MADbench2.x` (data/madbench2/,
commands in data/README.md); the tests read the values they expect from the raw text with their
own regular expressions. The campaign runs are ReFrame dry runs (job scripts written, nothing
run), with and without a Spack view, and real runs from the view under the runtime, whose logs
PyDarshan reads.
"""

import re
from pathlib import Path

import campaign_runs as runs
import pytest

from iostudy.benchmarks import checks, madbench, spackenv
from iostudy.core.exitcodes import EXIT_FAILED

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "madbench2"
MIB = 1 << 20
# the captured runs: NPIX 2048, NBIN 4, SBLOCKSIZE 32, FBLOCKSIZE 4096, BWEXP 1 (data/README.md)
CAPTURED = {
    "posix-shared-1proc": (1, "POSIX", "SHARED", 1),
    "posix-shared-4procs": (4, "POSIX", "SHARED", 1),
    "posix-unique-4procs": (4, "POSIX", "UNIQUE", 1),
    "mpi-shared-4procs": (4, "MPI", "SHARED", 1),
    "mpi-unique-1proc": (1, "MPI", "UNIQUE", 1),
    "mpi-shared-4procs-mod2": (4, "MPI", "SHARED", 2),
}


def raw_times(text: str, name: str) -> tuple[float, float, float]:
    """mean, min and max of a line such as `W_r    0.04   [  0.02:  0.05]`, from the raw text."""
    line = re.search(rf"^{name}\s+(\S+)\s+\[\s*(\S+):\s*(\S+)\]", text, re.M)
    return tuple(float(v) for v in line.groups())


# ---- the logic, on plain data and captured output ----------------------------------------------


def test_arguments_and_environment():
    assert madbench.arguments(2048, 4, 32, 4096, 1, 1) == ["2048", "4", "1", "32", "4096", "1", "1"]
    assert madbench.environment("MPI", "UNIQUE", 1.0) == {
        "IOMETHOD": "MPI",
        "IOMODE": "SYNC",
        "FILETYPE": "UNIQUE",
        "BWEXP": "1",
    }


def test_seed_001s_parameters():
    """NPIX 400,384 on 65,536 processes: ~20 MB per process and matrix; 5.13 x 10^12 bytes per
    component with NBIN 4 (the seed's "5.13 TiB")."""
    assert madbench.problem(65536, 400384, 4, 32, 4096, 1, 1, "MPI", "SHARED") is None
    per_process = 400384**2 * 8 / 65536
    assert round(per_process / 1e6, 1) == 19.6 and round(per_process / MIB, 1) == 18.7
    assert round(madbench.phase_bytes(400384, 4) / 1e12, 2) == 5.13


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        ((4, 2048, 4, 32, 4096, 1, 1, "POSIX", "SHARED"), None),
        ((2, 2048, 4, 32, 4096, 1, 1, "POSIX", "SHARED"), "procs 2 is not a square number"),
        ((4, 2048, 4, 32, 4096, 3, 1, "POSIX", "SHARED"), "rmod 3 does not divide procs 4"),
        ((4, 2048, 4, 32, 4096, 1, 3, "POSIX", "SHARED"), "wmod 3 does not divide procs 4"),
        ((4, 2048, 4, 32, 4100, 1, 1, "POSIX", "SHARED"), "fblocksize 4100 is not a whole"),
        ((16, 64, 4, 32, 4096, 1, 1, "POSIX", "SHARED"), "sblocksize 32 too large for npix 64"),
        ((4, 2048, 4, 32, 4096, 1, 1, "MPIIO", "SHARED"), "iomethod 'MPIIO' is not one of"),
        ((4, 2048, 4, 32, 4096, 1, 1, "MPI", "FPP"), "filetype 'FPP' is not one of"),
        ((1, 65536, 4, 32, 4096, 1, 1, "MPI", "SHARED"), "more than 2^31 doubles per process"),
    ],
)
def test_problem(args, problem):
    found = madbench.problem(*args)
    assert found == problem if problem is None else problem in found


@pytest.mark.parametrize("name", sorted(CAPTURED))
def test_parse_real_reports(name):
    procs, iomethod, filetype, mod = CAPTURED[name]
    text = (DATA / f"{name}.out").read_text()
    parsed = madbench.parse(text)
    line = re.search(r"no_pe = (\d+)\s+no_pix = (\d+)\s+no_bin = (\d+)", text)
    assert (parsed["procs"], parsed["npix"], parsed["nbin"]) == tuple(map(int, line.groups()))
    assert (parsed["procs"], parsed["npix"], parsed["nbin"]) == (procs, 2048, 4)
    assert (parsed["rmod"], parsed["wmod"], parsed["gangs"]) == (mod, mod, 1)
    assert (parsed["iomethod"], parsed["filetype"], parsed["iomode"]) == (
        iomethod,
        filetype,
        "SYNC",
    )
    assert f"IOMETHOD = {iomethod}  IOMODE = SYNC  FILETYPE = {filetype}" in text
    assert parsed["bwexp"] == 1.0 and "BWEXP = 1.00" in text
    for phase in "SWC":
        for part in ("cc", "bw", "r", "w", "total"):
            if re.search(rf"^{phase}_{part}\s", text, re.M):
                mean, low, high = raw_times(text, f"{phase}_{part}")
                assert parsed["phases"][phase][part] == {"mean": mean, "min": low, "max": high}
            else:
                assert part not in parsed["phases"][phase]
    assert set(parsed["phases"]["S"]) == {"cc", "bw", "w", "total"}
    assert set(parsed["phases"]["C"]) == {"cc", "bw", "r", "total"}
    # sanity: the captured run is what was asked for
    assert madbench.sanity(parsed, procs, 2048, 4, mod, mod, iomethod, filetype, 1.0) == []


def test_sanity_catches_wrong_parameters():
    parsed = madbench.parse((DATA / "posix-unique-4procs.out").read_text())
    problems = madbench.sanity(parsed, 1, 4096, 8, 2, 1, "MPI", "SHARED", 2.0)
    assert problems == [
        "procs 4, expected 1",
        "npix 2048, expected 4096",
        "nbin 4, expected 8",
        "rmod 1, expected 2",
        "iomethod POSIX, expected MPI",
        "filetype UNIQUE, expected SHARED",
        "busy-work exponent 1.0, expected 2.00",
    ]
    text = (DATA / "mpi-shared-4procs.out").read_text()
    untimed = re.sub(r"^W_w .*$", "W_w          0.00   [      0.00:      0.00]", text, flags=re.M)
    problems = madbench.sanity(madbench.parse(untimed), 4, 2048, 4, 1, 1, "MPI", "SHARED", 1.0)
    assert problems == [
        "W_w: 0.00 s, too short to time (MADbench2 prints 10 ms steps): raise npix or nbin"
    ]


def test_refused_truncated_and_foreign_output_raise_naming_what_is_missing():
    # 2 ranks: MADbench2 stops after its parameter line (stderr: non-square no_pe)
    refused = (DATA / "nonsquare-2procs.out").read_text()
    with pytest.raises(ValueError, match="no 'IOMETHOD = ... FILETYPE = ...' line"):
        madbench.parse(refused)
    assert "non-square no_pe" in (DATA / "nonsquare-2procs.err").read_text()
    text = (DATA / "mpi-shared-4procs.out").read_text()
    with pytest.raises(ValueError, match="no C_r line"):
        madbench.parse(text[: text.index("C_cc")])
    with pytest.raises(ValueError, match="no W_total line"):
        madbench.parse(text[: text.index("W_total")])
    with pytest.raises(ValueError, match="no 'no_pe = ... w_mod = ...' parameter line"):
        madbench.parse(text.replace("no_pe", "no_pes"))
    btio = (Path(__file__).parent / "data" / "btio" / "class-s-4procs-write.out").read_text()
    with pytest.raises(ValueError, match="no 'MADbench 2.0' banner"):
        madbench.parse(btio)


def test_performance_of_a_real_run():
    text = (DATA / "posix-shared-4procs.out").read_text()
    perf = madbench.performance(madbench.parse(text))
    mib = 4 * 2048 * 2048 * 8 / MIB  # NBIN matrices of NPIX^2 doubles
    parts = {"s_write": "S_w", "w_read": "W_r", "w_write": "W_w", "c_read": "C_r"}
    for name, line in parts.items():
        slowest = raw_times(text, line)[2]
        assert perf[f"{name}_s"] == (slowest, "s")
        assert perf[f"{name}_mib_s"] == (pytest.approx(mib / slowest), "MiB/s")
    writes = raw_times(text, "S_w")[2] + raw_times(text, "W_w")[2]
    reads = raw_times(text, "W_r")[2] + raw_times(text, "C_r")[2]
    assert perf["write_mib_s"] == (pytest.approx(2 * mib / writes), "MiB/s")
    assert perf["read_mib_s"] == (pytest.approx(2 * mib / reads), "MiB/s")
    for phase in "SWC":
        assert perf[f"{phase.lower()}_total_s"] == (raw_times(text, f"{phase}_total")[0], "s")


# ---- campaigns: dry runs --------------------------------------------------------------------


# procs_per_node given: campaigns fill in the defaults of a check's parameter schema only
POINT = {
    "check": "madbench_check",
    "parameters": {
        "procs": 4,
        "procs_per_node": "system",
        "npix": 2048,
        "nbin": 4,
        "iomethod": ["POSIX", "MPI"],
        "filetype": ["SHARED", "UNIQUE"],
    },
}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_missing_madbench_is_skipped_named_and_never_passed(
    configs_copy, spack_build, tmp_path, capsys, system
):
    runs.write_campaign(configs_copy, "madpoints", [POINT])
    status, out, run_dir = runs.dry_run(capsys, "madpoints", system, tmp_path / "results")
    assert status == EXIT_FAILED
    skips = runs.skip_lines(out, "madbench_check")
    assert len(skips) == 2 * 2 * 2, out  # methods x file types x MPI flavours
    program = spack_build / system / "view" / "bin" / "MADbench2.x"
    assert all(f"MADbench2.x is not built: no {program}" in line for line in skips), out
    assert all(f"make spack SYSTEM={system}" in line for line in skips), out
    manifest = runs.manifest(run_dir)
    assert manifest["status"] == "incomplete" and manifest["results"] == {"skip": 8}


def test_parameters_madbench_refuses_fail_naming_why(configs_copy, spack_build, tmp_path, capsys):
    point = {"check": "madbench_check", "parameters": {"procs": 2, "procs_per_node": "system"}}
    runs.write_campaign(configs_copy, "madbad", [point])
    status, out, run_dir = runs.dry_run(capsys, "madbad", "local", tmp_path / "results")
    assert status == EXIT_FAILED
    assert "madbench_check: procs 2 is not a square number" in out, out
    assert runs.manifest(run_dir)["results"] == {"fail": 2}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_job_scripts_with_the_view(configs_copy, tmp_path, capsys, system):
    """With the system's Spack view: each point runs the view's MADbench2.x with the view's MPI
    only, in its own scratch folder, with its method, file type and busy-work exponent in the
    environment and in the log's tags, under the runtime."""
    mpi = runs.require_view(system, "MADbench2.x")
    runs.write_campaign(configs_copy, "madpoints", [POINT])
    status, out, run_dir = runs.dry_run(capsys, "madpoints", system, tmp_path / "results")
    assert status == 0, out
    scripts = runs.job_scripts(run_dir, "madbench_check_*")
    assert len(scripts) == 4 and all(f"/{mpi}/" in str(s) for s in scripts), scripts
    program = spackenv.view_program(system, "MADbench2.x")
    seen = set()
    for script in scripts:
        text = script.read_text()
        lines = text.splitlines()
        tags = runs.log_tags(text)
        method, filetype = runs.exported(text, "IOMETHOD"), runs.exported(text, "FILETYPE")
        seen.add((method, filetype))
        assert (tags["iomethod"], tags["filetype"]) == (method, filetype)
        assert (tags["check"], tags["npix"], tags["nbin"], tags["bwexp"]) == (
            "madbench_check",
            "2048",
            "4",
            "1",
        )
        assert (tags["rmod"], tags["wmod"], tags["fblocksize"]) == ("1", "1", "4096")
        assert tags["procs"] == "4" and tags["run_id"] == run_dir.name
        assert runs.exported(text, "BWEXP") == "1" and runs.exported(text, "IOMODE") == "SYNC"
        assert runs.exported(text, "LD_PRELOAD") == str(checks.runtime_library(system, mpi))
        assert runs.exported(text, "DARSHAN_LOGPATH") == str(run_dir / "darshan")
        (launch,) = [line for line in lines if line.endswith(f"{program} 2048 4 1 32 4096 1 1")]
        # MADbench2 works in files/ of its current folder: the job's folder on scratch
        workdir = re.search(r"^mkdir -p (\S+) ", text, re.M).group(1)
        assert Path(workdir).is_relative_to(run_dir / "scratch")
        assert lines[lines.index(launch) - 1] == f"cd {workdir}"
        assert lines[lines.index(launch) + 1] == f"cd {script.parent}"
        assert lines[lines.index(launch) + 2] == f"rm -rf {workdir}"
        if system == "local":
            assert launch.startswith('"${IOSTUDY_MPIRUN:-mpirun}" -np 4 ')
        else:
            assert launch.startswith("srun ")
            assert "#SBATCH --ntasks=4" in lines and "#SBATCH --ntasks-per-node=2" in lines
            assert tags["nodes"] == "2"
    assert seen == {(m, f) for m in madbench.IOMETHODS for f in madbench.FILETYPES}
    assert not runs.darshan_logs(run_dir)


# ---- real runs from the Spack view ----------------------------------------------------------


def test_real_runs_pass_and_their_logs_show_the_method(configs_copy, tmp_path, capsys):
    """POSIX and MPI-IO, shared file and file per process, 4 ranks, NPIX 2048 and NBIN 4 (128
    MiB per phase), from the local Spack view under the runtime: every job passes with every
    performance variable, and its log shows the method's module (MADbench2's POSIX method is
    stdio: the STDIO module; MPI: MPI-IO) moving each phase's bytes twice each way, in one
    shared file or a file per process."""
    import darshan

    runs.require_view("local", "MADbench2.x")
    run_dir = runs.real_run(capsys, configs_copy, "madreal", [POINT], tmp_path / "results")
    cases = runs.report_cases(run_dir)
    assert len(cases) == 4 and {c["result"] for c in cases} == {"pass"}
    names = {f"{n}_s" for n in ("s_write", "w_read", "w_write", "c_read")}
    names |= {f"{n}_mib_s" for n in ("s_write", "w_read", "w_write", "c_read", "write", "read")}
    names |= {"s_total_s", "w_total_s", "c_total_s"}
    for case in cases:
        perf = runs.perf_values(case)
        assert set(perf) == names
        assert all(v[0] > 0 for v in perf.values())
        assert perf["w_read_mib_s"][4] == "MiB/s" and perf["w_read_s"][4] == "s"
    size = madbench.phase_bytes(2048, 4)
    logs = runs.darshan_logs(run_dir)
    assert len(logs) == 4, logs
    seen = set()
    for path in logs:
        log = darshan.DarshanReport(str(path), read_all=True)
        tags = log.metadata["job"]["metadata"]
        method, filetype = tags["iomethod"], tags["filetype"]
        seen.add((method, filetype))
        assert tags["check"] == "madbench_check" and log.metadata["job"]["nprocs"] == 4
        module, prefix = ("STDIO", "STDIO") if method == "POSIX" else ("MPI-IO", "MPIIO")
        assert module in log.modules, log.modules
        if method == "POSIX":
            assert "MPI-IO" not in log.modules
        counters = log.records[module].to_df()["counters"]
        files = [log.name_records[i] for i in counters["id"]]
        data = counters[[("/files/data" in name) for name in files]]
        names_ = {Path(log.name_records[i]).name for i in data["id"]}
        assert names_ == ({"data"} if filetype == "SHARED" else {f"data_{r}" for r in range(4)})
        # S and W write NBIN matrices each, W and C read them
        assert data[f"{prefix}_BYTES_WRITTEN"].sum() == 2 * size
        assert data[f"{prefix}_BYTES_READ"].sum() == 2 * size
    assert seen == {(m, f) for m in madbench.IOMETHODS for f in madbench.FILETYPES}
