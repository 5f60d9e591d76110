"""The diagnosis rules on Darshan's counters: what each fires on, the numbers it says, the files
that show it, and its advice. :mod:`iostudy.metrics.diagnose` runs them.

Each rule reads one row of facts per job log (:func:`iostudy.metrics.diagnose_facts.job_facts`)
and its thresholds (``configs/diagnoses.json``). Where a rule is Drishti 0.8's (``drishti``: the
code of its insight), it computes and compares as Drishti does, "more than the threshold", on the
POSIX records unless named; the others are iostudy's own (``drishti`` null). A rule's evidence
(:class:`Evidence`) ranks the job's files by the rule's measure and names the ranks concerned.

Darshan counts an access of n bytes in the bin whose upper edge is the first at or above n
(darshan-common.h: 0-100, 101-1K, ..., 100K-1M, ...): "small" is at most 1 MiB (1,048,576
bytes), the edge included, and the wording says so.

The Drishti 0.8 triggers without a rule of their own are in :data:`NOT_RULES`, with the reason.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB, binary_bytes
from iostudy.metrics.diagnose_facts import SHARED_BYTES_APART, SHARED_TIME_APART

pd = deferred("pandas")

SMALL = "at most 1 MiB"  # Darshan's bins 0_100 to 100K_1M, 1,048,576 bytes included


@dataclass(frozen=True)
class Evidence:
    """The files behind a finding: the job's records of ``module``, each with its part of the
    problem (``measure``: an SQL expression over a files row, 0 or null: none; ``{name}``: the
    rule's threshold of that name), summed per file
    (``agg``: or "max", or "spread": (max - min) / max over the file's records, Drishti
    P21/P22's); the top files by it, written with ``shown``. ``extremes``: the ranks named
    are the slowest and fastest of the top file (records shared by all ranks), not the ranks
    of the records."""

    module: str
    measure: str
    shown: Callable[[float], str]
    agg: str = "sum"
    extremes: bool = False


@dataclass(frozen=True)
class Rule:
    name: str
    drishti: str | None  # Drishti 0.8's code of the same problem; None: iostudy's own
    advice: str
    fires: Callable  # facts, thresholds -> a mask
    says: Callable  # one fired row (its numeric columns) -> the numbers that fired it
    evidence: Evidence | None = None


def share(part, whole) -> pd.Series:
    return part / whole.where(whole > 0)


def pct(x) -> str:
    return f"{100 * x:.0f}%"


def processes(n) -> str:
    return f"{n:,.0f} process" if n == 1 else f"{n:,.0f} processes"


def _of(part: float, whole: float, what: str) -> str:
    return f"{part:,.0f} of {whole:,.0f} {what} ({pct(part / whole)})"


def _count(unit: str) -> Callable[[float], str]:
    return lambda v: f"{v:,.0f} {unit}"


def _all_bytes(stdio, posix, mpiio):
    """Drishti S01's total of a job (columns or one row's values): STDIO's bytes, POSIX's less
    those MPI-IO moved through it (when POSIX has them all), and MPI-IO's."""
    return stdio + posix + mpiio * (posix < mpiio)


def _small(direction: str, code: str, advice: str) -> Rule:
    small, total = f"small_{direction}s", f"posix_{direction}s"
    return Rule(
        f"small-{direction}s",
        code,
        advice,
        lambda f, t: (share(f[small], f[total]) > t["share"]) & (f[small] > t["min_count"]),
        lambda r: _of(getattr(r, small), getattr(r, total), f"POSIX {direction}s") + f" {SMALL}",
        Evidence("posix", small, _count(f"{direction}s {SMALL}")),
    )


def _shared_small(direction: str, code: str) -> Rule:
    small, total = f"shared_small_{direction}s", f"shared_{direction}s"
    return Rule(
        f"shared-small-{direction}s",
        code,
        f"aggregate the small {direction}s to the shared file (MPI-IO collective {direction}s, "
        "or a buffer per node): every rank's small request locks and contends on the same file",
        lambda f, t: (
            (share(f[small], f[total]) > t["share"]) & (f[small] > t["min_count"]) & (f.nprocs > 1)
        ),
        lambda r: (
            _of(getattr(r, small), getattr(r, total), f"POSIX {direction}s")
            + f" to files shared by all {r.nprocs:,.0f} processes {SMALL}"
        ),
        Evidence(
            "posix",
            f"CASE WHEN rank < 0 THEN small_{direction}s ELSE 0 END",
            _count(f"{direction}s {SMALL}"),
        ),
    )


def _random(direction: str, code: str) -> Rule:
    total, seq = f"posix_{direction}s", f"seq_{direction}s"
    ops = f"{direction}s"

    per_record = (
        "GREATEST(reads - COALESCE(seq_reads, 0), 0)"
        if direction == "read"
        else "GREATEST(writes - COALESCE(seq_ops - seq_reads, 0), 0)"
    )

    return Rule(
        f"random-{direction}s",
        code,
        f"{direction} in offset order, or gather the scattered {direction}s in memory first "
        "(MPI-IO collective I/O, a read-ahead or write-behind buffer): random offsets defeat "
        "the file system's prefetching and aggregation",
        lambda f, t: (
            (share(f[total] - f[seq], f[total]) > t["share"]) & (f[total] - f[seq] > t["min_count"])
        ),
        lambda r: (
            _of(getattr(r, total) - getattr(r, seq), getattr(r, total), f"POSIX {ops}")
            + " not at a higher offset than the previous one"
        ),
        Evidence("posix", per_record, _count(f"{ops} out of order")),
    )


def _repeated(direction: str, code: str) -> Rule:
    moved, extent = f"posix_{direction}_bytes", f"{direction}_extent"
    verb = {"read": "read", "write": "written"}[direction]
    return Rule(
        f"repeated-{direction}s",
        code,
        f"{direction} each byte once (keep it in memory, or "
        + (
            "read by one rank and broadcast)"
            if direction == "read"
            else "write the final data once)"
        ),
        lambda f, t: (
            (f[moved] >= t["factor"] * f[extent])
            & (f[moved] >= t["min_mib"] * MIB)
            & (f[extent] > 0)
        ),
        lambda r: (
            f"{getattr(r, moved) / MIB:,.1f} MiB {verb} in files of "
            f"{getattr(r, extent) / MIB:,.1f} MiB "
            f"({getattr(r, moved) / getattr(r, extent):.1f} times)"
        ),
        Evidence(
            "posix",
            f"bytes_{verb} / NULLIF(GREATEST(max_byte + 1, 0), 0)",
            lambda v: f"{v:.1f} times its size",
            agg="max",
        ),
    )


def _collective(direction: str, code: str) -> Rule:
    coll, indep = f"coll_{direction}s", f"indep_{direction}s"

    per_record = "indep_reads" if direction == "read" else "indep_ops - indep_reads"

    return Rule(
        f"no-collective-{direction}s",
        code,
        f"use collective MPI-IO {direction}s (MPI_File_{direction}_all, _at_all) so that "
        "aggregators make large contiguous requests",
        lambda f, t: (
            (share(f[coll], f[coll] + f[indep]).fillna(0) <= t["max_collective_share"])
            & (f[coll] + f[indep] > t["min_count"])
        ),
        lambda r: (
            _of(getattr(r, indep), getattr(r, coll) + getattr(r, indep), f"MPI-IO {direction}s")
            + " independent"
        ),
        Evidence("mpiio", per_record, _count(f"independent {direction}s")),
    )


def _imbalance(direction: str, code: str) -> Rule:
    spread, moved = (
        f"{direction}_spread",
        {"read": "bytes_read", "write": "bytes_written"}[direction],
    )
    verb = {"read": "read", "write": "wrote"}[direction]
    return Rule(
        f"{direction}-imbalance",
        code,
        f"give each rank that {verb} a file the same share of it (or let one rank per node "
        f"{direction} it): the file's slowest rank holds the others",
        lambda f, t: f[spread] > t["share"],
        lambda r: (
            f"in a file of several processes (not all), the rank that {verb} least {verb} "
            f"{pct(getattr(r, spread))} less than the rank that {verb} most"
        ),
        Evidence(
            "posix",
            f"CASE WHEN rank >= 0 THEN {moved} END",
            lambda v: f"{pct(v)} apart",
            agg="spread",
        ),
    )


def _misaligned(where: str, code: str, column: str, advice: str) -> Rule:
    name = {"file": "misaligned-file", "memory": "misaligned-memory"}[where]
    said = {
        "file": "at offsets not aligned to the file system's block",
        "memory": "from memory not aligned to the system's boundary",
    }[where]
    return Rule(
        name,
        code,
        advice,
        lambda f, t: share(f[column], f.posix_reads + f.posix_writes) > t["share"],
        lambda r: (
            _of(getattr(r, column), r.posix_reads + r.posix_writes, "POSIX accesses") + f" {said}"
        ),
        Evidence("posix", column, _count(f"unaligned accesses ({where})")),
    )


def _shared_spread(kind: str, code: str) -> Rule:
    """P18 (bytes) and P19 (time): a file shared by all ranks whose slowest and fastest ranks
    differ by more than a share of its total."""
    spread = f"shared_{kind}_spread"

    per_record = {"size": SHARED_BYTES_APART, "time": SHARED_TIME_APART}[kind]
    per_record = f"CASE WHEN rank < 0 THEN {per_record} END"

    what = {"size": "bytes", "time": "I/O time"}[kind]
    return Rule(
        {"size": "shared-size-imbalance", "time": "stragglers"}[kind],
        code,
        "balance the shared file's "
        + (
            "data over the ranks (or aggregate through MPI-IO collective I/O)"
            if kind == "size"
            else "work over the ranks; look for the slow rank's node, its other I/O or its data"
        )
        + ": every rank waits for the slowest",
        lambda f, t: f[spread] > t["share"],
        lambda r: (
            f"in a file shared by all {r.nprocs:,.0f} processes, its slowest and fastest "
            f"ranks' {what} differ by "
            f"{pct(getattr(r, spread))} of the file's {what}"
        ),
        Evidence(
            "posix", per_record, lambda v: f"{pct(v)} of its {what} apart", agg="max", extremes=True
        ),
    )


def _slow_metadata() -> Rule:
    return Rule(
        "slow-metadata",
        "P17",
        "open, stat and close the file fewer times (keep it open, no stat in loops), or spread "
        "the files over directories: its metadata alone took the time",
        lambda f, t: f.file_meta_s > t["seconds"],
        lambda r: f"a file's metadata took {r.file_meta_s:,.3g} s (its records' ranks together)",
        Evidence(
            "posix",
            "CASE WHEN meta_time > {seconds} THEN meta_time ELSE 0 END",
            lambda v: f"{v:,.3g} s of metadata",
        ),
    )


def _stdio_heavy() -> Rule:
    return Rule(
        "stdio-heavy",
        "S01",
        "move bulk data through POSIX, MPI-IO or HDF5 rather than STDIO (fprintf, fwrite): "
        "STDIO's buffering is small and per process",
        lambda f, t: (
            (
                share(f.stdio_bytes, _all_bytes(f.stdio_bytes, f.posix_bytes, f.mpiio_bytes))
                > t["share"]
            )
            & (f.stdio_bytes >= t["min_mib"] * MIB)
            & (f.stdio_bytes > 0)
        ),
        lambda r: (
            f"STDIO moved {binary_bytes(r.stdio_bytes)}, "
            f"{pct(r.stdio_bytes / _all_bytes(r.stdio_bytes, r.posix_bytes, r.mpiio_bytes))} of "
            "the bytes (STDIO, POSIX beyond MPI-IO, MPI-IO)"
        ),
        Evidence(
            "stdio",
            "bytes_read + bytes_written",
            lambda v: f"{binary_bytes(v)} moved",
        ),
    )


def _own_rules() -> tuple[Rule, ...]:
    """iostudy's rules that Drishti has no trigger for (seed 000's causes of slow jobs)."""
    return (
        Rule(
            "metadata-dominated",
            None,
            "open, stat and close fewer files, fewer times (keep files open, one file per "
            "node or an aggregated format, no stat in loops)",
            lambda f, t: (f.md_cost_pct >= 100 * t["share"]) & (f.meta_s >= t["min_seconds"]),
            lambda r: (
                f"metadata {r.md_cost_pct:.0f}% of the I/O time "
                f"({r.meta_s:.3g} s over the processes)"
            ),
            Evidence("posix", "meta_time", lambda v: f"{v:,.3g} s of metadata"),
        ),
        Rule(
            "rank0-only",
            None,
            "let every process (or one per node) write its share, or use MPI-IO collective "
            "I/O: rank 0 alone is the job's bandwidth",
            lambda f, t: (
                (f.strategy == "rank-0")
                & (f.nprocs >= t["min_procs"])
                & ((f.bytes_read + f.bytes_written) >= t["min_mib"] * MIB)
            ),
            lambda r: (
                f"rank 0 of {processes(r.nprocs)} moved all "
                f"{(r.bytes_read + r.bytes_written) / MIB:,.1f} MiB"
            ),
            Evidence(
                "posix",
                "bytes_read + bytes_written",
                lambda v: f"{binary_bytes(v)} moved",
            ),
        ),
        _many_files(),
        Rule(
            "rank-imbalance",
            None,
            "spread the data evenly over the processes (or over the ones that do I/O): the job "
            "waits for its busiest rank",
            lambda f, t: (
                (f.ranks_moving >= 2)
                & (share(f.busiest_bytes - f.idlest_bytes, f.busiest_bytes) > t["share"])
            ),
            lambda r: (
                f"of the {r.ranks_moving:,.0f} processes that moved bytes in records of their "
                f"own, the busiest (rank {r.busiest_rank:.0f}) moved "
                f"{binary_bytes(r.busiest_bytes)}, the least busy (rank {r.idlest_rank:.0f}) "
                f"{binary_bytes(r.idlest_bytes)}"
            ),
            Evidence(
                "posix",
                "CASE WHEN rank >= 0 THEN bytes_read + bytes_written END",  # the ranks' own records
                lambda v: f"{binary_bytes(v)} moved",
            ),
        ),
    )


def _many_files() -> Rule:
    return Rule(
        "many-files",
        None,
        "write fewer, larger files (a file per node, or a shared file through MPI-IO or "
        "HDF5): every file costs metadata operations on the servers",
        lambda f, t: f.files_per_proc >= t["per_process"],
        lambda r: (
            f"{r.files:,} files for {processes(r.nprocs)} ({r.files_per_proc:,.0f} per process)"
        ),
    )


_SMALL_ADVICE = {
    "write": "write in larger requests (buffer, aggregate in MPI-IO collective writes, or HDF5 "
    "chunking): each small write pays a file-system round trip",
    "read": "read in larger requests, or read once and scatter in memory (MPI-IO collective "
    "reads, a read-ahead buffer)",
}
#: every rule, Drishti's in the order of its codes, then iostudy's own
RULES: tuple[Rule, ...] = (
    _stdio_heavy(),
    _small("read", "P05", _SMALL_ADVICE["read"]),
    _small("write", "P06", _SMALL_ADVICE["write"]),
    _misaligned(
        "memory",
        "P07",
        "unaligned_mem",
        "allocate I/O buffers aligned (posix_memalign, aligned_alloc) so that no copy "
        "is made to align them",
    ),
    _misaligned(
        "file",
        "P08",
        "unaligned",
        "align offsets and request sizes to the file system's block or stripe (MPI-IO "
        "hints striping_unit, HDF5 H5Pset_alignment)",
    ),
    _repeated("read", "P09"),
    _repeated("write", "P10"),
    _random("read", "P11"),
    _random("write", "P13"),
    _shared_small("read", "P15"),
    _shared_small("write", "P16"),
    _slow_metadata(),
    _shared_spread("size", "P18"),
    _shared_spread("time", "P19"),
    _imbalance("write", "P21"),
    _imbalance("read", "P22"),
    _collective("read", "M02"),
    _collective("write", "M03"),
    *_own_rules(),
)

#: Drishti 0.8's triggers without an iostudy rule of their own, and why
NOT_RULES = {
    **dict.fromkeys(
        ("P01", "P02", "P03", "P04"),
        "a description, not a problem (Drishti INFO: more writes than reads, or the "
        "reverse): the job page's operations and bytes tables show it",
    ),
    **dict.fromkeys(
        ("P12", "P14", "M04", "M05", "M08", "M10"),
        "a good practice found (Drishti OK: sequential access, collective MPI-IO, "
        "one aggregator per node), not a problem",
    ),
    "M01": "advice, not a problem found (Drishti WARN on every job without MPI-IO): iostudy "
    "names the problems MPI-IO would solve (small-writes, shared-small-writes, many-files)",
    **dict.fromkeys(
        ("M06", "M07"),
        "Drishti warns on every MPI-IO job with no nonblocking call, whatever its "
        "I/O's share of the run: a log cannot show that overlap would help",
    ),
    "M09": "Drishti compares the cb_nodes of the log's 'h' line, the hints Darshan used to "
    "write its own log (DARSHAN_LOGHINTS, default cb_nodes=4), not the application's, with "
    "sacct's node count; the application's hints are not in a Darshan log",
}
