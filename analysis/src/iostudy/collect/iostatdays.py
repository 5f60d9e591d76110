"""iostat-mon's day files: DIR/<UTC day>.jsonl appended to with one write and fsync per
interval (:class:`DayLog`), compressed to .jsonl.gz once the day is over
(:func:`compress_day`), and listed oldest first for the import (:func:`day_files`).

Apart from the monitor because the files outlive it: the import reads them, and their crash
safety (what a crash may leave, how the next writer or the import copes) is tested here
without an iostat."""

from __future__ import annotations

import gzip
import json
import os
import re
import shutil
from datetime import datetime, timedelta, timezone
from pathlib import Path

DAY_FILE = re.compile(r"^(\d{4}-\d{2}-\d{2})\.jsonl(\.gz)?$")


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


def day_files(folder: Path) -> list[Path]:
    """A DIR's day files, oldest first (a day's .gz before its .jsonl)."""
    files = [p for p in Path(folder).iterdir() if DAY_FILE.match(p.name)]
    return sorted(files, key=lambda p: (DAY_FILE.match(p.name)[1], not p.name.endswith(".gz")))
