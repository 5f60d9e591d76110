"""The store never loses, doubles or invents rows: commits every N logs, SIGKILL at chosen points
of a commit (strace holds the process inside a chosen rename), hostile file names and files.

The expected values come from outside the code under test: the number of logs the test writes,
the release log's 64 MiB per copy (test_store), and a clean ingest of the same tree.
"""

import contextlib
import json
import os
import re
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iostudy.cli.cli import main
from iostudy.store import catalog, store

from .logcraft import _load_corpus
from .testdata import DARSHAN_LOGS, RELEASE_350

IOSTUDY = Path(sys.executable).with_name("iostudy")
RELEASE_BYTES = 2**26  # POSIX bytes written by each copy of the release log (see test_store)
CUT_IN_JOB = 1500  # a cut of the release log that libdarshan-util cannot read (test_logtree)


def make_tree(root: Path, good: int, bad: int = 0) -> Path:
    """root/<d>/: good distinct copies of the release log (their own job ids) and bad ones cut
    short; returns root."""
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    set_jobid = _load_corpus().set_jobid
    for k in range(good):
        folder = root / f"d{k % 7}"
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"job{k}.darshan").write_bytes(set_jobid(release, 1000 + k))
    for k in range(bad):
        (root / f"cut{k}.darshan").write_bytes(set_jobid(release, 90000 + k)[:CUT_IN_JOB])
    return root


def figures(st: Path) -> dict:
    """What a store holds: rows, distinct logs, bytes, and jobs whose files rows are missing."""
    con = store.connect(st)
    one = lambda sql: con.execute(sql).fetchone()[0]  # noqa: E731
    return {
        "jobs": one("SELECT count(*) FROM jobs"),
        "logs": one("SELECT count(DISTINCT log_sha256) FROM jobs"),
        "files": one("SELECT count(*) FROM files"),
        "bytes": one("SELECT sum(bytes_written) FROM files WHERE module = 'posix'"),
        "quarantine": one("SELECT count(*) FROM quarantine"),
        "jobs_without_files": one(
            "SELECT count(*) FROM jobs WHERE log_sha256 NOT IN (SELECT log_sha256 FROM files)"
        ),
    }


def ingest(capsys, *args):
    status = main(["ingest", *map(str, args)])
    out, err = capsys.readouterr()
    return status, out.splitlines(), err


def test_commit_every_smaller_than_the_tree_keeps_every_log(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=130, bad=3)
    st = tmp_path / "store"
    status, out, err = ingest(capsys, tree, "--store", st, "--commit-every", "25")
    assert status == 0, err
    assert out[-1].endswith("logs 130 ingested, 0 skipped, 3 quarantined")
    got = figures(st)
    assert (got["jobs"], got["logs"], got["quarantine"]) == (130, 130, 3)
    assert got["bytes"] == 130 * RELEASE_BYTES
    assert got["jobs_without_files"] == 0
    # 133 logs, a commit at least every 25: six parts, each with the tree's runs row
    assert len(catalog.load(st).parts("jobs")) >= 5
    assert store.connect(st).execute("SELECT count(*) FROM runs").fetchone() == (1,)
    assert not list(st.rglob("*.tmp"))


# -- kills ---------------------------------------------------------------------------------------


def _renames(trace: Path, pid: int) -> list[str]:
    """The rename calls of process pid that the trace holds so far (the last may be one strace
    holds at its entry: printed without its result)."""
    if not trace.is_file():
        return []
    lines = trace.read_text().splitlines()
    # strace prefixes a line with its pid (padded to 5 characters) while it traces several
    # processes
    ours = re.compile(rf"({pid} +)?rename\(")
    return [line for line in lines if ours.match(line)]


def _marked_processes(marker: str) -> list[int]:
    """PIDs whose environment holds IOSTUDY_KILL_TEST=marker (the ingest and its workers)."""
    found, wanted = [], f"IOSTUDY_KILL_TEST={marker}".encode()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                if wanted in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
            except OSError:
                pass
    return found


