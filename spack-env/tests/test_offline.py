"""`iostudy offline` where CI is (no Spack): an archive that is not exactly what pack wrote is
refused naming the file, before anything is installed; the lock is rewritten only when a spec
changes; the run manifest and the report name the commit the view's iostudy programs came from.

The whole round trip with a real Spack is test_offline_roundtrip.py.
"""

import hashlib
import io
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest
import yaml
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from iostudy.benchmarks import (
    offline_archive,
    offline_pack,
    offline_signature,
    offline_unpack,
    spackenv,
)
from iostudy.cli.output import StderrProgress
from iostudy.report import runtables
from iostudy.store import siteid

REPO_ROOT = Path(__file__).resolve().parents[2]
IOSTUDY = [sys.executable, "-m", "iostudy.cli.cli"]
TOP = "iostudy-offline"


# The packing site's key: archives are signed with it, and unpacked trusting it (--key).
SITE = "site-a"
KEY = Ed25519PrivateKey.generate()


def iostudy(*args, cwd=None):
    return subprocess.run(IOSTUDY + [str(a) for a in args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def key_file(tmp_path) -> Path:
    """SITE's public key line, as `iostudy trust own` prints it there."""
    path = tmp_path / f"{SITE}.pub"
    path.write_text(siteid.public_line(siteid.raw_public(KEY.public_key()), SITE) + "\n")
    return path


def unpack(archive: Path, dest, key: Path, cwd=None):
    return iostudy("offline", "unpack", archive, dest, "--key", key, cwd=cwd)


def git_head() -> str:
    return subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "HEAD"], capture_output=True, text=True
    ).stdout.strip()


@pytest.fixture
def packed_tree(tmp_path):
    """A small tree in the archive's layout with its manifest (no Spack: stand-in files)."""
    top = tmp_path / "tree" / TOP
    for name in ("spack/bin", "spack-packages/repos", "wheels", "mirror/_source-cache"):
        (top / name).mkdir(parents=True)
    (top / "spack/bin/spack").write_text("#!/bin/sh\n")
    (top / "spack/bin/sbang").symlink_to("spack")
    (top / "spack-packages/repos/repo.yaml").write_text("repo:\n")
    (top / "wheels/clingo-5.8.3-cp311-none-any.whl").write_bytes(b"wheel")
    (top / "mirror/_source-cache/a.tar.gz").write_bytes(b"source")
    (top / "iostudy.bundle").write_bytes(b"bundle")
    facts = {"system": "local", "python": "3.11.7", "platform": "linux-x86_64"}
    offline_archive.write_manifest(top, facts)
    return top


def archive_of(top: Path, out: Path) -> Path:
    """top as pack writes it: the archive and its signature by SITE's KEY."""
    offline_archive.write_archive(top, out)
    offline_signature.sign(out, KEY, SITE)
    return out


def test_manifest_lists_every_file_with_its_sha256(packed_tree):
    manifest = json.loads((packed_tree / "MANIFEST.json").read_text())
    found = subprocess.run(
        ["find", ".", "-type", "f", "-o", "-type", "l"],
        cwd=packed_tree,
        capture_output=True,
        text=True,
    ).stdout.split()
    assert sorted(manifest["files"]) == sorted(p[2:] for p in found if p != "./MANIFEST.json")
    sha = subprocess.run(
        ["sha256sum", "mirror/_source-cache/a.tar.gz"],
        cwd=packed_tree,
        capture_output=True,
        text=True,
    ).stdout.split()[0]
    assert manifest["files"]["mirror/_source-cache/a.tar.gz"] == {"sha256": sha, "size": 6}
    assert manifest["files"]["spack/bin/sbang"] == {"link": "spack"}


