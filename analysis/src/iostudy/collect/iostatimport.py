"""An iostat-mon DIR's records into the store's ``iostat`` table as
``STORE/iostat/iostat-<name>.parquet`` (name: --name, else the host the records name; importing a
DIR again replaces its part; ``iostudy iostat-mon import``: :mod:`iostudy.cli.iostat_mon`). See
:func:`rows` for the columns.

Apart from the monitor: it runs where the store is, on records the monitor wrote elsewhere,
and reads them whatever a crash left (a line cut short, a record written twice)."""

from __future__ import annotations

import gzip
import re
from collections import Counter
from datetime import datetime, timedelta
from pathlib import Path

from iostudy.collect.iostatdays import day_files
from iostudy.collect.iostatjson import parse_time
from iostudy.core import jsonlimits
from iostudy.core.errors import BadInput
from iostudy.core.progress import QUIET, Progress
from iostudy.logs.storerule import row_problems
from iostudy.store import imports
from iostudy.store import store as store_mod

TABLE = "iostat"
RECORD_TYPES = ("io", "gap", "start", "stop")


class IostatImportError(BadInput):
    """DIRs that cannot be imported: missing, or two of them one part."""


def read_records(folder: Path) -> tuple[list[dict], list[str]]:
    """Every record of a DIR's day files and the problems (file:line: why) of the lines that
    could not be read (not JSON within iostudy.core.jsonlimits' limits, or no record of the
    monitor's); a damaged .gz keeps the lines before the damage."""
    records, problems = [], []
    for path in day_files(folder):
        opener = gzip.open if path.name.endswith(".gz") else open
        number = 0
        try:
            with opener(path, "rb") as f:
                for number, line in jsonlimits.numbered_lines(f):
                    try:
                        rec = jsonlimits.parse_line(line)
                    except ValueError as exc:
                        problems.append(f"{path}:{number}: not a JSON record: {exc}")
                        continue
                    if problem := _record_problem(rec):
                        problems.append(f"{path}:{number}: {problem}")
                        continue
                    records.append(rec)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            problems.append(f"{path}: unreadable after line {number}: {exc}")
    return records, problems


# an io record's values, as the iostat table's columns of the same names hold them
IO_VALUES = (
    "device",
    "seconds",
    "read_bytes",
    "write_bytes",
    "read_iops",
    "write_iops",
    "util_pct",
    "read_await_ms",
    "write_await_ms",
    "queue",
)


def _record_problem(rec) -> str | None:
    """Why a parsed line is no record of the monitor's: not one of its types, or an io
    record whose values the store's rule refuses (iostudy.logs.plausibility: types, finite
    numbers, bounds; one rule with ingest and import)."""
    if not isinstance(rec, dict) or rec.get("type") not in RECORD_TYPES:
        return "not an iostat-mon record"
    if rec["type"] != "io":
        return None
    values = {k: rec.get(k) for k in IO_VALUES}
    if problems := row_problems(TABLE, values, store_mod.TABLES[TABLE]):
        return f"not an iostat-mon record: {'; '.join(problems)}"
    return None


def _ts(text) -> datetime | None:
    ts = parse_time(text)
    return ts.replace(tzinfo=None) if ts else None


def rows(records: list[dict], source: str, host: str | None = None) -> list[dict]:
    """The ``iostat`` table's rows of records (host overrides theirs). Columns: host, device,
    kind (io, gap, start, stop), start and end (UTC; io: the interval, end - seconds to end;
    gap: the span; start: both the monitor's start; stop: since the last recorded interval's
    end to the stop), seconds (end - start), read_bytes, write_bytes, read_iops, write_iops,
    util_pct, read_await_ms, write_await_ms, queue (io rows), reason (gap, stop; start: the
    interval and iostat version), source (the DIR's name). A record repeated (a crash between
    compressing a day and removing its .jsonl) is kept once."""
    out, keys = [], set()
    for r in records:
        kind = r["type"]
        h = host or r.get("host")
        if kind == "io":
            end, seconds = _ts(r.get("time")), r.get("seconds")
            if end is None or not isinstance(seconds, int | float):
                continue
            start = end - timedelta(seconds=seconds)
            extra = {
                k: r.get(k)
                for k in (
                    "device",
                    "read_bytes",
                    "write_bytes",
                    "read_iops",
                    "write_iops",
                    "util_pct",
                    "read_await_ms",
                    "write_await_ms",
                    "queue",
                )
            }
        elif kind == "gap":
            start, end = _ts(r.get("start")), _ts(r.get("end"))
            extra = {"reason": r.get("reason")}
        elif kind == "start":
            start = end = _ts(r.get("time"))
            extra = {"reason": f"interval {r.get('interval_s')} s, {r.get('iostat')}"}
        else:  # stop
            end = _ts(r.get("time"))
            start = _ts(r.get("since")) or end
            extra = {"reason": r.get("reason")}
        if start is None or end is None:
            continue
        key = (h, kind, extra.get("device"), end)
        if key in keys:
            continue
        keys.add(key)
        out.append(
            {
                "host": h,
                "kind": kind,
                "start": start,
                "end": end,
                "seconds": (end - start).total_seconds(),
                "source": source,
                **extra,
            }
        )
    return out


def part_name(name: str) -> str:
    """The Parquet part (without .parquet) of an import named name: ``iostat-`` and the name
    with anything but [A-Za-z0-9._-] made "_" (the prefix keeps it apart from ingest's empty
    per-run parts)."""
    return "iostat-" + re.sub(r"[^A-Za-z0-9._-]", "_", name)


def read_dirs(dirs, host=None, name=None, bar=None) -> list[tuple]:
    """(part, rows, problems, folder) of each iostat-mon DIR (:func:`read_records`, :func:`rows`);
    the part is named after ``name``, else ``host``, else the one host its records name, else
    the folder. bar: where the folders read are counted (add_task, advance of a
    rich.progress.Progress the caller shows), or None."""
    if name and len(dirs) > 1:
        raise IostatImportError("--name names one DIR's part; give one DIR to use it")
    for d in dirs:
        if not Path(d).is_dir():
            raise IostatImportError(f"{d}: no such directory")
    inputs = []
    task = bar.add_task("reading iostat-mon records", total=len(dirs)) if bar else None
    for d in dirs:
        records, problems = read_records(Path(d))
        hosts = Counter(r.get("host") for r in records if r.get("host"))
        label = name or host or (hosts.most_common(1)[0][0] if len(hosts) == 1 else None)
        label = label or Path(d).resolve().name
        inputs.append((part_name(label), rows(records, Path(d).name, host), problems, d))
        if bar:
            bar.advance(task)
    return inputs


def import_inputs(store_root, inputs: list[tuple], progress: Progress = QUIET) -> str:
    """Writes each input of :func:`read_dirs` as its part of the iostat table; returns where
    the rows went. Two inputs of one part (DIRs of the same host) are refused."""
    names = [p for p, *_ in inputs]
    if len(set(names)) < len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        raise IostatImportError(
            f"DIRs with the same host would replace each other's part: "
            f"{', '.join(dup)} (import them one at a time with --name)"
        )
    return imports.import_parts(store_root, TABLE, [(p, r) for p, r, *_ in inputs], progress)
