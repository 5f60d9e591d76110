"""The counters a record module's older versions did not have, defined once.

libdarshan-util (3.5.0, the one PyDarshan wraps) reads a record written at an older module
version by up-converting it to the current version (iostudy.logs.modules.CURRENT_VERSIONS), and
fills each counter and fcounter that version did not have with -1 (``POSIX_RENAMED_FROM``, a
record id, with 0). Such a value was never measured: it is "not recorded (module version N)",
stored as null, never summed, and the only -1 plausibility allows there.

:data:`ADDED` is read off darshan-util/darshan-{posix,mpiio,stdio,hdf5,pnetcdf}-logutils.c of
Darshan 3.5.0 (``darshan_log_get_*``: what each step up sets to -1) and checked against every
real test log (tests/test_upconversion.py). What the reader derives rather than fills is
recorded: PNETCDF_FILE_OPENS of versions 1 and 2 is their independent plus collective opens
(those versions counted a create as an open). H5D version 1 had no file record id (the
reader sets it to 0): its files rows' ``file_record_id`` is null (:data:`FILE_ID_SINCE`).
Not counters of a record module iostudy stores, so not in the table: POSIX version 1 records
with fopen counters are dropped whole by the reader; LUSTRE version 1 components lack their
stripe pattern, flags, extent end and mirror id (-1) and extent start (0); DXT_MPIIO version 1
segments lack their offsets (-1).
"""

from __future__ import annotations

import functools
import json
import re

# module -> {version: the counters and fcounters first written at that version}
ADDED = {
    "POSIX": {
        3: ("POSIX_F_CLOSE_START_TIMESTAMP", "POSIX_F_OPEN_END_TIMESTAMP"),
        4: (
            "POSIX_FILENOS",
            "POSIX_DUPS",
            "POSIX_RENAME_SOURCES",
            "POSIX_RENAME_TARGETS",
            "POSIX_RENAMED_FROM",
        ),
    },
    "MPI-IO": {3: ("MPIIO_F_CLOSE_START_TIMESTAMP", "MPIIO_F_OPEN_END_TIMESTAMP")},
    "STDIO": {2: ("STDIO_FDOPENS",)},
    "H5F": {
        2: ("H5F_F_CLOSE_START_TIMESTAMP", "H5F_F_OPEN_END_TIMESTAMP"),
        3: ("H5F_FLUSHES", "H5F_USE_MPIIO", "H5F_F_META_TIME"),
    },
    "PNETCDF_FILE": {
        2: ("PNETCDF_FILE_F_CLOSE_START_TIMESTAMP", "PNETCDF_FILE_F_OPEN_END_TIMESTAMP"),
        3: (
            "PNETCDF_FILE_CREATES",
            "PNETCDF_FILE_REDEFS",
            "PNETCDF_FILE_INDEP_WAITS",
            "PNETCDF_FILE_COLL_WAITS",
            "PNETCDF_FILE_SYNCS",
            "PNETCDF_FILE_BYTES_READ",
            "PNETCDF_FILE_BYTES_WRITTEN",
            "PNETCDF_FILE_WAIT_FAILURES",
            "PNETCDF_FILE_F_WAIT_START_TIMESTAMP",
            "PNETCDF_FILE_F_WAIT_END_TIMESTAMP",
            "PNETCDF_FILE_F_META_TIME",
            "PNETCDF_FILE_F_WAIT_TIME",
        ),
    },
}

# module -> the version whose records first held the record id of their file (an older one's:
# 0, as the reader fills it); modules not named have none, or had it from version 1
FILE_ID_SINCE = {"H5D": 2}

# A jobs.flags reason naming the files columns of a module stored as null: flag() writes it,
# flagged() reads it back for a job page.
_FLAG = "{module} records of module version {version}: {columns} {text}, stored as null"
_FLAGGED = re.compile(r"(\S+) records of module version (\d+): ([a-z0-9_, ]+) not recorded \(")


@functools.cache
def not_recorded(module: str, version: int) -> frozenset[str]:
    """The counters and fcounters a record of ``module`` (PyDarshan's name) written at module
    version ``version`` did not have: none at the current version."""
    return frozenset(c for v, added in ADDED.get(module, {}).items() if v > version for c in added)


@functools.cache
def ever_not_recorded(module: str) -> frozenset[str]:
    """The counters and fcounters some older version of ``module`` did not have."""
    return frozenset(c for added in ADDED.get(module, {}).values() for c in added)


def text(version: int) -> str:
    """What iostudy shows for a value the log's module version did not record."""
    return f"not recorded (module version {version})"


def flag(module: str, version: int, columns) -> str:
    """The jobs.flags reason of a log whose ``module`` records (of ``version``) had none of
    the counters of the files ``columns``."""
    return _FLAG.format(
        module=module, version=version, columns=", ".join(columns), text=text(version)
    )


def flagged(flags) -> dict[str, tuple[int, tuple[str, ...]]]:
    """{module: (its version, the files columns not recorded)} of a jobs row's ``flags`` (its
    JSON list of reasons; None or NaN: none)."""
    reasons = json.loads(flags) if isinstance(flags, str) else []
    found = {}
    for reason in reasons:
        if m := _FLAGGED.match(reason):
            found[m[1]] = (int(m[2]), tuple(m[3].split(", ")))
    return found
