"""Read many Darshan logs in long-lived worker processes, each log in isolation.

libdarshan-util aborts or segfaults on some damaged logs, and after a failed read its state can
be corrupt (see the log-format reference, section 11.3). Starting a process per log is safe but
slow (a Python start per log); here a few workers read batches of logs, one log after another:

- anything libdarshan-util prints on stderr while it reads a log (fd 2 goes to a file the worker
  empties after each log that printed) makes that log fail, as a clean read prints nothing;
- after a failed log the worker sends what it has (the rows of the logs before it, and the
  reason) and exits, so no damaged state reads the next log; the rest of its batch goes back to
  the queue and a fresh worker takes over;
- when a worker dies (signal, exit) or overruns the timeout, the log to blame is not known: its
  whole batch goes back to the queue one log per batch, and a log that then kills its worker,
  alone, gets the reason (``reader crashed (segfault)``...);
- the worker reads a private name of the log in its scratch directory: after a failed read
  libdarshan-util's cleanup can unlink its log file, and raw inputs are never modified.

A batch's logs are read one by one, and their rows are computed together (``rows``), which keeps
the per-log cost of numpy, pickling and the pipe small: ingest reads thousands of small logs a
second. :meth:`ReaderPool.map` yields a :class:`Batch` per answer.
"""

from __future__ import annotations

import contextlib
import faulthandler
import gc
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import tempfile
import threading
import time
import traceback
import warnings
from collections import deque
from multiprocessing.connection import wait
from typing import NamedTuple

# Signals with which libdarshan-util is known to die on damaged logs.
CRASHES = {signal.SIGABRT: "aborted (SIGABRT)", signal.SIGSEGV: "crashed (segfault)"}


def death_reason(exitcode: int | None) -> str:
    """Why a reader process ended, from its exit code (-N: killed by signal N)."""
    if exitcode is not None and exitcode < 0 and -exitcode in CRASHES:
        return f"reader {CRASHES[-exitcode]}, exit status {exitcode}"
    if exitcode is not None and exitcode < 0:
        return f"reader killed by signal {-exitcode}"
    return f"reader exited with status {exitcode}"


class Batch(NamedTuple):
    """One answer of the pool: the items whose rows are in ``payload`` (the ``rows`` function's
    result for them; None when there are none), and the items that failed, with the reason."""

    done: list
    payload: object
    failed: list  # [(item, reason)]


def _private_copy(path, copy):
    """A name of the log's content that the reader may lose: a hard link when the log is on the
    scratch's file system (no copy), else a copy."""
    with contextlib.suppress(FileNotFoundError):
        os.unlink(copy)
    try:
        os.link(path, copy)
    except OSError:
        shutil.copyfile(path, copy)


def _worker(conn, read, rows, scratch):
    """Worker main loop: a batch of (path, arg) in, (number read, rows payload, failure) out;
    exits after a failure or on None. ``scratch``: its folder (the pool's, which reads the
    stderr file there when the worker dies, and removes it)."""
    warnings.simplefilter("ignore")  # stderr is for libdarshan-util's complaints only
    faulthandler.disable()  # a forked worker inherits it; its crash is the pool's to report
    gc.freeze()  # what it inherits lives as long as it: not walked (and copied) by collections
    os.environ.pop("LD_PRELOAD", None)  # the reader must not write a log of its own
    errors = open(os.path.join(scratch, "stderr"), "w+b")  # noqa: SIM115 (lives with the process)
    os.dup2(errors.fileno(), 2)
    copy = os.path.join(scratch, "log.darshan")
    try:
        while (task := conn.recv()) is not None:
            context, batch = task
            read_ok, failure = [], None
            for path, arg in batch:
                try:
                    _private_copy(path, copy)
                    result = read(copy, arg)
                except Exception as exc:
                    failure = f"{type(exc).__name__}: {exc}"
                sys.stderr.flush()
                if os.lseek(errors.fileno(), 0, os.SEEK_CUR):  # fd 2's offset: 0 when silent
                    errors.seek(0)
                    said = [ln for ln in errors.read().decode(errors="replace").splitlines() if ln]
                    errors.seek(0)
                    errors.truncate()
                    if said:
                        failure = (
                            f"{failure or 'libdarshan-util reported problems'} [{'; '.join(said)}]"
                        )
                if failure:
                    break
                read_ok.append((arg, result))
            try:
                payload = rows(context, read_ok) if read_ok else None
            except Exception as exc:  # rows that make no sense: blame the batch's logs alone
                _send(conn, (0, None, f"rows: {type(exc).__name__}: {exc}"))
                break
            _send(conn, (len(read_ok), payload, failure))
            if failure:
                break  # the library's state may be damaged: the pool starts a fresh worker
    except (EOFError, KeyboardInterrupt):
        pass
    except Exception:  # a bug of ours, not of a log: say it where the parent can see it
        os.write(errors.fileno(), traceback.format_exc().encode())


def _send(conn, answer):
    """An answer to the pool, pickled at once: Connection.send pickles into a growing BytesIO,
    which costs more than the pickling of a batch's megabyte of rows itself."""
    conn.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


