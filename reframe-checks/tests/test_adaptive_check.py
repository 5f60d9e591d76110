"""adaptive_check (seed 004's adaptive I/O against MPI-IO and a file per process): the shipped
adaptive campaign run for real on local, ingested and reported; the check on storage targets
a system description lists; what the check makes of the benchmark's output
(iostudy.benchmarks.adaptive). The protocol itself is tested in test_adaptive_benchmark.py."""

from __future__ import annotations

import json
import subprocess

import benchmark_runs as bench
import campaign_runs as runs
import pandas as pd
import pytest

from iostudy.benchmarks import adaptive
from iostudy.cli.cli import main
from iostudy.report import report
from iostudy.store import store as store_mod

pytestmark = pytest.mark.campaign


def ingest(run_dir, store) -> pd.DataFrame:
    assert main(["ingest", str(run_dir), "--store", str(store)]) == 0
    return store_mod.connect(store).execute("SELECT * FROM adaptive").df()


@pytest.mark.exclusive
def test_the_adaptive_campaign_runs_every_mode_size_and_load_and_is_reported(
    configs_copy, tmp_path, capsys
):
    bench.require("adaptive", "openmpi")
    status, out, run_dir = runs.run_campaign(capsys, "adaptive", "local", tmp_path / "results")
    assert status == 0, out[-3000:]
    rows = ingest(run_dir, tmp_path / "store")
    combos = {(m, s, i) for m in adaptive.MODES for s in (2 << 20, 32 << 20) for i in (False, True)}
    assert (
        set(zip(rows["mode"], rows["bytes_per_writer"], rows["interference"], strict=True))
        == combos
        and len(rows) == 12
    )
    # every core a writer, all in local's one target: nowhere to move a writer
    assert set(rows["writers"]) == {2} and set(rows["targets"]) == {1}
    assert (rows["moves"] == 0).all() and (rows["mib_s"] > 0).all()
    # the benchmark's files, the competing writers' and the folders are gone after each job
    assert not [p for p in (run_dir / "scratch").rglob("*") if p.is_file()]
    logs = list((run_dir / "darshan").rglob("*.darshan"))
    assert len(logs) == 12  # one log a job, under the runtime
    index = report.build(tmp_path / "store", "probe", tmp_path / "reports", results=run_dir.parent)
    page = index.read_text()
    assert 'id="section-adaptive"' in page
    for ident in ("adaptive-local-2w-1t", "adaptive-runs-local-2w-1t"):
        assert f'id="{ident}"' in page, ident


def test_the_check_writes_to_the_targets_the_system_lists(configs_copy, tmp_path, capsys):
    """local given two storage targets (folders here): a group on each, the competing writer
    on the first only, and nothing left on either after the jobs."""
    bench.require("adaptive", "openmpi")
    targets = [tmp_path / "disk0", tmp_path / "disk1"]
    for folder in targets:
        folder.mkdir()
    path = configs_copy / "systems" / "local" / "system.json"
    system = json.loads(path.read_text())
    system["storage"][0]["targets"] = [
        {"name": f"t{k}", "path": str(t)} for k, t in enumerate(targets)
    ]
    path.write_text(json.dumps(system))
    entry = {
        "check": "adaptive_check",
        "parameters": {"procs": 2, "mode": "adaptive", "size": "4M", "interference": [False, True]},
    }
    runs.write_campaign(configs_copy, "two", [entry], environs=["openmpi"])
    status, out, run_dir = runs.run_campaign(capsys, "two", "local", tmp_path / "results")
    assert status == 0, out[-3000:]
    rows = ingest(run_dir, tmp_path / "store")
    assert set(rows["targets"]) == {2}
    assert [json.loads(w) for w in rows["writers_per_target"]] == [[1, 1], [1, 1]]
    assert not [p for t in targets for p in t.rglob("*") if p.is_file()]
    scripts = [s.read_text() for s in sorted(run_dir.rglob("rfm_job.sh"))]
    (loaded,) = [s for s in scripts if "interference=True" in s]
    competing = [line for line in loaded.splitlines() if "dd if=/dev/zero" in line]
    assert len(competing) == 1 and f"of={targets[0]}/" in competing[0]
    assert not [s for s in scripts if "interference=False" in s and "dd if=" in s]


def test_a_run_that_is_not_what_was_asked_is_named():
    parsed = {
        "mode": "adaptive",
        "writers": 4,
        "targets": 2,
        "bytes_per_writer": 1 << 20,
        "verified": True,
        "writers_per_target": [3, 1],
        "seconds": 0.5,
    }
    assert adaptive.sanity(parsed, "adaptive", 4, 2, 1 << 20) == []
    bad = parsed | {"verified": None, "writers_per_target": [1, 1]}
    assert adaptive.sanity(bad, "adaptive", 4, 2, 1 << 20) == [
        "verified None, expected True",
        "writers per target [1, 1]: not 4",
    ]


