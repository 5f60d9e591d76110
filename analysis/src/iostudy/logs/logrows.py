"""One Darshan log (or a batch of them) to the store's rows: what ingest's reader workers run.

Kept apart from :mod:`iostudy.store.store` so that a worker process imports only this, PyDarshan's
backend and numpy (not DuckDB, pyarrow or the rest of the store): ingest starts a few of them.
The rows: a jobs row per log (:func:`job_row`), the files rows of a batch column-wise
(:class:`Columns`, :func:`files_columns`), the probes, lustre and jobcounters
(:mod:`iostudy.logs.jobmodules`) rows; :func:`read_for_ingest`
and :func:`batch_rows` are :class:`iostudy.logs.logpool.ReaderPool`'s read and rows.
"""

from __future__ import annotations

import functools
import itertools
import json
from datetime import datetime, timedelta, timezone
from typing import NamedTuple

from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.logs import (
    accessrows,
    jobmodules,
    modules,
    plausibility,
    proberows,
    sharing,
    storerule,
    upconversion,
)
from iostudy.logs.darshanlog_worker import CheckedLog, read
from iostudy.logs.recordlayout import FILE_ID, record_layout
from iostudy.logs.sizebins import NAMES
from iostudy.logs.summary import MODULE_COUNTERS

np = deferred("numpy")
pa = deferred("pyarrow")

# Darshan's access-size histogram bins (the counters' suffixes), smallest first.
SIZE_BINS = NAMES

# The files table's counter columns beyond MODULE_COUNTERS': {column: {module: counters summed}};
# a module without an entry gets null.
_SMALL = SIZE_BINS[:5]
EXTRA_COUNTERS = {
    "seeks": {"POSIX": ["POSIX_SEEKS"], "STDIO": ["STDIO_SEEKS"]},
    "unaligned": {"POSIX": ["POSIX_FILE_NOT_ALIGNED"]},
    "seq_ops": {"POSIX": ["POSIX_SEQ_READS", "POSIX_SEQ_WRITES"]},
    "seq_reads": {"POSIX": ["POSIX_SEQ_READS"]},
    "unaligned_mem": {"POSIX": ["POSIX_MEM_NOT_ALIGNED"]},
    "small_reads": {"POSIX": [f"POSIX_SIZE_READ_{b}" for b in _SMALL]},
    "small_writes": {"POSIX": [f"POSIX_SIZE_WRITE_{b}" for b in _SMALL]},
    "coll_ops": {
        "MPI-IO": ["MPIIO_COLL_READS", "MPIIO_COLL_WRITES"],
        "PNETCDF_VAR": ["PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_COLL_WRITES"],
    },
    "indep_ops": {
        "MPI-IO": ["MPIIO_INDEP_READS", "MPIIO_INDEP_WRITES"],
        "PNETCDF_VAR": ["PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_INDEP_WRITES"],
    },
    "coll_reads": {"MPI-IO": ["MPIIO_COLL_READS"], "PNETCDF_VAR": ["PNETCDF_VAR_COLL_READS"]},
    "indep_reads": {"MPI-IO": ["MPIIO_INDEP_READS"], "PNETCDF_VAR": ["PNETCDF_VAR_INDEP_READS"]},
    # a record shared by all ranks: the ranks that spent the least and the most time on it,
    # and their bytes (Drishti P18's stragglers)
    **{
        f"{end}_rank{what.lower()}": {
            m: [f"{m.replace('-', '')}_{end.upper()}_RANK{what}"]
            for m in ("POSIX", "MPI-IO", "STDIO", "H5D", "PNETCDF_VAR", "DFS", "DAOS")
        }
        for end in ("fastest", "slowest")
        for what in ("", "_BYTES")
    },
    "mode": {"POSIX": ["POSIX_MODE"]},
    # the sizes that reached storage (POSIX, DFS, DAOS), or that the application asked a
    # library for (MPI-IO's aggregate sizes, HDF5's datasets, PnetCDF's variables)
    **{
        f"{op}_{b.lower()}": {
            "POSIX": [f"POSIX_SIZE_{op.upper()}_{b}"],
            "MPI-IO": [f"MPIIO_SIZE_{op.upper()}_AGG_{b}"],
            "H5D": [f"H5D_SIZE_{op.upper()}_AGG_{b}"],
            "PNETCDF_VAR": [f"PNETCDF_VAR_SIZE_{op.upper()}_AGG_{b}"],
            "DFS": [f"DFS_SIZE_{op.upper()}_{b}"],
            "DAOS": [f"DAOS_SIZE_{op.upper()}_{b}"],
        }
        for op in ("read", "write")
        for b in SIZE_BINS
    },
}
# Per module, every column summed from counters (MODULE_COUNTERS' and its EXTRA_COUNTERS), built
# once: a log's records are summed with one loop each.
_SUMS = {
    mod: {**sums, **{col: m[mod] for col, m in EXTRA_COUNTERS.items() if mod in m}}
    for mod, sums in MODULE_COUNTERS.items()
}
_MAX_BYTE = {m: [f"{m}_MAX_BYTE_READ", f"{m}_MAX_BYTE_WRITTEN"] for m in ("POSIX", "STDIO")}
# files columns taken from one float counter each: {column: the counter after the module prefix}
_FCOLUMNS = {
    "read_time": "READ_TIME",
    "write_time": "WRITE_TIME",
    "meta_time": "META_TIME",
    "open_start": "OPEN_START_TIMESTAMP",
    "read_end": "READ_END_TIMESTAMP",
    "write_end": "WRITE_END_TIMESTAMP",
    "close_end": "CLOSE_END_TIMESTAMP",
    "slowest_rank_time": "SLOWEST_RANK_TIME",
    "fastest_rank_time": "FASTEST_RANK_TIME",
    "read_start": "READ_START_TIMESTAMP",
    "write_start": "WRITE_START_TIMESTAMP",
}


