"""Where the checks take their programs from, and what a run manifest records of a Spack build.

A Spack build is stood in for by a folder laid out as `iostudy spack build` leaves it
(<system>/view and <system>/build-record.json): the spack_build fixture of the root
conftest.py, a temporary folder outside the checkout, as a site may keep its build. CI has no Spack.
The real build is exercised by spack-env/tests/test_view_programs.py where Spack exists.
"""

import hashlib
import json
from pathlib import Path

from iostudy.benchmarks import checks, spackenv
from iostudy.cli.cli import main
from iostudy.core import config


def fake_view(root, system, files):
    for rel in files:
        path = root / system / "view" / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"\x7fELF" + rel.encode())


def write_record(root, system, lock_sha="ab" * 32):
    path = root / system / "build-record.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    record = {
        "system": system,
        "spack": {"version": "1.1.0"},
        "spack_lock_sha256": lock_sha,
        "specs": [{"name": "openmpi", "external": {"path": "/usr"}}],
    }
    path.write_text(json.dumps(record))
    return path


def test_without_spack_build_the_cmake_builds_are_used(spack_build):
    assert checks.runtime_library("local", "openmpi") == checks.RUNTIME_BUILD
    assert checks.benchmark_program("local", "iomodel", "mpich") == (
        config.REPO_ROOT / "build" / "reframe-checks" / "iomodel-mpich"
    )
    assert spackenv.manifest_entry("local", None) is None
    assert spackenv.view_mpi("local") is None


def test_the_view_wins_for_what_it_has(spack_build):
    fake_view(
        spack_build,
        "local",
        ["bin/iomodel-openmpi", "lib/libiostudy.so", "lib/libiostudy-mpi-openmpi.so"],
    )
    view = spack_build / "local" / "view"
    assert checks.runtime_library("local", "openmpi") == view / "lib" / "libiostudy.so"
    assert checks.benchmark_program("local", "iomodel", "openmpi") == view / "bin/iomodel-openmpi"
    # The view was built with one MPI: the other flavour's programs and runtime (with its
    # plugin) still come from `make setup`.
    assert checks.benchmark_program("local", "iomodel", "mpich").parent == checks.CHECKS_BUILD
    assert checks.runtime_library("local", "mpich") == checks.RUNTIME_BUILD
    # Another system's view is not this one's.
    assert checks.runtime_library("testcluster", "openmpi") == checks.RUNTIME_BUILD


def test_manifest_entry_and_mpi_come_from_the_record(spack_build):
    path = write_record(spack_build, "local", lock_sha="cd" * 32)
    entry = spackenv.manifest_entry("local", None)
    assert entry["record"] == str(path)  # a build outside the checkout: its path as it is
    assert entry["record_sha256"] == sha256(path)
    assert entry["spack_lock_sha256"] == "cd" * 32
    assert entry["spack_version"] == "1.1.0"
    assert spackenv.view_mpi("local") == ("openmpi", Path("/usr/bin/mpirun"))


def test_dry_run_manifest_references_the_build(spack_build, tmp_path, capsys):
    record = write_record(spack_build, "local")
    fake_view(spack_build, "local", ["lib/libiostudy.so", "lib/libiostudy-mpi-openmpi.so"])
    results = tmp_path / "results"
    status = main(
        ["campaign", "run", "quick", "--system", "local", "--dry-run", "--results", str(results)]
    )
    assert "WARNING: no Spack build" not in capsys.readouterr().out
    assert status == 0
    (run_dir,) = results.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["spack_build_missing"] is None
    assert manifest["spack_build"]["record"] == str(record)
    assert manifest["spack_build"]["record_sha256"] == sha256(record)
    runtime = spack_build / "local" / "view" / "lib" / "libiostudy.so"
    assert manifest["binaries_sha256"][str(runtime)] == sha256(runtime)


def sha256(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_a_run_without_the_spack_build_its_system_expects_says_so(spack_build, tmp_path, capsys):
    """local has a site scope (configs/systems/local/spack) and here no build: the run says so
    at its start and its end, and its manifest keeps why."""
    assert (config.configs_dir() / "systems" / "local" / "spack").is_dir()
    results = tmp_path / "results"
    status = main(
        ["campaign", "run", "quick", "--system", "local", "--dry-run", "--results", str(results)]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    assert out.count("campaign: WARNING: no Spack build: system local expects a Spack build") == 2
    (run_dir,) = results.iterdir()
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert manifest["spack_build"] is None
    assert "make spack SYSTEM=local" in manifest["spack_build_missing"]
