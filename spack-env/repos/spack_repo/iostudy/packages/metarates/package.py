"""iostudy's metarates: the method of UCAR's metarates (2004), whose source is not public."""

from spack.package import *
from spack_repo.iostudy.checkout import IostudyCheckoutPackage


class Metarates(IostudyCheckoutPackage):
    """Barrier-synchronized metadata rates of MPI processes, one directory per process:
    creat+close, stat, utime and unlink; installs metarates-<mpi flavour>
    (reframe-checks/src/metarates of the iostudy checkout)."""

    root_cmakelists_dir = "reframe-checks/src"

    depends_on("mpi")

    def cmake_args(self):
        return [self.mpi_flavours_arg(), self.define("IOSTUDY_BENCHMARKS", "metarates")]
