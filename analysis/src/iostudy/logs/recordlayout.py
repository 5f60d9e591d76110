"""The layout of a Darshan module's records as libdarshan-util hands them over, from PyDarshan's
cffi definitions: one definition for the check of a log's regions
(:mod:`iostudy.logs.logregions`), the reader (:mod:`iostudy.logs.darshanlog_worker`) and the
rows made of its records. A module of its own so that the check and the reader share it
without importing each other.

A record is a C struct (the log-format reference, section 5.1): the base record (id, rank),
then a module's own fields, in the writer's byte order. :func:`struct_dtype` makes any of them
a numpy dtype, field by field at cffi's offsets (H5D's and PNETCDF_VAR's file record id before
their counters, DFS's and DAOS's pool and container uuids after them, the AutoPerf modules'
header and per-rank records); :func:`record_layout` that of a generic-record module (int64
counters, double fcounters, named by libdarshan-util's tables). :func:`record_size` is the size
of a module's records of each version the reader knows.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from iostudy.core.deferred import deferred
from iostudy.logs.modules import CURRENT_VERSIONS

np = deferred("numpy")
backend = deferred("darshan.backend.cffi_backend")

# C types of the records' fields -> numpy's (a char array: bytes, NUL-padded)
_NUMPY = {"uint64_t": "u8", "int64_t": "i8", "double": "f8", "uint32_t": "u4",
          "unsigned char": "u1"}  # fmt: skip

# Older record versions libdarshan-util 3.5.0 reads and up-converts to the current one
# (darshan-util/darshan-{hdf5,bgq}-logutils.c), as bytes more than the current record: H5D 1
# had no file record id (the reader sets it to 0), BG/Q 1 an int and its padding after the base
# record. The record modules' own older versions (POSIX 1-3, ...) are left to the reader.
_OLDER = {("H5D", 1): -8, ("BG/Q", 1): 8}
# libdarshan-util's tables of counter names are named after the module, but BG/Q's after "BGQ"
# (bgq_counter_names): PyDarshan's counter_names("BG/Q") finds none
_TABLES = {"BG/Q": "BGQ"}


class RecordLayout(NamedTuple):
    """A generic-record module's record as libdarshan-util hands it over: the counter names,
    the record's size and its numpy dtype (fields id, rank, counters, fcounters and the
    module's others)."""

    cnames: list
    fnames: list
    size: int
    dtype: np.dtype


@functools.cache
def struct_dtype(struct: str) -> np.dtype:
    """The numpy dtype of a C struct of PyDarshan's cffi definitions ("struct
    darshan_dfs_file"): its fields at their offsets, the base record's id and rank at the top
    level, its size cffi's."""
    ctype = backend.ffi.typeof(struct)
    names, formats, offsets = [], [], []
    for name, fmt, offset in _fields(ctype, 0):
        names.append(name)
        formats.append(fmt)
        offsets.append(offset)
    return np.dtype(
        {
            "names": names,
            "formats": formats,
            "offsets": offsets,
            "itemsize": backend.ffi.sizeof(ctype),
        }
    )


def _fields(ctype, base: int):
    """(name, numpy format, offset) of each field of a cffi struct type; a struct field (the
    base record) flattened into its own."""
    for name, field in ctype.fields:
        kind, at = field.type.kind, base + field.offset
        if kind == "struct":
            yield from _fields(field.type, at)
        elif kind == "array" and field.type.item.cname == "char":
            yield name, np.dtype(f"S{field.type.length}"), at
        elif kind == "array":
            yield name, np.dtype((_NUMPY[field.type.item.cname], field.type.length)), at
        else:
            yield name, np.dtype(_NUMPY[field.type.cname]), at


@functools.cache
def record_layout(mod) -> RecordLayout:
    """The layout of a generic-record module's records (base record, int64 counters, double
    fcounters, and what else its struct holds), checked against libdarshan-util's counter
    names; once per process."""
    table = _TABLES.get(mod, mod)
    cnames, fnames = backend.counter_names(table), backend.fcounter_names(table)
    dtype = struct_dtype(backend._structdefs[mod].rstrip(" *"))
    counters, fcounters = dtype.fields["counters"][0], dtype.fields["fcounters"][0]
    if (counters.base, fcounters.base) != (np.dtype("i8"), np.dtype("f8")) or (
        counters.shape,
        fcounters.shape,
    ) != ((len(cnames),), (len(fnames),)):
        raise RuntimeError(f"{mod}: unexpected record layout ({dtype})")
    return RecordLayout(list(cnames), list(fnames), dtype.itemsize, dtype)


def record_size(mod: str, version: int) -> int | None:
    """The size of a generic-record module's records of module version ``version`` in a log;
    None for a version the reader does not know, or whose size is left to it."""
    if version == CURRENT_VERSIONS.get(mod):
        return record_layout(mod).size
    if (mod, version) in _OLDER:
        return record_layout(mod).size + _OLDER[mod, version]
    return None
