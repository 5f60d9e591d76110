"""iostudy fsstats: scans of generated trees against what the tree was made of and against
`find -printf` (the oracle), permission errors as a real unprivileged user (setpriv), vanishing
directories (deterministic: between a checkpoint and the resume; and a real concurrent deleter),
symlink loops, a real mount point (a tmpfs in a private mount namespace), non-UTF-8 names,
SIGINT with a checkpoint, diff on two known snapshots, the store import and the report section.

The walker is the real iostudy-fswalk of this checkout (built by `make setup`)."""

import json
import math
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.collect import fsstats_diff, fsstats_scan, fsstats_tally, fsstats_walker
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_INTERRUPTED, EXIT_STOPPED
from iostudy.report import filesystems
from iostudy.store import store

from . import filestate

DAY = 86400
NOBODY = ("nobody", "nogroup")


@pytest.fixture(scope="session", autouse=True)
def walker():
    found = fsstats_walker.find_walker()
    assert found, f"{fsstats_walker.TOOL} is not built: run `make setup` (or `make build-fswalk`)"
    return found


def run(capsys, *args):
    status = main(["fsstats", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out.strip().splitlines(), out.err


def scan_snapshot(capsys, root, out, *args):
    status, lines, err = run(capsys, "scan", root, "--out", out, "--quiet", *args)
    assert status == 0, err
    assert lines[-1].endswith(f"-> {out}")
    return json.loads(Path(out).read_text())


def bins(snap, name, project=None):
    """{lo: the bin's values after lo and hi} of a histogram."""
    hist = snap["histograms"][name] if project is None else project_of(snap, project)["file_size"]
    return {b[0]: tuple(b[2:]) for b in hist["bins"]}


def project_of(snap, name):
    return next(p for p in snap["projects"] if p["name"] == name)


def lo_of(value: int) -> int:
    """The lower edge of value's log2 bin, by Python's own int.bit_length."""
    k = value.bit_length()
    return 0 if k == 0 else 1 << (k - 1)


def make_file(path: Path, size: int, age_days: float | None = None, atime_days=None, data=False):
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "wb") as f:
        if data:
            f.write(b"x" * size)
        else:
            f.truncate(size)  # sparse: nothing allocated
    if age_days is not None:
        now = time.time()
        atime = now - (atime_days if atime_days is not None else age_days) * DAY
        os.utime(path, (atime, now - age_days * DAY))


# -- the binning ---------------------------------------------------------------------------------


def test_bit_length_is_exact_at_every_edge():
    values = [0, 1, 2, 3, 4, 1023, 1024, 1025, (1 << 53) - 1, 1 << 53, (1 << 53) + 1]
    values += [(1 << k) - 1 for k in range(54, 65)] + [1 << k for k in range(54, 64)]
    values += [(1 << 64) - 1, (1 << 63) + 12345]
    got = fsstats_tally.bit_length(np.array(values, dtype=np.uint64)).tolist()
    assert got == [v.bit_length() for v in values]


def test_byte_sums_are_exact_beyond_float_precision():
    values = [(1 << 53) + 1, (1 << 53) + 3, 1, (1 << 40) + 7, 12345]
    keys = np.array([0, 0, 0, 1, 1])
    got = fsstats_tally._split_sums(keys, np.array(values, dtype=np.uint64), 3).tolist()
    assert got == [(1 << 54) + 5, (1 << 40) + 12352, 0]


# -- a tree made by hand: every kind of entry --------------------------------------------------


@pytest.fixture
def known_tree(tmp_path):
    """alpha: files of known sizes and ages, a hard link pair, a FIFO, a nested directory;
    beta: files and a symlink loop; a directory with a non-UTF-8 name; entries at the root."""
    root = tmp_path / "tree"
    spec = {  # path: (size, mtime age in days, atime age in days)
        "alpha/empty": (0, 0.2, 0.2),
        "alpha/one": (1, 3.5, 1.5),
        "alpha/small": (1000, 70, 70),
        "alpha/page": (4096, 130, 2),
        "alpha/sub/mib": (1 << 20, 200, 200),
        "alpha/sub/deeper/big": (5 * 10**9, 10, 10),
        "beta/a": (100, 65, 65),
        "beta/b": (100, 1, 1),
        "beta/c": (300, 0.5, 0.5),
        "top-file": (12345, 700, 700),
    }
    for rel, (size, mage, aage) in spec.items():
        make_file(root / rel, size, mage, aage)
    os.link(root / "alpha/small", root / "alpha/small-link")  # one file, two names
    os.mkfifo(root / "alpha/fifo")
    (root / "beta/loop-a").symlink_to("loop-b")  # a -> b -> a
    (root / "beta/loop-b").symlink_to("loop-a")
    (root / "beta/self").symlink_to(".")  # followed, the walk would never end
    (root / "beta/up").symlink_to("..")
    (root / "link-to-alpha").symlink_to("alpha")
    odd = os.fsencode(root) + b"/caf\xe9-\xff"  # Latin-1, not UTF-8
    os.mkdir(odd)
    with open(odd + b"/na\xefve", "wb") as f:
        f.write(b"12345")
    (root / "empty-dir").mkdir()
    return root, spec


def test_scan_known_tree(capsys, known_tree, tmp_path):
    root, spec = known_tree
    out = tmp_path / "known.json"
    snap = scan_snapshot(capsys, root, out)
    counts = snap["counts"]
    # files: spec + naive; the hard link's second name is not a second file
    assert counts["files"] == len(spec) + 1
    assert (counts["hardlinks"], counts["multilinked_files"]) == (1, 1)
    assert counts["symlinks"] == 5
    assert counts["special"] == 1
    # root, alpha, alpha/sub, alpha/sub/deeper, beta, caf?-?, empty-dir
    assert counts["dirs"] == 7
    assert counts["mountpoints"] == 0
    sizes = [s for s, _, _ in spec.values()] + [5]
    assert counts["bytes"] == sum(sizes)
    assert snap["errors"] == {"permission": 0, "vanished": 0, "other": 0, "examples": []}
    # every name below the root: 10 files + 1 link + 1 fifo + 5 symlinks + 6 dirs + naive
    assert counts["entries"] == 24

    expected = {}
    for s in sizes:
        files, total, allocated = expected.get(lo_of(s), (0, 0, 0))
        expected[lo_of(s)] = (files + 1, total + s, allocated)
    # naive was written, not truncated: it has blocks
    naive_blocks = os.lstat(os.fsencode(root) + b"/caf\xe9-\xff/na\xefve").st_blocks * 512
    assert naive_blocks > 0
    expected[lo_of(5)] = (expected[lo_of(5)][0], expected[lo_of(5)][1], naive_blocks)
    assert bins(snap, "file_size") == expected
    assert bins(snap, "allocated_size") == {
        0: (len(spec), 0),
        lo_of(naive_blocks): (1, naive_blocks),
    }

    # ages in whole days since the scan's start, log2 bins: [0,1) [1,2) [2,4) ... [64,128) ...
    def age_bins(which):
        got = {}
        for s, mage, aage in [*spec.values(), (5, 0, 0)]:
            lo = lo_of(int((mage if which == "mtime" else aage) * DAY) // DAY)
            files, total = got.get(lo, (0, 0))
            got[lo] = (files + 1, total + s)
        return got

    assert bins(snap, "mtime") == age_bins("mtime")
    assert bins(snap, "atime") == age_bins("atime")
    assert bins(snap, "ctime") == {0: (len(spec) + 1, sum(sizes))}  # all changed just now

    # directories by entries: root 6 (alpha beta top-file link-to-alpha caf? empty-dir),
    # alpha 7, sub 2, deeper 1, beta 7, caf? 1, empty-dir 0
    assert bins(snap, "dir_entries") == {0: (1, 0), 1: (2, 2), 2: (1, 2), 4: (3, 20)}
    # name lengths in bytes, bins of 8 (the odd names: 6 and 5 bytes)
    names = [n for n in ("alpha", "beta", "top-file", "link-to-alpha", "empty-dir")]
    names += ["empty", "one", "small", "page", "sub", "small-link", "fifo", "mib", "deeper"]
    names += ["big", "a", "b", "c", "loop-a", "loop-b", "self", "up"]
    lengths = [len(n) for n in names] + [len(b"caf\xe9-\xff"), len(b"na\xefve")]
    expected_names = {}
    for n in lengths:
        expected_names[n // 8 * 8] = (expected_names.get(n // 8 * 8, (0,))[0] + 1,)
    assert bins(snap, "name_length") == expected_names

    # projects: the top-level directories, "." for the rest (the root, top-file, the symlink)
    by_name = {p["name"]: p for p in snap["projects"]}
    odd_name = os.fsdecode(b"caf\xe9-\xff")
    assert sorted(by_name) == sorted([".", "alpha", "beta", odd_name, "empty-dir"])
    assert os.fsencode(odd_name) == b"caf\xe9-\xff"  # the bytes come back
    alpha = by_name["alpha"]
    assert (alpha["files"], alpha["hardlinks"], alpha["special"], alpha["dirs"]) == (6, 1, 1, 3)
    assert alpha["bytes"] == sum(s for p, (s, _, _) in spec.items() if p.startswith("alpha/"))
    assert (by_name["."]["files"], by_name["."]["symlinks"], by_name["."]["dirs"]) == (1, 1, 1)
    assert (by_name["beta"]["symlinks"], by_name[odd_name]["files"]) == (4, 1)
    assert bins(snap, None, "beta") == {64: (2, 200), 256: (1, 300)}
    assert sum(p["files"] for p in snap["projects"]) == counts["files"]
    # the JSON escapes the lone surrogates: the file is plain ASCII
    assert out.read_bytes().isascii()


def test_root_errors_name_the_path(capsys, tmp_path):
    status, _, err = run(capsys, "scan", tmp_path / "missing", "--out", tmp_path / "x.json")
    assert status == EXIT_BAD_INPUT
    assert f"{tmp_path / 'missing'}: No such file or directory" in err
    make_file(tmp_path / "plain", 3)
    status, _, err = run(capsys, "scan", tmp_path / "plain", "--out", tmp_path / "x.json")
    assert (status, f"{tmp_path / 'plain'}: not a directory" in err) == (2, True)
    assert not (tmp_path / "x.json").exists()


# -- a generated tree against find ---------------------------------------------------------------


def random_tree(root: Path, files: int, seed: int = 7) -> None:
    rng = random.Random(seed)
    dirs = [root / f"proj{p}" for p in range(4)]
    for d in dirs:
        d.mkdir(parents=True)
    for i in range(files // 20):
        parent = rng.choice(dirs)
        dirs.append(parent / f"d{i:04d}")
        dirs[-1].mkdir()
    for i in range(files):
        size = rng.choice([0, 1, 7, 100, 4095, 4096, 70_000, 1 << 20]) + rng.randrange(3)
        make_file(
            rng.choice(dirs) / f"f{i:05d}.dat",
            size,
            rng.uniform(0, 400),
            rng.uniform(0, 400),
            data=size < 5000 and rng.random() < 0.3,
        )
    for i in range(files // 50):
        (rng.choice(dirs) / f"s{i}").symlink_to(rng.choice(["..", ".", "/", "nowhere"]))


def find_oracle(root: Path, now: int) -> dict:
    """The histograms of the tree as `find -xdev -printf` sees it."""
    fmt = r"%y %s %n %i %b %T@ %A@\0%h\0%f\0"
    raw = subprocess.run(
        ["find", str(root), "-xdev", "-mindepth", "1", "-printf", fmt],
        check=True,
        capture_output=True,
    ).stdout.split(b"\0")[:-1]
    records = [raw[i : i + 3] for i in range(0, len(raw), 3)]
    sizes, allocated, mtime, atime, seen, names = {}, {}, {}, {}, set(), {}
    entries = {os.fsencode(root): 0}
    for head, parent, name in records:
        kind, size, nlink, ino, blocks, mt, at = head.split()
        entries[parent] = entries.get(parent, 0) + 1
        names[len(name) // 8 * 8] = names.get(len(name) // 8 * 8, 0) + 1
        if kind == b"d":
            entries.setdefault(parent + b"/" + name, 0)
        if kind != b"f" or (int(nlink) > 1 and ino in seen):
            continue
        seen.add(ino)
        size, alloc = int(size), int(blocks) * 512
        for hist, value in ((sizes, size), (allocated, alloc)):
            hist[lo_of(value)] = hist.get(lo_of(value), 0) + 1
        for hist, t in ((mtime, mt), (atime, at)):
            lo = lo_of(max((now - int(float(t))) // DAY, 0))
            hist[lo] = hist.get(lo, 0) + 1
    dir_entries = {}
    for n in entries.values():
        dir_entries[lo_of(n)] = dir_entries.get(lo_of(n), 0) + 1
    return {
        "file_size": sizes,
        "allocated_size": allocated,
        "mtime": mtime,
        "atime": atime,
        "dir_entries": dir_entries,
        "name_length": names,
        "entries": len(records),
    }


def first_column(snap, name):
    return {lo: values[0] for lo, values in bins(snap, name).items()}


def test_scan_matches_find_whatever_the_threads(capsys, tmp_path):
    root = tmp_path / "random"
    random_tree(root, 3000)
    one = scan_snapshot(capsys, root, tmp_path / "one.json", "--threads", "1")
    many = scan_snapshot(capsys, root, tmp_path / "many.json", "--threads", "16")
    oracle = find_oracle(root, one["now"])
    for name in ("file_size", "allocated_size", "mtime", "atime", "dir_entries", "name_length"):
        assert first_column(one, name) == oracle[name], name
    assert one["counts"]["entries"] == oracle["entries"]
    assert one["counts"]["files"] == 3000
    # the threads change the order of the walk, never what it finds (now: ages may shift a day)
    for key in ("counts", "projects", "errors"):
        assert one[key] == many[key], key
    for name in ("file_size", "allocated_size", "dir_entries", "name_length"):
        assert one["histograms"][name] == many["histograms"][name]


def test_list_writes_every_entry_once(capsys, tmp_path):
    root = tmp_path / "random"
    random_tree(root, 400)
    listing = tmp_path / "listing"
    snap = scan_snapshot(capsys, root, tmp_path / "s.json", "--list", listing)
    records = listing.read_bytes().split(b"\0")[:-1]
    assert len(records) == snap["counts"]["entries"]
    paths = {r.split(b"\t", 8)[8] for r in records}
    found = subprocess.run(
        ["find", str(root), "-mindepth", "1", "-print0"], check=True, capture_output=True
    ).stdout.split(b"\0")[:-1]
    assert paths == set(found)
    kinds = [r.split(b"\t", 1)[0] for r in records]
    assert kinds.count(b"f") == snap["counts"]["files"]
    assert kinds.count(b"l") == snap["counts"]["symlinks"]


# -- errors: permission, vanished ---------------------------------------------------------------


@pytest.fixture
def world_dir():
    """A folder outside pytest's own (which is private to root), which nobody may enter."""
    path = Path(tempfile.mkdtemp(prefix="iostudy-fsstats-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def as_unprivileged(cmd: list) -> list:
    """cmd as the unprivileged user when we are root (who is never denied), else as we are."""
    if os.geteuid() != 0:
        return cmd
    setpriv = shutil.which("setpriv")
    assert setpriv, "setpriv (util-linux) is needed to run the scan as an unprivileged user"
    return [setpriv, f"--reuid={NOBODY[0]}", f"--regid={NOBODY[1]}", "--clear-groups", *cmd]


def cli(*args) -> list:
    return [sys.executable, "-m", "iostudy.cli.cli", "fsstats", *map(str, args)]


def test_unreadable_directories_are_counted_and_skipped(world_dir):
    root = world_dir / "tree"
    for rel in (
        "open/a",
        "open/b",
        "secret/x",
        "secret/y",
        "listonly/p",
        "listonly/q",
        "listonly/r",
    ):
        make_file(root / rel, 10)
    (root / "secret").chmod(0o700)  # root's: the unprivileged scan cannot list it
    (root / "listonly").chmod(0o744)  # others may list it (r) but not look inside (no x)
    outdir = world_dir / "out"
    outdir.mkdir(mode=0o777)
    outdir.chmod(0o777)
    out = outdir / "snap.json"
    proc = subprocess.run(
        as_unprivileged(cli("scan", root, "--out", out, "--quiet")),
        capture_output=True,
        text=True,
        cwd=world_dir,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.strip().splitlines()[-1].endswith(f"-> {out}")
    assert "warning: 4 permission errors" in proc.stderr
    snap = json.loads(out.read_text())
    errors = snap["errors"]
    # secret: cannot be opened (1); listonly: listed, but each of its 3 entries cannot be stat'ed
    assert (errors["permission"], errors["vanished"], errors["other"]) == (4, 0, 0)
    paths = sorted((e["op"], e["path"]) for e in errors["examples"])
    assert paths == [("open", str(root / "secret"))] + [
        ("stat", str(root / "listonly" / n)) for n in "pqr"
    ]
    assert {e["error"] for e in errors["examples"]} == {"Permission denied"}
    # the walk went on: open/ fully counted, the two unreadable directories as directories
    assert snap["counts"]["files"] == 2
    assert snap["counts"]["dirs"] == 4
    assert project_of(snap, "open")["files"] == 2
    # listed: the root (3 entries), open (2) and listonly (3 names, none could be looked at)
    assert bins(snap, "dir_entries") == {2: (3, 8)}
    assert snap["counts"]["entries"] == 5


def pending_dirs(path: Path) -> list[bytes]:
    fields = path.read_bytes().split(b"\0")[:-1]
    return [fields[i + 2] for i in range(0, len(fields), 3)]


def test_directories_vanished_between_checkpoint_and_resume(capsys, tmp_path):
    root = tmp_path / "tree"
    for d in range(20):
        for f in range(5):
            make_file(root / "proj" / f"d{d:02d}" / f"f{f}", 100 * d + f)
    ck = tmp_path / "ck" / "scan.ckpt"
    out = tmp_path / "snap.json"
    status, lines, err = run(
        capsys, "scan", root, "--out", out, "--checkpoint", ck, "--max-dirs", 3, "--quiet"
    )
    assert status == EXIT_STOPPED, err
    assert lines[-1].startswith("fsstats scan: stopped after --max-dirs 3 directories")
    assert f"checkpoint {ck} (go on with --resume)" in lines[-1]
    assert not out.exists()
    state = json.loads(ck.read_text())
    pending = pending_dirs(ck.with_name(f"scan.ckpt.pending.{state['generation']}"))
    # proj and two of its directories are listed; the other 18 wait in the checkpoint
    assert len(pending) == 18
    gone = pending[:2]
    for d in gone:
        shutil.rmtree(d)
    os.unlink(pending[2] + b"/f0")  # a file gone from a directory not listed yet: no error

    status, lines, err = run(
        capsys, "scan", root, "--out", out, "--checkpoint", ck, "--resume", "--quiet"
    )
    assert status == 0, err
    snap = json.loads(out.read_text())
    assert snap["errors"]["vanished"] == 2
    assert (snap["errors"]["permission"], snap["errors"]["other"]) == (0, 0)
    assert sorted(e["path"] for e in snap["errors"]["examples"]) == sorted(map(os.fsdecode, gone))
    assert {e["error"] for e in snap["errors"]["examples"]} == {"No such file or directory"}
    assert snap["counts"]["files"] == 100 - 2 * 5 - 1
    assert snap["sessions"] == 2
    assert not ck.exists() and not list(ck.parent.glob("scan.ckpt.pending.*"))
    # what a fresh scan of the tree as it is now finds, but for the listing of proj (20 entries)
    fresh = scan_snapshot(capsys, root, tmp_path / "fresh.json")
    assert fresh["histograms"]["file_size"] == snap["histograms"]["file_size"]
    assert fresh["counts"]["files"] == snap["counts"]["files"]


def test_periodic_checkpoints_add_up_to_one_scan(capsys, tmp_path, monkeypatch):
    """A checkpoint every 1 ms: the walk goes by in several rounds (a new walker each, from the
    directories the last one left), and adds up to what one walk finds."""
    root = tmp_path / "tree"
    random_tree(root, 3000, seed=5)
    saved = []
    original = fsstats_scan._Checkpoint.save

    def save(self, state):  # a spy: the real save, counted
        saved.append(state["generation"])
        return original(self, state)

    monkeypatch.setattr(fsstats_scan._Checkpoint, "save", save)
    ck = tmp_path / "ck"
    every = ("--checkpoint-every", "0.001", "--threads", "1")
    rounds = scan_snapshot(capsys, root, tmp_path / "rounds.json", "--checkpoint", ck, *every)
    assert len(saved) >= 3 and saved == list(range(len(saved)))  # 0: before the first round
    assert not ck.exists() and not list(tmp_path.glob("ck.pending.*"))
    whole = scan_snapshot(capsys, root, tmp_path / "whole.json")
    for key in ("counts", "projects", "errors"):
        assert rounds[key] == whole[key], key
    for name in ("file_size", "allocated_size", "dir_entries", "name_length"):
        assert rounds["histograms"][name] == whole["histograms"][name]


def test_checkpoint_of_another_tree_is_refused(capsys, tmp_path):
    for name in ("a", "b"):
        for d in range(3):
            make_file(tmp_path / name / "p" / f"d{d}" / "f", 1)
    ck = tmp_path / "ck"
    status, _, _ = run(
        capsys,
        "scan",
        tmp_path / "a",
        "--out",
        tmp_path / "a.json",
        "--checkpoint",
        ck,
        "--max-dirs",
        1,
        "-q",
    )
    assert status == EXIT_STOPPED
    status, _, err = run(
        capsys,
        "scan",
        tmp_path / "b",
        "--out",
        tmp_path / "b.json",
        "--checkpoint",
        ck,
        "--resume",
        "-q",
    )
    assert status == EXIT_BAD_INPUT
    assert f"{ck}: a checkpoint of {tmp_path / 'a'}" in err
    # nor is a checkpoint started afresh over by mistake
    status, _, err = run(
        capsys, "scan", tmp_path / "a", "--out", tmp_path / "a.json", "--checkpoint", ck, "-q"
    )
    assert status == EXIT_BAD_INPUT
    assert f"{ck} exists: give --resume to go on from it" in err


def test_concurrent_deleter(tmp_path, monkeypatch):
    """A real deleter removes whole directories while the walk runs: the scan ends, counts only
    what it saw, and every failure is a vanished entry. Whether a deletion falls between a
    listing and a look is up to the scheduler: the scan is repeated (at most 12 times, on a new
    tree) until at least one vanished entry was seen."""
    started = threading.Event()
    original = fsstats_scan.run_walker

    def run_walker(*args, **kwargs):
        started.set()  # the deleter starts with the walker (a hook, not a stand-in)
        return original(*args, **kwargs)

    monkeypatch.setattr(fsstats_scan, "run_walker", run_walker)
    seen = []
    for attempt in range(12):
        root = tmp_path / f"tree{attempt}"
        names = [
            root / f"p{d % 3}" / f"d{d:02d}" / f"f{f:03d}" for d in range(60) for f in range(150)
        ]
        for path in names:
            make_file(path, 1)
        victims = sorted({p.parent for p in names})[::2]
        started.clear()

        def deleter(victims=victims):
            started.wait()
            for d in victims:
                shutil.rmtree(d, ignore_errors=True)

        thread = threading.Thread(target=deleter)
        thread.start()
        try:
            result = fsstats_scan.scan(root, tmp_path / f"s{attempt}.json", threads=2)
        finally:
            started.set()
            thread.join()
        snap = result.snapshot
        errors = snap["errors"]
        assert (errors["permission"], errors["other"]) == (0, 0)
        assert len(names) - 150 * len(victims) <= snap["counts"]["files"] <= len(names)
        assert all(e["kind"] == "vanished" for e in errors["examples"])
        seen.append(errors["vanished"])
        if errors["vanished"]:
            break
    assert max(seen) > 0, f"no deletion fell inside the walk in {len(seen)} attempts"


# -- symlinks and mount points ------------------------------------------------------------------


def test_a_mount_point_is_not_entered(tmp_path):
    root = tmp_path / "tree"
    make_file(root / "proj" / "kept", 10)
    (root / "proj" / "mnt").mkdir()
    out = tmp_path / "snap.json"
    script = (
        f'mount -t tmpfs iostudy-test "{root}/proj/mnt" && '
        f'head -c 5000 /dev/zero > "{root}/proj/mnt/hidden" && exec "$@"'
    )
    unshare = shutil.which("unshare")
    if os.geteuid() != 0 or not unshare:
        pytest.skip("a mount point needs root and unshare (util-linux) for a private namespace")
    cmd = [unshare, "-m", "sh", "-c", script, "sh", *cli("scan", root, "--out", out, "-q")]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0 and "mount" in proc.stderr and not out.exists():
        pytest.skip(f"cannot mount a tmpfs here: {proc.stderr.strip()}")
    assert proc.returncode == 0, proc.stderr
    snap = json.loads(out.read_text())
    assert (snap["counts"]["mountpoints"], snap["counts"]["files"]) == (1, 1)
    assert snap["counts"]["bytes"] == 10
    assert snap["counts"]["dirs"] == 2  # the root and proj: the mount point is not one of ours


# -- SIGINT --------------------------------------------------------------------------------------


def children(pid: int) -> dict[int, str]:
    """{pid: state} of pid's children."""
    found = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                fields = Path(f"/proc/{entry.name}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found[int(entry.name)] = fields[0]
    return found


def test_sigint_keeps_a_checkpoint_to_resume_from(capsys, tmp_path, walker):
    """A scan stopped by --max-dirs in the middle of the tree is resumed, and that session gets
    SIGINT while its walker starts: the walker (held at its start by a wrapper that stops
    itself and then execs the real one, so that the signal cannot come too late) is told to
    stop, and the checkpoint keeps all that is still to go. A third session finishes and finds
    what a scan in one go finds."""
    root = tmp_path / "tree"
    random_tree(root, 2000, seed=3)
    ck, out = tmp_path / "ck", tmp_path / "snap.json"
    status, _, err = run(
        capsys, "scan", root, "--out", out, "--checkpoint", ck, "--max-dirs", 20, "-q"
    )
    assert status == EXIT_STOPPED, err
    before = json.loads(ck.read_text())
    pending_before = pending_dirs(ck.with_name(f"ck.pending.{before['generation']}"))

    wrapper = tmp_path / "held-fswalk"
    wrapper.write_text(
        f"#!{sys.executable}\nimport os, signal, sys\n"
        "os.kill(os.getpid(), signal.SIGSTOP)\n"
        f"os.execv({str(walker)!r}, [{str(walker)!r}, *sys.argv[1:]])\n"
    )
    wrapper.chmod(0o755)
    env = dict(os.environ, IOSTUDY_FSWALK=str(wrapper))
    proc = subprocess.Popen(
        cli("scan", root, "--out", out, "--checkpoint", ck, "--resume"),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and "T" not in children(proc.pid).values():
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.01)
    (held,) = [pid for pid, state in children(proc.pid).items() if state == "T"]
    os.kill(proc.pid, signal.SIGINT)
    time.sleep(0.3)  # the scan forwards it (SIGTERM) to the held walker
    os.kill(held, signal.SIGCONT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == EXIT_INTERRUPTED, stderr
    assert stdout.strip().splitlines()[-1].startswith("fsstats scan: interrupted: ")
    assert f"checkpoint {ck} (go on with --resume)" in stdout
    assert not out.exists()
    after = json.loads(ck.read_text())
    assert after["generation"] == before["generation"] + 1
    assert sorted(pending_dirs(ck.with_name(f"ck.pending.{after['generation']}"))) == sorted(
        pending_before
    )

    status, _, err = run(capsys, "scan", root, "--out", out, "--checkpoint", ck, "--resume", "-q")
    assert status == 0, err
    resumed = json.loads(out.read_text())
    whole = scan_snapshot(capsys, root, tmp_path / "whole.json")
    assert resumed["sessions"] == 3
    for key in ("counts", "projects", "errors"):
        assert resumed[key] == whole[key], key
    for name in ("file_size", "allocated_size", "dir_entries", "name_length"):
        assert resumed["histograms"][name] == whole["histograms"][name]


# -- diff ----------------------------------------------------------------------------------------


@pytest.fixture
def two_snapshots(capsys, tmp_path):
    """January: big 10 files of 1 MiB modified 200 days ago, small 4 files of 1 KiB (100 days);
    March: big 90 more files of 1 KiB (10 days), small one more file of 1 MiB (1 day)."""
    root = tmp_path / "fs"
    for i in range(10):
        make_file(root / "big" / f"old{i}", 1 << 20, 200)
    for i in range(4):
        make_file(root / "small" / f"s{i}", 1024, 100)
    a = scan_snapshot(capsys, root, tmp_path / "january.json")
    for i in range(90):
        make_file(root / "big" / "new" / f"n{i}", 1024, 10)
    make_file(root / "small" / "fresh", 1 << 20, 1)
    b = scan_snapshot(capsys, root, tmp_path / "march.json")
    return tmp_path / "january.json", tmp_path / "march.json", a, b


def test_growth_table(two_snapshots):
    _, _, a, b = two_snapshots
    g = fsstats_diff.growth_table(a, b).set_index("project")
    assert list(g.index) == ["(all)", "big", "small", "."]  # by usage in March
    assert g.loc["(all)", ["files_a", "files_b"]].tolist() == [14, 105]
    assert g.loc["(all)", "usage_a"] == 10 * (1 << 20) + 4 * 1024
    assert g.loc["(all)", "usage_b"] == 11 * (1 << 20) + 94 * 1024
    assert g.loc["(all)", "files_change_pct"] == pytest.approx(100 * 91 / 14)
    assert g.loc["big", "files_change_pct"] == pytest.approx(900.0)
    assert g.loc["small", "usage_change_pct"] == pytest.approx(100 * (1 << 20) / 4096)
    # big made 90 of the 91 new files but only 90 KiB of the 1 MiB + 90 KiB of new data
    assert g.loc["big", "files_growth_share_pct"] == pytest.approx(100 * 90 / 91)
    growth = (1 << 20) + 90 * 1024
    assert g.loc["big", "usage_growth_share_pct"] == pytest.approx(100 * 90 * 1024 / growth)
    assert math.isnan(g.loc[".", "files_change_pct"])  # no files at the root, either time


def test_size_cdf_with_and_without_the_largest_project(two_snapshots):
    _, _, _, b = two_snapshots
    whole = fsstats_diff.size_cdf(b)
    assert whole[["lo", "hi", "files"]].values.tolist() == [
        [1024, 2048, 94],
        [1 << 20, 1 << 21, 11],
    ]
    assert whole["cdf"].tolist() == pytest.approx([94 / 105, 1.0])
    without = fsstats_diff.size_cdf(b, exclude_largest_project=True)
    assert without.attrs["excluded"] == "big"  # 100 files
    assert without[["lo", "files"]].values.tolist() == [[1024, 4], [1 << 20, 1]]
    assert without["cdf"].tolist() == pytest.approx([0.8, 1.0])


def test_unmodified_shares(two_snapshots):
    _, _, a, b = two_snapshots
    shares = fsstats_diff.unmodified_shares(b).set_index("days")
    total = 11 * (1 << 20) + 94 * 1024
    # >= 64 days: the 10 old MiB files (200 days) and the 4 small ones (100 days)
    assert shares.loc[64, "bytes_unmodified"] == 10 * (1 << 20) + 4096
    assert shares.loc[64, "bytes_share_pct"] == pytest.approx(100 * (10 * (1 << 20) + 4096) / total)
    assert shares.loc[128, "bytes_unmodified"] == 10 * (1 << 20)
    assert shares.loc[128, ["files_unmodified", "files_total"]].tolist() == [10, 105]
    assert fsstats_diff.unmodified_shares(a, days=(0,))["bytes_share_pct"].tolist() == [100.0]
    with pytest.raises(ValueError, match="100 days is not an edge"):
        fsstats_diff.unmodified_shares(b, days=(100,))


def test_diff_command(capsys, two_snapshots, tmp_path):
    first, second, _, _ = two_snapshots
    csv = tmp_path / "tables"
    status, lines, err = run(capsys, "diff", first, second, "--csv", csv)
    assert status == 0, err
    text = "\n".join(lines)
    assert "+650.0%" in text  # all files: 14 -> 105
    assert "+900.0%" in text  # big's files
    assert lines[-1] == (
        f"fsstats diff: {first} -> {second}: growth.csv, size_cdf.csv, unmodified.csv in {csv}"
    )
    growth = pd.read_csv(csv / "growth.csv")
    assert growth["project"].tolist() == ["(all)", "big", "small", "."]
    cdf = pd.read_csv(csv / "size_cdf.csv")
    assert sorted(cdf["series"].unique()) == ["all files", "without big"]
    unmodified = pd.read_csv(csv / "unmodified.csv")
    assert unmodified[["snapshot", "days"]].values.tolist() == [
        ["january", 64],
        ["january", 128],
        ["march", 64],
        ["march", 128],
    ]
    assert unmodified["bytes_share_pct"].tolist()[:2] == [100.0, pytest.approx(100 * 10240 / 10244)]

    (tmp_path / "bad.json").write_text('{"format": "something else"}')
    status, _, err = run(capsys, "diff", first, tmp_path / "bad.json")
    assert status == 2
    assert f"{tmp_path / 'bad.json'}: not an fsstats snapshot" in err


def test_diff_json(capsys, two_snapshots, tmp_path):
    """--json prints the diff's three tables as one JSON object, the CSVs' rows (NaN as null),
    and nothing else on stdout; the numbers are those of the text tables."""
    first, second, _, _ = two_snapshots
    csv = tmp_path / "tables"
    status, lines, err = run(capsys, "diff", first, second, "--json", "--csv", csv)
    assert status == 0, err
    tables = json.loads("\n".join(lines))
    assert list(tables) == ["growth", "size_cdf", "unmodified"]
    assert err.strip().splitlines()[-1] == (
        f"fsstats diff: {first} -> {second}: growth.csv, size_cdf.csv, unmodified.csv in {csv}"
    )
    for name, rows in tables.items():
        frame = pd.read_csv(csv / f"{name}.csv")
        assert all(list(row) == list(frame.columns) for row in rows), name
        pd.testing.assert_frame_equal(pd.DataFrame(rows), frame, check_dtype=False)

    # by hand, from the two trees (see two_snapshots)
    growth = {row["project"]: row for row in tables["growth"]}
    assert list(growth) == ["(all)", "big", "small", "."]
    assert (growth["(all)"]["files_a"], growth["(all)"]["files_b"]) == (14, 105)
    assert growth["(all)"]["usage_a"] == 10 * (1 << 20) + 4 * 1024
    assert growth["(all)"]["usage_b"] == 11 * (1 << 20) + 94 * 1024
    assert growth["big"]["files_change_pct"] == pytest.approx(900.0)
    assert growth["big"]["files_growth_share_pct"] == pytest.approx(100 * 90 / 91)
    assert growth["."]["files_change_pct"] is None  # NaN: no files at the root either time
    cdf = [(r["series"], r["lo"], r["hi"], r["files"]) for r in tables["size_cdf"]]
    assert cdf == [
        ("all files", 1024, 2048, 94),
        ("all files", 1 << 20, 1 << 21, 11),
        ("without big", 1024, 2048, 4),
        ("without big", 1 << 20, 1 << 21, 1),
    ]
    assert [r["cdf"] for r in tables["size_cdf"]] == pytest.approx([94 / 105, 1.0, 0.8, 1.0])
    unmodified = [(r["snapshot"], r["days"], r["files_unmodified"]) for r in tables["unmodified"]]
    assert unmodified == [
        ("january", 64, 14),
        ("january", 128, 10),
        ("march", 64, 14),
        ("march", 128, 10),
    ]

    # without --csv: the same JSON, the last line on stderr
    status, lines, err = run(capsys, "diff", first, second, "--json", "--days", "64", "128")
    assert status == 0, err
    assert json.loads("\n".join(lines)) == tables
    done = "growth, size_cdf and unmodified printed as JSON"
    assert err.strip() == f"fsstats diff: {first} -> {second}: {done}"
    # the text tables show the same numbers
    status, lines, _ = run(capsys, "diff", first, second)
    text = "\n".join(lines)
    for row in tables["growth"]:
        if row["files_change_pct"] is not None:
            assert f"{row['files_change_pct']:+.1f}%" in text
        assert f"{row['files_b']:,}" in text
    for row in tables["size_cdf"]:
        assert f"{row['cdf']:.4f}" in text
    assert lines[-1].endswith("tables printed above (--csv DIR writes them)")


# -- the store and the report section ----------------------------------------------------------


def test_import_into_the_store_and_the_report_section(capsys, two_snapshots, known_tree, tmp_path):
    first, second, a, b = two_snapshots
    root, _ = known_tree
    odd = scan_snapshot(capsys, root, tmp_path / "odd names.json")
    st = tmp_path / "store"
    status, lines, err = run(
        capsys, "import", first, second, tmp_path / "odd names.json", "--store", st
    )
    assert status == 0, err
    assert lines[-1].startswith("fsstats import: 3 snapshots, ")
    assert lines[-1].endswith(f"rows into {st / 'fsstats'} (3 parts)")
    assert filestate.parts(st, "fsstats") == ["january", "march", "odd_names"]
    con = store.connect(st)
    (rows,) = con.execute("SELECT count(*) FROM fsstats").fetchone()
    files = con.execute(
        "SELECT snapshot, value FROM fsstats WHERE kind = 'count' AND name = 'files' "
        "AND project IS NULL ORDER BY snapshot"
    ).fetchall()
    assert files == [("january", 14), ("march", 105), ("odd names", odd["counts"]["files"])]
    sql = "SELECT DISTINCT project FROM fsstats WHERE snapshot = 'odd names'"
    projects = {r[0] for r in con.execute(sql).fetchall()}
    assert "caf\\xe9-\\xff" in projects  # not UTF-8: escaped, not lost
    size_bins = con.execute(
        "SELECT lo, hi, count, bytes FROM fsstats WHERE snapshot = 'march' AND kind = "
        "'histogram' AND name = 'file_size' AND project IS NULL ORDER BY lo"
    ).fetchall()
    assert size_bins == [(1024, 2048, 94, 94 * 1024), (1 << 20, 1 << 21, 11, 11 << 20)]

    # again: the parts are replaced, not added to
    status, lines, _ = run(capsys, "import", second, "--store", st)
    march = filestate.part(st, "fsstats", "march")
    assert (status, lines[-1].endswith(f"rows into {march}")) == (
        0,
        True,
    )
    assert store.connect(st).execute("SELECT count(*) FROM fsstats").fetchone() == (rows,)
    # a bad snapshot among good ones: nothing is written
    (tmp_path / "cut.json").write_text(second.read_text()[:100])
    status, _, err = run(capsys, "import", first, tmp_path / "cut.json", "--store", st)
    assert status == 2 and f"{tmp_path / 'cut.json'}: not JSON" in err

    # the pure functions give the same from the store's rows as from the JSON
    table = store.read_table(st, "fsstats")
    march = table[table["snapshot"] == "march"]
    january = table[table["snapshot"] == "january"]
    pd.testing.assert_frame_equal(
        fsstats_diff.growth_table(january, march), fsstats_diff.growth_table(a, b)
    )
    pd.testing.assert_frame_equal(
        fsstats_diff.size_cdf(march, True), fsstats_diff.size_cdf(b, True)
    )

    items = []

    def add(section, kind, ident, caption, df, fig=None, table=False, hide=()):
        items.append((section, kind, ident, caption, df, fig, table))

    filesystems.add_section(add, {"fsstats": table})
    ids = [i[2] for i in items]
    slug = filesystems._slug(a["root"])
    odd_slug = filesystems._slug(odd["root"])
    assert set(ids) == {
        f"fsstats-growth-{slug}",
        f"fsstats-size-cdf-{slug}",
        f"fsstats-unmodified-{slug}",
        f"fsstats-size-cdf-{odd_slug}",
        f"fsstats-unmodified-{odd_slug}",
    }
    by_id = {i[2]: i for i in items}
    growth = by_id[f"fsstats-growth-{slug}"]
    assert growth[0] == "fsstats" and "Table III" in growth[3] and growth[6]
    assert "from snapshot january" in growth[3] and "to march" in growth[3]
    pd.testing.assert_frame_equal(growth[4], fsstats_diff.growth_table(a, b))
    cdf = by_id[f"fsstats-size-cdf-{slug}"]
    assert cdf[5] is not None and "Fig. 8" in cdf[3]
    assert sorted(cdf[4]["series"].unique()) == ["all files", "without big"]
    assert len(cdf[5].axes[0].get_lines()) == 2
    shares = by_id[f"fsstats-unmodified-{slug}"][4]
    assert shares["days"].tolist() == [64, 128]

    items.clear()
    filesystems.add_section(add, {"fsstats": table.iloc[0:0]})
    assert items == []