def utc_naive(ts: datetime) -> datetime:
    """ts in UTC without a time zone attached (the store's convention); naive means UTC."""
    return ts.astimezone(timezone.utc).replace(tzinfo=None) if ts.tzinfo else ts


def int_or_none(value):
    if value is None:  # most often: no exception raised and caught
        return None
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


class Strings(NamedTuple):
    """A string column as a pyarrow string array holds it: the values' UTF-8 bytes side by
    side and where each starts (int32 offsets, one more than values), so that neither the pipe
    nor the parent handles a Python string per row."""

    offsets: np.ndarray
    data: bytes

    @classmethod
    def of(cls, values: list[str]) -> Strings:
        text = "".join(values)
        if text.isascii():  # a character per byte: no string encoded on its own
            data, lengths = text.encode(), map(len, values)
        else:
            encoded = [v.encode() for v in values]
            data, lengths = b"".join(encoded), map(len, encoded)
        return cls(_offsets(np.fromiter(lengths, np.int64, len(values))), data)

    def tolist(self) -> list[str]:
        ends = self.offsets.tolist()
        return [self.data[a:b].decode() for a, b in itertools.pairwise(ends)]


def _offsets(lengths: np.ndarray) -> np.ndarray:
    ends = np.cumsum(lengths)
    if len(ends) and ends[-1] > np.iinfo(np.int32).max:  # a pyarrow string array's limit
        raise OverflowError("over 2 GiB of strings in one column of a batch")
    return np.concatenate(([0], ends)).astype(np.int32)


class Repeated(NamedTuple):
    """A column of runs of one value: values[i] counts[i] times, in turn (e.g. a log's sha256
    on each of its files rows), sent once per run."""

    values: list
    counts: np.ndarray

    def tolist(self) -> list:
        return [v for v, c in zip(self.values, self.counts.tolist(), strict=True) for _ in range(c)]


# Rows from which a Columns' arrays are pickled each on its own (a DXT chunk's segments): the
# stacking that spares small ones numpy's cost per array would copy megabytes
LARGE_COLUMNS = 1 << 16


