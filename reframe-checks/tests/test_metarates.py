"""iostudy's metarates benchmark (reframe-checks/src/metarates/metarates.c), the method of UCAR's
metarates: every rank creates, stats, utimes and removes N files of its own directory.

The oracles are outside the benchmark: the files on disk and their times (os.stat), the exit
status and stderr of the job, and for the operations themselves the Darshan log that iostudy's
runtime writes when preloaded, read by PyDarshan (iostudy.logs.darshanlog). Every run uses 2 ranks
under the flavour's own mpirun, oversubscribed on this host.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from benchmark_runs import FLAVOURS, describe, json_lines, require, run, runtime_env, the_log

PROCS = 2
N = 50
KEYS = [
    "benchmark",
    "phase",
    "procs",
    "files_per_proc",
    "ops",
    "seconds",
    "rate_ops_s",
    "min_proc_s",
    "max_proc_s",
]


@pytest.fixture(params=FLAVOURS)
def flavour(request) -> str:
    return require("metarates", request.param)


def metarates(flavour: str, *args, app_env: dict | None = None, timeout: int = 120):
    """The benchmark under mpirun with PROCS ranks; app_env goes to the ranks only (through
    the launcher), so that mpirun itself is never instrumented."""
    return run("metarates", flavour, PROCS, *args, app_env=app_env, timeout=timeout)


def check_phases(recs: list[dict], phases: list[str]):
    assert [r["phase"] for r in recs] == phases
    for r in recs:
        assert list(r) == KEYS, r
        assert r["benchmark"] == "metarates"
        assert (r["procs"], r["files_per_proc"], r["ops"]) == (PROCS, N, PROCS * N), r
        assert r["seconds"] > 0, r
        # Both are printed with 9 significant digits, from the unrounded time.
        assert r["rate_ops_s"] == pytest.approx(r["ops"] / r["seconds"], rel=1e-6), r
        assert 0 < r["min_proc_s"] <= r["max_proc_s"] <= r["seconds"], r


def rank_files(out: Path) -> dict[str, list[str]]:
    return {d.name: sorted(f.name for f in d.iterdir()) for d in sorted(out.iterdir())}


EXPECTED_FILES = sorted(f"f.{i}" for i in range(N))


# --- runs ---------------------------------------------------------------------------------


def test_keep_leaves_n_files_per_rank(flavour, tmp_path):
    out = tmp_path / "a" / "b"  # neither exists: rank 0 creates both
    recs = json_lines(metarates(flavour, "--dir", out, "--files-per-proc", N, "--keep"))
    check_phases(recs, ["create", "stat", "utime"])
    assert rank_files(out) == {f"rank.{r}": EXPECTED_FILES for r in range(PROCS)}
    for f in (out / "rank.1").iterdir():
        assert f.is_file() and f.stat().st_size == 0, f


def test_default_phases_remove_everything_they_made(flavour, tmp_path):
    out = tmp_path / "out"
    recs = json_lines(metarates(flavour, "-d", out, "-n", N))
    check_phases(recs, ["create", "stat", "utime", "remove"])
    assert list(out.iterdir()) == []  # the rank directories went with their files


def test_utime_sets_the_files_times_to_now(flavour, tmp_path):
    """Files created by a first run are set back to 2001; a utime-only run must bring their
    access and modification times back to the time of the run."""
    out = tmp_path / "out"
    check_phases(json_lines(metarates(flavour, "-d", out, "-n", N, "-p", "create")), ["create"])
    old = 1_000_000_000
    files = [f for d in out.iterdir() for f in d.iterdir()]
    assert len(files) == PROCS * N
    for f in files:
        os.utime(f, (old, old))
    before = time.time()
    check_phases(json_lines(metarates(flavour, "-d", out, "-n", N, "-p", "utime")), ["utime"])
    for f in files:
        st = f.stat()
        assert st.st_mtime >= before - 1 and st.st_atime >= before - 1, (f, st, before)


def test_runtime_log_shows_the_opens_and_stats(flavour, tmp_path):
    """Under iostudy's runtime, PyDarshan finds one POSIX record per benchmark file, with one
    open (create) and one stat (stat phase) each: P * N of both in all."""
    tmp = Path(os.path.realpath(tmp_path))  # the runtime records paths without symlinks
    out, logs = tmp / "out", tmp / "logs"
    env = runtime_env(logs)
    res = metarates(flavour, "-d", out, "-n", N, app_env=env)
    check_phases(json_lines(res), ["create", "stat", "utime", "remove"])
    log = the_log(logs, res)
    assert log["job"]["nprocs"] == PROCS
    names = log["name_records"]
    recs = [r for r in log["records"]["POSIX"] if names[r["id"]].startswith(f"{out}/")]
    want = {f"{out}/rank.{r}/f.{i}" for r in range(PROCS) for i in range(N)}
    assert {names[r["id"]] for r in recs} == want
    assert sum(r["counters"]["POSIX_OPENS"] for r in recs) == PROCS * N
    assert sum(r["counters"]["POSIX_STATS"] for r in recs) == PROCS * N
    # Each file belongs to the rank whose directory holds it.
    for r in recs:
        assert names[r["id"]].startswith(f"{out}/rank.{r['rank']}/"), (names[r["id"]], r["rank"])


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "args,message",
    [
        (["--files-per-proc", "0"], "--files-per-proc '0'"),
        (["--files-per-proc", "abc"], "--files-per-proc 'abc'"),
        (["--phases", "bogus"], "'bogus'"),
    ],
    ids=["files-zero", "files-not-a-number", "unknown-phase"],
)
def test_bad_parameters_exit_2(flavour, tmp_path, args, message):
    out = tmp_path / "out"
    res = metarates(flavour, "--dir", out, *args)
    assert res.returncode == 2, describe(res)
    assert res.stdout == "", describe(res)
    errors = [x for x in res.stderr.splitlines() if x.startswith("metarates: error: ")]
    assert len(errors) == 1 and message in errors[0], describe(res)  # rank 0 only
    assert "usage: metarates" in res.stderr, describe(res)
    assert not out.exists()


def test_dir_below_a_regular_file_fails_naming_it(flavour, tmp_path):
    """mkdir below a regular file fails with ENOTDIR, for root too."""
    (tmp_path / "afile").write_text("x")
    target = tmp_path / "afile" / "x"
    res = metarates(flavour, "--dir", target, "-n", 5)
    assert res.returncode != 0, describe(res)
    assert res.stdout == "", describe(res)
    assert f"metarates: rank 0: mkdir {target}: Not a directory" in res.stderr, describe(res)


def test_stat_without_files_fails_naming_the_missing_file(flavour, tmp_path):
    empty = tmp_path / "empty"
    empty.mkdir()
    res = metarates(flavour, "--dir", empty, "-n", 5, "--phases", "stat")
    assert res.returncode != 0, describe(res)
    assert res.stdout == "", describe(res)
    for r in range(PROCS):
        want = f"metarates: rank {r}: stat {empty}/rank.{r}/f.0: No such file or directory"
        assert want in res.stderr, describe(res)
    assert list(empty.iterdir()) == []  # without create nothing is made
