"""iostat-mon: block-device statistics of storage servers (seed 000, II-A and IV).

``iostudy iostat-mon --out DIR [--interval 60]`` runs sysstat's ``iostat -d -x -k -t -o JSON -y
INTERVAL`` and keeps, per device and interval, a compact record of what it reports. iostat prints
one JSON document that grows by one ``statistics`` entry per interval; :class:`StatsStream` parses
the entries as they complete. ``-y`` drops the first report (the averages since boot), so every
record covers one interval.

Output, one JSON object per line, UTC times (ISO 8601, ``Z``):

    DIR/<YYYY-MM-DD>.jsonl      the day being written (UTC day of the record's time)
    DIR/<YYYY-MM-DD>.jsonl.gz   a past day: compressed when the next day's first record comes,
                                when the day has been over for an interval, and on start
    DIR/iostat-mon.json         state, rewritten every interval: the monitor's and iostat's
                                process ids, host, interval, counts, the last interval's end
    DIR/.iostat-mon.lock        one monitor per DIR

Records (``type``):

    io     time (the interval's end, iostat's own timestamp), host, device, seconds (the
           interval), read_bytes, write_bytes (rkB/s and wkB/s x 1024 x seconds, iostat's kB
           being 1024 bytes), read_iops, write_iops (r/s, w/s), util_pct (%util),
           read_await_ms, write_await_ms (r_await, w_await: mean time per request, queue
           included), queue (aqu-sz: mean requests in flight)
    gap    host, start, end, reason: a span without records while the monitor ran (iostat died,
           hung, or could not be started; start is the end of the last recorded interval, end
           when the new iostat started: its first interval begins there)
    start  time, host, interval_s, iostat (its version line), pid, include, exclude
    stop   time, host, since (the end of the last recorded interval: what the stop lost), reason

Every interval's records go out in one write followed by fsync, so a crash of the machine loses
at most the interval in progress; a line cut short by one is skipped on import. SIGTERM or
SIGINT: iostat is stopped, the complete intervals it printed are written, a stop record follows,
exit status 0. iostat runs in a session of its own (a terminal's Ctrl-C reaches the monitor only)
and dies with the monitor (PR_SET_PDEATHSIG). When iostat exits, is killed, prints nothing for
three intervals (hung) or prints what is not its JSON, it is restarted after 1 s, 2 s, 4 s ...
(at most --max-backoff), and a gap record says why; the wait goes back to 1 s once an iostat
has reported.

Devices: ``--include GLOB`` keeps only matching devices (default all), ``--exclude GLOB`` drops
matching ones (the servers' own OS disks); shell-style patterns on iostat's device names
(``--dm-names``: device-mapper names, e.g. multipath aliases, iostat -N).

``iostudy iostat-mon import DIR... --store STORE`` writes a DIR's records into the store's
``iostat`` table as ``STORE/iostat/iostat-<name>.parquet`` (name: --name, else the host the
records name; importing a DIR again replaces its part). See :func:`rows` for the columns.

The analysis (pure functions of the ``iostat`` table): :func:`throughput` (seed 000 Fig. 6),
:func:`daily_totals`, :func:`peaks`, :func:`burstiness` and :func:`share_below` (Fig. 7),
:func:`gaps`, :func:`summary`; :func:`add_section` puts them in the report.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import ctypes
import fcntl
import fnmatch
import gzip
import json
import os
import re
import selectors
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections import Counter
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from pathlib import Path

import numpy as np
import pandas as pd
from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.numfmt import MIB
from iostudy.core.paths import add_store_option
from iostudy.store import store as store_mod

TABLE = "iostat"
SCHEMA = store_mod.TABLES[TABLE]
DEFAULT_INTERVAL = 60
DEFAULT_MAX_BACKOFF = 60.0
STATE = "iostat-mon.json"
LOCK = ".iostat-mon.lock"
DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.jsonl(\.gz)?$")
# iostat's output that is not JSON yet after this much is not iostat's JSON.
MAX_PENDING = 16 << 20
# The report's section (report.render's add()) and the heading it goes under.
SECTION = "iostat"


class MonitorError(Exception):
    """The monitor cannot run at all (DIR taken by another monitor, no iostat); the message
    names the path or the command."""


class StreamError(Exception):
    """iostat printed something that is not its JSON report."""


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


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


# -- iostat's JSON stream ------------------------------------------------------------------------


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

    def feed(self, data: bytes) -> list[dict]:  # noqa: C901
        text = self._decode(data)
        self.buf += text
        out: list[dict] = []
        if not self.started:
            m = re.search(r'"statistics"\s*:\s*\[', self.buf)
            if not m:
                if len(self.buf) > MAX_PENDING:
                    raise StreamError(f"no statistics list in {len(self.buf)} characters")
                return out
            self.header = dict(re.findall(r'"([A-Za-z-]+)"\s*:\s*"([^"]*)"', self.buf[: m.start()]))
            self.started, self.pos = True, m.end()
        elif "}" not in text and "]" not in text:
            return out  # an entry completes only with a closing brace: no need to try
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
        # keep the buffer small: what is parsed is dropped
        self.buf, self.pos = self.buf[self.pos :], 0
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
    when = parse_time(entry.get("timestamp")) or now or _utcnow()
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


# -- the day files -------------------------------------------------------------------------------


def _fsync_dir(path: Path) -> None:
    fd = os.open(path, os.O_RDONLY | os.O_DIRECTORY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def compress_day(out: Path, day: str) -> Path:
    """DIR/<day>.jsonl -> DIR/<day>.jsonl.gz. A .gz already there (a day written again after it
    was compressed) gets the lines as one more gzip member, which every gzip reader reads on.
    The new file is fsync'd and renamed into place before the .jsonl goes: a crash in between
    leaves both, and import drops the repeated records."""
    src, dst = out / f"{day}.jsonl", out / f"{day}.jsonl.gz"
    tmp = out / f".{day}.jsonl.gz.tmp"
    try:
        with open(tmp, "wb") as f:
            if dst.exists():
                with open(dst, "rb") as old:
                    shutil.copyfileobj(old, f)
            with open(src, "rb") as lines, gzip.GzipFile(fileobj=f, mode="wb", mtime=0) as gz:
                shutil.copyfileobj(lines, gz)
                if lines.tell() and (lines.seek(-1, os.SEEK_END), lines.read(1))[1] != b"\n":
                    gz.write(b"\n")  # a line cut short by a crash stays one bad line
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, dst)
        _fsync_dir(out)
        src.unlink()
        _fsync_dir(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return dst


class DayLog:
    """Appends records to DIR/<UTC day>.jsonl, one write and fsync per call, and compresses a
    day's file when it is over."""

    def __init__(self, out: Path):
        self.out = Path(out)
        self.day: str | None = None
        self.fd: int | None = None

    def write(self, records: list[dict], when: datetime) -> None:
        day = when.astimezone(timezone.utc).date().isoformat()
        if day != self.day:
            self._open(day)
        data = "".join(json.dumps(r, separators=(",", ":")) + "\n" for r in records).encode()
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view) :]
        os.fsync(self.fd)

    def _open(self, day: str) -> None:
        previous = self.day
        self._close()
        if previous and previous < day:
            compress_day(self.out, previous)
        path = self.out / f"{day}.jsonl"
        new = not path.exists()
        self.fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        self.day = day
        if new:
            _fsync_dir(self.out)
        elif os.fstat(self.fd).st_size:
            with open(path, "rb") as f:
                f.seek(-1, os.SEEK_END)
                if f.read(1) != b"\n":  # a line cut short: start the next on a line of its own
                    os.write(self.fd, b"\n")

    def roll(self, now: datetime, grace: float) -> str | None:
        """Compress the open day's file once now is grace seconds past the day's end (a late
        record of the day would reopen it); returns the day compressed."""
        if self.day is None:
            return None
        end = datetime.fromisoformat(self.day).replace(tzinfo=timezone.utc) + timedelta(days=1)
        if now < end + timedelta(seconds=grace):
            return None
        day = self.day
        self._close()
        compress_day(self.out, day)
        return day

    def compress_past(self, today: str) -> list[str]:
        """Compress the .jsonl of every day before today (a monitor that stopped left them)."""
        days = []
        for p in sorted(self.out.glob("*.jsonl")):
            m = DAY_FILE.match(p.name)
            if m and m[1] < today and m[1] != self.day:
                compress_day(self.out, m[1])
                days.append(m[1])
        return days

    def _close(self) -> None:
        if self.fd is not None:
            os.close(self.fd)
        self.fd, self.day = None, None

    def close(self) -> None:
        self._close()


