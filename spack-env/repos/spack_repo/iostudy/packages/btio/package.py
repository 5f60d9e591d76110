"""BTIO: the I/O of the NAS Parallel Benchmarks' BT solver, with MPI-IO and PnetCDF methods."""

from spack.package import *
from spack_repo.builtin.build_systems.makefile import MakefilePackage
from spack_repo.iostudy.fortran import mpi_fortran_flags, pnetcdf_fortran_include


class Btio(MakefilePackage):
    """Northwestern's BTIO (W.-k. Liao): NPB BT's block-tridiagonal I/O pattern written with
    MPI collective or independent I/O, or PnetCDF blocking or non-blocking I/O (the method is
    the second line of the input file). Needs a square number of processes. Installs `btio`
    and the sample input file as share/btio/inputbt.data."""

    homepage = "https://github.com/wkliao/BTIO"
    url = "https://github.com/wkliao/BTIO/archive/d45c2702ae60218139dc8b44f495453f0a92c431.tar.gz"

    # No tags upstream: the last commit (2019-07-21, release 1.1.1 plus hint fixes).
    version("2019-07-21", sha256="6b12778c650d4f1ae7d02370bcf6a64b35d1b877d275f3bf847544517c8500f4")

    depends_on("fortran", type="build")
    depends_on("gmake", type="build")
    depends_on("mpi")
    depends_on("parallel-netcdf+fortran")

    # The Makefile lets bt.o start before pnetcdf_m.o has written its module.
    parallel = False

    @property
    def build_targets(self):
        spec = self.spec
        fflags = ["-O2"] + mpi_fortran_flags(spec)
        return [
            f"MPIF90={spec['mpi'].mpifc}",
            f"FCFLAGS={' '.join(fflags)}",
            f"PNETCDF_DIR={spec['parallel-netcdf'].prefix}",
            f"INC={' '.join(pnetcdf_fortran_include(spec['parallel-netcdf']))}",
        ]

    def install(self, spec, prefix):
        mkdirp(prefix.bin, prefix.share.btio)
        install("btio", prefix.bin)
        install("inputbt.data", prefix.share.btio)
        install("README.md", prefix.share.btio)
