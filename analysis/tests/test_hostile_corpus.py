"""One ingest of a hostile corpus: thousands of distinct good logs and hundreds of damaged ones.

The corpus is made here, from the real logs of ../shared/testdata: every good log is a copy of a
real one with its own job id (so its own sha256); the damaged ones are real damage made from
the 3.5.0 release log (bits flipped inside a compressed region that zlib then refuses, cuts,
zeroed regions, header fields overwritten), logs of valid structure with absurd values
(logcraft), both decompression bombs (logbombs), a FIFO and a link to a device. With
--commit-every smaller than the corpus, ingest must store every good log exactly once (by the
sha256 the test computed when it wrote it), quarantine every damaged one with a reason, and
leave a store that `iostudy jobs` and `iostudy report build` read, with no value outside
physical bounds.
"""

import hashlib
import math
import os
import subprocess
import sys
import zlib
from pathlib import Path

import pytest

from iostudy.store import store

from . import logbombs, logcraft
from .testdata import DARSHAN_LOGS, RELEASE_350

IOSTUDY = Path(sys.executable).with_name("iostudy")
GOOD = 3000
COMMIT_EVERY = 700
MAX_VALUE = 2**62  # plausibility: counts and bytes below it
HEADER_341 = 1328  # the 3.41 header's size (log-format reference 2.1)


def _good_sources() -> list[bytes]:
    """Every real test log but the damaged-by-design ones the reader refuses."""
    corpus = logcraft._load_corpus()
    return [s.data for s in corpus.testdata_sources(DARSHAN_LOGS.parents[1])]


def _regions(data: bytes) -> list[tuple[int, int]]:
    """(offset, length) of the log's stored regions after the job: names and modules."""
    hdr = logcraft._load_corpus().read_header(data)
    names = (hdr.name_off, len(data))  # only its start matters for the cuts below
    return [names, *((off, n) for off, n in hdr.mod_offs if n)]


def _flipped(log: bytes, bits: int, seed: int, off: int, length: int) -> bytes:
    """log with bits flipped inside its region [off, off + length) so that the region no
    longer inflates (Python's zlib, Adler-32 included, is the judge). Some flips change no
    output byte (a deflate stream has bits that do not count): those logs are not damaged,
    and the next seed is taken."""
    for attempt in range(100):
        data = logcraft.flip_bits(log, bits, seed + 1000 * attempt, off, off + length)[0]
        try:
            zlib.decompress(data[off : off + length])
        except zlib.error:
            return data
    raise AssertionError("no flip damaged the region")


def _damaged(release: bytes) -> dict[str, bytes]:
    """name -> bytes of each damaged log; each differs from every other and from the good."""
    corpus = logcraft._load_corpus()
    out = {}
    for k in range(60):  # a different job id each: the damage is then on distinct logs
        log = corpus.set_jobid(release, 700000 + k)
        posix_off, posix_len = _regions(log)[1]
        out[f"flip{k}"] = _flipped(log, 1 + k % 3, k, posix_off, posix_len)
        out[f"cut{k}"] = log[: HEADER_341 + (k * 37) % (len(log) - HEADER_341 - 1)]
        # a zeroed job region takes the job id with it: only one such log is distinct
        out[f"zero-{k}"] = logcraft.zero_region(log, ("job", "names", "POSIX")[min(k, 1 + k % 2)])
        out[f"magic{k}"] = logcraft.overwrite(log, 8, (k + 1).to_bytes(8, "little"))
    for k, (module, counter, value) in enumerate(
        [
            ("POSIX", "POSIX_BYTES_WRITTEN", -(10**12)),
            ("POSIX", "POSIX_BYTES_READ", 2**63 - 1),
            ("POSIX", "POSIX_F_WRITE_TIME", math.nan),
            ("POSIX", "POSIX_F_READ_TIME", -5.0),
            ("STDIO", "STDIO_BYTES_WRITTEN", 2**62),
            ("MPI-IO", "MPIIO_INDEP_WRITES", -7),
        ]
    ):
        log = corpus.set_jobid(release, 800000 + k)
        out[f"absurd-{counter}"] = logcraft.set_counter(log, module, 0, counter, value)
    job = corpus.set_jobid(release, 810000)
    out["nprocs-0"] = logcraft.set_job(job, nprocs=0)
    out["nprocs-negative"] = logcraft.set_job(job, nprocs=-4)
    out["end-before-start"] = logcraft.set_job(job, start_time_sec=2000, end_time_sec=1000)
    rid = logcraft.records(job, "POSIX")[0][0]
    out["no-name"] = logcraft.drop_name(job, rid)
    out["bomb-records"] = logbombs.record_bomb(corpus.set_jobid(release, 820000))
    out["bomb-names"] = logbombs.name_bomb(corpus.set_jobid(release, 820001))
    return out


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """The tree, the sha256 of every good log, the relative paths of every bad one."""
    root = tmp_path_factory.mktemp("hostile") / "tree"
    sources = _good_sources()
    set_jobid = logcraft._load_corpus().set_jobid
    good = {}
    for k in range(GOOD):
        data = set_jobid(sources[k % len(sources)], 100000 + k)
        path = root / f"{2020 + k % 5}" / f"{1 + k % 12}" / f"good{k}.darshan"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)
        good[hashlib.sha256(data).hexdigest()] = path
    bad = root / "damaged"
    bad.mkdir()
    for name, data in _damaged((DARSHAN_LOGS / RELEASE_350).read_bytes()).items():
        assert hashlib.sha256(data).hexdigest() not in good
        (bad / f"{name}.darshan").write_bytes(data)
    os.mkfifo(bad / "fifo.darshan")
    os.symlink("/dev/zero", bad / "zero.darshan")
    bad_paths = {f"tree/damaged/{p.name}" for p in bad.iterdir()}
    return root, good, bad_paths