def _traced_ingest(tree, st, tmp, trace, when=None):
    """iostudy ingest under strace (renames traced, the when-th one held for 10 s: strace ends
    only once the hold is over, even when the process is killed meanwhile);
    returns (Popen of strace, the environment marker). One worker: the logs reach the commits
    in the order of the tree, so every run of it renames the same files in the same order."""
    marker = f"{os.getpid()}-{time.monotonic_ns()}"
    env = dict(os.environ, TMPDIR=str(tmp), IOSTUDY_KILL_TEST=marker)
    inject = ["-e", f"inject=rename:delay_enter=10000000:when={when}"] if when else []
    cmd = [
        "strace",
        "-f",
        "-qq",
        "-e",
        "signal=none",
        "-o",
        str(trace),
        "-e",
        "trace=rename",
        *inject,
        str(IOSTUDY),
        "ingest",
        str(tree),
        "--store",
        str(st),
        "--commit-every",
        "30",
        "--jobs",
        "1",
    ]
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    return proc, marker


def _ingest_pid(proc, deadline=60.0) -> int:
    """The traced ingest's pid: the child of strace that runs `iostudy ingest`, from /proc (not
    from the trace, whose last line strace may still be writing). strace forks probe children
    of its own at start-up: under load one may still be listed first."""
    children = Path(f"/proc/{proc.pid}/task/{proc.pid}/children")
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        with contextlib.suppress(OSError):
            for pid in children.read_text().split():
                argv = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
                if b"ingest" in argv and not argv[0].endswith(b"strace"):
                    return int(pid)
        assert proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.01)
    raise AssertionError("strace started no ingest")


def _rename_plan(tree, tmp_path) -> list[str]:
    """The rename targets of an untraced-but-for-renames ingest of the tree: where each
    commit's parts and catalog go, in order."""
    trace, st = tmp_path / "plan.trace", tmp_path / "plan-store"
    proc, _ = _traced_ingest(tree, st, tmp_path, trace)
    pid = _ingest_pid(proc)
    assert proc.wait(timeout=300) == 0, proc.stderr.read().decode()
    shutil.rmtree(st)
    renames = _renames(trace, pid)
    assert renames, f"no rename of {pid} in the trace:\n{trace.read_text()[-3000:]}"
    return [_target(line, st) for line in renames]


def _target(rename: str, st: Path) -> str:
    """Where a traced rename of store st moves a file, relative to st."""
    return Path(rename.split('", "')[1].split('"')[0]).relative_to(st).as_posix()


def _kill_at(tree, st, tmp, when: int, target: str):
    """Starts the traced ingest, waits until it is held inside its when-th rename, checks that
    this rename moves a file to target, SIGKILLs it, and checks that none of its processes is
    left."""
    trace = tmp.parent / f"kill-{when}.trace"
    proc, marker = _traced_ingest(tree, st, tmp, trace, when)
    pid = _ingest_pid(proc)
    end = time.monotonic() + 120
    while len(_renames(trace, pid)) < when:
        assert time.monotonic() < end and proc.poll() is None, proc.stderr.read().decode()
        time.sleep(0.05)
    held = _renames(trace, pid)[when - 1]
    os.kill(pid, signal.SIGKILL)
    end = time.monotonic() + 15
    while set(_marked_processes(marker)) - {proc.pid} and time.monotonic() < end:
        time.sleep(0.1)
    survivors = [p for p in _marked_processes(marker) if p != proc.pid]  # but strace
    for other in survivors:  # clean up before failing (strace waits for every tracee)
        os.kill(other, signal.SIGKILL)
    proc.wait(timeout=60)
    assert survivors == [], "workers outlived the killed ingest"
    assert _target(held, st) == target, f"held at {held}, planned {target}"


