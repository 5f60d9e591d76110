"""Absurd values in structurally valid logs: quarantined with the field and value named, through
a real `iostudy ingest` of a crafted log tree; known reader quirks stored as null and flagged.

The logs are real test logs with one value set by tests.logcraft (3.41 little endian, the
3.10 release log of Darshan 3.1.8, a non-MPI 3.41 log), checked first with the real reader:
the value written is what libdarshan-util reports. Every expected value below is the crafted
one, or one read off the reference (record layouts, section 6).
"""

import math
import struct

import pytest

from iostudy.cli.cli import main
from iostudy.logs.darshanlog import read_log
from iostudy.store import store
from tests import logcraft
from tests.testdata import DARSHAN_LOGS, RELEASE_350

LEGACY_318 = "release_logs/mpi-io-test-x86_64-3.1.8.darshan"  # format 3.10, 4 ranks
LEGACY_318_START = 1573093180  # its job start (darshan-parser / PyDarshan)
DLIO = "dlio_logs/snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1.darshan"
PPC64_300 = "release_logs/mpi-io-test-ppc64-3.0.0.darshan"  # big-endian, POSIX records v1
PPC64_317 = "release_logs/mpi-io-test-ppc64-3.1.7.darshan"  # big-endian, POSIX records v4
POSIX_BYTES_READ = 14  # its index among POSIX counters (reference section 6.1)
RELEASE_350_POSIX_BYTES_READ = 2**26  # 4 ranks read 16 MiB each from the shared file


def _log(name: str) -> bytes:
    return (DARSHAN_LOGS / name).read_bytes()


def _posix_byte_read_bit62_flipped() -> bytes:
    """The 3.5.0 log stored uncompressed (a killed job's mmap log) with bit 62 of its shared
    POSIX record's POSIX_BYTES_READ flipped: 2^62 + 2^26 bytes, about 4.6e18."""
    data = logcraft.uncompressed(_log(RELEASE_350))
    off = logcraft.corpus.read_header(data).mod_offs[1][0]  # POSIX: slot 1, one record
    return logcraft.flip(data, off + 16 + 8 * POSIX_BYTES_READ + 7, 6)  # little endian


def _unnamed_dlio() -> bytes:
    data = _log(DLIO)
    return logcraft.drop_name(data, logcraft.records(data, "POSIX")[3][0])


