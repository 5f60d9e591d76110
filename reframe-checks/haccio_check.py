"""HACC-IO as a site-free ReFrame check: the checkpoint (write) and restart (read) of the HACC
cosmology code (seed 002's case study), file per process, at one scaling point.

One job of procs ranks runs HACC-IO (github.com/glennklockwood/hacc-io, from the system's Spack
view) under iostudy's runtime: every rank writes `particles` particles (38 bytes each) after a
24 MiB header, then reads them back. layout "fpp" (default) is a file per rank (hacc_io,
hacc_io_write, hacc_io_read), "shared" one file (their *_shared builds).

Two forms (verify):
- False (default): a launch per phase, like seed 002's separate checkpoint and restart: the
  write phase (hacc_io_write, output haccio-write.out), then the read phase (hacc_io_read, the
  job's own launch and stdout), each leaving a log tagged with its phase. With drop_cache (the
  default) on the scratch target the files are flushed (sync FILE) and this node's cached pages
  of them dropped between the phases, so that the read phase reads the storage.
- True: one launch of hacc_io, which writes, reads back and compares every value in memory
  ("CONTENTS VERIFIED... Success"); its read comes from the page cache. One log, no phase tag.

Interface and flags (iostudy's build of hacc-io, see iostudy.benchmarks.haccio): interface "mpiio"
(the default, seed 002's) does the I/O through the library's MPI-IO path, "posix" through upstream's
POSIX one; osync opens the POSIX checkpoint O_SYNC. O_DIRECT is not offered (HACC-IO's buffers are
not aligned). The write phase of a run without osync ends at close, before the kernel's writeback,
and measures the page cache as much as the storage.

Performance variables: write_mib_s and read_mib_s (MiB/s: the phase's Bytes over its MaxTime,
as the program computes them: it labels them MB/s but divides by 1024 * 1024, so nothing is
converted) and write_time_s and read_time_s (s, the slowest rank's, open to close). Bytes
include the 24 MiB header of every file (every rank's, for the read of a shared file): at
100,000 particles a rank's file is 87% header, at seed 002's 2.7 million 19%.

Without the programs in the view the test is skipped, naming what is missing. The logic lives in
iostudy.benchmarks.haccio. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/haccio_check.py \\
        -S procs=2 -S particles=1000000 -r
"""

from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable

from iostudy.benchmarks import checks, haccio, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck
from iostudy.core.reframe_names import param_text

CHECK = "haccio_check"
DEFAULTS = registry.reframe_defaults(CHECK)
WRITE_OUTPUT = "haccio-write.out"


@rfm.simple_test
class haccio_check(BenchmarkCheck):
    descr = "HACC-IO: checkpoint write then restart read, file per process or shared, one point"
    time_limit = "30m"
    tags = {"haccio", "application"}
    keep_files = [WRITE_OUTPUT]

    particles = variable(int, value=DEFAULTS["particles"])  # per rank, and a 24 MiB header
    layout = variable(str, value=DEFAULTS["layout"])  # fpp (N-N) or shared (N-1)
    verify = variable(typ.Bool, value=DEFAULTS["verify"])  # one launch: write, read, compare
    drop_cache = variable(typ.Bool, value=DEFAULTS["drop_cache"])  # between the phases
    interface = variable(str, value=DEFAULTS["interface"])  # or posix: iostudy.benchmarks.haccio
    osync = variable(typ.Bool, value=DEFAULTS["osync"])  # the POSIX checkpoint opened O_SYNC

    @run_after("setup")
    def set_job(self):
        # the arguments first: a wrong value is an error, not a skip
        launches = haccio.programs(self.layout, self.verify)
        haccio.arguments(self.particles, haccio.PREFIX)
        switches = haccio.environment(self.interface, bool(self.osync))
        system, environ = self.current_system.name, self.current_environ.name
        found = {
            launch: checks.spack_program(system, name, environ) for launch, name in launches.items()
        }
        missing = [why for program, why in found.values() if program is None]
        program = found["verify" if self.verify else "read"][0]
        tags = {
            "particles": self.particles,
            "layout": self.layout,
            "verify": param_text(bool(self.verify)),
            "drop_cache": param_text(bool(self.drop_cache)),
            "interface": self.interface,
            "osync": param_text(bool(self.osync)),
        }
        workdir = self.prepare(CHECK, None if missing else program, "; ".join(missing), tags)
        self.env_vars.update(switches)
        self.executable_opts = haccio.arguments(self.particles, workdir / haccio.PREFIX)
        self.write_program = None if self.verify else found["write"][0]
        self.drop_pages = haccio.drop_cached_pages_command(workdir) if self.drop_cache else None

    @run_before("run")
    def launch_phases(self):
        """Without verify, the write phase runs before the job's own launch (the read phase),
        each under its phase's log tags."""
        if not self.verify:
            command = [self.write_program, *self.executable_opts]
            self.launch_write_phase_first(command, WRITE_OUTPUT, self.drop_pages)

    def parse(self, text):
        if self.verify:
            return haccio.merge({"verify": text})
        write = Path(self.stagedir, WRITE_OUTPUT).read_text()
        return haccio.merge({"write": write, "read": text})

    def problems(self, parsed):
        return haccio.sanity(
            parsed, self.particles, self.procs, self.layout, self.verify, self.interface
        )

    def figures(self, parsed):
        """(value, unit) pairs, s or MiB/s: the base gives each variable its own unit."""
        return haccio.performance(parsed)
