"""The I/O-model benchmark of seed 003 as a site-free ReFrame check.

One job of max_procs ranks (procs_per_node per node) runs every I/O model between file per
process and single shared file, size bytes each, with the environment's build of the benchmark
(iomodel-<environ> from the system's Spack view, build/spack/<system>/view, else from
build/reframe-checks of `make setup`), under iostudy's runtime (found the same way): the job
leaves one Darshan-format log in <run_dir>/darshan tagged with campaign, check, system and
parameters. The benchmark's JSON lines are kept as iomodel.jsonl in the test's output folder.

Parameters are variables, set by `iostudy campaign run` from the campaign (-S, or -P for a
scan), their defaults the check registry's (iostudy.benchmarks.registry); references come from
configs/references/<system>.json. The job's setup is iostudy.benchmarks.benchcheck.RuntimeCheck's,
the logic iostudy.benchmarks.checks'. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/iomodel_check.py \\
        -S size=16M -S max_procs=4 -S sync=auto -r
"""

from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from iostudy.benchmarks import checks, measures, registry
from iostudy.benchmarks.benchcheck import RuntimeCheck
from iostudy.core import numfmt

CHECK = "iomodel_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class iomodel_check(RuntimeCheck):
    descr = "I/O models of seed 003: S bytes per model, file per process to single shared file"
    time_limit = "20m"
    tags = {"iomodel"}
    keep_files = ["iomodel.jsonl"]

    # The campaign's parameters (size and max_procs have no default: a campaign gives them).
    size = variable(str)
    max_procs = variable(int)
    #: 0: the partition's cores per node, at most max_procs
    procs_per_node = variable(int, value=DEFAULTS["procs_per_node"])
    read_back = variable(typ.Bool, value=DEFAULTS["read_back"])
    #: auto, direct (O_DIRECT), fsync or none: what the time includes (iostudy.benchmarks.measures)
    sync = variable(str, value=DEFAULTS["sync"])

    @run_after("setup")
    def set_job(self):
        procs = self.max_procs
        per_node = self.place(procs, self.procs_per_node)
        problem = checks.iomodel_problem(checks.parse_size(self.size), procs, per_node)
        if problem:
            raise ValueError(f"{CHECK}: {problem}")
        environ = self.current_environ.name
        system = self.current_system.name
        program = checks.benchmark_program(system, "iomodel", environ)
        for built in (program, checks.runtime_library(system, environ)):
            if not built.is_file() and not self.is_dry_run():
                raise FileNotFoundError(f"{built} is missing: run `make setup` or `make spack`")
        workdir = self.job_folder(self.scratch_folder())
        size = checks.parse_size(self.size)
        # every chunk is (S / M) times a power of two (iomodel.c); the 1-node models put all S
        # on one node
        aligned = (size // procs) % measures.DIRECT_ALIGN == 0
        sync = self.measure(self.sync, self.scratch_folder(), aligned, size)
        tags = {
            "size": self.size,
            "max_procs": procs,
            "procs_per_node": per_node,
            "read_back": str(bool(self.read_back)).lower(),
            "nodes": self.node_count(procs, per_node),
            "sync": sync,
            "measures": self.measures,
        }
        self.preload(CHECK, program, workdir, tags)
        self.executable_opts = [
            "--size",
            self.size,
            "--max-procs",
            str(procs),
            "--procs-per-node",
            str(per_node),
            "--dir",
            str(workdir),
            "--sync",
            sync,
        ] + (["--read-back"] if self.read_back else [])

    def _lines(self):
        return checks.iomodel_lines(Path(self.stagedir, "iomodel.jsonl").read_text())

    @run_before("sanity")
    def save_lines(self):
        if self.is_dry_run():
            return
        checks.save_iomodel_lines(
            Path(self.stagedir, self.stdout.evaluate()), Path(self.stagedir, "iomodel.jsonl")
        )

    @sanity_function
    def validate_models(self):
        problems = checks.iomodel_sanity(
            self._lines(), checks.parse_size(self.size), self.max_procs, self.procs_per_node
        )
        return sn.assert_true(not problems, msg="; ".join(problems))

    @run_before("performance")
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        values = checks.iomodel_performance(
            self._lines(), self.max_procs, self.procs_per_node, self.read_back
        )
        self.perf_variables = {
            name: sn.make_performance_function(lambda v=value: v, numfmt.MIB_S)
            for name, value in values.items()
        }
