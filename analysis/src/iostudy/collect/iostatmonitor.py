"""The iostat monitor itself (seed 000, II-A): :class:`Monitor` runs sysstat's iostat, keeps
its reports as records in day files, restarts it when it dies and stops cleanly on a signal.

``iostudy iostat-mon --out DIR [--interval 60]`` (:mod:`iostudy.cli.iostat_mon`) runs
``iostat -d -x -k -t -o JSON -y INTERVAL`` and keeps, per device and interval, a compact record
of what it reports. iostat prints one JSON document that grows by one ``statistics`` entry per
interval; :class:`iostudy.collect.iostatjson.StatsStream` parses the entries as they complete.
``-y`` drops the first report (the averages since boot), so every record covers one interval.

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

Apart from the command's arguments (:mod:`iostudy.cli.iostat_mon`), the import and the
analysis, which never run iostat, and from the day files (:mod:`iostudy.collect.iostatdays`) and
iostat's JSON (:mod:`iostudy.collect.iostatjson`), which are tested without an iostat: this
module is the process handling alone (signals, restarts, the lock, the state file).
"""

from __future__ import annotations

import contextlib
import ctypes
import fcntl
import json
import os
import selectors
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path

from iostudy.collect.iostatdays import DayLog
from iostudy.collect.iostatjson import StatsStream, StreamError, entry_records, iso
from iostudy.core.errors import BadInput
from iostudy.core.progress import QUIET, Progress

DEFAULT_INTERVAL = 60
DEFAULT_MAX_BACKOFF = 60.0
STATE = "iostat-mon.json"
LOCK = ".iostat-mon.lock"


class MonitorError(BadInput):
    """The monitor cannot run at all (DIR taken by another monitor, no iostat); the message
    names the path or the command."""


def _utcnow() -> datetime:
    return datetime.now(timezone.utc)


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


@dataclass
class _Iostat:
    """One iostat being read: its process and what has come of it."""

    proc: subprocess.Popen
    stream: StatsStream = field(default_factory=StatsStream)
    reports: int = 0
    err: bytearray = field(default_factory=bytearray)  # its stderr (the end of it)
    seen: set[str] = field(default_factory=set)  # the devices it reports
    last: float = field(default_factory=time.monotonic)  # when it last reported
    reason: str | None = None  # why the monitor killed it
    stopping: bool = False
    stop_deadline: float = 0.0
    status: int | None = None


