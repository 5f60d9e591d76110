"""What iostudy's ReFrame checks of one benchmark run have in common (IOR, mdtest, metarates):
the scaling point (procs, procs per node), where the files go (the system's scratch storage, or
/dev/shm for the client-side ceiling), the runtime preloaded with its log tagged, the skip when
the program is not built, and the references of configs/references/<system>.json.

A check subclasses BenchmarkCheck, calls prepare() from its setup hook with its program and
its own log tags (it returns the folder the benchmark works in), and says how its output reads:
parse() (text to results; ValueError when it is not the benchmark's), problems() (what is wrong
with the results) and figures() (the performance values: a number in perf_unit, or a pair (value,
unit) when a check's values differ in unit). The base judges and reports.

RuntimeCheck, below it, is the part every check's job shares (the ranks' placement, the job's
folder, the runtime and the log's tags, the references): the I/O-model check builds on it
directly. The parameters' defaults are the check registry's (iostudy.benchmarks.registry).
"""

import shlex
from pathlib import Path

import reframe as rfm
import reframe.utility.sanity as sn
import reframe.utility.typecheck as typ
from reframe.core.builtins import run_before, sanity_function, variable

from iostudy.benchmarks import checks, measures, registry
from iostudy.core import config
from iostudy.core.nodecount import nodes_for


class RuntimeCheck(rfm.RunOnlyRegressionTest):
    """A job of one benchmark under iostudy's runtime, its log tagged: what BenchmarkCheck and
    the I/O-model check (reframe-checks/iomodel_check.py, whose parameters differ) share."""

    valid_systems = ["*"]
    valid_prog_environs = ["+mpi"]
    sourcesdir = None

    repetition = variable(int, value=0)
    #: where things go; empty: the stage folder (a run outside a campaign)
    run_dir = variable(str, value="")
    #: the benchmark's files; empty: <run_dir>/scratch
    scratch_dir = variable(str, value="")
    campaign = variable(str, value="none")
    run_id = variable(str, value="")
    #: what the benchmark's time measures (iostudy.benchmarks.measures), set in setup: in the
    #: run report, from which ingest puts it in the results' parameters
    measures = variable(str, value="")

    def measure(self, requested: str, folder: Path, aligned: bool, bytes_per_node: int) -> str:
        """The sync mode a run in folder uses for the sync parameter ``requested``
        (measures.resolve_sync); sets measures to what the run then measures."""
        try:
            mode = measures.resolve_sync(requested, folder, aligned)
        except ValueError as exc:
            raise ValueError(f"{self.unique_name}: {exc}") from None
        memory = measures.node_memory_mib(config.load_system(self.current_system.name))
        self.measures = measures.measures(mode, folder, bytes_per_node, memory)
        return mode

    def place(self, procs: int, per_node: int) -> int:
        """Sets the job's tasks, procs ranks, per_node per node (0: the partition's cores per
        node, at most procs); returns per_node, also kept in procs_per_node, so that the report
        shows the value used rather than 0."""
        part = self.current_partition
        per_node = per_node or min(part.processor.num_cpus or 1, procs)
        self.procs_per_node = per_node
        self.num_tasks = procs
        self.num_tasks_per_node = per_node
        return per_node

    def node_count(self, procs: int, per_node: int) -> int:
        """The job's nodes: one machine without a scheduler is one node, whatever per_node."""
        local = self.current_partition.scheduler.registered_name == "local"
        return 1 if local else nodes_for(procs, per_node)

    def run_folder(self) -> Path:
        return Path(self.run_dir or self.stagedir)

    def scratch_folder(self) -> Path:
        return Path(self.scratch_dir or self.run_folder() / "scratch")

    def write_folder(self) -> Path | None:
        """The folder the job writes its files to (None: it writes none)."""
        return self.scratch_folder()

    @run_before("run")
    def guard_storage(self):
        """The job's first command verifies, on the node, that the folder it writes to is on
        the distributed file system its storage entry names (checks.storage_guard_command):
        once here for every check, after each check's own setup has set its prerun commands."""
        folder = self.write_folder()
        if folder is None:
            return
        system = config.load_system(self.current_system.name)
        guard = checks.storage_guard_command(system, folder, self.run_folder())
        if guard:
            self.prerun_cmds.insert(0, guard)

    def require_target_folder(self, name: str, folder) -> None:
        """The job fails first, naming the storage target and the host, where the target's
        folder is missing: a missing mount would have the benchmark measure whatever disk holds
        the mount point. (Call after prepare(), which sets the prerun commands.)"""
        quoted = shlex.quote(str(folder))
        self.prerun_cmds.insert(
            0,
            f'test -d {quoted} || {{ echo "storage target {name}: no '
            f'folder {quoted} on $(hostname)" >&2; exit 1; }}',
        )

    def job_folder(self, base: Path) -> Path:
        """This test case's own folder under base: base/<system>/<partition>/<environ>/<name>,
        so that no two cases (flavours, runs by hand) share one."""
        part = self.current_partition.fullname.replace(":", "/")
        return Path(base) / part / self.current_environ.name / self.unique_name

    def preload(self, check: str, program: Path, workdir: Path, tags: dict) -> None:
        """Runs program under iostudy's runtime: makes workdir and the run's log folder first,
        tags the job's log (campaign, check, system, partition, environ, then tags, the
        repetition and the run), and takes the check's references on this partition."""
        environ = self.current_environ.name
        system = self.current_system.name
        part = self.current_partition
        logs = self.run_folder() / "darshan"
        self.executable = str(program)
        self.prerun_cmds = [f"mkdir -p {shlex.quote(str(workdir))} {shlex.quote(str(logs))}"]
        self.log_tags = {
            "campaign": self.campaign,
            "check": check,
            "system": system,
            "partition": part.name,
            "environ": environ,
            **tags,
            "repetition": self.repetition,
            "run_id": self.run_id,
        }
        # ReFrame writes `export NAME=VALUE` unquoted: quote what the shell would split.
        self.env_vars = {
            **self.env_vars,
            "LD_PRELOAD": shlex.quote(str(checks.runtime_library(system, environ))),
            "DARSHAN_LOGPATH": shlex.quote(str(logs)),
            "IOSTUDY_LOG_TAGS": shlex.quote(checks.log_tags(self.log_tags)),
        }
        self.reference = checks.reframe_references(check, system, part.fullname)


