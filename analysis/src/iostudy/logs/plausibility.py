"""Plausibility of a log's values: the bounds every value the store keeps must be within.

A log can be structurally valid (the reader opens it without a complaint) and still hold values
no job can produce: a bit flipped in an uncompressed per-process log of a killed job, a counter
the runtime wrapped around, a field the reader decodes wrongly. :func:`check_job` looks at one
log as :func:`iostudy.logs.logrows.read_for_ingest` has it (its job, Lustre layouts, heatmaps and
quirks) and
:func:`check_records` at the records of a batch of them, module by module at once (a batch
with a value out of bounds is then looked at log by log, to name the log and the values):

- each raises :class:`ImplausibleLog`, naming each field, record and value out of bounds, when
  a value is physically impossible: ingest quarantines the log with that reason;
- check_job returns the :class:`Quirk` s of a log whose values are known to be read wrongly, or
  known to be missing: those values are stored as null and the reason goes to the jobs table's
  ``flags``.

The bounds (log-format reference ``../shared/reference/darshan-log-format.md``):

- counts and bytes (every counter, the stored sums of counters, the Lustre layout's values) in
  [0, 2^62): a job moves far less than 4 EiB, a sum of two of them (read + written) still fits
  an INT64, and bit 62 flipped in a zero counter (4.6e18, the issue's value) is caught too.
  Exceptions, as Darshan defines them: the counters the runtime sets to -1 when not monitored
  (``POSIX_MMAPS`` in LD_PRELOAD builds, ``POSIX_FILE_ALIGNMENT`` when no mount matched) may
  be negative down to -nprocs, as runtimes before 3.2 summed the -1 of every rank when they
  reduced a shared record (the 3.1.3 to 3.1.5 release logs hold POSIX_MMAPS = -4 from 4
  ranks); they count as 0 in sums. ``POSIX_RENAMED_FROM`` is a record id (unsigned): not a
  count, not checked.
- times (the fcounters, seconds since the job started) finite and in [0, 2^32 s): no job runs
  136 years, and a flipped exponent bit gives 1e+77. Variances (seconds^2, bytes^2) finite and
  >= 0.
- a counter or fcounter the log's module version did not have
  (:func:`iostudy.logs.upconversion.not_recorded`) is exactly -1, as the reader fills it when
  it up-converts the record: allowed for that version only (a -1 anywhere else is damage), and
  never summed (its files columns are stored as null when it is all they sum: see logrows).
- job: nprocs in [1, 2^31 - 1] (an MPI world size is a C int), start and end in [0, year 10000)
  (the store's timestamps), nanoseconds in [0, 10^9), end >= start.
- record ranks in [-1, nprocs); every record has a name in the name table (PyDarshan drops
  records without one: a record id or a name region damaged).
- heatmaps: bins are bytes, a bin's width in [1 ns, 2^32 s) (no clock Darshan reads is finer,
  a zero or flipped-exponent width spreads the bytes over no time or 136 years) and all the bins
  within 2^32 s of the job's start.

Quirks (stored, flagged):

- the 3.0 and 3.1 big-endian (ppc64, Mira BG/Q) logs with POSIX records older than version 4
  (release logs ppc64 3.0.0 to 3.1.6): libdarshan-util 3.5.0 skips the byte swap of
  fcounters 10-12 (``POSIX_F_META_TIME``, ``POSIX_F_MAX_READ_TIME``, ``POSIX_F_MAX_WRITE_TIME``)
  of such records, as its darshan_log_get_posix_file tests the counter indexes
  POSIX_RENAME_SOURCES/TARGETS/RENAMED_FROM (10-12), meant for the counters it sets itself while
  up-converting, against the fcounter loop's index. Those times come out as their bytes reversed
  (-221.5 s, -1.9e-304 s): the files' meta_time is stored as null.
- end time 0 with a start: the runtime's mmap log of a killed job, which never recorded its end
  (reference section 10.4): the job's end and run_time are stored as null.
- records of a module version without any of the counters a files column is made of (e.g.
  PNETCDF_FILE before 3: bytes, meta_time): those columns are stored as null, "not recorded
  (module version N)" (:func:`iostudy.logs.logrows.read_for_ingest` adds these quirks).

The store's rule, the bounds of every table's values on the same physical grounds, is
:mod:`iostudy.logs.storerule`.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Callable
from typing import NamedTuple

from iostudy.core.deferred import deferred
from iostudy.logs.recordlayout import record_layout
from iostudy.logs.upconversion import ever_not_recorded, not_recorded

np = deferred("numpy")

MAX_COUNT = 2**62  # counts and bytes are below it
MAX_SECONDS = 2.0**32  # times since the job started are below it
MIN_BIN_WIDTH = 1e-9  # a heatmap's bin is no narrower than a nanosecond
MAX_NPROCS = 2**31 - 1  # MPI_Comm_size gives an int
MAX_EPOCH = 253_402_300_800  # 10000-01-01: Python's and so the store's timestamps end before
NSEC = 10**9

# Counters the runtime sets to -1 when not monitored (reference section 6); those the reader
# fills when it up-converts a record are iostudy.logs.upconversion's.
NOT_MONITORED = {"POSIX": ("POSIX_MMAPS", "POSIX_FILE_ALIGNMENT")}
NOT_COUNTS = {"POSIX": ("POSIX_RENAMED_FROM",)}  # a record id: any 64 bits

# The ppc64 quirk: the fcounters libdarshan-util 3.5.0 leaves unswapped, and the files column
# stored from one of them.
UNSWAPPED = ("POSIX_F_META_TIME", "POSIX_F_MAX_READ_TIME", "POSIX_F_MAX_WRITE_TIME")
UNSWAPPED_COLUMNS = ("meta_time",)
MAGIC = 6567223
SHOWN = 5  # reasons named in a quarantine reason; the rest counted


class ImplausibleLog(ValueError):
    """A log with values out of physical bounds; the message names them."""


class Quirk(NamedTuple):
    """Values of a log known to be wrong or missing: the reason (the flag), the jobs columns
    and the files columns per module stored as null."""

    reason: str
    job_columns: tuple = ()
    file_columns: dict = {}


def summed(mod: str, counters: np.ndarray) -> np.ndarray:
    """A module's counters (records x counters of any module version, judged by check_records)
    as they are summed: a not-monitored -1 (or -nprocs) counts as 0, and so does the -1 of a
    counter the record's version did not have. The array itself when nothing changes."""
    idx = _negative_as_zero(mod)
    if not idx or not (counters[:, idx] < 0).any():
        return counters
    out = counters.copy()
    out[:, idx] = np.maximum(out[:, idx], 0)
    return out