# -- the monitor ---------------------------------------------------------------------------------


def iostat_command(iostat: str, interval: int, dm_names: bool = False) -> list[str]:
    """iostat's command line: devices only (-d), extended statistics (-x) in kB (-k), a
    timestamp per report (-t), JSON (-o JSON), without the since-boot report (-y)."""
    return [
        iostat,
        "-d",
        "-x",
        "-k",
        "-t",
        "-o",
        "JSON",
        "-y",
        *(["-N"] if dm_names else []),
        str(interval),
    ]


def iostat_env() -> dict:
    """iostat's environment: ISO times in UTC, C locale (a decimal point, not a comma), no
    colours; POSIXLY_CORRECT would make it count 512-byte blocks."""
    env = {k: v for k, v in os.environ.items() if k != "POSIXLY_CORRECT"}
    return env | {"LC_ALL": "C", "TZ": "UTC", "S_TIME_FORMAT": "ISO", "S_COLORS": "never"}


def iostat_version(iostat: str) -> str:
    """iostat -V's first line (e.g. "sysstat version 12.6.1"); MonitorError when it does not
    run."""
    try:
        proc = subprocess.run(
            [iostat, "-V"], capture_output=True, text=True, timeout=30, env=iostat_env()
        )
    except FileNotFoundError:
        raise MonitorError(
            f"{iostat}: not found (install sysstat: apt-get install sysstat)"
        ) from None
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise MonitorError(f"{iostat} -V: {exc}") from None
    text = (proc.stdout + proc.stderr).strip()
    if proc.returncode != 0 or "sysstat" not in text:
        raise MonitorError(f"{iostat} -V: not sysstat's iostat: {text[:200]!r}")
    return text.splitlines()[0]


