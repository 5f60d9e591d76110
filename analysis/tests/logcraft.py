"""Crafted Darshan logs for tests: a real log with values of our choosing, or damaged.

Each helper takes a log's bytes and returns new bytes, structurally valid unless it is a damage
helper: a job field (:func:`set_job`), one counter or fcounter of one record of a module
(:func:`set_counter`: the module's region is inflated, patched and deflated again, and the
header's region map follows the change in size), a record's name dropped from the name region
(:func:`drop_name`), the regions stored uncompressed as a killed job's mmap log has them
(:func:`uncompressed`); and damage: bits flipped at seeded offsets, truncation, a region zeroed,
header bytes overwritten.

Formats 3.00 to 3.41, either byte order (the header's layout and reading are those of
``analysis/bench/corpus.py``, the benchmark corpus's job-id rewriting); records are patched in
place, so their module must be stored at its current version (every module of a 3.41 log, and
the newer records of the legacy formats, e.g. POSIX v4 in the 3.1.7 release log). The format
is ``../shared/reference/darshan-log-format.md``.
"""

import importlib.util
import random
import struct
import sys
import zlib
from pathlib import Path

from iostudy.logs.modules import CURRENT_VERSIONS
from iostudy.logs.recordlayout import record_layout

_CORPUS = Path(__file__).resolve().parents[1] / "bench" / "corpus.py"


def _load_corpus():
    """analysis/bench/corpus.py (not a package), once per process; test_corpus loads it too."""
    name = "iostudy_bench_corpus"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, _CORPUS)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[name]


corpus = _load_corpus()
LogFormatError = corpus.LogFormatError

# Offsets of the darshan_job fields (reference section 3.1): 3.41, and the formats before it.
JOB_FIELDS = {
    "3.41": {
        "uid": 0,
        "start_time_sec": 8,
        "start_time_nsec": 16,
        "end_time_sec": 24,
        "end_time_nsec": 32,
        "nprocs": 40,
        "jobid": 48,
    },
    "legacy": {"uid": 0, "start_time_sec": 8, "end_time_sec": 16, "nprocs": 24, "jobid": 32},
}
# Module ids in the 3.41 numbering (reference section 5).
MODULE_IDS = {
    "POSIX": 1,
    "MPI-IO": 2,
    "H5F": 3,
    "H5D": 4,
    "PNETCDF_FILE": 5,
    "PNETCDF_VAR": 6,
    "BG/Q": 7,
    "LUSTRE": 8,
    "STDIO": 9,
    "DXT_POSIX": 10,
    "DXT_MPIIO": 11,
    "APXC": 13,
    "APMPI": 14,
    "HEATMAP": 15,
    "DFS": 16,
    "DAOS": 17,
}
# Current record versions (what the records must be stored at to be patched in place):
# CURRENT_VERSIONS, the wheel's libdarshan-util's, which test_log_regions checks; those of the
# variable-size modules (reference section 5), whose regions are replaced whole.
VERSIONS = {**CURRENT_VERSIONS, "LUSTRE": 2, "HEATMAP": 1, "DXT_POSIX": 1, "DXT_MPIIO": 2}


def _slot(version: str, mod_id: int) -> int:
    """A module's slot in a header of ``version``: the reader inserts PNETCDF_VAR at 6 for
    formats before 3.41 and H5D at 4 for those before 3.20 (reference section 2.1)."""
    if version != "3.41" and mod_id > 6:
        mod_id -= 1
    if version in ("3.00", "3.10") and mod_id > 4:
        mod_id -= 1
    return mod_id


def _deflate(hdr, raw: bytes) -> bytes:
    return zlib.compress(raw) if hdr.comp_type == corpus.COMP_ZLIB else raw


def _inflate(hdr, region: bytes) -> bytes:
    if hdr.comp_type == corpus.COMP_NONE:
        return region
    if hdr.comp_type != corpus.COMP_ZLIB:
        raise LogFormatError(f"compression type {hdr.comp_type} not supported")
    return corpus._inflate(region)


def _job_extent(data: bytes, hdr) -> tuple[int, int]:
    return hdr.layout.header_size, hdr.job_end(len(data))


def _replace(data: bytes, start: int, end: int, new: bytes, length_at: int | None) -> bytes:
    """``data`` with its bytes [start, end) (a region) replaced by ``new``: every region from
    ``end`` on moves by the change in size (its header offset), and the header field at
    ``length_at`` (the region's map length; None: the job region, which has none) is set."""
    hdr = corpus.read_header(data)
    lay, order = hdr.layout, hdr.order
    delta = len(new) - (end - start)
    header = bytearray(data[: lay.header_size])
    maps = [lay.name_map] + [lay.mod_map + 16 * slot for slot in range(lay.slots)]
    for at in maps:
        off = struct.unpack_from(order + "Q", header, at)[0]
        if off >= end and off:
            struct.pack_into(order + "Q", header, at, off + delta)
    if length_at is not None:
        struct.pack_into(order + "Q", header, length_at, len(new))
    return bytes(header) + data[lay.header_size : start] + new + data[end:]


