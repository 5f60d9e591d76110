"""A storage target's rates with fio as a site-free ReFrame check (seed 001, section 4.2, Fig. 3).

One job on one node runs fio (the system's Spack view's, else the machine's: Debian's `fio`)
with ``jobs`` processes on the system's scratch storage, or on one of the storage targets its
system description lists (``storage_target``; on the target's node), each on a file of its
own, ``iodepth`` requests in flight each: large direct sequential writes or reads of ``block``
bytes (``operation`` write, read), or small writes each followed by fsync (``syncwrite``: seed
001's metadata updates). fio's group bandwidth is the performance variable; components.jsonl
keeps it for the store's components table (iostudy.benchmarks.components), which the report's
ceiling model reads. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/fio_check.py \\
        -S operation=write -S jobs=2 -S size=64M -r
"""

from pathlib import Path

import reframe as rfm
from reframe.core.backends import getlauncher
from reframe.core.builtins import run_after, run_before, variable

from iostudy.benchmarks import checks, components, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck
from iostudy.core import config

CHECK = "fio_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class fio_check(BenchmarkCheck):
    descr = "fio: a storage target's large direct or small synced I/O rate, jobs per target"
    time_limit = "20m"
    tags = {"fio", "components"}
    keep_files = ["components.jsonl"]  # the store's components rows

    operation = variable(str, value=DEFAULTS["operation"])
    jobs = variable(int, value=DEFAULTS["jobs"])
    size = variable(str, value=DEFAULTS["size"])
    block = variable(str, value=DEFAULTS["block"])
    iodepth = variable(int, value=DEFAULTS["iodepth"])
    storage_target = variable(str, value=DEFAULTS["storage_target"])

    @run_after("setup")
    def set_job(self):
        self.procs, self.procs_per_node = 1, 1  # fio starts its jobs itself, on one node
        program = components.fio_program(self.current_system.name)
        why = "fio is not installed (Debian's fio package, or fio in the Spack view)"
        tags = {
            "operation": self.operation,
            "jobs": self.jobs,
            "size": self.size,
            "block": self.block,
            "iodepth": self.iodepth,
            "storage_target": self.storage_target,
        }
        target = self.listed_target()
        workdir = self.prepare(CHECK, program, why, tags)
        if target:
            self.run_on_target(target)
        # fio is one process that forks its jobs: no MPI launcher, no runtime in its log
        self.job.launcher = getlauncher("local")()
        self.env_vars.pop("LD_PRELOAD", None)
        self.executable_opts = components.fio_arguments(
            workdir, self.operation, self.jobs, self.size, self.block, self.iodepth
        )

    def listed_target(self) -> dict | None:
        """The storage target the case names (None: the scratch storage); its folder becomes
        the case's scratch folder."""
        if self.storage_target == "scratch":
            return None
        system = config.load_system(self.current_system.name)
        targets = {t["name"]: t for t in config.storage_targets(system)}
        if self.storage_target not in targets:
            listed = ", ".join(targets) or "none"
            raise ValueError(
                f"storage_target {self.storage_target!r}: system "
                f"{system['name']} lists no such target (its targets: {listed})"
            )
        target = targets[self.storage_target]
        self.scratch_dir = str(config.storage_path(target["path"], self.run_folder()))
        return target

    def run_on_target(self, target: dict) -> None:
        """On the target's node (its server), and only where its folder is."""
        node = target.get("node")
        if node and self.current_partition.scheduler.registered_name != "local":
            self.job.options += [f"--nodelist={node}"]
        self.require_target_folder(target["name"], self.scratch_dir)

    def parse(self, text):
        return components.fio_parse(text)

    def problems(self, parsed):
        return components.fio_sanity(
            parsed, self.operation, self.jobs, checks.parse_size(self.size)
        )

    def figures(self, parsed):
        return components.fio_performance(parsed, self.operation)

    @run_before("performance")
    def save_records(self):
        if self.is_dry_run():
            return
        records = components.fio_records(
            self.parsed(),
            self.operation,
            self.jobs,
            checks.parse_size(self.block),
            self.iodepth,
            self.storage_target,
        )
        checks.save_json_lines(records, Path(self.stagedir, "components.jsonl"), self.log_tags)
