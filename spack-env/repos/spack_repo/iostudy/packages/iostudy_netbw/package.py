"""The network component of seed 001 (reframe-checks/src/netbw of this checkout)."""

from spack.package import *
from spack_repo.iostudy.checkout import IostudyCheckoutPackage


class IostudyNetbw(IostudyCheckoutPackage):
    """Ping-pong bandwidth between pairs of MPI ranks across message sizes with NetPIPE's
    unaligned perturbations, one pair alone and all pairs at once; installs netbw-<mpi
    flavour>."""

    root_cmakelists_dir = "reframe-checks/src"

    depends_on("mpi")

    def cmake_args(self):
        return [self.mpi_flavours_arg(), self.define("IOSTUDY_BENCHMARKS", "netbw")]