class BenchmarkCheck(RuntimeCheck):
    procs = variable(int, value=registry.PROCS.reframe_default())
    #: 0: the partition's cores per node, at most procs
    procs_per_node = variable(int, value=registry.PROCS_PER_NODE.reframe_default())
    #: scratch, or memory (/dev/shm): the client-side ceiling
    target = variable(str, value=registry.TARGET.reframe_default())
    #: combinations the campaign leaves out, "name=value&name=value" each (checks.excluded_by)
    excluded = variable(typ.List[str], value=[])

    def target_folder(self) -> Path:
        """Where the target's files go: /dev/shm (memory) or the scratch storage."""
        if self.target == "memory":
            return checks.memory_target_root(self.run_id)
        return self.scratch_folder()

    def write_folder(self) -> Path | None:
        return self.target_folder()

    def prepare(self, check: str, program: Path | None, why: str, tags: dict) -> Path:
        """Skips (with why) without program or when the campaign excluded this combination;
        else sets the job up and returns its folder."""
        exclusion = checks.excluded_by(self.excluded, lambda name: getattr(self, name, None))
        self.skip_if(exclusion is not None, f"{checks.EXCLUDED}: {exclusion}")
        self.skip_if(program is None, why)
        per_node = self.place(self.procs, self.procs_per_node)
        workdir = self.job_folder(self.target_folder())
        point = {
            "procs": self.procs,
            "procs_per_node": per_node,
            "nodes": self.node_count(self.procs, per_node),
            "target": self.target,
        }
        self.preload(check, program, workdir, {**tags, **point})
        self.postrun_cmds = [f"rm -rf {shlex.quote(str(workdir))}"]
        if self.target == "memory":
            self.env_vars["DARSHAN_EXCLUDE_DIRS"] = ",".join(checks.RUNTIME_EXCLUDES_BUT_DEV)
        return workdir

    def launch_write_phase_first(self, command: list, output: str, drop_pages: str | None):
        """For a check whose job launches twice, a write phase then a read phase (the job's own
        launch): adds to the job's prerun the write phase's launch of command (its stdout to
        output), under the log tag phase=write, then drop_pages (a shell command that drops the
        written files' cached pages: checks.drop_cached_pages_command) unless the target is
        memory, whose pages are its storage, then the read phase's tags, so that each phase
        leaves a log of its own and the read phase reads the storage. Call it from a
        run_before("run") hook: ReFrame hands the task counts to the job only in run(), the
        launcher needs them."""
        self.job.num_tasks, self.job.num_tasks_per_node = self.num_tasks, self.num_tasks_per_node
        launch = self.job.launcher.run_command(self.job)

        def tags(phase):
            phase_tags = checks.log_tags({**self.log_tags, "phase": phase})
            return f"export IOSTUDY_LOG_TAGS={shlex.quote(phase_tags)}"

        write = shlex.join(str(part) for part in command)
        between = [drop_pages] if drop_pages and self.target != "memory" else []
        self.prerun_cmds += [tags("write"), f"{launch} {write} > {output}", *between, tags("read")]

    # ---- what each check says about its output ----
    perf_unit = ""

    def parse(self, text: str):
        raise NotImplementedError

    def problems(self, parsed) -> list[str]:
        raise NotImplementedError

    def figures(self, parsed) -> dict[str, float]:
        raise NotImplementedError

    def parsed(self):
        """The benchmark's output through parse(), read once per run."""
        if getattr(self, "_parsed", None) is None:
            self._parsed = self.parse(Path(self.stagedir, self.stdout.evaluate()).read_text())
        return self._parsed

    @sanity_function
    def validate_output(self):
        try:
            problems = self.problems(self.parsed())
        except (OSError, ValueError) as exc:
            problems = [f"{self.executable} output: {exc}"]
        return sn.assert_true(not problems, msg="; ".join(problems))

    @run_before("performance")
    def set_perf_variables(self):
        if self.is_dry_run():
            return
        self.perf_variables = {
            name: sn.make_performance_function(lambda v=value: v, unit)
            for name, (value, unit) in map(self._with_unit, self.figures(self.parsed()).items())
        }

    def _with_unit(self, item):
        name, value = item
        return name, value if isinstance(value, tuple) else (value, self.perf_unit)
