"""DXT traces (issue 42: DXT stored and shown): the DXT_POSIX and DXT_MPIIO segments of every
real test log with DXT (darshan-logs', those Darshan itself wrote here of iostudy's test
programs: data/darshan-logs/darshan-built) and of the wheel's samples, read by iostudy and by
PyDarshan, stored through a real `iostudy ingest`, bounded per log, damage quarantined, and
drawn on the job page.

The oracle is PyDarshan (``DarshanReport.mod_read_all_dxt_records``: libdarshan-util's own
reading, named records only); the damaged logs' expectations come from the record layout of the
log-format reference (section 6.6): a base record, a shared-record flag, a 64-byte host name, a
write count and a read count (bytes 88 and 96), then 32 bytes per segment.
"""

from __future__ import annotations

import struct
from pathlib import Path
from typing import TYPE_CHECKING

import darshan
import pytest

from iostudy.cli.cli import main
from iostudy.logs.darshanlog_worker import open_log
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.store import store

from . import logcraft
from .testdata import DARSHAN_LOGS

if TYPE_CHECKING:
    from iostudy.logs import dxt

WHEEL = Path(darshan.__file__).parent
BUILT = Path(__file__).resolve().parent / "data" / "darshan-logs" / "darshan-built"
SAMPLES = [WHEEL / "examples/example_logs/dxt.darshan",
           WHEEL / "examples/example_logs/ior_hdf5_example.darshan",
           WHEEL / "tests/input/sample-dxt-simple.darshan"]  # fmt: skip
MODULES = ("DXT_POSIX", "DXT_MPIIO")
# where a DXT record's counts are, and its fixed part's size
WRITES_AT, READS_AT, FIXED, SEGMENT = 88, 96, 104, 32


def _dxt_modules(path: Path) -> list[str]:
    """The DXT modules whose region the log's header declares (its slots, reference 2.1)."""
    hdr = logcraft.corpus.read_header(path.read_bytes()[:1328])
    slots = {m: logcraft._slot(hdr.version, logcraft.MODULE_IDS[m]) for m in MODULES}
    return [m for m in MODULES if hdr.mod_offs[slots[m]][1]]


def _with_dxt() -> list[Path]:
    logs = sorted(DARSHAN_LOGS.rglob("*.darshan")) + sorted(BUILT.glob("*.darshan"))
    return [p for p in logs if _dxt_modules(p)] + SAMPLES


DXT_LOGS = _with_dxt()


def _name(path: Path) -> str:
    return path.relative_to(DARSHAN_LOGS).as_posix() if DARSHAN_LOGS in path.parents else path.name


def _pydarshan(path: Path) -> dict:
    """{(module, record id, rank, operation): [(offset, length, start, end)]} of PyDarshan's
    reading of the log's DXT records, and the hosts by (module, id, rank)."""
    report = darshan.DarshanReport(str(path), read_all=False)
    segments, hosts = {}, {}
    for mod in MODULES:
        if mod not in report.modules:
            continue
        report.mod_read_all_dxt_records(mod, dtype="pandas")
        for rec in report.records[mod]:
            key = (mod, int(rec["id"]), int(rec["rank"]))
            hosts[key] = rec["hostname"]
            for op in ("write", "read"):
                frame = rec[f"{op}_segments"]
                segments[(*key, op)] = [] if frame.empty else list(
                    frame[["offset", "length", "start_time", "end_time"]].itertuples(
                        index=False, name=None))  # fmt: skip
    return {
        "segments": segments,
        "hosts": hosts,
        "versions": {m: report.modules[m]["ver"] for m in MODULES if m in report.modules},
    }


def _ours(trace: dxt.Trace) -> dict:
    """The same from iostudy's trace of the log (offsets None where not recorded)."""
    segments, hosts = {}, {}
    for part in trace.parts:
        at = 0
        runs = (part.ids.tolist(), part.ranks.tolist(), part.hosts, part.writes.tolist(),
                part.counts.tolist())  # fmt: skip
        for rid, rank, host, writes, n in zip(*runs, strict=True):
            seg = part.segments[at : at + n]
            at += n
            offsets = seg["offset"].tolist() if part.offsets else [None] * n
            key = (part.module, rid, rank)
            hosts[key] = host
            values = (seg["length"].tolist(), seg["start"].tolist(), seg["end"].tolist())
            rows = zip(offsets, *values, strict=True)
            segments[(*key, "write" if writes else "read")] = list(rows)
    return {"segments": segments, "hosts": hosts}


