"""Packing, on a connected machine, one archive with everything an air-gapped site needs to run
`make setup` and `make spack` (`iostudy offline pack`: :mod:`iostudy.cli.offline`; layout:
iostudy.benchmarks.offline_archive).

Spack and its recipes come from git at the tags of spack-env/pins.yaml (a clone given with
--spack/--spack-packages, else cloned from the pinned URL); the source mirror is made by the
pinned Spack itself (`spack mirror create`) from the committed lock, so it holds exactly the
locked specs' sources, each checked against its recipe's checksum; --source-mirror gives Spack
a mirror to take them from instead of the network.
"""

import datetime as dt
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import textwrap
from pathlib import Path

import tomllib
import yaml

from iostudy.benchmarks import offline_archive as archive
from iostudy.benchmarks import offline_signature, spackenv
from iostudy.core import config, provenance
from iostudy.core.config import REPO_ROOT
from iostudy.core.processes import private_dir
from iostudy.core.progress import QUIET, Progress

REQUIREMENTS = REPO_ROOT / "analysis" / "requirements.lock"
ANALYSIS_PYPROJECT = REPO_ROOT / "analysis" / "pyproject.toml"
#: what building an sdist needs when its pyproject.toml does not say (PEP 517)
PEP517_DEFAULT = ["setuptools>=40.8.0", "wheel"]
#: the branch iostudy's recipes build (IostudyCheckoutPackage: version("main", branch="main"))
BRANCH = "main"


def git(*args, cwd: Path | None = None) -> str:
    proc = subprocess.run(["git", *map(str, args)], cwd=cwd, capture_output=True, text=True)
    if proc.returncode != 0:
        raise archive.OfflineError(
            f"`git {' '.join(map(str, args))}` failed: {proc.stderr.strip()}"
        )
    return proc.stdout.strip()


def export_tag(
    source: Path | None, pin: dict, dest: Path, scratch: Path, progress: Progress = QUIET
) -> str:
    """The tree of the pinned tag written to dest, from source (a git clone, bare or not), else
    from a clone of the pinned URL; returns the tag's commit."""
    if source is None:
        source = scratch / dest.name
        progress.note(f"cloning {pin['git']} at {pin['tag']}")
        git(
            "clone", "--quiet", "--bare", "--depth", "1", "--branch", pin["tag"], pin["git"], source
        )
    try:
        commit = git("-C", source, "rev-parse", "--verify", f"{pin['tag']}^{{commit}}")
    except archive.OfflineError:
        raise archive.OfflineError(f"{source}: no tag {pin['tag']} (spack-env/pins.yaml)") from None
    dest.mkdir(parents=True)
    tree = subprocess.Popen(
        ["git", "-C", str(source), "archive", "--format=tar", commit], stdout=subprocess.PIPE
    )
    unreadable = None
    with tree:  # leaving closes the pipe first: a git still writing stops, then is waited for
        try:
            with tarfile.open(fileobj=tree.stdout, mode="r|") as tar:
                archive.extract_all(tar, dest)
        except tarfile.TarError as exc:  # a git that failed sends no tar, or half of one
            unreadable = exc
    if tree.returncode != 0 or unreadable:
        why = f" ({unreadable})" if unreadable else ""
        raise archive.OfflineError(f"{source}: git archive {pin['tag']} failed{why}")
    return commit


def check_spack_version(tree: Path, tag: str) -> None:
    """The exported Spack says it is the pinned version."""
    init = tree / "lib" / "spack" / "spack" / "__init__.py"
    wanted = f'__version__ = "{tag.removeprefix("v")}"'
    if wanted not in init.read_text():
        raise archive.OfflineError(f"{init}: not Spack {tag} (spack-env/pins.yaml)")


def _root_specs(specs) -> list[str]:
    return sorted("".join(str(s).split()) for s in specs)


def check_lock_current(system: str) -> dict:
    """The committed lock, when its roots are spack.yaml's specs: the mirror is made from the
    lock, so a spec added since would be missing from it."""
    lock_path = spackenv.committed_lock(system)
    if not lock_path.is_file():
        raise archive.OfflineError(
            f"{lock_path}: no lock for system '{system}': run `make spack SYSTEM={system}` and "
            "commit the lock it writes"
        )
    lock = json.loads(lock_path.read_text())
    wanted = _root_specs(spackenv.check_environment()["spack"]["specs"])
    locked = _root_specs(root["spec"] for root in lock["roots"])
    if wanted != locked:
        missing = ", ".join(sorted(set(wanted) - set(locked))) or "none"
        extra = ", ".join(sorted(set(locked) - set(wanted))) or "none"
        raise archive.OfflineError(
            f"{lock_path}: its roots are not spack-env/spack.yaml's specs (missing: {missing}; "
            f"not in spack.yaml: {extra}): run `make spack SYSTEM={system} FRESH=1` and commit "
            "the lock"
        )
    return lock


