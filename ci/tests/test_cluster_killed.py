"""Jobs killed by their time limit leave a merged log (seed 002, III-C).

The runtime keeps each process's records in a memory-mapped log in /dev/shm; when Slurm kills a
job at its time limit no shutdown runs, and the cluster's Epilog (ci/templates/
slurm-epilog-iostudy.sh, installed by `make cluster-up`) merges what the processes left into
<state>/darshan-logs/<user>_id<jobid>_killed.darshan. Both jobs run at once (slurmctld checks
time limits about every 30 s, so each ends 60-90 s after it started).
"""

import getpass
import os
import shlex
import subprocess
from pathlib import Path

from slurmtest import poll

from iostudy.core import config
from iostudy.logs.darshanlog import read_log

RUNTIME = config.REPO_ROOT / "build" / "runtime"
B = 1000


def batch_script(tmp_path: Path, name: str, command: str) -> Path:
    script = tmp_path / f"{name}.sh"
    script.write_text(
        "#!/bin/sh\n"
        f"export LD_PRELOAD={shlex.quote(str(RUNTIME / 'libiostudy.so'))}\n"
        f"export DARSHAN_LOGPATH={shlex.quote(str(tmp_path / 'logs'))}\n"
        f"{command}\n"
    )
    script.chmod(0o755)
    return script


def merged_log(cluster, jobid: str) -> dict:
    state = Path(cluster.env["SLURM_CONF"]).parent.parent
    user = os.environ.get("LOGNAME") or getpass.getuser()
    path = state / "darshan-logs" / f"{user}_id{jobid}_killed.darshan"
    poll(path.is_file, 60, f"the epilog to merge job {jobid}'s logs into {path}")
    return read_log(path)


def posix(log: dict, name: str) -> list[dict]:
    ids = {v: k for k, v in log["name_records"].items()}
    return [r for r in log["records"]["POSIX"] if r["id"] == ids.get(name)]


def test_time_limit_leaves_merged_logs(cluster, tmp_path):
    tmp_path.chmod(0o755)
    one_dir, mpi_dir = tmp_path / "one", tmp_path / "mpi"
    one_dir.mkdir()
    mpi_dir.mkdir()
    tests = RUNTIME / "tests"
    one = batch_script(
        tmp_path,
        "one",
        f"DARSHAN_ENABLE_NONMPI=1 exec {tests / 'killed_io'} {one_dir}",
    )
    mpi = cluster.system["mpi"]["mpich"]
    nodes = len(cluster.nodes)
    many = batch_script(
        tmp_path,
        "many",
        f"exec srun --mpi={mpi['srun_mpi']} {tests / 'killed_mpi-mpich'} {mpi_dir}",
    )
    common = ["--time=1", "--no-requeue"]
    one_id = cluster.sbatch(*common, "--ntasks=1", f"--output={tmp_path / 'one.out'}", str(one))
    many_id = cluster.sbatch(
        *common,
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        f"--output={tmp_path / 'many.out'}",
        str(many),
        env=cluster.mpi_env("mpich"),
    )
    for jobid in (one_id, many_id):
        assert cluster.wait_job(jobid, timeout=240)["state"] == "TIMEOUT"
    assert not list((tmp_path / "logs").rglob("*.darshan")), "no process reached its shutdown"

    # One process: its file, exactly as far as it got.
    log = merged_log(cluster, one_id)
    (rec,) = posix(log, str(one_dir / "killed.dat"))
    c = rec["counters"]
    assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_STATS"]) == (1, 5, 1)
    assert c["POSIX_BYTES_WRITTEN"] == 5 * B and c["POSIX_MAX_BYTE_WRITTEN"] == 5 * B - 1
    assert log["job"]["jobid"] == int(one_id) and log["job"]["nprocs"] == 1

    # One rank per node: the ranks' own files, and the file every rank wrote reduced to one
    # rank -1 record, as the normal shutdown would have written them.
    log = merged_log(cluster, many_id)
    assert log["job"]["jobid"] == int(many_id) and log["job"]["nprocs"] == nodes
    for rank in range(nodes):
        (own,) = posix(log, str(mpi_dir / f"rank{rank}.dat"))
        assert own["rank"] == rank
        assert own["counters"]["POSIX_BYTES_WRITTEN"] == B * (rank + 1)
    (shared,) = posix(log, str(mpi_dir / "shared.dat"))
    assert shared["rank"] == -1
    assert shared["counters"]["POSIX_OPENS"] == nodes
    assert shared["counters"]["POSIX_BYTES_WRITTEN"] == B * nodes
    # Nothing is left behind: the staged files were merged and removed.
    state = Path(cluster.env["SLURM_CONF"]).parent.parent
    assert not (state / "mmap-staging" / many_id).exists()