# name -> (the crafted log, substrings of its quarantine reason)
ABSURD = {
    "bytes-negative": (
        lambda: logcraft.set_counter(
            _log(RELEASE_350), "POSIX", 0, "POSIX_BYTES_WRITTEN", -(10**12)
        ),
        ["POSIX_BYTES_WRITTEN = -1000000000000 not in [0, 2^62)"],
    ),
    "bytes-int64-max": (
        lambda: logcraft.set_counter(_log(RELEASE_350), "MPI-IO", 0, "MPIIO_BYTES_READ", 2**63 - 1),
        ["MPIIO_BYTES_READ = 9223372036854775807"],
    ),
    "count-2-62-legacy": (
        lambda: logcraft.set_counter(_log(LEGACY_318), "POSIX", 0, "POSIX_READS", 2**62),
        ["POSIX_READS = 4611686018427387904"],
    ),
    "bit-flip-uncompressed": (
        _posix_byte_read_bit62_flipped,
        [f"POSIX_BYTES_READ = {2**62 + RELEASE_350_POSIX_BYTES_READ}"],
    ),
    "time-nan": (
        lambda: logcraft.set_counter(_log(RELEASE_350), "POSIX", 0, "POSIX_F_READ_TIME", math.nan),
        ["POSIX_F_READ_TIME = nan"],
    ),
    "time-negative-stdio-legacy": (
        lambda: logcraft.set_counter(_log(LEGACY_318), "STDIO", 0, "STDIO_F_META_TIME", -0.5),
        ["STDIO_F_META_TIME = -0.5"],
    ),
    "time-inf-legacy": (
        lambda: logcraft.set_counter(
            _log(LEGACY_318), "MPI-IO", 0, "MPIIO_F_WRITE_END_TIMESTAMP", math.inf
        ),
        ["MPIIO_F_WRITE_END_TIMESTAMP = inf"],
    ),
    "nprocs-0": (lambda: logcraft.set_job(_log(RELEASE_350), nprocs=0), ["job nprocs = 0"]),
    "nprocs-negative-legacy": (
        lambda: logcraft.set_job(_log(LEGACY_318), nprocs=-4),
        ["job nprocs = -4"],
    ),
    "end-before-start-legacy": (
        lambda: logcraft.set_job(_log(LEGACY_318), end_time_sec=LEGACY_318_START - 100),
        [f"job end {LEGACY_318_START - 100}.000000000 s before its start {LEGACY_318_START}."],
    ),
    "start-negative": (
        lambda: logcraft.set_job(_log(RELEASE_350), start_time_sec=-5),
        ["job start_time_sec = -5"],
    ),
    "record-without-name": (_unnamed_dlio, ["POSIX record ", "has no name in the name table"]),
    "forbidden-negative-count": (
        lambda: logcraft.set_counter(_log(RELEASE_350), "POSIX", 0, "POSIX_SEEKS", -1),
        ["POSIX_SEEKS = -1 not in [0, 2^62)"],
    ),
    "not-monitored-below-nprocs": (
        lambda: logcraft.set_counter(_log(RELEASE_350), "POSIX", 0, "POSIX_MMAPS", -5),
        ["POSIX_MMAPS = -5 not in [-4, 2^62)"],
    ),
    # the jobs row's own values: judged by the store's rule, as another site's import does
    "jobid-negative": (
        lambda: logcraft.set_job(_log(RELEASE_350), jobid=-7),
        ["jobs jobid = -7: not in [0, 2^62)"],
    ),
    "uid-negative-legacy": (
        lambda: logcraft.set_job(_log(LEGACY_318), uid=-1),
        ["jobs uid = -1: not in [0, 2^62)"],
    ),
}
# name -> the log, stored: real logs, a not-monitored counter at -1 per rank (4 ranks), a
# killed job's end time 0, the ppc64 logs
GOOD = {
    "good-350": lambda: _log(RELEASE_350),
    "good-legacy": lambda: _log(LEGACY_318),
    "good-dlio": lambda: _log(DLIO),
    "mmaps-minus-4": lambda: logcraft.set_counter(_log(RELEASE_350), "POSIX", 0, "POSIX_MMAPS", -4),
    "end-zero": lambda: logcraft.set_job(_log(RELEASE_350), end_time_sec=0, end_time_nsec=0),
    "ppc64-300": lambda: _log(PPC64_300),
    "ppc64-317": lambda: _log(PPC64_317),
}


@pytest.fixture(scope="module")
def crafted(tmp_path_factory):
    """The crafted tree ingested by `iostudy ingest TREE --store S`: (store, reasons by log)."""
    root = tmp_path_factory.mktemp("plausibility")
    tree = root / "site-logs"
    tree.mkdir()
    for name, (craft, _) in ABSURD.items():
        (tree / f"{name}.darshan").write_bytes(craft())
    for name, craft in GOOD.items():
        (tree / f"{name}.darshan").write_bytes(craft())
    st = root / "store"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    con = store.connect(st)
    rows = con.execute("SELECT path, reason FROM quarantine").fetchall()
    reasons = {p.rsplit("/", 1)[1][: -len(".darshan")]: r for p, r in rows}
    return st, reasons


@pytest.mark.parametrize("name", ABSURD)
def test_absurd_value_quarantined_with_field_and_value(crafted, name):
    _, reasons = crafted
    assert name in reasons, sorted(reasons)
    assert reasons[name].startswith("ImplausibleLog: implausible values: ")
    for part in ABSURD[name][1]:
        assert part in reasons[name]


def test_good_logs_stored_and_jobs_works(crafted, capsys):
    st, reasons = crafted
    assert set(reasons) == set(ABSURD)
    con = store.connect(st)
    stored = {
        p.rsplit("/", 1)[1][: -len(".darshan")]
        for (p,) in con.execute("SELECT log_path FROM jobs").fetchall()
    }
    assert stored == set(GOOD)
    capsys.readouterr()
    assert main(["jobs", "--store", str(st), "--csv"]) == 0
    out, err = capsys.readouterr()
    assert len(out.strip().splitlines()) == 1 + len(GOOD)
    assert "2 flagged" in err  # the end-zero log and the 3.0.0 ppc64 log


