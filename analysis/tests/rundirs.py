"""Run directories (results/<run-id>/) made of real logs, for the store and workflow tests.

A log written by iostudy's runtime (``dd`` run non-MPI under build/runtime/libiostudy.so, its
file in an I/O-model directory, tagged like a campaign job), a real 4-rank Darshan 3.5.0 log
with a shared (rank -1) file from ../shared/testdata, and a truncated copy of the latter: a
corrupt log.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[2]
RUNTIME = REPO_ROOT / "build" / "runtime" / "libiostudy.so"
RUNTIME_MIB = 4
TAGS = "campaign=quick;check=iomodel_check;system=local;environ=openmpi;repetition=0;nodes=1"


def runtime_env(log: Path, tags: str | None = None, mpi: bool = False) -> dict:
    """The environment of a program run under iostudy's runtime, writing its log to ``log``
    (tagged like a campaign job when ``tags`` is given); none of the caller's runtime settings
    leak in. ``mpi``: an MPI program, whose ranks write one log at MPI_Finalize."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DARSHAN_", "IOSTUDY_")) and k not in ("LD_PRELOAD", "SLURM_JOB_ID")
    }
    env |= {"LD_PRELOAD": str(RUNTIME), "DARSHAN_LOGFILE": str(log)}
    if not mpi:
        env["DARSHAN_ENABLE_NONMPI"] = "1"
    if tags is not None:
        env["IOSTUDY_LOG_TAGS"] = tags
    return env


def runtime_log(dest: Path, workdir: Path, mib: int = RUNTIME_MIB, tags: str = TAGS) -> Path:
    """A log of `dd` writing mib MiB to workdir/n1-p1-f1-m1/file0.dat under the runtime."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    model_dir = workdir / "n1-p1-f1-m1"
    model_dir.mkdir(parents=True, exist_ok=True)
    dest.parent.mkdir(parents=True, exist_ok=True)
    env = runtime_env(dest, tags)
    cmd = ["dd", "if=/dev/zero", f"of={model_dir / 'file0.dat'}", "bs=1M", f"count={mib}"]
    subprocess.run(cmd + ["status=none"], env=env, check=True, timeout=60)
    assert dest.is_file(), f"the runtime wrote no log {dest}"
    return dest


def manifest(run_id: str, **extra) -> dict:
    return {
        "run_id": run_id,
        "campaign": "quick",
        "system": "local",
        "started": "2026-03-02T09:00:00Z",
        "finished": "2026-03-02T09:05:00Z",
        "status": "finished",
        "git_commit": "0" * 40,
        "git_dirty": False,
        "tool_versions": {"iostudy": "0.1.0"},
        "effective_config": {
            "system": {"name": "local", "nodes": {"count": 1, "cores_per_node": 2}},
            "campaign": {"name": "quick", "study": "quick"},
        },
        **extra,
    }


def make_run_dir(
    results: Path, run_id: str, release_log: Path, work: Path, corrupt: bool = True
) -> Path:
    """results/<run_id>/ with manifest.json and darshan/: the runtime's log, the release log
    and (corrupt=True) a truncated copy of the release log."""
    run = results / run_id
    logs = run / "darshan" / "2026" / "3" / "2"
    logs.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(manifest(run_id), indent=2))
    runtime_log(logs / "dd_id1.darshan", work)
    shutil.copyfile(release_log, logs / "mpi-io-test_id3171794.darshan")
    if corrupt:
        data = release_log.read_bytes()
        (logs / "truncated_id2.darshan").write_bytes(data[: len(data) // 2])
    return run