@functools.cache
def _negative_as_zero(mod: str) -> list[int]:
    cnames = record_layout(mod).cnames
    zeroed = set(NOT_MONITORED.get(mod, ())) | ever_not_recorded(mod)
    return [i for i, c in enumerate(cnames) if c in zeroed]


@functools.cache
def _unrecorded(mod: str, version: int) -> tuple[np.ndarray, np.ndarray]:
    """Per counter and per fcounter of a module: whether records of module version
    ``version`` lack it (the reader's -1)."""
    lay, missing = record_layout(mod), not_recorded(mod, version)
    return (
        np.array([c in missing for c in lay.cnames], bool),
        np.array([f in missing for f in lay.fnames], bool),
    )


def _judged(values: np.ndarray, unrecorded: np.ndarray) -> np.ndarray:
    """values (records x columns) with the -1 of each ``unrecorded`` column (allowed) as 0:
    what the bounds judge. The array itself when nothing changes."""
    if not unrecorded.any():
        return values
    cols = values[:, unrecorded]
    if not (cols == -1).any():
        return values
    out = values.copy()
    cols[cols == -1] = 0
    out[:, unrecorded] = cols
    return out


def check_job(log: dict, path: str) -> list[Quirk]:
    """The quirks of one log (a dict of :func:`iostudy.logs.darshanlog_worker.read` with
    ``stored=True``); raises ImplausibleLog naming every value of its job, Lustre layouts and
    heatmaps out of bounds. ``path``: the log's file, whose header is read for its byte order
    when a quirk depends on it. Its records are check_records'."""
    quirks = _quirks(log, path)
    job = log["job"]
    raise_problems(
        _job_problems(job, quirks)
        + _lustre_problems(log.get("lustre") or [], job["nprocs"])
        + _heatmap_problems(log.get("heatmap_records") or [], job["nprocs"])
    )
    return quirks


