"""Read many Darshan logs in long-lived worker processes, each log in isolation.

libdarshan-util aborts or segfaults on some damaged logs, and after a failed read its state can
be corrupt (see the log-format reference, section 11.3). Starting a process per log is safe but
slow (a Python start per log); here a few workers read batches of logs, one log after another:

- each log is opened by :func:`iostudy.logs.darshanlog_worker.open_log` first: only a regular file,
  within the decompression :class:`~iostudy.logs.logregions.Limits`, reaches libdarshan-util;
  a log refused there fails alone and the worker goes on (the library never saw it);
- anything libdarshan-util prints on stderr while it reads a log (fd 2 goes to a file the worker
  empties after each log that printed) makes that log fail, as a clean read prints nothing;
- after a log that failed in libdarshan-util the worker sends what it has (the rows of the logs
  before it, and the reason) and exits, so no damaged state reads the next log, not even when
  the log was the last of its batch; the rest of its batch goes back to the queue and a fresh
  worker takes over;
- when a worker dies (signal, exit) or overruns the timeout, the log to blame is not known: its
  whole batch goes back to the queue one log per batch, and a log that then kills its worker,
  alone, gets the reason (``reader crashed (segfault)``...);
- when the rows of a batch raise, each log's rows are computed alone: only the logs whose own
  rows raise fail (with the exception as a failed read gives it: ``ImplausibleLog: ...``), the
  others are kept.

Workers are forked by a zygote, a process forked (or, if this process already runs other Python
threads, spawned) once at :meth:`ReaderPool.start` with everything imported: a fresh worker
after a damaged log costs a fork, not a Python start. The zygote dies with the pool's process,
and the workers with the zygote (``PR_SET_PDEATHSIG``), even on SIGKILL; a worker holds no pipe
but its own. Their scratch folder (stderr files) is named after the pool's process
(``iostudy-scratch-<pid>-*`` in the system's temporary folder), and one left by a process that
died is removed when the next one starts.

A batch's logs are read one by one, and their rows are computed together (``rows``), which keeps
the per-log cost of numpy, pickling and the pipe small: ingest reads thousands of small logs a
second. :meth:`ReaderPool.map` yields :class:`Batch` objects as answers come.
"""

from __future__ import annotations

import contextlib
import ctypes
import faulthandler
import gc
import multiprocessing
import os
import pickle
import shutil
import signal
import sys
import threading
import time
import traceback
import warnings
from collections import deque
from multiprocessing import reduction
from multiprocessing.connection import Connection, wait
from typing import NamedTuple

from iostudy.core.processes import private_dir
from iostudy.logs.darshanlog_worker import open_log, warm_up
from iostudy.logs.logregions import DEFAULT_LIMITS, LogRefused

# Signals with which libdarshan-util is known to die on damaged logs.
CRASHES = {signal.SIGABRT: "aborted (SIGABRT)", signal.SIGSEGV: "crashed (segfault)"}
PR_SET_PDEATHSIG = 1  # <linux/prctl.h>
# Scratch folders: SCRATCH_PREFIX<pid of the owner>-<random> in the system's temporary folder.
SCRATCH_PREFIX = "iostudy-scratch-"


def death_reason(exitcode: int | None) -> str:
    """Why a reader process ended, from its exit code (-N: killed by signal N)."""
    if exitcode is not None and exitcode < 0 and -exitcode in CRASHES:
        return f"reader {CRASHES[-exitcode]}, exit status {exitcode}"
    if exitcode is not None and exitcode < 0:
        return f"reader killed by signal {-exitcode}"
    return f"reader exited with status {exitcode}"


class Failure(str):
    """Why a log failed, as the one line a quarantine keeps: ``reason``, then what
    libdarshan-util printed while it read the log in brackets; ``stderr`` keeps those lines
    apart (a failure pickles with both)."""

    def __new__(cls, reason: str, stderr=()):
        stderr = list(stderr)
        text = f"{reason} [{'; '.join(stderr)}]" if stderr else reason
        failure = super().__new__(cls, text)
        failure.reason, failure.stderr = reason, stderr
        return failure

    def __reduce__(self):
        return Failure, (self.reason, self.stderr)


class Batch(NamedTuple):
    """Part of an answer of the pool: the items whose rows are in ``payload`` (the ``rows``
    function's result for them; None when there are none), and the items that failed, with the
    reason."""

    done: list
    payload: object
    failed: list  # [(item, reason)]


