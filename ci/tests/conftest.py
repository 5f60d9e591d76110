"""Tests on the real Slurm test cluster (`make cluster-up`); `make test-cluster` runs them.

The cluster is found through IOSTUDY_CLUSTER_ENV, the env file whose path is the last line of
`make cluster-up` (it exports SLURM_CONF and a PATH with the scrontab client). Without it every
test fails with a message saying what to run: these tests never skip silently.

Facts about the cluster (nodes, partitions, MPI flavours) come from its system description
(configs/systems/testcluster/system.json unless the env file's IOSTUDY_CLUSTER_SYSTEM names
another), as they do for the cluster itself.
"""

import os
from pathlib import Path

import pytest
from slurmtest import HELLO_SOURCE, SYSTEM, Cluster, env_from_file, poll

from iostudy.core import config


@pytest.fixture(scope="session")
def cluster() -> Cluster:
    env_file = os.environ.get("IOSTUDY_CLUSTER_ENV")
    if not env_file:
        pytest.fail(
            "no test cluster: IOSTUDY_CLUSTER_ENV is not set. Run `make test-cluster`, or "
            "`make cluster-up` and set IOSTUDY_CLUSTER_ENV to the env file it prints last."
        )
    path = Path(env_file)
    if not path.is_file():
        pytest.fail(f"IOSTUDY_CLUSTER_ENV={env_file}: no such file; run `make cluster-up`")
    env = env_from_file(path)
    if "SLURM_CONF" not in env:
        pytest.fail(f"IOSTUDY_CLUSTER_ENV={env_file}: exports no SLURM_CONF")
    # Run from inside a job (salloc, a CI job on a Slurm cluster), the job's SLURM_* variables
    # would steer our srun and sbatch calls into it.
    env = {k: v for k, v in env.items() if not k.startswith("SLURM_") or k == "SLURM_CONF"}
    # the storage as the cluster's campaigns see it: its volume unavailable where not served
    system = config.load_system(SYSTEM)
    c = Cluster(env=env, system=config.with_availability(system, env))

    def all_nodes_up():
        proc = c.run("sinfo", "-h", "-N", "-o", "%N %T", check=False, timeout=20)
        if proc.returncode != 0:
            pytest.fail(
                f"sinfo fails with SLURM_CONF={env['SLURM_CONF']} ({proc.stderr.strip()}): "
                "is the cluster up? Run `make cluster-up`."
            )
        states = dict(line.split() for line in proc.stdout.splitlines())
        return all(states.get(n, "").rstrip("*") in ("idle", "mixed", "allocated") for n in c.nodes)

    poll(all_nodes_up, 60, f"nodes {', '.join(c.nodes)} to be up (sinfo)")
    return c


@pytest.fixture(autouse=True)
def cluster_left_clean(request):
    """After each test, no job of it stays on the cluster and no node is left drained or
    down: a job left queued or running (a campaign killed at its timeout leaves ReFrame's jobs
    behind, a hung job holds its nodes until its time limit) is cancelled, a node resumed, and
    the test errors with the cluster's state, so that the tests after it find the nodes free."""
    yield
    if "cluster" in request.fixturenames:
        left = request.getfixturevalue("cluster").left_behind()
        if left:
            pytest.fail(left)


@pytest.fixture(scope="session")
def mpi_hello(cluster, tmp_path_factory):
    """mpi_hello(flavour): the hello program built with that flavour's compiler wrapper."""
    built = {}

    def build(flavour):
        if flavour not in built:
            exe = tmp_path_factory.mktemp(f"hello-{flavour}") / "mpi_hello"
            cc = cluster.system["mpi"][flavour]["cc"]
            cluster.run(cc, "-o", exe, HELLO_SOURCE, timeout=120)
            built[flavour] = exe
        return built[flavour]

    return build


@pytest.fixture
def own_scrontab(cluster):
    """Keeps whatever scrontab the user had, and puts it back afterwards."""
    before = cluster.run("scrontab", "-l", check=False)
    yield
    if before.returncode == 0 and before.stdout.strip():
        cluster.run("scrontab", "-", input=before.stdout)
    else:
        cluster.run("scrontab", "-r", check=False)


@pytest.fixture(scope="session")
def volume(cluster) -> dict:
    """The GlusterFS volume cluster-up serves (ci/cluster/gluster.sh): mount, name, state
    directory, bricks by node; skips with cluster-up's reason where it is not served."""
    why = cluster.env.get("IOSTUDY_GLUSTER_UNAVAILABLE")
    if why:
        pytest.skip(f"no GlusterFS volume on this cluster: {why}")
    state = Path(cluster.env["IOSTUDY_CLUSTER_STATE"])
    entry = next(s for s in cluster.system["storage"] if s.get("fs_type") == "glusterfs")
    bricks = {
        t["node"]: Path(t["brick"].replace("$IOSTUDY_CLUSTER_STATE", str(state)))
        for t in entry["targets"]
    }
    return {
        "mount": cluster.env["IOSTUDY_GLUSTER_MOUNT"],
        "name": entry["volume"],
        "state": state,
        "bricks": bricks,
    }
