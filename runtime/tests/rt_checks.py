"""Expected-value builders and assertion helpers for the runtime tests.

Expected counters are written by hand in the test files; the helpers here only fill in the
defaults (zero counters, MEM_ALIGNMENT, FILE_ALIGNMENT), lay out the common-value slots
(ACCESS*/STRIDE*), and compare a whole record at once so that a stray count anywhere in the
record is reported too.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

U64 = 0xFFFFFFFFFFFFFFFF

POSIX_COUNTERS = (
    "OPENS FILENOS DUPS READS WRITES SEEKS STATS MMAPS FSYNCS FDSYNCS RENAME_SOURCES"
    " RENAME_TARGETS RENAMED_FROM MODE BYTES_READ BYTES_WRITTEN MAX_BYTE_READ MAX_BYTE_WRITTEN"
    " CONSEC_READS CONSEC_WRITES SEQ_READS SEQ_WRITES RW_SWITCHES MEM_NOT_ALIGNED MEM_ALIGNMENT"
    " FILE_NOT_ALIGNED FILE_ALIGNMENT MAX_READ_TIME_SIZE MAX_WRITE_TIME_SIZE"
).split()
SIZE_BINS = "0_100 100_1K 1K_10K 10K_100K 100K_1M 1M_4M 4M_10M 10M_100M 100M_1G 1G_PLUS".split()
POSIX_COUNTERS += [f"SIZE_READ_{b}" for b in SIZE_BINS] + [f"SIZE_WRITE_{b}" for b in SIZE_BINS]
POSIX_COUNTERS += [f"STRIDE{i}_STRIDE" for i in range(1, 5)]
POSIX_COUNTERS += [f"STRIDE{i}_COUNT" for i in range(1, 5)]
POSIX_COUNTERS += [f"ACCESS{i}_ACCESS" for i in range(1, 5)]
POSIX_COUNTERS += [f"ACCESS{i}_COUNT" for i in range(1, 5)]
POSIX_COUNTERS += "FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK SLOWEST_RANK_BYTES".split()
POSIX_COUNTERS = ["POSIX_" + c for c in POSIX_COUNTERS]

POSIX_FCOUNTERS = [
    "POSIX_F_" + c
    for c in (
        "OPEN_START_TIMESTAMP READ_START_TIMESTAMP WRITE_START_TIMESTAMP CLOSE_START_TIMESTAMP"
        " OPEN_END_TIMESTAMP READ_END_TIMESTAMP WRITE_END_TIMESTAMP CLOSE_END_TIMESTAMP"
        " READ_TIME WRITE_TIME META_TIME MAX_READ_TIME MAX_WRITE_TIME FASTEST_RANK_TIME"
        " SLOWEST_RANK_TIME VARIANCE_RANK_TIME VARIANCE_RANK_BYTES"
    ).split()
]

MPIIO_COUNTERS = [
    "MPIIO_" + c
    for c in (
        "INDEP_OPENS COLL_OPENS INDEP_READS INDEP_WRITES COLL_READS COLL_WRITES SPLIT_READS"
        " SPLIT_WRITES NB_READS NB_WRITES SYNCS HINTS VIEWS MODE BYTES_READ BYTES_WRITTEN"
        " RW_SWITCHES MAX_READ_TIME_SIZE MAX_WRITE_TIME_SIZE"
    ).split()
]
MPIIO_COUNTERS += [f"MPIIO_SIZE_READ_AGG_{b}" for b in SIZE_BINS]
MPIIO_COUNTERS += [f"MPIIO_SIZE_WRITE_AGG_{b}" for b in SIZE_BINS]
MPIIO_COUNTERS += [f"MPIIO_ACCESS{i}_ACCESS" for i in range(1, 5)]
MPIIO_COUNTERS += [f"MPIIO_ACCESS{i}_COUNT" for i in range(1, 5)]
MPIIO_COUNTERS += [
    "MPIIO_" + c for c in "FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK SLOWEST_RANK_BYTES".split()
]

STDIO_COUNTERS = [
    "STDIO_" + c
    for c in (
        "OPENS FDOPENS READS WRITES SEEKS FLUSHES BYTES_WRITTEN BYTES_READ MAX_BYTE_READ"
        " MAX_BYTE_WRITTEN FASTEST_RANK FASTEST_RANK_BYTES SLOWEST_RANK SLOWEST_RANK_BYTES"
    ).split()
]
STDIO_FCOUNTERS = [
    "STDIO_F_" + c
    for c in (
        "META_TIME WRITE_TIME READ_TIME OPEN_START_TIMESTAMP CLOSE_START_TIMESTAMP"
        " WRITE_START_TIMESTAMP READ_START_TIMESTAMP OPEN_END_TIMESTAMP CLOSE_END_TIMESTAMP"
        " WRITE_END_TIMESTAMP READ_END_TIMESTAMP FASTEST_RANK_TIME SLOWEST_RANK_TIME"
        " VARIANCE_RANK_TIME VARIANCE_RANK_BYTES"
    ).split()
]

# counters whose value depends on timing; checked separately
TIMING_DEPENDENT = {"POSIX_MAX_READ_TIME_SIZE", "POSIX_MAX_WRITE_TIME_SIZE"}
RANK_FIELDS = {
    "POSIX_FASTEST_RANK",
    "POSIX_FASTEST_RANK_BYTES",
    "POSIX_SLOWEST_RANK",
    "POSIX_SLOWEST_RANK_BYTES",
    "STDIO_FASTEST_RANK",
    "STDIO_FASTEST_RANK_BYTES",
    "STDIO_SLOWEST_RANK",
    "STDIO_SLOWEST_RANK_BYTES",
}


def size_bin(size: int) -> str:
    """Darshan histogram bin of an access size (<=100, <=1K, <=10K, ... , >1G)."""
    limits = [100, 1024, 10240, 102400, 1048576, 4194304, 10485760, 104857600, 1073741824]
    for name, limit in zip(SIZE_BINS, limits, strict=False):
        if size <= limit:
            return name
    return "1G_PLUS"


def histogram(kind: str, sizes, module: str = "POSIX") -> dict:
    """The size histogram for a list of access sizes (kind = READ or WRITE): POSIX_SIZE_<kind>_*
    or, for module MPIIO, MPIIO_SIZE_<kind>_AGG_*."""
    prefix = f"MPIIO_SIZE_{kind}_AGG_" if module == "MPIIO" else f"{module}_SIZE_{kind}_"
    out = {f"{prefix}{b}": 0 for b in SIZE_BINS}
    for s in sizes:
        out[f"{prefix}{size_bin(s)}"] += 1
    return out


def common_slots(kind: str, pairs, module: str = "POSIX") -> dict:
    """<module>_<kind>{1..4}_<kind> / _COUNT from hand-ordered (value, count) pairs."""
    pairs = list(pairs)
    assert len(pairs) <= 4
    pairs += [(0, 0)] * (4 - len(pairs))
    out = {}
    for i, (val, cnt) in enumerate(pairs, start=1):
        out[f"{module}_{kind}{i}_{kind}"] = val
        out[f"{module}_{kind}{i}_COUNT"] = cnt
    return out


def posix_expected(file_alignment: int, mem_alignment: int = 8, **counters) -> dict:
    """A full expected POSIX counter dict: zeros, alignments, then the given counters
    (keyword names without the POSIX_ prefix, or dicts from histogram()/common_slots())."""
    exp = {c: 0 for c in POSIX_COUNTERS}
    exp["POSIX_MEM_ALIGNMENT"] = mem_alignment
    exp["POSIX_FILE_ALIGNMENT"] = file_alignment
    for k, v in counters.items():
        key = k if k.startswith("POSIX_") else "POSIX_" + k
        assert key in exp, f"unknown counter {key}"
        exp[key] = v
    return exp


def _expected(names: list, module: str, counters: dict) -> dict:
    """Every counter of names at zero, then the given ones (with or without the prefix)."""
    exp = dict.fromkeys(names, 0)
    for k, v in counters.items():
        key = k if k.startswith(f"{module}_") else f"{module}_{k}"
        assert key in exp, f"unknown counter {key}"
        exp[key] = v
    return exp


def mpiio_expected(**counters) -> dict:
    return _expected(MPIIO_COUNTERS, "MPIIO", counters)


def stdio_expected(**counters) -> dict:
    return _expected(STDIO_COUNTERS, "STDIO", counters)


def compare_counters(rec: dict, expected: dict, skip=(), what: str = "") -> None:
    """Assert that every counter in ``expected`` (except ``skip``) equals the record's."""
    got = rec["counters"]
    diffs = []
    for key, want in expected.items():
        if key in skip:
            continue
        if key not in got:
            diffs.append(f"  {key}: missing from record")
            continue
        have = got[key]
        if key.endswith("RENAMED_FROM"):
            have &= U64  # record ids are stored in a signed counter
        if have != want:
            diffs.append(f"  {key}: expected {want}, got {have}")
    assert not diffs, f"counter mismatch {what}:\n" + "\n".join(diffs)


