"""The I/O-model benchmark of seed 003 as a site-free ReFrame check.

One job of max_procs ranks (procs_per_node per node) runs every I/O model between file per
process and single shared file, size bytes each, with the environment's build of the benchmark
(iomodel-<environ> from the system's Spack view, build/spack/<system>/view, else from
build/reframe-checks of `make setup`), under iostudy's runtime (found the same way): the job
leaves one Darshan-format log in <run_dir>/darshan tagged with campaign, check, system and
parameters. The benchmark's JSON lines are kept as iomodel.jsonl in the test's output folder.

Parameters are variables, set by `iostudy campaign run` from the campaign (-S, or -P for a
scan); references come from configs/references/<system>.json. The logic lives in
iostudy.benchmarks.checks. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/iomodel_check.py \\
        -S size=16M -S max_procs=4 -r
"""

import shlex
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from iostudy.benchmarks import checks
from iostudy.core import numfmt

CHECK = "iomodel_check"


@rfm.simple_test
class iomodel_check(rfm.RunOnlyRegressionTest):
    descr = "I/O models of seed 003: S bytes per model, file per process to single shared file"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    time_limit = "20m"
    tags = {"iomodel"}
    keep_files = ["iomodel.jsonl"]
    # Nothing to copy into the stage folder (src/ beside this file is the benchmark's source).
    sourcesdir = None

    # The campaign's parameters (no defaults here: those are the campaign schema's).
    size = variable(str)
    max_procs = variable(int)
    #: 0: the partition's cores per node, at most max_procs
    procs_per_node = variable(int, value=0)
    read_back = variable(typ.Bool, value=False)
    repetition = variable(int, value=0)

    # Where things go. An empty run_dir: the stage folder (a run outside a campaign).
    run_dir = variable(str, value="")
    #: the benchmark's files; empty: <run_dir>/scratch
    scratch_dir = variable(str, value="")
    campaign = variable(str, value="none")
    run_id = variable(str, value="")

    @run_after("setup")
    def set_job(self):
        procs = self.max_procs
        per_node = self.procs_per_node or min(self.current_partition.processor.num_cpus, procs)
        problem = checks.iomodel_problem(checks.parse_size(self.size), procs, per_node)
        if problem:
            raise ValueError(f"{CHECK}: {problem}")
        # The value used, so that the report shows it rather than 0.
        self.procs_per_node = per_node
        self.num_tasks = procs
        self.num_tasks_per_node = per_node

        environ = self.current_environ.name
        system = self.current_system.name
        self.executable = str(checks.benchmark_program(system, "iomodel", environ))
        runtime = checks.runtime_library(system, environ)
        for built in (Path(self.executable), runtime):
            if not built.is_file() and not self.is_dry_run():
                raise FileNotFoundError(f"{built} is missing: run `make setup` or `make spack`")

        run_dir = Path(self.run_dir or self.stagedir)
        part = self.current_partition
        workdir = Path(self.scratch_dir or run_dir / "scratch")
        workdir = workdir / part.fullname.replace(":", "/") / environ / self.unique_name
        logs = run_dir / "darshan"
        self.executable_opts = [
            "--size", self.size,
            "--max-procs", str(procs),
            "--procs-per-node", str(per_node),
            "--dir", str(workdir),
        ] + (["--read-back"] if self.read_back else [])  # fmt: skip
        self.prerun_cmds = [f"mkdir -p {shlex.quote(str(workdir))} {shlex.quote(str(logs))}"]
        # One machine without a scheduler is one node, whatever procs_per_node says.
        nodes = 1 if part.scheduler.registered_name == "local" else procs // per_node
        tags = {
            "campaign": self.campaign,
            "check": CHECK,
            "system": self.current_system.name,
            "partition": part.name,
            "environ": environ,
            "size": self.size,
            "max_procs": procs,
            "procs_per_node": per_node,
            "read_back": str(bool(self.read_back)).lower(),
            "repetition": self.repetition,
            "nodes": nodes,
            "run_id": self.run_id,
        }
        # ReFrame writes `export NAME=VALUE` unquoted: quote what the shell would split.
        self.env_vars = {
            "LD_PRELOAD": shlex.quote(str(runtime)),
            "DARSHAN_LOGPATH": shlex.quote(str(logs)),
            "IOSTUDY_LOG_TAGS": shlex.quote(checks.log_tags(tags)),
        }
        self.reference = checks.reframe_references(CHECK, self.current_system.name, part.fullname)

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
