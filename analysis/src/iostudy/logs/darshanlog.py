"""Read Darshan-format logs safely: the one reader of iostudy (CLI, analysis, runtime tests).

PyDarshan (libdarshan-util) is the reference reader, but it is not robust: a damaged log can make
it abort or segfault, and damage inside data regions is often only reported on stderr while the
read "succeeds" with records missing (see the log-format reference, section 11.3). So every log is
read in a child process, a worker of a :class:`iostudy.logs.logpool.ReaderPool` of one: a crash,
a timeout or any stderr line is an error naming the file, and a worker that saw libdarshan-util
fail is replaced before the next log. The pool starts at a process's first read and lives as
long as the thread that started it: a later read costs no interpreter start (about a second
of importing PyDarshan before).

The worker reads only a regular file (a symbolic link is followed: the path is the caller's), and
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
- ``records``: {module: [{id, rank, counters {name: int}, fcounters {name: float}}]} for the
  record modules (POSIX, STDIO, MPI-IO, HDF5's H5F and H5D, PnetCDF's PNETCDF_FILE and
  PNETCDF_VAR, DFS, DAOS), from ``report.records[mod].to_df()`` (only records that have a
  name); H5D's and PNETCDF_VAR's with ``file_rec_id`` too: the record id of the dataset's or
  variable's file (0 in an H5D version 1 record, which had none), as PyDarshan's
  ``to_list()`` gives it
- ``lustre``: [{id, rank, components [{counters {LUSTRE_COMP_*: int}, pool_name, ost_ids [int]}]}],
  the LUSTRE module's layouts, from ``report.records["LUSTRE"].to_df()`` (named records only)
- ``heatmaps``: {api: {nbins, bin_width, ranks [sorted], read {rank: [bytes per bin]},
  write {rank: [...]}}}, PyDarshan's ``report.heatmaps`` (api: POSIX, STDIO, MPIIO, ...)
- ``raw_record_counts``: {module: records stored in the log, named or not} for the modules of
  ``records``, BG/Q and HEATMAP, from libdarshan-util directly
- ``heatmap_records``: every stored HEATMAP record, unmerged: [{id, rank, nbins, bin_width,
  read [..], write [..]}]
- ``job_records``: {module: [{rank, node, values {counter: int or float}}]} of the job-level
  modules (BG/Q; APXC and APMPI, the header first), values that are not 0, as darshan-parser
  names them; node: APMPI's MPI_PROCESSOR_NAME of a rank, else None (iostudy.logs.jobmodules)
"""

import atexit
import os
import threading
from pathlib import Path

from iostudy.core.errors import BadInput
from iostudy.logs.darshanlog_worker import dump
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logregions import DEFAULT_LIMITS, Limits


class DarshanLogError(BadInput):
    """A log could not be read cleanly; ``reason`` says why, ``stderr`` holds the reader's lines."""

    def __init__(self, path, reason, stderr=()):
        self.path = str(path)
        self.reason = reason
        self.stderr = list(stderr)
        message = f"{self.path}: {reason}"
        if self.stderr:
            message += " [" + "; ".join(self.stderr) + "]"
        super().__init__(message)


def read_log(path, timeout=120, limits: Limits = DEFAULT_LIMITS):
    """Return the content of the Darshan log at ``path`` (see the module docstring for the keys).

    Raises DarshanLogError.
    """
    path = Path(path)
    if not path.exists():
        raise DarshanLogError(path, "no such file")
    pool = _reader(limits)
    pool.timeout = timeout
    # realpath: the pool opens without following a link, a path a user names is followed;
    # the answers are read to the end (a map left halfway closes the pool)
    logs, failed = [], []
    for batch in pool.map([(os.path.realpath(path), None)]):
        logs += batch.payload or []
        failed += batch.failed
    for _, failure in failed:
        raise DarshanLogError(path, failure.reason, failure.stderr)
    return {"path": str(path), **logs[0]}


def _dumped(checked, _arg):
    """The pool's read: the log as plain data."""
    return dump(checked)


def _logs(_context, entries):
    """The pool's rows: the logs read, in order."""
    return [log for _, log in entries]


# (process id, limits, pool) of each thread: a pool's workers die with the thread that started
# them, and a forked child must not talk to its parent's workers
_readers = threading.local()


def _reader(limits: Limits) -> ReaderPool:
    """This thread's pool of one reader within ``limits``, started at its first map."""
    owner = getattr(_readers, "owner", None)
    if owner is not None and owner[:2] == (os.getpid(), limits):
        return owner[2]
    if owner is not None and owner[0] == os.getpid():
        owner[2].close()
    pool = ReaderPool(_dumped, _logs, jobs=1, batch=1, limits=limits)
    _readers.owner = (os.getpid(), limits, pool)
    atexit.register(_close_if_mine, os.getpid(), pool)
    return pool


def _close_if_mine(pid: int, pool: ReaderPool):
    if os.getpid() == pid:
        pool.close()
