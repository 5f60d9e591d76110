"""What iostudy's own recipes share: they build from the iostudy checkout that holds this repo.

The checkout is fetched as a git repository, so Spack resolves the branch to a commit at
concretization time and the spack.lock (and every install's spec) records exactly which commit
of iostudy was built. Uncommitted changes are not built: `make setup` builds the work tree.
"""

from pathlib import Path

from spack.package import *
from spack_repo.builtin.build_systems.cmake import CMakePackage

#: spack-env/repos/spack_repo/iostudy/checkout.py -> the checkout's root
CHECKOUT = Path(__file__).resolve().parents[4]

#: MPI flavour of the runtime's plugins and the benchmarks' names, with its pkg-config module
MPI_FLAVOURS = {"openmpi": "ompi-c", "mpich": "mpich"}


class IostudyCheckoutPackage(CMakePackage):
    """Base of the recipes built from this checkout with CMake."""

    homepage = "https://github.com/iostudy"
    git = f"file://{CHECKOUT}"
    maintainers("iostudy")

    version("main", branch="main")

    depends_on("c", type="build")
    depends_on("cmake@3.18:", type="build")
    depends_on("pkgconfig", type="build")

    def mpi_flavours_arg(self):
        """The CMake list of MPI flavours to build for: the one MPI of the spec."""
        for flavour, module in MPI_FLAVOURS.items():
            if self.spec.satisfies(f"^[virtuals=mpi] {flavour}"):
                return self.define("IOSTUDY_MPI_FLAVOURS", f"{flavour}:{module}")
        raise InstallError(
            f"{self.name}: MPI {self.spec['mpi'].name} has no iostudy flavour "
            f"(supported: {', '.join(MPI_FLAVOURS)})"
        )
