"""Reading logs safely: ReaderPool (ingest) and read_log (``iostudy log summary``).

Real parts only: real logs and libdarshan-util, real decompression bombs (tests/logbombs.py),
real FIFOs and symbolic links, real signals and a real ``iostudy ingest`` killed with SIGKILL.
Two faults cannot be produced on demand with a real log, so they are injected by the read or
rows function given to the pool: a rows function that raises for one log, a read that hangs.
"""

import contextlib
import json
import os
import re
import shutil
import subprocess
import sys
import threading
import time
import zlib
from pathlib import Path

import pytest

from iostudy.cli.cli import main
from iostudy.logs import darshanlog_worker as worker
from iostudy.logs import logpool
from iostudy.logs.darshanlog import DarshanLogError, read_log
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.logs.logrows import batch_rows, read_for_ingest
from iostudy.store import store
from tests import logcraft
from tests.logbombs import name_bomb, record_bomb, regions
from tests.testdata import DARSHAN_LOGS, RELEASE_350

GIB = 1 << 30
IOSTUDY = Path(sys.executable).with_name("iostudy")
GUILTY = "hdf5_file_opens_only.darshan"


def _real_logs():
    return sorted(DARSHAN_LOGS.rglob("*.darshan"))


def _items(paths):
    """ReaderPool items as ingest makes them: (path, LOG_FACTS)."""
    return [(str(p), (str(p), f"sha-{k}", 0, 0)) for k, p in enumerate(paths)]


def _map(pool, items):
    """(every Batch.done item, the jobs rows of every payload, every failure) of pool.map."""
    done, jobs, failed = [], [], []
    for batch in pool.map(items, context={"run_id": "r"}):
        done += batch.done
        jobs += (
            [row for part in batch.payload["jobs"] for row in part.rows()] if batch.payload else []
        )
        failed += batch.failed
    return done, jobs, failed


def _rows_failing_for_one_log(run_info, entries):
    """batch_rows, with an injected fault: it raises for the log named GUILTY."""
    if any(facts[0].endswith(GUILTY) for facts, _ in entries):
        raise ValueError("injected fault")
    return batch_rows(run_info, entries)


def test_rows_that_raise_blame_only_their_log():
    """One batch of every real log; building the rows of one of them raises: only that log
    fails, with the reason, and the rows of all the others come back."""
    items = _items(_real_logs())
    guilty = [item for item in items if item[0].endswith(GUILTY)]
    with logpool.ReaderPool(read_for_ingest, _rows_failing_for_one_log, jobs=1) as pool:
        done, jobs, failed = _map(pool, items)
    assert failed == [(guilty[0], "ValueError: injected fault")]
    assert sorted(done) == sorted(set(items) - set(guilty))
    assert sorted(row["log_sha256"] for row in jobs) == sorted(facts[1] for _, facts in done)


# -- decompression bombs ---------------------------------------------------------------------


@pytest.fixture(scope="module")
def bombs(tmp_path_factory):
    """A 1 GiB POSIX bomb and a 1 GiB name bomb (about 5 MB each), and a good log."""
    folder = tmp_path_factory.mktemp("bombs")
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    (folder / "posix-bomb.darshan").write_bytes(record_bomb(release, GIB))
    (folder / "name-bomb.darshan").write_bytes(name_bomb(release, GIB))
    shutil.copyfile(DARSHAN_LOGS / RELEASE_350, folder / "good.darshan")
    return folder


# Starts the command from a small process and prints its exit status and peak RSS (KiB) last:
# a child forked by pytest itself counts pytest's pages as its own until it execs.
MEASURE = """
import os, sys
pid = os.fork()
if pid == 0:
    os.execv(sys.argv[1], sys.argv[1:])
_, status, usage = os.wait4(pid, 0)
print(os.waitstatus_to_exitcode(status), usage.ru_maxrss)
"""


def _peak_rss_mib(cmd, **kwargs):
    """(exit status, stdout, peak RSS in MiB of cmd and every descendant it waited for)."""
    measured = [sys.executable, "-c", MEASURE, *map(str, cmd)]
    proc = subprocess.run(measured, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, **kwargs)
    *out, last = proc.stdout.decode().rstrip("\n").split("\n")
    status, kib = map(int, last.split())
    return status, "\n".join(out), kib / 1024


