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
import sys
from pathlib import Path

from iostudy.core import config
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED
from iostudy.core.helptext import plain
from iostudy.logs.darshanlog import DarshanLogError, read_log

TOOL = "iostudy-merge"


def find_tool() -> Path | None:
    """IOSTUDY_MERGE, else the CMake build of this checkout, else PATH (a Spack view's bin)."""
    candidates = [os.environ.get("IOSTUDY_MERGE"), config.REPO_ROOT / "build" / "runtime" / TOOL]
    candidates.append(shutil.which(TOOL))
    for c in candidates:
        if c and Path(c).is_file() and os.access(c, os.X_OK):
            return Path(c)
    return None


def merge(logs: list[Path], output: Path, job_end_time: float | None, reduce: bool) -> int:
    tool = find_tool()
    if tool is None:
        print(
            f"iostudy logs merge: {TOOL} not found: run `make setup` (or `make spack`), or set "
            "IOSTUDY_MERGE to it",
            file=sys.stderr,
        )
        return EXIT_FAILED
    missing = [str(p) for p in logs if not p.is_file()]
    if missing:
        print(f"iostudy logs merge: no such file: {', '.join(missing)}", file=sys.stderr)
        return EXIT_BAD_INPUT
    if output.exists():
        print(f"iostudy logs merge: {output} exists: a log is never overwritten", file=sys.stderr)
        return EXIT_BAD_INPUT
    cmd = [str(tool), "--output", str(output)]
    if job_end_time is not None:
        cmd += ["--job-end-time", repr(job_end_time)]
    if not reduce:
        cmd.append("--no-shared-reduction")
    # The merge must not be instrumented itself.
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("DARSHAN")}
    proc = subprocess.run(cmd + [str(p) for p in logs], env=env, capture_output=True, text=True)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr or f"iostudy logs merge: {TOOL} failed ({proc.returncode})\n")
        return proc.returncode
    try:
        log = read_log(output)
    except DarshanLogError as exc:
        print(f"iostudy logs merge: the merged log does not read back: {exc}", file=sys.stderr)
        return EXIT_FAILED
    counts = ", ".join(f"{m} {len(r)}" for m, r in log["records"].items())
    print(
        f"merged {len(logs)} logs of job {log['job']['jobid']} ({log['job']['nprocs']} processes) "
        f"into {output}: {counts or 'no records'}"
    )
    return 0


def cmd_merge(args):
    return merge([Path(p) for p in args.logs], Path(args.output), args.job_end_time, args.reduce)


def register(log_commands):
    """Adds `merge` to the `iostudy log` (alias `logs`) group's subparsers."""
    m = log_commands.add_parser(
        "merge",
        help="merge the memory-mapped logs a killed job left into one log",
        description=plain(__doc__.split("\n\n")[1]),
    )
    m.add_argument("logs", nargs="+", metavar="LOG", help="the job's *_mmap-log-*.darshan files")
    m.add_argument("--output", required=True, help="the merged log (must not exist)")
    m.add_argument(
        "--job-end-time",
        type=float,
        metavar="SECONDS",
        help="the job's end (Unix seconds, e.g. from sacct); default: the last record's",
    )
    m.add_argument(
        "--no-shared-reduction",
        dest="reduce",
        action="store_false",
        help="keep every process's record of a file every process opened",
    )
    m.set_defaults(func=cmd_merge)
