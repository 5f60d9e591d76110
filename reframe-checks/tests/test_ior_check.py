"""The IOR check (reframe-checks/ior_check.py) and the logic behind it (iostudy.benchmarks.checks).

IOR's results are real output captured from IOR 4.0.0 runs (data/ior/, see data/README.md);
the campaign runs are ReFrame dry runs (job scripts written, nothing run), with and without a
Spack view: a check whose program is missing is skipped, named, and never counts as passed.
"""

import json
import os
import re
import subprocess
from pathlib import Path

import campaign_runs as runs
import pytest

from iostudy.benchmarks import checks
from iostudy.cli.cli import main
from iostudy.core.exitcodes import EXIT_FAILED

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "ior"
MIB = 1 << 20


def test_arguments():
    write = checks.ior_arguments("MPIIO", "fpp", "4M", 16, 3, Path("dir/testfile"), "write")
    assert write[write.index("-b") + 1] == str(16 * 4 * MIB)
    assert write[write.index("-t") + 1] == str(4 * MIB)
    assert write[write.index("-i") + 1] == "3" and write[write.index("-a") + 1] == "MPIIO"
    assert "-F" in write and "-c" in write and write[-2:] == ["-O", "summaryFormat=JSON"]
    # write with fsync; read other tasks' data; both keep the files for the other phase
    assert {"-w", "-e", "-k"} <= set(write) and not {"-r", "-C"} & set(write)
    read = checks.ior_arguments("POSIX", "shared", "4000000", 16, 1, Path("f"), "read")
    assert {"-r", "-C", "-k"} <= set(read) and not {"-w", "-e"} & set(read)
    assert "-F" not in read and "-c" not in read
    assert read[read.index("-b") + 1] == str(64_000_000)  # unaligned: 4 MB transfers
    with pytest.raises(ValueError, match="phase 'both'"):
        checks.ior_arguments("POSIX", "fpp", "1M", 1, 1, Path("f"), "both")


def test_phase_results_keep_each_phase_own_operation_and_log_tags():
    """A job's two launches: each phase's rows of its own operation (a real -w -r run's output
    stands for both), tagged with that phase's log; a phase without JSON is named."""
    doc = (DATA / "posix-fpp.json").read_text()
    parsed = checks.ior_phase_results({"write": doc, "read": doc}, {"check": "ior_check"})
    rows = parsed["results"]
    assert [r["operation"] for r in rows] == ["write"] * 3 + ["read"] * 3
    assert all(r["log_tags"] == {"check": "ior_check", "phase": r["operation"]} for r in rows)
    assert checks.ior_sanity(parsed, 3, 2, MIB) == []
    with pytest.raises(ValueError, match="read phase: IOR printed no JSON"):
        checks.ior_phase_results({"write": doc, "read": "ior: cannot open\n"}, {})


@pytest.mark.exclusive
def test_results_sanity_and_performance_of_a_real_run():
    stdout = "WARNING: a line some ranks print first\n" + (DATA / "posix-fpp.json").read_text()
    parsed = checks.ior_results(stdout)
    # posix-fpp: 2 tasks, -b 1m, -i 3 (data/README.md)
    assert checks.ior_sanity(parsed, 3, 2, MIB) == []
    problems = checks.ior_sanity(parsed, 4, 4, MIB)
    assert "3 write results, expected 4" in problems
    assert any("expected 4 moving" in p for p in problems)
    # The mean of the bandwidths IOR printed for each iteration, read from the raw text.
    raw = json.loads((DATA / "posix-fpp.json").read_text())
    per_op = {"write": [], "read": []}
    for result in raw["tests"][0]["Results"]:
        entries = result if isinstance(result, list) else [result]
        for entry in entries:
            per_op[entry["access"]].append(float(entry["bwMiB"]))
    perf = checks.ior_performance(parsed)
    for op, values in per_op.items():
        assert perf[f"{op}_mib_s"] == pytest.approx(sum(values) / len(values), rel=1e-9)


def test_no_json_is_an_error():
    with pytest.raises(ValueError, match="no JSON"):
        checks.ior_results("ior: cannot open file\n")


