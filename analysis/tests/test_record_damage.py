"""Damage in the variable-size records, LUSTRE layouts and HEATMAP bins, through a real
`iostudy ingest` (issue 41: damage is flagged or quarantined, never silently dropped).

libdarshan-util reads such a record by the counts it declares (components and stripes, bins),
so a damaged count made it drop the module's later records without a word, read past the
record, or crash, depending on what its heap held: the same log was stored in one ingest and
quarantined in the next. Each damaged log here must be quarantined, every time, with the module,
the record and what was not read named.

The oracle is the bytes written: the record layouts of the log-format reference (sections 6.4
and 6.5) give every record's offset and size, so how many records are whole before the damaged
one is known without a reader; PyDarshan's own reading of the same logs shows what the damage
did (records silently missing).
"""

import math
import struct

import pytest

from iostudy.cli.cli import main
from iostudy.store import store
from tests import logcraft
from tests.test_log_regions import pydarshan_lustre_count
from tests.testdata import DARSHAN_LOGS, RELEASE_350

# Non-MPI 3.41 logs with 24, 22 and 22 LUSTRE records (version 2) of one component and one
# stripe each (112 bytes), and two HEATMAP records of 174 bins.
DLIO = sorted((DARSHAN_LOGS / "dlio_logs").glob("*.darshan"))
BIG = 2**40  # num_comps 2^40 + i: 72 bytes a component overflow libdarshan-util's int to 72 i


def _starts(raw: bytes, fixed: int, counted) -> list[int]:
    """Where each record of an inflated variable-size region starts: ``fixed`` bytes, then
    ``counted``: (offset of a count in the record, bytes per item counted)."""
    starts, at = [], 0
    while at < len(raw):
        starts.append(at)
        at += fixed + sum(per * struct.unpack_from("<q", raw, at + off)[0] for off, per in counted)
    return starts


def _lustre_starts(raw: bytes) -> list[int]:
    """Version 2: id, rank, num_comps, num_stripes; 72 bytes per component, 8 per stripe."""
    return _starts(raw, 32, [(16, 72), (24, 8)])


def _heatmap_starts(raw: bytes) -> list[int]:
    """Version 1: id, rank, bin width, nbins, 16 bytes of pointers; 16 bytes per bin."""
    return _starts(raw, 48, [(24, 16)])


def _patched(data: bytes, module: str, starts, record: int, at: int, fmt: str, value) -> bytes:
    """The log with the field at byte ``at`` of a module's ``record``-th record set."""
    raw = bytearray(logcraft.module_region(data, module))
    struct.pack_into("<" + fmt, raw, starts(raw)[record] + at, value)
    return logcraft.set_module_region(data, module, bytes(raw))


def _num_comps(data: bytes, record: int, value: int) -> bytes:
    return _patched(data, "LUSTRE", _lustre_starts, record, 16, "q", value)


def _stem(path: str) -> str:
    return path.rsplit("/", 1)[1][: -len(".darshan")]


def _ingest(tree, st) -> tuple[set, dict]:
    """`iostudy ingest TREE --store ST`: (the logs stored, {log: quarantine reason}), by file
    name without .darshan."""
    assert main(["ingest", str(tree), "--store", str(st), "--timeout", "5"]) == 0
    con = store.connect(st)
    stored = {_stem(p) for (p,) in con.execute("SELECT log_path FROM jobs").fetchall()}
    reasons = dict(con.execute("SELECT path, reason FROM quarantine").fetchall())
    return stored, {_stem(p): r for p, r in reasons.items()}


# -- LUSTRE: a component count past the region ---------------------------------------------------

# (the damaged record, i): libdarshan-util asks for more bytes than the region has left and
# returns no record for it or any after, saying nothing
SILENT = [(0, 48), (7, 49), (23, 40)]


@pytest.mark.parametrize("record, i", SILENT)
def test_lustre_component_count_past_the_region_is_quarantined(tmp_path, record, i):
    data = _num_comps(DLIO[0].read_bytes(), record, BIG + i)
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "comps.darshan").write_bytes(data)
    assert pydarshan_lustre_count(tree / "comps.darshan") == record  # the rest dropped
    region = len(logcraft.module_region(data, "LUSTRE"))
    stored, reasons = _ingest(tree, tmp_path / "s")
    assert stored == set()
    assert reasons["comps"] == (
        f"LUSTRE region: record {record + 1} (byte {112 * record} of {region}) declares "
        f"{BIG + i} components and 1 stripes, past the region's end: {record} records read "
        f"whole, the last {region - 112 * record} bytes not"
    )


def test_lustre_stripes_beyond_the_record_are_quarantined(tmp_path):
    """A component declaring more stripes than its record holds: the reader would take OST
    ids from past the record."""
    data = _patched(DLIO[1].read_bytes(), "LUSTRE", _lustre_starts, 3, 32 + 8, "q", 5)
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "stripes.darshan").write_bytes(data)
    stored, reasons = _ingest(tree, tmp_path / "s")
    assert stored == set()
    assert (
        "LUSTRE region: record 4 (byte 336 of 2464) declares 1 stripes, its components 5"
        in (reasons["stripes"])
    )