# Run in a process of its own, so that its peak RSS, and its workers', is measured alone.
POOL_SCRIPT = """
import json, sys
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logrows import read_for_ingest, batch_rows
items = [(p, (p, p, 0, 0)) for p in sys.argv[1:]]
with ReaderPool(read_for_ingest, batch_rows, jobs=2, batch=1) as pool:
    answers = list(pool.map(items, context={"run_id": "r"}))
print(json.dumps({"done": [i[0] for b in answers for i in b.done],
                  "failed": {i[0]: r for b in answers for i, r in b.failed}}))
"""


def test_bombs_are_refused_by_the_pool_in_bounded_memory(bombs):
    paths = [str(bombs / n) for n in ("good.darshan", "posix-bomb.darshan", "name-bomb.darshan")]
    status, out, peak = _peak_rss_mib([sys.executable, "-c", POOL_SCRIPT, *paths])
    assert status == 0
    answer = json.loads(out)
    assert answer["done"] == [paths[0]]
    posix, names = answer["failed"][paths[1]], answer["failed"][paths[2]]
    assert posix.startswith("decompression bound: POSIX region inflates past"), posix
    assert names.startswith("decompression bound: name region inflates past"), names
    assert peak < 300, f"peak RSS {peak:.0f} MiB for bombs of 1024 MiB inflated"


def test_bombs_are_refused_by_log_summary_in_bounded_memory(bombs):
    for name, region in (("posix-bomb.darshan", "POSIX"), ("name-bomb.darshan", "name")):
        with pytest.raises(DarshanLogError, match=f"decompression bound: {region} region"):
            read_log(bombs / name)
        status, _, peak = _peak_rss_mib([str(IOSTUDY), "log", "summary", str(bombs / name)])
        assert status != 0
        assert peak < 300, f"{name}: peak RSS {peak:.0f} MiB for 1024 MiB inflated"


def test_ingest_quarantines_bombs(bombs, tmp_path, capsys):
    status = main(["ingest", str(bombs), "--store", str(tmp_path / "st")])
    assert status == 0, capsys.readouterr().err
    con = store.connect(tmp_path / "st")
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (1,)
    reasons = dict(con.execute("SELECT path, reason FROM quarantine").fetchall())
    assert {Path(p).name for p in reasons} == {"posix-bomb.darshan", "name-bomb.darshan"}
    assert all(r.startswith("decompression bound: ") for r in reasons.values()), reasons


@pytest.fixture(scope="module")
def small_bomb(tmp_path_factory):
    """A 16 MiB POSIX bomb: 23,831 records of 704 bytes, and its POSIX region's length."""
    bomb = tmp_path_factory.mktemp("small") / "bomb.darshan"
    bomb.write_bytes(record_bomb((DARSHAN_LOGS / RELEASE_350).read_bytes(), 16 << 20))
    return bomb, regions(bomb.read_bytes())[1][1]


LOOSE = {"max_bytes": GIB, "max_records": GIB, "max_ratio": 1e9}


def test_a_bomb_within_the_limits_is_read(small_bomb):
    bomb, _ = small_bomb
    log = read_log(bomb, limits=worker.Limits(**LOOSE))
    assert log["raw_record_counts"]["POSIX"] == len(log["records"]["POSIX"]) == 23831


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        # the job region before it inflates to what zlib says, the names to 170 bytes (the
        # log-format reference, sections 2.4 and 2.5): the POSIX region has the rest of 8 MiB
        (
            {"max_bytes": 8 << 20},
            "past {3} bytes, the rest of the log's limit of 8388608 bytes",
        ),
        ({"max_records": 1000}, "past 704000 bytes, more than 1000 records of 704 bytes"),
        ({"max_ratio": 50}, "past {} bytes, more than 50x the {} compressed bytes the header"),
    ],
)
def test_each_bound_says_which(small_bomb, limit, expected):
    bomb, declared = small_bomb
    assert 50 * declared > 1 << 20  # past the size below which any ratio is harmless
    data = bomb.read_bytes()
    start, end = logcraft._job_extent(data, logcraft.corpus.read_header(data))
    job = len(zlib.decompress(data[start:end]))  # Python's zlib, not the check under test
    expected = expected.format(50 * declared, declared, job, (8 << 20) - job - 170)
    with pytest.raises(DarshanLogError, match=re.escape(expected)):
        read_log(bomb, limits=worker.Limits(**{**LOOSE, **limit}))


def test_real_logs_are_within_the_default_bounds():
    wheel = Path(worker.backend.__file__).parents[1]
    for log in [*_real_logs(), *sorted(wheel.rglob("*.darshan"))]:
        with worker.open_log(str(log), DEFAULT_LIMITS):
            pass  # raises LogRefused if not


# -- what the reader opens, and for how long ----------------------------------------------------