def set_job(data: bytes, **fields) -> bytes:
    """The log with darshan_job fields set (uid, start_time_sec, start_time_nsec,
    end_time_sec, end_time_nsec, nprocs, jobid; the nsec fields exist in 3.41 only)."""
    hdr = corpus.read_header(data)
    offsets = JOB_FIELDS["3.41" if hdr.version == "3.41" else "legacy"]
    start, end = _job_extent(data, hdr)
    job = bytearray(_inflate(hdr, data[start:end]))
    for name, value in fields.items():
        if name not in offsets:
            raise LogFormatError(f"format {hdr.version} has no job field {name}")
        struct.pack_into(hdr.order + "q", job, offsets[name], value)
    return _replace(data, start, end, _deflate(hdr, bytes(job)), None)


def _module_region(data: bytes, module: str, stored: int | None = None):
    """(header, slot, offset, length) of a module's region; raises unless it holds data stored
    at the module's current version (or at version ``stored``)."""
    hdr = corpus.read_header(data)
    slot = _slot(hdr.version, MODULE_IDS[module])
    off, length = hdr.mod_offs[slot]
    ver_at = hdr.layout.mod_map + 16 * hdr.layout.slots + 4 * slot
    version = struct.unpack_from(hdr.order + "I", data, ver_at)[0]
    if not length:
        raise LogFormatError(f"no {module} data in this log")
    if version != (stored or VERSIONS[module]):
        raise LogFormatError(f"{module} records of version {version}: not patched in place")
    return hdr, slot, off, length


def records(data: bytes, module: str) -> list[tuple[int, int]]:
    """(record id, rank) of each record of a module, in the region's order."""
    raw, order = module_region(data, module), corpus.read_header(data).order
    size = record_layout(module).size
    return [struct.unpack_from(order + "Qq", raw, at) for at in range(0, len(raw), size)]


def set_counter(data: bytes, module: str, record: int, counter: str, value) -> bytes:
    """The log with ``counter`` (a counter name, an int; or an fcounter name, a float) of the
    ``record``-th record of ``module`` set to ``value``."""
    hdr, slot, off, length = _module_region(data, module)
    lay = record_layout(module)
    if counter in lay.cnames:
        at, fmt = 16 + 8 * lay.cnames.index(counter), "q"
    elif counter in lay.fnames:
        at, fmt = 16 + 8 * (len(lay.cnames) + lay.fnames.index(counter)), "d"
    else:
        raise LogFormatError(f"{module} has no counter {counter}")
    raw = bytearray(_inflate(hdr, data[off : off + length]))
    if (record + 1) * lay.size > len(raw):
        raise LogFormatError(f"{module} has no record {record}")
    struct.pack_into(hdr.order + fmt, raw, record * lay.size + at, value)
    return set_module_region(data, module, bytes(raw))


def name_entries(data: bytes) -> list[tuple[int, bytes]]:
    """(record id, name) of each entry of the name region, in order (formats 3.10 on: entries
    of id u64 and a NUL-terminated name)."""
    hdr, off, length = _name_region(data)
    raw, entries, at = _inflate(hdr, data[off : off + length]), [], 0
    while at < len(raw):
        end = raw.index(b"\0", at + 8)
        entries.append((struct.unpack_from(hdr.order + "Q", raw, at)[0], raw[at + 8 : end]))
        at = end + 1
    return entries


def set_name_region(data: bytes, raw: bytes) -> bytes:
    """The log with ``raw`` as the inflated content of its name region (well formed or not)."""
    hdr, off, length = _name_region(data)
    return _replace(data, off, off + length, _deflate(hdr, raw), hdr.layout.name_map + 8)


def name_region(entries: list[tuple[int, bytes]], order: str = "<") -> bytes:
    """The inflated content of a name region holding ``entries`` (record id, name)."""
    return b"".join(struct.pack(order + "Q", rid) + name + b"\0" for rid, name in entries)


def _name_region(data: bytes):
    hdr = corpus.read_header(data)
    if hdr.version == "3.00":
        raise LogFormatError("3.00 name entries (id, length, bytes) are not supported")
    length = struct.unpack_from(hdr.order + "Q", data, hdr.layout.name_map + 8)[0]
    return hdr, hdr.name_off, length


def drop_name(data: bytes, record_id: int) -> bytes:
    """The log without the name table's entry of ``record_id``."""
    entries = name_entries(data)
    kept = [(rid, name) for rid, name in entries if rid != record_id]
    if len(kept) == len(entries):
        raise LogFormatError(f"no name entry for record {record_id}")
    return set_name_region(data, name_region(kept, corpus.read_header(data).order))


def set_module_region(
    data: bytes, module: str, raw: bytes, version: int | None = None, stored: int | None = None
) -> bytes:
    """The log with ``raw`` as the inflated content of a module's region (whole records or
    not; ``stored``: the version its records are stored at, if not the current one); with
    ``version``, the header's module version says raw is in that version's layout
    (libdarshan-util up-converts records of an older one as it reads them)."""
    hdr, slot, off, length = _module_region(data, module, stored)
    out = _replace(data, off, off + length, _deflate(hdr, raw), hdr.layout.mod_map + 16 * slot + 8)
    if version is not None:
        ver_at = hdr.layout.mod_map + 16 * hdr.layout.slots + 4 * slot
        out = overwrite(out, ver_at, struct.pack(hdr.order + "I", version))
    return out


