"""Helpers of the cluster tests: run Slurm commands with the cluster's environment, poll sacct
and sinfo with timeouts, parse the MPI hello program's output."""

from __future__ import annotations

import functools
import os
import re
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import jobsteps
import pytest

from iostudy.core import config

REPO_ROOT = Path(__file__).resolve().parents[2]
# The tools of the venv that runs the tests (make runs .venv/bin/python).
VENV_BIN = Path(sys.executable).parent
HELLO_SOURCE = Path(__file__).parent / "reframe" / "src" / "mpi_hello.c"
# States of a job that has ended (sacct). Anything else (PENDING, RUNNING, REQUEUED, ...) is not
# final yet.
FINAL_STATES = {
    "BOOT_FAIL",
    "CANCELLED",
    "COMPLETED",
    "DEADLINE",
    "FAILED",
    "NODE_FAIL",
    "OUT_OF_MEMORY",
    "PREEMPTED",
    "TIMEOUT",
}
# How long cancelled jobs may take to leave the queue: slurmd sends SIGKILL KillWait (3 s,
# testbed_files) after SIGTERM, and gives up on processes that outlive UnkillableStepTimeout
# (60 s by default), draining their node.
JOB_GONE_S = 90
HELLO_LINE = re.compile(r"^hello rank (\d+) of (\d+) host (\S+) node (\S+)$", re.M)


