"""`iostudy logs merge`: one job log from the memory-mapped per-process logs a killed job left.

The runtime keeps each process's records in a memory-mapped, uncompressed Darshan log
(DARSHAN_MMAP_LOGPATH) and removes it when the normal log is written; a job killed by SIGKILL,
a crash or its time limit leaves them. The merge itself is the runtime's own code (the
`iostudy-merge` program built beside libiostudy.so, sharing the shutdown's reduction and
writer); this command finds it, runs it, and reads the result back with PyDarshan before
saying it is done. A merged log is never written over an existing file.
"""

import os
import shutil
import subprocess
from pathlib import Path

from iostudy.core import config
from iostudy.core.errors import BadInput, Failed
from iostudy.logs.darshanlog import DarshanLogError, read_log

TOOL = "iostudy-merge"
#: the tool's exit status for logs it cannot merge (its other failures exit 1)
TOOL_REFUSED = 2


class MergeRefused(BadInput):
    """Logs that cannot be merged, or an output that exists; the message names the file."""


class MergeFailed(Failed):
    """The merge tool is missing or failed, or its log does not read back."""


def find_tool() -> Path | None:
    """IOSTUDY_MERGE, else the CMake build of this checkout, else PATH (a Spack view's bin)."""
    candidates = [os.environ.get("IOSTUDY_MERGE"), config.REPO_ROOT / "build" / "runtime" / TOOL]
    candidates.append(shutil.which(TOOL))
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    return None


def merge(logs: list[Path], output: Path, job_end_time: float | None, reduce: bool) -> dict:
    """Merges ``logs`` into ``output`` with the runtime's tool; returns the merged log as
    :func:`iostudy.logs.darshanlog.read_log` reads it back. Raises MergeRefused for inputs or
    an output it cannot take, MergeFailed when the tool is missing or fails."""
    tool = find_tool()
    if tool is None:
        raise MergeFailed(
            f"{TOOL} not found: run `make setup` (or `make spack`), or set IOSTUDY_MERGE to it"
        )
    missing = [str(p) for p in logs if not p.is_file()]
    if missing:
        raise MergeRefused(f"no such file: {', '.join(missing)}")
    if output.exists():
        raise MergeRefused(f"{output} exists: a log is never overwritten")
    cmd = [str(tool), "--output", str(output)]
    if job_end_time is not None:
        cmd += ["--job-end-time", repr(job_end_time)]
    if not reduce:
        cmd.append("--no-shared-reduction")
    # The merge must not be instrumented itself.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("DARSHAN")}
    proc = subprocess.run(cmd + [str(p) for p in logs], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        said = proc.stderr.strip() or f"{TOOL} failed ({proc.returncode})"
        raise (MergeRefused if proc.returncode == TOOL_REFUSED else MergeFailed)(said)
    try:
        return read_log(output)
    except DarshanLogError as exc:
        raise MergeFailed(f"the merged log does not read back: {exc}") from None
