"""Read Darshan-format logs safely: the one reader of iostudy (CLI, analysis, runtime tests).

PyDarshan (libdarshan-util) is the reference reader, but it is not robust: a damaged log can make
it abort or segfault, and damage inside data regions is often only reported on stderr while the
read "succeeds" with records missing (see the log-format reference, section 11.3). So every log is
read in a child process (:mod:`iostudy.logs.darshanlog_worker`), and a non-zero exit, a signal, a
timeout or any stderr line is an error naming the file.

The child reads only a regular file (a symbolic link is followed: the path is the caller's), and
only within the decompression bounds ``limits`` (:class:`iostudy.logs.logregions.Limits`): a
small log can inflate to gigabytes. It reads the log through ``/proc/self/fd/N``, from inside a
scratch directory: after a failed read, libdarshan-util's cleanup can unlink its log file using a
path from freed memory, and raw inputs must never be modified.

:func:`read_log` returns a dict of plain Python data (``json.dump`` accepts it; integer dict keys
become strings there). Record ids are unsigned 64-bit ints and every counter an exact int (the
child reads PyDarshan's frames column by column, never through a float64 row):

- ``path``: the log as given; ``exe``: the command line; ``mounts``: [[mount point, fs type]]
- ``job``: PyDarshan's ``metadata["job"]``: uid, start_time_sec/nsec, end_time_sec/nsec, nprocs,
  jobid, run_time, log_ver, metadata {key: value}
- ``modules``: {name: {len, ver, partial_flag}} for every module in the log
- ``name_records``: {id: name}
- ``records``: {module: [{id, rank, counters {name: int}, fcounters {name: float}}]} for POSIX,
  STDIO, MPI-IO and the file-level records of HDF5 (H5F) and PnetCDF (PNETCDF_FILE), from
  ``report.records[mod].to_df()`` (only records that have a name)
- ``lustre``: [{id, rank, components [{counters {LUSTRE_COMP_*: int}, pool_name, ost_ids [int]}]}],
  the LUSTRE module's layouts, from ``report.records["LUSTRE"].to_df()`` (named records only)
- ``heatmaps``: {api: {nbins, bin_width, ranks [sorted], read {rank: [bytes per bin]},
  write {rank: [...]}}}, PyDarshan's ``report.heatmaps`` (api: POSIX, STDIO, MPIIO, ...)
- ``raw_record_counts``: {module: records stored in the log, named or not} for the record
  modules and HEATMAP, from libdarshan-util directly
- ``heatmap_records``: every stored HEATMAP record, unmerged: [{id, rank, nbins, bin_width,
  read [..], write [..]}]
"""

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from iostudy.logs.logpool import CRASHES, scratch_dir
from iostudy.logs.logregions import DEFAULT_LIMITS, Limits


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


def _failure_reason(returncode, stdout):
    """Why the worker failed: its own error report and/or the way it died."""
    try:
        error = json.loads(stdout)["error"]
    except (ValueError, KeyError, TypeError):
        error = None
    # A child killed by signal N shows as -N; through a shell it shows as 128+N.
    signum = -returncode if returncode < 0 else returncode - 128
    if signum in CRASHES:
        crash = f"reader {CRASHES[signum]}, exit status {returncode}"
        return f"{crash}, after {error}" if error else crash
    return error or f"reader exited with status {returncode}"


def add_limit_options(parser) -> None:
    """The reader's decompression bounds as options (--max-inflated, --max-records) of a
    command that reads logs: ``iostudy log summary`` and ``iostudy ingest``."""
    parser.add_argument(
        "--max-inflated", type=int, default=DEFAULT_LIMITS.max_bytes >> 20, metavar="MIB",
        help="refuse a log whose regions inflate past MIB MiB in all (a decompression bomb; "
        "default %(default)s)",
    )  # fmt: skip
    parser.add_argument(
        "--max-records", type=int, default=DEFAULT_LIMITS.max_records, metavar="N",
        help="refuse a log with more than N records in one module (default %(default)s)",
    )  # fmt: skip


def limits_from(args) -> Limits:
    """The Limits that add_limit_options' options give."""
    return DEFAULT_LIMITS._replace(max_bytes=args.max_inflated << 20, max_records=args.max_records)


def read_log(path, timeout=120, limits: Limits = DEFAULT_LIMITS):
    """Return the content of the Darshan log at ``path`` (see the module docstring for the keys).

    Raises DarshanLogError.
    """
    path = Path(path)
    if not path.exists():
        raise DarshanLogError(path, "no such file")
    # The reader must not run instrumented (by iostudy's runtime or Darshan): it would write a log
    # of its own, and a warning of the runtime on stderr would read as a complaint about the log.
    env = {
        k: v for k, v in os.environ.items() if k != "LD_PRELOAD" and not k.startswith("DARSHAN_")
    }
    # -W ignore: stderr is for libdarshan-util's complaints only, not Python warnings.
    cmd = [
        sys.executable,
        "-W",
        "ignore",
        "-m",
        "iostudy.logs.darshanlog_worker",
        str(path.absolute()),
    ]
    cmd.append(json.dumps(limits._asdict()))
    scratch = scratch_dir()
    try:
        # errors="replace": a crashing reader can print bytes from freed memory.
        proc = subprocess.run(
            cmd,
            cwd=scratch,
            env=env,
            capture_output=True,
            text=True,
            errors="replace",
            timeout=timeout,
        )
    except subprocess.TimeoutExpired as exc:
        stderr = (exc.stderr or b"").decode(errors="replace").splitlines()
        raise DarshanLogError(path, f"reader timed out after {timeout} s", stderr) from None
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    stderr = [line for line in proc.stderr.splitlines() if line.strip()]
    if proc.returncode != 0:
        raise DarshanLogError(path, _failure_reason(proc.returncode, proc.stdout), stderr)
    if stderr:
        raise DarshanLogError(path, "libdarshan-util reported problems", stderr)
    return {"path": str(path), **_int_keys(json.loads(proc.stdout))}


def _int_keys(log):
    """Undo JSON's stringification of the integer keys (record ids, ranks)."""
    log["name_records"] = {int(k): v for k, v in log["name_records"].items()}
    for hm in log["heatmaps"].values():
        for kind in ("read", "write"):
            hm[kind] = {int(rank): bins for rank, bins in hm[kind].items()}
    return log