def test_what_ingest_stored_imports_at_another_site(crafted, tmp_path):
    """The store of the crafted tree exports, and another site imports it all: what ingest
    accepts, import accepts (one rule, iostudy.logs.storerule, for both)."""
    st, _ = crafted
    bundle = tmp_path / "crafted.tar"
    assert main(["export", "--store", str(st), "--out", str(bundle), "--site", "crafted"]) == 0
    other = tmp_path / "other"
    assert main(["import", str(bundle), "--store", str(other), "--trust-on-first-use"]) == 0
    assert len(store.read_table(other, "jobs")) == len(GOOD)


def _job(st, name):
    con = store.connect(st)
    return con.execute(
        'SELECT "end", run_time, flags, log_sha256 FROM jobs WHERE log_path LIKE ?',
        [f"%/{name}.darshan"],
    ).fetchone()


def test_ppc64_300_posix_meta_time_flagged_and_null(crafted):
    """libdarshan-util 3.5.0 leaves POSIX_F_META_TIME of big-endian POSIX records before
    version 4 unswapped: stored as null with the reason; MPI-IO's and v4 records' are kept."""
    st, _ = crafted
    con = store.connect(st)
    _, _, flags, sha = _job(st, "ppc64-300")
    assert "POSIX_F_META_TIME" in flags and "not byte-swapped" in flags
    times = dict(
        con.execute("SELECT module, meta_time FROM files WHERE log_sha256 = ?", [sha]).fetchall()
    )
    assert times["posix"] is None
    assert times["mpiio"] == pytest.approx(0.38, abs=0.01)  # read by the reader, swapped right
    _, _, flags, sha = _job(st, "ppc64-317")
    assert flags is None
    (meta,) = con.execute(
        "SELECT meta_time FROM files WHERE log_sha256 = ? AND module = 'posix'", [sha]
    ).fetchone()
    assert meta == pytest.approx(0.2, abs=0.01)


def test_killed_jobs_end_zero_flagged_and_null(crafted):
    st, _ = crafted
    end, run_time, flags, _ = _job(st, "end-zero")
    assert (end, run_time) == (None, None)
    assert "end time 0" in flags


def test_not_recorded_minus_one_is_never_summed(tmp_path):
    """STDIO_FDOPENS, which STDIO v1 did not have, is -1 in records up-converted from it (the
    3.1.0 release log): the stored opens are STDIO_OPENS alone, as the reader reports them."""
    name = "release_logs/mpi-io-test-x86_64-3.1.0.darshan"
    log = read_log(str(DARSHAN_LOGS / name))
    expected = {r["id"]: r["counters"]["STDIO_OPENS"] for r in log["records"]["STDIO"]}
    assert {r["counters"]["STDIO_FDOPENS"] for r in log["records"]["STDIO"]} == {-1}
    tree = tmp_path / "t"
    tree.mkdir()
    (tree / "log.darshan").write_bytes(_log(name))
    assert main(["ingest", str(tree), "--store", str(tmp_path / "s")]) == 0
    con = store.connect(tmp_path / "s")
    rows = con.execute("SELECT record_id, opens FROM files WHERE module = 'stdio'").fetchall()
    assert dict(rows) == expected


@pytest.mark.parametrize("seed", range(6))
def test_seeded_bit_flips_in_an_uncompressed_log_never_store_absurd_values(tmp_path, seed):
    """Bits flipped at random in the module regions of an uncompressed log: each log is stored
    with values in bounds, or quarantined; `iostudy jobs` works on the store."""
    data = logcraft.uncompressed(_log(RELEASE_350))
    hdr = logcraft.corpus.read_header(data)
    start = hdr.mod_offs[1][0]  # POSIX, MPI-IO, LUSTRE, STDIO, HEATMAP follow to the end
    tree = tmp_path / "t"
    tree.mkdir()
    for k in range(4):
        flipped, _ = logcraft.flip_bits(data, 3, seed * 10 + k, start, len(data))
        (tree / f"flip{k}.darshan").write_bytes(flipped)
    st = tmp_path / "s"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    con = store.connect(st)
    (stored,) = con.execute("SELECT count(*) FROM jobs").fetchone()
    (quarantined,) = con.execute("SELECT count(*) FROM quarantine").fetchone()
    assert stored + quarantined == 4
    low, high = con.execute(
        "SELECT min(least(bytes_read, bytes_written, reads, writes, opens)), "
        "max(greatest(bytes_read, bytes_written, reads, writes, opens)) FROM files"
    ).fetchone()
    assert stored == 0 or (low >= 0 and high < 2**62)
    assert main(["jobs", "--store", str(st), "--csv", "--out", str(tmp_path / "j.csv")]) == 0


