"""H5F and PNETCDF_FILE records of programs/hdf5_file.c and programs/pnetcdf_file.c (Open MPI,
2 ranks), with the shared-file reduction (one rank -1 record, counts summed) and without it
(DARSHAN_DISABLE_SHARED_REDUCTION: one record per rank).

Per rank (the programs' headers give the patterns): HDF5: 2 opens (create, then open), 2
flushes, through the MPI-IO driver; PnetCDF: 1 create, 1 open, 1 redef, 1 sync, 1 collective
wait, at least 2 N * 4 bytes put and N * 4 got. The oracle is PyDarshan reading the log in a
subprocess.
"""

from __future__ import annotations

import os

import pytest
from rt_checks import records_named
from rt_killed import kill_when_ready, merged, mmap_logs
from rt_run import Scenario, real_tmp

from iostudy.logs.darshanlog import read_log

NPROCS = 2
VAR_BYTES = 1024 * 4  # N ints per rank, one variable
PROGRAMS = {"hdf5": "libhdf5-openmpi-dev", "pnetcdf": "libpnetcdf-dev"}
MODES = ["reduced", "per-rank"]


def program(runner, lib: str):
    """programs/<lib>_file.c built for Open MPI; skips naming the Debian package when absent."""
    prog = runner.tests_dir / f"{lib}_file-openmpi"
    if not prog.is_file():
        pytest.skip(
            f"{prog.name} not built: {PROGRAMS[lib]} (Open MPI build) was not found at configure "
            f"time; install it (ci/apt-packages.txt) and run `make setup`"
        )
    return runner.mpi_program(f"{lib}_file", "openmpi")


def run_program(runner, tmp_path_factory, lib: str, mode: str) -> Scenario:
    prog = program(runner, lib)
    d = real_tmp(tmp_path_factory, f"{lib}_{mode}")
    env = {"DARSHAN_DISABLE_SHARED_REDUCTION": "1"} if mode == "per-rank" else {}
    res = runner.mpirun("openmpi", NPROCS, [prog, d], d, env_extra=env)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS}\n", res.describe()
    s = Scenario(d, res, read_log(res.log), 0)
    s.mode = mode
    return s


@pytest.fixture(scope="module", params=MODES)
def hdf5_run(request, runner, tmp_path_factory) -> Scenario:
    return run_program(runner, tmp_path_factory, "hdf5", request.param)


@pytest.fixture(scope="module", params=MODES)
def pnetcdf_run(request, runner, tmp_path_factory) -> Scenario:
    return run_program(runner, tmp_path_factory, "pnetcdf", request.param)


def file_records(run: Scenario, module: str, name: str) -> tuple[list, int]:
    """The records of file ``name``: one rank -1 record summing the NPROCS ranks, or one per
    rank; and by how many ranks each record's counts are multiplied."""
    recs = records_named(run.log, module, name)
    if run.mode == "reduced":
        assert [r["rank"] for r in recs] == [-1], f"{name}: one record reduced over all ranks"
        return recs, NPROCS
    assert sorted(r["rank"] for r in recs) == list(range(NPROCS)), f"{name}: one per rank"
    return recs, 1


# Durations are differences of clock readings, timestamps those readings moved to the job's
# start: the two roundings can differ in the last bits.
ROUNDING = 1e-9


def check_timestamps(rec: dict, prefix: str, run: Scenario, ranks: int) -> None:
    """Ordered timestamps within the run; a meta time (summed over ``ranks``) within them."""
    f = rec["fcounters"]
    opened, closed = f[f"{prefix}_F_OPEN_START_TIMESTAMP"], f[f"{prefix}_F_CLOSE_END_TIMESTAMP"]
    assert 0 < opened <= f[f"{prefix}_F_OPEN_END_TIMESTAMP"], f
    assert 0 < f[f"{prefix}_F_CLOSE_START_TIMESTAMP"] <= closed, f
    assert opened < closed <= run.log["job"]["run_time"], f
    assert 0 < f[f"{prefix}_F_META_TIME"] <= (closed - opened) * ranks + ROUNDING, f


