"""The GlusterFS volume of a running test cluster (ci/cluster), for bench_runtime's glusterfs row.

The volume is mounted by each node's FUSE client in that node's mount namespace (its slurmd's),
and this host's namespace does not see it: a run enters the first node's mount and network
namespaces (nsenter), as that node's jobs run. The cluster is found by its env file, the last
line of cluster-up's output, given as IOSTUDY_CLUSTER_ENV. Standard library only.
"""

import contextlib
import glob
import os
import shutil
import subprocess


def cluster_env(path):
    """The environment the env file exports (sourced by bash: it may use $PATH and a sourced
    status file)."""
    proc = subprocess.run(
        ["bash", "-c", 'set -a && . "$1" >/dev/null && env -0', "env-file", path],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        return None
    return dict(item.split("=", 1) for item in proc.stdout.split("\0") if "=" in item)


def first_node(env_file):
    """(the command prefix entering the first node's namespaces, its name, the volume's mount);
    (None, why not, None) when there is no volume to measure."""
    if not env_file:
        return None, "no test cluster: IOSTUDY_CLUSTER_ENV is not set", None
    if os.geteuid() != 0 or not shutil.which("nsenter"):
        return None, "entering a node's namespaces needs root and nsenter", None
    env = cluster_env(env_file)
    if env is None or "IOSTUDY_CLUSTER_STATE" not in env:
        return None, f"IOSTUDY_CLUSTER_ENV={env_file} is not a cluster's env file", None
    if env.get("IOSTUDY_GLUSTER_UNAVAILABLE") or not env.get("IOSTUDY_GLUSTER_MOUNT"):
        why = env.get("IOSTUDY_GLUSTER_UNAVAILABLE", "no IOSTUDY_GLUSTER_MOUNT")
        return None, f"the cluster serves no GlusterFS volume: {why}", None
    run = os.path.join(env["IOSTUDY_CLUSTER_STATE"], "run")
    pid_files = sorted(glob.glob(os.path.join(run, "slurmd-*.pid")))
    if not pid_files:
        return None, f"no slurmd PID file in {run}: is the cluster up?", None
    with open(pid_files[0]) as f:
        pid = f.read().split()[0]
    node = os.path.basename(pid_files[0])[len("slurmd-") : -len(".pid")]
    return ["nsenter", "-t", pid, "-m", "-n", "--"], node, env["IOSTUDY_GLUSTER_MOUNT"]


@contextlib.contextmanager
def volume_folder(env_file):
    """(a new folder on the volume, the command prefix that runs there, the node's name), or
    (None, None, why not); the folder is removed afterwards."""
    enter, node, mount = first_node(env_file)
    if enter is None:
        yield None, None, node
        return
    made = subprocess.run(
        [*enter, "mktemp", "-d", f"{mount}/iostudy-bench-XXXXXX"], capture_output=True, text=True
    )
    if made.returncode != 0:
        yield None, None, f"no folder on the volume at {node}: {made.stderr.strip()}"
        return
    folder = made.stdout.strip()
    try:
        yield folder, enter, node
    finally:
        subprocess.run([*enter, "rm", "-rf", folder], check=True)
