"""The store's rule: the bounds of every table's values, one definition for what ingest writes
and what import accepts from another site, so that a store one site ingested imports at
another (the bounds and why: :mod:`iostudy.logs.plausibility`). :func:`table_problems` judges a
table (a bundle's, or ingest's before it is written), :func:`row_problems` one row (a log's
jobs or probes row, a benchmark's JSON line, a ReFrame performance value, a run's manifest),
with the types of the store's schema when the row comes from JSON."""

from __future__ import annotations

import math
import numbers
from datetime import datetime

from iostudy.core.deferred import deferred
from iostudy.logs.plausibility import MAX_COUNT, MAX_SECONDS

pa = deferred("pyarrow")
pc = deferred("pyarrow.compute")

# The smallest value of the integer columns that may go below 0 (the others: 0): a record
# shared by all ranks has rank -1, an OST index -1 is unknown, a job has a process at least, a
# file's mtime may be before 1970.
LOWEST = {
    "rank": -1,
    "ost": -1,
    ("jobs", "nprocs"): 1,
    "log_mtime_ns": -MAX_COUNT,
    "mtime_ns": -MAX_COUNT,
}
# The tables whose float columns are seconds (since a job's start, or durations): in
# [0, 2^32 s); iostat's too (its intervals, and its rates, utilisation and waits, all >= 0 and
# far below 2^32). The benchmarks' tables hold rates and durations: >= 0. Elsewhere a float
# need only be finite (perf's values and thresholds: a lower threshold is below 0).
SECONDS_TABLES = ("jobs", "files", "probes", "iostat", "dxt", "jobcounters", "heatmap")
RATE_TABLES = ("iomodel", "ior", "components", "adaptive")
SHOWN_CHARS = 40  # of a value named in a problem: a hostile one may be a megabyte

# A value's kind (its column's type) -> the Python types it may be (numpy's scalars of a row
# taken from Columns too), its name in a problem, and the pyarrow test of its column's type.
KINDS = {
    "int": ((numbers.Integral,), "an integer", "is_signed_integer"),
    "uint": ((numbers.Integral,), "an integer", "is_unsigned_integer"),
    "float": ((numbers.Real,), "a number", "is_floating"),
    "str": ((str,), "a string", "is_string"),
    "bool": ((bool,), "true or false", "is_boolean"),
    "time": ((datetime,), "a time", "is_timestamp"),
}


def _bounds(table: str, name: str, kind: str) -> tuple[float, float, str]:
    """[low, high) of a numeric column of the store's table, and the bounds in words."""
    if kind == "uint":
        return 0, 2**64, "in [0, 2^64)"
    if kind == "int":
        low = LOWEST.get((table, name), LOWEST.get(name, 0))
        return low, MAX_COUNT, f"in [{low}, 2^62)"
    if table in SECONDS_TABLES:
        return 0.0, MAX_SECONDS, "finite, in [0, 2^32) s"
    if table in RATE_TABLES:
        return 0.0, math.inf, "finite, >= 0"
    return -math.inf, math.inf, "finite"


def table_problems(table: str, data) -> list[str]:
    """The values of ``data`` (a pyarrow Table of the store's ``table``) out of the bounds
    ingest keeps: integers in [0, 2^62) (LOWEST: lower bounds of their own), floats finite
    (NaN and infinities never stored; nulls are), seconds in [0, 2^32 s), rates >= 0; the first
    row of each column out of bounds, named."""
    problems = []
    for name in data.column_names:
        column, kind = data[name], _kind(data.schema.field(name).type)
        if kind not in ("int", "float"):
            continue
        low, high, bounds = _bounds(table, name, kind)
        bad = pc.or_(pc.less(column, low), pc.greater_equal(column, high))
        if kind == "float":
            bad = pc.or_(bad, pc.invert(pc.is_finite(column)))
        flagged = pc.fill_null(bad, False).combine_chunks()
        if pc.any(flagged).as_py():
            row = pc.indices_nonzero(flagged)[0].as_py()
            problems.append(f"{name} = {column[row].as_py()!r} in row {row}: not {bounds}")
    return problems


def row_problems(table: str, row: dict, schema=None) -> list[str]:
    """What table_problems would say of one row (a dict) of the store's ``table``, each value
    named. With ``schema`` (the table's pyarrow schema, iostudy.store.store.TABLES) each value
    must also be of its column's kind: an int (not a bool) for an integer, an int or a float
    for a float, text that is UTF-8 for a string; a row of values from JSON may hold anything
    anywhere. Without, a value is judged as the kind it is (the rows ingest's log workers
    build, which hold no unsigned column)."""
    stored = row.keys() if schema is None else schema.names  # a key of no column is not stored
    problems = []
    for name, value in row.items():
        if value is None or name not in stored:
            continue
        kind = _kind(schema.field(name).type) if schema is not None else _kind_of(value)
        if problem := _value_problem(table, name, kind, value):
            problems.append(problem)
    return problems


def shown(value) -> str:
    """A value as a problem names it: its repr, cut short."""
    text = repr(value)
    return text if len(text) <= SHOWN_CHARS else f"{text[: SHOWN_CHARS - 3]}..."


def _kind(arrow_type) -> str:
    for kind, (*_, test) in KINDS.items():
        if getattr(pa.types, test)(arrow_type):
            return kind
    raise TypeError(f"no kind of value for the store's column type {arrow_type}")


def _kind_of(value) -> str:
    """The kind a value is, as the first of KINDS whose types it is of (a bool is no int)."""
    for kind, (types, *_) in KINDS.items():
        if isinstance(value, types) and isinstance(value, bool) == (kind == "bool"):
            return kind
    raise TypeError(f"{value!r}: not a value of a store's column")


def _value_problem(table: str, name: str, kind: str, value) -> str | None:
    types, words, _ = KINDS[kind]
    if isinstance(value, bool) != (kind == "bool") or not isinstance(value, types):
        return f"{name} = {shown(value)}: not {words}"
    if kind == "str":
        try:
            value.encode()
        except UnicodeEncodeError:  # a lone surrogate (JSON's "\ud800"): no UTF-8
            return f"{name} = {shown(value)}: not UTF-8 text"
    if kind not in ("int", "uint", "float"):
        return None
    low, high, bounds = _bounds(table, name, kind)
    number = _as_float(value) if kind == "float" else value
    if not (low <= number < high and (kind != "float" or math.isfinite(number))):
        return f"{name} = {shown(value)}: not {bounds}"
    return None


def _as_float(value: int | float) -> float:
    """value as a float column holds it: an int too large for a float is infinite."""
    try:
        return float(value)
    except OverflowError:
        return math.inf
