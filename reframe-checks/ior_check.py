"""IOR as a site-free ReFrame check: one point of seed 001's scaling campaign.

One job of procs ranks (procs_per_node per node) runs IOR with an API (POSIX, MPIIO, HDF5,
NCMPI), shared file (N-1) or file per process (N-N), transfers calls of transfer bytes per
process (so 4M and 4000000 move nearly the same data), iterations times, under iostudy's runtime,
in two launches: the write phase, then the read phase (other ranks' data, -C; on the scratch
target this node's cached pages of the files are dropped first, so that the read measures the
storage, not memory, and lasts long enough to time: from the page cache a 2 GiB read took 50 ms,
where one scheduler tick is 8% of it). Each leaves a
Darshan-format log in <run_dir>/darshan tagged with campaign, check, system, parameters and
phase: a log records only a file's first open, and seed 000's time of a shared file starts at
the phase's open (iostudy.metrics.metrics.ior_log_bandwidth). The write phase's output is
ior-write.out, the read phase's the job's stdout. Every iteration of IOR's JSON results is kept
as ior.jsonl in the test's output folder, each with its phase log's tags; the performance
variables are the mean write and read MiB/s over the iterations.

IOR comes from the system's Spack view (`make spack SYSTEM=...`); when it is missing the test is
skipped with the reason (a skip is never a pass). target "scratch" writes to the system's
scratch storage, "memory" to /dev/shm of the nodes: the client-side ceiling of seed 001's
component measurements. Parameters are variables set by `iostudy campaign run`; the logic lives
in iostudy.benchmarks.checks and iostudy.benchmarks.benchcheck. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/ior_check.py \\
        -S procs=2 -S transfers=4 -S transfer=4M -r
"""

from pathlib import Path

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable

from iostudy.benchmarks import checks, measures, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck
from iostudy.core import numfmt

CHECK = "ior_check"
DEFAULTS = registry.reframe_defaults(CHECK)
WRITE_OUTPUT = "ior-write.out"


@rfm.simple_test
class ior_check(BenchmarkCheck):
    descr = "IOR: write then read, shared file or file per process, one scaling point"
    time_limit = "30m"
    tags = {"ior", "scaling"}
    keep_files = ["ior.jsonl", WRITE_OUTPUT]
    # A record per rank for the shared file too: the slowest rank's time, from which the log's
    # bandwidth is derived (iostudy.metrics.metrics.ior_log_bandwidth), is lost when they are
    # reduced.
    env_vars = {"DARSHAN_DISABLE_SHARED_REDUCTION": "1"}

    api = variable(str, value=DEFAULTS["api"])
    layout = variable(str, value=DEFAULTS["layout"])  # shared (N-1) or fpp (N-N)
    transfer = variable(str, value=DEFAULTS["transfer"])
    transfers = variable(int, value=DEFAULTS["transfers"])  # per process and iteration
    iterations = variable(int, value=DEFAULTS["iterations"])
    #: auto, direct (O_DIRECT) or fsync: what the time includes (iostudy.benchmarks.measures)
    sync = variable(str, value=DEFAULTS["sync"])

    @run_after("setup")
    def set_job(self):
        if self.api not in checks.IOR_APIS or self.layout not in checks.IOR_LAYOUTS:
            raise ValueError(f"{CHECK}: api {self.api} / layout {self.layout}: unknown")
        program, why = checks.spack_program(
            self.current_system.name, "ior", self.current_environ.name
        )
        if self.sync == "none":
            raise ValueError(f"{CHECK}: sync none: IOR's write phase always fsyncs (-e)")
        block = checks.parse_size(self.transfer) * self.transfers
        aligned = (
            self.api == "POSIX" and checks.parse_size(self.transfer) % measures.DIRECT_ALIGN == 0
        )
        sync = self.measure(self.sync, self.target_folder(), aligned, block * self.procs)
        tags = {
            "api": self.api,
            "layout": self.layout,
            "transfer": self.transfer,
            "transfers": self.transfers,
            "iterations": self.iterations,
            "sync": sync,
            "measures": self.measures,
        }
        workdir = self.prepare(CHECK, program, why, tags)
        self.drop_pages = checks.drop_cached_pages_command(workdir)
        self.ior_options = {
            phase: checks.ior_arguments(
                self.api,
                self.layout,
                self.transfer,
                self.transfers,
                self.iterations,
                workdir / "testfile",
                phase,
                direct=sync == "direct",
            )
            for phase in checks.IOR_PHASES
        }
        self.executable_opts = self.ior_options["read"]

    @run_before("run")
    def launch_phases(self):
        """The write phase runs before the job's own launch (the read phase), each under its
        phase's log tags."""
        command = [self.executable, *self.ior_options["write"]]
        self.launch_write_phase_first(command, WRITE_OUTPUT, self.drop_pages)

    perf_unit = numfmt.MIB_S

    def parse(self, text):
        write = Path(self.stagedir, WRITE_OUTPUT).read_text()
        return checks.ior_phase_results({"write": write, "read": text}, self.log_tags)

    def problems(self, parsed):
        block = checks.parse_size(self.transfer) * self.transfers
        return checks.ior_sanity(parsed, self.iterations, self.procs, block)

    def figures(self, parsed):
        return checks.ior_performance(parsed)

    @run_before("sanity")
    def save_results(self):
        if self.is_dry_run():
            return
        try:
            results = self.parsed()["results"]
        except (OSError, ValueError):
            return  # the sanity function says why
        checks.save_json_lines(results, Path(self.stagedir, "ior.jsonl"), self.log_tags)