def check_posix_record(rec, expected, write_sizes=(), read_sizes=(), what="") -> None:
    """Compare a whole non-shared POSIX record; MAX_*_TIME_SIZE must be one of the sizes."""
    compare_counters(rec, expected, skip=TIMING_DEPENDENT, what=what)
    c = rec["counters"]
    if write_sizes:
        assert c["POSIX_MAX_WRITE_TIME_SIZE"] in set(write_sizes), (
            f"{what}: MAX_WRITE_TIME_SIZE {c['POSIX_MAX_WRITE_TIME_SIZE']} is not one of the"
            f" write sizes {sorted(set(write_sizes))}"
        )
    else:
        assert c["POSIX_MAX_WRITE_TIME_SIZE"] == 0, f"{what}: MAX_WRITE_TIME_SIZE without writes"
    if read_sizes:
        assert c["POSIX_MAX_READ_TIME_SIZE"] in set(read_sizes), (
            f"{what}: MAX_READ_TIME_SIZE {c['POSIX_MAX_READ_TIME_SIZE']} is not one of the"
            f" read sizes {sorted(set(read_sizes))}"
        )
    else:
        assert c["POSIX_MAX_READ_TIME_SIZE"] == 0, f"{what}: MAX_READ_TIME_SIZE without reads"