def die_with_parent(parent: int):
    """Be killed (SIGKILL) when the thread that forked this process ends; exit now if the
    parent ``parent`` is already gone (it died before the request: no signal would come)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0):
        raise OSError(ctypes.get_errno(), "prctl(PR_SET_PDEATHSIG)")
    if os.getppid() != parent:
        os._exit(1)


def scratch_dir() -> str:
    """A new scratch folder named after this process, once those of dead processes are gone."""
    return str(private_dir(SCRATCH_PREFIX))


def _worker(conn, read, rows, scratch, limits, weigh):
    """Worker main loop: a batch of (path, arg) in, (items handled, [(indices, rows payload)],
    [(index, reason)], whether it exits) out; exits after a log that failed in libdarshan-util
    or on None. ``scratch``: its folder (the pool reads the stderr file there when the worker
    dies)."""
    warnings.simplefilter("ignore")  # stderr is for libdarshan-util's complaints only
    faulthandler.disable()  # a forked worker inherits it; its crash is the pool's to report
    gc.freeze()  # what it inherits lives as long as it: not walked (and copied) by collections
    os.environ.pop("LD_PRELOAD", None)  # the reader must not write a log of its own
    errors = open(os.path.join(scratch, "stderr"), "w+b")  # noqa: SIM115 (lives with the process)
    os.dup2(errors.fileno(), 2)
    try:
        while (task := conn.recv()) is not None:
            context, batch = task
            handled, entries, failed, damaged = _read_batch(read, batch, limits, errors, weigh)
            parts, unfit = _batch_rows(rows, context, entries)
            _send(conn, (handled, parts, sorted(failed + unfit), damaged))
            if damaged:
                break  # the library's state may be damaged: the pool starts a fresh worker
    except (EOFError, KeyboardInterrupt):
        pass
    except Exception:  # a bug of ours, not of a log: say it where the parent can see it
        os.write(errors.fileno(), traceback.format_exc().encode())


def _read_batch(read, batch, limits, errors, weigh=None):
    """(items handled, [(index, (arg, read result))], [(index, reason)], whether a log failed
    in libdarshan-util): up to the first log that fails there (included), or up to the log
    whose results weigh 1 with those before it (``weigh``: a read result's share of an answer;
    the rest of the batch goes back to the queue), or the whole batch."""
    entries, failed, weight = [], [], 0.0
    for i, (path, arg) in enumerate(batch):
        entered, failure = False, None
        try:
            with open_log(path, limits) as checked:
                entered = True
                result = read(checked, arg)
        except LogRefused as exc:
            failure = str(exc)
        except Exception as exc:
            failure = f"{type(exc).__name__}: {exc}"
        said = _complaints(errors)
        if failure is None and not said:
            entries.append((i, (arg, result)))
            weight += weigh(result) if weigh else 0.0
            if weight >= 1.0 and i + 1 < len(batch):  # a heavy answer: sent now
                return i + 1, entries, failed, False
            continue
        failed.append((i, Failure(failure or "libdarshan-util reported problems", said)))
        if entered:
            return i + 1, entries, failed, True
    return len(batch), entries, failed, False


def _complaints(errors) -> list[str]:
    """The lines written on fd 2 (the file ``errors``) since the last call, which empties it."""
    sys.stderr.flush()
    if not os.lseek(errors.fileno(), 0, os.SEEK_CUR):  # fd 2's offset: 0 when silent
        return []
    errors.seek(0)
    said = [ln for ln in errors.read().decode(errors="replace").splitlines() if ln]
    errors.seek(0)
    errors.truncate()
    return said


def _batch_rows(rows, context, entries):
    """([(indices, rows payload)], [(index, reason)]) of the logs read: the rows of all at once,
    or, when that raises, of each alone, so that only a log whose own rows raise fails."""
    if not entries:
        return [], []
    try:
        return [([i for i, _ in entries], rows(context, [e for _, e in entries]))], []
    except Exception:
        parts, unfit = [], []
    for i, entry in entries:
        try:
            parts.append(([i], rows(context, [entry])))
        except Exception as exc:
            # as a failed read says it: a log refused for its values (plausibility) reads the
            # same whether its read or its rows found them
            unfit.append((i, Failure(f"{type(exc).__name__}: {exc}")))
    return parts, unfit


def _send(conn, answer):
    """An answer to the pool, pickled at once: Connection.send pickles into a growing BytesIO,
    which costs more than the pickling of a batch's megabyte of rows itself."""
    conn.send_bytes(pickle.dumps(answer, protocol=pickle.HIGHEST_PROTOCOL))


