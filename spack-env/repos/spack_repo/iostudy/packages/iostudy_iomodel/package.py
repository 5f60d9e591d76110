"""The I/O-model benchmark of seed 003 (reframe-checks/src/iomodel of this checkout)."""

from spack.package import *
from spack_repo.iostudy.checkout import IostudyCheckoutPackage


class IostudyIomodel(IostudyCheckoutPackage):
    """Writes (and reads back) S bytes per I/O model, from file per process to one shared
    file, with MPI-IO; installs iomodel-<mpi flavour>."""

    root_cmakelists_dir = "reframe-checks/src"

    depends_on("mpi")

    def cmake_args(self):
        return [self.mpi_flavours_arg(), self.define("IOSTUDY_BENCHMARKS", "iomodel")]