EPS = 2e-3  # slack (s) between the job's wall-clock run time and the module timers


def check_timers(
    rec: dict, module: str, run_time: float, families: dict, what: str = "", ranks: int = 1
) -> None:
    """Timestamps/timers of one record: all >= 0, start <= end per family, inside
    [0, run_time], cumulative times <= ranks x run_time (a shared record sums its ranks' times).
    ``families`` maps OPEN/READ/WRITE/CLOSE to True when the program performed that kind of
    operation on the record (then both timestamps must be > 0) or False (then both must be 0)."""
    f = rec["fcounters"]
    p = f"{module}_F_"
    problems = []
    for name, val in f.items():
        if val < 0:
            problems.append(f"{name} = {val} < 0")
    for fam, happened in families.items():
        start, end = f[f"{p}{fam}_START_TIMESTAMP"], f[f"{p}{fam}_END_TIMESTAMP"]
        if happened:
            if not (0 < start <= end <= run_time + EPS):
                problems.append(
                    f"{fam}: expected 0 < start {start} <= end {end} <= run_time {run_time}"
                )
        elif start != 0 or end != 0:
            problems.append(f"{fam}: no such operation but start={start} end={end}")
    for t in ("READ_TIME", "WRITE_TIME", "META_TIME"):
        if not (0 <= f[p + t] <= ranks * run_time + EPS):
            problems.append(f"{t} = {f[p + t]} not within [0, {ranks} x run_time {run_time}]")
    for t in ("MAX_READ_TIME", "MAX_WRITE_TIME"):
        if p + t in f and not (0 <= f[p + t] <= run_time + EPS):
            problems.append(f"{t} = {f[p + t]} not within [0, run_time {run_time}]")
    assert not problems, f"timer problems {what}:\n  " + "\n  ".join(problems)


