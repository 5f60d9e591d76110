"""How many processes share a file: the one definition every table, figure and summary uses.

A file of a job log is
- ``N:N`` when one process accessed it (and every file of a one-process job),
- ``N:1`` when all the job's processes did: the runtime reduced it to one rank -1 record, or
  records of every rank remain,
- ``N:M`` when some processes did (records of several ranks, not all).
The class is the file's, over all the log's records of its name whatever the module (POSIX,
STDIO, MPI-IO, HDF5 and PnetCDF records of one path share its record id): an MPI-IO file opened
by every rank whose POSIX bytes only the aggregators moved is N:1. Ingest stores it in the files
table's ``sharing`` column (:mod:`iostudy.logs.logrows`); :data:`SQL` is the same rule for the
rows of stores made before that column.

A file one process accessed is never shared, whatever its records look like: the runtime
reduces a file every process opened to one rank -1 record, and in a one-process job that is
the one process's file (N:N, :func:`processes` 1, :func:`own_ranks` rank 0's). How the
processes of a file are counted and said, by every page and summary:
- :func:`processes`: how many of the job's processes accessed it (a rank -1 record: all of them);
- :func:`processes_text`: that count in words ("1", "all 4", "3 of 4");
- :func:`own_ranks`: the process each record is of (-1: every process of a parallel job).
"""

from __future__ import annotations

import functools

from iostudy.core.deferred import deferred

np = deferred("numpy")


CLASSES = ("N:N", "N:1", "N:M")
UNIQUE = CLASSES[0]


def classes(logs: np.ndarray, ids: np.ndarray, ranks: np.ndarray, nprocs: np.ndarray) -> np.ndarray:
    """Each record's file class as an index into :data:`CLASSES`: records (log index, record
    id, rank), ``nprocs`` the process count of each log index."""
    if not len(ids):
        return np.zeros(0, np.int8)
    order = np.lexsort((ranks, ids, logs))
    slog, sid, srank = logs[order], ids[order], ranks[order]
    new_file = np.r_[True, (sid[1:] != sid[:-1]) | (slog[1:] != slog[:-1])]
    new_rank = new_file | np.r_[True, srank[1:] != srank[:-1]]
    group = np.cumsum(new_file) - 1
    reduced = np.bincount(group, weights=srank == -1) > 0
    nranks = np.bincount(group, weights=new_rank & (srank >= 0))
    procs = nprocs[slog[new_file]]
    of_file = np.where(reduced | (nranks >= procs), 1, np.where(nranks <= 1, 0, 2))
    of_file = np.where(procs <= 1, 0, of_file).astype(np.int8)
    out = np.empty(len(ids), np.int8)
    out[order] = of_file[group]
    return out


def processes(ranks, reduced, nprocs):
    """How many of a job's ``nprocs`` processes accessed a file (scalars, or arrays of files):
    ``ranks`` its distinct ranks >= 0 with a record (of one module, or of all), ``reduced``
    whether it has a rank -1 record, which is every process's (the one of a one-process
    job)."""
    return np.where(reduced, nprocs, ranks).astype(np.int64)


def processes_text(n: int, nprocs: int) -> str:
    """:func:`processes`' count of a job of ``nprocs`` processes as a table says it: "1" (one
    process: never "all", also the one of a one-process job), "all 4" (every process of a
    parallel job), "3 of 4" (some)."""
    if n <= 1 or nprocs <= 1:
        return f"{n:,}"
    return f"all {nprocs:,}" if n >= nprocs else f"{n:,} of {nprocs:,}"


def own_ranks(ranks: np.ndarray, nprocs: int) -> np.ndarray:
    """The process each record of a job of ``nprocs`` processes is of: its rank, and rank 0
    for a rank -1 record of a one-process job (its only process's); -1 stays in a parallel
    job (a record of all its processes, no one process's)."""
    ranks = np.asarray(ranks)
    return np.where((ranks < 0) & (nprocs <= 1), 0, ranks)


def as_bytes(index: np.ndarray) -> tuple[np.ndarray, bytes]:
    """Classes as a string column's int32 offsets and UTF-8 bytes (every name is 3 bytes)."""
    offsets = np.arange(0, 3 * len(index) + 1, 3, dtype=np.int32)
    return offsets, _class_bytes()[index].tobytes()


@functools.cache
def _class_bytes() -> np.ndarray:
    """CLASSES as 3-byte strings, made at first use (numpy is imported at first use)."""
    return np.array([c.encode() for c in CLASSES], dtype="S3")


# The rule over a (log, record id) group of the files table, for rows stored without a class:
# ``reduced`` (any rank -1 record), ``ranks`` (distinct ranks >= 0) and ``nprocs`` in scope.
SQL = (
    "CASE WHEN nprocs <= 1 THEN 'N:N' WHEN reduced OR ranks >= nprocs THEN 'N:1' "
    "WHEN ranks <= 1 THEN 'N:N' ELSE 'N:M' END"
)
