"""mdtest as a site-free ReFrame check: metadata rates at one scaling point (seed 001).

One job of procs ranks runs mdtest (from the system's Spack view, IOR's mdtest) with
files_per_proc files and directories per process, each process in its own directory (-u),
iterations times, under iostudy's runtime (its log tagged like every check's). Performance
variables: the mean create, stat and remove rates of files and the directory creation rate
(ops/s). Without mdtest in the view the test is skipped, naming what is missing. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/mdtest_check.py \\
        -S procs=2 -S files_per_proc=100 -r
"""

import reframe as rfm
from reframe.core.builtins import run_after, variable

from iostudy.benchmarks import benchparse, checks, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "mdtest_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class mdtest_check(BenchmarkCheck):
    descr = "mdtest: file and directory create, stat and remove rates, one scaling point"
    time_limit = "30m"
    tags = {"mdtest", "metadata", "scaling"}

    files_per_proc = variable(int, value=DEFAULTS["files_per_proc"])
    iterations = variable(int, value=DEFAULTS["iterations"])

    @run_after("setup")
    def set_job(self):
        program, why = checks.spack_program(
            self.current_system.name, "mdtest", self.current_environ.name
        )
        tags = {"files_per_proc": self.files_per_proc, "iterations": self.iterations}
        workdir = self.prepare(CHECK, program, why, tags)
        self.executable_opts = checks.mdtest_arguments(
            self.files_per_proc, self.iterations, workdir / "mdtest"
        )

    perf_unit = checks.OPS_S

    def parse(self, text):
        return benchparse.mdtest_text(text)

    def problems(self, parsed):
        return checks.mdtest_sanity(parsed, self.procs, self.files_per_proc, self.iterations)

    def figures(self, parsed):
        return checks.mdtest_performance(parsed)