def test_module_versions(hdf5_run, pnetcdf_run):
    assert hdf5_run.log["modules"]["H5F"]["ver"] == 3
    assert pnetcdf_run.log["modules"]["PNETCDF_FILE"]["ver"] == 3


def test_h5f_record(hdf5_run: Scenario):
    name = os.path.join(hdf5_run.dir, "data.h5")
    recs, ranks = file_records(hdf5_run, "H5F", name)
    mpiio = {r["rank"]: r for r in records_named(hdf5_run.log, "MPI-IO", name)}
    for rec in recs:
        c, f = rec["counters"], rec["fcounters"]
        assert c == {"H5F_OPENS": 2 * ranks, "H5F_FLUSHES": 2 * ranks, "H5F_USE_MPIIO": 1}
        check_timestamps(rec, "H5F", hdf5_run, ranks)
        # HDF5's MPI-IO driver opens, writes, reads and closes the file within the H5F calls.
        m = mpiio[rec["rank"]]["fcounters"]
        last_io = max(m["MPIIO_F_READ_END_TIMESTAMP"], m["MPIIO_F_WRITE_END_TIMESTAMP"])
        assert f["H5F_F_OPEN_START_TIMESTAMP"] <= m["MPIIO_F_OPEN_START_TIMESTAMP"] < last_io
        assert last_io <= f["H5F_F_CLOSE_END_TIMESTAMP"]


def test_pnetcdf_file_record(pnetcdf_run: Scenario):
    name = os.path.join(pnetcdf_run.dir, "data.nc")
    recs, ranks = file_records(pnetcdf_run, "PNETCDF_FILE", name)
    for rec in recs:
        c, f = rec["counters"], rec["fcounters"]
        exact = {k: c.pop(f"PNETCDF_FILE_{k}") for k in ("BYTES_WRITTEN", "BYTES_READ")}
        assert c == {
            f"PNETCDF_FILE_{k}": n * ranks
            for k, n in {
                "CREATES": 1,
                "OPENS": 1,
                "REDEFS": 1,
                "INDEP_WAITS": 0,
                "COLL_WAITS": 1,
                "SYNCS": 1,
                "WAIT_FAILURES": 0,
            }.items()
        }
        assert exact["BYTES_WRITTEN"] >= 2 * VAR_BYTES * ranks  # "v" and "w", header apart
        assert exact["BYTES_READ"] >= VAR_BYTES * ranks
        check_timestamps(rec, "PNETCDF_FILE", pnetcdf_run, ranks)
        wait_start, wait_end = (
            f["PNETCDF_FILE_F_WAIT_START_TIMESTAMP"],
            f["PNETCDF_FILE_F_WAIT_END_TIMESTAMP"],
        )
        assert f["PNETCDF_FILE_F_OPEN_START_TIMESTAMP"] < wait_start <= wait_end
        assert wait_end <= f["PNETCDF_FILE_F_CLOSE_END_TIMESTAMP"]
        assert 0 < f["PNETCDF_FILE_F_WAIT_TIME"] <= (wait_end - wait_start) * ranks + ROUNDING


def test_killed_hdf5_job_keeps_its_h5f_records(runner, tmp_path_factory, capsys):
    """The memory-mapped logs of a killed job hold each rank's H5F record; merged, one rank -1."""
    prog = program(runner, "hdf5")
    d = real_tmp(tmp_path_factory, "hdf5_killed")
    kill_when_ready(runner, [prog, d, "wait"], d, NPROCS)
    name = os.path.join(d, "data.h5")
    ranks = []
    for path in mmap_logs(d):
        (rec,) = records_named(read_log(path), "H5F", name)
        assert rec["counters"] == {"H5F_OPENS": 2, "H5F_FLUSHES": 2, "H5F_USE_MPIIO": 1}
        ranks.append(rec["rank"])
    assert sorted(ranks) == list(range(NPROCS))
    (rec,) = records_named(merged(d, capsys), "H5F", name)
    assert rec["rank"] == -1
    assert rec["counters"] == {
        "H5F_OPENS": 2 * NPROCS,
        "H5F_FLUSHES": 2 * NPROCS,
        "H5F_USE_MPIIO": 1,
    }
