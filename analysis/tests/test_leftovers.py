"""What a killed command leaves, the next one of its kind clears; a full disk is one line naming
the folder, never a traceback.

The kills are real: strace sends SIGKILL at the command's first rename (the step that would
publish what it wrote), so the command dies with its temporary folder or file in place. The full
disk is real too: a tmpfs of a few pages mounted for the test (root only; the test skips,
naming why, where mount is refused)."""

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from . import reportdata
from .sites import make_site, trust
from .test_bundle_hostile import members, write_bundle
from .testdata import DARSHAN_LOGS, RELEASE_350

IOSTUDY = Path(sys.executable).with_name("iostudy")
KILL_AT_FIRST_RENAME = ["-e", "inject=rename,renameat,renameat2:signal=SIGKILL:when=1"]


def iostudy(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [str(IOSTUDY), *map(str, args)], capture_output=True, text=True, timeout=600, env=env
    )


def killed_at_first_rename(*args, env=None) -> subprocess.CompletedProcess:
    """The command run under strace, which SIGKILLs it at its first rename."""
    strace = ["strace", "-f", "-qq", "-o", "/dev/null", *KILL_AT_FIRST_RENAME]
    cmd = [*strace, str(IOSTUDY), *map(str, args)]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=600, env=env)


needs_strace = pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace")


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    return make_site(tmp_path_factory.mktemp("leftover-site"), "site-a")


@needs_strace
def test_a_killed_export_leaves_its_partial_bundle_to_the_next(site, tmp_path):
    store_dir, _ = site
    out = tmp_path / "out" / "b.tar"
    killed = killed_at_first_rename("export", "--store", store_dir, "--out", out)
    assert killed.returncode != 0 and not out.exists()
    assert len(list(out.parent.glob(".iostudy-export-*"))) == 1, killed.stderr
    assert iostudy("export", "--store", store_dir, "--out", out).returncode == 0
    assert sorted(p.name for p in out.parent.iterdir()) == ["b.tar"]


@needs_strace
def test_a_killed_import_leaves_its_folder_to_the_next(site, tmp_path):
    store_dir, bundle = site
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "TMPDIR": str(tmp)}
    target = tmp_path / "stores" / "b"
    trust(target, store_dir, "site-a")
    killed = killed_at_first_rename("import", bundle, "--store", target, env=env)
    assert killed.returncode != 0
    assert [p.name.startswith("iostudy-import-") for p in tmp.iterdir()] == [True]
    assert iostudy("import", bundle, "--store", target, env=env).returncode == 0
    assert list(tmp.iterdir()) == []


@needs_strace
def test_a_killed_report_build_leaves_its_folder_to_the_next(tmp_path):
    _, store_dir = reportdata.make_study(tmp_path)
    reports = tmp_path / "reports"
    build = ("report", "build", "--store", store_dir, "--study", "quick", "--reports", reports)
    killed = killed_at_first_rename(*build)
    assert killed.returncode != 0
    assert len(list((reports / "quick").glob(".build-*"))) == 1, killed.stderr
    done = iostudy(*build)
    assert done.returncode == 0, done.stderr
    assert not list((reports / "quick").glob(".build-*"))


@contextlib.contextmanager
def small_file_system(folder: Path, size: str):
    """A tmpfs of ``size`` mounted on folder for the block."""
    folder.mkdir(parents=True, exist_ok=True)
    mount = subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=1777", "tmpfs", str(folder)],
        capture_output=True,
        text=True,
    )
    if mount.returncode != 0:
        pytest.skip(f"a full file system needs mount (root): {mount.stderr.strip()}")
    try:
        yield folder
    finally:
        subprocess.run(["umount", str(folder)], check=True)


def test_a_full_temporary_folder_is_one_line_naming_it(site, tmp_path):
    """A bundle larger than the free space of the temporary folder, signed and whole: the
    import says where the space ran out, and changes nothing."""
    store_dir, bundle = site
    target = tmp_path / "stores" / "b"
    trust(target, store_dir, "site-a")
    with small_file_system(tmp_path / "tmp", "16k") as tmp:
        result = iostudy("import", bundle, "--store", target, env={**os.environ, "TMPDIR": tmp})
        assert list(tmp.iterdir()) == []
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stderr.startswith(f"iostudy: error: no space left in {tmp}/iostudy-import-")
    assert not (target / "imports").exists()


def test_an_unsigned_bundle_is_refused_before_any_byte_is_extracted(site, tmp_path):
    """An unsigned bundle of 4 MiB, imported with a temporary folder of 64 KiB: refused for
    its signature (it was extracted first: a traceback of the full disk)."""
    _, bundle = site
    content = {n: d for n, d in members(bundle).items() if n != "SIGNATURE"}
    content["manifests/big.json"] = b"0" * (4 << 20)
    unsigned = write_bundle(tmp_path / "unsigned.tar", content)
    with small_file_system(tmp_path / "tmp", "64k") as tmp:
        env = {**os.environ, "TMPDIR": tmp}
        args = ("import", unsigned, "--store", tmp_path / "s", "--trust-on-first-use")
        result = iostudy(*args, env=env)
        assert list(tmp.iterdir()) == []
    assert result.returncode == 2, result.stderr
    assert "no SIGNATURE: an unsigned bundle" in result.stderr, result.stderr


def test_a_full_store_during_ingest_is_one_line_naming_it(tmp_path):
    tree = tmp_path / "logs"
    tree.mkdir()
    shutil.copy(DARSHAN_LOGS / RELEASE_350, tree / "a.darshan")
    with small_file_system(tmp_path / "store", "32k") as store_dir:
        result = iostudy("ingest", tree, "--store", store_dir)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert f"iostudy: error: no space left in {store_dir}" in result.stderr