def _zygote(conn, read, rows, limits, weigh, parent, inherited):
    """The zygote's loop: ("fork", scratch) and a pipe end in, ("forked", pid) out; ("kill",
    pid) kills a worker that has not been reaped (its pid cannot have been reused); ("exit",
    pid, exit code) out as workers end; None or the pool's end closed: kill the workers, exit.
    ``inherited``: descriptors a fork copied from the pool that are not the zygote's."""
    die_with_parent(parent)
    for fd in inherited:
        os.close(fd)
    warm_up()
    gc.freeze()  # the workers' memory is the zygote's, shared: collections would copy it
    wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
    signal.set_wakeup_fd(wake_w)  # a SIGCHLD (a worker ended) wakes the wait below
    signal.signal(signal.SIGCHLD, lambda *_: None)
    children = set()
    try:
        while True:
            ready = wait([conn, wake_r])
            with contextlib.suppress(BlockingIOError):
                os.read(wake_r, 4096)
            _reap(children, conn)
            if conn not in ready:
                continue
            if (request := conn.recv()) is None:
                break
            kind, value = request
            if kind == "fork":
                end = reduction.recv_handle(conn)
                if (pid := os.fork()) == 0:
                    _worker_child(conn, end, (wake_r, wake_w), read, rows, value, limits, weigh)
                os.close(end)
                children.add(pid)
                conn.send(("forked", pid))
            elif value in children:
                os.kill(value, signal.SIGKILL)
    except (EOFError, OSError):
        pass  # the pool is gone
    finally:
        for pid in children:
            os.kill(pid, signal.SIGKILL)
        for pid in children:
            os.waitpid(pid, 0)


def _reap(children: set, conn):
    """Wait for the workers that ended and tell the pool how."""
    while children:
        pid, status = os.waitpid(-1, os.WNOHANG)
        if not pid:
            return
        children.discard(pid)
        conn.send(("exit", pid, os.waitstatus_to_exitcode(status)))


def _worker_child(zconn, end, wake, read, rows, scratch, limits, weigh):
    """A worker just forked by the zygote: drop the zygote's pipes and signal set-up, run, exit
    (never returns)."""
    status = 1
    try:
        signal.set_wakeup_fd(-1)
        signal.signal(signal.SIGCHLD, signal.SIG_DFL)
        for fd in wake:
            os.close(fd)
        zconn.close()
        die_with_parent(os.getppid())
        _worker(Connection(end), read, rows, scratch, limits, weigh)
        status = 0
    finally:
        os._exit(status)


class _Zygote:
    """The pool's side of the zygote. Forks are asked for without waiting (the zygote forks
    while the pool goes on); a worker's pid is known once the zygote's answer is read."""

    def __init__(self, ctx, read, rows, limits, weigh):
        self.conn, child = ctx.Pipe()
        inherited = [self.conn.fileno()] if ctx.get_start_method() == "fork" else []
        args = (child, read, rows, limits, weigh, os.getpid(), inherited)
        self.proc = ctx.Process(target=_zygote, args=args, daemon=True)
        self.proc.start()
        child.close()
        self.unborn = deque()  # slots whose pid is not known yet, in the order asked for
        self.exits = {}  # pid -> exit code (None while it runs) of the workers of live slots

    def fork(self, slot):
        """Ask for a worker for ``slot``; its connection to it."""
        mine, theirs = multiprocessing.Pipe()
        self.conn.send(("fork", slot.scratch))
        reduction.send_handle(self.conn, theirs.fileno(), self.proc.pid)
        theirs.close()
        self.unborn.append(slot)
        return mine

    def drain(self):
        """Read what the zygote said (it would block once the pipe is full)."""
        while self.conn.poll():
            self._next()

    def _next(self):
        kind, pid, *code = self.conn.recv()
        if kind == "forked":
            slot = self.unborn.popleft()
            slot.pid = pid
            if not slot.stopped:
                self.exits[pid] = None
        elif pid in self.exits:
            self.exits[pid] = code[0]

    def pid(self, slot) -> int:
        while slot.pid is None:
            self._next()
        return slot.pid

    def exitcode(self, pid, timeout=5.0):
        """The exit code of worker ``pid`` (-N: killed by signal N), which has ended or is
        ending; None if the zygote does not tell it in time."""
        deadline = time.monotonic() + timeout
        with contextlib.suppress(EOFError, OSError):
            while self.exits.get(pid) is None and self.conn.poll(deadline - time.monotonic()):
                self._next()
        return self.exits.pop(pid, None)

    def forget(self, pid):
        """The exit of worker ``pid`` will not be asked for."""
        self.exits.pop(pid, None)

    def kill(self, pid):
        self.conn.send(("kill", pid))

    def close(self):
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.proc.join(timeout=5)
        if self.proc.is_alive():
            self.proc.kill()
            self.proc.join()
        self.conn.close()


