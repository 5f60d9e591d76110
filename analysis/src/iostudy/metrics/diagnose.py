"""Diagnoses: what is wrong with a job's I/O, named with the numbers that show it (seed 000's
causes of slow jobs, Drishti's triggers).

Each rule reads one row per job log (:func:`job_facts`: :func:`iostudy.metrics.jobstats.job_table`
and the counters below, one SQL query over the store) and fires where its numbers pass the
thresholds of ``configs/diagnoses.json`` (defaults from seed 000 and from Drishti 0.8's
``thresholds``; a site edits the file). A finding says which rule, the numbers that fired it in
one line, and one line of advice.

Rules (the POSIX records see what reaches the file system; STDIO and MPI-IO as named). Where a
rule is Drishti's, it compares as Drishti does: more than the threshold.
- small-writes, small-reads: accesses under 1 MiB (the runtime's size bins) are more than
  ``share`` of a direction's POSIX accesses and more than ``min_count`` (Drishti P06, P05);
- misaligned: POSIX accesses not aligned to the file system's block are more than ``share`` of
  all (Drishti P08);
- metadata-dominated: metadata time is at least ``share`` of all I/O time, summed over the
  processes (seed 000's metadata cost), and at least ``min_seconds``;
- rank0-only: a parallel job (``min_procs`` processes or more) whose bytes rank 0 alone moved,
  at least ``min_mib`` of them (seed 000's rank-0 strategy);
- shared-file-independent: MPI-IO files shared by all ranks accessed with independent
  operations, more than ``share`` of their MPI-IO operations and more than ``min_count``
  (Drishti M03, M02: a shared file without collective I/O);
- many-files: at least ``per_process`` files per process (seed 000: a file per process at
  scale, and worse);
- stdio-heavy: STDIO moved more than ``share`` of the POSIX and STDIO bytes, and at least
  ``min_mib`` (Drishti S01, which has no minimum);
- rank-imbalance: of the ranks that moved bytes in their own files, the least busy moved more
  than ``share`` less than the busiest (Drishti P21 and P22 compare the ranks of each file);
- repeated-reads: POSIX reads moved at least ``factor`` times the bytes of the files they read
  (their highest offset), at least ``min_mib`` (what Drishti P09 says; test_diagnose_drishti.py
  shows what it computes).
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.numfmt import MIB
from iostudy.core.paths import add_store_option
from iostudy.core.tableout import add_format_options, write_table
from iostudy.logs import modules
from iostudy.metrics import jobstats
from iostudy.store import store as store_mod

pd = deferred("pandas")

CONFIG = "diagnoses.json"

# Per log, what job_table does not give: counts of POSIX accesses, STDIO's bytes, MPI-IO's
# operations on shared files, bytes per rank, and the extent of the files read.
_COUNTERS = """
WITH rank_bytes AS (
    SELECT log_sha256, rank, SUM(bytes_read::HUGEINT + bytes_written) AS bytes
    FROM files WHERE module = 'posix' AND rank >= 0 GROUP BY ALL
    HAVING SUM(bytes_read::HUGEINT + bytes_written) > 0
),
ranks AS (
    SELECT log_sha256, COUNT(*) AS ranks_moving, MAX(bytes) AS busiest_bytes,
           MIN(bytes) AS idlest_bytes
    FROM rank_bytes GROUP BY ALL
)
SELECT f.log_sha256,
    SUM(reads) FILTER (WHERE module = 'posix') AS posix_reads,
    SUM(writes) FILTER (WHERE module = 'posix') AS posix_writes,
    SUM(small_reads) FILTER (WHERE module = 'posix') AS small_reads,
    SUM(small_writes) FILTER (WHERE module = 'posix') AS small_writes,
    SUM(unaligned) FILTER (WHERE module = 'posix') AS unaligned,
    SUM(bytes_read::HUGEINT + bytes_written) FILTER (WHERE module = 'stdio') AS stdio_bytes,
    SUM(bytes_read::HUGEINT + bytes_written) FILTER (WHERE module = 'posix') AS posix_bytes,
    SUM(meta_time) FILTER (WHERE {counted}) AS meta_s,
    SUM(indep_ops) FILTER (WHERE module = 'mpiio' AND (rank = -1 OR sharing = 'N:1'))
        AS shared_indep_ops,
    SUM(coll_ops) FILTER (WHERE module = 'mpiio' AND (rank = -1 OR sharing = 'N:1'))
        AS shared_coll_ops,
    SUM(bytes_read) FILTER (WHERE module = 'posix') AS posix_read_bytes,
    SUM(max_byte + 1) FILTER (WHERE module = 'posix' AND bytes_read > 0) AS read_extent,
    any_value(r.ranks_moving) AS ranks_moving, any_value(r.busiest_bytes) AS busiest_bytes,
    any_value(r.idlest_bytes) AS idlest_bytes
