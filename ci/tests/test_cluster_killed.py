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
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
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


def stand_ins(root: Path) -> dict:
    """iostudy-merge's stand-in, which records the names of the logs it was given (root/merged)
    and writes b"merged" to its --output as a shell would, through a link; and logger's, which
    records the epilog's messages (root/logged). The epilog's environment, without the job."""
    bin_dir = root / "bin"
    bin_dir.mkdir()
    merge, logger = bin_dir / "iostudy-merge", bin_dir / "logger"
    merge.write_text(
        "#!/bin/sh\n"
        "while [ $# -gt 0 ]; do\n"
        "    case $1 in\n"
        "    --output) out=$2; shift 2 ;;\n"
        "    --job-end-time) shift 2 ;;\n"
        f'    *) basename "$1" >> {root / "merged"}; shift ;;\n'
        "    esac\n"
        "done\n"
        'printf merged > "$out"\n'
    )
    logger.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> {root / "logged"}\n')
    for tool in (merge, logger):
        tool.chmod(0o755)
    return {
        "PATH": f"{bin_dir}:{os.environ['PATH']}",
        "IOSTUDY_EPILOG_CONF": "/dev/null",
        "IOSTUDY_MMAP_DIR": str(root / "shm"),
        "IOSTUDY_STAGING": str(root / "staging"),
        "IOSTUDY_LOG_DIR": str(root / "logs"),
        "IOSTUDY_MERGE": str(merge),
    }


def merged_names(root: Path) -> list[str]:
    merged = root / "merged"
    return sorted(merged.read_text().split()) if merged.exists() else []


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
    files = {
        n: shm / f"root_prog_id42_mmap-log-{n}-{pid}.darshan" for n, pid in (("n1", 7), ("n2", 8))
    }
    for path in files.values():
        path.write_bytes(b"log")
    planted = shm / "root_prog_id42_mmap-log-n1-9.darshan"  # another user's, same pattern
    planted.write_bytes(b"planted")
    os.chown(planted, 64001, 64001)
    env = stand_ins(tmp_path) | {
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_USER": "root",
        "SLURM_JOB_UID": str(os.getuid()),
        "SLURM_JOB_NUM_NODES": "2",
        "SLURM_NODELIST": "n[1-2]",
    }
    run_epilog_as("n1", env)
    assert files["n2"].read_bytes() == b"log", "n1 took n2's file"
    assert (staging / "42" / files["n1"].name).read_bytes() == b"log"
    assert not (tmp_path / "merged").exists(), "n1 merged before n2 arrived"

    run_epilog_as("n2", env)
    merged = merged_names(tmp_path)
    assert merged == sorted(f.name for f in files.values())
    assert (logs / "root_id42_killed.darshan").read_bytes() == b"merged"
    assert not (staging / "42").exists() and list(shm.iterdir()) == [planted]
    assert planted.name not in merged and planted.read_bytes() == b"planted"


JOB_UID, OTHER_UID = 2001, 2002  # the job's user, and another user who plants files for it


@pytest.fixture
def shared_root():
    """A folder both users can reach (pytest's tmp_path is root's alone), with the folders a site
    shares with all users, 1777 as /tmp, and a file of root's for planted links to point to."""
    root = Path(tempfile.mkdtemp(prefix="iostudy-epilog-"))
    try:
        root.chmod(0o755)
        for name in ("shm", "staging", "logs"):
            (root / name).mkdir()
            (root / name).chmod(0o1777)
        (root / "victim").write_bytes(b"root's")
        yield root
    finally:
        shutil.rmtree(root)


def as_other_user(root: Path, script: str) -> None:
    """script run by sh in root as OTHER_UID, nobody's groups."""
    ids = [f"--reuid={OTHER_UID}", f"--regid={OTHER_UID}", "--clear-groups"]
    subprocess.run(["setpriv", *ids, "sh", "-euc", script], cwd=root, check=True)


def job_files(root: Path, *nodes: str) -> list[Path]:
    """One log of the job per node, the job's user's."""
    files = [
        root / "shm" / f"u2001_prog_id42_mmap-log-{n}-{pid}.darshan"
        for pid, n in enumerate(nodes, 7)
    ]
    for path in files:
        path.write_bytes(b"log")
        os.chown(path, JOB_UID, JOB_UID)
    return files