def _catalog_renames(plan: list[str]) -> list[int]:
    """1-based numbers of the renames that commit (catalog.json.tmp -> catalog.json)."""
    return [k for k, target in enumerate(plan, 1) if target == catalog.FILE]


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)")
def test_sigkill_inside_a_commit_then_reingest_equals_a_clean_ingest(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=100, bad=4)
    clean = tmp_path / "clean"
    assert ingest(capsys, tree, "--store", clean, "--commit-every", "30")[0] == 0
    expected = figures(clean)
    assert (expected["jobs"], expected["bytes"]) == (100, 100 * RELEASE_BYTES)

    plan = _rename_plan(tree, tmp_path)
    commits = _catalog_renames(plan)
    assert len(commits) >= 3, plan
    second = commits[1]
    points = {
        "between two parts of the second commit": commits[0] + 2,
        "parts in place, the second commit's catalog not": second,
        "after the second commit, reading on": second + 1,
    }
    for what, when in points.items():
        scratch = tmp_path / f"tmp-{when}"
        scratch.mkdir()
        st = tmp_path / f"store-{when}"
        _kill_at(tree, st, scratch, when, plan[when - 1])
        # what the killed ingest left is a committed state: whole logs, none twice
        left = figures(st)
        assert left["jobs"] == left["logs"] and left["jobs_without_files"] == 0, what
        assert left["jobs"] < expected["jobs"], what
        again = subprocess.run(
            [IOSTUDY, "ingest", tree, "--store", st, "--commit-every", "30"],
            env=dict(os.environ, TMPDIR=str(scratch)),
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert again.returncode == 0, again.stderr
        assert figures(st) == expected, what
        assert not list(st.rglob("*.tmp")), what
        live = {p for t in store.TABLES for p in catalog.load(st).files(t)}
        assert {p for p in st.glob("*/*") if p.parent.name in store.TABLES} == live, what
        assert not list(scratch.iterdir()), f"{what}: the killed ingest's scratch is left"


def test_leftover_temporary_files_are_removed_at_the_next_write(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=3)
    st = tmp_path / "store"
    assert ingest(capsys, tree, "--store", st)[0] == 0
    before = figures(st)
    # what a writer killed before its commit leaves: a temporary file and an uncommitted part
    (st / "jobs" / "logs-logs.000009.parquet.tmp").write_bytes(b"half a part")
    shutil.copy(catalog.load(st).files("jobs")[0], st / "jobs" / "logs-logs.000009@99.parquet")
    assert figures(st) == before  # readers never see either
    make_tree(tmp_path / "logs", good=4)  # one more log
    assert ingest(capsys, tree, "--store", st)[0] == 0
    assert figures(st)["jobs"] == 4
    assert not list(st.rglob("*.tmp")) and not list(st.rglob("*@99.parquet"))


# -- hostile files and names ---------------------------------------------------------------------


def test_fifo_and_device_link_are_quarantined_not_read(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=2)
    os.mkfifo(tree / "fifo.darshan")
    os.symlink("/dev/zero", tree / "zero.darshan")
    os.symlink(tree / "d0" / "job0.darshan", tree / "link.darshan")
    st = tmp_path / "store"
    proc = subprocess.run(
        [IOSTUDY, "ingest", tree, "--store", st], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].endswith("logs 2 ingested, 0 skipped, 3 quarantined")
    reasons = dict(store.connect(st).execute("SELECT path, reason FROM quarantine").fetchall())
    assert "a FIFO" in reasons["logs/fifo.darshan"]
    assert "a symbolic link" in reasons["logs/zero.darshan"]
    assert "a symbolic link" in reasons["logs/link.darshan"]


def test_manifest_run_id_never_becomes_a_path(tmp_path, capsys):
    run = tmp_path / "results" / "r1"
    (run / "darshan").mkdir(parents=True)
    shutil.copy(DARSHAN_LOGS / RELEASE_350, run / "darshan" / "a.darshan")
    (run / "manifest.json").write_text(json.dumps({"run_id": "../../../x", "campaign": "q"}))
    st = tmp_path / "deep" / "store"
    status, _, err = ingest(capsys, run, "--store", st)
    assert status == 2
    assert "manifest.json: run_id: '../../../x' cannot name a part" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["results"]  # nothing written at all
    assert not (st / "runs").exists()


def test_foreign_manifest_json_at_the_top_of_a_tree_is_not_a_run(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=3)
    (tree / "manifest.json").write_text('{"files": 3, "site": "somewhere"}')
    st = tmp_path / "store"
    status, out, err = ingest(capsys, tree, "--store", st)
    assert status == 0, err
    assert out[-1].endswith("logs 3 ingested, 0 skipped, 0 quarantined")


def test_a_log_rewritten_in_place_replaces_its_rows(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=4)
    st = tmp_path / "store"
    assert ingest(capsys, tree, "--store", st)[0] == 0
    target = tree / "d1" / "job1.darshan"
    other = DARSHAN_LOGS / "release_logs" / "mpi-io-test-x86_64-3.4.0.darshan"
    target.write_bytes(other.read_bytes())  # same path, other content
    status, out, err = ingest(capsys, tree, "--store", st)
    assert status == 0, err
    con = store.connect(st)
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (4,)
    assert con.execute(
        "SELECT count(*) FROM jobs WHERE log_path = 'logs/d1/job1.darshan'"
    ).fetchone() == (1,)
    assert figures(st)["jobs_without_files"] == 0
    shas = {r[0] for r in con.execute("SELECT DISTINCT log_sha256 FROM files").fetchall()}
    assert len(shas) == 4  # the old content's files rows are gone with it


def test_store_files_are_owner_and_group_only(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=2)
    st = tmp_path / "store"
    old = os.umask(0o022)  # a usual login umask: world-readable unless the store says otherwise
    try:
        assert ingest(capsys, tree, "--store", st)[0] == 0
    finally:
        os.umask(old)
    for path in [st, *st.rglob("*")]:
        assert stat.S_IMODE(path.stat().st_mode) & 0o007 == 0, path


def test_a_damaged_catalog_is_an_error_naming_it(tmp_path, capsys):
    tree = make_tree(tmp_path / "logs", good=1)
    st = tmp_path / "store"
    assert ingest(capsys, tree, "--store", st)[0] == 0
    (st / catalog.FILE).write_text("{not json")
    assert main(["jobs", "--store", str(st)]) == 2
    assert f"{st / catalog.FILE}: cannot read the store's catalog" in capsys.readouterr().err


def test_decompression_bounds_are_options_of_ingest_and_log_summary(tmp_path, capsys):
    """A real log of many POSIX records (a DLIO run's) is refused past --max-records 1."""
    log = next((DARSHAN_LOGS / "dlio_logs").glob("*.darshan"))
    tree = tmp_path / "logs"
    tree.mkdir()
    shutil.copy(log, tree / "dlio.darshan")
    status, out, _ = ingest(capsys, tree, "--store", tmp_path / "tight", "--max-records", "1")
    assert status == 0 and out[-1].endswith("logs 0 ingested, 0 skipped, 1 quarantined")
    (reason,) = (
        store.connect(tmp_path / "tight").execute("SELECT reason FROM quarantine").fetchone()
    )
    assert "decompression bound: POSIX region" in reason and "more than 1 records" in reason
    status, out, _ = ingest(capsys, tree, "--store", tmp_path / "default")
    assert status == 0 and out[-1].endswith("logs 1 ingested, 0 skipped, 0 quarantined")
    assert main(["log", "summary", str(log), "--max-inflated", "0"]) == 2
    assert "decompression bound" in capsys.readouterr().err


def test_concurrent_ingests_store_each_log_once(tmp_path):
    """Two ingests of one tree and a third of a copy of it, started together: the lock makes
    them take turns, and each log's content is stored once (the copy's logs are known)."""
    tree = make_tree(tmp_path / "logs", good=60, bad=2)
    shutil.copytree(tree, tmp_path / "copy")
    st = tmp_path / "store"
    runs = [
        subprocess.Popen(
            [IOSTUDY, "ingest", source, "--store", st],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for source in (tree, tree, tmp_path / "copy")
    ]
    for proc in runs:
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
    got = figures(st)
    assert (got["jobs"], got["logs"], got["bytes"]) == (60, 60, 60 * RELEASE_BYTES)
    assert got["jobs_without_files"] == 0


def test_a_fifo_as_reframe_report_is_quarantined_not_waited_on(tmp_path):
    run = tmp_path / "results" / "r1"
    (run / "darshan").mkdir(parents=True)
    (run / "reframe").mkdir()
    shutil.copy(DARSHAN_LOGS / RELEASE_350, run / "darshan" / "a.darshan")
    (run / "manifest.json").write_text(json.dumps({"run_id": "r1", "campaign": "q"}))
    os.mkfifo(run / "reframe" / "report.json")
    st = tmp_path / "store"
    proc = subprocess.run(
        [IOSTUDY, "ingest", run, "--store", st], capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].endswith("logs 1 ingested, 0 skipped, 1 quarantined")
    (reason,) = store.connect(st).execute("SELECT reason FROM quarantine").fetchone()
    fifo = run / "reframe" / "report.json"
    mode = stat.filemode(fifo.lstat().st_mode)
    assert reason == (
        f"unreadable ReFrame report: [Errno 22] not a regular file (mode {mode}): {str(fifo)!r}"
    )
