"""Seed 000's characterization on the test cluster, end to end: jobs run under Slurm with the
runtime (and one without it), Slurm's accounting imported live, the log directory ingested as a
facility log tree, and `iostudy jobs` / coverage joining the two by job id."""

import csv
import io
import shlex
from datetime import datetime, timedelta, timezone
from pathlib import Path

import darshan
import pytest
from darshan.backend.cffi_backend import accumulate_records
from slurmtest import VENV_BIN

from iostudy.collect import sacct
from iostudy.core import config
from iostudy.store import store

RUNTIME = config.REPO_ROOT / "build" / "runtime"
B = 1000  # runtime/tests/programs/mpi_io.c's block


def batch_script(tmp_path: Path, name: str, command: str, instrumented=True) -> Path:
    script = tmp_path / f"{name}.sh"
    preload = (
        f"export LD_PRELOAD={shlex.quote(str(RUNTIME / 'libiostudy.so'))}\n"
        f"export DARSHAN_LOGPATH={shlex.quote(str(tmp_path / 'logs'))}\n"
        if instrumented
        else ""
    )
    script.write_text(f"#!/bin/sh\n{preload}{command}\n")
    script.chmod(0o755)
    return script


def test_logs_joined_with_accounting(cluster, tmp_path):
    tmp_path.chmod(0o755)
    since = (datetime.now(timezone.utc) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%S")
    tests = RUNTIME / "tests"
    mpi = cluster.system["mpi"]["mpich"]
    nodes = len(cluster.nodes)
    for d in ("mpi", "serial", "logs"):
        (tmp_path / d).mkdir()
    common = ["--account=root", "--time=2", "--output=/dev/null"]
    parallel = cluster.sbatch(
        *common,
        f"--nodes={nodes}",
        "--ntasks-per-node=2",
        str(
            batch_script(
                tmp_path,
                "mpi",
                f"exec srun --mpi={mpi['srun_mpi']} {tests / 'mpi_io-mpich'} {tmp_path / 'mpi'}",
            )
        ),
        env=cluster.mpi_env("mpich"),
    )
    serial = cluster.sbatch(
        *common,
        "--ntasks=1",
        str(
            batch_script(
                tmp_path,
                "serial",
                f"DARSHAN_ENABLE_NONMPI=1 exec {tests / 'posix_write'} {tmp_path / 'serial'}",
            )
        ),
    )
    plain = cluster.sbatch(
        *common, "--ntasks=1", str(batch_script(tmp_path, "plain", "sleep 1", False))
    )
    for jobid in (parallel, serial, plain):
        assert cluster.wait_job(jobid)["state"] == "COMPLETED", jobid
    cluster.wait_listed([parallel, serial, plain], since)

    st = tmp_path / "store"
    iostudy = VENV_BIN / "iostudy"
    cluster.run(iostudy, "sacct", "import", "--live", "--starttime", since, "--store", st)
    out = cluster.run(iostudy, "ingest", tmp_path / "logs", "--store", st).stdout
    assert out.splitlines()[-1].endswith("logs 2 ingested, 0 skipped, 0 quarantined"), out

    text = cluster.run(iostudy, "jobs", "--store", st, "--csv").stdout
    rows = {int(r["jobid"]): r for r in csv.DictReader(io.StringIO(text))}
    assert set(rows) == {int(parallel), int(serial)}

    # The MPI job: its node count and cores come from Slurm, not from a guess.
    r = rows[int(parallel)]
    assert (r["account"], int(r["nodes"]), int(r["cores"]), int(r["nprocs"])) == (
        "root",
        nodes,
        2 * nodes,
        2 * nodes,
    )
    np_ = 2 * nodes
    t = np_ * (np_ + 1) // 2
    # shared.dat written and read back by every rank (N:1) moves the most bytes; rank<r>.dat are
    # N:N, some.dat N:M; stdio_shared.txt (STDIO, every rank) is N:1 too.
    assert int(r["shared_bytes"]) == 2 * t * B + 100 * t
    stdout = len(f"np={np_}\n")  # rank 0's line on <STDOUT>, an N:N record of STDIO
    assert int(r["unique_bytes"]) == t * B + stdout
    assert int(r["partial_bytes"]) == 10 * (np_ - 1)
    assert r["strategy"] == "N:1" and r["interfaces"] == "POSIX+STDIO"
    assert int(r["io_procs"]) == np_
    total = int(r["bytes_read"]) + int(r["bytes_written"])
    assert total == 3 * t * B + 100 * t + 10 * (np_ - 1) + stdout
    assert r["nodes_source"] == "slurm"
    # MiB/s/CN against an independent oracle: PyDarshan's agg_perf_by_slowest of the same log's
    # POSIX records over the nodes Slurm gave the job (scoped to POSIX, as PyDarshan counts).
    text = cluster.run(iostudy, "jobs", "--store", st, "--csv", "--module", "POSIX").stdout
    posix = next(p for p in csv.DictReader(io.StringIO(text)) if int(p["jobid"]) == int(parallel))
    log = darshan.DarshanReport(str(tmp_path / posix["log_path"]), read_all=False)
    log.mod_read_all_records("POSIX")
    derived = accumulate_records(log.records["POSIX"].to_df(), "POSIX", np_).derived_metrics
    assert float(posix["mib_s_per_cn"]) == pytest.approx(
        derived.agg_perf_by_slowest / nodes, rel=0.01
    )
    # The serial job: one process, its own files.
    r = rows[int(serial)]
    assert (r["strategy"], int(r["nprocs"]), int(r["nodes"]), r["account"]) == ("N:N", 1, 1, "root")

    # Coverage (Table II): two of root's three jobs carry a log.
    name = cluster.system["testbed"]["cluster_name"]
    cov = sacct.coverage(store.connect(st), cluster=name).set_index("account")
    # (other tests' jobs of the last minutes count in the total, never as instrumented)
    assert cov.loc["root", "jobs_instrumented"] == 2
    assert cov.loc["root", "jobs_total"] >= 3
    assert set(cov.loc["root", "apis"].split(",")) == {"S", "P"}
