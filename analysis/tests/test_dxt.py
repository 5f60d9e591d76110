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

import csv
import io
import json
import shutil
import struct
from pathlib import Path
from typing import TYPE_CHECKING

import darshan
import pytest

from iostudy.cli.cli import main
from iostudy.logs import dxtrows, logpool
from iostudy.logs.darshanlog_worker import open_log
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.logs.logrows import batch_rows, read_for_ingest
from iostudy.store import store

from . import chromium, logcraft
from .testdata import DARSHAN_LOGS

if TYPE_CHECKING:
    from iostudy.logs import dxt

WHEEL = Path(darshan.__file__).parent
BUILT = Path(__file__).resolve().parent / "data" / "darshan-logs" / "darshan-built"
SAMPLES = [
    WHEEL / "examples/example_logs/dxt.darshan",
    WHEEL / "examples/example_logs/ior_hdf5_example.darshan",
    WHEEL / "tests/input/sample-dxt-simple.darshan",
]
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
                segments[(*key, op)] = (
                    []
                    if frame.empty
                    else list(
                        frame[["offset", "length", "start_time", "end_time"]].itertuples(
                            index=False, name=None
                        )
                    )
                )
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
        runs = (
            part.ids.tolist(),
            part.ranks.tolist(),
            part.hosts,
            part.writes.tolist(),
            part.counts.tolist(),
        )
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


def _count(path: Path) -> int:
    return sum(map(len, _pydarshan(path)["segments"].values()))


def _tree(tmp_path: Path, logs) -> Path:
    tree = tmp_path / "dxt-logs"
    tree.mkdir()
    for k, log in enumerate(logs):
        shutil.copyfile(log, tree / f"{k:02d}-{log.name}")
    return tree


def _stored(st: Path) -> tuple[dict, dict]:
    """({log file name: its segments in the dxt table}, {log file name: quarantine reason})."""
    con = store.connect(st)
    try:
        rows = con.execute(
            "SELECT log_path, COUNT(*) FROM dxt JOIN jobs USING (run_id, log_sha256) GROUP BY ALL"
        ).fetchall()
        quarantined = con.execute("SELECT path, reason FROM quarantine").fetchall()
    finally:
        con.close()
    return {Path(p).name: n for p, n in rows}, {Path(p).name: r for p, r in quarantined}


def _jobs_csv(st: Path, capsys) -> dict:
    assert main(["jobs", "--store", str(st), "--csv"]) == 0
    rows = csv.DictReader(io.StringIO(capsys.readouterr().out))
    return {Path(r["log_path"]).name: r for r in rows}


# The one log with DXT the store's rule refuses for its other values: a POSIX metadata time
# below 0 (iostudy.logs.plausibility); its trace is read as PyDarshan reads it all the same.
REFUSED = {"dxt.darshan": "POSIX_F_META_TIME = -2.86102294921875e-06 s not in [0, 2^32 s)"}


def test_every_log_with_dxt_stores_pydarshans_segment_count(tmp_path, capsys):
    """Through `iostudy ingest`: the dxt table holds as many segments of each log as PyDarshan
    reads (below the default bound, none dropped), and `iostudy jobs` says so."""
    tree = _tree(tmp_path, DXT_LOGS)
    st = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    capsys.readouterr()
    (stored, quarantined), jobs = _stored(st), _jobs_csv(st, capsys)
    for k, log in enumerate(DXT_LOGS):
        name = f"{k:02d}-{log.name}"
        if log.name in REFUSED:
            assert REFUSED[log.name] in quarantined[name]
            continue
        assert name not in quarantined, quarantined[name]
        assert stored.get(name, 0) == _count(log) > 0, name
        assert int(jobs[name]["dxt_segments"]) == _count(log), name
        assert "DXT" not in (jobs[name]["flags"] or ""), name


def _largest() -> Path:
    """The log with the most segments of those the store takes."""
    return max((p for p in DXT_LOGS if p.name not in REFUSED), key=_count)


def _as_stored(want: dict, q: int | None = None) -> dict:
    """PyDarshan's segments as the dxt table holds them: each run's first q (None: all), sorted,
    DXT_MPIIO's offsets of -1 (not recorded) as null."""
    return {
        k: sorted((None if k[0] == "DXT_MPIIO" and o == -1 else o, *rest) for o, *rest in s[:q])
        for k, s in want.items()
        if s
    }


