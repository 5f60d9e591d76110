"""iostudy's metarates as a site-free ReFrame check: the method of UCAR's metarates (2004).

One job of procs ranks runs metarates-<MPI flavour> (reframe-checks/src/metarates: the Spack
view's, else `make setup`'s) with files_per_proc files per process, each process in its own
directory, barrier-synchronized phases: creat+close, stat, utime, remove. Performance
variables: each phase's aggregate rate (ops/s). Under iostudy's runtime, its log tagged. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/metarates_check.py \\
        -S procs=2 -S files_per_proc=1000 -r
"""

import reframe as rfm
from reframe.core.builtins import run_after, variable

from iostudy.benchmarks import checks, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "metarates_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class metarates_check(BenchmarkCheck):
    descr = "metarates: barrier-synchronized create, stat, utime and remove rates"
    time_limit = "30m"
    tags = {"metarates", "metadata", "scaling"}

    files_per_proc = variable(int, value=DEFAULTS["files_per_proc"])

    @run_after("setup")
    def set_job(self):
        system, environ = self.current_system.name, self.current_environ.name
        program = checks.benchmark_program(system, "metarates", environ)
        why = f"{program} is not built: run `make setup` (or `make spack SYSTEM={system}`)"
        found = program if program.is_file() else None
        workdir = self.prepare(CHECK, found, why, {"files_per_proc": self.files_per_proc})
        self.executable_opts = checks.metarates_arguments(self.files_per_proc, workdir / "md")

    perf_unit = checks.OPS_S

    def parse(self, text):
        return checks.metarates_lines(text)

    def problems(self, parsed):
        return checks.metarates_sanity(parsed, self.procs, self.files_per_proc)

    def figures(self, parsed):
        return checks.metarates_performance(parsed)