def _trace(path: Path, limits=DEFAULT_LIMITS) -> dxt.Trace:
    with open_log(str(path), limits, follow=True) as checked:
        return checked.traces


@pytest.mark.parametrize("path", DXT_LOGS, ids=_name)
def test_every_segment_is_pydarshans(path):
    """Each named record's writes and reads, segment by segment, and its host, as PyDarshan
    reads them; DXT_MPIIO version 1 recorded no offset (PyDarshan: -1; iostudy: None)."""
    want, ours = _pydarshan(path), _ours(_trace(path))
    assert ours["hosts"] == want["hosts"]
    unrecorded = want["versions"].get("DXT_MPIIO") == 1
    for key, segments in want["segments"].items():
        if unrecorded and key[0] == "DXT_MPIIO":
            assert {s[0] for s in segments} <= {-1}
            segments = [(None, *s[1:]) for s in segments]
        assert ours["segments"].get(key, []) == segments, key
    assert {k for k, v in ours["segments"].items() if v} == {
        k for k, v in want["segments"].items() if v
    }


def _region_starts(raw: bytes) -> list[int]:
    starts, at = [], 0
    while at < len(raw):
        starts.append(at)
        writes, reads = struct.unpack_from("<qq", raw, at + WRITES_AT)
        at += FIXED + SEGMENT * (writes + reads)
    return starts


DAMAGED = DARSHAN_LOGS / "mpi_io_test_with_dxt"


def _damaged(tmp_path: Path, how) -> tuple[Path, str]:
    """A real DXT_POSIX log with its region changed by ``how(raw) -> (raw, expected reason)``,
    alone in a tree."""
    (path,) = sorted(DAMAGED.glob("*.darshan"))
    data = path.read_bytes()
    raw, reason = how(logcraft.module_region(data, "DXT_POSIX"))
    tree = tmp_path / "damaged"
    tree.mkdir()
    (tree / path.name).write_bytes(logcraft.set_module_region(data, "DXT_POSIX", raw))
    return tree, reason


def _count_past_the_end(raw: bytes):
    starts = _region_starts(raw)
    k = len(starts) // 2
    writes, reads = struct.unpack_from("<qq", raw, starts[k] + WRITES_AT)
    raw = bytearray(raw)
    struct.pack_into("<q", raw, starts[k] + WRITES_AT, writes + 10**6)
    return bytes(raw), (
        f"DXT_POSIX region: record {k + 1} (byte {starts[k]} of {len(raw)}) declares "
        f"{writes + 10**6} writes and {reads} reads, past the region's end: {k} records read "
        f"whole, the last {len(raw) - starts[k]} bytes not"
    )


def _negative_count(raw: bytes):
    starts = _region_starts(raw)
    writes, _ = struct.unpack_from("<qq", raw, starts[1] + WRITES_AT)
    raw = bytearray(raw)
    struct.pack_into("<q", raw, starts[1] + READS_AT, -3)
    return bytes(raw), (
        f"DXT_POSIX region: record 2 (byte {starts[1]} of {len(raw)}) declares {writes} writes "
        f"and -3 reads: 1 records read whole, the last {len(raw) - starts[1]} bytes not"
    )


def _cut_fixed_part(raw: bytes):
    return raw + bytes(50), (
        f"DXT_POSIX region: record {len(_region_starts(raw)) + 1} (byte {len(raw)} of "
        f"{len(raw) + 50}) 50 bytes: not its fixed part of 104: {len(_region_starts(raw))} "
        "records read whole, the last 50 bytes not"
    )


@pytest.mark.parametrize("how", [_count_past_the_end, _negative_count, _cut_fixed_part])
def test_a_damaged_dxt_record_is_quarantined_naming_it(tmp_path, how):
    tree, reason = _damaged(tmp_path, how)
    st = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    con = store.connect(st)
    (stored,) = con.execute("SELECT reason FROM quarantine").fetchone()
    assert con.execute("SELECT COUNT(*) FROM jobs").fetchone()[0] == 0
    con.close()
    assert stored == reason