@pytest.fixture(scope="module")
def ingested(corpus, tmp_path_factory):
    root, _, _ = corpus
    st = tmp_path_factory.mktemp("hostile-store") / "store"
    cmd = [IOSTUDY, "ingest", root, "--store", st, "--commit-every", str(COMMIT_EVERY)]
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=1200)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return st, proc


def test_every_good_log_once_every_bad_one_quarantined(corpus, ingested):
    _, good, bad = corpus
    st, proc = ingested
    assert proc.stdout.splitlines()[-1].endswith(
        f"logs {len(good)} ingested, 0 skipped, {len(bad)} quarantined"
    )
    con = store.connect(st)
    shas = [r[0] for r in con.execute("SELECT log_sha256 FROM jobs").fetchall()]
    assert len(shas) == len(good) and set(shas) == set(good)
    rows = con.execute("SELECT path, reason FROM quarantine").fetchall()
    assert sorted(p for p, _ in rows) == sorted(bad)
    assert all(reason and reason.strip() for _, reason in rows)
    # every good log's files rows are there: no job without its records
    orphans = con.execute(
        "SELECT count(*) FROM jobs WHERE log_sha256 NOT IN (SELECT log_sha256 FROM files)"
    ).fetchone()[0]
    empty = con.execute("SELECT count(*) FROM jobs WHERE modules = ''").fetchone()[0]
    assert orphans == empty  # only logs without records (the empty test log) have no rows
    assert len(store.Store(st).catalog().parts("jobs")) >= math.ceil(len(good) / COMMIT_EVERY)


def test_every_stored_value_within_physical_bounds(ingested):
    st, _ = ingested
    con = store.connect(st)
    ints = [f.name for f in store.TABLES["files"] if str(f.type) == "int64" and f.name != "rank"]
    floats = [f.name for f in store.TABLES["files"] if str(f.type) == "double"]
    for column in ints:
        low, high = con.execute(f'SELECT min("{column}"), max("{column}") FROM files').fetchone()
        assert low is None or 0 <= low <= high < MAX_VALUE, column
    for column in floats:
        bad = con.execute(
            f'SELECT count(*) FROM files WHERE isnan("{column}") OR isinf("{column}") '
            f'OR "{column}" < 0'
        ).fetchone()[0]
        assert bad == 0, column
    jobs = con.execute(
        "SELECT count(*) FROM jobs WHERE nprocs < 1 OR run_time < 0 OR isnan(run_time) "
        'OR "end" < start'
    ).fetchone()[0]
    assert jobs == 0


@pytest.mark.slow
def test_jobs_and_report_build_read_the_result(ingested, tmp_path):
    st, _ = ingested
    jobs = subprocess.run(
        [IOSTUDY, "jobs", "--store", st, "--csv"], capture_output=True, text=True, timeout=600
    )
    assert jobs.returncode == 0, jobs.stderr[-3000:]
    assert len(jobs.stdout.splitlines()) == GOOD + 1  # a header and a row per job
    report = subprocess.run(
        [
            IOSTUDY,
            "report",
            "build",
            "--study",
            store.DEFAULT_STUDY,
            "--store",
            st,
            "--reports",
            tmp_path / "reports",
        ],
        capture_output=True,
        text=True,
        timeout=1200,
    )
    assert report.returncode == 0, report.stderr[-3000:]
    assert (tmp_path / "reports" / store.DEFAULT_STUDY / "v1" / "index.html").is_file()
