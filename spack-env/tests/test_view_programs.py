"""Every program of the Spack view runs a tiny case (after `make spack SYSTEM=...`).

Needs a Spack build: without build/spack/<system>/view each test skips naming the missing
program and the command that makes it. IOSTUDY_SPACK_SYSTEM picks the system (default local).
The oracles are outside the programs: sizes and signatures of the files they write, counts
fixed by their parameters, hits planted in generated sequences, and the Darshan log of the
view's runtime read by PyDarshan.
"""

import json
import os
import subprocess
from pathlib import Path

import pytest

from iostudy.benchmarks import hmmer, spackenv
from iostudy.logs.darshanlog import read_log

SYSTEM = os.environ.get("IOSTUDY_SPACK_SYSTEM", "local")
PROCS = 2
MIB = 1 << 20


def program(name: str) -> Path:
    path = spackenv.view_program(SYSTEM, name)
    if path is None:
        pytest.skip(
            f"{spackenv.view_dir(SYSTEM) / 'bin' / name} is missing: run `make spack "
            f"SYSTEM={SYSTEM}` (needs Spack, see spack-env/README.md)"
        )
    return path


@pytest.fixture(scope="module")
def mpi():
    found = spackenv.view_mpi(SYSTEM)
    if found is None:
        pytest.skip(
            f"{spackenv.record_path(SYSTEM)} is missing: no Spack build for {SYSTEM}; run `make "
            f"spack SYSTEM={SYSTEM}` (needs Spack >= 1.0, see spack-env/README.md)"
        )
    return found


