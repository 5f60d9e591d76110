"""What iostudy's own recipes share: they build from the iostudy checkout that holds this repo.

The checkout is fetched as a git repository, so Spack resolves the branch to a commit at
concretization time and the spack.lock (and every install's spec) records exactly which commit
of iostudy was built. Uncommitted changes are not built: `make setup` builds the work tree.
"""

import os
from pathlib import Path

from spack.package import *
from spack_repo.builtin.build_systems.cmake import CMakePackage

#: spack-env/repos/spack_repo/iostudy/checkout.py -> the checkout's root
CHECKOUT = Path(__file__).resolve().parents[4]

#: The recipes' git URL: a name, not a place. Spack files a git source in a mirror under its
#: URL's path (_source-cache/git/<path>/<commit>.tar.gz), so the checkout's own path would tie
#: an offline archive's mirror to the folder it was packed in; git's url.<base>.insteadOf maps
#: the name to this checkout for every git command Spack runs.
GIT_NAME = "file:///iostudy.git"


def _map_git_name_to_checkout(environ=os.environ):
    """Adds url.file://<checkout>.insteadOf=GIT_NAME to git's configuration in the environment
    (GIT_CONFIG_COUNT, git >= 2.31), after any entries already there; an entry for the name
    inherited from another checkout's Spack is pointed at this one."""
    count = int(environ.get("GIT_CONFIG_COUNT", "0"))
    index = next(
        (i for i in range(count) if environ.get(f"GIT_CONFIG_VALUE_{i}") == GIT_NAME), count
    )
    environ[f"GIT_CONFIG_KEY_{index}"] = f"url.file://{CHECKOUT}.insteadOf"
    environ[f"GIT_CONFIG_VALUE_{index}"] = GIT_NAME
    environ["GIT_CONFIG_COUNT"] = str(max(count, index + 1))


_map_git_name_to_checkout()

#: MPI flavour of the runtime's plugins and the benchmarks' names, with its pkg-config module
MPI_FLAVOURS = {"openmpi": "ompi-c", "mpich": "mpich"}


class IostudyCheckoutPackage(CMakePackage):
    """Base of the recipes built from this checkout with CMake."""

    homepage = "https://github.com/iostudy"
    git = GIT_NAME
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