def check_nonshared_rank_fields(rec: dict, module: str, what: str = "") -> None:
    """Non-shared records carry no FASTEST/SLOWEST/VARIANCE information."""
    c, f = rec["counters"], rec["fcounters"]
    for k in ("FASTEST_RANK", "FASTEST_RANK_BYTES", "SLOWEST_RANK", "SLOWEST_RANK_BYTES"):
        assert c[f"{module}_{k}"] == 0, f"{what}: {module}_{k} = {c[f'{module}_{k}']}"
    for k in (
        "FASTEST_RANK_TIME",
        "SLOWEST_RANK_TIME",
        "VARIANCE_RANK_TIME",
        "VARIANCE_RANK_BYTES",
    ):
        assert f[f"{module}_F_{k}"] == 0, f"{what}: {module}_F_{k} = {f[f'{module}_F_{k}']}"


# ---------------------------------------------------------------------------------------------
# lookups in the data of iostudy.logs.darshanlog.read_log


def ids_by_name(log: dict) -> dict:
    return {name: rid for rid, name in log["name_records"].items()}


def records_named(log: dict, module: str, name: str) -> list:
    """All records of ``module`` whose name is ``name`` (one per rank, or one rank -1)."""
    rid = ids_by_name(log).get(name)
    if rid is None:
        return []
    return [r for r in log["records"].get(module, []) if r["id"] == rid]


def record(log: dict, module: str, name: str, rank: int | None = None) -> dict:
    """The single record of ``module`` named ``name`` (optionally of a given rank)."""
    recs = records_named(log, module, name)
    if rank is not None:
        recs = [r for r in recs if r["rank"] == rank]
    names = module_names(log, module)
    assert len(recs) == 1, (
        f"expected exactly one {module} record for {name!r} (rank {rank}), got {len(recs)};"
        f" {module} records present: {names}"
    )
    return recs[0]


def module_names(log: dict, module: str) -> list:
    return sorted(log["name_records"].get(r["id"], "?") for r in log["records"].get(module, []))


# many_files' files, one 704-byte POSIX record each (Darshan 3.5.0's record): 3,200 of them make a
# POSIX region of 2.2 MiB, over the 1 MiB of a region that Darshan 3.5.0's reader reads of an
# uncompressed log (its darshan_log_noz_read loses its place after its first 1 MiB load)
MANY_FILES_OVER_2MIB = 3200

# the counters check_many_files looks at, in its order
MANY_FILES_COUNTERS = ["POSIX_OPENS", "POSIX_WRITES", "POSIX_BYTES_WRITTEN"]

PYDARSHAN_RECORDS = r"""
import json, sys
import darshan
mod, keys = sys.argv[2], sys.argv[3:]
r = darshan.DarshanReport(sys.argv[1], read_all=True)
counters = r.records[mod].to_df()["counters"]
names = [r.name_records[int(i)] for i in counters["id"]]
values = [[int(v) for v in counters[k]] for k in keys]
print(json.dumps([[n, [col[i] for col in values]] for i, n in enumerate(names)]))
"""


def pydarshan_records(log, module: str, counters: list[str]) -> list:
    """PyDarshan's records of ``module`` in ``log`` (in a subprocess: a misread log may crash
    it): [name, [the counters' values]], one a record, in the log's order."""
    res = subprocess.run(
        [sys.executable, "-c", PYDARSHAN_RECORDS, str(log), module, *counters],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


def check_many_files(records: list, d: str, n: int) -> None:
    """many_files' n files, from [name, [MANY_FILES_COUNTERS' values]] of a log's POSIX records
    (PyDarshan's, darshan-parser's): each file once, opened and written 10 bytes once, and no
    other record."""
    assert len(records) == n
    assert {name for name, _ in records} == {os.path.join(d, f"many_{i:03d}.dat") for i in range(n)}
    for name, counts in records:
        assert counts == [1, 1, 10], name
