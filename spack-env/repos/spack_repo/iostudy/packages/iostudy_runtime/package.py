"""iostudy's instrumentation runtime (runtime/ of this checkout)."""

from spack.package import *
from spack_repo.iostudy.checkout import IostudyCheckoutPackage


class IostudyRuntime(IostudyCheckoutPackage):
    """LD_PRELOAD library that records POSIX, STDIO and MPI I/O in Darshan-format logs, with
    the MPI plugin (libiostudy-mpi-<flavour>.so) of the MPI it is built against."""

    root_cmakelists_dir = "runtime"

    variant("mpi", default=True, description="Build the MPI plugin for the spec's MPI")

    depends_on("zlib-api")
    depends_on("mpi", when="+mpi")

    def cmake_args(self):
        # The test programs and benchmark drivers are not installed (some need Fortran).
        # Logs compressed with zlib, a declared dependency, never with a libdeflate the build
        # happens to find on the system.
        args = [self.define("BUILD_TESTING", False), self.define("IOSTUDY_LIBDEFLATE", "OFF")]
        if self.spec.satisfies("+mpi"):
            return [*args, self.mpi_flavours_arg()]
        return [*args, self.define("IOSTUDY_MPI_FLAVOURS", "")]