def _stored_segments(st: Path) -> dict:
    """The dxt table's segments by (module, record id, rank, operation), sorted."""
    con = store.connect(st)
    rows = con.execute(
        'SELECT module, record_id, rank, operation, "offset", length, start, "end" FROM dxt'
    ).fetchall()
    con.close()
    got = {}
    for module, rid, rank, op, *segment in rows:
        name = {"posix": "DXT_POSIX", "mpiio": "DXT_MPIIO"}[module]
        got.setdefault((name, rid, rank, op), []).append(tuple(segment))
    return {k: sorted(v) for k, v in got.items()}


def test_a_log_over_the_bound_keeps_each_runs_first_segments_and_says_how_many_dropped(
    tmp_path, capsys
):
    """--max-dxt-segments B below the log's total: each file's writes and reads on each rank
    keep their first q segments, q the largest with at most B in all (worked out here by
    trying every q), the jobs row's flags name the count dropped, iostudy jobs the count
    kept."""
    path = _largest()
    want = _pydarshan(path)["segments"]
    total = sum(map(len, want.values()))
    bound = total // 3
    q = max(q for q in range(total + 1) if sum(min(len(s), q) for s in want.values()) <= bound)
    tree = _tree(tmp_path, [path])
    st = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(st), "--max-dxt-segments", str(bound)]) == 0
    capsys.readouterr()
    kept = _as_stored(want, q)
    assert _stored_segments(st) == kept
    n = sum(map(len, kept.values()))
    assert n <= bound
    con = store.connect(st)
    flags = json.loads(con.execute("SELECT flags FROM jobs").fetchone()[0])
    con.close()
    assert f"DXT: {total - n:,} of {total:,} segments dropped over the bound of {bound:,}" in (
        " ".join(flags)
    )
    (job,) = _jobs_csv(st, capsys).values()
    assert int(job["dxt_segments"]) == n


def test_rows_cut_into_chunks_are_the_same_rows(tmp_path, monkeypatch):
    """A batch's rows come in Columns of at most dxtrows.CHUNK segments, which ingest's writer
    takes a table at a time (a log's million at once cost it a few hundred MiB): with 97 (runs
    cut in two, pieces of two logs in one chunk) the rows are PyDarshan's all the same."""
    monkeypatch.setattr(dxtrows, "CHUNK", 97)  # the workers are forked: they see it too
    logs = [_largest(), SAMPLES[1]]
    tree = _tree(tmp_path, logs)
    st = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    want = {}
    for log in logs:
        want |= _as_stored(_pydarshan(log)["segments"])
    assert _stored_segments(st) == want


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


def _half(_log) -> float:
    return 0.5


def test_a_worker_answers_once_its_logs_weigh_a_whole_answer():
    """weigh: a batch of five logs, each half an answer, comes back in answers of two, two and
    one (a batch of large traces would hold gigabytes in one answer)."""
    five = [p for p in DXT_LOGS if "x86_64" in p.name][:4] + SAMPLES[2:]
    logs = [(str(p), (p.name, f"sha{k}", 0, 0)) for k, p in enumerate(five)]
    with logpool.ReaderPool(read_for_ingest, batch_rows, jobs=1, batch=5, weigh=_half) as pool:
        sizes = [len(b.done) for b in pool.map(logs, context={"run_id": "r"})]
    assert sizes == [2, 2, 1]


@pytest.mark.browser
def test_the_job_page_draws_the_trace(tmp_path):
    """The job page of a log with DXT: its trace section, the timeline and the offsets
    figures, within the page budget in Chromium (IOSTUDY_SCREENSHOTS keeps the picture)."""
    from iostudy.report import report

    if chromium.find_chromium() is None:
        pytest.skip(f"needs Chromium: install Debian's package {chromium.PACKAGE}")
    # the most segments; DXT_MPIIO version 2 (offsets) on 4 ranks; version 1 (none)
    logs = [_largest(), SAMPLES[1], DARSHAN_LOGS / "release_logs/mpi-io-test-x86_64-3.1.6.darshan"]
    tree = _tree(tmp_path, logs)
    st = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(st), "--study", "dxt"]) == 0
    index = report.build(st, "dxt", tmp_path / "reports")
    con = store.connect(st)
    shas = [s for (s,) in con.execute("SELECT DISTINCT log_sha256 FROM dxt").fetchall()]
    con.close()
    assert len(shas) == len(logs)
    for sha in shas:
        page = index.parent / f"job-{sha}.html"
        html = page.read_text()
        assert "<h2>DXT trace: every read and write</h2>" in html
        assert (page.parent / f"job-{sha}-dxt-timeline.csv").is_file()
        assert html.count("<svg") >= 2 and "dxt-offsets" in html
        assert chromium.assert_within_budget(page) > 0
