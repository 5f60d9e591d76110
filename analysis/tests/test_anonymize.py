"""Pseudonyms for published reports (iostudy.core.anonymize)."""

import os
import re

import numpy as np
import pandas as pd
import pytest

from iostudy.core.anonymize import KEY_FILE, AnonymizeError, Anonymizer, load_key

KEY = bytes(range(32))


@pytest.fixture
def anon():
    return Anonymizer(KEY)


def test_same_name_same_pseudonym_other_name_other(anon):
    assert anon.user("alice") == anon.user("alice") == Anonymizer(KEY).user("alice")
    assert anon.user("alice") != anon.user("bob")
    assert re.fullmatch(r"user-[0-9a-f]{10}", anon.user("alice"))
    assert re.fullmatch(r"project-[0-9a-f]{10}", anon.project("climate"))
    # A user and a project of the same name are told apart.
    assert anon.user("x")[5:] != anon.project("x")[8:]


def test_another_key_other_pseudonyms(anon):
    other = Anonymizer(bytes(32))
    assert other.user("alice") != anon.user("alice")
    assert other.key_id() != anon.key_id() and len(anon.key_id()) == 16


def test_special_names_stay(anon):
    for name in ("(unknown)", "(no account)", "(no accounting)", "all"):
        assert anon.project(name) == name
    assert anon.path("<STDOUT>") == "<STDOUT>"


def test_paths_keep_their_shape(anon):
    a = anon.path("/home/alice/run1/out.nc")
    b = anon.path("/home/alice/run2/in.h5")
    assert a.startswith("/") and a.endswith(".nc") and b.endswith(".h5")
    assert a.count("/") == 4
    # Files of one folder share its pseudonym; no component of the name is left.
    assert a.split("/")[:3] == b.split("/")[:3]
    assert "alice" not in a and "home" not in a and "out" not in a
    # An extension that is not a format is part of the name.
    assert "smith" not in anon.path("/home/alice.smith")
    # Relative paths (a log tree's log paths) too.
    assert not anon.path("2026/3/2/alice_app_id123.darshan").count("alice")
    assert anon.path("2026/3/2/alice_app_id123.darshan").endswith(".darshan")


def test_command_lines(anon):
    line = "/home/alice/bin/sim -n 64 --steps=100 --out=/scratch/alice/o.nc alice_case 1e-3"
    out = anon.command(line)
    words = out.split()
    assert words[0] == anon.path("/home/alice/bin/sim")
    assert words[1:4] == ["-n", "64", "--steps=100"]
    assert words[4] == "--out=" + anon.path("/scratch/alice/o.nc")
    assert re.fullmatch(r"arg-[0-9a-f]{8}", words[5]) and words[6] == "1e-3"
    assert "alice" not in out


def test_free_text_paths(anon):
    reason = "cannot read /home/alice/logs/x.darshan: truncated"
    out = anon.text(reason)
    assert out == f"cannot read {anon.path('/home/alice/logs/x.darshan')}: truncated"


def test_twice_is_once(anon):
    """A table can go through the anonymizer twice (a section's figures, then the report's CSV)
    and keeps the same pseudonyms."""
    for kind, name in (
        ("user", "alice"),
        ("project", "climate"),
        ("path", "/a/b/c.nc"),
        ("command", "/bin/app --x=/a/b -v alice"),
        ("text", "at /a/b: x"),
    ):
        once = anon.value(kind, name)
        assert anon.value(kind, once) == once


def test_frame_by_column_names_numbers_untouched(anon):
    df = pd.DataFrame(
        {
            "user": ["alice", None, "alice"],
            "uid": [1000, 1001, 1000],
            "account": ["climate", None, "physics"],
            "exe": ["/home/alice/a -n 4", "/bin/b", None],
            "log_path": ["x/alice.darshan", "y.darshan", "x/alice.darshan"],
            "nprocs": [4, 8, 16],
            "bytes_read": [1.5, np.nan, 3.0],
            "system": ["local", "local", "local"],
        }
    )
    out = anon.frame(df)
    assert out["user"][0] == out["user"][2] == anon.user("alice") and pd.isna(out["user"][1])
    assert out["uid"][0] == out["uid"][2] == anon.uid(1000) != out["uid"][1]
    assert out["account"][0] == anon.project("climate") and pd.isna(out["account"][1])
    assert out["account"][2] == anon.project("physics")
    assert out["log_path"][0] == out["log_path"][2] and "alice" not in out["log_path"][0]
    assert pd.isna(out["exe"][2])
    pd.testing.assert_frame_equal(
        out[["nprocs", "bytes_read", "system"]], df[["nprocs", "bytes_read", "system"]]
    )
    # The input is not changed; a frame without such columns is returned as is.
    assert df["user"][0] == "alice"
    plain = df[["nprocs"]]
    assert anon.frame(plain) is plain and anon.frame(None) is None


def test_key_is_made_once_private_and_kept(tmp_path):
    key = load_key(tmp_path)
    path = tmp_path / KEY_FILE
    assert len(key) == 32 and os.stat(path).st_mode & 0o777 == 0o600
    assert load_key(tmp_path) == key
    # Stable across builds: pseudonyms from the same store are the same.
    assert Anonymizer.for_store(tmp_path).user("a") == Anonymizer(key).user("a")


def test_bad_key_is_an_error_naming_the_file(tmp_path):
    (tmp_path / KEY_FILE).write_text("not hex\n")
    with pytest.raises(AnonymizeError, match=KEY_FILE):
        load_key(tmp_path)
    (tmp_path / KEY_FILE).write_text("00ff\n")
    with pytest.raises(AnonymizeError, match="too short"):
        load_key(tmp_path)
    with pytest.raises(AnonymizeError, match="cannot make the key"):
        load_key(tmp_path / "missing" / "dir")