@pytest.mark.parametrize(
    ("damage", "expected"),
    [
        (lambda t: (t / "mirror/_source-cache/a.tar.gz").write_bytes(b"sourcX"), "says sha256:"),
        (
            lambda t: (t / "mirror/_source-cache/a.tar.gz").write_bytes(b"other"),
            "MANIFEST.json says 6",
        ),
        (lambda t: (t / "wheels/extra.whl").write_bytes(b"x"), "is not listed in MANIFEST.json"),
        (lambda t: (t / "iostudy.bundle").unlink(), "listed in MANIFEST.json but missing"),
        (lambda t: (t / "MANIFEST.json").write_text("{"), "not an offline archive's manifest"),
    ],
)
def test_a_changed_archive_is_refused_naming_the_file_and_nothing_is_made(
    packed_tree, tmp_path, key_file, damage, expected
):
    """Changed before it was signed (a packer's own mistake): its manifest refuses it."""
    damage(packed_tree)
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    dest = tmp_path / "site"
    result = unpack(archive, dest, key_file)
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr
    assert "Traceback" not in result.stderr
    assert not dest.exists(), "a refused archive leaves no folder"


def test_a_refused_archive_empties_the_folder_it_was_given(packed_tree, tmp_path, key_file):
    """An empty folder named by the user stays, empty, so the same command can run again."""
    (packed_tree / "iostudy.bundle").write_bytes(b"change")
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    dest = tmp_path / "site"
    dest.mkdir()
    result = unpack(archive, dest, key_file)
    assert result.returncode == 2 and "says sha256:" in result.stderr, result.stderr
    assert dest.is_dir() and not any(dest.iterdir())


def _clingo_wheel(wheels: Path, version: str) -> None:
    """A real, minimal wheel of a package named clingo (pip installs it with no index)."""
    info = f"clingo-{version}.dist-info"
    files = {
        "clingo/__init__.py": "",
        f"{info}/METADATA": f"Metadata-Version: 2.1\nName: clingo\nVersion: {version}\n",
        f"{info}/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\n"
        "Tag: py3-none-any\n",
    }
    record = "".join(f"{name},,\n" for name in [*files, f"{info}/RECORD"])
    with zipfile.ZipFile(wheels / f"clingo-{version}-py3-none-any.whl", "w") as whl:
        for name, text in {**files, f"{info}/RECORD": record}.items():
            whl.writestr(name, text)


def _git_bundle(path: Path, work: Path) -> None:
    """A git bundle of a one-commit repository on branch main."""
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t", "-C", str(work)]
    subprocess.run(["git", "init", "-q", "-b", "main", str(work)], check=True)
    (work / "README.md").write_text("iostudy\n")
    subprocess.run([*git, "add", "README.md"], check=True)
    subprocess.run([*git, "commit", "-q", "-m", "one"], check=True)
    subprocess.run([*git, "bundle", "create", "-q", str(path), "main"], check=True)