class _Slot:
    """One worker process and the batch it holds."""

    def __init__(self, ctx, read, rows):
        self.conn, child = ctx.Pipe()
        self.scratch = tempfile.mkdtemp(prefix="iostudy-read-")
        self.proc = ctx.Process(target=_worker, args=(child, read, rows, self.scratch), daemon=True)
        self.proc.start()
        child.close()
        self.batch = None
        self.started = 0.0

    def give(self, context, batch):
        self.batch, self.started = batch, time.monotonic()
        self.conn.send((context, batch))

    def answer(self):
        """The worker's answer for its batch, None if not complete yet, or False if it died."""
        try:
            if self.conn.poll():
                return pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            pass
        self.proc.join(timeout=5)
        return None if self.proc.is_alive() else False

    def last_words(self) -> str:
        """What the worker printed on stderr for the log it held (e.g. before it crashed)."""
        try:
            with open(os.path.join(self.scratch, "stderr"), "rb") as f:
                said = f.read().decode(errors="replace").splitlines()
        except OSError:
            return ""
        return "; ".join(line for line in said if line.strip())

    def stop(self, kill=False):
        if kill and self.proc.is_alive():
            self.proc.kill()
        else:
            with contextlib.suppress(OSError):
                self.conn.send(None)
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()
        shutil.rmtree(self.scratch, ignore_errors=True)


class ReaderPool:
    """``jobs`` worker processes running ``read(copy_path, arg)`` per log and ``rows(context,
    [(arg, read result)])`` per batch (module-level functions: they are pickled by name); see the
    module docstring. ``timeout``: seconds per log. Workers start with :meth:`start` (or the
    first :meth:`map`) and stop with :meth:`close`; a pool is a context manager."""

    def __init__(self, read, rows, jobs: int, timeout: float = 120.0, batch: int = 64):
        self.read, self.rows = read, rows
        self.jobs, self.timeout, self.batch = max(1, jobs), timeout, max(1, batch)
        self.slots: list[_Slot] = []

    @staticmethod
    def _context():
        """fork while this process runs no other Python thread (a worker then starts in
        milliseconds, with everything imported), else spawn: another Python thread (rich's
        progress refresh) can hold a lock of the interpreter or of a stream at the fork, which
        the worker would then wait on for ever. Native threads do not count: numpy's OpenBLAS
        pool and pyarrow's jemalloc thread start at import and both have fork handlers, and
        glibc's malloc is fork-safe; the worker uses neither DuckDB nor pyarrow."""
        single = threading.active_count() == 1
        return multiprocessing.get_context("fork" if single else "spawn")

    def start(self):
        """Start the workers now: best before the process starts threads (see _context)."""
        while len(self.slots) < self.jobs:
            self.slots.append(_Slot(self._context(), self.read, self.rows))

    def close(self):
        for slot in self.slots:
            slot.stop(kill=True)
        self.slots = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _fresh(self, i):
        self.slots[i] = _Slot(self._context(), self.read, self.rows)

    def map(self, items, context=None):
        """Yield a Batch per answer until every item = (path, arg) is done or failed.
        ``context``: what rows needs besides the items (sent once per batch, not per log)."""
        items = iter(items)  # taken as needed: a facility's logs are not listed twice
        retry = deque()  # batches of one: logs of a batch whose worker died

        def next_batch():
            if retry:
                return retry.popleft()
            return [item for _, item in zip(range(self.batch), items, strict=False)] or None

        pending = next_batch()
        if pending is not None:
            self.start()
        slots = self.slots
        try:
            while True:
                for i, slot in enumerate(slots):
                    if pending is None:
                        break
                    if slot.batch is None:
                        if not slot.proc.is_alive():
                            self._fresh(i)
                        slots[i].give(context, pending)
                        pending = next_batch()
                busy = [s for s in slots if s.batch is not None]
                if not busy:
                    return
                deadline = min(s.started + self.timeout * len(s.batch) for s in busy)
                ready = wait(
                    [s.conn for s in busy] + [s.proc.sentinel for s in busy],
                    timeout=max(0.0, deadline - time.monotonic()),
                )
                for slot in busy:
                    answer = None
                    if slot.conn in ready or slot.proc.sentinel in ready:
                        answer = slot.answer()
                    elif time.monotonic() - slot.started > self.timeout * len(slot.batch):
                        slot.stop(kill=True)
                        answer = False
                    if answer is None:
                        continue
                    batch, slot.batch = slot.batch, None
                    if answer is False:  # died or timed out holding the batch
                        if len(batch) > 1:
                            retry.extend([item] for item in batch)
                        else:
                            reason = death_reason(slot.proc.exitcode)
                            if slot.proc.exitcode == -signal.SIGKILL:
                                reason = f"reader timed out after {self.timeout:g} s"
                            if said := slot.last_words():
                                reason += f" [{said}]"
                            yield Batch([], None, [(batch[0], reason)])
                        slot.stop(kill=True)
                        if pending is None:
                            pending = next_batch()
                        continue
                    n_read, payload, failure = answer
                    failed = [(batch[n_read], failure)] if failure else []
                    if failure:  # the worker exits after a failure: replaced when needed
                        slot.stop()
                        retry.extendleft([item] for item in reversed(batch[n_read + 1 :]))
                        if pending is None:
                            pending = next_batch()
                    yield Batch(batch[:n_read], payload, failed)
        except BaseException:
            self.close()  # workers may hold half a batch: never reuse them
            raise