class Columns(NamedTuple):
    """Rows of a table column-wise: ``n`` rows, {column: numpy array, Strings, Repeated or
    list}; a column left out is null. Cheap to send between processes (a pyarrow table per log
    is not): its numeric columns are pickled as one 2-D array per dtype, as numpy's cost per
    array pickled is that of thousands of values."""

    n: int
    data: dict

    def rows(self) -> list[dict]:
        columns = [
            v.tolist()
            if isinstance(v, Strings | Repeated)
            else list(v)
            if isinstance(v, np.ndarray)
            else v
            for v in self.data.values()
        ]
        return [dict(zip(self.data, vals, strict=True)) for vals in zip(*columns, strict=True)]

    def __reduce__(self):
        if self.n >= LARGE_COLUMNS:  # each array pickled on its own: no stacked copy of it
            return Columns, (self.n, self.data)
        by_dtype = {}
        for name, values in self.data.items():
            if isinstance(values, np.ndarray):
                by_dtype.setdefault(values.dtype, []).append(name)
        blocks = [(names, np.stack([self.data[c] for c in names])) for names in by_dtype.values()]
        rest = {c: v for c, v in self.data.items() if not isinstance(v, np.ndarray)}
        return _unpickle_columns, (self.n, list(self.data), blocks, rest)


def _unpickle_columns(n, order, blocks, rest) -> Columns:
    data = dict(rest)
    for names, block in blocks:
        data.update(zip(names, block, strict=True))
    return Columns(n, {c: data[c] for c in order})


# json.dumps(..., sort_keys=True) without building its encoder per call
_sorted_json = json.JSONEncoder(sort_keys=True).encode


def epoch_utc(sec, nsec=0) -> datetime:
    """Seconds (and nanoseconds) since the epoch as utc_naive gives them: UTC, no time zone."""
    return datetime.fromtimestamp(sec, timezone.utc).replace(tzinfo=None) + timedelta(
        microseconds=nsec // 1000
    )