def _die_with_parent():
    """In the iostat child before exec: SIGTERM when the monitor dies (Linux prctl)."""
    with contextlib.suppress(Exception):
        ctypes.CDLL(None, use_errno=True).prctl(1, signal.SIGTERM)  # PR_SET_PDEATHSIG


def _status(pid: int, status: int) -> str:
    if status < 0:
        try:
            name = signal.Signals(-status).name
        except ValueError:
            name = f"signal {-status}"
        return f"iostat (pid {pid}) killed by {name}"
    return f"iostat (pid {pid}) exited with status {status}"


@dataclass
class Options:
    out: Path
    interval: int = DEFAULT_INTERVAL
    host: str | None = None
    include: list[str] = field(default_factory=list)
    exclude: list[str] = field(default_factory=list)
    dm_names: bool = False
    iostat: str = "iostat"
    max_backoff: float = DEFAULT_MAX_BACKOFF


class Monitor:
    """One iostat-mon: :meth:`run` until SIGTERM/SIGINT; see the module docstring."""

    def __init__(self, options: Options, log=None):
        self.o = options
        self.out = Path(options.out)
        self.host = options.host or socket.gethostname()
        self.log = log or (lambda msg: print(f"iostat-mon: {msg}", file=sys.stderr, flush=True))
        self.stop_reason: str | None = None
        self.covered = _utcnow()  # the end of the last recorded interval
        self.intervals = 0
        self.gap_count = 0
        self.restarts = 0
        self.iostat_pid: int | None = None
        self.days = DayLog(self.out)
        self._warned_empty = False
        self._wake_r = self._wake_w = None

    # -- small parts
    def _write(self, records: list[dict], when: datetime) -> None:
        self.days.write(records, when)

    def _state(self) -> None:
        state = {
            "pid": os.getpid(),
            "iostat_pid": self.iostat_pid,
            "host": self.host,
            "interval_s": self.o.interval,
            "restarts": self.restarts,
            "intervals": self.intervals,
            "gaps": self.gap_count,
            "covered": iso(self.covered),  # the end of the last recorded interval
        }
        tmp = self.out / f".{STATE}.tmp"
        tmp.write_text(json.dumps(state) + "\n")
        os.replace(tmp, self.out / STATE)

    def _on_signal(self, signum, _frame):
        if self.stop_reason is None:
            self.stop_reason = signal.Signals(signum).name

    def _gap(self, start: datetime, end: datetime, reason: str) -> None:
        rec = {
            "type": "gap",
            "host": self.host,
            "start": iso(start),
            "end": iso(end),
            "reason": reason,
        }
        self._write([rec], end)
        self.gap_count += 1

    def _sleep(self, seconds: float) -> None:
        """Wait, or less when a stop signal comes (it writes to the wakeup pipe)."""
        sel = selectors.DefaultSelector()
        sel.register(self._wake_r, selectors.EVENT_READ)
        deadline = time.monotonic() + seconds
        try:
            while self.stop_reason is None and (left := deadline - time.monotonic()) > 0:
                for _key, _ in sel.select(min(left, 1.0)):
                    self._drain_wakeup()
                self._roll()
        finally:
            sel.close()

    def _drain_wakeup(self) -> None:
        with contextlib.suppress(BlockingIOError):
            while os.read(self._wake_r, 4096):
                pass

    def _roll(self) -> None:
        day = self.days.roll(_utcnow(), grace=self.o.interval + 10)
        if day:
            self.log(f"{day}: compressed to {self.out / (day + '.jsonl.gz')}")

    def _report(self, entry: dict, seen_all: set) -> None:
        when, records, seen = entry_records(
            entry, self.host, float(self.o.interval), self.o.include, self.o.exclude
        )
        if records:
            self._write(records, when)
        elif not self._warned_empty:
            self._warned_empty = True
            self.log(
                f"no device selected by the patterns; iostat reports: {', '.join(seen) or 'none'}"
            )
        seen_all.update(seen)
        self.covered = max(self.covered, when)
        self.intervals += 1
        self._state()

    # -- one iostat
    def _run_iostat(self):  # noqa: C901
        """Run one iostat until it ends, hangs or a stop signal comes; returns (reason it
        ended or None when stopped, reports it made, whether it printed its JSON header,
        its stderr)."""
        cmd = iostat_command(self.o.iostat, self.o.interval, self.o.dm_names)
        try:
            proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=iostat_env(),
                start_new_session=True,
                preexec_fn=_die_with_parent,
            )
        except OSError as exc:
            return f"cannot start {self.o.iostat}: {exc.strerror or exc}", 0, False, ""
        self.iostat_pid = proc.pid
        self._state()
        self.log(f"iostat started (pid {proc.pid}): {' '.join(cmd)}")
        stream, reports, err = StatsStream(), 0, bytearray()
        seen: set[str] = set()
        sel = selectors.DefaultSelector()
        out_fd, err_fd = proc.stdout.fileno(), proc.stderr.fileno()
        sel.register(out_fd, selectors.EVENT_READ, "out")
        sel.register(err_fd, selectors.EVENT_READ, "err")
        sel.register(self._wake_r, selectors.EVENT_READ, "wake")
        hang_after = 3 * self.o.interval + 5
        last = time.monotonic()
        reason, stopping, stop_deadline = None, False, None
        try:
            while True:
                if self.stop_reason and not stopping:
                    # What iostat has printed is kept; the interval in progress is lost.
                    stopping, stop_deadline = True, time.monotonic() + 5
                    with contextlib.suppress(ProcessLookupError):
                        proc.terminate()
                if stopping and time.monotonic() > stop_deadline:
                    proc.kill()
                    break
                eof = False
                for key, _ in sel.select(1.0):
                    if key.data == "wake":
                        self._drain_wakeup()
                        continue
                    data = os.read(key.fd, 65536)
                    if key.data == "err":
                        if not data:
                            sel.unregister(err_fd)
                        err += data
                        del err[:-4096]
                    elif not data:
                        eof = True
                    else:
                        try:
                            entries = stream.feed(data)
                        except StreamError as exc:
                            reason = f"unreadable output from iostat (pid {proc.pid}): {exc}"
                            proc.kill()
                            eof = True
                            break
                        for entry in entries:
                            self._report(entry, seen)
                            reports += 1
                            last = time.monotonic()
                if eof:
                    break
                if not stopping and time.monotonic() - last > hang_after:
                    reason = f"no report from iostat (pid {proc.pid}) for {hang_after} s: killed"
                    proc.kill()
                    stopping = True
                    stop_deadline = time.monotonic() + 5
                self._roll()
            status = proc.wait()
            # stderr the rest of the way (iostat is gone: this ends)
            with contextlib.suppress(OSError):
                while chunk := os.read(err_fd, 65536):
                    err += chunk
        finally:
            sel.close()
            proc.stdout.close()
            proc.stderr.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            self.iostat_pid = None
        if self.stop_reason and reason is None:
            return None, reports, stream.started, err.decode(errors="replace")
        reason = reason or _status(proc.pid, status)
        message = err.decode(errors="replace").strip().splitlines()
        if message:
            reason += f": {message[-1][:200]}"
        return reason, reports, stream.started, err.decode(errors="replace")

    # -- the whole run
    def run(self) -> int:
        """Monitor until SIGTERM or SIGINT; 0 then. MonitorError when it cannot start."""
        if self.o.interval < 1:
            raise MonitorError(f"--interval {self.o.interval}: iostat needs whole seconds >= 1")
        # The handlers first: a stop signal from now on is a clean stop.
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        old_wakeup = signal.set_wakeup_fd(self._wake_w)
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            return self._locked()
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            signal.set_wakeup_fd(old_wakeup)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _locked(self) -> int:
        try:
            self.out.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise MonitorError(f"{self.out}: cannot create: {exc.strerror or exc}") from None
        lock = open(self.out / LOCK, "a+")
        try:
            try:
                fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                other = "?"
                with contextlib.suppress(OSError, ValueError):
                    other = json.loads((self.out / STATE).read_text()).get("pid", "?")
                raise MonitorError(
                    f"{self.out}: another iostat-mon (pid {other}) writes here"
                ) from None
            version = iostat_version(self.o.iostat)
            return self._run(version)
        finally:
            lock.close()

    def _run(self, version: str) -> int:
        for day in self.days.compress_past(_utcnow().date().isoformat()):
            self.log(f"{day}: compressed to {self.out / (day + '.jsonl.gz')}")
        try:
            start = _utcnow()
            self.covered = start
            self._write(
                [
                    {
                        "type": "start",
                        "time": iso(start),
                        "host": self.host,
                        "interval_s": self.o.interval,
                        "iostat": version,
                        "pid": os.getpid(),
                        "include": self.o.include,
                        "exclude": self.o.exclude,
                    }
                ],
                start,
            )
            self._state()
            self.log(f"host {self.host}, every {self.o.interval} s ({version}) -> {self.out}")
            backoff, first = 1.0, True
            while self.stop_reason is None:
                reason, reports, header, err = self._run_iostat()
                if reason is None:  # stopped
                    break
                if first and not header and not reports and err.strip():
                    # iostat refuses our command line (e.g. a sysstat without -o JSON): no
                    # restart will do better.
                    raise MonitorError(
                        f"{' '.join(iostat_command(self.o.iostat, self.o.interval))}: "
                        f"{err.strip()[-500:]}"
                    )
                first = False
                if reports:
                    backoff = 1.0
                self.log(f"{reason}; restarting in {backoff:g} s")
                self._sleep(backoff)
                now = _utcnow()
                if self.stop_reason:
                    self._gap(self.covered, now, f"{reason}; not restarted: {self.stop_reason}")
                    break
                self._gap(self.covered, now, f"{reason}; restarted after {backoff:g} s")
                self.covered = now
                self.restarts += 1
                backoff = min(backoff * 2, self.o.max_backoff)
            stopped = _utcnow()
            self._write(
                [
                    {
                        "type": "stop",
                        "time": iso(stopped),
                        "host": self.host,
                        "since": iso(self.covered),
                        "reason": self.stop_reason,
                    }
                ],
                stopped,
            )
            self._roll()
            self._state()
            self.log(
                f"stopped ({self.stop_reason}): {self.intervals} intervals, {self.gap_count} "
                f"gaps, {self.restarts} restarts; records in {self.out}"
            )
            return 0
        finally:
            self.days.close()


