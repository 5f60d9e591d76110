"""Seed 004's adaptive I/O as a site-free ReFrame check: one run of iostudy's adaptive benchmark.

procs writers (MPI ranks) in one group per storage target write size bytes each in one of three
modes: adaptive (a sub-coordinator per target, a coordinator that moves waiting writers from
busy targets to idle ones, a global index), mpiio (one shared file, collective writes) or
posix-fpp (a file per process). The targets are the storage targets the system description
lists (each a folder of its own), else the system's peaks.storage_targets folders under the
scratch storage; on a GlusterFS scratch storage (the test cluster's volume) a folder per brick
on the volume, each data file named onto its target's brick, the run's row naming the targets.
With interference, the job first starts a competing writer on the first half of the targets (dd
with an fsync, again and again; seed 004 Figs. 5-7 compare runs with and without it) and stops
it after; on the volume its file is named onto its target's brick too (glusterplace), the row's
interferer_targets naming them. Under iostudy's
runtime: the log's per-file records show what the coordinator did. adaptive.jsonl keeps the run
for the store's adaptive table. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/adaptive_check.py \\
        -S procs=4 -S mode=adaptive -S size=16M -S interference=true -r
"""

from pathlib import Path

import reframe as rfm
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, variable

from iostudy.benchmarks import adaptive, checks, probe, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck
from iostudy.collect import placement
from iostudy.core import config

CHECK = "adaptive_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class adaptive_check(BenchmarkCheck):
    descr = "Adaptive I/O against MPI-IO and file per process, with or without interference"
    time_limit = "30m"
    tags = {"adaptive", "interference"}
    keep_files = ["adaptive.jsonl"]  # the store's adaptive rows

    mode = variable(str, value=DEFAULTS["mode"])
    size = variable(str, value=DEFAULTS["size"])
    block = variable(str, value=DEFAULTS["block"])
    interference = variable(typ.Bool, value=DEFAULTS["interference"])  # "false" is false

    @run_after("setup")
    def set_job(self):
        system = self.current_system.name
        program = checks.benchmark_program(system, "adaptive", self.current_environ.name)
        why = f"{program} is not built (run `make build-checks`)"
        tags = {"mode": self.mode, "size": self.size, "interference": self.interference}
        workdir = self.prepare(CHECK, program if program.is_file() else None, why, tags)
        description = config.load_system(system)
        scratch = self.target != "memory" and self.scratch_dir
        # a brick per target, at most one target a writer
        self.bricks = placement.scratch_bricks(description, scratch)[: self.procs]
        self.targets = self.target_folders(description, workdir)
        self.prerun_cmds.append(f"mkdir -p {' '.join(map(str, self.targets))}")
        self.postrun_cmds += [f"rm -rf {' '.join(map(str, self.targets))}"]
        if self.interference:
            placer = checks.tool_program(system, adaptive.PLACER)
            missing = bool(self.bricks) and not placer.is_file()
            self.skip_if(missing, f"{placer} is not built (run `make build-checks`)")
            # a job the placer stops removes its folders there, as its end would have
            undo = self.postrun_cmds
            start, stop = adaptive.interference_commands(self.targets, self.bricks, placer, undo)
            self.prerun_cmds += start
            self.postrun_cmds = stop + self.postrun_cmds
        self.executable_opts = adaptive.arguments(
            workdir, self.targets, self.mode, self.size, self.block, self.bricks
        ) + ["--verify"]

    def target_folders(self, system: dict, workdir: Path) -> list[Path]:
        """This case's folder on each storage target the system lists, else K folders under
        its scratch folder; at most one a writer. On a GlusterFS scratch storage, a folder per
        brick on the volume (the benchmark names the files onto the bricks: --brick)."""
        listed = config.storage_targets(system)[: self.procs]
        if self.bricks:
            return [workdir / f"target.{k}" for k in range(len(self.bricks))]
        if listed:
            roots = [config.storage_path(t["path"], self.run_folder()) for t in listed]
            for target, root in zip(listed, roots, strict=True):
                self.require_target_folder(target["name"], root)
            folders = [self.job_folder(root) for root in roots]
        else:
            count = min(probe.storage_targets(system), self.procs)
            folders = [workdir / f"target.{k}" for k in range(count)]
        return folders

    def parse(self, text):
        return adaptive.parse(text)

    def problems(self, parsed):
        return adaptive.sanity(
            parsed, self.mode, self.procs, len(self.targets), checks.parse_size(self.size)
        )

    def figures(self, parsed):
        return adaptive.performance(parsed)

    @run_before("performance")
    def save_records(self):
        if self.is_dry_run():
            return
        nodes = self.node_count(self.procs, self.procs_per_node)
        row = adaptive.record(self.parsed(), self.interference, nodes, self.bricks)
        checks.save_json_lines([row], Path(self.stagedir, "adaptive.jsonl"), self.log_tags)
