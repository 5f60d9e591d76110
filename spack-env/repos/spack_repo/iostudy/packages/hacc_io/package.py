"""HACC-IO: the checkpoint/restart I/O kernel of the HACC cosmology code."""

from spack.package import *
from spack_repo.builtin.build_systems.makefile import MakefilePackage

#: the programs of the Makefile's `all` target
PROGRAMS = ("hacc_io", "hacc_io_write", "hacc_io_read", "hacc_open_close", "hacc_printinfo")


class HaccIo(MakefilePackage):
    """HACC-IO writes and reads back the particle arrays of HACC's checkpoints, through POSIX
    or (HACC_IO_INTERFACE=mpiio, see patch) MPI-IO. Installs the file-per-process programs
    under their own names and the shared-file ones with the suffix _shared (hacc_io_shared,
    ...): a study compares both layouts."""

    homepage = "https://github.com/glennklockwood/hacc-io"
    url = (
        "https://github.com/glennklockwood/hacc-io/archive/"
        "b4d8c1dcfc2afcfb7722c44ec573ff3c36d3012d.tar.gz"
    )
    # Licence: UChicago Argonne BSD-style terms, in the source's LICENSE file.

    # No release or tag upstream: the last commit (2018-01-17), pinned by its archive's checksum.
    version("2018-01-17", sha256="7afb4fab7322255fdf0dda8f3ebd4fab6cb6b593b48d7af7bcfacc74ca0a81c6")

    depends_on("cxx", type="build")
    depends_on("gmake", type="build")
    depends_on("mpi")

    def patch(self):
        # Seed 002 ran HACC-IO through MPI-IO with its checkpoint opened O_SYNC and O_DIRECT;
        # upstream's main program always calls SetPOSIX_IO_Interface() and opens plainly. Two
        # switches at run time (read by iostudy's haccio_check): HACC_IO_INTERFACE=mpiio uses
        # the library's MPI-IO path, HACC_IO_OSYNC=1 opens the POSIX checkpoint O_SYNC.
        # (O_DIRECT needs buffers aligned to the block size, which HACC-IO's arrays are not.)
        filter_file(
            r"rst->SetPOSIX_IO_Interface\(\);",
            'if (getenv("HACC_IO_INTERFACE") && !strcmp(getenv("HACC_IO_INTERFACE"), "mpiio")) '
            "rst->SetMPI_IO_Interface(); else rst->SetPOSIX_IO_Interface();",
            "testhacc_io.cc",
        )
        filter_file(
            r"::open\(\(char \*\)m_partFileName, O_WRONLY, 0664\)",
            "::open((char *)m_partFileName, "
            'O_WRONLY | (getenv("HACC_IO_OSYNC") ? O_SYNC : 0), 0664)',
            "restartio_glean.cc",
        )

    def build(self, spec, prefix):
        # The Makefile's objects differ per layout (-DHACC_IO_FILE_PER_PROCESS): build the
        # shared-file programs, set them aside, then the file-per-process ones.
        make_args = [f"CXX={spec['mpi'].mpicxx}"]
        make("all", *make_args)
        mkdirp("shared")
        for program in PROGRAMS:
            rename(program, join_path("shared", f"{program}_shared"))
        make("clean", *make_args)
        make("fpp", *make_args)

    def install(self, spec, prefix):
        mkdirp(prefix.bin)
        for program in PROGRAMS:
            install(program, prefix.bin)
            install(join_path("shared", f"{program}_shared"), prefix.bin)
        install("README.md", prefix)