# -- import into the store -----------------------------------------------------------------------


def day_files(folder: Path) -> list[Path]:
    """A DIR's day files, oldest first (a day's .gz before its .jsonl)."""
    files = [p for p in Path(folder).iterdir() if DAY_FILE.match(p.name)]
    return sorted(files, key=lambda p: (DAY_FILE.match(p.name)[1], not p.name.endswith(".gz")))


def read_records(folder: Path) -> tuple[list[dict], list[str]]:
    """Every record of a DIR's day files and the problems (file:line: why) of the lines that
    could not be read; a damaged .gz keeps the lines before the damage."""
    records, problems = [], []
    for path in day_files(folder):
        opener = gzip.open if path.name.endswith(".gz") else open
        number = 0
        try:
            with opener(path, "rt", encoding="utf-8", errors="replace") as f:
                for number, line in enumerate(f, 1):
                    if not line.strip():
                        continue
                    try:
                        rec = json.loads(line)
                    except ValueError:
                        problems.append(f"{path}:{number}: not a JSON record (cut short?)")
                        continue
                    if not isinstance(rec, dict) or rec.get("type") not in (
                        "io",
                        "gap",
                        "start",
                        "stop",
                    ):
                        problems.append(f"{path}:{number}: not an iostat-mon record")
                        continue
                    records.append(rec)
        except (OSError, EOFError, gzip.BadGzipFile) as exc:
            problems.append(f"{path}: unreadable after line {number}: {exc}")
    return records, problems


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


