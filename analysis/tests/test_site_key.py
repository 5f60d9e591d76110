"""The site's private key (STORE/site-key.pem) is guarded as ssh guards its keys: a regular file,
the user's own, readable by no one else, else refused naming the fix; made whole or not at all,
even when the process making it is killed (issue 41)."""

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from iostudy.core.processes import alive
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


@pytest.mark.slow
def test_a_kill_while_the_key_is_made_leaves_no_broken_key(tmp_path):
    """trust own held by strace just before it links its written key to its name, and
    SIGKILLed there: no key file (never an empty one), and the next trust own clears the
    partial file and makes a key that signs."""
    store = tmp_path / "store"
    cmd = [
        "strace",
        "-f",
        "-qq",
        "-o",
        os.devnull,
        "-e",
        "trace=link,linkat",
        "-e",
        "inject=link,linkat:delay_enter=30000000",
        *TRUST_OWN,
        "--store",
        str(store),
    ]
    proc = subprocess.Popen(
        cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True
    )
    deadline = time.monotonic() + 60
    while not list(store.glob(f"{siteid.PARTIAL_KEY}*")) and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.5)  # the partial key is written and synced; the link is held
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait()
    (partial,) = store.glob(f"{siteid.PARTIAL_KEY}*")  # killed between writing and linking
    assert not os.path.lexists(store / siteid.KEY_FILE)
    killed = int(partial.name[len(siteid.PARTIAL_KEY) :])
    while alive(killed) and time.monotonic() < deadline:  # until init has reaped it
        time.sleep(0.05)
    result = trust_own(store)
    assert result.returncode == 0, result.stderr
    assert not list(store.glob(f"{siteid.PARTIAL_KEY}*")), "the partial file is cleared"
    assert siteid.own_key(store, create=False) is not None