def test_the_competing_writer_stops_with_the_job_and_leaves_nothing(tmp_path):
    folders = [tmp_path / "a", tmp_path / "b"]
    for f in folders:
        f.mkdir()
    start, stop = adaptive.interference_commands(folders)
    assert len(start) == 1  # the first half of two targets
    script = "\n".join([*start, "sleep 1", f"test -s {folders[0]}/interference.dat", *stop])
    done = subprocess.run(
        ["bash", "-c", script + "\nsleep 0.5; jobs -p | wc -l"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0 and done.stdout.strip() == "0", done
    assert not [p for f in folders for p in f.iterdir()]


def test_a_competing_writer_that_cannot_be_placed_stops_the_job(tmp_path):
    """On GlusterFS the competing writer's file is named onto its brick (glusterplace); where
    that cannot be done (here: no GlusterFS, no pathinfo to read) the job stops, saying why,
    before anything writes, rather than load a target its row would not name; and it runs the
    cleanup its end would have run (undo: here, removing the job's folders)."""
    placer = bench.checks_build_dir() / adaptive.PLACER
    if not placer.is_file():
        pytest.fail(f"{placer} not found: {bench.BUILD_HINT}", pytrace=False)
    job = tmp_path / "job"
    folders = [job / "a", job / "b"]
    for f in folders:
        f.mkdir(parents=True)
    bricks = [("n1-disk", "/srv/n1/brick"), ("n2-disk", "/srv/n2/brick")]
    undo = [f"rm -rf {job}", "echo undone"]
    start, stop = adaptive.interference_commands(folders, bricks, placer, undo)
    script = "\n".join([*start, "echo benchmark", *stop])
    done = subprocess.run(["bash", "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 1 and "benchmark" not in done.stdout, done
    assert done.stdout.split() == ["undone"], done
    assert "cannot be placed on n1-disk (/srv/n1/brick)" in done.stderr, done
    assert "trusted.glusterfs.pathinfo" in done.stderr, done  # glusterplace's own reason
    # nothing left, not even the job's folders
    assert not job.exists()


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
def test_target_dirs_hold_the_files_and_stay(flavour, tmp_path):
    bench.require("adaptive", flavour)
    a, b = tmp_path / "a", tmp_path / "b"
    res = bench.run(
        "adaptive",
        flavour,
        4,
        "--dir",
        tmp_path / "index",
        "--size",
        "256K",
        "--target-dir",
        a,
        "--target-dir",
        b,
        "--verify",
        "--keep",
    )
    (line,) = bench.json_lines(res)
    assert line["targets"] == 2 and line["writers_per_target"] == [2, 2]
    assert (
        {p.name for p in a.iterdir()}
        == {"adaptive.dat", "adaptive.idx"}
        == {p.name for p in b.iterdir()}
    )
    assert [p.name for p in (tmp_path / "index").iterdir()] == ["adaptive.gidx"]
    res = bench.run(
        "adaptive",
        flavour,
        4,
        "--dir",
        tmp_path / "index",
        "--size",
        "256K",
        "--target-dir",
        a,
        "--target-dir",
        b,
    )
    bench.json_lines(res)
    assert a.is_dir() and b.is_dir() and not list(a.iterdir()) and not list(b.iterdir())


def test_a_listed_target_whose_folder_is_missing_fails_the_job_naming_it(
    configs_copy, tmp_path, capsys
):
    """A target not mounted: the job stops before writing, rather than measure the disk under
    the mount point."""
    bench.require("adaptive", "openmpi")
    present, missing = tmp_path / "disk0", tmp_path / "disk1"
    present.mkdir()
    path = configs_copy / "systems" / "local" / "system.json"
    system = json.loads(path.read_text())
    system["storage"][0]["targets"] = [
        {"name": "t0", "path": str(present)},
        {"name": "t1", "path": str(missing)},
    ]
    path.write_text(json.dumps(system))
    params = {"procs": 2, "mode": "adaptive", "size": "1M"}
    entry = {"check": "adaptive_check", "parameters": params}
    runs.write_campaign(configs_copy, "gone", [entry], environs=["openmpi"])
    status, out, run_dir = runs.run_campaign(capsys, "gone", "local", tmp_path / "results")
    assert status != 0 and not missing.exists()
    (err,) = [p.read_text() for p in run_dir.rglob("rfm_job.err")]
    assert f"storage target t1: no folder {missing} on " in err
    assert not list((run_dir / "darshan").rglob("*.darshan"))  # nothing ran
