"""BTIO as a site-free ReFrame check: NPB BT's I/O, "full" subtype (seed 001, section 4.4.1).

One job of procs ranks (a square number) runs the Spack view's `btio` (Northwestern's BTIO) on
NPB class problem_class (S, W, A, B, C, D, E: the class's grid and BT's time steps / 5 dumps),
with MPI collective I/O (MPI_File_write_all / read_all of the cells' nested strided file view,
the MPI-IO layer's collective buffering with its defaults: the "full" subtype), to one shared
file on the system's scratch (or /dev/shm with target "memory"), under iostudy's runtime. BTIO
does one operation per launch, so the job runs two: the write phase (its report in
btio-write.out), then the read phase of the same file (the job's stdout), each under its log
tag `phase`; on scratch this node's cached pages of the file are dropped between them. The input
files BTIO reads (btio-write.data, btio-read.data) are written to the stage folder and kept.

Performance variables: write_mib_s and read_mib_s (MiB/s, as BTIO prints them: BTIO divides by
2^20, so no MB-to-MiB conversion is needed), write_time_s and read_time_s (s, the phase's
amount over its bandwidth: BTIO prints the time with 2 decimals only), io_mib_s and io_time_s
(both phases: seed 001's overall BTIO rate) and io_gib. The logic lives in iostudy.benchmarks.btio.
A class BTIO cannot split over procs (not a square number, cells under 3 points) fails at setup,
naming why; without btio in the view the test is skipped, naming what is missing. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/btio_check.py \\
        -S procs=4 -S problem_class=S -r
"""

from pathlib import Path

import reframe as rfm
from reframe.core.builtins import run_after, run_before, variable

from iostudy.benchmarks import btio, checks, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "btio_check"
DEFAULTS = registry.reframe_defaults(CHECK)
WRITE_OUTPUT = "btio-write.out"
INPUTS = {phase: f"btio-{phase}.data" for phase in btio.PHASES}


@rfm.simple_test
class btio_check(BenchmarkCheck):
    descr = "BTIO full: collective MPI-IO write then read of NPB BT's shared file"
    time_limit = "30m"
    tags = {"btio", "application"}
    keep_files = [WRITE_OUTPUT, *INPUTS.values()]

    problem_class = variable(str, value=DEFAULTS["problem_class"])

    @run_after("setup")
    def set_job(self):
        why_not = btio.problem(self.problem_class, self.procs)
        if why_not:
            raise ValueError(f"{CHECK}: {why_not}")
        program, why = checks.spack_program(
            self.current_system.name, "btio", self.current_environ.name
        )
        self.points, self.dumps = btio.class_size(self.problem_class)
        tags = {
            "problem_class": self.problem_class,
            "points": self.points,
            "dumps": self.dumps,
            "method": "full",
        }
        self.workdir = self.prepare(CHECK, program, why, tags)
        self.inputs = {
            phase: btio.input_text(phase, self.points, self.dumps, self.workdir)
            for phase in btio.PHASES
        }
        self.executable_opts = [str(Path(self.stagedir, INPUTS["read"]))]

    @run_before("run")
    def launch_phases(self):
        """Writes both input files, then launches the write phase before the job's own launch
        (the read phase), each under its phase's log tags."""
        for phase, text in self.inputs.items():
            Path(self.stagedir, INPUTS[phase]).write_text(text)
        command = [self.executable, Path(self.stagedir, INPUTS["write"])]
        drop_pages = btio.drop_cached_pages_command(self.workdir)
        self.launch_write_phase_first(command, WRITE_OUTPUT, drop_pages)

    def parse(self, text):
        write = Path(self.stagedir, WRITE_OUTPUT).read_text()
        return btio.phase_results({"write": write, "read": text})

    def problems(self, parsed):
        return btio.sanity(parsed, self.procs, self.points, self.dumps)

    def figures(self, parsed):
        """(value, unit) pairs: MiB/s, seconds and GiB."""
        return btio.performance(parsed)