def timestamp(value):
    """A UTC datetime (as utc_naive gives them) from an ISO 8601 string or a number of seconds;
    None when not parseable."""
    if value is None:
        return None
    try:
        if isinstance(value, int | float):
            return epoch_utc(value)
        return utc_naive(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except (ValueError, OverflowError, OSError):  # the platform's or datetime's range
        return None


def job_row(log: dict, run: dict) -> dict:
    """The jobs row of one log (the dict of :func:`iostudy.logs.darshanlog_worker.read`).

    ``run`` gives run_id, log_path, log_sha256, and the manifest's campaign, system and
    effective system description (for the node count).
    """
    job = log["job"]
    tags = dict(job.get("metadata") or {})
    start = epoch_utc(job["start_time_sec"], job.get("start_time_nsec", 0))
    end = epoch_utc(job["end_time_sec"], job.get("end_time_nsec", 0))
    nprocs = int(job["nprocs"])
    logged = jobmodules.nodes(log["job_records"], nprocs)
    nodes, nodes_source = nodecount.job_nodes(nprocs, tags, run.get("system_config"), logged)
    row = {
        "run_id": run["run_id"],
        "log_path": run["log_path"],
        "log_sha256": run["log_sha256"],
        "jobid": int_or_none(job.get("jobid")),
        "nprocs": nprocs,
        "nodes": nodes,
        "nodes_source": nodes_source,
        "start": start,
        "end": end,
        "run_time": float(job.get("run_time") or max((end - start).total_seconds(), 0.0)),
        "exe": log.get("exe"),
        "tags": _sorted_json(tags),
        "campaign": tags.get("campaign") or run.get("campaign"),
        "check": tags.get("check"),
        "system": tags.get("system") or run.get("system"),
        "repetition": int_or_none(tags.get("repetition")),
        "environ": tags.get("environ"),
        "log_ver": job.get("log_ver"),
        "partial": any(m.get("partial_flag") for m in log["modules"].values()),
        "uid": int_or_none(job.get("uid")),
        "modules": "+".join(log["modules"]),
        "log_size": run.get("log_size"),
        "log_mtime_ns": run.get("log_mtime_ns"),
    }
    quirks = log.get("quirks") or []
    for quirk in quirks:
        row.update(dict.fromkeys(quirk.job_columns))
    row["flags"] = _sorted_json([q.reason for q in quirks]) if quirks else None
    return row


@functools.cache
def _module_plan(mod: str) -> tuple[dict, dict, list | None]:
    """How a module's files columns come from its counters, once: {column: the indexes of the
    counters it sums (_SUMS; a column of none, such as H5F's bytes, is left out: null)},
    {column: the index of its float counter}, and the indexes of the counters whose maximum is
    max_byte (None: no such column)."""
    lay = record_layout(mod)
    cidx = {name: i for i, name in enumerate(lay.cnames)}
    fidx = {name: i for i, name in enumerate(lay.fnames)}
    summed = {col: [cidx[c] for c in counters] for col, counters in _SUMS[mod].items() if counters}
    floats = {
        col: fidx[modules.FPREFIX[mod] + suffix]
        for col, suffix in _FCOLUMNS.items()
        if modules.FPREFIX[mod] + suffix in fidx
    }
    max_byte = [cidx[c] for c in _MAX_BYTE[mod]] if mod in _MAX_BYTE else None
    return summed, floats, max_byte


def _column_sum(counters: np.ndarray, idx: list[int]) -> np.ndarray:
    """The sum of some counter columns (numpy has no fast integer matmul: a take per column)."""
    if len(idx) == 1:
        return counters[:, idx[0]]
    return counters[:, idx].sum(axis=1)


def files_columns(entries) -> list[Columns]:
    """The files rows of a batch of logs, [(run info, log of
    :func:`iostudy.logs.darshanlog_worker.read` with ``stored=True``)], one Columns per module,
    computed column-wise; each row's file class (:mod:`iostudy.logs.sharing`) over all modules."""
    built = []
    for mod in modules.RECORD_MODULES:
        parts = [
            (i, run, log["records"][mod], log["name_records"], _nulled(log, mod))
            for i, (run, log) in enumerate(entries)
            if log["records"].get(mod)
        ]
        if parts and (found := _module_files(mod, parts)):
            built.append(found)
    if not built:
        return []
    nprocs = np.array([int(log["job"]["nprocs"]) for _, log in entries], np.int64)
    index = sharing.classes(
        np.concatenate([of_log for _, of_log in built]),
        np.concatenate([c.data["record_id"] for c, _ in built]),
        np.concatenate([c.data["rank"] for c, _ in built]),
        nprocs,
    )
    out, start = [], 0
    for columns, _ in built:
        mine = index[start : start + columns.n]
        start += columns.n
        columns.data["shared"] = mine != 0
        columns.data["sharing"] = Strings(*sharing.as_bytes(mine))
        out.append(columns)
    return out


def _nulled(log: dict, mod: str) -> set:
    """The files columns of a log's records of a module stored as null (its quirks)."""
    return {c for q in log.get("quirks") or () for c in q.file_columns.get(mod, ())}


def _module_files(mod: str, parts) -> tuple[Columns, np.ndarray] | None:
    """Files columns of one module's records of several logs, and each row's log (its index in
    the batch): parts [(index, run, stored records, names, columns stored as null)]; None when
    none of the records has a name. The file classes are left to :func:`files_columns`."""
    lay = record_layout(mod)
    records = np.frombuffer(b"".join(stored for _, _, stored, _, _ in parts), lay.dtype)
    counts = [len(stored) // lay.size for _, _, stored, _, _ in parts]
    ids = records["id"].tolist()
    paths, start = [], 0
    for (_, _, _, names, _), n in zip(parts, counts, strict=True):
        paths += map(names.get, ids[start : start + n])
        start += n
    logs = np.repeat(np.arange(len(parts)), counts)
    if None in paths:  # records without a name are left out, as PyDarshan does
        named = np.array([p is not None for p in paths], bool)
        records, logs, paths = records[named], logs[named], [p for p in paths if p is not None]
        if not paths:
            return None
    counts = np.bincount(logs, minlength=len(parts))
    ids, ranks = records["id"], records["rank"]
    counters, fcounters = plausibility.summed(mod, records["counters"]), records["fcounters"]
    summed, floats, max_byte = _module_plan(mod)
    columns = {
        "run_id": Repeated([run["run_id"] for _, run, *_ in parts], counts),
        "log_sha256": Repeated([run["log_sha256"] for _, run, *_ in parts], counts),
        "module": Repeated([modules.TOKENS[mod]], np.array([len(paths)])),
        "record_id": ids,
        "rank": ranks,
        "path": Strings.of(paths),
        **{col: _column_sum(counters, idx) for col, idx in summed.items()},
        **{col: fcounters[:, i] for col, i in floats.items()},
    }
    if max_byte is not None:
        columns["max_byte"] = counters[:, max_byte].max(axis=1)
    if FILE_ID in lay.dtype.names:  # a dataset's or variable's file
        columns["file_record_id"] = records[FILE_ID]
    for col in set().union(*(nulled for *_, nulled in parts)):  # logs with quirks: rare
        of_logs = [i for i, (*_, nulled) in enumerate(parts) if col in nulled]
        columns[col] = _with_nulls(columns[col], np.isin(logs, of_logs))
    return Columns(len(paths), columns), np.array([i for i, *_ in parts])[logs]


def _with_nulls(values: np.ndarray, null: np.ndarray) -> list:
    """A column with None where ``null`` is set: a list, as the store makes a numpy column's NaN
    a NaN, not a null (rare: only logs with quirks)."""
    return [None if n else v for v, n in zip(values.tolist(), null.tolist(), strict=True)]


def lustre_rows(log: dict, run: dict) -> list[dict]:
    """The lustre table's rows of one log (the dict of
    :func:`iostudy.logs.darshanlog_worker.read`)."""
    return [
        {
            "run_id": run["run_id"],
            "log_sha256": run["log_sha256"],
            "record_id": layout["id"],
            "rank": layout["rank"],
            "component": k,
            "stripe_size": comp["counters"].get("LUSTRE_COMP_STRIPE_SIZE"),
            "stripe_count": comp["counters"].get("LUSTRE_COMP_STRIPE_COUNT"),
            "ost": ost,
        }
        for layout in log.get("lustre") or []
        for k, comp in enumerate(layout["components"])
        for ost in comp["ost_ids"]
    ]


# A log's own facts, beside its run's: what ReaderPool sends per log (the run once per batch).
LOG_FACTS = ("log_path", "log_sha256", "log_size", "log_mtime_ns")


def read_for_ingest(checked: CheckedLog, facts: tuple) -> dict:
    """ReaderPool's read: one log, without what ingest does not store (mounts, heatmaps), its
    records as stored (:func:`files_columns` takes a batch's apart at once), and its quirks
    (``quirks``); raises :class:`iostudy.logs.plausibility.ImplausibleLog` (the pool quarantines
    the log) when a value of its job, Lustre layouts or heatmap records is out of bounds (its
    records: :func:`batch_rows`)."""
    log = read(checked, full=False, stored=True)
    log["quirks"] = plausibility.check_job(log, checked.path) + _unrecorded(log)
    return log


def _unrecorded(log: dict) -> list[plausibility.Quirk]:
    """A quirk per record module of the log whose version had none of the counters some files
    columns are made of: those columns stored as null, the reason naming them."""
    quirks = []
    for mod in modules.RECORD_MODULES:
        version = log["modules"].get(mod, {}).get("ver")
        if log["records"].get(mod) and (columns := _unrecorded_columns(mod, version)):
            reason = upconversion.flag(mod, version, columns)
            quirks.append(plausibility.Quirk(reason, file_columns={mod: columns}))
    return quirks


@functools.cache
def _unrecorded_columns(mod: str, version: int) -> tuple[str, ...]:
    """The files columns of a module's records of ``version`` made only of counters that
    version did not have (a column summing some it had sums those alone)."""
    lay, missing = record_layout(mod), upconversion.not_recorded(mod, version)
    lacked = {i for i, c in enumerate(lay.cnames) if c in missing}
    summed, floats, _ = _module_plan(mod)
    columns = [col for col, idx in summed.items() if idx and lacked >= set(idx)]
    columns += [col for col, i in floats.items() if lay.fnames[i] in missing]
    if version < upconversion.FILE_ID_SINCE.get(mod, 0):
        columns.append("file_record_id")
    return tuple(columns)


def _stored_sums(mod: str) -> dict:
    """{files column: the indexes of the counters it sums} of a module (a job-level one: none)."""
    return _module_plan(mod)[0] if mod in _SUMS else {}


def _as_columns(rows: list[dict]) -> list[Columns]:
    """Rows with the same keys as one Columns of lists (none for no rows)."""
    return [Columns(len(rows), {k: [r[k] for r in rows] for k in rows[0]})] if rows else []


def _plausible_at_once(table: str, part: Columns) -> bool:
    """Whether rows pass the store's rule judged a column at a time (vectorized; a Repeated
    column by its values, text not at all: it has no bounds); False when they do not, or a
    column cannot be typed: each row is then judged alone, to name its log. A batch of
    AutoPerf logs has tens of thousands of counters rows, which row_problems took a
    millisecond a log to judge one by one, and a log's jobs row alone took a tenth of the
    reading of a small log."""
    try:
        for name, values in part.data.items():
            if isinstance(values, Strings):
                continue
            data = pa.array(values.values if isinstance(values, Repeated) else values)
            if not pa.types.is_null(data.type) and storerule.table_problems(
                table, pa.table({name: data})
            ):
                return False
    except (pa.ArrowException, TypeError, ValueError, OverflowError):
        return False
    return True


def _counter_columns(entries) -> list[Columns]:
    """The jobcounters rows of a batch (:func:`iostudy.logs.jobmodules.counter_rows`), a
    Columns per kind of value (the other value column left out: null)."""
    out = []
    for kind, rows in jobmodules.counter_rows(entries).items():
        if not rows.counters:
            continue
        counts = np.array(rows.counts)
        data = {
            name: Repeated([same[i] for same in rows.records], counts)
            for i, name in enumerate(jobmodules.SAME)
        }
        data["counter"] = Strings.of(rows.counters)
        value, dtype = ("value", np.int64) if kind is int else ("fvalue", np.float64)
        data[value] = np.array(rows.values, dtype)
        out.append(Columns(len(rows.counters), data))
    return out


def batch_rows(run_info: dict, entries) -> dict[str, list[Columns]]:
    """ReaderPool's rows: the jobs, files, probes, lustre, jobcounters, accesssizes and heatmap
    rows of a batch of logs [(LOG_FACTS values, log)] of one run, a list of Columns per
    table. Raises
    :class:`iostudy.logs.plausibility.ImplausibleLog` when a log's records, or its jobs,
    probes or jobcounters rows (a value of its header or its tags: a jobid of -7; a counter of
    a job-level module), are out of the store's bounds: the pool then takes the batch's logs
    one by one, and quarantines that one."""
    plausibility.check_records([log for _, log in entries], _stored_sums)
    entries = [
        (dict(run_info, **dict(zip(LOG_FACTS, facts, strict=True))), log) for facts, log in entries
    ]
    jobs = [job_row(log, run) for run, log in entries]
    files = files_columns(entries)
    probes = []
    for (run, log), job in zip(entries, jobs, strict=True):
        if proberows.is_probe(job):  # rare: the probe's rows from its own files rows
            own = [r for c in files_columns([(run, log)]) for r in c.rows()]
            probes += proberows.probe_rows(job, own)
    lustre = [row for run, log in entries for row in lustre_rows(log, run)]
    checked = {
        "jobs": _as_columns(jobs),
        "probes": _as_columns(probes),
        "jobcounters": _counter_columns(entries),
    }
    for table, parts in checked.items():
        for part in parts:
            if not _plausible_at_once(table, part):
                for row in part.rows():  # lustre's: check_job's
                    problems = storerule.row_problems(table, row)
                    plausibility.raise_problems([f"{table} {p}" for p in problems])
    access = [row for run, log in entries for row in accessrows.access_rows(log, run)]
    heatmap = [row for run, log in entries for row in accessrows.heatmap_rows(log, run)]
    return checked | {
        "files": files,
        "lustre": _as_columns(lustre),
        "accesssizes": _as_columns(access),
        "heatmap": _as_columns(heatmap),
    }