@pytest.fixture
def hostile(tmp_path):
    """A FIFO (opening it for reading blocks until a writer comes), a symbolic link to
    /dev/zero (endless), the device itself, a link to a good log, and a good log."""
    os.mkfifo(tmp_path / "fifo.darshan")
    (tmp_path / "zero.darshan").symlink_to("/dev/zero")
    shutil.copyfile(DARSHAN_LOGS / RELEASE_350, tmp_path / "good.darshan")
    (tmp_path / "link.darshan").symlink_to(tmp_path / "good.darshan")
    return tmp_path


def test_pool_reads_only_regular_files(hostile):
    names = ("fifo", "zero", "link", "good")
    items = _items([hostile / f"{n}.darshan" for n in names] + [Path("/dev/zero")])
    with logpool.ReaderPool(read_for_ingest, batch_rows, jobs=1, timeout=20) as pool:
        done, _, failed = _map(pool, items)
    assert done == [items[3]]
    reasons = {Path(item[0]).name: reason for item, reason in failed}
    assert reasons == {
        "fifo.darshan": "not a regular file (mode prw-r--r--)",
        "zero.darshan": "a symbolic link, not a regular file",
        "link.darshan": "a symbolic link, not a regular file",
        "zero": "not a regular file (mode crw-rw-rw-)",
    }


def test_log_summary_reads_only_regular_files(hostile):
    with pytest.raises(DarshanLogError, match=re.escape("not a regular file (mode prw")):
        read_log(hostile / "fifo.darshan", timeout=20)
    with pytest.raises(DarshanLogError, match=re.escape("not a regular file (mode crw")):
        read_log(hostile / "zero.darshan", timeout=20)  # a path given by its user: followed
    assert read_log(hostile / "link.darshan")["job"]["nprocs"] == 4


def _read_or_hang(checked, facts):
    """read_for_ingest, with an injected fault: a log whose sha256 is "hang" never ends."""
    if facts[1] == "hang":
        time.sleep(3600)
    return read_for_ingest(checked, facts)


def test_a_log_over_its_time_budget_is_blamed_alone():
    items = _items([DARSHAN_LOGS / RELEASE_350] * 3)
    items[1] = (items[1][0], (items[1][0], "hang", 0, 0))
    start = time.monotonic()
    with logpool.ReaderPool(_read_or_hang, batch_rows, jobs=1, timeout=1) as pool:
        done, jobs, failed = _map(pool, items)
    assert failed == [(items[1], "reader timed out after 1 s")]
    assert sorted(done) == sorted([items[0], items[2]]) and len(jobs) == 2
    assert time.monotonic() - start < 10  # the batch's 3 s, then 1 s alone, and the rest


# -- the cost of a damaged log -------------------------------------------------------------------


def test_a_damaged_log_costs_a_fork_not_a_python_start(tmp_path):
    """40 logs whose job region is a valid zlib stream of one byte (libdarshan-util fails on
    them: the check before it reads a log finds nothing wrong) while another Python thread runs
    (as ingest's progress bar does): a fresh worker after each used to be a spawned
    interpreter (about 0.5 s each)."""
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    start, end = logcraft._job_extent(release, logcraft.corpus.read_header(release))
    short_job = logcraft._replace(release, start, end, zlib.compress(b"\0"), None)
    for k in range(40):
        (tmp_path / f"short-job{k}.darshan").write_bytes(short_job)
    items = _items(sorted(tmp_path.iterdir()))
    stop = threading.Event()
    ticker = threading.Thread(target=stop.wait)
    with logpool.ReaderPool(read_for_ingest, batch_rows, jobs=2) as pool:
        ticker.start()
        try:
            start = time.monotonic()
            done, _, failed = _map(pool, items)
            elapsed = time.monotonic() - start
        finally:
            stop.set()
            ticker.join()
    assert not done and len(failed) == 40
    # the reader dies on them (segfault) or at least names the job data
    assert all("job data" in why or "reader crashed" in why for _, why in failed), failed[:2]
    assert elapsed < 8, f"{elapsed / 40 * 1000:.0f} ms per damaged log"


def _pid_or_complaint(checked, arg):
    """A read that answers with the worker's pid; for "complain" it says on fd 2 what
    libdarshan-util says of a log it fails to read."""
    if arg == "complain":
        os.write(2, b"Error: failed to read module POSIX data from darshan log file.\n")
    return os.getpid()


def _results(_context, entries):
    return [result for _, result in entries]


