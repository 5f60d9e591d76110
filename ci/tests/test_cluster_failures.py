"""How jobs end when things go wrong: a time limit hit, a node lost under a running job; and
what a test that waited too long says of the cluster, and how it leaves it."""

import re

import pytest
from slurmtest import poll

FAILED_STATES = {"FAILED", "NODE_FAIL", "CANCELLED"}


def test_time_limit_kills_job(cluster):
    # slurmctld checks time limits about every 30 s: the job ends 60-90 s after it started.
    jobid = cluster.sbatch("--time=1", "--output=/dev/null", "--wrap=sleep 300")
    record = cluster.wait_job(jobid, timeout=240)
    assert record["state"] == "TIMEOUT"


@pytest.fixture
def lost_node(cluster):
    """The node to take down; resumed afterwards whatever happens."""
    node = cluster.nodes[-1]
    yield node
    if not cluster.node_state(node).startswith("idle"):
        cluster.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)


def test_node_down_fails_job_then_resume(cluster, lost_node):
    nodes = len(cluster.nodes)
    # --no-requeue: Slurm would otherwise requeue a batch job that lost a node, and sacct
    # would show it PENDING again.
    jobid = cluster.sbatch(
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        "--time=5",
        "--no-requeue",
        "--output=/dev/null",
        "--wrap=srun sleep 300",
    )
    cluster.wait_running(jobid)
    try:
        cluster.run(
            "scontrol", "update", f"nodename={lost_node}", "state=down", "reason=iostudy-test"
        )
        record = cluster.wait_job(jobid, timeout=90)
    finally:
        cluster.run("scancel", jobid, check=False)
    assert record["state"] in FAILED_STATES, record

    # An administrator's "down" holds until "resume" (ReturnToService=1), even though the
    # node's slurmd still answers.
    assert cluster.node_state(lost_node).startswith("down"), cluster.node_state(lost_node)
    cluster.run("scontrol", "update", f"nodename={lost_node}", "state=resume")
    poll(lambda: cluster.node_state(lost_node) == "idle", 60, f"{lost_node} to return to idle")

    # The node takes work again: a job on every node completes.
    proc = cluster.run(
        "srun",
        f"--nodes={nodes}",
        "--ntasks-per-node=1",
        "--time=1",
        "sh",
        "-c",
        "echo $SLURM_JOB_ID $SLURMD_NODENAME",
    )
    jobids, ran_on = zip(*(line.split() for line in proc.stdout.splitlines()), strict=True)
    assert sorted(ran_on) == sorted(cluster.nodes)
    record = cluster.wait_job(jobids[0])
    assert (record["state"], record["exit_code"]) == ("COMPLETED", "0:0")


def running_job(cluster, command: str) -> str:
    """A one-task batch job running command, once it runs."""
    jobid = cluster.sbatch("--time=2", "--output=/dev/null", f"--wrap={command}")
    cluster.wait_running(jobid)
    return jobid


def test_a_command_that_times_out_shows_the_jobs_and_their_processes(cluster):
    """A cluster command past its timeout fails the test with the cluster's state: the queue
    holds the job running, and the job step's processes show the job's sleep, asleep in the
    kernel (state S), under its slurmstepd."""
    jobid = running_job(cluster, "sleep 307")
    try:
        with pytest.raises(pytest.fail.Exception) as failed:
            cluster.run("sleep", "5", timeout=1)
    finally:
        cluster.run("scancel", jobid, check=False)
    message = str(failed.value)
    assert "sleep 5 timed out after 1 s" in message
    assert re.search(rf"^\s*{jobid}\s.*\sRUNNING\s", message, re.M), message
    steps = message[message.index("job steps' processes:") :]
    assert re.search(r"^\d+ S \S+ slurmstepd: \[" + jobid + r"\.batch\]", steps, re.M), steps
    assert re.search(r"^\s{4,}\d+ S \S+ sleep 307$", steps, re.M), steps


def test_what_a_test_leaves_behind_is_named_and_undone(cluster, lost_node):
    """What a test leaves (cluster_left_clean, after each test) is named with the cluster's
    state, and undone: a running job cancelled (sacct records it CANCELLED, the queue is
    empty), a drained node resumed (sinfo says idle)."""
    jobid = running_job(cluster, "sleep 311")
    cluster.run("scontrol", "update", f"nodename={lost_node}", "state=drain", "reason=iostudy-left")
    left = cluster.left_behind()
    assert left and f"jobs {jobid} were left" in left and "sleep 311" in left, left
    assert re.search(rf"node {lost_node} was drain\w* \(iostudy-left\) \(resumed\)", left), left
    assert cluster.jobs(completing=True) == []
    assert cluster.wait_job(jobid)["state"] == "CANCELLED"
    poll(lambda: cluster.node_state(lost_node) == "idle", 60, f"{lost_node} to return to idle")
    assert cluster.left_behind() is None
