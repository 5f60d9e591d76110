"""HMMER's hmmsearch as a site-free ReFrame check: seed 002's stdio case study (Table I).

One job on one node searches a database of protein sequences with a file of profile HMMs,
`hmmsearch --noali --notextw HMM FASTA`, in one of the seed's configurations:

    A  results to stdout (the job's output file)
    B  results to a file on the storage (-o)
    C  as B, the database first copied to node-local memory (/dev/shm)

under iostudy's runtime, whose STDIO records give the per-file table of the report (file size,
I/O volume, time, count and seeks of the HMM file, the database and the output). The inputs are
generated (families profile HMMs, each planted in every tenth of sequences random proteins;
hmmbuild makes the HMM file in the job) unless hmm_file and fasta_file name a facility's own
(the seed: Pfam-A.hmm and uniprot_sprot.fasta); they are copied to the check's folder on the
storage first. hmmsearch is the Spack view's (MPI, --mpi, procs ranks) when built with the job's
MPI, else the distribution's (one process, --cpu procs threads). Performance variable: elapsed_s,
hmmsearch's own elapsed time. By hand:

    reframe -C configs/reframe_settings.py --system local -c reframe-checks/hmmer_check.py \\
        -S config=C -S procs=2 -r
"""

import shlex
from pathlib import Path

import reframe as rfm
from reframe.core.builtins import run_after, variable

from iostudy.benchmarks import checks, hmmer, registry
from iostudy.benchmarks.benchcheck import BenchmarkCheck

CHECK = "hmmer_check"
DEFAULTS = registry.reframe_defaults(CHECK)


@rfm.simple_test
class hmmer_check(BenchmarkCheck):
    descr = "HMMER hmmsearch: results to stdout (A), to a file (B), database in memory (C)"
    time_limit = "30m"
    tags = {"hmmer", "application", "stdio"}

    config = variable(str, value=DEFAULTS["config"])
    families = variable(int, value=DEFAULTS["families"])
    sequences = variable(int, value=DEFAULTS["sequences"])
    length = variable(int, value=DEFAULTS["length"])
    #: a facility's own inputs instead of generated ones (both or neither)
    hmm_file = variable(str, value=DEFAULTS["hmm_file"])
    fasta_file = variable(str, value=DEFAULTS["fasta_file"])

    @run_after("setup")
    def set_job(self):
        if self.config not in hmmer.CONFIGS:
            raise ValueError(f"{CHECK}: config {self.config}: not one of {hmmer.CONFIGS}")
        if bool(self.hmm_file) != bool(self.fasta_file):
            raise ValueError(f"{CHECK}: hmm_file and fasta_file go together")
        program, self.mpi, why = hmmer.program(self.current_system.name, self.current_environ.name)
        own = bool(self.hmm_file)
        tags = {
            "config": self.config,
            "families": "given" if own else self.families,
            "sequences": "given" if own else self.sequences,
            "mpi": "yes" if self.mpi else "no",
        }
        # One node, as in the seed: configuration C's copy is on that node's memory.
        self.procs_per_node = self.procs
        workdir = self.prepare(CHECK, program, why, tags)
        if not own:
            alignment, fasta = hmmer.write_inputs(
                Path(self.stagedir, "inputs"), self.families, self.sequences, self.length
            )
        hmm, db = workdir / "families.hmm", workdir / "db.fa"
        memory = self.job_folder(checks.memory_target_root(self.run_id))
        searched = memory / "db.fa" if self.config == "C" else db
        quiet = "env -u LD_PRELOAD"  # the preparation is not the search: no log of its own
        q = shlex.quote
        if own:
            self.prerun_cmds += [
                f"{quiet} cp {q(self.hmm_file)} {q(str(hmm))}",
                f"{quiet} cp {q(self.fasta_file)} {q(str(db))}",
            ]
        else:
            build = program.parent / "hmmbuild"
            self.prerun_cmds += [
                f"{quiet} {q(str(build))} -o /dev/null {q(str(hmm))} {q(str(alignment))}",
                f"{quiet} cp {q(str(fasta))} {q(str(db))}",
            ]
        if self.config == "C":
            self.prerun_cmds += [
                f"mkdir -p {q(str(memory))}",
                f"{quiet} cp {q(str(db))} {q(str(searched))}",
            ]
            self.postrun_cmds += [f"rm -rf {q(str(memory))}"]
            # The runtime leaves /dev/ out by default: the copy in memory is the one searched.
            self.env_vars["DARSHAN_EXCLUDE_DIRS"] = ",".join(checks.RUNTIME_EXCLUDES_BUT_DEV)
        self.results = workdir / hmmer.RESULTS
        if self.config != "A":  # the results leave with the workdir: keep them with the test
            self.postrun_cmds.insert(0, f"cp {q(str(self.results))} {hmmer.RESULTS}")
            self.keep_files = [hmmer.RESULTS]
        self.executable_opts = hmmer.arguments(
            self.config, hmm, searched, self.results, self.mpi, self.procs
        )
        if not self.mpi:
            # One process with procs threads, instrumented although it is not an MPI program:
            # that setting for it alone, or the job's mkdir and rm would leave logs too.
            self.num_tasks = self.num_tasks_per_node = 1
            self.num_cpus_per_task = self.procs
            self.executable_opts = ["DARSHAN_ENABLE_NONMPI=1", str(program), *self.executable_opts]
            self.executable = "env"
        self.planted = None if own else hmmer.planted(self.families, self.sequences)

    perf_unit = "s"

    def parse(self, text):
        if self.config != "A":
            text = Path(self.stagedir, hmmer.RESULTS).read_text()
        return hmmer.parse(text)

    def problems(self, parsed):
        return hmmer.sanity(parsed, None if self.hmm_file else self.sequences, self.planted)

    def figures(self, parsed):
        return hmmer.performance(parsed)
