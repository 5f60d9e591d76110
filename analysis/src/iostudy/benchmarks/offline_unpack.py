"""Unpacking on the air-gapped side (`iostudy offline unpack ARCHIVE DIR`:
:mod:`iostudy.cli.offline`): the archive of `iostudy offline pack` checked against its manifest
and made ready: Spack with a site scope that never reaches the network, a clingo virtual
environment from the carried wheel, the checkout cloned from its bundle, and DIR/env.sh (Spack's
variables, pip told to take only the carried wheels).

DIR afterwards:
  iostudy-offline/   the archive's folder, every file as its manifest says (plus Spack's site
                     scope in spack/etc/spack/site/)
  clingo-venv/       SPACK_PYTHON
  spack-cache/       SPACK_USER_CACHE_PATH
  iostudy/           the checkout (branch main)
  env.sh             source it, then `cd iostudy && make setup && make spack SYSTEM=<system>`
"""

import platform
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from iostudy.benchmarks import offline_archive as archive
from iostudy.benchmarks import offline_pack, offline_signature
from iostudy.core.processes import clear_dead
from iostudy.core.progress import QUIET, Progress


def check_destination(dest: Path) -> None:
    if dest.is_dir():
        clear_dead(dest, archive.UNPACK_PREFIX)  # a killed unpack's extraction folder
    if dest.exists() and (not dest.is_dir() or any(dest.iterdir())):
        raise archive.OfflineError(f"{dest}: exists and is not an empty folder")


def check_python(manifest: dict) -> None:
    """The wheels are for the packing machine's Python X.Y and platform."""
    packed = manifest.get("python", "")
    here = platform.python_version()
    if packed.split(".")[:2] != here.split(".")[:2]:
        raise archive.OfflineError(
            f"the archive's wheels are for Python {packed}; this is Python {here}: pack on a "
            "machine with the same Python minor version as this one"
        )
    where = f"{sys.platform}-{platform.machine()}"
    if manifest.get("platform") != where:
        raise archive.OfflineError(
            f"the archive is for {manifest.get('platform')}, this is {where}"
        )


def write_site_scope(top: Path, cache: Path) -> Path:
    """Spack's site scope ($SPACK_ROOT/etc/spack/site): the carried recipes as builtin, the
    carried mirror as the only one, bootstrapping off, builds staged under cache (not in the
    system's temporary folder, where Spack's default would leave them)."""
    return offline_pack.write_scope(
        top / "spack" / "etc" / "spack" / "site",
        {"builtin": offline_pack.builtin_repo(top / "spack-packages")},
        (top / "mirror").as_uri(),
        {"build_stage": [str(cache / "stage")]},
    )


def env_script(dest: Path, top: Path, python: Path) -> str:
    values = {
        "SPACK_ROOT": top / "spack",
        "SPACK_PYTHON": python,
        "SPACK_DISABLE_LOCAL_CONFIG": "1",
        "SPACK_USER_CACHE_PATH": dest / "spack-cache",
        # make setup's `pip install` takes the carried wheels and never an index
        "PIP_NO_INDEX": "1",
        "PIP_FIND_LINKS": top / "wheels",
    }
    lines = [f"export {k}={shlex.quote(str(v))}" for k, v in values.items()]
    lines.append(f'export PATH={shlex.quote(str(top / "spack" / "bin"))}:"$PATH"')
    return (
        "# Made by `iostudy offline unpack`: source it, then\n"
        "#   cd iostudy && make setup && make spack SYSTEM=<system>\n" + "\n".join(lines) + "\n"
    )


def clone_checkout(top: Path, dest: Path, branch: str) -> None:
    proc = subprocess.run(
        ["git", "clone", "--quiet", "--branch", branch, str(top / "iostudy.bundle"), str(dest)],
        capture_output=True,
        text=True,
    )
    if proc.returncode != 0:
        raise archive.OfflineError(f"cannot clone the checkout's bundle: {proc.stderr.strip()}")


def unpack(
    path: Path, dest: Path, trusted_key, progress: Progress = QUIET
) -> tuple[dict, str, str]:
    """Unpacks and prepares; returns the archive's manifest and its signer's site and key
    fingerprint. The signature (offline_signature.verify, by ``trusted_key(site)``) is checked
    before anything else. ``dest`` may be relative (env.sh and Spack's scope name it absolute).
    When a step fails, what unpack made goes (the folder, or its content if it was there,
    empty): a refused archive leaves nothing."""
    dest = dest.absolute()
    check_destination(dest)
    site, fingerprint = offline_signature.verify(path, trusted_key)
    made = not dest.exists()
    dest.mkdir(parents=True, exist_ok=True)
    try:
        return _prepare(path, dest, progress), site, fingerprint
    except BaseException:
        _undo(dest, made)
        raise


def _prepare(path: Path, dest: Path, progress: Progress) -> dict:
    top = archive.extract(path, dest)
    manifest = archive.verify(top)
    check_python(manifest)
    python = offline_pack.clingo_python(
        top / "wheels", manifest["pins"]["clingo"], dest / "clingo-venv", progress
    )
    write_site_scope(top, dest / "spack-cache")
    clone_checkout(top, dest / "iostudy", manifest["iostudy_branch"])
    (dest / "env.sh").write_text(env_script(dest, top, python))
    return manifest


def _undo(dest: Path, made: bool) -> None:
    """Remove dest if unpack made it, else what unpack put in it (it was empty). rmtree
    removes links, never what they point to."""
    if made:
        shutil.rmtree(dest, ignore_errors=True)
        return
    for entry in dest.iterdir():
        if entry.is_dir() and not entry.is_symlink():
            shutil.rmtree(entry, ignore_errors=True)
        else:
            entry.unlink(missing_ok=True)