class _Slot:
    """One worker process and the batch it holds."""

    def __init__(self, zygote: _Zygote, scratch: str):
        os.mkdir(scratch)
        self.zygote, self.scratch, self.pid = zygote, scratch, None
        self.conn = zygote.fork(self)
        self.batch, self.started = None, 0.0
        self.stopped, self.timed_out, self.exitcode = False, False, None

    def give(self, context, batch):
        self.batch, self.started = batch, time.monotonic()
        self.conn.send((context, batch))

    def answer(self):
        """The worker's answer for its batch (its pipe is readable), or False if it died."""
        try:
            return pickle.loads(self.conn.recv_bytes())
        except (EOFError, OSError):
            return self._ended()

    def kill(self):
        """Kill the worker (timeout); False, as answer() for a worker that died."""
        self.timed_out = True
        self.zygote.kill(self.zygote.pid(self))
        return self._ended()

    def _ended(self):
        self.exitcode = self.zygote.exitcode(self.zygote.pid(self))
        return False

    def last_words(self) -> list[str]:
        """What the worker printed on stderr for the log it held (e.g. before it crashed)."""
        try:
            with open(os.path.join(self.scratch, "stderr"), "rb") as f:
                said = f.read().decode(errors="replace").splitlines()
        except OSError:
            return []
        return [line for line in said if line.strip()]

    def stop(self):
        """Let the worker go (it exits on None, or has exited after a failure)."""
        if self.stopped:
            return
        self.stopped = True
        with contextlib.suppress(OSError):
            self.conn.send(None)
        self.conn.close()
        self.zygote.forget(self.pid)
        shutil.rmtree(self.scratch, ignore_errors=True)


