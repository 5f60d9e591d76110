"""MADbench2: the out-of-core I/O pattern of the MADspec CMB analysis code."""

from spack.package import *
from spack_repo.builtin.build_systems.generic import Package


class Madbench2(Package):
    """MADbench2 (J. Borrill, LBNL, October 2006) built in its I/O mode (-D IO): each process
    writes, then reads back, NBIN matrices of its share of NPIX^2 pixels, with busy-work of
    exponent BWEXP between them. POSIX or MPI-IO, shared or unique files, synchronous or
    asynchronous are chosen at run time (IOMETHOD, FILETYPE, IOMODE, RMOD and WMOD in the
    environment). Installs `MADbench2.x`."""

    homepage = "https://crd.lbl.gov/divisions/scidata/c3/"
    # The only public copy found (the author's distribution states no licence): two files in
    # the qornflakes package collection, pinned at the commit that added them.
    url = (
        "https://github.com/GuilloteauQ/qornflakes/archive/"
        "cfb9923d40d9b5d3db5699db2ebdbd3127b8256b.tar.gz"
    )

    version("2006.10", sha256="d4ddfcd042021173f7de3a7998f976f567bfab9b6692a73de910a8a9702ade51")

    depends_on("c", type="build")
    depends_on("mpi")

    phases = ["build", "install"]

    def build(self, spec, prefix):
        with working_dir(join_path("pkgs", "MADbench2")):
            mpicc = Executable(spec["mpi"].mpicc)
            # SYSTEM/COLUMBIA: the generic timer and dSYEV-free build of the I/O-only mode.
            mpicc(
                "-O2", "-DSYSTEM", "-DCOLUMBIA", "-DIO", "-o", "MADbench2.x", "MADbench2.c", "-lm"
            )

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        install(join_path("pkgs", "MADbench2", "MADbench2.x"), prefix.bin)
