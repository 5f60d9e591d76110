"""iostat's JSON, read as it comes: :class:`StatsStream` parses ``iostat -o JSON`` output
incrementally, and :func:`entry_records` makes the iostat-mon io records of one of its
statistics entries (the fields are in :mod:`iostudy.collect.iostatmonitor`). Also the records'
time format (:func:`iso`, :func:`parse_time`), which the import reads back.

Apart from the monitor because it is pure: no process, no file; the tests feed it iostat's real
output in chunks of any size."""

from __future__ import annotations

import codecs
import fnmatch
import json
import re
from datetime import datetime, timezone

# iostat's output that is not JSON yet after this much is not iostat's JSON.
MAX_PENDING = 16 << 20


class StreamError(Exception):
    """iostat printed something that is not its JSON report."""


def iso(ts: datetime) -> str:
    """A UTC time as the records write it: 2026-01-23T10:00:00Z (milliseconds when it has
    them)."""
    ts = ts.astimezone(timezone.utc)
    spec = "milliseconds" if ts.microsecond else "seconds"
    return ts.replace(tzinfo=None).isoformat(timespec=spec) + "Z"


def parse_time(text) -> datetime | None:
    """An aware UTC datetime from an ISO 8601 time (with Z or an offset; naive is UTC); None
    when it is not one."""
    if not isinstance(text, str):
        return None
    try:
        ts = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts.replace(tzinfo=timezone.utc) if ts.tzinfo is None else ts.astimezone(timezone.utc)


class StatsStream:
    """Incremental parser of ``iostat -o JSON`` output: :meth:`feed` takes bytes as they come
    and returns the ``statistics`` entries completed by them (dicts, e.g. {"timestamp": ...,
    "disk": [{"disk_device": "sda", "r/s": ...}, ...]}).

    iostat writes ``{"sysstat": {"hosts": [{"nodename": ..., "statistics": [`` at once, then an
    entry per interval (separated by commas) and ``]}]}}`` when it ends. The header's fields
    (nodename, ...) are in :attr:`header` once the statistics list has begun."""

    def __init__(self):
        self._decode = codecs.getincrementaldecoder("utf-8")(errors="replace").decode
        self._json = json.JSONDecoder()
        self.buf = ""
        self.pos = 0
        self.started = False  # the statistics list has begun
        self.done = False  # and ended
        self.header: dict = {}

    def feed(self, data: bytes) -> list[dict]:
        text = self._decode(data)
        self.buf += text
        if not self.started:
            if not self._start():
                return []
        elif "}" not in text and "]" not in text:
            return []  # an entry completes only with a closing brace: no need to try
        out = self._entries()
        # keep the buffer small: what is parsed is dropped
        self.buf, self.pos = self.buf[self.pos :], 0
        return out

    def _start(self) -> bool:
        """Finds where the statistics list begins and reads the header before it; False while
        the buffer does not hold it yet."""
        m = re.search(r'"statistics"\s*:\s*\[', self.buf)
        if not m:
            if len(self.buf) > MAX_PENDING:
                raise StreamError(f"no statistics list in {len(self.buf)} characters")
            return False
        self.header = dict(re.findall(r'"([A-Za-z-]+)"\s*:\s*"([^"]*)"', self.buf[: m.start()]))
        self.started, self.pos = True, m.end()
        return True

    def _entries(self) -> list[dict]:
        """The entries complete in the buffer from pos on; pos moves past them."""
        out: list[dict] = []
        while not self.done:
            while self.pos < len(self.buf) and self.buf[self.pos] in " \t\r\n,":
                self.pos += 1
            if self.pos >= len(self.buf):
                break
            if self.buf[self.pos] == "]":
                self.done = True
                break
            if self.buf[self.pos] != "{":
                raise StreamError(f"unexpected {self.buf[self.pos : self.pos + 40]!r}")
            try:
                entry, end = self._json.raw_decode(self.buf, self.pos)
            except json.JSONDecodeError:
                if len(self.buf) - self.pos > MAX_PENDING:
                    raise StreamError("an entry longer than 16 MiB") from None
                break  # not complete yet
            if isinstance(entry, dict):
                out.append(entry)
            self.pos = end
        return out


def _number(d: dict, *keys) -> float | None:
    for k in keys:
        v = d.get(k)
        if isinstance(v, int | float):
            return float(v)
    return None


def device_record(d: dict, seconds: float) -> dict | None:
    """The compact io record's measures from one device of an entry (iostat -x -k, sysstat 11
    and 12 key names); None when it has no device name."""
    name = d.get("disk_device") or d.get("device")
    if not isinstance(name, str) or not name:
        return None
    kib = {}
    for op in ("r", "w"):
        v = _number(d, f"{op}kB/s")
        if v is None and (mb := _number(d, f"{op}MB/s")) is not None:
            v = mb * 1024
        if v is None and (sec := _number(d, f"{op}sec/s")) is not None:
            v = sec / 2  # 512-byte sectors
        kib[op] = v
    return {
        "device": name,
        "seconds": seconds,
        "read_bytes": None if kib["r"] is None else round(kib["r"] * 1024 * seconds),
        "write_bytes": None if kib["w"] is None else round(kib["w"] * 1024 * seconds),
        "read_iops": _number(d, "r/s"),
        "write_iops": _number(d, "w/s"),
        "util_pct": _number(d, "util", "%util"),
        "read_await_ms": _number(d, "r_await", "await"),
        "write_await_ms": _number(d, "w_await", "await"),
        "queue": _number(d, "aqu-sz", "avgqu-sz"),
    }


def selected(name: str, include=(), exclude=()) -> bool:
    """Whether a device is kept: it matches an include pattern (or there is none) and no
    exclude pattern (shell-style, case-sensitive)."""
    if include and not any(fnmatch.fnmatchcase(name, p) for p in include):
        return False
    return not any(fnmatch.fnmatchcase(name, p) for p in exclude)


def entry_records(entry: dict, host: str, seconds: float, include=(), exclude=(), now=None):
    """``(time, records, devices seen)`` of one statistics entry: time is the entry's
    timestamp (else now), records the io records of the selected devices."""
    when = parse_time(entry.get("timestamp")) or now or datetime.now(timezone.utc)
    records, seen = [], []
    for d in entry.get("disk") or []:
        if not isinstance(d, dict):
            continue
        rec = device_record(d, seconds)
        if rec is None:
            continue
        seen.append(rec["device"])
        if selected(rec["device"], include, exclude):
            records.append({"type": "io", "time": iso(when), "host": host, **rec})
    return when, records, seen
