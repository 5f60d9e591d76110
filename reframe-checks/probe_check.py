"""The interference probe of seed 004 as a site-free ReFrame check: one sample.

writers_per_target writers per storage target (the system's peaks.storage_targets), as MPI
ranks of iostudy's ioprobe, each writing size bytes in transfer calls to a file of its own
(writer.<rank>) with POSIX calls and an fsync, all starting together, under iostudy's runtime.
On a GlusterFS scratch storage the targets are its bricks: writer r's file is named onto brick
r mod K (ioprobe --brick), and the store's rows name each writer's target (writer_targets tag).
The log's per-file records give each writer's write time (iostudy.benchmarks.probe): the store keeps
them as the sample's rows of the probes table (the time series of the hourly probe, `iostudy
schedule probe`), and the report derives the aggregate and per-writer bandwidth and the imbalance
factor (slowest over fastest writer). The performance variables are ioprobe's own figures. The
internal-interference sweep is the same check over writers_per_target and size
(configs/campaigns/interference.json). By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/probe_check.py \\
        -S writers_per_target=2 -S size=64M -r
"""

import reframe as rfm
from reframe.core.builtins import run_after, variable

from iostudy.benchmarks import checks, probe, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck
from iostudy.collect import placement
from iostudy.core import config

CHECK = "probe_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class probe_check(BenchmarkCheck):
    descr = "Interference probe: a file per writer, writers per storage target, POSIX"
    time_limit = "30m"
    tags = {"probe", "interference"}

    writers_per_target = variable(int, value=DEFAULTS["writers_per_target"])
    size = variable(str, value=DEFAULTS["size"])
    transfer = variable(str, value=DEFAULTS["transfer"])

    @run_after("setup")
    def set_job(self):
        system = self.current_system.name
        description = config.load_system(system)
        on_bricks = placement.scratch_bricks(
            description, self.target != "memory" and self.scratch_dir
        )
        self.targets = len(on_bricks) or probe.storage_targets(description)
        self.procs = probe.writers(self.targets, self.writers_per_target)
        program = checks.benchmark_program(system, "ioprobe", self.current_environ.name)
        why = f"{program} is not built (run `make build-checks`)"
        tags = {
            "writers_per_target": self.writers_per_target,
            "targets": self.targets,
            "size": self.size,
            "transfer": self.transfer,
        }
        if on_bricks:  # each writer's target, for the store's probes rows (proberows)
            tags["writer_targets"] = ",".join(name for name, _ in on_bricks)
        workdir = self.prepare(CHECK, program if program.is_file() else None, why, tags)
        self.executable_opts = probe.arguments(
            workdir, self.size, self.transfer, self.targets, on_bricks
        )

    def parse(self, text):
        return probe.parse(text)

    def problems(self, parsed):
        return probe.sanity(parsed, self.procs, checks.parse_size(self.size))

    def figures(self, parsed):
        return probe.performance(parsed)