def import_dirs(dirs, store_root, host=None, name=None, console=None) -> int:
    """``iostudy iostat-mon import``; returns the exit status."""
    console = console or Console(stderr=True)
    if name and len(dirs) > 1:
        print(
            "iostudy: error: --name names one DIR's part; give one DIR to use it", file=sys.stderr
        )
        return EXIT_BAD_INPUT
    for d in dirs:
        if not Path(d).is_dir():
            print(f"iostudy: error: {d}: no such directory", file=sys.stderr)
            return EXIT_BAD_INPUT
    inputs = []  # (part, rows, problems, folder)
    progress = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    )
    with progress:
        task = progress.add_task("reading iostat-mon records", total=len(dirs))
        for d in dirs:
            records, problems = read_records(Path(d))
            hosts = Counter(r.get("host") for r in records if r.get("host"))
            label = name or host or (hosts.most_common(1)[0][0] if len(hosts) == 1 else None)
            label = label or Path(d).resolve().name
            inputs.append((part_name(label), rows(records, Path(d).name, host), problems, d))
            progress.advance(task)
    names = [p for p, *_ in inputs]
    if len(set(names)) < len(names):
        dup = sorted({n for n in names if names.count(n) > 1})
        print(
            f"iostudy: error: DIRs with the same host would replace each other's part: "
            f"{', '.join(dup)} (import them one at a time with --name)",
            file=sys.stderr,
        )
        return EXIT_BAD_INPUT
    where = store_mod.import_parts(store_root, TABLE, [(p, r) for p, r, *_ in inputs], console)
    for *_, problems, _d in inputs:
        for p in problems:
            console.print(f"skipped: {p}", highlight=False, markup=False, soft_wrap=True)
    kinds = Counter(r["kind"] for _, rs, *_ in inputs for r in rs)
    n_bad = sum(len(p) for *_, p, _d in inputs)
    print(
        f"iostat-mon import: {kinds['io']} device intervals, {kinds['gap']} gaps into {where}; "
        f"{n_bad} lines skipped"
    )
    return 0


