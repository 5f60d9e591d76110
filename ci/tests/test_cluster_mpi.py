"""MPI jobs across both nodes, with each flavour and launcher of the launch matrix that iostudy
relies on (shared/reference/slurm-test-cluster.md)."""

import pytest
from slurmtest import parse_hello

NTASKS = 2  # one rank per node


def check_world(cluster, output):
    """Every rank ran once, in one communicator of NTASKS ranks, spread over NTASKS nodes."""
    lines = parse_hello(output)
    assert sorted(rank for rank, _, _, _ in lines) == list(range(NTASKS)), output
    # MPICH under the wrong PMI plugin runs NTASKS singletons, each "rank 0 of 1".
    assert {size for _, size, _, _ in lines} == {NTASKS}, output
    nodes = {node for _, _, _, node in lines}
    assert len(nodes) == NTASKS and nodes <= set(cluster.nodes), output
    # Nodes with their own host names (network namespaces) must report them.
    hostnames = cluster.node_hostnames()
    if len(set(hostnames.values())) == len(hostnames):
        assert {host for _, _, host, _ in lines} == {hostnames[n] for n in nodes}, output


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_srun(cluster, mpi_hello, flavour):
    mpi = cluster.system["mpi"][flavour]
    proc = cluster.run(
        "srun",
        f"--mpi={mpi['srun_mpi']}",
        f"--nodes={NTASKS}",
        f"--ntasks={NTASKS}",
        "--ntasks-per-node=1",
        "--time=2",
        mpi_hello(flavour),
        env=cluster.mpi_env(flavour),
        timeout=150,
    )
    check_world(cluster, proc.stdout)


def test_mpirun_in_sbatch(cluster, mpi_hello, tmp_path):
    flavour = "openmpi"
    out = tmp_path / "slurm-%j.out"
    jobid = cluster.sbatch(
        f"--nodes={NTASKS}",
        "--ntasks-per-node=1",
        "--time=2",
        f"--output={out}",
        f"--wrap={cluster.system['mpi'][flavour]['mpirun']} {mpi_hello(flavour)}",
        env=cluster.mpi_env(flavour),
    )
    record = cluster.wait_job(jobid)
    output = (tmp_path / f"slurm-{jobid}.out").read_text()
    assert (record["state"], record["exit_code"]) == ("COMPLETED", "0:0"), output
    check_world(cluster, output)


def test_hello_check_catches_singletons(cluster, mpi_hello):
    """The oracle itself: MPICH launched with Open MPI's PMI plugin runs independent singletons,
    which check_world must reject (otherwise the tests above prove nothing)."""
    proc = cluster.run(
        "srun",
        "--mpi=pmix",
        f"--nodes={NTASKS}",
        f"--ntasks={NTASKS}",
        "--ntasks-per-node=1",
        "--time=2",
        mpi_hello("mpich"),
        timeout=150,
        check=False,
    )
    with pytest.raises(AssertionError):
        check_world(cluster, proc.stdout)
