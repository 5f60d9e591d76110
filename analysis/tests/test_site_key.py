"""The site's private key (STORE/site-key.pem) is guarded as ssh guards its keys: a regular file,
the user's own, readable by no one else, else refused naming the fix; made whole or not at all,
even when the process making it is killed (issue 41)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from iostudy.store import siteid

TRUST_OWN = [str(Path(sys.executable).with_name("iostudy")), "trust", "own", "--site", "site-a"]


def trust_own(store: Path) -> subprocess.CompletedProcess:
    return subprocess.run([*TRUST_OWN, "--store", str(store)], capture_output=True, text=True)


def test_a_linked_key_is_refused_and_not_used(tmp_path):
    """A link to a key someone else holds would sign this site's exports with it."""
    elsewhere = tmp_path / "theirs"
    assert trust_own(elsewhere).returncode == 0
    store = tmp_path / "store"
    store.mkdir()
    (store / siteid.KEY_FILE).symlink_to(elsewhere / siteid.KEY_FILE)
    result = trust_own(store)
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert f"{store / siteid.KEY_FILE}: a symbolic link, not the site's key" in result.stderr


def test_a_dangling_link_is_refused_without_a_traceback(tmp_path):
    store = tmp_path / "store"
    store.mkdir()
    (store / siteid.KEY_FILE).symlink_to(tmp_path / "nowhere.pem")
    result = trust_own(store)
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    assert "a symbolic link, not the site's key" in result.stderr
    assert not (tmp_path / "nowhere.pem").exists(), "nothing is written through the link"


def test_a_key_others_may_read_is_refused_naming_the_fix(tmp_path):
    store = tmp_path / "store"
    assert trust_own(store).returncode == 0
    key = store / siteid.KEY_FILE
    assert os.stat(key).st_mode & 0o777 == 0o600
    key.chmod(0o644)
    result = trust_own(store)
    assert result.returncode == 2
    assert f"others may read the site's key: chmod 600 {key}" in result.stderr
    key.chmod(0o600)
    assert trust_own(store).returncode == 0


def killed_at(store: Path, syscall: str, nth: int) -> int:
    """trust own SIGKILLed (by strace) at its nth call of syscall; its exit status."""
    inject = f"inject={syscall}:signal=SIGKILL:when={nth}"
    cmd = ["strace", "-f", "-qq", "-o", os.devnull, "-e", f"trace={syscall}", "-e", inject]
    return subprocess.run([*cmd, *TRUST_OWN, "--store", str(store)], capture_output=True).returncode


@pytest.mark.slow
@pytest.mark.parametrize("syscall", ["write", "fsync", "link", "unlink"])
def test_kills_at_every_step_of_making_the_key_never_break_the_site(tmp_path, syscall):
    """trust own killed at its 1st, 2nd, ... call of syscall (each in a fresh store, until a
    run gets through): after each kill, the next trust own works, and the site name and key it
    shows are those every later one shows. A kill used to leave an empty site.json or
    site-key.pem that failed every later export."""
    for nth in range(1, 40):
        store = tmp_path / f"{syscall}{nth}"
        status = killed_at(store, syscall, nth)
        after = trust_own(store)
        assert after.returncode == 0, f"killed at {syscall} #{nth}: {after.stderr}"
        assert trust_own(store).stdout == after.stdout
        assert after.stdout.endswith(" site-a\n")
        if status == 0:  # the run made its key before its nth call: every step was tried
            return
    raise AssertionError(f"trust own still killed at {syscall} #{nth}")


def test_store_files_get_the_store_umask_whatever_the_callers(tmp_path):
    """Under umask 000, the site name, the trusted keys and a bundle are made with the store's
    umask (027: nothing for others), not 0666."""
    from .sites import make_site

    def loose():
        os.umask(0)

    store, bundle = make_site(tmp_path / "a", "site-a")
    key_line = tmp_path / "a.pub"
    iostudy = str(Path(sys.executable).with_name("iostudy"))
    out = tmp_path / "loose.tar"
    for args in (
        ["export", "--store", store, "--out", out],
        ["trust", "own", "--store", store, "--out", key_line],
        ["trust", "add", "site-a", key_line, "--store", tmp_path / "b"],
    ):
        result = subprocess.run([iostudy, *map(str, args)], capture_output=True, preexec_fn=loose)
        assert result.returncode == 0, result.stderr
    for path in (store / siteid.SITE_FILE, out, tmp_path / "b" / siteid.TRUST_DIR / "site-a.pub"):
        assert path.stat().st_mode & 0o007 == 0, f"{path}: {oct(path.stat().st_mode)}"
