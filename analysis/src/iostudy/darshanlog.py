"""Read Darshan-format logs safely.

PyDarshan (libdarshan-util) is the reference reader, but it is not robust: a damaged log can make
it abort or segfault, and damage inside data regions is often only reported on stderr while the
read "succeeds" with records missing (see the log-format reference, section 11.3). So every log is
read in a child process, and a non-zero exit, a timeout or any stderr line is an error.

The child reads a private copy of the log, from inside a scratch directory: after a failed read,
libdarshan-util's cleanup can unlink its log file using a path from freed memory, and raw inputs
must never be modified.
"""

import json
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path


class DarshanLogError(Exception):
    """A log could not be read cleanly; ``reason`` says why, ``stderr`` holds the reader's lines."""

    def __init__(self, path, reason, stderr=()):
        self.path = str(path)
        self.reason = reason
        self.stderr = list(stderr)
        message = f"{self.path}: {reason}"
        if self.stderr:
            message += " [" + "; ".join(self.stderr) + "]"
        super().__init__(message)


# Signals with which libdarshan-util is known to die on damaged logs.
_CRASHES = {signal.SIGABRT: "aborted (SIGABRT)", signal.SIGSEGV: "crashed (segfault)"}


def _failure_reason(returncode, stdout):
    """Why the worker failed: its own error report and/or the way it died."""
    try:
        error = json.loads(stdout)["error"]
    except (ValueError, KeyError, TypeError):
        error = None
    # A child killed by signal N shows as -N; through a shell it shows as 128+N.
    signum = -returncode if returncode < 0 else returncode - 128
    if signum in _CRASHES:
        crash = f"reader {_CRASHES[signum]}, exit status {returncode}"
        return f"{crash}, after {error}" if error else crash
    return error or f"reader exited with status {returncode}"


def read_log(path, timeout=120):
    """Return the content of the Darshan log at ``path`` as a JSON-like dict.

    Keys: path, job, exe, mounts, modules, name_records, records (POSIX, STDIO, MPI-IO; record ids
    are strings, as in name_records), heatmaps. Raises DarshanLogError.
    """
    path = Path(path)
    if not path.exists():
        raise DarshanLogError(path, "no such file")
    with tempfile.TemporaryDirectory(prefix="iostudy-read-") as scratch:
        shutil.copyfile(path, Path(scratch, "log.darshan"))
        # -W ignore: stderr is for libdarshan-util's complaints only, not Python warnings.
        cmd = [sys.executable, "-W", "ignore", "-m", "iostudy.darshanlog_worker", "log.darshan"]
        try:
            # errors="replace": a crashing reader can print bytes from freed memory.
            proc = subprocess.run(
                cmd, cwd=scratch, capture_output=True, text=True, errors="replace", timeout=timeout
            )
        except subprocess.TimeoutExpired as exc:
            stderr = (exc.stderr or b"").decode(errors="replace").splitlines()
            raise DarshanLogError(path, f"reader timed out after {timeout} s", stderr) from None
    stderr = [line for line in proc.stderr.splitlines() if line.strip()]
    if proc.returncode != 0:
        raise DarshanLogError(path, _failure_reason(proc.returncode, proc.stdout), stderr)
    if stderr:
        raise DarshanLogError(path, "libdarshan-util reported problems", stderr)
    return {"path": str(path), **json.loads(proc.stdout)}