# -- analysis (pure functions of the iostat table) -----------------------------------------------

THROUGHPUT_COLUMNS = ["time", "read_mib_s", "write_mib_s", "total_mib_s", "hosts", "bucket_s"]
GAP_COLUMNS = ["host", "start", "end", "seconds", "reason", "recorded"]


def io_rows(iostat: pd.DataFrame) -> pd.DataFrame:
    """The table's device intervals (kind io) with bytes and times usable."""
    io = iostat[iostat["kind"] == "io"].dropna(subset=["end", "seconds"])
    io = io[io["seconds"] > 0].copy()
    io["end"] = pd.to_datetime(io["end"])
    for c in ("read_bytes", "write_bytes"):
        io[c] = pd.to_numeric(io[c], errors="coerce").fillna(0).astype("float64")
    return io


def default_bucket(io: pd.DataFrame) -> int:
    """One minute, or the monitor's interval when it is longer (seed 000: 60 s)."""
    return int(max(60, round(float(io["seconds"].median())))) if len(io) else 60


def throughput(iostat: pd.DataFrame, bucket_s: int | None = None) -> pd.DataFrame:
    """Aggregate throughput over time (seed 000 Fig. 6): per bucket of bucket_s seconds
    (default :func:`default_bucket`) with at least one record, the read, write and total MiB/s
    of all hosts and devices. Each host's rate is its bytes over the seconds its intervals in
    the bucket cover (an interval belongs to the bucket of its middle), so a bucket that a host
    covers in part is not diluted; the hosts' rates add up. Only recorded buckets are rows."""
    io = io_rows(iostat)
    if io.empty:
        return pd.DataFrame(columns=THROUGHPUT_COLUMNS)
    bucket_s = bucket_s or default_bucket(io)
    mid = io["end"] - pd.to_timedelta(io["seconds"] / 2, unit="s")
    io["time"] = mid.dt.floor(f"{bucket_s}s")
    per_interval = io.groupby(["host", "time", "end"], as_index=False).agg(
        read_bytes=("read_bytes", "sum"),
        write_bytes=("write_bytes", "sum"),
        seconds=("seconds", "first"),
    )
    per_host = per_interval.groupby(["host", "time"], as_index=False)[
        ["read_bytes", "write_bytes", "seconds"]
    ].sum()
    per_host["read_mib_s"] = per_host["read_bytes"] / per_host["seconds"] / MIB
    per_host["write_mib_s"] = per_host["write_bytes"] / per_host["seconds"] / MIB
    series = per_host.groupby("time", as_index=False).agg(
        read_mib_s=("read_mib_s", "sum"),
        write_mib_s=("write_mib_s", "sum"),
        hosts=("host", "nunique"),
    )
    series["total_mib_s"] = series["read_mib_s"] + series["write_mib_s"]
    series["bucket_s"] = bucket_s
    return series[THROUGHPUT_COLUMNS].sort_values("time", ignore_index=True)


def daily_totals(iostat: pd.DataFrame) -> pd.DataFrame:
    """Bytes read and written per UTC day (an interval counts on the day it ends), in TiB too,
    the read share, and recorded_pct: the share of the day's host-seconds (every host of the
    table) that records cover."""
    cols = ["day", "read_bytes", "write_bytes", "read_tib", "write_tib", "read_pct", "recorded_pct"]
    io = io_rows(iostat)
    if io.empty:
        return pd.DataFrame(columns=cols)
    io["day"] = io["end"].dt.floor("D")
    hosts = io["host"].nunique()
    covered = io.drop_duplicates(["host", "end"]).groupby("day")["seconds"].sum()
    days = io.groupby("day")[["read_bytes", "write_bytes"]].sum()
    days["read_tib"] = days["read_bytes"] / 2**40
    days["write_tib"] = days["write_bytes"] / 2**40
    moved = days["read_bytes"] + days["write_bytes"]
    days["read_pct"] = (100 * days["read_bytes"] / moved).where(moved > 0)
    days["recorded_pct"] = 100 * covered / (hosts * 86400)
    for c in ("read_bytes", "write_bytes"):
        days[c] = days[c].round().astype("int64")
    days = days.reset_index()
    days["day"] = days["day"].dt.date.astype(str)
    return days[cols]