# -- the crafting helpers, against the real reader ------------------------------------------------


@pytest.mark.parametrize(
    "name, module, counter, value",
    [
        (RELEASE_350, "POSIX", "POSIX_BYTES_WRITTEN", -(10**12)),
        (RELEASE_350, "MPI-IO", "MPIIO_F_READ_TIME", 1234.5),
        (RELEASE_350, "STDIO", "STDIO_BYTES_READ", 2**63 - 1),
        (LEGACY_318, "POSIX", "POSIX_READS", 2**62),
        (LEGACY_318, "STDIO", "STDIO_F_META_TIME", -0.5),
        (PPC64_317, "MPI-IO", "MPIIO_BYTES_READ", 12345),  # big endian
        (DLIO, "POSIX", "POSIX_F_WRITE_TIME", 7.25),
    ],
)
def test_set_counter_is_what_the_reader_reports(tmp_path, name, module, counter, value):
    data = _log(name)
    last = len(logcraft.records(data, module)) - 1
    path = tmp_path / "x.darshan"
    path.write_bytes(logcraft.set_counter(data, module, last, counter, value))
    log = read_log(str(path))  # raises on any complaint of libdarshan-util
    record = log["records"][module][last]
    kind = "counters" if counter in record["counters"] else "fcounters"
    assert record[kind][counter] == value
    original = read_log(str(DARSHAN_LOGS / name))
    assert log["name_records"] == original["name_records"]
    for mod, recs in original["records"].items():
        assert len(log["records"][mod]) == len(recs)


@pytest.mark.parametrize("name", [RELEASE_350, LEGACY_318, PPC64_300])
def test_set_job_uncompressed_and_drop_name_are_what_the_reader_reports(tmp_path, name):
    path = tmp_path / "x.darshan"
    data = _log(name)
    path.write_bytes(logcraft.set_job(data, nprocs=7, end_time_sec=1_700_000_000))
    job = read_log(str(path))["job"]
    assert (job["nprocs"], job["end_time_sec"]) == (7, 1_700_000_000)

    original = read_log(str(DARSHAN_LOGS / name))
    raw = logcraft.uncompressed(data)
    assert raw[16] == 2  # comp_type none
    path.write_bytes(raw)
    log = read_log(str(path))
    assert (log["job"], log["name_records"], log["records"]) == (
        original["job"],
        original["name_records"],
        original["records"],
    )

    if name != PPC64_300:  # 3.00 name entries are not NUL-terminated: not supported
        rid = next(iter(original["name_records"]))
        path.write_bytes(logcraft.drop_name(data, rid))
        names = read_log(str(path))["name_records"]
        assert names == {k: v for k, v in original["name_records"].items() if k != rid}


def test_damage_helpers():
    data = _log(RELEASE_350)
    flipped, flips = logcraft.flip_bits(data, 5, seed=1)
    assert flipped != data and flipped == logcraft.flip_bits(data, 5, seed=1)[0]
    assert sum(bin(a ^ b).count("1") for a, b in zip(data, flipped, strict=True)) <= 5
    assert all(flipped[o] ^ data[o] for o, _ in flips)
    assert logcraft.truncate(data, 100) == data[:100]
    zeroed = logcraft.zero_region(data, "POSIX")
    off, length = logcraft.corpus.read_header(data).mod_offs[1]
    assert zeroed[off : off + length] == bytes(length) and zeroed[:off] == data[:off]
    magic = logcraft.overwrite(data, 8, struct.pack("<q", 1))
    assert magic[8:16] == struct.pack("<q", 1) and len(magic) == len(data)
