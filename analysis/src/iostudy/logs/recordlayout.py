"""The layout of a Darshan record module's records as libdarshan-util hands them over (base
record, int64 counters, double fcounters), from PyDarshan's cffi definitions: one definition for
the check of a log's regions (:mod:`iostudy.logs.logregions`), the reader
(:mod:`iostudy.logs.darshanlog_worker`) and the rows made of its records. A module of its own
so that the check and the reader share it without importing each other.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from iostudy.core.deferred import deferred

np = deferred("numpy")
backend = deferred("darshan.backend.cffi_backend")


class RecordLayout(NamedTuple):
    """A generic-record module's record as libdarshan-util hands it over: the counter names,
    the record's size and its numpy dtype."""

    cnames: list
    fnames: list
    size: int
    dtype: np.dtype


@functools.cache
def record_layout(mod) -> RecordLayout:
    """The layout of a module's records (base record, int64 counters, double fcounters), checked
    against cffi's struct size; once per process."""
    cnames, fnames = backend.counter_names(mod), backend.fcounter_names(mod)
    struct = backend._structdefs[mod].rstrip(" *")
    size = backend.ffi.sizeof(struct)
    if size != 16 + 8 * (len(cnames) + len(fnames)):
        raise RuntimeError(f"{mod}: unexpected record layout ({struct}: {size} bytes)")
    dtype = np.dtype(
        [
            ("id", np.uint64),
            ("rank", np.int64),
            ("counters", np.int64, len(cnames)),
            ("fcounters", np.float64, len(fnames)),
        ]
    )
    return RecordLayout(list(cnames), list(fnames), size, dtype)