def _pip(progress: Progress, *args) -> None:
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", *args]
    spackenv.run_logged(pip, {**os.environ}, progress=progress)


def _build_requirements(sdist: Path) -> list[str]:
    """The [build-system] requires of an sdist's pyproject.toml (setuptools and wheel, PEP
    517's default, without one)."""
    with tarfile.open(sdist) as tar:
        names = [m for m in tar.getnames() if m.count("/") == 1 and m.endswith("/pyproject.toml")]
        if not names:
            return PEP517_DEFAULT
        data = tomllib.loads(tar.extractfile(names[0]).read().decode())
    return data.get("build-system", {}).get("requires", PEP517_DEFAULT)


def wheelhouse(dest: Path, clingo: str, progress: Progress = QUIET) -> None:
    """The lock's distributions (hash-checked; an sdist stays an sdist, so that its hash still
    verifies), clingo, and what building the sdists and iostudy's own package needs."""
    _pip(progress, "download", "--quiet", "--require-hashes", "-r", REQUIREMENTS, "-d", dest)
    needed = {f"clingo=={clingo}"}
    needed.update(tomllib.loads(ANALYSIS_PYPROJECT.read_text())["build-system"]["requires"])
    for sdist in sorted(dest.glob("*.tar.gz")):
        needed.update(_build_requirements(sdist))
    _pip(progress, "download", "--quiet", "-d", dest, *sorted(needed))


def clingo_python(wheels: Path, clingo: str, venv: Path, progress: Progress = QUIET) -> Path:
    """A virtual environment with clingo from the wheelhouse; returns its python."""
    spackenv.run_logged([sys.executable, "-m", "venv", venv], {**os.environ}, progress=progress)
    python = venv / "bin" / "python"
    spackenv.run_logged(
        [
            python,
            "-m",
            "pip",
            "install",
            "--quiet",
            "--no-index",
            "--find-links",
            wheels,
            f"clingo=={clingo}",
        ],
        {**os.environ},
        progress=progress,
    )
    return python


def write_scope(
    scope: Path, repos: dict[str, Path], mirror_url: str | None, settings: dict
) -> Path:
    """A Spack configuration scope that never reaches the network unasked: `repos::` with only
    repos (in search order), `mirrors::` with only mirror_url (none: Spack's defaults), no
    bootstrap download, and settings for config.yaml (caches, build stage)."""
    scope.mkdir(parents=True, exist_ok=True)
    _write_yaml(scope / "repos.yaml", "repos:", {name: str(path) for name, path in repos.items()})
    trusted = {
        source: False for source in ("github-actions-v2", "github-actions-v0.6", "spack-install")
    }
    _write_yaml(scope / "bootstrap.yaml", "bootstrap", {"enable": False, "trusted": trusted})
    _write_yaml(scope / "config.yaml", "config", settings)
    if mirror_url:
        mirror = {"local": {"url": mirror_url, "binary": False}}
        _write_yaml(scope / "mirrors.yaml", "mirrors:", mirror)
    return scope


def _write_yaml(path: Path, section: str, value: dict) -> None:
    """path: `section:` over value, which YAML quotes where it must (a folder's name is the
    user's: a `#` or `: ` in it would otherwise end or split the value). A section ending in
    `:` is Spack's override (`repos::`: these and no other)."""
    body = yaml.safe_dump(value, default_flow_style=False, sort_keys=False, width=1 << 20)
    path.write_text(f"{section}:\n" + textwrap.indent(body, "  "))


def builtin_repo(packages: Path) -> Path:
    return packages / "repos" / "spack_repo" / "builtin"


