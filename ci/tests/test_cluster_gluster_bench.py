"""bench-runtime's glusterfs row on the test cluster (runtime/bench/gluster_node.py): the folder
it measures in is on the volume as the first node's jobs see it and is gone afterwards, and a
timed run there under each runtime records the workload's files (else the bench stops)."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from slurmtest import REPO_ROOT

sys.path.insert(0, str(REPO_ROOT / "runtime" / "bench"))
import bench_runtime  # noqa: E402 (a script's module, found by the path above)
import gluster_node  # noqa: E402

BUILD = "build/runtime"  # relative, as make passes it: the node's namespace has another cwd


@pytest.fixture
def env_file(cluster, monkeypatch):
    if why := cluster.env.get("IOSTUDY_GLUSTER_UNAVAILABLE"):
        pytest.skip(f"no GlusterFS volume on this cluster: {why}")
    if not (REPO_ROOT / BUILD / "libiostudy.so").is_file():
        pytest.skip(f"{BUILD} is not built (make build-runtime)")
    path = os.path.abspath(os.environ["IOSTUDY_CLUSTER_ENV"])  # the cluster fixture checked it
    monkeypatch.chdir(REPO_ROOT)
    return path


def test_the_bench_measures_on_the_volume_through_a_node(cluster, env_file):
    with gluster_node.volume_folder(env_file) as (folder, enter, node):
        assert folder and node == cluster.nodes[0], node
        shown = subprocess.run(
            [*enter, "findmnt", "-n", "-o", "FSTYPE", "-T", folder],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split()
        assert shown == ["fuse.glusterfs"]
        lib = str(REPO_ROOT / BUILD / "libiostudy.so")
        envs = bench_runtime.workload_envs(lib, None)
        runs = bench_runtime.workload_wall(BUILD, envs, 50, 1, folder, enter)
        assert set(runs) == {"none", "iostudy"}
        assert all(len(times) == 1 and times[0] > 0 for times in runs.values()), runs
    gone = subprocess.run([*enter, "test", "-e", folder])
    assert gone.returncode == 1


def test_without_a_cluster_the_row_says_why():
    with gluster_node.volume_folder(None) as (folder, _, why):
        assert folder is None and "IOSTUDY_CLUSTER_ENV" in why
