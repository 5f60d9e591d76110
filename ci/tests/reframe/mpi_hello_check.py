"""MPI hello across nodes: ReFrame builds src/mpi_hello.c with the environment's MPI compiler and
launches it through the partition's launcher.

Site-free: it runs on any system and any programming environment with the `mpi` feature
(configs/reframe_settings.py gives one per MPI flavour of a system). The sanity check counts the
ranks, so an MPI started as independent singletons (every rank "0 of 1") fails it.
"""

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import sanity_function

LINE = r"^hello rank (?P<rank>\d+) of (?P<size>\d+) host \S+ node (?P<node>\S+)$"


@rfm.simple_test
class mpi_hello_check(rfm.RegressionTest):
    descr = "MPI hello world: every rank of a multi-node job sees the whole communicator"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    build_system = "SingleSource"
    sourcepath = "mpi_hello.c"
    num_tasks = 2
    num_tasks_per_node = 1
    time_limit = "2m"
    tags = {"ci"}

    @sanity_function
    def validate_world(self):
        found = sn.evaluate(
            sn.extractall(LINE, self.stdout, ["rank", "size", "node"], [int, int, str])
        )
        return sn.all(
            [
                sn.assert_eq(
                    sorted(rank for rank, _, _ in found),
                    list(range(self.num_tasks)),
                    msg="ranks {0} reported, expected {1}",
                ),
                sn.assert_eq(
                    {size for _, size, _ in found},
                    {self.num_tasks},
                    msg="communicator sizes {0}, expected {1}",
                ),
                sn.assert_eq(
                    len({node for _, _, node in found}),
                    self.num_tasks // self.num_tasks_per_node,
                    msg="ranks ran on {0} nodes, expected {1}",
                ),
            ]
        )