def source_mirror(
    staging: Path, system: str, upstream: Path | None, scratch: Path, progress: Progress = QUIET
) -> None:
    """staging/mirror: the carried Spack's `mirror create` of the committed lock's specs."""
    clingo = spackenv.read_pins()["clingo"]
    python = clingo_python(staging / "wheels", clingo, scratch / "clingo-venv", progress)
    url = upstream.resolve().as_uri() if upstream else None
    cache = scratch / "cache"
    # This scope outranks the environment's, so its `repos::` names iostudy's repo too (first).
    repos = {
        "iostudy": spackenv.RECIPES.parent,
        "builtin": builtin_repo(staging / "spack-packages"),
    }
    caches = {
        "source_cache": str(cache / "sources"),
        "misc_cache": str(cache / "misc"),
        "build_stage": [str(cache / "stage")],
    }
    scope = write_scope(scratch / "scope", repos, url, caches)
    env_dir = scratch / "env"
    env_dir.mkdir()
    shutil.copyfile(spackenv.SPACK_ENV / "spack.yaml", env_dir / "spack.yaml")
    shutil.copyfile(spackenv.committed_lock(system), env_dir / "spack.lock")
    env = {
        **spackenv.spack_env_vars(system),
        "SPACK_ROOT": str(staging / "spack"),
        "SPACK_PYTHON": str(python),
        "SPACK_DISABLE_LOCAL_CONFIG": "1",
        "SPACK_USER_CACHE_PATH": str(scratch / "cache"),
        "PYTHONDONTWRITEBYTECODE": "1",  # no __pycache__ in the carried trees
    }
    spack = staging / "spack" / "bin" / "spack"
    spackenv.run_logged(
        [
            spack,
            "-C",
            scope,
            "-e",
            env_dir,
            "mirror",
            "create",
            "--directory",
            staging / "mirror",
            "--all",
        ],
        env,
        progress=progress,
    )


def bundle_checkout(dest: Path, locked: dict[str, str], progress: Progress = QUIET) -> str:
    """The checkout's branch as a git bundle; every locked iostudy commit must be in it."""
    head = git("-C", REPO_ROOT, "rev-parse", BRANCH)
    for package, commit in sorted(locked.items()):
        ancestor = subprocess.run(
            ["git", "-C", str(REPO_ROOT), "merge-base", "--is-ancestor", commit, BRANCH],
            capture_output=True,
        )
        if ancestor.returncode != 0:
            raise archive.OfflineError(
                f"the lock's {package} is built from {commit}, which is not on the branch "
                f"{BRANCH} of {REPO_ROOT}"
            )
    if provenance.git_state()[1]:
        progress.warn(
            f"uncommitted changes of {REPO_ROOT} are not in the archive (only the "
            f"branch {BRANCH}'s commits are)"
        )
    git("-C", REPO_ROOT, "bundle", "create", dest, BRANCH)
    return head


def pack(
    system: str,
    out: Path,
    sources: dict[str, Path | None],
    upstream: Path | None,
    signer: tuple,
    progress: Progress = QUIET,
) -> dict:
    """Writes the archive of system to out, signed (out.sig) by ``signer``, (site, key);
    returns its manifest's facts; each step's progress to ``progress``."""
    config.load_system(system)
    spackenv.check_site_scope(system)
    check_lock_current(system)
    pinned = spackenv.read_pins()
    out.parent.mkdir(parents=True, exist_ok=True)
    # beside the archive: a killed pack's folder goes at the next, as the archive's partial file
    tmp = private_dir(".offline-pack-", out.parent)
    try:
        staging, scratch = tmp / archive.TOP, tmp / "scratch"
        staging.mkdir()
        scratch.mkdir()
        commits = {
            name: export_tag(sources.get(name), pinned[name], staging / name, scratch, progress)
            for name in ("spack", "spack-packages")
        }
        check_spack_version(staging / "spack", pinned["spack"]["tag"])
        wheelhouse(staging / "wheels", pinned["clingo"], progress)
        source_mirror(staging, system, upstream, scratch, progress)
        locked = spackenv.iostudy_commits(spackenv.committed_lock(system))
        head = bundle_checkout(staging / "iostudy.bundle", locked, progress)
        facts = {
            "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
            "system": system,
            "python": platform.python_version(),
            "platform": f"{sys.platform}-{platform.machine()}",
            "pins": {n: {**pinned[n], "commit": commits[n]} for n in commits}
            | {"clingo": pinned["clingo"]},
            "spack_lock": str(spackenv.committed_lock(system).relative_to(REPO_ROOT)),
            "spack_lock_sha256": provenance.sha256_file(spackenv.committed_lock(system)),
            "iostudy_branch": BRANCH,
            "iostudy_commit": head,
            "iostudy_packages": locked,
        }
        archive.write_manifest(staging, facts)
        archive.write_archive(staging, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    offline_signature.sign(out, signer[1], signer[0])
    return facts
