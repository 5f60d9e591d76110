"""Seed 000's I/O time, its file classes and a job's strategy, defined once for the job table
(:func:`iostudy.metrics.jobstats.job_table`, a group per log, on a whole store in SQL) and the
I/O models' throughput (:func:`iostudy.metrics.metrics.io_time`, a group per job and model
directory).

Over a group of file records (each with its file's class, :mod:`iostudy.logs.sharing`):

- bytes per class: unique_bytes (N:N files), shared_bytes (N:1), partial_bytes (N:M), and
  the files of each class likewise (seed 000: unique, shared and partially shared files);
- unique_time, seed 000's unique-file form: the slowest process's metadata + read + write time
  over its N:N files (a one-process job's rank -1 record is its one process's, rank 0's:
  ``sharing.own_ranks``);
- shared_time, seed 000's shared-file form (written before Darshan kept the slowest rank of a
  shared file): the longest elapsed time of an N:1 or N:M file from the start of its first
  open to the end of its last I/O. An open recorded at 0 is at the job's start: Darshan's
  runtime opens the standard streams so (darshan-stdio.c: ``STDIO_RECORD_OPEN(stdout,
  "<STDOUT>", 0, 0)``); a record that never opened the file (a rank that only stat'ed it)
  does not move the first open of the others;
- io_time: the larger of the two forms;
- strategy: the class that moved the most bytes, "rank-0" when only rank 0 of a parallel job
  moved data, "none" when no byte moved (seed 000's Fig. 3).
"""

from __future__ import annotations

#: each file class's bytes and files columns (seed 000: unique, shared, partially shared)
CLASS_BYTES = {"N:N": "unique_bytes", "N:1": "shared_bytes", "N:M": "partial_bytes"}
CLASS_FILES = {"N:N": "unique_files", "N:1": "shared_files", "N:M": "partial_files"}
STRATEGIES = (*CLASS_BYTES, "rank-0", "none")

# What each kind of figure counts: bytes, a record's time, the end of its I/O.
KINDS = {
    "both": (("bytes_read", "bytes_written"), ("meta_time", "read_time", "write_time")),
    "write": (("bytes_written",), ("meta_time", "write_time")),
    "read": (("bytes_read",), ("meta_time", "read_time")),
}
ENDS = {"both": ("read_end", "write_end"), "write": ("write_end",), "read": ("read_end",)}

_GROUPS = """
WITH per_file AS (
    SELECT {keys}, record_id, any_value(class) AS class, any_value(nprocs) AS nprocs,
           SUM({bytes}) AS bytes,
           bool_and(rank = 0) AS rank0,  -- a rank -1 record is every process's
           MIN(open_start) FILTER (WHERE open_start > 0) AS first_open,
           MAX({end}) AS last_io
    FROM {records} GROUP BY ALL
),
process_time AS (
    SELECT {keys}, SUM({time}) AS t
    FROM {records} WHERE class = 'N:N' GROUP BY {keys}, GREATEST(rank, 0)
),
unique_time AS (SELECT {keys}, MAX(t) AS unique_time FROM process_time GROUP BY ALL)
SELECT {keys}, SUM(bytes) AS bytes, {class_sums},
       bool_and(bytes = 0 OR rank0) AND any_value(nprocs) > 1 AS rank0_only,
       COALESCE(any_value(u.unique_time), 0) AS unique_time,
       COALESCE(MAX(GREATEST(last_io - COALESCE(first_open, 0), 0))
                FILTER (WHERE class <> 'N:N'), 0) AS shared_time
FROM per_file LEFT JOIN unique_time u USING ({keys})
GROUP BY ALL
"""


def groups_sql(records: str, keys, kind: str = "both") -> str:
    """The query of each group of ``keys``' figures (module docstring) over the relation
    ``records``: file records with the keys, record_id, rank, class (the file's), nprocs (its
    job's), open_start and the byte, time and end columns of ``kind`` ("both", "write",
    "read"). Columns: the keys, bytes, :data:`CLASS_BYTES`, :data:`CLASS_FILES`, rank0_only,
    unique_time, shared_time."""
    byte_cols, time_cols = KINDS[kind]
    sums = [f"SUM(bytes) FILTER (WHERE class = '{c}') AS {col}" for c, col in CLASS_BYTES.items()]
    counts = [f"COUNT(*) FILTER (WHERE class = '{c}') AS {col}" for c, col in CLASS_FILES.items()]
    return _GROUPS.format(
        records=records,
        keys=", ".join(keys),
        bytes=" + ".join(f"COALESCE({c}, 0)::HUGEINT" for c in byte_cols),
        time=" + ".join(f"COALESCE({c}, 0)" for c in time_cols),
        end=f"GREATEST({', '.join(f'COALESCE({c}, 0)' for c in ENDS[kind])})",
        class_sums=", ".join(sums + counts),
    )


def strategies(table) -> list[str]:
    """Each row's strategy (module docstring) from its :data:`CLASS_BYTES` and rank0_only
    columns (:func:`groups_sql`'s)."""
    moved = table[list(CLASS_BYTES.values())].astype(float).fillna(0).to_numpy()
    best = [list(CLASS_BYTES)[i] for i in moved.argmax(axis=1)] if len(table) else []
    rank0 = table["rank0_only"].astype("boolean").fillna(False).to_numpy(bool)
    return [
        "none" if not total else "rank-0" if only0 else cls
        for cls, total, only0 in zip(best, moved.sum(axis=1), rank0, strict=True)
    ]
