"""MADbench2 as a site-free ReFrame check: the out-of-core I/O of a CMB analysis (seed 001,
section 4.4.2).

One job of procs ranks (a square number) runs the Spack view's `MADbench2.x`, built in I/O
mode, in a folder of its own on the system's scratch (or /dev/shm with target "memory"), under
iostudy's runtime: NBIN matrices of NPIX x NPIX doubles written (phase S), read back and
written again (W) and read (C), with POSIX (stdio: fopen/fwrite/fread) or MPI-IO (independent
MPI_File_write/read) to one shared file (SHARED) or a file per process (UNIQUE), RMOD and WMOD
readers and writers at a time, FBLOCKSIZE the file alignment, SBLOCKSIZE the matrices' block
size, BWEXP the busy-work exponent (1: no significant computation, as in seed 001); one gang,
synchronous I/O.

Performance variables, from the times MADbench2 prints (2 decimals): per phase and I/O part the
slowest process's time (s_write_s, w_read_s, w_write_s, c_read_s; each part is between
barriers, so that is its duration) and bandwidth (..._mib_s: NBIN x NPIX^2 x 8 bytes over it,
MiB/s), write_mib_s and read_mib_s over all parts, and each phase's total time (s_total_s,
w_total_s, c_total_s: the mean over the processes). Parameters MADbench2 would refuse fail at
setup, naming why; without MADbench2.x in the view the test is skipped, naming what is missing.
The logic lives in iostudy.benchmarks.madbench. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/madbench_check.py \\
        -S procs=4 -S npix=2048 -S nbin=4 -S filetype=UNIQUE -S iomethod=MPI -r
"""

import shlex

import reframe as rfm
from reframe.core.builtins import run_after, variable

from iostudy.benchmarks import checks, madbench, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "madbench_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class madbench_check(BenchmarkCheck):
    descr = "MADbench2 I/O mode: write, read-write and read phases of NBIN NPIX^2 matrices"
    time_limit = "30m"
    tags = {"madbench2", "application"}

    npix = variable(int, value=DEFAULTS["npix"])  # 4096: 128 MiB per matrix
    nbin = variable(int, value=DEFAULTS["nbin"])
    sblocksize = variable(int, value=DEFAULTS["sblocksize"])
    fblocksize = variable(int, value=DEFAULTS["fblocksize"])
    rmod = variable(int, value=DEFAULTS["rmod"])
    wmod = variable(int, value=DEFAULTS["wmod"])
    iomethod = variable(str, value=DEFAULTS["iomethod"])  # POSIX or MPI
    filetype = variable(str, value=DEFAULTS["filetype"])  # SHARED or UNIQUE
    bwexp = variable(float, value=DEFAULTS["bwexp"])

    @run_after("setup")
    def set_job(self):
        why_not = madbench.problem(
            self.procs,
            self.npix,
            self.nbin,
            self.sblocksize,
            self.fblocksize,
            self.rmod,
            self.wmod,
            self.iomethod,
            self.filetype,
        )
        if why_not:
            raise ValueError(f"{CHECK}: {why_not}")
        program, why = checks.spack_program(
            self.current_system.name, "MADbench2.x", self.current_environ.name
        )
        tags = {
            "iomethod": self.iomethod,
            "filetype": self.filetype,
            "npix": self.npix,
            "nbin": self.nbin,
            "sblocksize": self.sblocksize,
            "fblocksize": self.fblocksize,
            "rmod": self.rmod,
            "wmod": self.wmod,
            "bwexp": f"{self.bwexp:g}",
        }
        workdir = self.prepare(CHECK, program, why, tags)
        self.executable_opts = madbench.arguments(
            self.npix, self.nbin, self.sblocksize, self.fblocksize, self.rmod, self.wmod
        )
        self.env_vars = {
            **self.env_vars,
            **madbench.environment(self.iomethod, self.filetype, self.bwexp),
        }
        # MADbench2 works in files/ of its current folder.
        self.prerun_cmds.append(f"cd {shlex.quote(str(workdir))}")
        self.postrun_cmds.insert(0, f"cd {shlex.quote(str(self.stagedir))}")

    def parse(self, text):
        return madbench.parse(text)

    def problems(self, parsed):
        return madbench.sanity(
            parsed,
            self.procs,
            self.npix,
            self.nbin,
            self.rmod,
            self.wmod,
            self.iomethod,
            self.filetype,
            self.bwexp,
        )

    def figures(self, parsed):
        """(value, unit) pairs: seconds and MiB/s."""
        return madbench.performance(parsed)