def check_records(logs: list[dict], sums: Callable[[str], dict]) -> None:
    """Raises ImplausibleLog naming the values out of bounds of the first log of ``logs``
    (each with its ``quirks`` from check_job) whose records hold one. The records of all the
    logs are judged at once per module, and only the logs with a record out of the (strict)
    bounds are looked at again one by one, with their allowances (not-recorded counters,
    unswapped times). ``sums``: module -> {stored column: the indexes of the counters it
    sums}."""
    suspects = set()
    for mod in sorted({mod for log in logs for mod, stored in log["records"].items() if stored}):
        suspects |= _suspects(mod, logs, sums(mod))
    for k in sorted(suspects):
        log = logs[k]
        problems = []
        for mod, stored in log["records"].items():
            skip = UNSWAPPED if mod == "POSIX" and _unswapped(log) else ()  # known wrong
            problems += _record_problems(mod, stored, log, sums(mod), skip)
        raise_problems(problems)


def _unswapped(log: dict) -> bool:
    """Whether the log has the ppc64 quirk: its POSIX UNSWAPPED times are not judged."""
    return any(q.file_columns.get("POSIX") == UNSWAPPED_COLUMNS for q in log["quirks"])


def raise_problems(problems: list[str]) -> None:
    """ImplausibleLog naming the problems (the first SHOWN), if any."""
    if problems:
        more = f" (and {len(problems) - SHOWN} more)" if len(problems) > SHOWN else ""
        raise ImplausibleLog("implausible values: " + "; ".join(problems[:SHOWN]) + more)


def _suspects(mod: str, logs: list[dict], sums: dict) -> set[int]:
    """The indexes of the logs with a record of module mod out of bounds or without a name:
    what _record_problems judges, for all the logs' records at once (in groups of logs with
    the same allowances: the module version's not-recorded counters, unswapped times)."""
    groups: dict[tuple, list[int]] = {}
    for k, log in enumerate(logs):
        if log["records"].get(mod):
            allowances = (log["modules"][mod]["ver"], mod == "POSIX" and _unswapped(log))
            groups.setdefault(allowances, []).append(k)
    found = set()
    for allowances, which in groups.items():
        found |= _group_suspects(mod, logs, which, sums, *allowances)
    return found


