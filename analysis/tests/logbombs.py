"""Decompression bombs: valid Darshan logs (format 3.41) whose regions inflate hugely.

Built from a real log (the 3.5.0 release log) with the layout of the log-format reference:
header (1328 bytes; name_map at 32, mod_map[64] at 48, 16 bytes each), the job region up to the
name region, then the name and module regions, each a concatenation of complete zlib streams
(sections 2.1 to 2.4). A bomb's region is one zlib stream of a unit repeated many times, made
without ever holding it inflated, so that a test can build a 1 GiB bomb in a second:

- :func:`record_bomb`: the POSIX region is the log's own POSIX record (valid, named) repeated;
- :func:`name_bomb`: the name region is the log's names followed by a stream of one extra name
  entry repeated (a duplicate id: the first entry wins, section 4).

A corpus test can write them beside real logs: ``path.write_bytes(record_bomb(log))``.
"""

import struct
import zlib

HEADER = 1328
NAME_MAP = 32
MOD_MAP = 48
POSIX = 1  # module id (section 5)
POSIX_RECORD = 704  # bytes of a POSIX v4 record (section 6.1)
_BLOCK = 1 << 20  # bytes of units compressed at a time
GIB = 1 << 30  # what a bomb inflates to by default: about 5 MB of log


def regions(log: bytes) -> dict:
    """{"name" or module id: (offset, compressed length)} of the regions the header lists."""
    found = {"name": struct.unpack_from("<QQ", log, NAME_MAP)}
    for mod in range(64):
        off, length = struct.unpack_from("<QQ", log, MOD_MAP + 16 * mod)
        if length:
            found[mod] = (off, length)
    return found


def with_regions(log: bytes, new: dict) -> bytes:
    """The log with the regions of ``new`` ({key of :func:`regions`: compressed bytes}) replaced,
    every region laid out again back to back after the job region, in the original order."""
    found = regions(log)
    header = bytearray(log[:HEADER])
    body = bytearray(log[HEADER : found["name"][0]])  # the job region ends where names start
    for key in sorted(found, key=lambda k: found[k][0]):
        off, length = found[key]
        content = new.get(key, log[off : off + length])
        at = NAME_MAP if key == "name" else MOD_MAP + 16 * key
        struct.pack_into("<QQ", header, at, HEADER + len(body), len(content))
        body += content
    return bytes(header + body)


def repeated_stream(unit: bytes, times: int) -> bytes:
    """One zlib stream of ``unit`` repeated ``times`` times. A block of units is compressed
    once, ending on a full flush, which resets the compressor's history: the same block then
    gives the same bytes again, and the stream is those bytes repeated, the rest, and the
    Adler-32 of everything (RFC 1950)."""
    per_block = max(1, _BLOCK // len(unit))
    blocks, rest = divmod(times, per_block)
    block = unit * per_block
    packer = zlib.compressobj(9)
    first = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    again = packer.compress(block) + packer.flush(zlib.Z_FULL_FLUSH)
    assert blocks >= 2 and first[2:] == again, "a block must compress the same after a flush"
    tail = packer.compress(unit * rest) + packer.flush()
    adler = zlib.adler32(unit * rest, _adler_of_blocks(block, blocks))
    return first + again * (blocks - 1) + tail[:-4] + adler.to_bytes(4, "big")


def _adler_of_blocks(block: bytes, blocks: int) -> int:
    adler = 1
    for _ in range(blocks):
        adler = zlib.adler32(block, adler)
    return adler


def record_bomb(log: bytes, inflated: int = GIB) -> bytes:
    """``log`` (with one POSIX record) whose POSIX region inflates to about ``inflated`` bytes
    of copies of that record."""
    off, length = regions(log)[POSIX]
    record = zlib.decompress(log[off : off + length])
    assert len(record) == POSIX_RECORD, "the log must hold one POSIX record"
    return with_regions(log, {POSIX: repeated_stream(record, inflated // POSIX_RECORD)})


def name_bomb(log: bytes, inflated: int = GIB) -> bytes:
    """``log`` whose name region inflates to about ``inflated`` bytes: its own names, then one
    more entry (id 1, a 247-character path) over and over."""
    off, length = regions(log)["name"]
    entry = (1).to_bytes(8, "little") + b"/bomb/" + b"x" * 241 + b"\0"
    names = log[off : off + length] + repeated_stream(entry, inflated // len(entry))
    return with_regions(log, {"name": names})