def run_epilog_as(node: str, env: dict) -> None:
    """The epilog as the given node: its own UTS namespace, with that host name."""
    epilog = config.REPO_ROOT / "ci" / "templates" / "slurm-epilog-iostudy.sh"
    subprocess.run(
        ["unshare", "--uts", "sh", "-c", 'hostname "$1" && exec bash "$0"', str(epilog), node],
        env=env,
        check=True,
    )


def test_epilog_merges_when_the_last_node_arrives(tmp_path):
    """Where nodes share the folder of the memory-mapped logs (the test cluster's nodes share
    this machine's /dev/shm) each node's epilog takes only the files its host name is in: two
    nodes moving one file at once across file systems lost a rank's log. And the last node
    merges, knowing how many there are from what Slurm 22.05 gives an epilog
    (SLURM_JOB_NUM_NODES, SLURM_NODELIST; not SLURM_JOB_NODELIST): without a count the first
    node merged its own files alone, a merged log of a 2-node job with one rank's records.
    A file of the same name pattern owned by another user is left where it is, never merged."""
    shm, staging, logs = (tmp_path / d for d in ("shm", "staging", "logs"))
    shm.mkdir()
    files = {n: shm / f"root_prog_id42_mmap-log-{n}-{pid}.darshan"
             for n, pid in (("n1", 7), ("n2", 8))}  # fmt: skip
    for path in files.values():
        path.write_bytes(b"log")
    merge = tmp_path / "merge"  # records what it was given, as iostudy-merge's stand-in
    merge.write_text(f'#!/bin/sh\nfor a; do basename "$a"; done >> {tmp_path / "merged"}\n')
    merge.chmod(0o755)
    planted = shm / "root_prog_id42_mmap-log-n1-9.darshan"  # another user's, same pattern
    planted.write_bytes(b"planted")
    os.chown(planted, 64001, 64001)
    env = {"PATH": os.environ["PATH"], "SLURM_JOB_ID": "42", "SLURM_JOB_USER": "root",
           "SLURM_JOB_UID": str(os.getuid()),
           "SLURM_JOB_NUM_NODES": "2", "SLURM_NODELIST": "n[1-2]",
           "IOSTUDY_EPILOG_CONF": "/dev/null", "IOSTUDY_MMAP_DIR": str(shm),
           "IOSTUDY_STAGING": str(staging),
           "IOSTUDY_LOG_DIR": str(logs), "IOSTUDY_MERGE": str(merge)}  # fmt: skip
    run_epilog_as("n1", env)
    assert files["n2"].read_bytes() == b"log", "n1 took n2's file"
    assert (staging / "42" / files["n1"].name).read_bytes() == b"log"
    assert not (tmp_path / "merged").exists(), "n1 merged before n2 arrived"

    run_epilog_as("n2", env)
    merged = (tmp_path / "merged").read_text().split()
    assert sorted(n for n in merged if n.endswith(".darshan")) == sorted(
        ["root_id42_killed.darshan"] + [f.name for f in files.values()]
    )
    assert not (staging / "42").exists() and list(shm.iterdir()) == [planted]
    assert planted.name not in merged and planted.read_bytes() == b"planted"
