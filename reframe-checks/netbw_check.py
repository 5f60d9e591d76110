"""The network between nodes as a site-free ReFrame check (seed 001, section 4.2, Fig. 2b).

One job of ``procs`` ranks (an even number; placed ``procs_per_node`` to a node, so that with
1 per node every pair crosses nodes) runs iostudy's netbw: ping-pong between rank r and
r + procs/2 for every power of two from ``min_size`` to ``max_size`` and ``perturb`` bytes
more and less (NetPIPE's unaligned sizes), one pair alone and all pairs at once. Performance
variables: the best one-pair, aggregate and unaligned MiB/s; components.jsonl keeps every
size for the store's components table (iostudy.benchmarks.components). By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/netbw_check.py \\
        -S procs=2 -r
"""

from pathlib import Path

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable

from iostudy.benchmarks import checks, components, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "netbw_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class netbw_check(BenchmarkCheck):
    descr = "netbw: ping-pong bandwidth across message sizes, one pair and all pairs"
    time_limit = "20m"
    tags = {"netbw", "components"}
    keep_files = ["components.jsonl"]  # the store's components rows

    procs = DEFAULTS["procs"]  # a pair
    min_size = variable(str, value=DEFAULTS["min_size"])
    max_size = variable(str, value=DEFAULTS["max_size"])
    perturb = variable(int, value=DEFAULTS["perturb"])
    seconds = variable(float, value=DEFAULTS["seconds"])

    @run_after("setup")
    def set_job(self):
        program = checks.benchmark_program(
            self.current_system.name, "netbw", self.current_environ.name
        )
        why = f"{program} is not built (run `make build-checks`)"
        tags = {"min_size": self.min_size, "max_size": self.max_size, "perturb": self.perturb}
        self.prepare(CHECK, program if program.is_file() else None, why, tags)
        self.executable_opts = components.netbw_arguments(
            self.min_size, self.max_size, self.perturb, self.seconds
        )

    def write_folder(self):
        return None  # messages between ranks only: no storage to guard

    def parse(self, text):
        return components.netbw_parse(text)

    def problems(self, parsed):
        return components.netbw_sanity(parsed, self.procs)

    def figures(self, parsed):
        return components.netbw_performance(parsed)

    @run_before("performance")
    def save_records(self):
        if self.is_dry_run():
            return
        nodes = self.node_count(self.procs, self.procs_per_node)
        records = components.netbw_records(self.parsed(), self.procs, nodes)
        checks.save_json_lines(records, Path(self.stagedir, "components.jsonl"), self.log_tags)