def poll(fn, timeout, what, interval=0.5):
    """fn's first true result, trying every interval seconds; fails the test after timeout."""
    deadline = time.monotonic() + timeout
    while True:
        result = fn()
        if result:
            return result
        if time.monotonic() > deadline:
            pytest.fail(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


@functools.cache
def env_from_file(path: Path) -> dict[str, str]:
    """The environment after sourcing path in bash, so that `export PATH=...:$PATH` works."""
    proc = subprocess.run(
        ["bash", "-c", 'set -a && . "$1" >/dev/null && env -0', "env-file", str(path)],
        capture_output=True,
        text=True,
        timeout=30,
    )
    if proc.returncode != 0:
        pytest.fail(f"IOSTUDY_CLUSTER_ENV={path}: cannot source it: {proc.stderr.strip()}")
    pairs = (item.split("=", 1) for item in proc.stdout.split("\0") if "=" in item)
    return dict(pairs)


def cluster_system() -> str:
    """The system the cluster was stood up from, which the tests name in their commands: the
    IOSTUDY_CLUSTER_SYSTEM its env file exports (IOSTUDY_CLUSTER_ENV), else the environment's,
    else testcluster."""
    env_file = Path(os.environ.get("IOSTUDY_CLUSTER_ENV", ""))
    env = env_from_file(env_file) if env_file.is_file() else os.environ
    return env.get("IOSTUDY_CLUSTER_SYSTEM") or "testcluster"


SYSTEM = cluster_system()


@dataclass
class Cluster:
    env: dict[str, str]
    system: dict
    nodes: list[str] = field(init=False)

    def __post_init__(self):
        self.nodes = config.node_names(self.system)

    def run(self, *args, timeout=60, check=True, env=None, **kwargs):
        """Runs a command with the cluster's environment (plus env); returns the completed
        process, failing the test with its output if it did not exit 0 and check is set."""
        try:
            proc = subprocess.run(
                [str(a) for a in args],
                env={**self.env, **(env or {})},
                capture_output=True,
                text=True,
                timeout=timeout,
                **kwargs,
            )
        except subprocess.TimeoutExpired as e:
            pytest.fail(
                f"{' '.join(map(str, args))} timed out after {timeout} s\n"
                f"stdout (end):\n{tail(e.stdout)}\nstderr (end):\n{tail(e.stderr)}\n"
                f"{self.state()}"
            )
        if check and proc.returncode != 0:
            pytest.fail(
                f"{' '.join(map(str, args))} exited {proc.returncode}\n"
                f"stdout:\n{proc.stdout}\nstderr:\n{proc.stderr}"
            )
        return proc

    def sbatch(self, *args, env=None) -> str:
        """Submits a batch job; returns its id."""
        out = self.run("sbatch", "--parsable", *args, env=env).stdout
        return out.strip().split(";")[0]

    def sacct(self, jobid: str) -> dict | None:
        """The accounting record of the job allocation, or None while slurmdbd has none."""
        out = self.run("sacct", "-j", jobid, "-X", "-n", "-P", "-o", "JobID,State,ExitCode,End")
        for line in out.stdout.splitlines():
            job, state, exit_code, end = line.split("|")
            if job == jobid:
                # "CANCELLED by 0" -> CANCELLED
                return {"state": state.split()[0], "exit_code": exit_code, "end": end}
        return None

    def wait_job(self, jobid: str, timeout: float = 120) -> dict:
        """Polls sacct until slurmdbd has the job's end; returns its record.

        A final state alone is not the end: when a job ends before slurmctld has sent its
        start to slurmdbd, the start's row already holds the final state (FAILED) while its
        End is Unknown and its ExitCode 0:0 until the completion's update arrives (seen once in
        CI: FAILED with 0:0 for "exit 3")."""

        def ended():
            record = self.sacct(jobid)
            if record and record["state"] in FINAL_STATES and record["end"] != "Unknown":
                return record
            return None

        return poll(ended, timeout, f"job {jobid} to end (sacct)")

    def wait_listed(self, jobids, since: str, timeout: float = 60) -> None:
        """Polls until sacct's time-window listing (-S since, UTC, what `iostudy sacct import
        --live` runs) holds every job: a job sacct -j already shows as ended has been seen
        missing from it for a moment (twice in CI)."""

        def listed():
            out = self.run(
                "sacct",
                "--allusers",
                "--allocations",
                "-n",
                "-P",
                "-o",
                "JobIDRaw",
                "-S",
                since,
                env={"TZ": "UTC"},
            ).stdout
            return set(map(str, jobids)) <= set(out.split())

        poll(listed, timeout, f"jobs {', '.join(map(str, jobids))} in sacct -S {since}")

    def wait_running(self, jobid: str, timeout: float = 60) -> None:
        """Polls squeue until the job runs."""
        poll(
            lambda: self.run("squeue", "-h", "-j", jobid, "-o", "%T").stdout.strip() == "RUNNING",
            timeout,
            f"job {jobid} to run",
        )

    def jobs(self, completing: bool = False) -> list[str]:
        """The ids of the jobs still queued or running; with completing, also of those whose
        processes are being killed (a job a test just saw end is completing for a moment)."""
        out = self.run("squeue", "-h", "-o", "%i %T", timeout=20).stdout
        rows = (line.split() for line in out.splitlines())
        return [job for job, state in rows if completing or state != "COMPLETING"]

    def unavailable_nodes(self) -> dict[str, str]:
        """Nodes drained or down (a node whose job's processes outlived UnkillableStepTimeout
        is drained "Kill task failed"): node -> state and reason."""
        out = self.run("sinfo", "-h", "-N", "-o", "%N|%T|%E", timeout=20).stdout
        rows = (line.split("|", 2) for line in out.splitlines())
        return {
            node: f"{state} ({reason})"
            for node, state, reason in rows
            if state.rstrip("*~#$@") in ("down", "drained", "draining", "fail", "failing")
        }

    def left_behind(self) -> str | None:
        """Cancels the jobs still in the queue and resumes the nodes drained or down; what they
        were, with the cluster's state before, or None when the cluster was clean."""
        jobs, nodes = self.jobs(), self.unavailable_nodes()
        if not jobs and not nodes:
            return None
        state = self.state()
        if jobs:
            self.run("scancel", *jobs, check=False, timeout=30)
            poll(
                lambda: not self.jobs(completing=True),
                JOB_GONE_S,
                f"jobs {', '.join(jobs)} to go (scancel)",
            )
            nodes.update(self.unavailable_nodes())
        for node in nodes:
            self.run("scontrol", "update", f"nodename={node}", "state=resume", check=False)
        said = [f"jobs {', '.join(jobs)} were left on the cluster (cancelled)"] if jobs else []
        said += [f"node {node} was {why} (resumed)" for node, why in nodes.items()]
        return "\n".join([*said, state])

    def state(self) -> str:
        """What the cluster is doing, for a test that waited too long: the queue, the nodes
        and why they are not idle, and the processes of every job step (jobsteps.tree)."""
        parts = []
        # not self.run: a command of its that timed out would come back here
        for what, args in (
            ("queue", ["squeue", "-o", "%.8i %.24j %.9T %.10M %.10l %.6D %R"]),
            ("nodes", ["sinfo", "-N", "-o", "%N %T %E"]),
        ):
            try:
                proc = subprocess.run(
                    args, env=self.env, capture_output=True, text=True, timeout=20
                )
                parts.append(f"{what}:\n{proc.stdout}{proc.stderr}")
            except subprocess.TimeoutExpired:
                parts.append(f"{what}: {args[0]} did not answer in 20 s")
        parts.append(f"job steps' processes:\n{jobsteps.tree()}")
        parts.append(gluster_complaints(Path(self.env.get("IOSTUDY_CLUSTER_STATE", "."))))
        return "\n".join(parts)

    def node_state(self, node: str) -> str:
        return self.run("sinfo", "-h", "-N", "-n", node, "-o", "%T").stdout.strip()

    def node_hostnames(self) -> dict[str, str]:
        """Node name -> NodeHostname as slurmctld knows them."""
        out = self.run("scontrol", "-o", "show", "node").stdout
        return dict(re.findall(r"NodeName=(\S+).*?NodeHostName=(\S+)", out))

    def mpi_env(self, flavour: str) -> dict[str, str]:
        return self.system["mpi"][flavour].get("env", {})


def gluster_complaints(state: Path, lines: int = 12) -> str:
    """The last errors and warnings of each node's GlusterFS client and brick logs (the state
    folder's gluster/<node>/log): a brick gone or a client that lost it says so there."""
    parts = []
    for log in sorted(state.glob("gluster/*/log/client.log")) + sorted(
        state.glob("gluster/*/log/bricks/*.log")
    ):
        text = log.read_text(errors="replace").splitlines()
        complaints = [line for line in text if re.search(r"\] [EWC] \[", line)][-lines:]
        parts.append(f"{log.relative_to(state)}:\n" + "\n".join(complaints or ["(none)"]))
    return "GlusterFS errors and warnings:\n" + ("\n".join(parts) or "(no GlusterFS log)")


def tail(output, chars: int = 3000) -> str:
    """The end of a timed-out command's output (bytes or text, or None)."""
    if isinstance(output, bytes):
        output = output.decode(errors="replace")
    return (output or "")[-chars:]


def parse_hello(output: str) -> list[tuple[int, int, str, str]]:
    """(rank, size, host, node) of every line of the hello program."""
    return [(int(r), int(s), h, n) for r, s, h, n in HELLO_LINE.findall(output)]


def target_devices(cluster, monkeypatch) -> dict[str, tuple[str, str]]:
    """Each storage target of the cluster -> (its node, the block device mounted there)."""
    monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", cluster.env["IOSTUDY_CLUSTER_STATE"])
    devices = {}
    for target in config.storage_targets(cluster.system):
        mount = config.storage_path(target["path"], Path("."))
        found = subprocess.run(
            ["findmnt", "-n", "-o", "SOURCE", "--mountpoint", str(mount)],
            capture_output=True,
            text=True,
        )
        assert found.returncode == 0, f"storage target {target['name']}: nothing mounted at {mount}"
        devices[target["name"]] = (target["node"], Path(found.stdout.strip()).name)
    return devices


def bytes_written(device: str) -> int:
    """What the block device wrote since it was set up: the kernel's sectors written (field 7
    of /sys/block/<dev>/stat; 512 bytes each whatever the device)."""
    return int(Path(f"/sys/block/{device}/stat").read_text().split()[6]) * 512


def on(cluster, node: str, script: str, *args, timeout=60) -> str:
    """stdout of a shell script run as a one-task job step on node."""
    return cluster.run(
        "srun", "-w", node, "-N1", "-n1", "sh", "-c", script, "sh", *args, timeout=timeout
    ).stdout


def configs_copy(tmp_path: Path) -> Path:
    """A copy of the project's configs/ for a test's own campaign (IOSTUDY_CONFIGS)."""
    configs = tmp_path / "configs"
    shutil.copytree(REPO_ROOT / "configs", configs, ignore=shutil.ignore_patterns("__pycache__"))
    return configs


def run_campaign(
    cluster, name: str, configs: Path, tmp_path: Path, passes: bool = True
) -> subprocess.CompletedProcess:
    """`iostudy campaign run NAME --system SYSTEM` as a facility runs it (ReFrame submitting
    to Slurm), with the campaigns of ``configs`` (configs_copy), results and an ingested store
    under tmp_path; fails the test unless the campaign passed (failed, with passes false)."""
    proc = cluster.run(
        VENV_BIN / "iostudy",
        "campaign",
        "run",
        name,
        "--system",
        SYSTEM,
        "--results",
        tmp_path / "results",
        "--ingest",
        tmp_path / "store",
        check=False,
        timeout=900,
        cwd=REPO_ROOT,
        env={"IOSTUDY_CONFIGS": str(configs)},
    )
    assert (proc.returncode == 0) == passes, proc.stdout[-3000:] + proc.stderr[-3000:]
    return proc
