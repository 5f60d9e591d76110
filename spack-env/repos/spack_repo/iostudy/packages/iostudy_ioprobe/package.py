"""The interference probe of seed 004 (reframe-checks/src/ioprobe of this checkout)."""

from spack.package import *
from spack_repo.iostudy.checkout import IostudyCheckoutPackage


class IostudyIoprobe(IostudyCheckoutPackage):
    """Concurrent POSIX writers, one file each on a fixed storage target (one Lustre OST per
    file), timed apart to give the imbalance of slowest vs. fastest writer; installs
    ioprobe-<mpi flavour>."""

    root_cmakelists_dir = "reframe-checks/src"

    depends_on("mpi")

    def cmake_args(self):
        return [self.mpi_flavours_arg(), self.define("IOSTUDY_BENCHMARKS", "ioprobe")]
