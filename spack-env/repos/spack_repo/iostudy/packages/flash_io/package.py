"""FLASH-IO, PnetCDF version: the checkpoint and plot-file I/O of the FLASH code."""

from spack.package import *
from spack_repo.builtin.build_systems.generic import Package
from spack_repo.iostudy.fortran import mpi_fortran_flags, pnetcdf_fortran_include

#: the benchmark's sources in the order their Fortran modules need them
SOURCES = (
    "get_mfluid_property.F90",
    "flash_release.F90",
    "flash_benchmark_io.F90",
    "checkpoint_ncmpi_parallel.F90",
    "plotfile_ncmpi_parallel.F90",
)


class FlashIo(Package):
    """FLASH-IO from PnetCDF's benchmarks/FLASH-IO (W.-k. Liao): every process writes about
    80 blocks of NXB^3 cells (24 variables) to a checkpoint file and 4 variables to two plot
    files (centered and corner) through PnetCDF; prints each file's time and bandwidth.
    Installs `flash_benchmark_io`; its argument is the output file prefix."""

    homepage = "https://github.com/Parallel-NetCDF/PnetCDF/tree/master/benchmarks/FLASH-IO"
    url = "https://github.com/Parallel-NetCDF/PnetCDF/archive/refs/tags/checkpoint.1.14.1.tar.gz"

    # Versions follow the PnetCDF release the benchmark's sources come from; the benchmark
    # links against whichever PnetCDF the spec has (its API has been stable since 1.4).
    version("1.14.1", sha256="714145ea78ffdc1069d23cf62c2a959c416caec5e035626cc4d237a9256ad717")

    variant(
        "nxb",
        default="16",
        values=("8", "16", "32"),
        description="cells per block along each dimension (FLASH's NXB=NYB=NZB)",
    )
    variant("maxblocks", default="100", description="most blocks per process (MAXBLOCKS)")

    depends_on("fortran", type="build")
    depends_on("mpi")
    depends_on("parallel-netcdf+fortran")

    phases = ["build", "install"]

    def build(self, spec, prefix):
        pnetcdf = spec["parallel-netcdf"]
        nxb = spec.variants["nxb"].value
        with working_dir(join_path("benchmarks", "FLASH-IO")):
            # The standalone autotools files are broken at recent tags; the five sources
            # build with the defines of its Makefile.am.
            filter_file(r"parameter\(n([xyz])b=\d+\)", rf"parameter(n\1b={nxb})", "physicaldata.fh")
            mpifc = Executable(spec["mpi"].mpifc)
            mpifc(
                "-O2",
                *mpi_fortran_flags(spec),
                "-DN_DIM=3",
                f"-DMAXBLOCKS={spec.variants['maxblocks'].value}",
                "-DIONMAX=13",
                "-I.",
                *pnetcdf_fortran_include(pnetcdf),
                *SOURCES,
                "-o",
                "flash_benchmark_io",
                *pnetcdf.libs.ld_flags.split(),
            )

    def install(self, spec, prefix):
        mkdirp(prefix.bin, prefix.share.flash_io)
        with working_dir(join_path("benchmarks", "FLASH-IO")):
            install("flash_benchmark_io", prefix.bin)
            install("README.md", prefix.share.flash_io)
