"""`iostudy spack check` and `iostudy spack build` where CI is: no Spack on the machine.

The committed spack.yaml and site scopes must validate; each kind of damage a site could do to
them must be reported naming the file and what is wrong; and a build without Spack must fail
with instructions rather than pretend.
"""

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iostudy.benchmarks import spackenv
from iostudy.core import config

REPO_ROOT = Path(__file__).resolve().parents[2]
IOSTUDY = [sys.executable, "-m", "iostudy.cli.cli"]


def iostudy(*args, env=None):
    return subprocess.run(IOSTUDY + list(args), capture_output=True, text=True, env=env)


def test_committed_environment_and_scopes_validate():
    result = iostudy("spack", "check")
    assert result.returncode == 0, result.stderr
    for system in ("local", "testcluster"):
        assert f"configs/systems/{system}/spack" in result.stdout
    assert "4 of 4 files valid" in result.stdout


@pytest.fixture
def manifest(tmp_path):
    path = tmp_path / "spack.yaml"
    shutil.copyfile(REPO_ROOT / "spack-env" / "spack.yaml", path)
    return path


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("  - hacc-io\n", "", "the mission's 'hacc-io' is missing"),
        ("  - hmmer@3.4 +mpi\n", "  - hmmer@3.4\n", "'hmmer@3.4' lacks +mpi"),
        ("+hdf5 +ncmpi", "+hdf5", "lacks +ncmpi"),
        ("  - btio\n", "  - btio\n  - io500\n", "'io500' has no recipe"),
        ("/configs/systems/$IOSTUDY_SYSTEM/spack", "/configs/site", "spack.include[0].path"),
        ("      root: view\n", "      root: /opt/view\n", "spack.view.default.root"),
    ],
)
def test_damaged_environment_is_named(manifest, old, new, expected):
    text = manifest.read_text()
    assert old in text
    manifest.write_text(text.replace(old, new))
    with pytest.raises(config.ConfigError) as raised:
        spackenv.check_environment(manifest)
    assert str(manifest) in str(raised.value)
    assert expected in str(raised.value)


def test_external_without_version_comment_is_named(configs_copy):
    packages = configs_copy / "systems" / "local" / "spack" / "packages.yaml"
    lines = packages.read_text().splitlines(keepends=True)
    at = next(i for i, line in enumerate(lines) if "- spec: cmake@" in line)
    del lines[at - 1]  # its comment
    packages.write_text("".join(lines))
    with pytest.raises(config.ConfigError) as raised:
        spackenv.check_site_scope("local")
    message = str(raised.value)
    assert str(packages) in message and f"line {at}" in message and "cmake@3.25.1" in message


def test_external_without_prefix_is_named(configs_copy):
    packages = configs_copy / "systems" / "local" / "spack" / "packages.yaml"
    text = packages.read_text()
    packages.write_text(
        text.replace(
            "    - spec: patchelf@0.14.3\n      prefix: /usr\n", "    - spec: patchelf@0.14.3\n"
        )
    )
    result = iostudy("spack", "check", "local", env={**os.environ})
    assert result.returncode == 2
    assert "packages.patchelf.externals[0]" in result.stderr and "'prefix'" in result.stderr


def test_include_of_missing_scope_is_named(configs_copy):
    include = configs_copy / "systems" / "testcluster" / "spack" / "include.yaml"
    include.write_text(include.read_text().replace("../../local/spack", "../../gone/spack"))
    with pytest.raises(config.ConfigError, match="gone/spack does not exist"):
        spackenv.check_site_scope("testcluster")


def test_build_without_spack_says_how_to_get_it(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "SPACK_ROOT"}
    # PATH without any spack: this interpreter's folder and the system's.
    env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), "/usr/bin", "/bin"])
    if shutil.which("spack", path=env["PATH"]):
        pytest.skip("a spack is installed system-wide: cannot test its absence here")
    result = iostudy("spack", "build", "--system", "local", env=env)
    assert result.returncode == 1
    assert "Spack was not found" in result.stderr
    assert "spack-env/README.md" in result.stderr
    assert not (tmp_path / "build").exists()


def test_build_for_unknown_system_is_refused():
    # /bin/true stands in for spack: the system is refused before Spack would ever run.
    result = iostudy("spack", "build", "--system", "nosuch", "--spack", "/bin/true")
    assert result.returncode == 2
    assert "no such system 'nosuch'" in result.stderr


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        ("  tag: v1.1.0\n", "", "spack: 'tag' is a required property"),
        ("clingo: 5.8.3", "clingo: latest", "clingo: 'latest' does not match"),
        ("https://github.com/spack/spack.git", "/opt/spack", "spack.git: '/opt/spack'"),
    ],
)
def test_damaged_pins_are_named(tmp_path, old, new, expected):
    pins = tmp_path / "pins.yaml"
    text = (REPO_ROOT / "spack-env" / "pins.yaml").read_text()
    assert old in text
    pins.write_text(text.replace(old, new))
    with pytest.raises(config.ConfigError) as raised:
        spackenv.read_pins(pins)
    assert str(pins) in str(raised.value)
    assert expected in str(raised.value)
