"""Seed 004's adaptive I/O benchmark (reframe-checks/src/adaptive of this checkout)."""

from spack.package import *
from spack_repo.iostudy.checkout import IostudyCheckoutPackage


class IostudyAdaptive(IostudyCheckoutPackage):
    """Adaptive I/O (writers grouped per storage target, sub-coordinators, a coordinator that
    moves waiting writers from busy targets to idle ones, file and global indices) against one
    shared file written with MPI-IO and a file per process; installs adaptive-<mpi flavour>, and
    glusterplace (no MPI), which names its competing writer's file onto a GlusterFS brick."""

    root_cmakelists_dir = "reframe-checks/src"

    depends_on("mpi")

    def cmake_args(self):
        return [self.mpi_flavours_arg(), self.define("IOSTUDY_BENCHMARKS", "adaptive")]
