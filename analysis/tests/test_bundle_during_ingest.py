"""An export during an ingest is one committed generation of the store. The export is held for
seconds right after it opened the store's catalog (strace delays that open's return), and two
ingests commit meanwhile: a new run, and a run ingested again (its parts replaced, their files
removed by the commit). The bundle still holds the generation the export opened, whole, and
imports at another site. Before, such an export crashed on a removed part file, or wrote a bundle
importers refuse ("rows of run ..., not a run of the bundle": runs read before a commit, tables
after it)."""

import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

import pytest

from iostudy.store import bundlecheck

from .testdata import DARSHAN_LOGS, RELEASE_350

IOSTUDY = Path(sys.executable).with_name("iostudy")
HOLD_SECONDS = 8  # longer than an ingest takes to commit on a loaded CI machine


def iostudy(*args) -> subprocess.CompletedProcess:
    return subprocess.run([IOSTUDY, *map(str, args)], capture_output=True, text=True, timeout=300)


def run_dir(results: Path, run_id: str, round_: int = 0) -> Path:
    run = results / run_id
    (run / "darshan").mkdir(parents=True, exist_ok=True)
    shutil.copy(DARSHAN_LOGS / RELEASE_350, run / "darshan" / "a.darshan")
    manifest = {"run_id": run_id, "campaign": "q", "round": round_}
    (run / "manifest.json").write_text(json.dumps(manifest))
    return run


def descendants(pid: int) -> list[int]:
    found, todo = [], [pid]
    while todo:
        here = todo.pop()
        found.append(here)
        for task in Path(f"/proc/{here}/task").glob("*"):
            children = (task / "children").read_text().split()
            todo.extend(int(c) for c in children)
    return found


def holds_open(pid: int, path: Path) -> bool:
    """Whether a process of the tree under pid has path open."""
    for proc in descendants(pid):
        for fd in Path(f"/proc/{proc}/fd").glob("*"):
            try:
                if os.readlink(fd) == str(path):
                    return True
            except OSError:
                continue
    return False


def held_export(st: Path, out: Path) -> subprocess.Popen:
    """`iostudy export`, held HOLD_SECONDS once its first open of the catalog has returned."""
    delay = f"inject=openat:delay_exit={HOLD_SECONDS * 1_000_000}:when=1"
    strace = ["strace", "-f", "-qq", "-o", "/dev/null", "-P", st / "catalog.json"]
    strace += ["-e", "trace=openat", "-e", delay]
    export = [IOSTUDY, "export", "--store", st, "--out", out, "--site", "site-a"]
    return subprocess.Popen(
        [str(a) for a in strace + export], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def generation(st: Path) -> int:
    return json.loads((st / "catalog.json").read_text())["generation"]


def start_ingest(run: Path, st: Path) -> subprocess.Popen:
    cmd = [str(IOSTUDY), "ingest", str(run), "--store", str(st)]
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_until(done, proc: subprocess.Popen, what: str) -> None:
    deadline = time.monotonic() + 60
    while not done():
        assert proc.poll() is None, f"{what}: the export ended first: {proc.communicate()}"
        assert time.monotonic() < deadline, what
        time.sleep(0.05)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace to hold the export")
def test_an_export_held_across_commits_writes_the_generation_it_opened(tmp_path):
    results = tmp_path / "results"
    st = results / "store"
    assert iostudy("ingest", run_dir(results, "r1"), "--store", st).returncode == 0
    opened = generation(st)
    export = held_export(st, tmp_path / "b.tar")
    wait_until(lambda: holds_open(export.pid, st / "catalog.json"), export, "the export's open")
    runs = (run_dir(results, "r2"), run_dir(results, "r1", round_=1))
    ingests = [start_ingest(run, st) for run in runs]
    wait_until(lambda: generation(st) > opened, export, "a commit while the export is held")
    _, err = export.communicate(timeout=300)
    assert export.returncode == 0, err
    for ingest in ingests:
        _, err = ingest.communicate(timeout=300)
        assert ingest.returncode == 0, err
    assert generation(st) == opened + 2
    with tarfile.open(tmp_path / "b.tar") as tar:
        meta = json.load(tar.extractfile(bundlecheck.META))
    assert [r["run_id"] for r in meta["runs"]] == ["r1"], "not the generation it opened"
    other = tmp_path / "other"
    imported = iostudy("import", tmp_path / "b.tar", "--store", other, "--trust-on-first-use")
    assert imported.returncode == 0, imported.stderr
    assert not list(st.glob(".snapshot-*")), "the export left its snapshot"
