"""`iostudy logs mkdirs`: a shared log root's day folders for whole years, each with the root's
mode whatever the umask; the runtime then writes today's log into the folder made for today.
The expected counts come from the calendar (a year's days as a date difference) and `find`."""

import datetime
import os
import stat
import subprocess
import time
from pathlib import Path

import pytest

from iostudy.cli.cli import main

from .testdata import REPO_ROOT

RUNTIME = REPO_ROOT / "build" / "runtime" / "libiostudy.so"


def days_in(year: int) -> int:
    return (datetime.date(year + 1, 1, 1) - datetime.date(year, 1, 1)).days


def found(root: Path, depth: int) -> list[str]:
    depths = ["-mindepth", str(depth), "-maxdepth", str(depth)]
    argv = ["find", str(root), *depths, "-type", "d"]
    return sorted(subprocess.run(argv, capture_output=True, text=True, check=True).stdout.split())


def test_day_folders_of_two_years_with_the_roots_mode(tmp_path, capsys):
    root = tmp_path / "logs"
    root.mkdir()
    root.chmod(0o1777)
    old = os.umask(0o777)
    try:
        assert main(["logs", "mkdirs", str(root), "--years", "2027", "2028"]) == 0
    finally:
        os.umask(old)
    days = days_in(2027) + days_in(2028)
    assert (days_in(2027), days_in(2028)) == (365, 366)
    assert len(found(root, 3)) == days and len(found(root, 2)) == 24 and len(found(root, 1)) == 2
    assert capsys.readouterr().out.endswith(f"{days + 24 + 2} folders made, 0 days were there\n")
    modes = {stat.S_IMODE(os.stat(p).st_mode) for p in found(root, 1) + found(root, 3)}
    assert modes == {0o1777}
    assert (root / "2028" / "2" / "29").is_dir() and not (root / "2027" / "2" / "29").exists()
    # again: nothing made, every day there
    assert main(["logs", "mkdirs", str(root), "--years", "2027"]) == 0
    assert capsys.readouterr().out.endswith("0 folders made, 365 days were there\n")


@pytest.mark.parametrize("bad", ["not-a-folder", "missing", "year"])
def test_bad_root_or_year(tmp_path, capsys, bad):
    target = tmp_path / "f"
    if bad == "not-a-folder":
        target.write_text("x")
    years = ["12345"] if bad == "year" else ["2027"]
    if bad == "year":
        target.mkdir()
    assert main(["logs", "mkdirs", str(target), "--years", *years]) == 2
    err = capsys.readouterr().err
    assert err.startswith("iostudy: error: ") and ("12345" in err or str(target) in err), err
    assert bad != "year" or not list(target.iterdir())


@pytest.mark.skipif(not RUNTIME.is_file(), reason=f"no runtime build ({RUNTIME}): make setup")
def test_the_runtime_writes_into_the_folder_made_for_today(tmp_path, capsys):
    root = tmp_path / "logs"
    root.mkdir()
    today = datetime.date.fromtimestamp(time.time())
    assert main(["logs", "mkdirs", str(root), "--years", str(today.year)]) == 0
    before = found(root, 3)
    env = {
        "PATH": os.environ["PATH"],
        "LD_PRELOAD": str(RUNTIME),
        "DARSHAN_ENABLE_NONMPI": "1",
        "DARSHAN_LOGPATH": str(root),
        "IOSTUDY_MMAP_LOGS": "0",
    }
    subprocess.run(["true"], env=env, check=True)
    (log,) = [p for p in root.rglob("*.darshan")]
    assert log.parent == root / str(today.year) / str(today.month) / str(today.day)
    assert found(root, 3) == before  # no folder of its own