def test_no_log_is_read_after_a_failure_in_the_library_by_the_same_worker():
    """A log that failed in libdarshan-util may leave its state damaged (a freed handle, a
    heap written past): the next log goes to a fresh worker, also when the failed log was the
    last of its batch (a batch of one: read_log's, and each log of a dead worker's batch read
    again)."""
    log = str(DARSHAN_LOGS / RELEASE_350)
    items = [(log, "first"), (log, "complain"), (log, "next")]
    with logpool.ReaderPool(_pid_or_complaint, _results, jobs=1, batch=1) as pool:
        answers = list(pool.map(items))
    pids = [pid for batch in answers for pid in batch.payload or []]
    failed = [(arg, reason) for batch in answers for (_, arg), reason in batch.failed]
    said = "Error: failed to read module POSIX data from darshan log file."
    assert failed == [("complain", f"libdarshan-util reported problems [{said}]")]
    assert len(pids) == 2 and pids[0] != pids[1], "the worker that failed read the next log"


# -- workers die with their parent ---------------------------------------------------------------


def _children(pid) -> list[int]:
    """pid's children; a process or thread that ended while it was read has none (a CI run
    failed on a thread of the ingest that ended between listing and reading)."""
    found = []
    with contextlib.suppress(FileNotFoundError):
        for task in Path(f"/proc/{pid}/task").iterdir():
            with contextlib.suppress(FileNotFoundError):
                found += [int(c) for c in (task / "children").read_text().split()]
    return found


def _descendants(pid) -> list[int]:
    return [d for c in _children(pid) for d in (c, *_descendants(c))]


def _running(pid) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"  # a zombie has ended


def _sockets(pid) -> int:
    fds = Path(f"/proc/{pid}/fd")
    return sum(_fd_target(fds / fd).startswith("socket:") for fd in os.listdir(fds))


def _fd_target(link: Path) -> str:
    try:
        return os.readlink(link)
    except FileNotFoundError:  # closed between the listing and the read: a log, not a socket
        return ""


def test_processes_starting_together_clear_dead_scratch_folders_without_error(tmp_path):
    """Six readers starting at once each clear the 3,000 scratch folders a dead process left
    (as concurrent ingests do); a folder another one removed meanwhile is no error (it was a
    FileNotFoundError, seen when parallel tests started ingests together)."""
    dead = subprocess.Popen(["true"])
    dead.wait()
    for i in range(3000):
        (tmp_path / f"{logpool.SCRATCH_PREFIX}{dead.pid}-x{i}").mkdir()
    code = "from iostudy.logs.logpool import scratch_dir; print(scratch_dir())"
    env = {**os.environ, "TMPDIR": str(tmp_path)}
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", code],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(6)
    ]
    answers = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0] * 6, [err for _, err in answers]
    made = {Path(out.strip()).name for out, _ in answers}
    assert {p.name for p in tmp_path.iterdir()} == made, "only the six new folders are left"


@pytest.mark.slow
def test_workers_die_with_a_killed_ingest_and_its_scratch_goes(tmp_path):
    tree, tmp = tmp_path / "logs", tmp_path / "tmp"
    tmp.mkdir()
    for k in range(6000):  # copies of the real logs, each its own content (bytes at the end)
        log = _real_logs()[k % len(_real_logs())]
        (tree / str(k % 30)).mkdir(parents=True, exist_ok=True)
        (tree / str(k % 30) / f"{k}-{log.name}").write_bytes(log.read_bytes() + b"\0" * k)
    env = {**os.environ, "TMPDIR": str(tmp)}
    cmd = [str(IOSTUDY), "ingest", str(tree), "--store", str(tmp_path / "st"), "--jobs", "2"]
    ingest = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while len(_descendants(ingest.pid)) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)  # its two workers (and whatever starts them)
    time.sleep(0.2)
    assert ingest.poll() is None, "ingest ended before it could be killed: make the tree larger"
    workers = _descendants(ingest.pid)
    sockets = {w: _sockets(w) for w in workers}
    ingest.kill()
    ingest.wait()
    deadline = time.monotonic() + 5
    while any(map(_running, workers)) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not [w for w in workers if _running(w)], "no worker outlives a killed ingest"
    assert sorted(sockets.values())[:-1] == [1] * (len(workers) - 1), "each holds its pipe only"
    left = f"{logpool.SCRATCH_PREFIX}{ingest.pid}-"
    assert [p for p in os.listdir(tmp) if p.startswith(left)], "the killed ingest left its scratch"

    subprocess.run([*cmd[:-2], "--jobs", "1"], env=env, check=True, capture_output=True)
    assert not [p for p in os.listdir(tmp) if p.startswith(left)]
