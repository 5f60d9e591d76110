"""The walk of a tree: the C walker ``iostudy-fswalk`` run over start directories, its records
counted into a :class:`~iostudy.collect.fsstats_tally.Tally` as they arrive, and the root's own
listing, which decides the projects. Apart from the scan's session (checkpoints, progress, the
snapshot: :mod:`iostudy.collect.fsstats_scan`) as the part that talks to the walker process.

The walk
--------
``iostudy-fswalk`` (analysis/src/fswalk, built by ``make setup`` into build/fswalk/) lists
directories with several threads and streams a fixed-size record per entry
(:func:`~iostudy.collect.fsstats_tally.record_dtype`); this module lists PATH itself, decides the
projects, and turns the records into histograms in batches with numpy. The walk stays on PATH's
file system (a directory of another one is counted as a mount point and not entered) and never
follows a symbolic link: entries are lstat'ed, a directory is opened with O_NOFOLLOW and must be
the inode its parent listed. PATH itself, when a symlink, is resolved once (it is the user's
argument, as with ``find -H``). Nothing is kept per file unless ``--list FILE`` asks for a
listing; memory holds the histograms, the directories still to list, and the inode numbers of
the files with more than one link (so that each is counted once: the first name found counts,
the others are counted as ``hardlinks``).

A failure does not stop the walk: it is counted by kind, ``permission`` (EACCES, EPERM: a
directory that cannot be listed or entered, an entry that cannot be lstat'ed), ``vanished``
(ENOENT, ENOTDIR, ELOOP, ESTALE: removed, or replaced by something else, between being listed and
being looked at) or ``other``, and the first
:data:`~iostudy.collect.fsstats_snapshot.ERROR_EXAMPLES` are kept with their paths.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import shutil
import signal
import stat
import subprocess
import time
from pathlib import Path

from iostudy.collect.fsstats_snapshot import ROOT_PROJECT, FsstatsError, WalkFailed
from iostudy.collect.fsstats_tally import DIR, LNK, MOUNT, OTHER, REG, VISIT, Tally, record_dtype
from iostudy.core import config
from iostudy.core.deferred import deferred

np = deferred("numpy")

TOOL = "iostudy-fswalk"
WALKER_STOPPED = 3  # iostudy-fswalk's exit status when it stopped with directories pending
# Records read per batch: 4 MiB. Byte sums are exact per batch while records * 2^32 < 2^53.
BATCH = 65536
F_SETPIPE_SZ = 1031  # Linux fcntl: a larger pipe means fewer wake-ups of the reader


def find_walker() -> Path | None:
    """IOSTUDY_FSWALK, else the CMake build of this checkout, else PATH (an installed one)."""
    candidates = [
        os.environ.get("IOSTUDY_FSWALK"),
        config.REPO_ROOT / "build" / "fswalk" / TOOL,
        shutil.which(TOOL),
    ]
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    return None


def default_threads() -> int:
    """Walker threads: 2 per CPU (a thread waits on metadata much of the time, on a parallel
    file system most of it), at least 4, at most 32."""
    return min(32, max(4, 2 * (os.cpu_count() or 1)))


def _start_line(project: int, ino: int, path: bytes) -> bytes:
    return b"%d\0%d\0%s\0" % (project, ino, path)


def _read_nul_records(path: Path):
    """The NUL-terminated records of a file, one at a time (bytes)."""
    with open(path, "rb") as f:
        rest = b""
        while chunk := f.read(1 << 20):
            parts = (rest + chunk).split(b"\0")
            rest = parts.pop()
            yield from parts
        if rest:
            yield rest


def _record_type(mode: int) -> int:
    if stat.S_ISREG(mode):
        return REG
    if stat.S_ISDIR(mode):
        return DIR
    if stat.S_ISLNK(mode):
        return LNK
    return OTHER


def _list_line(rec, path: bytes) -> bytes:
    kind = "fdlo"[rec["type"]] + ("+" if rec["flags"] & MOUNT else "")
    fields = [
        kind,
        rec["size"],
        rec["blocks"],
        rec["mtime"],
        rec["atime"],
        rec["ctime"],
        rec["nlink"],
        rec["ino"],
    ]
    return "\t".join(str(f) for f in fields).encode() + b"\t" + path + b"\0"


def list_root(root: bytes, dev: int, listing=None):
    """The root's own listing, done here rather than by the walker since it decides the
    projects: (records, project names, start lines, errors as (op, errno, path)). Entries that are
    directories of this file system are projects 1..n in name order; the root and the other
    entries are project 0 (".")."""
    try:
        with os.scandir(root) as it:
            names = sorted(e.name for e in it)
    except OSError as exc:
        raise FsstatsError(f"{os.fsdecode(root)}: cannot list: {exc.strerror}") from None
    projects, starts, errors = [ROOT_PROJECT], [], []
    recs = np.zeros(len(names) + 1, record_dtype())
    n = 0
    for name in names:
        path = root.rstrip(b"/") + b"/" + name
        try:
            st = os.lstat(path)
        except OSError as exc:
            errors.append(("stat", exc.errno or 0, os.fsdecode(path)))
            continue
        r = recs[n]
        r["size"], r["blocks"] = max(st.st_size, 0), max(st.st_blocks, 0)
        r["mtime"], r["atime"], r["ctime"] = int(st.st_mtime), int(st.st_atime), int(st.st_ctime)
        r["ino"], r["nlink"] = st.st_ino, st.st_nlink
        r["namelen"] = min(len(name), 65535)
        r["type"] = _record_type(st.st_mode)
        if r["type"] == DIR:
            if st.st_dev != dev:
                r["flags"] = MOUNT
            else:
                r["project"] = len(projects)
                starts.append(_start_line(len(projects), st.st_ino, path))
                projects.append(os.fsdecode(name))
        if listing is not None:
            listing.write(_list_line(r, path))
        n += 1
    visit = recs[n]
    visit["type"], visit["entries"] = VISIT, len(names)
    return recs[: n + 1], projects, starts, errors


def _read_errors(path: Path, tally: Tally) -> None:
    for rec in _read_nul_records(path):
        op, err, p = rec.split(b" ", 2)
        tally.add_error(op.decode(), int(err), os.fsdecode(p))


class StopSignals:
    """SIGINT and SIGTERM stop the scan cleanly: the walker finishes the directories it is in
    and hands back the rest, and a checkpoint keeps them."""

    def __init__(self):
        self.received = None
        self.proc = None
        self.saved = {}

    def _handler(self, signum, frame):
        self.received = signum
        if self.proc is not None and self.proc.poll() is None:
            with contextlib.suppress(ProcessLookupError):
                self.proc.send_signal(signal.SIGTERM)

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            with contextlib.suppress(ValueError):  # not the main thread: leave them
                self.saved[sig] = signal.signal(sig, self._handler)
        return self

    def __exit__(self, *exc):
        for sig, old in self.saved.items():
            signal.signal(sig, old)


def run_walker(
    walker,
    starts: Path,
    pending: Path,
    errors: Path,
    tally: Tally,
    signals: StopSignals,
    progress,
    clock,
    *,
    threads,
    max_dirs,
    max_ms,
    dev,
    listing,
):
    """One walker run over the start directories: (its exit status, why it stopped early or
    ""). Records are counted as they arrive, in batches."""
    cmd = [str(walker), "--dev", str(dev), "--threads", str(threads)]
    cmd += ["--errors", str(errors), "--pending", str(pending)]
    if max_dirs:
        cmd += ["--max-dirs", str(max_dirs)]
    if max_ms:
        cmd += ["--max-ms", str(max_ms)]
    if listing:
        cmd += ["--list", str(listing)]
    if signals.received:  # stopped before it started: every start directory is still to go
        shutil.copyfile(starts, pending)
        errors.write_bytes(b"")
        return WALKER_STOPPED, "signal"
    proc = _start_walker(cmd, starts, signals)
    try:
        left, stderr = _count_records(proc, tally, progress, clock)
    except BaseException:
        proc.kill()  # it would wait for us to read its records forever
        raise
    finally:
        status = proc.wait()
        signals.proc = None
        proc.stdout.close()
        proc.stderr.close()
    if left:
        raise WalkFailed(f"{TOOL} wrote a partial record ({left} bytes left over)")
    if status not in (0, WALKER_STOPPED):
        why = stderr.strip() or f"exit status {status}"
        raise WalkFailed(f"{TOOL} failed: {why}")
    _read_errors(errors, tally)
    # when stopped, the last line of its stderr says why: "stopped: <reason>, ..."
    last = stderr.strip().splitlines()[-1] if stderr.strip() else ""
    reason = last.split(":", 1)[1].split(",", 1)[0].strip() if last.startswith("stopped:") else ""
    return status, reason


def _start_walker(cmd: list[str], starts: Path, signals: StopSignals) -> subprocess.Popen:
    """The walker process, reading its start directories from the file starts. SIGINT and
    SIGTERM are blocked while it starts (it unblocks them once it handles them): one arriving
    meanwhile waits for it instead of killing it. Its own session: a terminal's Ctrl-C reaches
    us only, and we stop it cleanly."""
    stops = {signal.SIGINT, signal.SIGTERM}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        with open(starts, "rb") as stdin:
            proc = subprocess.Popen(
                cmd,
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                bufsize=0,
                start_new_session=True,
            )
        signals.proc = proc
    finally:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)  # one that came meanwhile runs now
    if signals.received:  # it came before the walker was there to be told
        proc.send_signal(signal.SIGTERM)
    with contextlib.suppress(OSError):
        fcntl.fcntl(proc.stdout.fileno(), F_SETPIPE_SZ, 1 << 20)
    return proc


def _count_records(proc: subprocess.Popen, tally: Tally, progress, clock) -> tuple[int, str]:
    """The walker's records into tally until it closes its output, in batches of whole
    records (the progress updated after each, at least every second): (the bytes of a partial
    record left over, its stderr)."""
    buf = np.empty(BATCH, record_dtype())
    size = buf.itemsize
    raw = memoryview(buf.view(np.uint8))
    filled, last = 0, time.monotonic()
    while True:
        n = proc.stdout.readinto(raw[filled:])
        if n:
            filled += n
        full = filled == len(raw)
        if full or not n or time.monotonic() - last > 1.0:
            whole = filled // size
            if whole:
                tally.add(buf[:whole])
                tail = filled - whole * size
                raw[:tail] = raw[whole * size : filled]
                filled = tail
            progress.update(tally, clock())
            last = time.monotonic()
        if not n:
            break
    return filled, proc.stderr.read().decode(errors="replace")