class ReaderPool:
    """``jobs`` worker processes running ``read(checked, arg)`` per log (``checked``: its
    :class:`iostudy.logs.darshanlog_worker.CheckedLog`) and ``rows(context, [(arg, read result)])``
    per batch (module-level functions: they are pickled by name); see the module docstring.
    ``timeout``: seconds per log; ``limits``: the decompression bounds per log. Workers start
    with :meth:`start` (or the first :meth:`map`), from the thread that will stop them (they
    die with it), and stop with :meth:`close`; a pool is a context manager. ``weigh``: a read
    result's share of an answer (a module-level function, or None): a worker answers for the
    logs read so far once their shares reach 1 (DXT traces: a batch of large ones would hold
    gigabytes), and the rest of its batch is read after."""

    def __init__(
        self,
        read,
        rows,
        jobs: int,
        timeout: float = 120.0,
        batch: int = 64,
        limits=DEFAULT_LIMITS,
        weigh=None,
    ):
        self.read, self.rows, self.limits, self.weigh = read, rows, limits, weigh
        self.jobs, self.timeout, self.batch = max(1, jobs), timeout, max(1, batch)
        self.slots: list[_Slot] = []
        self.zygote, self.scratch, self.started = None, None, 0

    @staticmethod
    def _context():
        """fork while this process runs no other Python thread (the zygote then starts in
        milliseconds, with everything imported), else spawn: another Python thread (rich's
        progress refresh) can hold a lock of the interpreter or of a stream at the fork, which
        the child would then wait on for ever. Native threads do not count: numpy's OpenBLAS
        pool and pyarrow's jemalloc thread start at import and both have fork handlers, and
        glibc's malloc is fork-safe; the workers use neither DuckDB nor pyarrow. The zygote
        runs one thread: its forks are always safe."""
        single = threading.active_count() == 1
        return multiprocessing.get_context("fork" if single else "spawn")

    def start(self):
        """Start the workers now: best before the process starts threads (see _context)."""
        if self.zygote is None:
            self.scratch = scratch_dir()
            # what exists now (the imports, mostly) outlives the pool: while it runs, this
            # process's collections walk only the ingest's own objects (a few percent of its
            # time); close() gives them back to the collector, or the interpreter's last
            # collection would miss them (DuckDB's bindings then report leaks on stderr)
            gc.freeze()
            self.zygote = _Zygote(self._context(), self.read, self.rows, self.limits, self.weigh)
        while len(self.slots) < self.jobs:
            self.slots.append(self._slot())

    def _slot(self) -> _Slot:
        self.started += 1
        return _Slot(self.zygote, os.path.join(self.scratch, f"w{self.started}"))

    def close(self):
        for slot in self.slots:
            slot.stop()
        self.slots = []
        if self.zygote is not None:
            self.zygote.close()  # it kills the workers that are still there
            shutil.rmtree(self.scratch, ignore_errors=True)
            self.zygote = None
            gc.unfreeze()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def map(self, items, context=None):
        """Yield Batches until every item = (path, arg) is done or failed.
        ``context``: what rows needs besides the items (sent once per batch, not per log)."""
        items = iter(items)  # taken as needed: a facility's logs are not listed twice
        again = deque()  # batches to read before new items (see _answered and _died)

        def next_batch():
            if again:
                return again.popleft()
            return [item for _, item in zip(range(self.batch), items, strict=False)] or None

        pending = next_batch()
        if pending is not None:
            self.start()
        try:
            while True:
                pending = self._hand_out(context, pending, next_batch)
                busy = [s for s in self.slots if s.batch is not None]
                if not busy:
                    return
                for slot, answer in self._answers(busy):
                    batch, slot.batch = slot.batch, None
                    if answer is False:
                        yield from self._died(slot, batch, again)
                    else:
                        yield from self._answered(slot, batch, answer, again)
                    if pending is None:
                        pending = next_batch()
        except BaseException:
            self.close()  # workers may hold half a batch: never reuse them
            raise

    def _hand_out(self, context, pending, next_batch):
        """Give each idle slot a batch (a stopped one is replaced first); returns the batch
        that found no slot (None when the items ran out)."""
        for i, slot in enumerate(self.slots):
            if pending is None:
                break
            if slot.batch is None:
                if slot.stopped:
                    slot = self.slots[i] = self._slot()
                slot.give(context, pending)
                pending = next_batch()
        return pending

    def _answers(self, busy) -> list:
        """Wait for the busy slots until the first one's deadline: (slot, answer) of those that
        answered, and of those past their deadline, killed (answer False: it died)."""
        deadline = min(s.started + self.timeout * len(s.batch) for s in busy)
        ready = wait(
            [s.conn for s in busy] + [self.zygote.conn], max(0.0, deadline - time.monotonic())
        )
        if self.zygote.conn in ready:
            self.zygote.drain()
        out = []
        for slot in busy:
            if slot.conn in ready:
                out.append((slot, slot.answer()))
            elif time.monotonic() - slot.started > self.timeout * len(slot.batch):
                out.append((slot, slot.kill()))
        return out

    def _answered(self, slot, batch, answer, again):
        handled, parts, failed, damaged = answer
        if damaged:  # the worker exits after a log that failed in the library
            slot.stop()
        if handled < len(batch):
            again.appendleft(batch[handled:])
        for indices, payload in parts:
            yield Batch([batch[i] for i in indices], payload, [])
        if failed:
            yield Batch([], None, [(batch[i], reason) for i, reason in failed])

    def _died(self, slot, batch, again):
        """A worker that died or timed out holding ``batch``: a log alone is blamed, the logs
        of a larger batch are read again one per batch."""
        slot.stop()
        if len(batch) > 1:
            again.extend([item] for item in batch)
            return
        reason = death_reason(slot.exitcode)
        if slot.timed_out:
            reason = f"reader timed out after {self.timeout:g} s"
        yield Batch([], None, [(batch[0], Failure(reason, slot.last_words()))])