def test_unpack_into_a_relative_folder_as_the_readme_says(packed_tree, tmp_path, key_file):
    """`iostudy offline unpack iostudy-offline.tar.gz site`, the README's line, run from the
    archive's folder, with a real clingo wheel (a stand-in package) and a real git bundle: a
    relative folder had no file URI for Spack's mirror."""
    for wheel in (packed_tree / "wheels").iterdir():
        wheel.unlink()
    _clingo_wheel(packed_tree / "wheels", "5.8.3")
    _git_bundle(packed_tree / "iostudy.bundle", tmp_path / "repo")
    facts = {
        "system": "local",
        "python": platform.python_version(),
        "platform": f"{sys.platform}-{platform.machine()}",
        "pins": {"clingo": "5.8.3"},
        "iostudy_branch": "main",
    }
    offline_archive.write_manifest(packed_tree, facts)
    archive_of(packed_tree, tmp_path / "iostudy-offline.tar.gz")
    result = unpack("iostudy-offline.tar.gz", "site", key_file, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    fingerprint = siteid.fingerprint(siteid.raw_public(KEY.public_key()))
    assert f"signed by site {SITE}, key {fingerprint}: verified" in result.stdout
    site = tmp_path / "site"
    mirrors = (site / TOP / "spack/etc/spack/site/mirrors.yaml").read_text()
    assert (site / TOP / "mirror").as_uri() in mirrors
    assert f"SPACK_ROOT={site / TOP / 'spack'}" in (site / "env.sh").read_text()
    assert (site / "iostudy/README.md").read_text() == "iostudy\n"


@pytest.mark.parametrize(
    ("name", "kind", "link", "expected"),
    [
        (f"{TOP}/../escaped", tarfile.REGTYPE, "", "is outside iostudy-offline/"),
        ("/etc/escaped", tarfile.REGTYPE, "", "is outside iostudy-offline/"),
        (
            f"{TOP}/spack/up",
            tarfile.SYMTYPE,
            "../../../etc/passwd",
            "links out of iostudy-offline/",
        ),
        (f"{TOP}/spack/abs", tarfile.SYMTYPE, "/etc/passwd", "links out of iostudy-offline/"),
        (f"{TOP}/dev", tarfile.CHRTYPE, "", "is neither a file, a folder nor a link"),
    ],
)
def test_a_hostile_entry_is_refused_before_anything_is_written(
    tmp_path, key_file, name, kind, link, expected
):
    member = tarfile.TarInfo(name)
    member.type, member.linkname = kind, link
    archive = _tar_of(tmp_path / "a.tar.gz", [member])
    dest = tmp_path / "site"
    result = unpack(archive, dest, key_file)
    assert result.returncode == 2
    assert f"entry '{name}' {expected}" in result.stderr
    assert not (dest / TOP).exists() and not (tmp_path / "escaped").exists()


def _link(name: str, target: str) -> tarfile.TarInfo:
    member = tarfile.TarInfo(f"{TOP}/{name}")
    member.type, member.linkname = tarfile.SYMTYPE, target
    return member


def _hard(name: str, target: str) -> tarfile.TarInfo:
    member = tarfile.TarInfo(f"{TOP}/{name}")
    member.type, member.linkname = tarfile.LNKTYPE, target
    return member


def _tar_of(path: Path, members: list[tarfile.TarInfo]) -> Path:
    """An archive of TOP/ with members (files get a few bytes), in order, with a manifest that
    lists them as they are, signed by SITE: a packer that went wrong, or was turned, so that
    the entries themselves are what unpack must refuse."""
    listed = {}
    with tarfile.open(path, "w:gz") as tar:
        top = tarfile.TarInfo(TOP)
        top.type = tarfile.DIRTYPE
        tar.addfile(top)
        for member in members:
            data = b"x" if member.isfile() else b""
            member.size = len(data)
            tar.addfile(member, io.BytesIO(data))
            name = os.path.normpath(member.name)[len(TOP) + 1 :]
            sha = hashlib.sha256(data).hexdigest()
            listed[name] = (
                {"link": member.linkname} if member.issym() else {"sha256": sha, "size": 1}
            )
        manifest = json.dumps({"format": offline_archive.ARCHIVE_FORMAT, "files": listed}).encode()
        info = tarfile.TarInfo(f"{TOP}/MANIFEST.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    offline_signature.sign(path, KEY, SITE)
    return path


def _file(name: str) -> tarfile.TarInfo:
    return tarfile.TarInfo(f"{TOP}/{name}")


@pytest.mark.parametrize(
    ("members", "entry", "expected"),
    [
        # issue 41's chain: each link stays inside alone; together, spack leads to ../X, out of
        # DIR, where unpack would then write Spack's site scope
        (
            [_link("spack", "d1/d2/s/../../../X"), _link("d1/d2/s", "../..")],
            "spack",
            "links out of iostudy-offline/ through the archive's other links",
        ),
        # through two links, each inside alone: b -> c -> TOP itself, so x/../.. leaves
        (
            [_link("a", "b/x/../../X"), _link("b", "c"), _link("c", ".")],
            "a",
            "links out of iostudy-offline/ through the archive's other links",
        ),
        # a file written through a link (here to a folder inside: refused all the same)
        (
            [_link("w", "wheels"), _file("w/evil.whl")],
            "w/evil.whl",
            "is written through the link iostudy-offline/w",
        ),
        # a loop
        (
            [_link("l1", "l2"), _link("l2", "l1")],
            "l1",
            "links out of iostudy-offline/ through the archive's other links",
        ),
        # a hard link to a file outside, named through a link to TOP itself
        (
            [_link("s", "."), _hard("h", f"{TOP}/s/../X")],
            "h",
            "links out of iostudy-offline/ through the archive's other links",
        ),
    ],
)
def test_links_are_followed_through_the_whole_tree_before_anything_is_written(
    tmp_path, key_file, members, entry, expected
):
    archive = _tar_of(tmp_path / "a.tar.gz", members)
    dest = tmp_path / "site"
    result = unpack(archive, dest, key_file)
    assert result.returncode == 2, result.stderr
    assert f"entry '{TOP}/{entry}' {expected}" in result.stderr, result.stderr
    assert not dest.exists() and not (tmp_path / "X").exists()


def test_links_that_stay_inside_through_other_links_are_kept(tmp_path, key_file):
    """Spack's own trees hold links to links (sbang -> spack): a chain that stays inside is
    no refusal (the archive is unpacked; its manifest names no Python, the next check)."""
    members = [
        _file("spack/bin/spack"),
        _link("spack/bin/sbang", "spack"),
        _link("spack/bin/alias", "sbang"),
        _link("up", "spack/bin/../bin/alias"),
    ]
    archive = _tar_of(tmp_path / "a.tar.gz", members)
    result = unpack(archive, tmp_path / "site", key_file)
    assert result.returncode == 1 and "the archive's wheels are for Python" in result.stderr, (
        result.stderr
    )


def test_a_file_that_is_no_archive_is_refused(tmp_path, key_file):
    junk = tmp_path / "junk.tar.gz"
    junk.write_bytes(os.urandom(4096))
    offline_signature.sign(junk, KEY, SITE)
    result = unpack(junk, tmp_path / "site", key_file)
    assert result.returncode == 2
    assert f"{junk}: cannot unpack" in result.stderr


def test_unpack_needs_an_empty_folder(packed_tree, tmp_path, key_file):
    dest = tmp_path / "site"
    dest.mkdir()
    (dest / "kept").write_text("mine")
    result = unpack(archive_of(packed_tree, tmp_path / "a.tgz"), dest, key_file)
    assert result.returncode == 1
    assert f"{dest}: exists and is not an empty folder" in result.stderr
    assert (dest / "kept").read_text() == "mine"


def test_wheels_for_another_python_are_refused_naming_both(packed_tree, tmp_path):
    manifest = offline_archive.read_manifest(packed_tree) | {"python": "3.9.2"}
    with pytest.raises(offline_archive.OfflineError) as raised:
        offline_unpack.check_python(manifest)
    assert "Python 3.9.2" in str(raised.value)
    assert sys.version.split()[0] in str(raised.value)


def test_env_script_points_spack_and_pip_at_the_carried_copies(tmp_path):
    top = tmp_path / TOP
    script = tmp_path / "env.sh"
    script.write_text(offline_unpack.env_script(tmp_path, top, tmp_path / "venv/bin/python"))
    shown = subprocess.run(
        ["bash", "-c", f". {script} && env && command -v spack || true"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    ).stdout
    assert f"SPACK_ROOT={top / 'spack'}" in shown
    assert "PIP_NO_INDEX=1" in shown and f"PIP_FIND_LINKS={top / 'wheels'}" in shown
    assert "SPACK_DISABLE_LOCAL_CONFIG=1" in shown
    assert f"PATH={top / 'spack' / 'bin'}:/usr/bin:/bin" in shown


def test_site_scope_names_only_the_carried_recipes_and_mirror(tmp_path):
    import yaml

    site = offline_unpack.write_site_scope(tmp_path, tmp_path / "cache")
    repos = (site / "repos.yaml").read_text()
    mirrors = (site / "mirrors.yaml").read_text()
    assert repos.startswith("repos::") and mirrors.startswith("mirrors::")
    assert yaml.safe_load(repos)["repos:"]["builtin"] == str(
        tmp_path / "spack-packages/repos/spack_repo/builtin"
    )
    assert yaml.safe_load(mirrors)["mirrors:"]["local"]["url"] == (tmp_path / "mirror").as_uri()
    bootstrap = yaml.safe_load((site / "bootstrap.yaml").read_text())["bootstrap"]
    assert bootstrap["enable"] is False and not any(bootstrap["trusted"].values())
    stage = yaml.safe_load((site / "config.yaml").read_text())["config"]["build_stage"]
    assert stage == [str(tmp_path / "cache" / "stage")]


def test_a_tag_whose_tree_git_cannot_read_is_a_clear_error(tmp_path):
    """A clone missing the tag's tree (a damaged or partial clone): the tag resolves, git
    archive fails, and pack says so in one line, with nothing of tar's half-read stream."""
    repo = tmp_path / "clone"

    def run(*args):
        return subprocess.run(
            ["git", "-C", str(repo), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    repo.mkdir()
    run("init", "-q")
    (repo / "file.txt").write_text("content\n")
    run("add", "file.txt")
    run("-c", "user.name=t", "-c", "user.email=t@t", "commit", "-q", "-m", "one")
    run("tag", "v1.0")
    tree = run("rev-parse", "HEAD^{tree}")
    (repo / ".git" / "objects" / tree[:2] / tree[2:]).unlink()
    pin = {"tag": "v1.0", "git": "unused"}
    with pytest.raises(offline_archive.OfflineError) as raised:
        offline_pack.export_tag(repo, pin, tmp_path / "spack", tmp_path / "scratch")
    assert str(raised.value).startswith(f"{repo}: git archive v1.0 failed")


def test_site_scope_keeps_a_folder_name_yaml_would_misread(tmp_path):
    """The unpack folder is the user's: a `#` (a comment) or `: ` (a mapping) in its name
    reaches Spack whole."""
    top = tmp_path / "site #1: test"
    site = offline_unpack.write_site_scope(top, top / "cache")
    repos = yaml.safe_load((site / "repos.yaml").read_text())["repos:"]
    assert repos == {"builtin": str(top / "spack-packages/repos/spack_repo/builtin")}
    stage = yaml.safe_load((site / "config.yaml").read_text())["config"]["build_stage"]
    assert stage == [str(top / "cache" / "stage")]


def test_the_bundle_clones_to_the_packed_branch(tmp_path):
    bundle = tmp_path / "iostudy.bundle"
    locked = spackenv.iostudy_commits(spackenv.committed_lock("local"))
    offline_pack.bundle_checkout(bundle, locked)
    top = tmp_path / TOP
    top.mkdir()
    shutil.move(bundle, top / "iostudy.bundle")
    offline_unpack.clone_checkout(top, tmp_path / "iostudy", "main")
    clone_head = subprocess.run(
        ["git", "-C", str(tmp_path / "iostudy"), "rev-parse", "main"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    main = subprocess.run(
        ["git", "-C", str(REPO_ROOT), "rev-parse", "main"], capture_output=True, text=True
    ).stdout.strip()
    assert clone_head == main
    for commit in locked.values():  # the locked commits are in the clone
        assert (
            subprocess.run(
                ["git", "-C", str(tmp_path / "iostudy"), "cat-file", "-e", commit]
            ).returncode
            == 0
        )


def test_a_lock_behind_spack_yaml_is_refused_before_packing(monkeypatch, tmp_path):
    lock = json.loads(spackenv.committed_lock("local").read_text())
    lock["roots"] = [r for r in lock["roots"] if not r["spec"].startswith("hacc-io")]
    (tmp_path / "locks" / "local").mkdir(parents=True)
    (tmp_path / "locks" / "local" / "spack.lock").write_text(json.dumps(lock))
    shutil.copyfile(REPO_ROOT / "spack-env" / "spack.yaml", tmp_path / "spack.yaml")
    monkeypatch.setattr(spackenv, "SPACK_ENV", tmp_path)
    with pytest.raises(offline_archive.OfflineError) as raised:
        offline_pack.check_lock_current("local")
    assert "(missing: hacc-io; not in spack.yaml: none)" in str(raised.value)
    assert "make spack SYSTEM=local FRESH=1" in str(raised.value)


def test_the_committed_locks_hold_every_spec_of_spack_yaml():
    for system in ("local", "testcluster"):
        offline_pack.check_lock_current(system)


# --- the lock and provenance ----------------------------------------------------------------


@pytest.fixture
def lock_dir(monkeypatch, tmp_path):
    (tmp_path / "locks" / "local").mkdir(parents=True)
    shutil.copyfile(spackenv.committed_lock("local"), tmp_path / "locks/local/spack.lock")
    monkeypatch.setattr(spackenv, "SPACK_ENV", tmp_path)
    return tmp_path / "locks/local/spack.lock"


def test_a_git_clone_of_spack_does_not_rewrite_the_lock(lock_dir, tmp_path):
    before = lock_dir.read_bytes()
    built = json.loads(before)
    built["spack"] = {"version": "1.1.0", "type": "git", "commit": "a" * 40}
    (tmp_path / "built.lock").write_text(json.dumps(built, indent=2))
    assert spackenv.keep_lock("local", tmp_path / "built.lock") is False
    assert lock_dir.read_bytes() == before


def test_a_changed_spec_rewrites_the_lock(lock_dir, tmp_path, capsys):
    built = json.loads(lock_dir.read_text())
    built["roots"] = built["roots"][:-1]
    (tmp_path / "built.lock").write_text(json.dumps(built))
    assert spackenv.keep_lock("local", tmp_path / "built.lock", StderrProgress("spack")) is True
    assert json.loads(lock_dir.read_text())["roots"] == built["roots"]
    assert "updated: commit it" in capsys.readouterr().err


def test_the_manifest_names_the_programs_commit_and_when_it_is_not_the_checkout(
    monkeypatch, tmp_path
):
    head = git_head()
    record = {
        "spack_lock_sha256": "0" * 64,
        "spack": {"version": "1.1.0", "source": "git", "commit": "b" * 40},
        "iostudy_packages": {"iostudy-runtime": head, "iostudy-ioprobe": "c" * 40},
        "specs": [],
    }
    (tmp_path / "local").mkdir()
    (tmp_path / "local" / "build-record.json").write_text(json.dumps(record))
    monkeypatch.setenv("IOSTUDY_SPACK_BUILD", str(tmp_path))
    entry = spackenv.manifest_entry("local", head)
    assert entry["iostudy_packages"] == record["iostudy_packages"]
    assert entry["differs_from_checkout"] == ["iostudy-ioprobe"]
    assert entry["spack_source"] == "git"
    text = runtables.spack_build_text(entry)
    assert "Spack 1.1.0, git" in text
    assert head[:12] in text and "c" * 12 in text
    assert "NOT the checkout's commit: iostudy-ioprobe" in text
    same = runtables.spack_build_text(entry | {"differs_from_checkout": []})
    assert "NOT" not in same
    every = runtables.spack_build_text(
        entry | {"differs_from_checkout": sorted(record["iostudy_packages"])}
    )
    assert every.endswith("(NOT the checkout's commit)")


def test_the_lock_pins_iostudy_packages_to_commits_of_this_history():
    locked = spackenv.iostudy_commits(spackenv.committed_lock("local"))
    assert {"iostudy-runtime", "iostudy-ioprobe", "iostudy-adaptive", "metarates"} <= set(locked)
    for commit in locked.values():
        assert len(commit) == 40
        assert (
            subprocess.run(["git", "-C", str(REPO_ROOT), "cat-file", "-e", commit]).returncode == 0
        )


def _dpkg_lacks(package: str) -> bool:
    status = subprocess.run(
        ["dpkg-query", "-W", "-f=${db:Status-Status}", package], capture_output=True, text=True
    ).stdout
    return status != "installed"


def test_the_debs_make_spack_needs_beyond_make_setup_are_those_the_readme_names():
    """On this machine (after `make setup`), ci/apt-download.sh names every package of the
    Spack list that dpkg says is missing, and those are among the two spack-env/README.md
    names (libtool, patchelf): the README's list holds for a `make setup` machine."""
    listed = REPO_ROOT / "configs/systems/local/spack/apt-packages.txt"
    wanted = {w for line in listed.read_text().splitlines() if (w := line.split("#")[0].strip())}
    lacking = {p for p in wanted if _dpkg_lacks(p)}
    named = subprocess.run(
        [str(REPO_ROOT / "ci/apt-download.sh"), str(listed)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    assert lacking <= set(named), (lacking, named)
    assert all(_dpkg_lacks(p) for p in named), "only what this machine lacks"
    assert lacking <= {"libtool", "patchelf"}, f"the README names libtool, patchelf: {lacking}"
    readme = (REPO_ROOT / "spack-env/README.md").read_text()
    assert "only **libtool and patchelf**" in readme


def _rewritten(archive: Path, out: Path, change) -> Path:
    """archive's tree with change(tree) applied and its manifest written anew to match, as an
    attacker who holds no key would make it: the old signature copied beside."""
    tree = out.parent / "rewritten"
    with tarfile.open(archive) as tar:
        tar.extractall(tree, filter="data")
    change(tree / TOP)
    manifest = offline_archive.read_manifest(tree / TOP)
    facts = {k: v for k, v in manifest.items() if k not in ("format", "files")}
    offline_archive.write_manifest(tree / TOP, facts)
    offline_archive.write_archive(tree / TOP, out)
    shutil.copy(offline_signature.path_of(archive), offline_signature.path_of(out))
    return out


def _refused(result, dest: Path, expected: str) -> None:
    assert result.returncode == 2, result.stderr
    assert expected in result.stderr, result.stderr
    assert "Traceback" not in result.stderr
    assert not dest.exists(), "a refused archive leaves nothing"


def test_an_unsigned_archive_is_refused_before_it_is_read(packed_tree, tmp_path, key_file):
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    offline_signature.path_of(archive).unlink()
    dest = tmp_path / "site"
    _refused(unpack(archive, dest, key_file), dest, "no signature (a.tar.gz.sig beside it)")


def test_a_consistent_rewrite_of_file_and_manifest_is_refused(packed_tree, tmp_path, key_file):
    """A mirror tarball swapped and MANIFEST.json rewritten to match it: every check of the
    archive's own holds; the signature does not."""
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    swap = lambda top: (top / "mirror/_source-cache/a.tar.gz").write_bytes(b"evil!!")  # noqa: E731
    rewritten = _rewritten(archive, tmp_path / "b.tar.gz", swap)
    dest = tmp_path / "site"
    _refused(unpack(rewritten, dest, key_file), dest, "changed since site site-a signed it")


def test_an_archive_signed_by_another_key_is_refused_naming_it(packed_tree, tmp_path, key_file):
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    other = Ed25519PrivateKey.generate()
    offline_signature.sign(archive, other, SITE)
    claimed = siteid.fingerprint(siteid.raw_public(other.public_key()))
    dest = tmp_path / "site"
    expected = f"does not verify with the key trusted for site {SITE}"
    _refused(unpack(archive, dest, key_file), dest, expected)
    assert f"the archive claims {claimed}" in unpack(archive, dest, key_file).stderr


def test_an_archive_of_a_site_not_trusted_names_its_signer(packed_tree, tmp_path):
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    dest = tmp_path / "site"
    result = iostudy("offline", "unpack", archive, dest, "--store", tmp_path / "store")
    fingerprint = siteid.fingerprint(siteid.raw_public(KEY.public_key()))
    _refused(result, dest, f"signed by site '{SITE}' with key {fingerprint}, which is not trusted")


def test_a_site_the_store_trusts_is_enough(packed_tree, tmp_path, key_file):
    """Without --key, the keys of `iostudy trust add` in --store: the archive gets past every
    check of its signature and entries, as far as its Python (another one here)."""
    facts = {"system": "local", "python": "3.9.2", "platform": "linux-x86_64"}
    offline_archive.write_manifest(packed_tree, facts)
    archive = archive_of(packed_tree, tmp_path / "a.tar.gz")
    store = tmp_path / "store"
    assert iostudy("trust", "add", SITE, key_file, "--store", store).returncode == 0
    result = iostudy("offline", "unpack", archive, tmp_path / "site", "--store", store)
    assert result.returncode == 1 and "Python 3.9.2" in result.stderr, result.stderr


def test_a_member_larger_than_its_manifest_says_is_never_written(tmp_path, key_file):
    """A zero bomb (64 MiB of zeros, a few KiB compressed) where the manifest lists one byte,
    signed by the trusted key: refused before it is written, and DIR holds nothing after."""
    bomb = _file("mirror/zeros")
    archive = _tar_of(tmp_path / "a.tar.gz", [bomb])
    with tarfile.open(archive) as tar:  # the same entries, the bomb's bytes in place of one
        entries = [(m, tar.extractfile(m).read() if m.isfile() else None) for m in tar]
    with tarfile.open(archive, "w:gz") as tar:
        for member, data in entries:
            if member.name == bomb.name:
                member.size, data = 64 << 20, bytes(64 << 20)
            tar.addfile(member, io.BytesIO(data) if data is not None else None)
    offline_signature.sign(archive, KEY, SITE)
    dest = tmp_path / "site"
    dest.mkdir()
    result = unpack(archive, dest, key_file)
    assert result.returncode == 2, result.stderr
    assert f"entry '{TOP}/mirror/zeros' is {64 << 20} bytes, MANIFEST.json says 1" in result.stderr
    assert list(dest.iterdir()) == []