def _group_suspects(mod, logs, which: list[int], sums, version, unswapped) -> set[int]:
    """_suspects of the logs ``which`` (indexes into logs), which share their allowances."""
    lay = record_layout(mod)
    stored = [logs[k]["records"][mod] for k in which]
    records = np.frombuffer(b"".join(stored), lay.dtype)
    counts = [len(s) // lay.size for s in stored]
    unrecorded, funrecorded = _unrecorded(mod, version)
    counters = _judged(records["counters"].reshape(len(records), -1), unrecorded)
    fcounters = _judged(records["fcounters"].reshape(len(records), -1), funrecorded)
    found = _unnamed(logs, which, counts, records["id"].tolist())
    nprocs = np.repeat(np.array([max(logs[k]["job"]["nprocs"], 1) for k in which]), counts)
    skipped = unswapped & np.array([f in UNSWAPPED for f in lay.fnames])
    if _within(mod, counters, fcounters, skipped, records["rank"], nprocs, sums):
        return found  # the common case: no record needs a closer look
    sentinel, exempt = _counter_bounds(mod)
    low = np.where(sentinel, -nprocs[:, None], 0)
    ok = (((counters >= low) & (counters < MAX_COUNT)) | exempt).all(axis=1)
    variance = _time_bounds(mod)[0]
    with np.errstate(invalid="ignore"):  # NaN compares false: not ok
        fine = (fcounters >= 0) & ((fcounters < MAX_SECONDS) | (variance & np.isfinite(fcounters)))
        ok &= (fine | skipped).all(axis=1)
    ok &= (records["rank"] >= -1) & (records["rank"] < nprocs)
    adds, _ = _sum_plan(mod, sums, counters.shape[1])
    ok &= ((summed(mod, counters).astype(float) @ adds) < MAX_COUNT).all(axis=1)
    bad_records = np.flatnonzero(~ok)
    return found | {which[i] for i in np.repeat(np.arange(len(which)), counts)[bad_records]}


def _unnamed(logs, which, counts, ids) -> set[int]:
    """The indexes of the logs ``which`` with a record whose id their name table lacks."""
    found, start = set(), 0
    for k, n in zip(which, counts, strict=True):  # a set operation per log
        if not logs[k]["name_records"].keys() >= set(ids[start : start + n]):
            found.add(k)
        start += n
    return found


def _within(mod, counters, fcounters, skipped, ranks, nprocs, sums: dict) -> bool:
    """Whether every record is within the strict bounds, judged on the columns' extremes: no
    counter below 0 (or, for a not-monitored one, below -nprocs of its log), none
    nor any sum of them at 2^62 (the sum of the columns' maxima), every time in [0, 2^32 s)
    (a variance: finite; ``skipped`` times are not judged), every rank in [-1, its log's
    nprocs). A False says nothing but "look closer"."""
    sentinel, exempt = _counter_bounds(mod)
    low, high = counters.min(axis=0), counters.max(axis=0)
    if ((low < 0) & ~exempt & ~sentinel).any():
        return False
    if sentinel.any() and (counters[:, sentinel] < -nprocs[:, None]).any():  # a few columns
        return False
    if ((high >= MAX_COUNT) & ~exempt).any():
        return False
    adds, _ = _sum_plan(mod, sums, counters.shape[1])
    if (np.maximum(high, 0).astype(float) @ adds >= MAX_COUNT).any():
        return False
    variance = _time_bounds(mod)[0]
    fmin, fmax = fcounters.min(axis=0), fcounters.max(axis=0)  # NaN spreads to both
    fine = (fmin >= 0) & ((fmax < MAX_SECONDS) | (variance & np.isfinite(fmax)))
    if not (fine | skipped).all():
        return False
    return bool(ranks.min() >= -1 and (ranks < nprocs).all())


def _quirks(log: dict, path: str) -> list[Quirk]:
    quirks = []
    job = log["job"]
    if job["end_time_sec"] == 0 and job.get("end_time_nsec", 0) == 0 and job["start_time_sec"] > 0:
        quirks.append(
            Quirk(
                "end time 0: a killed job's mmap log, no end recorded; end and "
                "run_time stored as null",
                ("end", "run_time"),
            )
        )
    posix = log["modules"].get("POSIX")
    if posix and posix["ver"] < 4 and log["records"].get("POSIX") and _big_endian(path):
        quirks.append(
            Quirk(
                f"{', '.join(UNSWAPPED)} of this big-endian log's POSIX records (version "
                f"{posix['ver']}) are not byte-swapped by libdarshan-util 3.5.0; meta_time stored "
                "as null",
                file_columns={"POSIX": UNSWAPPED_COLUMNS},
            )
        )
    return quirks


def _big_endian(path: str) -> bool:
    """Whether the log was written big-endian: its magic number (header bytes 8-15) reads
    right in that order (reference section 2.2)."""
    with open(path, "rb") as f:
        head = f.read(16)
    return len(head) == 16 and struct.unpack(">q", head[8:16])[0] == MAGIC


def _job_problems(job: dict, quirks: list[Quirk]) -> list[str]:
    problems = []
    nprocs = job["nprocs"]
    if not 1 <= nprocs <= MAX_NPROCS:
        problems.append(f"job nprocs = {nprocs}: not in [1, 2^31 - 1]")
    for end in ("start", "end"):
        sec, nsec = job[f"{end}_time_sec"], job.get(f"{end}_time_nsec", 0)
        if not 0 <= sec < MAX_EPOCH:
            problems.append(f"job {end}_time_sec = {sec}: not in [0, year 10000)")
        if not 0 <= nsec < NSEC:
            problems.append(f"job {end}_time_nsec = {nsec}: not in [0, 10^9)")
    no_end = any("end" in q.job_columns for q in quirks)
    start = (job["start_time_sec"], job.get("start_time_nsec", 0))
    end = (job["end_time_sec"], job.get("end_time_nsec", 0))
    if not no_end and end < start:
        problems.append(
            f"job end {end[0]}.{end[1]:09d} s before its start {start[0]}.{start[1]:09d} s"
        )
    return problems


def _record_problems(mod, stored, log, sums, skip) -> list[str]:
    """What is out of bounds in one module's records (stored bytes, named or not)."""
    nprocs = log["job"]["nprocs"]
    lay = record_layout(mod)
    records = np.frombuffer(stored, lay.dtype)
    if not len(records):
        return []
    names = log["name_records"]
    unrecorded, funrecorded = _unrecorded(mod, log["modules"][mod]["ver"])
    counters = _judged(records["counters"].reshape(len(records), -1), unrecorded)
    fcounters = _judged(records["fcounters"].reshape(len(records), -1), funrecorded)

    def where(i: int) -> str:
        rid = int(records["id"][i])
        name = f"{names[rid]!r}, " if rid in names else ""
        return f"{mod} record {rid} ({name}rank {records['rank'][i]})"

    problems = []
    unnamed = [i for i, rid in enumerate(records["id"].tolist()) if rid not in names]
    problems += [f"{where(i)} has no name in the name table" for i in unnamed[:1]]
    if len(unnamed) > 1:
        problems.append(f"{len(unnamed) - 1} more {mod} records without a name")
    ranks = records["rank"]
    bad = np.flatnonzero((ranks < -1) | (ranks >= max(nprocs, 1)))
    problems += [f"{where(i)}: rank {ranks[i]} not in [-1, nprocs {nprocs})" for i in bad[:1]]
    problems += _counter_problems(mod, lay.cnames, counters, nprocs, where)
    problems += _time_problems(mod, lay.fnames, fcounters, skip, where)
    problems += _sum_problems(mod, summed(mod, counters), sums, where)
    return problems


def _first_bad(values: np.ndarray, ok: np.ndarray, names, why, where) -> list[str]:
    """A problem naming the first value not ok of each column (values and ok: records x
    columns) that has one; ``why``: column -> its bound in words."""
    if ok.all():  # a clean log: no loop
        return []
    problems = []
    for k in np.flatnonzero(~ok.all(axis=0)):
        i = np.flatnonzero(~ok[:, k])[0]
        problems.append(f"{where(i)}: {names[k]} = {values[i, k].item()!r} {why(k)}")
    return problems


@functools.cache
def _counter_bounds(mod: str) -> tuple[np.ndarray, np.ndarray]:
    """Per counter of a module: whether it may hold -1 per rank (not monitored), and whether
    it is no count at all (not checked)."""
    cnames = record_layout(mod).cnames
    return (
        np.array([c in NOT_MONITORED.get(mod, ()) for c in cnames]),
        np.array([c in NOT_COUNTS.get(mod, ()) for c in cnames]),
    )


def _counter_problems(mod, cnames, counters, nprocs, where) -> list[str]:
    sentinel, exempt = _counter_bounds(mod)
    low = np.where(sentinel, -max(nprocs, 1), 0)
    ok = ((counters >= low) & (counters < MAX_COUNT)) | exempt
    return _first_bad(counters, ok, cnames, lambda k: f"not in [{low[k]}, 2^62)", where)


@functools.cache
def _time_bounds(mod: str) -> tuple[np.ndarray, list]:
    """Per fcounter of a module: whether it is a variance (no upper bound), and its bound in
    words."""
    fnames = record_layout(mod).fnames
    variance = np.array(["_VARIANCE_RANK_" in f for f in fnames])
    why = ["not a finite variance >= 0" if v else "s not in [0, 2^32 s)" for v in variance]
    return variance, why


def _time_problems(mod, fnames, fcounters, skip, where) -> list[str]:
    variance, why = _time_bounds(mod)
    with np.errstate(invalid="ignore"):  # NaN compares false: not ok
        ok = (fcounters >= 0) & ((fcounters < MAX_SECONDS) | (variance & np.isfinite(fcounters)))
    if skip:
        ok |= np.array([f in skip for f in fnames])
    return _first_bad(fcounters, ok, fnames, why.__getitem__, where)


def _sum_problems(mod, counters, sums: dict, where) -> list[str]:
    """The stored sums of counters (files columns), in floating point: no wrap-around."""
    adds, names = _sum_plan(mod, sums, counters.shape[1])
    totals = counters.astype(float) @ adds
    return _first_bad(totals, totals < MAX_COUNT, names, lambda k: "not below 2^62", where)


def _sum_plan(mod: str, sums: dict, n_counters: int) -> tuple[np.ndarray, list[str]]:
    """(counters x sums matrix: 1 where a counter adds to a stored sum, the sums' names) of
    the sums of several counters, made once per module."""
    if mod not in _SUM_PLANS:
        summed = {column: idx for column, idx in sums.items() if len(idx) > 1}
        adds = np.zeros((n_counters, len(summed)))
        for j, idx in enumerate(summed.values()):
            adds[idx, j] = 1
        _SUM_PLANS[mod] = (adds, [f"the sum {column}" for column in summed])
    return _SUM_PLANS[mod]


_SUM_PLANS: dict = {}  # module -> (counters x sums matrix, the sums' names), made once


def _lustre_problems(layouts: list, nprocs: int) -> list[str]:
    """The Lustre values the store keeps: stripe size and count >= 0, OST index >= -1 (-1:
    unknown), all below 2^62; the layout's rank in [-1, nprocs), as a record's."""
    for layout in layouts:
        where = f"LUSTRE record {layout['id']} (rank {layout['rank']})"
        if not -1 <= layout["rank"] < max(nprocs, 1):
            return [f"{where}: rank {layout['rank']} not in [-1, nprocs {nprocs})"]
        for comp in layout["components"]:
            c = comp["counters"]
            values = [
                (n, c.get(n, 0), 0) for n in ("LUSTRE_COMP_STRIPE_SIZE", "LUSTRE_COMP_STRIPE_COUNT")
            ]
            values += [("an OST index", ost, -1) for ost in comp["ost_ids"]]
            for name, value, low in values:
                if not low <= value < MAX_COUNT:
                    return [f"{where}: {name} = {value} not in [{low}, 2^62)"]
    return []


def _heatmap_problems(records: list, nprocs: int) -> list[str]:
    """The first value out of bounds of each HEATMAP record: its rank in [-1, nprocs), as a
    record's; its bin width; its span (bins x width) within 2^32 s; its bins (bytes) counts."""
    problems = []
    for rec in records:
        where = f"HEATMAP record {rec['id']} (rank {rec['rank']})"
        width, nbins = rec["bin_width"], rec["nbins"]
        if not -1 <= rec["rank"] < max(nprocs, 1):
            problems.append(f"{where}: rank {rec['rank']} not in [-1, nprocs {nprocs})")
        elif not MIN_BIN_WIDTH <= width < MAX_SECONDS:  # NaN compares false
            problems.append(f"{where}: bin_width = {width!r} s not in [1e-09, 2^32 s)")
        elif nbins * width >= MAX_SECONDS:
            problems.append(f"{where}: {nbins} bins of {width!r} s: not within 2^32 s")
        elif bad := _bad_bin(rec):
            problems.append(f"{where}: {bad} not in [0, 2^62)")
    return problems


def _bad_bin(rec: dict) -> str | None:
    """The first bin of a HEATMAP record out of [0, 2^62), named; None when all are in."""
    for kind in ("write", "read"):
        bins = rec[kind]
        if bins and not (min(bins) >= 0 and max(bins) < MAX_COUNT):  # min and max: one pass each
            k = next(k for k, v in enumerate(bins) if not 0 <= v < MAX_COUNT)
            return f"{kind} bin {k} = {bins[k]}"
    return None
