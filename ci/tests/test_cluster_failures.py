"""How jobs end when things go wrong: a time limit hit, a node lost under a running job."""

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
    poll(
        lambda: cluster.run("squeue", "-h", "-j", jobid, "-o", "%T").stdout.strip() == "RUNNING",
        60,
        f"job {jobid} to run",
    )
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
