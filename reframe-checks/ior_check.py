"""IOR as a site-free ReFrame check: one point of seed 001's scaling campaign.

One job of procs ranks (procs_per_node per node) runs IOR with an API (POSIX, MPIIO, HDF5,
NCMPI), shared file (N-1) or file per process (N-N), transfers calls of transfer bytes per
process (so 4M and 4000000 move nearly the same data), then read back by other ranks (-C),
iterations times, under
iostudy's runtime: the job leaves one Darshan-format log in <run_dir>/darshan tagged with
campaign, check, system and parameters. Every iteration of IOR's JSON results is kept as
ior.jsonl in the test's output folder; the performance variables are the mean write and read
MiB/s over the iterations.

IOR comes from the system's Spack view (`make spack SYSTEM=...`); when it is missing, or built
with another MPI than the environment's, the test is skipped with the reason (a skip is never a
pass). target "scratch" writes to the system's scratch storage, "memory" to /dev/shm of the
nodes: the client-side ceiling of seed 001's component measurements. Parameters are variables
set by `iostudy campaign run`; the logic lives in iostudy.checks. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/ior_check.py \\
        -S procs=2 -S transfers=4 -S transfer=4M -r
"""

import shlex
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
from reframe.core.builtins import run_after, run_before, sanity_function, variable

from iostudy import checks

CHECK = "ior_check"


@rfm.simple_test
class ior_check(rfm.RunOnlyRegressionTest):
    descr = "IOR: write then read, shared file or file per process, one scaling point"
    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    time_limit = "30m"
    tags = {"ior", "scaling"}
    keep_files = ["ior.jsonl"]
    sourcesdir = None

    api = variable(str, value="POSIX")
    layout = variable(str, value="shared")  # shared (N-1) or fpp (N-N)
    transfer = variable(str, value="4M")
    transfers = variable(int, value=16)  # per process and iteration
    procs = variable(int, value=1)
    #: 0: the partition's cores per node, at most procs
    procs_per_node = variable(int, value=0)
    iterations = variable(int, value=3)
    target = variable(str, value="scratch")  # scratch, or memory (/dev/shm): the client ceiling
    repetition = variable(int, value=0)

    run_dir = variable(str, value="")
    scratch_dir = variable(str, value="")
    campaign = variable(str, value="none")
    run_id = variable(str, value="")

    @run_after("setup")
    def set_job(self):
        if self.api not in checks.IOR_APIS or self.layout not in checks.IOR_LAYOUTS:
            raise ValueError(f"{CHECK}: api {self.api} / layout {self.layout}: unknown")
        environ = self.current_environ.name
        system = self.current_system.name
        program, why = checks.spack_program(system, "ior", environ)
        runtime = checks.runtime_library(system, environ)
        self.skip_if(program is None, why)
        part = self.current_partition
        per_node = self.procs_per_node or min(part.processor.num_cpus or 1, self.procs)
        self.procs_per_node = per_node
        self.num_tasks = self.procs
        self.num_tasks_per_node = per_node

        run_dir = Path(self.run_dir or self.stagedir)
        if self.target == "memory":
            base = Path("/dev/shm") / "iostudy" / (self.run_id or "manual")
        else:
            base = Path(self.scratch_dir or run_dir / "scratch")
        workdir = base / part.fullname.replace(":", "/") / environ / self.unique_name
        logs = run_dir / "darshan"
        self.executable = str(program)
        self.executable_opts = checks.ior_arguments(
            self.api,
            self.layout,
            self.transfer,
            self.transfers,
            self.iterations,
            workdir / "testfile",
        )
        self.prerun_cmds = [f"mkdir -p {shlex.quote(str(workdir))} {shlex.quote(str(logs))}"]
        self.postrun_cmds = [f"rm -rf {shlex.quote(str(workdir))}"]
        nodes = 1 if part.scheduler.registered_name == "local" else -(-self.procs // per_node)
        tags = {
            "campaign": self.campaign,
            "check": CHECK,
            "system": system,
            "partition": part.name,
            "environ": environ,
            "api": self.api,
            "layout": self.layout,
            "transfer": self.transfer,
            "transfers": self.transfers,
            "procs": self.procs,
            "procs_per_node": per_node,
            "nodes": nodes,
            "iterations": self.iterations,
            "target": self.target,
            "repetition": self.repetition,
            "run_id": self.run_id,
        }
        self.env_vars = {
            "LD_PRELOAD": shlex.quote(str(runtime)),
            "DARSHAN_LOGPATH": shlex.quote(str(logs)),
            "IOSTUDY_LOG_TAGS": shlex.quote(checks.log_tags(tags)),
        }
        self.tags_of_log = tags
        self.reference = checks.reframe_references(CHECK, system, part.fullname)

    def _parsed(self):
        return checks.ior_results(Path(self.stagedir, self.stdout.evaluate()).read_text())

    @run_before("sanity")
    def save_results(self):
        if self.is_dry_run():
            return
        try:
            parsed = self._parsed()
        except ValueError:
            return  # the sanity function says why
        checks.save_json_lines(
            parsed["results"], Path(self.stagedir, "ior.jsonl"), self.tags_of_log
        )

    @sanity_function
    def validate_results(self):
        try:
            parsed = self._parsed()
        except (OSError, ValueError) as exc:
            return sn.assert_true(False, msg=f"IOR output: {exc}")
        block = checks.parse_size(self.transfer) * self.transfers
        problems = checks.ior_sanity(parsed, self.iterations, self.procs, block)
        return sn.assert_true(not problems, msg="; ".join(problems))

    @run_before("performance")
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        values = checks.ior_performance(self._parsed())
        self.perf_variables = {
            name: sn.make_performance_function(lambda v=value: v, checks.MIB_S)
            for name, value in values.items()
        }
