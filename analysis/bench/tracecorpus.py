"""A corpus of Darshan logs with DXT traces, for the trace step of `make bench-analysis`.

``build(out, copies, big, segments)`` writes ``copies`` copies of a log Darshan 3.5.0 wrote
with a DXT_POSIX trace (:data:`SOURCE`: 2 ranks, 2,000 writes of 100 bytes each, 4,000
segments), and ``big`` logs made from it whose first DXT_POSIX record holds ``segments``
writes (sequential 4 KiB writes, one after another in time), each log with a job id of its own
(:func:`corpus.set_jobid`). Ingest keeps at most ``--max-dxt-segments`` (1,000,000) of a log:
the big logs are over it, as a facility's worst trace is.

Standard library only; the DXT record is the log-format reference's section 6.6.
"""

import struct
import zlib
from pathlib import Path

import corpus

SOURCE = (
    corpus.REPO_ROOT
    / "analysis"
    / "tests"
    / "data"
    / "darshan-logs"
    / "darshan-built"
    / "darshan-3.5.0-io_patterns-small-dxt.darshan"
)
DXT_POSIX_SLOT = 10  # of format 3.41
# A DXT record's fixed part: base record (16), shared_record, hostname[64], write_count,
# read_count; then 32 bytes a segment (offset, length, start, end), writes first
COUNTS_AT, FIXED = 88, 104
SEGMENT = struct.Struct("<qqdd")
WRITE_SIZE = 4096


def with_big_trace(data: bytes, segments: int) -> bytes:
    """The 3.41 little-endian log ``data`` whose first DXT_POSIX record holds ``segments``
    writes instead of its own segments; the new region is put at the end of the file and the
    header's map entry points to it (the old region stays, unread)."""
    hdr = corpus.read_header(data)
    if (hdr.version, hdr.order, hdr.comp_type) != ("3.41", "<", corpus.COMP_ZLIB):
        raise corpus.LogFormatError("not a zlib-compressed little-endian log of format 3.41")
    offset, length = hdr.mod_offs[DXT_POSIX_SLOT]
    if not length:
        raise corpus.LogFormatError("no DXT_POSIX region")
    raw = zlib.decompress(data[offset : offset + length])
    writes, reads = struct.unpack_from("<qq", raw, COUNTS_AT)
    fixed = bytearray(raw[:FIXED])
    struct.pack_into("<qq", fixed, COUNTS_AT, segments, 0)
    trace = b"".join(
        SEGMENT.pack(i * WRITE_SIZE, WRITE_SIZE, i * 1e-6, i * 1e-6 + 5e-7) for i in range(segments)
    )
    region = zlib.compress(bytes(fixed) + trace + raw[FIXED + 32 * (writes + reads) :], 1)
    header = bytearray(data[: hdr.layout.header_size])
    slot_at = hdr.layout.mod_map + 16 * DXT_POSIX_SLOT
    struct.pack_into("<QQ", header, slot_at, len(data), len(region))
    return bytes(header) + data[len(header) :] + region


def build(out: Path, copies: int, big: int, segments: int, seed: int = 0) -> int:
    """Write the corpus into ``out`` (created); returns the number of logs written."""
    data = SOURCE.read_bytes()
    sources = [corpus.Source(SOURCE.name, "testdata", data, "bench", "io_patterns")] * copies
    if big:
        large = with_big_trace(data, segments)
        sources += [corpus.Source("big trace", "testdata", large, "bench", "big_trace")] * big
    return len(corpus.write_tree(Path(out), sources, len(sources), 0.0, seed))