def job_env(root: Path, nodes: int) -> dict:
    return stand_ins(root) | {
        "SLURM_JOB_ID": "42",
        "SLURM_JOB_USER": "u2001",
        "SLURM_JOB_UID": str(JOB_UID),
        "SLURM_JOB_NUM_NODES": str(nodes),
        "SLURM_NODELIST": f"n[1-{nodes}]",
    }


PLANT_STAGE = {  # what the other user runs in the staging folder
    # The job's staging folder made first, with a log, the lock and the node marks in it.
    "folder": "mkdir -m 755 42 && printf planted > 42/u2002_id42_mmap-log-n1-9.darshan && "
    "touch 42/.lock 42/.node-n1 42/.node-n2",
    # A link in its place, to a folder of the other user's with a log in it.
    "link": "mkdir -m 755 mine && printf planted > mine/u2002_id42_mmap-log-n1-9.darshan && "
    "ln -s mine 42",
}


@pytest.mark.parametrize("how", sorted(PLANT_STAGE))
def test_epilog_refuses_a_staging_folder_another_user_made(shared_root, how):
    """In a staging folder all users can write another user (uid 2002) makes the job's folder
    before the job of uid 2001 ends, with a log of their own in it: the epilog merged it into
    the job's log, as root. Now it uses only a folder it made (or another node's epilog made),
    root's and 0700; another one is left alone, and so are the job's files, and it says so."""
    root = shared_root
    as_other_user(root / "staging", PLANT_STAGE[how])
    planted = root / "staging" / ("42" if how == "folder" else "mine")
    before = sorted(p.name for p in planted.iterdir())
    (own,) = job_files(root, "n1")
    run_epilog_as("n1", job_env(root, 1))
    assert merged_names(root) == [], "merged from another user's folder"
    assert own.read_bytes() == b"log", "the job's file was moved into another user's folder"
    assert sorted(p.name for p in planted.iterdir()) == before
    assert (root / "staging/42").is_symlink() == (how == "link")
    assert os.listdir(root / "logs") == []
    assert f"refused {root / 'staging/42'}" in (root / "logged").read_text()


def test_epilog_merges_only_the_job_users_own_files(shared_root):
    """Another user (uid 2002) links the name of the job's merged log to a file of root's, and
    leaves a log of theirs of the job's name pattern beside the job's. Between a node's check of
    a file and the merge, a link (to a file of root's) and another user's file get into the
    staging folder (a file replaced after its check; a hard link). Only the job user's regular
    files are merged, and the merged log is a new file of theirs at that name: the epilog, as
    root, wrote through the link and gave root's file to the job's user."""
    root = shared_root
    out = root / "logs" / "u2001_id42_killed.darshan"
    as_other_user(
        root,
        f"ln -s ../victim logs/{out.name} && "
        "printf planted > shm/u2001_prog_id42_mmap-log-n1-9.darshan",
    )
    in_shm = root / "shm" / "u2001_prog_id42_mmap-log-n1-9.darshan"
    files = job_files(root, "n1", "n2")
    env = job_env(root, 2)
    run_epilog_as("n1", env)
    stage = root / "staging" / "42"
    assert (stage.stat().st_uid, stage.stat().st_mode & 0o7777) == (0, 0o700)
    link, other = (
        stage / "u2001_prog_id42_mmap-log-n1-10.darshan",
        stage / "x_mmap-log-n2-11.darshan",
    )
    link.symlink_to(root / "victim")
    other.write_bytes(b"planted")
    os.chown(other, OTHER_UID, OTHER_UID)
    run_epilog_as("n2", env)
    assert merged_names(root) == sorted(f.name for f in files)
    assert not out.is_symlink() and out.read_bytes() == b"merged"
    assert (out.stat().st_uid, os.listdir(root / "logs")) == (JOB_UID, [out.name])
    victim = root / "victim"
    assert (victim.read_bytes(), victim.stat().st_uid) == (b"root's", 0), "written through a link"
    assert in_shm.read_bytes() == b"planted" and in_shm.stat().st_uid == OTHER_UID
    assert not stage.exists()
    logged = (root / "logged").read_text()
    assert f"not merged: {link}" in logged and f"not merged: {other}" in logged