def test_spack_program_says_why_it_cannot_run(spack_build):
    view = spack_build
    program, why = checks.spack_program("local", "ior", "openmpi")
    assert program is None
    assert str(view / "local" / "view" / "bin" / "ior") in why and "make spack SYSTEM=local" in why
    (view / "local" / "view" / "bin").mkdir(parents=True)
    (view / "local" / "view" / "bin" / "ior").write_text("#!/bin/sh\n")
    (view / "local" / "build-record.json").write_text(
        json.dumps({"specs": [{"name": "openmpi", "external": {"path": "/usr"}}]})
    )
    assert checks.spack_program("local", "ior", "openmpi") == (
        view / "local" / "view" / "bin" / "ior",
        "",
    )
    program, why = checks.spack_program("local", "ior", "mpich")
    assert program is None and why == "ior of the Spack view is built with openmpi, not mpich"


IOR_POINT = {
    "check": "ior_check",
    "parameters": {"layout": ["shared", "fpp"], "transfer": "1M", "transfers": 4, "procs": 1},
}


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_missing_ior_is_skipped_named_and_never_passed(
    configs_copy, spack_build, tmp_path, capsys, system
):
    runs.write_campaign(configs_copy, "iorpoints", [IOR_POINT])
    status, out, run_dir = runs.dry_run(capsys, "iorpoints", system, tmp_path / "results")
    assert status == EXIT_FAILED
    skips = runs.skip_lines(out, "ior_check")
    assert len(skips) == 2 * 2, out  # two layouts, both MPI flavours
    assert all(f"no {spack_build / system / 'view' / 'bin' / 'ior'}" in line for line in skips)
    manifest = runs.manifest(run_dir)
    assert manifest["status"] == "incomplete" and manifest["results"] == {"skip": 4}
    # what did not run, and why, for the report's verdict: ReFrame's own skip reason
    not_run = manifest["not_run"]
    assert [(c["check"], c["result"]) for c in not_run] == [("ior_check", "skip")] * 4
    assert {c["environ"] for c in not_run} == {"openmpi", "mpich"}
    assert all(c["reason"].endswith(f"(run `make spack SYSTEM={system}`)") for c in not_run)
    assert f"campaign iorpoints on {system}: incomplete (4 skip)" in out


def test_excluded_combinations_are_not_run(configs_copy, spack_build, tmp_path, capsys):
    """A combination the campaign excludes is skipped as excluded (before anything else, here
    before the missing IOR), and counts apart from the skips that make a run incomplete."""
    point = dict(IOR_POINT, exclude=[{"parameters": {"layout": "fpp"}, "why": "test"}])
    runs.write_campaign(configs_copy, "iorpoints", [point])
    status, out, run_dir = runs.dry_run(capsys, "iorpoints", "local", tmp_path / "results")
    skips = runs.skip_lines(out, "ior_check")
    excluded = [line for line in skips if "excluded by the campaign: layout=fpp" in line]
    reasons = {
        (c["name"], c["result"], c["reason"].split(":")[0])
        for c in runs.manifest(run_dir)["not_run"]
    }
    assert reasons == {
        ("ior_check %.layout=fpp", "excluded", "excluded by the campaign"),
        ("ior_check %.layout=shared", "skip", "ior is not built"),
    }
    assert len(skips) == 4 and len(excluded) == 2, out
    assert all("layout=fpp" in line for line in excluded)
    assert status == EXIT_FAILED
    assert "campaign iorpoints on local: incomplete (2 excluded, 2 skip)" in out


def test_optional_check_skips_leave_the_campaign_complete(
    configs_copy, spack_build, tmp_path, capsys
):
    runs.write_campaign(configs_copy, "iorpoints", [dict(IOR_POINT, optional=True)])
    status, out, _ = runs.dry_run(capsys, "iorpoints", "local", tmp_path / "results")
    assert status == 0, out
    assert "dry-run (4 skip-optional)" in out


