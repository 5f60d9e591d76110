"""strace as the oracle: the system calls a program really made on a file, without the runtime.

`traced(cmd, path, calls)` runs cmd under `strace -f -ff -y -ttt` (one trace file per thread, so
no call is split across lines; the files are merged in time order, as threads share descriptors)
and returns each call made on a descriptor of ``path``, in order, as (call, descriptor, result,
how): how is "open" for a descriptor openat returned, "dup" for one an fcntl F_DUPFD made, as the
runtime's POSIX module tells them apart. The openat and fcntl calls that made them are listed
too.
"""

from __future__ import annotations

import glob
import os
import re
import subprocess
import tempfile
from dataclasses import dataclass

from rt_run import clean_env

_LINE = re.compile(r"^[\d.]+ (\w+)\((\d+)?(?:<([^>]*)>)?.*\)\s+=\s+(-?\d+)(?:<([^>]*)>)?")


@dataclass(frozen=True)
class Call:
    name: str
    fd: int  # the descriptor the call used, or returned for openat and fcntl
    result: int
    how: str  # "open" or "dup": how the descriptor was made


def traced(cmd: list, path: str, calls: str, env: dict | None = None, timeout=300) -> list[Call]:
    """The calls (strace's trace=calls, plus openat, fcntl and close) cmd made on path."""
    with tempfile.TemporaryDirectory() as d:
        prefix = os.path.join(d, "trace")
        subprocess.run(
            [
                "strace",
                "-f",
                "-ff",
                "-ttt",
                "-qq",
                "-y",
                "-s",
                "0",
                "-o",
                prefix,
                "-e",
                f"trace=openat,fcntl,close,{calls}",
                *map(str, cmd),
            ],
            env=clean_env(env),
            check=True,
            capture_output=True,
            timeout=timeout,
        )
        lines = []
        for trace in glob.glob(prefix + ".*"):
            with open(trace) as f:
                lines += f.readlines()
        return _on_path(
            sorted(lines, key=lambda line: float(line.split(" ", 1)[0])), os.path.realpath(path)
        )


def _on_path(lines, path: str) -> list[Call]:
    made: dict[int, str] = {}  # descriptor of path -> "open" or "dup"
    found = []
    for line in lines:
        m = _LINE.match(line)
        if not m:
            continue
        name, fd, fd_path, result, result_path = m.groups()
        result = int(result)
        if name == "openat" and result_path == path:
            made[result] = "open"
            found.append(Call(name, result, result, "open"))
        elif name == "fcntl" and result_path == path and "F_DUPFD" in line:
            made[result] = "dup"
            found.append(Call(name, result, result, "dup"))
        elif name == "close" and fd_path == path:
            made.pop(int(fd), None)
        elif name != "fcntl" and fd_path == path and int(fd) in made and result >= 0:
            found.append(Call(name, int(fd), result, made[int(fd)]))
    return found


def total(calls: list[Call], names: tuple, how: str | None = None) -> tuple[int, int]:
    """(how many, bytes) of the calls named names (on descriptors made so, if how is given)."""
    chosen = [c for c in calls if c.name in names and (how is None or c.how == how)]
    return len(chosen), sum(c.result for c in chosen)
