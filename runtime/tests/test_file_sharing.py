"""A file's sharing class is over all its modules (iostudy.logs.sharing), on a real log.

ROMIO's deferred open (MPICH; programs/mpiio_deferred.c: hints romio_no_indep_rw=true,
cb_nodes=2, cb_config_list *:2) leaves POSIX records of the two aggregators only, while all
four ranks opened the file through MPI-IO (one record, reduced to rank -1). PyDarshan says which
ranks hold records (the oracle): the file is every process's, N:1, in every row the store keeps
of it, and the job table counts its bytes as shared, not as partially shared (what it said when
the class was taken over POSIX and STDIO alone)."""

from __future__ import annotations

import os
import shutil

import darshan
from rt_run import real_tmp

from iostudy.metrics import jobstats
from iostudy.store import ingest, store

NPROCS, BLOCK = 4, 65536


def test_deferred_open_file_is_shared_by_every_process(runner, tmp_path_factory):
    prog = runner.mpi_program("mpiio_deferred", "mpich")
    d = real_tmp(tmp_path_factory, "deferred")
    res = runner.mpirun("mpich", NPROCS, [prog, d], d)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS}\n", res.describe()
    name = os.path.join(d, "shared.dat")

    report = darshan.DarshanReport(str(res.log), read_all=True)
    ranks = {
        mod: {r["rank"] for r in report.records[mod] if report.name_records[r["id"]] == name}
        for mod in ("POSIX", "MPI-IO")
    }
    assert ranks["MPI-IO"] == {-1}  # every rank opened it through MPI-IO
    assert len(ranks["POSIX"]) == 2 and -1 not in ranks["POSIX"]  # the two aggregators

    tree = tmp_path_factory.mktemp("deferred-tree")
    shutil.copy(res.log, tree / "deferred.darshan")
    root = tmp_path_factory.mktemp("deferred-store") / "store"
    assert ingest.ingest([tree], root).logs_ingested == 1
    con = store.connect(root)
    rows = con.execute("SELECT module, rank, sharing FROM files WHERE path = ?", [name]).fetchall()
    assert sorted(rows) == sorted(
        [("mpiio", -1, "N:1")] + [("posix", r, "N:1") for r in ranks["POSIX"]]
    )
    (job,) = jobstats.job_table(con).to_dict("records")
    assert job["strategy"] == "N:1"
    assert (job["shared_bytes"], job["partial_bytes"]) == (NPROCS * BLOCK, 0)
    assert job["procs_per_file"] == NPROCS  # all of them share it
    assert job["io_procs"] == 2  # but the aggregators alone moved its bytes through POSIX