FROM files f LEFT JOIN ranks r USING (log_sha256)
GROUP BY ALL
"""


def job_facts(con, jobs: pd.DataFrame | None = None) -> pd.DataFrame:
    """One row per job log: jobstats.job_table's columns (``jobs`` when the caller has them)
    and the counters the rules read."""
    jobs = jobstats.job_table(con) if jobs is None else jobs
    if jobs.empty:
        return jobs
    # md_cost_pct's records: the job table's
    counters = con.execute(_COUNTERS.format(counted=modules.counted(jobstats.DEFAULT_SCOPE, "f")))
    counters = counters.df()
    facts = jobs.merge(counters, on="log_sha256", how="left")
    numeric = counters.columns.drop("log_sha256")
    facts[numeric] = facts[numeric].astype(float).fillna(0)
    return facts


@dataclass(frozen=True)
class Rule:
    name: str
    advice: str
    fires: Callable[[pd.DataFrame, dict], pd.Series]  # facts, thresholds -> a mask
    says: Callable[[pd.Series], str]  # one fired row -> the numbers that fired it


def _share(part, whole) -> pd.Series:
    return part / whole.where(whole > 0)


def _pct(x) -> str:
    return f"{100 * x:.0f}%"


def _processes(n) -> str:
    return f"{n:,} process" if n == 1 else f"{n:,} processes"


RULES = (
    Rule(
        "small-writes",
        "write in larger requests (buffer, aggregate in MPI-IO collective writes, or HDF5 "
        "chunking): each small write pays a file-system round trip",
        lambda f, t: (
            (_share(f.small_writes, f.posix_writes) > t["share"])
            & (f.small_writes > t["min_count"])
        ),
        lambda r: (
            f"{r.small_writes:,.0f} of {r.posix_writes:,.0f} POSIX writes "
            f"({_pct(r.small_writes / r.posix_writes)}) under 1 MiB"
        ),
    ),
    Rule(
        "small-reads",
        "read in larger requests, or read once and scatter in memory (MPI-IO collective "
        "reads, a read-ahead buffer)",
        lambda f, t: (
            (_share(f.small_reads, f.posix_reads) > t["share"]) & (f.small_reads > t["min_count"])
        ),
        lambda r: (
            f"{r.small_reads:,.0f} of {r.posix_reads:,.0f} POSIX reads "
            f"({_pct(r.small_reads / r.posix_reads)}) under 1 MiB"
        ),
    ),
    Rule(
        "misaligned",
        "align offsets and request sizes to the file system's block or stripe (MPI-IO hints "
        "striping_unit, HDF5 H5Pset_alignment)",
        lambda f, t: _share(f.unaligned, f.posix_reads + f.posix_writes) > t["share"],
        lambda r: (
            f"{r.unaligned:,.0f} of {r.posix_reads + r.posix_writes:,.0f} POSIX "
            f"accesses ({_pct(r.unaligned / (r.posix_reads + r.posix_writes))}) not aligned"
        ),
    ),
    Rule(
        "metadata-dominated",
        "open, stat and close fewer files, fewer times (keep files open, one file per "
        "node or an aggregated format, no stat in loops)",
        lambda f, t: (f.md_cost_pct >= 100 * t["share"]) & (f.meta_s >= t["min_seconds"]),
        lambda r: (
            f"metadata {r.md_cost_pct:.0f}% of the I/O time ({r.meta_s:.3g} s over the processes)"
        ),
    ),
    Rule(
        "rank0-only",
        "let every process (or one per node) write its share, or use MPI-IO collective "
        "I/O: rank 0 alone is the job's bandwidth",
        lambda f, t: (
            (f.strategy == "rank-0")
            & (f.nprocs >= t["min_procs"])
            & ((f.bytes_read + f.bytes_written) >= t["min_mib"] * MIB)
        ),
        lambda r: (
            f"rank 0 of {_processes(r.nprocs)} moved all "
            f"{(r.bytes_read + r.bytes_written) / MIB:,.1f} MiB"
        ),
    ),
    Rule(
        "shared-file-independent",
        "use collective MPI-IO calls (MPI_File_write_all, _at_all) on the shared file, so "
        "that aggregators make large contiguous requests",
        lambda f, t: (
            (_share(f.shared_indep_ops, f.shared_indep_ops + f.shared_coll_ops) > t["share"])
            & (f.shared_indep_ops > t["min_count"])
        ),
        lambda r: (
            f"{r.shared_indep_ops:,.0f} of "
            f"{r.shared_indep_ops + r.shared_coll_ops:,.0f} MPI-IO operations on shared files "
            "independent"
        ),
    ),
    Rule(
        "many-files",
        "write fewer, larger files (a file per node, or a shared file through MPI-IO or "
        "HDF5): every file costs metadata operations on the servers",
        lambda f, t: f.files_per_proc >= t["per_process"],
        lambda r: (
            f"{r.files:,} files for {_processes(r.nprocs)} ({r.files_per_proc:,.0f} per process)"
        ),
    ),
    Rule(
        "stdio-heavy",
        "move bulk data through POSIX, MPI-IO or HDF5 rather than STDIO (fprintf, fwrite): "
        "STDIO's buffering is small and per process",
        lambda f, t: (
            (_share(f.stdio_bytes, f.stdio_bytes + f.posix_bytes) > t["share"])
            & (f.stdio_bytes >= t["min_mib"] * MIB)
        ),
        lambda r: (
            f"STDIO moved {r.stdio_bytes / MIB:,.1f} MiB, "
            f"{_pct(r.stdio_bytes / (r.stdio_bytes + r.posix_bytes))} of the bytes"
        ),
    ),
    Rule(
        "rank-imbalance",
        "spread the data evenly over the processes (or over the ones that do I/O): the job "
        "waits for its busiest rank",
        lambda f, t: (
            (f.ranks_moving >= 2)
            & (_share(f.busiest_bytes - f.idlest_bytes, f.busiest_bytes) > t["share"])
        ),
        lambda r: (
            f"the busiest of {r.ranks_moving:,.0f} ranks moved "
            f"{r.busiest_bytes / MIB:,.1f} MiB, the least busy {r.idlest_bytes / MIB:,.1f} MiB"
        ),
    ),
    Rule(
        "repeated-reads",
        "read each byte once and keep it (in memory, or read by one rank and broadcast)",
        lambda f, t: (
            (f.posix_read_bytes >= t["factor"] * f.read_extent)
            & (f.posix_read_bytes >= t["min_mib"] * MIB)
            & (f.read_extent > 0)
        ),
        lambda r: (
            f"{r.posix_read_bytes / MIB:,.1f} MiB read from files of "
            f"{r.read_extent / MIB:,.1f} MiB ({r.posix_read_bytes / r.read_extent:.1f} times)"
        ),
    ),
)
COLUMNS = ["log", "jobid", "run_id", "account", "nprocs", "rule", "found", "advice",
           "log_sha256"]  # fmt: skip


def thresholds(path: Path | None = None) -> dict:
    """The rules' thresholds: configs/diagnoses.json (or ``path``), validated, defaults
    filled."""
    return config.load(path or config.configs_dir() / CONFIG, "diagnoses")["rules"]


def diagnose(facts: pd.DataFrame, limits: dict) -> pd.DataFrame:
    """Every rule that fires on a job of ``facts`` (:func:`job_facts`): one row each, with the
    numbers that fired it and the advice."""
    found = []
    for rule in RULES:
        fired = facts[rule.fires(facts, limits[rule.name]).fillna(False).astype(bool)]
        if fired.empty:
            continue
        found.append(fired.assign(rule=rule.name, advice=rule.advice,
                                  found=[rule.says(r) for r in fired.itertuples()]))  # fmt: skip
    if not found:
        return pd.DataFrame(columns=COLUMNS)
    return pd.concat(found, ignore_index=True).reindex(columns=COLUMNS)


def cmd_diagnose(args) -> int:
    if not jobstats.has_jobs(args.store):
        return EXIT_BAD_INPUT
    try:
        limits = thresholds(args.config)
    except config.ConfigError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    facts = job_facts(store_mod.connect(args.store))
    found = diagnose(facts, limits)
    write_table(found, args, sys.stdout)
    counts = found["rule"].value_counts().to_dict() if len(found) else {}
    print(f"diagnose: {len(facts)} jobs, {found['log_sha256'].nunique()} with a finding: "
          f"{json.dumps(counts)}", file=sys.stderr)  # fmt: skip
    return 0


def register(groups) -> None:
    p = groups.add_parser(
        "diagnose",
        help="what is wrong with each job's I/O: rules with the numbers that fired them",
        description="Run the diagnosis rules (small accesses, misalignment, metadata-"
        "dominated I/O, rank 0 alone, a shared file without collective I/O, many files, "
        "STDIO-heavy, imbalance across ranks, repeated reads) over every job log of the "
        "store; print one row per finding with its numbers and advice. Thresholds: "
        "configs/diagnoses.json. Definitions: python -m pydoc iostudy.metrics.diagnose.",
    )
    add_store_option(p)
    add_format_options(p, "print every column as CSV")
    p.add_argument("--config", type=Path, help="thresholds (default configs/diagnoses.json)")
    p.set_defaults(func=cmd_diagnose)
