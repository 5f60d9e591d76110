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
of a module's records of each version the reader knows: the current one's struct, and each
older one's as darshan-util 3.5.0 reads it (``_OLDER``).
"""

from __future__ import annotations

import functools
from typing import NamedTuple

from iostudy.core.deferred import deferred
from iostudy.logs.modules import CURRENT_VERSIONS

np = deferred("numpy")
backend = deferred("darshan.backend.cffi_backend")

# C types of the records' fields -> numpy's (a char array: bytes, NUL-padded)
_NUMPY = {
    "uint64_t": "u8",
    "int64_t": "i8",
    "double": "f8",
    "uint32_t": "u4",
    "unsigned char": "u1",
}

# The older record versions libdarshan-util 3.5.0 reads, and up-converts to the current one as it
# reads them, by the size of their records in a log: the macro of darshan-util's
# darshan-<file>-logutils.c (tag 3.5.0) that its get function reads each record at; the
# counters and fcounters each version had (those of the log-format header of the releases that
# wrote it: Darshan 3.0 to 3.4), H5D 1 without the file record id (the reader sets it to 0),
# BG/Q 1 with an int and its padding after the base record. Every real test log holds whole
# records at these sizes, as many as PyDarshan reads (tests/test_older_records.py). LUSTRE's,
# HEATMAP's and DXT's records are of variable size: walked (logregions, dxt).
_OLDER = {
    ("POSIX", 1): 680,  # posix: DARSHAN_POSIX_FILE_SIZE_1; 68 counters, 15 fcounters (3.0)
    ("POSIX", 2): 648,  # DARSHAN_POSIX_FILE_SIZE_2; 64, 15 (no release wrote it)
    ("POSIX", 3): 664,  # DARSHAN_POSIX_FILE_SIZE_3; 64, 17 (3.1.0 to 3.1.6)
    ("MPI-IO", 1): 544,  # mpiio: DARSHAN_MPIIO_FILE_SIZE_1; 51, 15 (3.0 to 3.1.0)
    ("MPI-IO", 2): 544,  # DARSHAN_MPIIO_FILE_SIZE_1 too: 1's layout (3.1.1 to 3.1.6)
    ("STDIO", 1): 240,  # stdio: DARSHAN_STDIO_FILE_SIZE_1; 13, 15 (3.1.0 to 3.1.6)
    ("H5F", 1): 40,  # hdf5: DARSHAN_H5F_FILE_SIZE_1; 1, 2 (3.0 to 3.1.6)
    ("H5F", 2): 56,  # DARSHAN_H5F_FILE_SIZE_2; 1, 4 (3.1.7, 3.1.8)
    ("H5D", 1): 904,  # DARSHAN_H5D_DATASET_SIZE_1; 94, 17 (3.2)
    ("PNETCDF_FILE", 1): 48,  # pnetcdf: DARSHAN_PNETCDF_FILE_SIZE_1; 2, 2 (3.0 to 3.1.6)
    ("PNETCDF_FILE", 2): 64,  # DARSHAN_PNETCDF_FILE_SIZE_2; 2, 4 (3.1.7 to 3.4.0)
    ("BG/Q", 1): 120,  # bgq: DARSHAN_BGQ_FILE_SIZE_1, (112 + 8); 11, 1 (3.0)
}
# The field of H5D's and PNETCDF_VAR's records that links a dataset or variable to its file: the
# record id of the file's path (its H5F or PNETCDF_FILE record, and POSIX's)
FILE_ID = "file_rec_id"
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


@functools.lru_cache(maxsize=256)
def record_size(mod: str, version: int) -> int | None:
    """The size of a generic-record module's records of module version ``version`` in a log,
    as libdarshan-util 3.5.0 reads them (the current version's and each older one's it
    up-converts); None for a version it does not read (it refuses the log itself). Cached: the
    check asks it of every region of every log."""
    if version == CURRENT_VERSIONS.get(mod):
        return record_layout(mod).size
    return _OLDER.get((mod, version))