# -- the reader's crash: quarantined every time --------------------------------------------------

ROUNDS = 25


def test_logs_that_crash_the_reader_are_quarantined_in_every_ingest(tmp_path):
    """LUSTRE records with 2^40 + i components for small i (the region holds the 72 i bytes
    the overflowed count asks for): alone, libdarshan-util segfaults on each; among other logs
    it sometimes returned, its heap holding a -1 where it looked, and the log was stored. Fresh
    ingests of a tree of them among good logs: each is refused before libdarshan-util reads
    it, in every ingest."""
    tree = tmp_path / "t"
    tree.mkdir()
    crashing = set()
    for n, log in enumerate(DLIO):
        for record in (0, 6, 12):
            for i in (0, 1):
                name = f"crash-{n}-{record:02d}-{i}"
                (tree / f"{name}.darshan").write_bytes(
                    _num_comps(log.read_bytes(), record, BIG + i)
                )
                crashing.add(name)
    good = {p.stem for p in sorted(DARSHAN_LOGS.rglob("*.darshan"))}
    for p in sorted(DARSHAN_LOGS.rglob("*.darshan")):
        (tree / p.name).write_bytes(p.read_bytes())
    for k in range(ROUNDS):
        stored, reasons = _ingest(tree, tmp_path / f"s{k}")
        assert stored == good, f"round {k}: stored {sorted(stored - good)}"
        assert set(reasons) == crashing, f"round {k}"
        assert all(r.startswith("LUSTRE region: record ") for r in reasons.values()), reasons


# -- HEATMAP ------------------------------------------------------------------------------------


def _heatmap_region_flipped(seed: int) -> bytes:
    """The 3.5.0 release log with 3 bits flipped in its HEATMAP region's compressed bytes."""
    data = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    off, length = logcraft.corpus.read_header(data).mod_offs[15]
    flipped, _ = logcraft.flip_bits(data, 3, seed, off, off + length)
    return flipped


def test_bit_flips_in_a_compressed_heatmap_region_are_quarantined(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    for seed in range(4):
        (tree / f"flip{seed}.darshan").write_bytes(_heatmap_region_flipped(seed))
    stored, reasons = _ingest(tree, tmp_path / "s")
    assert stored == set()
    assert all("HEATMAP region: damaged compressed data" in r for r in reasons.values()), reasons


def _heatmap(record: int, at: int, fmt: str, value) -> bytes:
    """The 3.5.0 release log stored uncompressed (a killed job's mmap log: no zlib check) with
    a field of a HEATMAP record set (9 records of 1 bin: 64 bytes each)."""
    data = logcraft.uncompressed((DARSHAN_LOGS / RELEASE_350).read_bytes())
    return _patched(data, "HEATMAP", _heatmap_starts, record, at, fmt, value)


# name -> (the damaged field: record, offset in it, format, value; what its quarantine says)
IMPOSSIBLE = {
    "nbins-past-the-region": (
        (2, 24, "q", 1 + 2**20),
        "HEATMAP region: record 3 (byte 128 of 576) declares 1048577 bins, past the region's "
        "end: 2 records read whole, the last 448 bytes not",
    ),
    "nbins-negative": (
        (4, 24, "q", -3),
        "HEATMAP region: record 5 (byte 256 of 576) declares -3 bins: 4 records read whole",
    ),
    "width-zero": ((0, 16, "d", 0.0), "bin_width = 0.0 s not in [1e-09, 2^32 s)"),
    "width-nan": ((1, 16, "d", math.nan), "bin_width = nan s not in [1e-09, 2^32 s)"),
    "width-negative": ((3, 16, "d", -0.1), "bin_width = -0.1 s"),
    "width-huge": ((5, 16, "d", 0.1 * 2**64), f"bin_width = {0.1 * 2**64!r} s"),
    "bin-negative": ((6, 48, "q", -4096), "write bin 0 = -4096 not in [0, 2^62)"),
    "bin-2-62": ((7, 56, "q", 2**62), f"read bin 0 = {2**62} not in [0, 2^62)"),
    "rank-past-nprocs": ((8, 8, "q", 4), "rank 4 not in [-1, nprocs 4)"),
}


def test_impossible_heatmap_values_are_quarantined(tmp_path):
    tree = tmp_path / "t"
    tree.mkdir()
    for name, (field, _) in IMPOSSIBLE.items():
        (tree / f"{name}.darshan").write_bytes(_heatmap(*field))
    (tree / "good.darshan").write_bytes(_heatmap(0, 16, "d", 0.1))  # as written: 0.1 s
    stored, reasons = _ingest(tree, tmp_path / "s")
    assert stored == {"good"}
    assert set(reasons) == set(IMPOSSIBLE)
    for name, (_, said) in IMPOSSIBLE.items():
        assert said in reasons[name], (name, reasons[name])
        if "region" not in said:
            assert reasons[name].startswith("ImplausibleLog: implausible values: HEATMAP record ")