def run(mpi, nprocs, cmd, cwd, app_env=None, timeout=300):
    """cmd under the view's mpirun; app_env goes to the ranks only (through the launcher), so
    that mpirun itself is never instrumented."""
    flavour, mpirun = mpi
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DARSHAN_", "LD_PRE"))}
    launcher = [str(mpirun), "-np", str(nprocs)]
    if flavour == "openmpi":
        env.update(OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
        launcher += ["--oversubscribe", "--mca", "btl", "self,vader"]
    for key, value in (app_env or {}).items():
        launcher += ["-x", f"{key}={value}"] if flavour == "openmpi" else ["-genv", key, value]
    result = subprocess.run(
        launcher + [str(c) for c in cmd],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert result.returncode == 0, f"{cmd[0]} failed:\n{result.stdout}\n{result.stderr}"
    return result.stdout


def test_ior_posix_writes_every_block_and_reports_json(mpi, tmp_path):
    out = run(
        mpi,
        PROCS,
        [
            program("ior"),
            "-a",
            "POSIX",
            "-b",
            "1m",
            "-t",
            "256k",
            "-s",
            "2",
            "-k",
            "-o",
            "ior.dat",
            "-O",
            "summaryFormat=JSON",
        ],
        tmp_path,
    )
    assert (tmp_path / "ior.dat").stat().st_size == PROCS * 2 * MIB
    summary = json.loads(out[out.index("{") :])
    assert {t["operation"] for t in summary["summary"]} == {"write", "read"}


@pytest.mark.parametrize(
    ("api", "name", "signature"), [("HDF5", "ior.h5", b"\x89HDF"), ("NCMPI", "ior.nc", b"CDF")]
)
def test_ior_hdf5_and_pnetcdf_backends(mpi, tmp_path, api, name, signature):
    run(
        mpi,
        PROCS,
        [program("ior"), "-a", api, "-b", "1m", "-t", "256k", "-k", "-o", name],
        tmp_path,
    )
    assert (tmp_path / name).read_bytes()[: len(signature)] == signature


def test_mdtest_creates_stats_removes(mpi, tmp_path):
    out = run(mpi, PROCS, [program("mdtest"), "-n", "10", "-d", tmp_path / "md"], tmp_path)
    for phase in ("File creation", "File stat", "File removal"):
        line = next(x for x in out.splitlines() if x.strip().startswith(phase))
        assert float(line.split()[2]) > 0
    assert f"{PROCS * 10} files" in out


def test_metarates_and_iomodel(mpi, tmp_path):
    flavour = mpi[0]
    out = run(
        mpi, PROCS, [program(f"metarates-{flavour}"), "-d", tmp_path / "mr", "-n", "20"], tmp_path
    )
    phases = [json.loads(line) for line in out.splitlines()]
    assert [p["phase"] for p in phases] == ["create", "stat", "utime", "remove"]
    assert all(p["ops"] == PROCS * 20 for p in phases)
    out = run(
        mpi,
        PROCS,
        [
            program(f"iomodel-{flavour}"),
            "--size",
            "64K",
            "--max-procs",
            PROCS,
            "--procs-per-node",
            PROCS,
            "--dir",
            tmp_path,
        ],
        tmp_path,
    )
    lines = [json.loads(line) for line in out.splitlines()]
    assert lines and all(line["bytes"] == 64 * 1024 for line in lines)


def test_ioprobe_writes_one_file_per_writer(mpi, tmp_path):
    flavour = mpi[0]
    out = run(
        mpi,
        PROCS,
        [
            program(f"ioprobe-{flavour}"),
            "--dir",
            tmp_path / "probe",
            "--size",
            "1M",
            "--transfer",
            "256K",
            "--keep",
        ],
        tmp_path,
    )
    rec = json.loads(out)
    assert rec["writers"] == PROCS and len(rec["write_s"]) == PROCS
    for r in range(PROCS):
        assert (tmp_path / "probe" / f"writer.{r}").read_bytes() == bytes([1 + r]) * MIB


def test_hacc_io_file_per_process_verifies_its_contents(mpi, tmp_path):
    out = run(mpi, PROCS, [program("hacc_io"), "1000", tmp_path / "part"], tmp_path)
    assert "CONTENTS VERIFIED... Success" in out
    assert len(list(tmp_path.glob("part-Part*-of-*.data"))) == PROCS


def test_btio_collective_mpi_io_file_size(mpi, tmp_path):
    program("btio")
    grid, steps = 8, 2
    (tmp_path / "out").mkdir()
    # mode, method (0: MPI collective I/O), steps, grid, output folder
    (tmp_path / "bt.in").write_text(f"w\n0\n{steps}\n{grid} {grid} {grid}\n./out\n")
    out = run(mpi, 4, [program("btio"), "bt.in"], tmp_path)  # BTIO: a square count
    assert "MPI collective I/O" in out
    # 5 doubles per grid point per time step
    assert (tmp_path / "out" / "btio.mpi").stat().st_size == grid**3 * 5 * 8 * steps


def test_flash_io_writes_checkpoint_and_plot_files(mpi, tmp_path):
    run(mpi, PROCS, [program("flash_benchmark_io"), "-q", "-f", tmp_path / "f_"], tmp_path)
    for kind in ("chk", "plt_cnt", "plt_crn"):
        written = tmp_path / f"f_ncmpi_{kind}_0000.nc"
        assert written.read_bytes()[:3] == b"CDF"


def test_madbench2_io_mode(mpi, tmp_path):
    env = {"IOMETHOD": "MPI", "IOMODE": "SYNC", "FILETYPE": "SHARED", "BWEXP": "1.0"}
    out = run(mpi, 4, [program("MADbench2.x"), 256, 4, 1, 8, 8, 1, 1], tmp_path, env)
    assert "MADbench 2.0 IO-mode" in out and "IOMETHOD = MPI" in out
    assert "W_total" in out and "C_total" in out


def test_hmmsearch_finds_the_planted_sequences(mpi, tmp_path):
    """The view's hmmbuild and hmmsearch --mpi on iostudy.benchmarks.hmmer's generated inputs."""
    alignment, fasta = hmmer.write_inputs(tmp_path, 2, 50, 120)
    subprocess.run(
        [program("hmmbuild"), "fam.hmm", alignment], cwd=tmp_path, check=True, capture_output=True
    )
    run(
        mpi,
        PROCS,
        [program("hmmsearch"), "--mpi", "--tblout", "hits.tbl", "fam.hmm", fasta],
        tmp_path,
    )
    hits = {}
    for line in (tmp_path / "hits.tbl").read_text().splitlines():
        if not line.startswith("#"):
            hits.setdefault(line.split()[2], set()).add(line.split()[0])
    assert hits == hmmer.planted(2, 50)


def test_view_runtime_records_ior(mpi, tmp_path):
    """The view's runtime (and its MPI plugin beside it) instruments a view program."""
    runtime = spackenv.view_library(SYSTEM, "libiostudy.so")
    if runtime is None:
        pytest.skip(f"{spackenv.view_dir(SYSTEM)}/lib/libiostudy.so is missing: make spack")
    logs = tmp_path / "logs"
    logs.mkdir()
    env = {"LD_PRELOAD": str(runtime), "DARSHAN_LOGPATH": str(logs)}
    run(
        mpi,
        PROCS,
        [
            program("ior"),
            "-a",
            "POSIX",
            "-w",
            "-b",
            "1m",
            "-t",
            "1m",
            "-k",
            "-o",
            tmp_path / "ior.dat",
        ],
        tmp_path,
        env,
    )
    (log,) = logs.rglob("*.darshan")
    report = read_log(log)
    names = report["name_records"]
    written = sum(
        r["counters"]["POSIX_BYTES_WRITTEN"]
        for r in report["records"]["POSIX"]
        if names[r["id"]] == str(tmp_path / "ior.dat")
    )
    assert report["job"]["nprocs"] == PROCS
    assert written == PROCS * MIB