def test_acceptance_scripts_every_point_with_the_view(tmp_path, capsys):
    """With this machine's Spack view (make spack SYSTEM=local): every IOR point is scripted,
    with the view's MPI only."""
    mpi = runs.require_view("local", "ior")
    status, out, run_dir = runs.dry_run(capsys, "acceptance", "local", tmp_path / "results")
    assert status == 0, out
    scripts = runs.job_scripts(run_dir, "ior_check_*")
    # 4 APIs x 2 layouts x 2 transfers x 2 targets x process counts 1..2 x 3 repetitions, but
    # PnetCDF's file per process (IOR has none: acceptance excludes it)
    assert len(scripts) == (4 * 2 - 1) * 2 * 2 * 2 * 3
    assert not any("NCMPI" in s.read_text() and " -F " in s.read_text() for s in scripts)
    for script in scripts:
        text = script.read_text()
        assert f"/{mpi}/" in str(script)
        # the write phase, then the read phase (the job's own launch), each with its log's tags
        write = re.search(r"\n(export IOSTUDY_LOG_TAGS=.*phase=write.*)\n(.*)\n(.*)\n(.*)\n", text)
        assert write and "check=ior_check" in write.group(1), text
        assert re.search(r"view/bin/ior -a (POSIX|MPIIO|HDF5|NCMPI) -w -e -k .* -i 1 ", write[2])
        assert write[2].endswith("> ior-write.out")
        # on scratch the files' cached pages are dropped between the phases, not in memory
        if "target=memory" in text:
            assert "phase=read" in write[3] and "iflag=nocache" not in text
        else:
            assert "iflag=nocache count=0" in write[3] and "phase=read" in write[4]
        assert re.search(r"\n.*view/bin/ior -a (POSIX|MPIIO|HDF5|NCMPI) -r -C -k .* -i 1 ", text)
        assert "export DARSHAN_DISABLE_SHARED_REDUCTION=1" in text
        # /dev/shm is recorded for the memory target (the runtime excludes /dev/ by default)
        excludes = re.search(r"export DARSHAN_EXCLUDE_DIRS=(\S+)", text)
        if "target=memory" in text:
            assert excludes and "/dev/" not in excludes.group(1).split(",")
        else:
            assert excludes is None


def test_drop_cached_pages_leaves_the_files_on_storage_only(tmp_path):
    """The command the check runs between its phases, on real files: their pages were in the
    page cache after a write and fsync, and none are after it; the data is untouched."""
    data = os.urandom(8 * MIB)
    for name in ("testfile", "testfile.00000001"):
        with open(tmp_path / name, "wb") as f:
            f.write(data)
            os.fsync(f.fileno())
    cached = lambda: {  # noqa: E731
        p.name: int(subprocess.check_output(["fincore", "-nbr", "-o", "RES", p], text=True))
        for p in tmp_path.iterdir()
    }
    if not any(cached().values()):
        pytest.fail(f"nothing of the files written in {tmp_path} is in the page cache")
    subprocess.run(["bash", "-c", checks.drop_cached_pages_command(tmp_path)], check=True)
    assert cached() == {"testfile": 0, "testfile.00000001": 0}
    assert (tmp_path / "testfile").read_bytes() == data


@pytest.mark.exclusive
def test_every_ior_run_agrees_with_its_log(configs_copy, tmp_path, capsys):
    """Seed 000's Table I on real runs: IOR of the local Spack view under the runtime, POSIX and
    MPI-IO, shared file and file per process, memory and scratch, one iteration of 1 GiB per
    process on 2 ranks (acceptance's size); after ingest, the write and read bandwidth derived
    from each job's log is within 3% of IOR's own, and comes from the API's module. (With 256
    MiB a read from the page cache lasts ~20 ms, and the MPI-IO open and close IOR times but the
    derived time leaves out made 3-4% of it.)"""
    from iostudy.metrics import metrics
    from iostudy.store import store

    runs.require_view("local", "ior")
    params = {
        "api": ["POSIX", "MPIIO"],
        "layout": ["shared", "fpp"],
        "transfer": "4M",
        "transfers": 256,
        "iterations": 1,
        "procs": 2,
        "target": ["memory", "scratch"],
    }
    entries = [{"check": "ior_check", "parameters": params}]
    run_dir = runs.real_run(capsys, configs_copy, "iorlogs", entries, tmp_path / "results")
    assert main(["ingest", str(run_dir), "--store", str(tmp_path / "store")]) == 0
    con = store.connect(tmp_path / "store")
    ior, jobs = (con.execute(f"SELECT * FROM {t}").df() for t in ("ior", "jobs"))
    files = con.execute("SELECT * FROM files").df()
    check = metrics.ior_crosscheck(ior, files, jobs)
    assert len(check) == 2 * 2 * 2 * 2  # APIs x layouts x targets x operations
    # a log per phase of each job
    assert check["log_sha256"].notna().all() and check["log_sha256"].nunique() == 16
    assert (check["log_bytes"] == 2 * 1024 * MIB).all()
    shown = ["api", "layout", "target", "operation", "ior_seconds", "log_seconds", "rel_diff"]
    assert check["within_tolerance"].all(), check[shown].to_string()