class Monitor:
    """One iostat-mon: :meth:`run` until SIGTERM/SIGINT; see the module docstring."""

    def __init__(self, options: Options, progress: Progress = QUIET):
        self.o = options
        self.out = Path(options.out)
        self.host = options.host or socket.gethostname()
        self.progress = progress
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
            self.progress.note(f"{day}: compressed to {self.out / (day + '.jsonl.gz')}")

    def _report(self, entry: dict, seen_all: set) -> None:
        when, records, seen = entry_records(
            entry, self.host, float(self.o.interval), self.o.include, self.o.exclude
        )
        if records:
            self._write(records, when)
        elif not self._warned_empty:
            self._warned_empty = True
            self.progress.note(
                f"no device selected by the patterns; iostat reports: {', '.join(seen) or 'none'}"
            )
        seen_all.update(seen)
        self.covered = max(self.covered, when)
        self.intervals += 1
        self._state()

    # -- one iostat
    def _run_iostat(self):
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
        self.progress.note(f"iostat started (pid {proc.pid}): {' '.join(cmd)}")
        child = _Iostat(proc)
        try:
            self._read_iostat(child)
        finally:
            proc.stdout.close()
            proc.stderr.close()
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            self.iostat_pid = None
        return self._ended(child)

    def _read_iostat(self, child: _Iostat) -> None:
        """Read iostat's output and stderr until it ends or is killed, then reap it."""
        proc = child.proc
        err_fd = proc.stderr.fileno()
        sel = selectors.DefaultSelector()
        try:
            sel.register(proc.stdout.fileno(), selectors.EVENT_READ, "out")
            sel.register(err_fd, selectors.EVENT_READ, "err")
            sel.register(self._wake_r, selectors.EVENT_READ, "wake")
            while self._iostat_turn(child, sel):
                pass
            child.status = proc.wait()
            # stderr the rest of the way (iostat is gone: this ends)
            with contextlib.suppress(OSError):
                while chunk := os.read(err_fd, 65536):
                    child.err += chunk
        finally:
            sel.close()

    def _iostat_turn(self, child: _Iostat, sel) -> bool:
        """One turn of reading iostat (a second's wait at most); False once it is over: it
        ended, or was stopped or killed."""
        if self.stop_reason and not child.stopping:
            # What iostat has printed is kept; the interval in progress is lost.
            child.stopping, child.stop_deadline = True, time.monotonic() + 5
            with contextlib.suppress(ProcessLookupError):
                child.proc.terminate()
        if child.stopping and time.monotonic() > child.stop_deadline:
            child.proc.kill()
            return False
        if self._read_ready(child, sel):
            return False
        hang_after = 3 * self.o.interval + 5
        if not child.stopping and time.monotonic() - child.last > hang_after:
            pid = child.proc.pid
            child.reason = f"no report from iostat (pid {pid}) for {hang_after} s: killed"
            child.proc.kill()
            child.stopping = True
            child.stop_deadline = time.monotonic() + 5
        self._roll()
        return True

    def _read_ready(self, child: _Iostat, sel) -> bool:
        """Read what iostat has written; True at the end of its output, or when what it
        printed is not its JSON (it is killed then)."""
        eof = False
        for key, _ in sel.select(1.0):
            if key.data == "wake":
                self._drain_wakeup()
                continue
            data = os.read(key.fd, 65536)
            if key.data == "err":
                if not data:
                    sel.unregister(key.fd)
                child.err += data
                del child.err[:-4096]
            elif not data:
                eof = True
            elif not self._iostat_output(child, data):
                return True
        return eof

    def _iostat_output(self, child: _Iostat, data: bytes) -> bool:
        """Record the reports that data completes; False when it is not iostat's JSON (iostat
        is killed then)."""
        try:
            entries = child.stream.feed(data)
        except StreamError as exc:
            child.reason = f"unreadable output from iostat (pid {child.proc.pid}): {exc}"
            child.proc.kill()
            return False
        for entry in entries:
            self._report(entry, child.seen)
            child.reports += 1
            child.last = time.monotonic()
        return True

    def _ended(self, child: _Iostat):
        """:meth:`_run_iostat`'s answer about an iostat that is over."""
        err = child.err.decode(errors="replace")
        if self.stop_reason and child.reason is None:
            return None, child.reports, child.stream.started, err
        reason = child.reason or _status(child.proc.pid, child.status)
        message = err.strip().splitlines()
        if message:
            reason += f": {message[-1][:200]}"
        return reason, child.reports, child.stream.started, err

    # -- the whole run
    def run(self) -> None:
        """Monitor until SIGTERM or SIGINT. MonitorError when it cannot start."""
        if self.o.interval < 1:
            raise MonitorError(f"--interval {self.o.interval}: iostat needs whole seconds >= 1")
        # The handlers first: a stop signal from now on is a clean stop.
        self._wake_r, self._wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        old_wakeup = signal.set_wakeup_fd(self._wake_w)
        old = {s: signal.signal(s, self._on_signal) for s in (signal.SIGTERM, signal.SIGINT)}
        try:
            self._locked()
        finally:
            for s, handler in old.items():
                signal.signal(s, handler)
            signal.set_wakeup_fd(old_wakeup)
            os.close(self._wake_r)
            os.close(self._wake_w)

    def _locked(self) -> None:
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
            self._run(version)
        finally:
            lock.close()

    def _run(self, version: str) -> None:
        for day in self.days.compress_past(_utcnow().date().isoformat()):
            self.progress.note(f"{day}: compressed to {self.out / (day + '.jsonl.gz')}")
        try:
            self._started(version)
            self._supervise()
            self._stopped()
        finally:
            self.days.close()

    def _started(self, version: str) -> None:
        """The start record, the state file, and the log's line saying what is monitored."""
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
        self.progress.note(f"host {self.host}, every {self.o.interval} s ({version}) -> {self.out}")

    def _supervise(self) -> None:
        """Run iostat, and again after a backoff whenever it ends, until a stop signal; a gap
        record for each restart. MonitorError when the first iostat refuses its command line."""
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
            self.progress.note(f"{reason}; restarting in {backoff:g} s")
            self._sleep(backoff)
            now = _utcnow()
            if self.stop_reason:
                self._gap(self.covered, now, f"{reason}; not restarted: {self.stop_reason}")
                break
            self._gap(self.covered, now, f"{reason}; restarted after {backoff:g} s")
            self.covered = now
            self.restarts += 1
            backoff = min(backoff * 2, self.o.max_backoff)

    def _stopped(self) -> None:
        """The stop record, the last roll and state, and the log's last line."""
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
        self.progress.note(
            f"stopped ({self.stop_reason}): {self.intervals} intervals, {self.gap_count} "
            f"gaps, {self.restarts} restarts; records in {self.out}"
        )
