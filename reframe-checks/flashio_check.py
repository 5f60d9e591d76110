"""FLASH-IO as a site-free ReFrame check: the checkpoint and plot-file writes of the FLASH code
(seed 001's "FLASH3 I/O"), PnetCDF version, at one scaling point.

One job of procs ranks runs flash_benchmark_io (PnetCDF's benchmarks/FLASH-IO, from the
system's Spack view) once, under iostudy's runtime (its log tagged like every check's): every
rank writes its 80-82 blocks of 16^3 cells (the Spack build's MAXBLOCKS=100, NXB=16) to three
shared files one after the other, the checkpoint (24 variables, double precision) and the plot
files of centred and of corner data (4 variables, single precision): about 60 MiB, 5 MiB and
6 MiB per rank. Write only.

access: "collective" (the program's default) or "independent" (-i) MPI-IO; requests:
"nonblocking" (its default, iput + wait_all) or "blocking" (-b) PnetCDF calls. Both are run-time
options of this version (1.14.1), so the check exposes both; the problem size is compile time
(Spack variants nxb and maxblocks of flash-io): the data grows with procs only.

Performance variables: each file's time (checkpoint_time_s, plot_centered_time_s,
plot_corner_time_s; s, the slowest rank's, printed with 2 decimals) and bandwidth
(<file>_mib_s, MiB/s: the file's "I/O amount", which the source divides by 1048576, i.e. MiB,
over that time), and the program's own totals (total_time_s, total_mib_s). Nothing is
converted: the program prints MiB and MiB/s. The precision of a file's bandwidth is that of its
2-decimal time (a file written in under 5 ms has none).

Only PnetCDF: the view builds no HDF5 form. The original FLASH I/O benchmark (M. Zingale, 2001,
http://www.ucolick.org/~zingale/flash_benchmark_io/) had a parallel HDF5 version
(checkpoint_wr_hdf5_par, ...) which seed 001 also ran; the check would need it built and a
parser of its output.

The program runs in its work folder with the prefix flash_ (it keeps the prefix in 128
characters, shorter than many scratch paths). Without flash_benchmark_io in the view the test is
skipped, naming what is missing. The logic lives in iostudy.benchmarks.flashio. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/flashio_check.py \\
        -S procs=2 -S access=independent -r
"""

import shlex

import reframe as rfm
from reframe.core.builtins import run_after, variable

from iostudy.benchmarks import checks, flashio, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "flashio_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class flashio_check(BenchmarkCheck):
    descr = "FLASH-IO (PnetCDF): checkpoint and plot files written to shared files, one point"
    time_limit = "30m"
    tags = {"flashio", "application", "pnetcdf"}

    access = variable(str, value=DEFAULTS["access"])  # or independent (-i)
    requests = variable(str, value=DEFAULTS["requests"])  # or blocking (-b)

    @run_after("setup")
    def set_job(self):
        # the arguments first: a wrong value is an error, not a skip
        options = flashio.arguments(self.access, self.requests)
        program, why = checks.spack_program(
            self.current_system.name, flashio.PROGRAM, self.current_environ.name
        )
        tags = {"access": self.access, "requests": self.requests}
        workdir = self.prepare(CHECK, program, why, tags)
        self.executable_opts = options
        # The job runs the program in its work folder (a short, relative prefix), then returns.
        self.prerun_cmds += [f"cd {shlex.quote(str(workdir))}"]
        self.postrun_cmds = [f"cd {shlex.quote(str(self.stagedir))}", *self.postrun_cmds]

    def parse(self, text):
        return flashio.parse(text)

    def problems(self, parsed):
        return flashio.sanity(parsed, self.procs, self.access, self.requests)

    def figures(self, parsed):
        """(value, unit) pairs, s or MiB/s: the base gives each variable its own unit."""
        return flashio.performance(parsed)
