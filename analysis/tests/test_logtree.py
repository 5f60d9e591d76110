"""iostudy ingest LOGTREE: a facility's log directory with good and damaged logs.

The damaged logs are real damage, not mocks: logs cut short inside the header, the job region
and the name region (the last two make libdarshan-util abort or segfault, see the format
reference section 11.3), a module region whose deflate data is overwritten, an empty file and a
text file. Every good log must be ingested, every bad one quarantined with its reason, and a
second ingest of the unchanged tree must read nothing and change nothing in the store.
"""

import os
import shutil
import zlib

import pytest

from iostudy.cli.cli import main
from iostudy.logs import logpool
from iostudy.store import store
from tests import filestate
from tests.filestate import snapshot
from tests.testdata import DARSHAN_LOGS, RELEASE_350

# Cut points in the 2597-byte 3.5.0 release log (see test_darshanlog): header, job, names.
CUTS = {"cut-in-header": 100, "cut-in-job": 1500, "cut-in-names": 1850}


def _corrupt_posix_region(data: bytes) -> bytes:
    """The 3.5.0 log with its POSIX region's deflate stream overwritten (header intact)."""
    off = int.from_bytes(data[48 + 16 : 48 + 24], "little")  # mod_map[1].off (POSIX)
    length = int.from_bytes(data[48 + 24 : 48 + 32], "little")
    assert zlib.decompress(data[off : off + length])  # it was a valid stream before
    return data[: off + 2] + b"\xff" * (length - 2) + data[off + length :]


@pytest.fixture
def tree(tmp_path):
    """tmp/site-logs/<y>/<m>/<d>/: every real test log, and the damaged ones among them."""
    root = tmp_path / "site-logs"
    good = sorted(DARSHAN_LOGS.rglob("*.darshan"))
    for k, log in enumerate(good):
        folder = root / "2024" / str(1 + k % 3) / str(1 + k % 5)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, folder / log.name)
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    bad = root / "2024" / "2" / "9"
    bad.mkdir(parents=True)
    for name, size in CUTS.items():
        (bad / f"{name}.darshan").write_bytes(release[:size])
    (bad / "corrupt-posix.darshan").write_bytes(_corrupt_posix_region(release))
    (bad / "empty.darshan").write_bytes(b"")
    (bad / "notes.darshan").write_text("not a log\n")
    return root, len(good), 6


def _ingest(capsys, *args):
    status = main(["ingest", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_good_logs_in_bad_ones_quarantined_rerun_does_nothing(tree, tmp_path, capsys):
    root, n_good, n_bad = tree
    st = tmp_path / "store"
    # small batches: crashes inside a batch must not lose the batch's good logs
    status, out, err = _ingest(capsys, root, "--store", st, "--jobs", "2")
    assert status == 0, err
    assert out[-1].endswith(f"logs {n_good} ingested, 0 skipped, {n_bad} quarantined")

    con = store.connect(st)
    assert con.execute("SELECT count(*), count(DISTINCT log_sha256) FROM jobs").fetchone() == (
        n_good,
        n_good,
    )
    reasons = dict(con.execute("SELECT path, reason FROM quarantine").fetchall())
    assert sorted(p.rsplit("/", 1)[1] for p in reasons) == sorted(
        [f"{n}.darshan" for n in CUTS] + ["corrupt-posix.darshan", "empty.darshan", "notes.darshan"]
    )
    by_name = {p.rsplit("/", 1)[1]: r for p, r in reasons.items()}
    assert "failed to read darshan log file header" in by_name["cut-in-header.darshan"]
    assert "POSIX region: damaged compressed data" in by_name["corrupt-posix.darshan"]
    # cut in the name region: refused before libdarshan-util reads it (which aborted or
    # segfaulted, run to run), as the header puts the regions after it past the file's end
    assert "truncated: the header puts the name region" in by_name["cut-in-names.darshan"]
    for name in ("empty.darshan", "notes.darshan"):
        assert by_name[name], name
    for path in reasons:
        assert path.startswith("site-logs/2024/2/9/")
        assert path in err  # each bad log is listed with its reason
    # the runs row of the tree: its study, for report build --study
    assert con.execute("SELECT run_id, study, status FROM runs").fetchall() == [
        ("logs-site-logs", store.DEFAULT_STUDY, "log tree")
    ]

    before = snapshot(st, ignore=(store.LOCK,))
    status, out, _ = _ingest(capsys, root, "--store", st)
    assert status == 0
    assert out[-1].endswith(
        f"runs 0 ingested, 1 skipped; logs 0 ingested, {n_good + n_bad} skipped, 0 quarantined"
    )
    assert snapshot(st, ignore=(store.LOCK,)) == before, "an unchanged tree changes nothing"

    # a new log: only it is read, into a new part
    (root / "2025").mkdir()
    shutil.copyfile(DARSHAN_LOGS / RELEASE_350, root / "2025" / "again.darshan")
    with open(root / "2025" / "again.darshan", "ab") as f:
        f.write(b"\0")  # bytes after the last region are ignored: same data, new content
    status, out, _ = _ingest(capsys, root, "--store", st)
    assert out[-1].endswith(f"logs 1 ingested, {n_good + n_bad} skipped, 0 quarantined")
    assert filestate.parts(st, "jobs") == ["logs-site-logs.000001", "logs-site-logs.000002"]
    assert store.connect(st).execute("SELECT count(*) FROM jobs").fetchone() == (n_good + 1,)


def test_a_folder_of_run_directories_or_nothing_is_refused(tmp_path, capsys):
    (tmp_path / "results" / "r1").mkdir(parents=True)
    (tmp_path / "results" / "r1" / "manifest.json").write_text("{}")
    status, _, err = _ingest(capsys, tmp_path / "results", "--store", tmp_path / "st")
    assert status == 2 and "holds run directories (r1)" in err
    (tmp_path / "empty").mkdir()
    status, _, err = _ingest(capsys, tmp_path / "empty", "--store", tmp_path / "st")
    assert status == 2 and "no *.darshan log below it" in err
    assert not (tmp_path / "st").exists()


def _read_or_crash(path, arg):
    if arg == "segv":
        os.kill(os.getpid(), 11)  # a real SIGSEGV of the reader process
    return arg


def _rows(context, entries):
    assert context == "ctx"
    return [arg for arg, _ in entries]


def test_pool_blames_only_the_log_that_kills_its_worker(tmp_path):
    """A worker that dies mid-batch: its batch is read again one log at a time, so the good
    logs of the batch still come back and only the killer is blamed."""
    log = DARSHAN_LOGS / RELEASE_350
    items = [(str(log), f"ok{k}") for k in range(10)]
    items.insert(4, (str(log), "segv"))
    done, failed = [], []
    with logpool.ReaderPool(_read_or_crash, _rows, jobs=2, batch=5) as pool:
        for batch in pool.map(items, context="ctx"):
            done += batch.payload or []
            failed += batch.failed
    assert sorted(done) == sorted(f"ok{k}" for k in range(10))
    assert failed == [((str(log), "segv"), "reader crashed (segfault), exit status -11")]