def peaks(series: pd.DataFrame) -> pd.DataFrame:
    """The peak read, write and total rate over one bucket (one minute by default) of the
    :func:`throughput` series, in MiB/s and GiB/s, and when (the bucket's start, UTC)."""
    cols = ["direction", "peak_mib_s", "peak_gib_s", "at", "bucket_s"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for d in ("read", "write", "total"):
        i = series[f"{d}_mib_s"].idxmax()
        v = float(series.at[i, f"{d}_mib_s"])
        out.append((d, v, v / 1024, series.at[i, "time"], int(series.at[i, "bucket_s"])))
    return pd.DataFrame(out, columns=cols)


def share_below(series: pd.DataFrame, fraction: float = 1 / 3) -> float | None:
    """The share (0..1) of recorded buckets whose total throughput is below fraction of the
    peak total (seed 000: 98% of the time below 33% of peak)."""
    if series.empty:
        return None
    total = series["total_mib_s"]
    return float((total < fraction * total.max()).mean())


def burstiness(series: pd.DataFrame, points: int = 1001) -> pd.DataFrame:
    """The CDF of total throughput over the recorded buckets (seed 000 Fig. 7) at points evenly
    spaced fractions: fraction of time, total MiB/s at or below which that fraction is, and
    that as % of the peak."""
    cols = ["fraction", "total_mib_s", "pct_of_peak"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    total = np.sort(series["total_mib_s"].to_numpy(dtype=float))
    fraction = np.linspace(0, 1, points)
    values = np.quantile(total, fraction, method="inverted_cdf")
    peak = total[-1]
    pct = 100 * values / peak if peak > 0 else np.full_like(values, np.nan)
    return pd.DataFrame({"fraction": fraction, "total_mib_s": values, "pct_of_peak": pct})


def gaps(iostat: pd.DataFrame) -> pd.DataFrame:
    """The gaps in the record, per host: every span between two recorded intervals longer than
    the tolerance (half an interval, at least 2 s: iostat's timestamps have whole seconds),
    with the reason of the gap records of the monitor that fall in it, else "monitor stopped:
    <signal>" when a stop record does, else "no record (monitor not running)"; and the gap
    records that match no such span (e.g. a restart shorter than the tolerance, or one at the
    end). recorded: whether the monitor wrote a gap record for it."""
    if iostat.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    t = iostat.copy()
    t["start"], t["end"] = pd.to_datetime(t["start"]), pd.to_datetime(t["end"])
    out = []
    for host, mine in t.groupby("host", dropna=False):
        io = mine[mine["kind"] == "io"].drop_duplicates("end").sort_values("end")
        marks = mine[mine["kind"] == "gap"]
        stops = mine[mine["kind"] == "stop"]
        used = set()
        ends, starts = io["end"].to_list(), io["start"].to_list()
        secs = io["seconds"].to_list()
        for i in range(1, len(ends)):
            tol = timedelta(seconds=max(2.0, 0.5 * secs[i]))
            a, b = ends[i - 1], starts[i]
            if b - a <= tol:
                continue
            hit = marks[(marks["end"] >= a - tol) & (marks["start"] <= b + tol)]
            if len(hit):
                used.update(hit.index)
                reason, recorded = "; ".join(hit["reason"].fillna("").astype(str)), True
            else:
                st = stops[(stops["end"] >= a - tol) & (stops["end"] <= b + tol)]
                reason = (
                    f"monitor stopped: {st['reason'].iloc[0]}"
                    if len(st)
                    else "no record (monitor not running)"
                )
                recorded = False
            out.append((host, a, b, (b - a).total_seconds(), reason, recorded))
        for idx, g in marks.iterrows():
            if idx not in used:
                out.append(
                    (
                        host,
                        g["start"],
                        g["end"],
                        (g["end"] - g["start"]).total_seconds(),
                        g["reason"],
                        True,
                    )
                )
    frame = pd.DataFrame(out, columns=GAP_COLUMNS)
    return frame.sort_values(["start", "host"], ignore_index=True)


def summary(iostat: pd.DataFrame, series: pd.DataFrame | None = None) -> pd.DataFrame:
    """Seed 000 IV's numbers: totals and means per day of bytes read and written, the read
    share, peak one-bucket read, write and total rates, the mean total rate, the share of time
    below a third of the peak, recorded buckets, hosts, devices, gaps and their time."""
    cols = ["metric", "value", "unit", "at"]
    io = io_rows(iostat)
    if io.empty:
        return pd.DataFrame(columns=cols)
    series = throughput(iostat) if series is None else series
    days = daily_totals(iostat)
    g = gaps(iostat)
    read, written = io["read_bytes"].sum(), io["write_bytes"].sum()
    bucket = int(series["bucket_s"].iloc[0])
    rows_ = [
        ("days with records", len(days), "days", None),
        ("hosts", io["host"].nunique(), "", None),
        ("devices", len(io.drop_duplicates(["host", "device"])), "", None),
        ("read in total", read / 2**40, "TiB", None),
        ("written in total", written / 2**40, "TiB", None),
        ("read per day (mean)", days["read_tib"].mean(), "TiB", None),
        ("written per day (mean)", days["write_tib"].mean(), "TiB", None),
        (
            "reads' share of bytes moved",
            100 * read / (read + written) if read + written else None,
            "%",
            None,
        ),
    ]
    for p in peaks(series).itertuples():
        rows_.append((f"peak {p.direction} over {bucket} s", p.peak_mib_s, "MiB/s", p.at))
    share = share_below(series)
    rows_ += [
        ("mean total throughput", series["total_mib_s"].mean(), "MiB/s", None),
        (f"{bucket}-s intervals recorded", len(series), "", None),
        ("time below a third of the peak total", 100 * share, "%", None),
        ("gaps in the record", len(g), "", None),
        ("time in gaps", g["seconds"].sum() / 3600 if len(g) else 0.0, "h", None),
    ]
    return pd.DataFrame(rows_, columns=cols)


# ---- figures (matplotlib, drawn only when the report needs them) ------------------------------


# -- command -------------------------------------------------------------------------------------


def cmd_run(args) -> int:
    if args.out is None:
        args._parser.error("--out DIR is required (or a command: import)")
    options = Options(
        out=args.out,
        interval=args.interval,
        host=args.host,
        include=args.include or [],
        exclude=args.exclude or [],
        dm_names=args.dm_names,
        iostat=args.iostat,
        max_backoff=args.max_backoff,
    )
    try:
        return Monitor(options).run()
    except MonitorError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT


def cmd_import(args) -> int:
    return import_dirs(args.dirs, args.store, host=args.host, name=args.name)


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be a whole number of seconds >= 1")
    return value


def register(groups) -> None:
    """Adds the ``iostat-mon`` command (and its ``import``) to the CLI's group subparsers."""
    p = groups.add_parser(
        "iostat-mon",
        help="monitor block devices with iostat (storage servers); import the records",
        description="Run sysstat's iostat every --interval seconds and keep, per device and "
        "interval, bytes read and written, IOPS, utilization and wait times in DIR/<UTC "
        "day>.jsonl (a past day compressed to .jsonl.gz), fsync'd every interval. iostat is "
        "restarted with backoff (1, 2, 4 ... s) when it dies, and the gap is recorded. "
        "SIGTERM or SIGINT stops cleanly (exit 0), losing at most the interval in progress. "
        "Exit status 2: DIR is taken by another monitor, or iostat is missing or refuses to "
        "run. iostudy iostat-mon import DIR... puts the records into the store.",
    )
    p.add_argument("--out", type=Path, metavar="DIR", help="where the day files go (required)")
    p.add_argument(
        "--interval",
        type=_positive_int,
        default=DEFAULT_INTERVAL,
        metavar="S",
        help=f"seconds per record (default {DEFAULT_INTERVAL})",
    )
    p.add_argument("--host", help="the host name the records carry (default: this host's)")
    p.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help="keep only devices matching GLOB (repeatable; default all), e.g. 'sd*'",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="drop devices matching GLOB (repeatable), e.g. the OS disk 'nvme0n1'",
    )
    p.add_argument(
        "--dm-names",
        action="store_true",
        help="device-mapper devices by their names (iostat -N), e.g. multipath LUNs",
    )
    p.add_argument(
        "--max-backoff",
        type=float,
        default=DEFAULT_MAX_BACKOFF,
        metavar="S",
        help=f"longest wait before restarting iostat (default {DEFAULT_MAX_BACKOFF:g})",
    )
    p.add_argument("--iostat", default="iostat", metavar="PATH", help="the iostat to run")
    p.set_defaults(func=cmd_run, _parser=p)
    cmds = p.add_subparsers(title="commands", dest="command", metavar="{import}")
    imp = cmds.add_parser(
        "import",
        help="import iostat-mon DIRs into the store's iostat table",
        description="Read the day files (.jsonl, .jsonl.gz) of each DIR into STORE/iostat/"
        "iostat-<name>.parquet, one row per device and interval plus the gap, start and stop "
        "records (kind column). <name> is --name, else the host the records name (else the "
        "DIR's name); importing a DIR again replaces its part. A line that cannot be read "
        "(cut short by a crash) is reported and skipped. The last line says where the rows "
        "went.",
    )
    imp.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    add_store_option(imp)
    imp.add_argument("--host", help="the host column of every row (default: the records')")
    imp.add_argument("--name", help="the part's name (one DIR; default: the host)")
    imp.set_defaults(func=cmd_import)