# A PNETCDF_FILE record of module version 2, as Darshan 3.3.1's runtime wrote it (its
# darshan-pnetcdf-log-format.h; the layout libdarshan-util 3.5.0's darshan_log_get_pnetcdf_file
# up-converts): id, rank, PNETCDF_INDEP_OPENS, PNETCDF_COLL_OPENS (creates counted as opens),
# then the OPEN_START, CLOSE_START, OPEN_END and CLOSE_END timestamps; 64 bytes.
PNETCDF_FILE_V2 = "Qqqqdddd"
PNETCDF_FILE_V2_TIMES = tuple(
    f"PNETCDF_FILE_F_{t}_TIMESTAMP" for t in ("OPEN_START", "CLOSE_START", "OPEN_END", "CLOSE_END")
)


def pnetcdf_file_v2(data: bytes, indep_opens: int, coll_opens: int) -> bytes:
    """The log with its PNETCDF_FILE records written at module version 2 instead: each keeps
    its id, rank and the four timestamps version 2 had, with the given opens."""
    order = corpus.read_header(data).order
    lay = record_layout("PNETCDF_FILE")
    raw, out = module_region(data, "PNETCDF_FILE"), []
    for at in range(0, len(raw), lay.size):
        rid, rank = struct.unpack_from(order + "Qq", raw, at)
        fcounters = struct.unpack_from(
            f"{order}{len(lay.fnames)}d", raw, at + 16 + 8 * len(lay.cnames)
        )
        times = [fcounters[lay.fnames.index(name)] for name in PNETCDF_FILE_V2_TIMES]
        out.append(struct.pack(order + PNETCDF_FILE_V2, rid, rank, indep_opens, coll_opens, *times))
    return set_module_region(data, "PNETCDF_FILE", b"".join(out), version=2)


def module_region(data: bytes, module: str, stored: int | None = None) -> bytes:
    """The inflated content of a module's region (``stored``: the version its records are
    stored at, if not the current one)."""
    hdr, _, off, length = _module_region(data, module, stored)
    return _inflate(hdr, data[off : off + length])


def uncompressed(data: bytes) -> bytes:
    """The log with every region stored raw (comp_type 2), as the runtime's mmap log of a
    killed job is (reference section 10.4)."""
    hdr = corpus.read_header(data)
    lay, order = hdr.layout, hdr.order
    maps = [lay.name_map] + [lay.mod_map + 16 * s for s, (_, n) in enumerate(hdr.mod_offs) if n]
    out = data
    # the last region first: a region's replacement moves only the regions after it
    for at in sorted(maps, key=lambda a: struct.unpack_from(order + "Q", data, a)[0])[::-1]:
        off, length = struct.unpack_from(order + "QQ", out, at)
        out = _replace(out, off, off + length, _inflate(hdr, out[off : off + length]), at + 8)
    start, end = _job_extent(out, corpus.read_header(out))
    out = _replace(out, start, end, _inflate(hdr, out[start:end]), None)
    return overwrite(out, 16, bytes([corpus.COMP_NONE]))


# -- damage --------------------------------------------------------------------------------------


def flip_bits(data: bytes, count: int, seed: int, start: int = 0, end: int | None = None):
    """``data`` with ``count`` bits flipped at offsets drawn with ``seed`` from [start, end);
    returns (the bytes, [(offset, bit)])."""
    rng = random.Random(seed)
    flips = [
        (rng.randrange(start, len(data) if end is None else end), rng.randrange(8))
        for _ in range(count)
    ]
    for offset, bit in flips:
        data = flip(data, offset, bit)
    return data, flips


def flip(data: bytes, offset: int, bit: int) -> bytes:
    """``data`` with bit ``bit`` (0: the lowest) of the byte at ``offset`` flipped."""
    return data[:offset] + bytes([data[offset] ^ 1 << bit]) + data[offset + 1 :]


def truncate(data: bytes, size: int) -> bytes:
    return data[:size]


def zero_region(data: bytes, region: str) -> bytes:
    """The log with a region's stored bytes zeroed: "job", "names" or a module name."""
    hdr = corpus.read_header(data)
    if region == "job":
        start, end = _job_extent(data, hdr)
    elif region == "names":
        start = hdr.name_off
        end = start + struct.unpack_from(hdr.order + "Q", data, hdr.layout.name_map + 8)[0]
    else:
        _, _, start, length = _module_region(data, region)
        end = start + length
    return data[:start] + bytes(end - start) + data[end:]


def overwrite(data: bytes, offset: int, raw: bytes) -> bytes:
    """``data`` with ``raw`` written at ``offset`` (e.g. a header field)."""
    return data[:offset] + raw + data[offset + len(raw) :]
