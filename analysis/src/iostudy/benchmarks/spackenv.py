"""The Spack tier: building and checking it (`iostudy spack build|check`:
:mod:`iostudy.cli.spack`) and where the checks find Spack's binaries.

spack-env/spack.yaml says what to build; configs/systems/<system>/spack/ holds the site facts it
includes. `iostudy spack build --system S` keeps one Spack environment per system in
build/spack/<S>/ (spack.yaml copied from spack-env/, spack.lock, the view), seeded with the
committed lock spack-env/locks/<S>/spack.lock so that a rebuild reproduces exactly what is
recorded; it concretizes, installs, copies the lock back to spack-env/locks/<S>/ when a spec
changed and writes build/spack/<S>/build-record.json (Spack's version and source, the lock's
sha256, the iostudy commit of iostudy's own packages, `spack find --json`), which every run
manifest references.
"""

import datetime as dt
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import yaml

from iostudy.core import checknames, config, provenance
from iostudy.core.errors import Failed
from iostudy.core.progress import QUIET, Progress

REPO_ROOT = config.REPO_ROOT
SPACK_ENV = REPO_ROOT / "spack-env"
RECIPES = SPACK_ENV / "repos" / "spack_repo" / "iostudy" / "packages"
#: The Spack and spack-packages releases and the clingo version the locks are built with.
PINS = SPACK_ENV / "pins.yaml"
# IOSTUDY_SPACK_BUILD: another folder of Spack builds (tests point it at a stand-in).
BUILD_ROOT = REPO_ROOT / "build" / "spack"


#: Every package of the mission, with the variants the studies need: the runtime's, and each
#: check's program's (iostudy.core.checknames).
def _mission_specs() -> dict[str, list[str]]:
    specs = {"iostudy-runtime": ["+mpi"]}
    for check in checknames.CHECKS.values():
        wanted = specs.setdefault(check.package, [])
        wanted += [v for v in check.variants if v not in wanted]
    return specs


MISSION_SPECS = _mission_specs()
#: The packages Spack's builtin repo provides; every other spec needs a recipe in RECIPES.
BUILTIN_PACKAGES = {"ior", "hmmer", "fio"}
SITE_SCOPE_FILES = {"packages.yaml": "spack-packages", "include.yaml": "spack-include"}

HOW_TO_GET_SPACK = """\
Spack was not found: put `spack` on PATH, set SPACK_ROOT, or pass --spack PATH.
Get Spack at the tag of spack-env/pins.yaml (spack-env/README.md has the details, air-gapped
sites too: iostudy offline pack|unpack):
  git clone --depth 2 --branch {tag} {git}
  . spack/share/spack/setup-env.sh"""


class SpackError(Failed):
    """Spack is missing or failed; the message says what happened and what to do."""


def env_dir(system: str) -> Path:
    return Path(os.environ.get("IOSTUDY_SPACK_BUILD") or BUILD_ROOT) / system


def view_dir(system: str) -> Path:
    return env_dir(system) / "view"


def record_path(system: str) -> Path:
    return env_dir(system) / "build-record.json"


def committed_lock(system: str) -> Path:
    return SPACK_ENV / "locks" / system / "spack.lock"


def site_scope(system: str) -> Path:
    return config.configs_dir() / "systems" / system / "spack"


def view_program(system: str, name: str) -> Path | None:
    """bin/<name> of the system's Spack view, when `iostudy spack build` made it."""
    path = view_dir(system) / "bin" / name
    return path if path.is_file() else None


def view_library(system: str, name: str) -> Path | None:
    path = view_dir(system) / "lib" / name
    return path if path.is_file() else None


def build_record(system: str) -> dict | None:
    path = record_path(system)
    return json.loads(path.read_text()) if path.is_file() else None


def missing_build(system: str) -> str | None:
    """Why a run on ``system`` lacks the Spack build the system expects (it has a site scope,
    configs/systems/<system>/spack/, and no build record), in a sentence; None otherwise."""
    if not site_scope(system).is_dir() or record_path(system).is_file():
        return None
    return (
        f"system {system} expects a Spack build ({config.in_checkout(site_scope(system))}) and "
        f"has none ({config.in_checkout(record_path(system))}): the checks run make setup's "
        f"CMake builds and the programs on PATH; `make spack SYSTEM={system}` builds them"
    )


def view_mpi(system: str) -> tuple[str, Path] | None:
    """The MPI flavour the view's programs are built with and its mpirun (an external's
    prefix, else the view's), from the build record; None without a build."""
    record = build_record(system)
    if record is None:
        return None
    for spec in record["specs"]:
        if spec["name"] in ("openmpi", "mpich"):
            prefix = Path(spec["external"]["path"]) if spec.get("external") else view_dir(system)
            return spec["name"], prefix / "bin" / "mpirun"
    return None


def manifest_entry(system: str, checkout: str | None) -> dict | None:
    """What a run manifest records of the system's Spack build: the record's path (relative
    to the checkout) and checksum, the lock's checksum, Spack's version and source, and the
    iostudy commit each of iostudy's own programs was built from, naming those that differ from
    checkout (the run's commit); None without a build."""
    record = build_record(system)
    if record is None:
        return None
    path = record_path(system)
    built = record.get("iostudy_packages") or {}
    return {
        "record": config.in_checkout(path),
        "record_sha256": provenance.sha256_file(path),
        "spack_lock_sha256": record["spack_lock_sha256"],
        "spack_version": record["spack"]["version"],
        "spack_source": record["spack"].get("source"),
        "iostudy_packages": built,
        "differs_from_checkout": sorted(n for n, c in built.items() if checkout and c != checkout),
    }


# --- validation (CI has no Spack: this is what it checks) ----------------------------------


def _read_yaml(path: Path):
    try:
        return yaml.safe_load(path.read_text())
    except OSError as exc:
        raise config.ConfigError(f"{path}: cannot read: {exc.strerror}") from exc
    except yaml.YAMLError as exc:
        raise config.ConfigError(f"{path}: not valid YAML: {exc}") from exc


def _spec_name(spec: str) -> str:
    return re.match(r"[A-Za-z0-9_-]+", spec.strip()).group(0)


def read_pins(path: Path = PINS) -> dict:
    """spack-env/pins.yaml, validated: what a lock is built with besides its specs (a lock
    names neither the recipe repository's release nor the concretizer)."""
    return config.validate(path, _read_yaml(path), "spack-pins")


def check_environment(path: Path = SPACK_ENV / "spack.yaml") -> dict:
    """spack.yaml against its schema, plus: every package of the mission with its variants,
    and a recipe in the iostudy repo for every spec the builtin repo lacks."""
    data = config.validate(path, _read_yaml(path), "spack-env")
    specs = data["spack"]["specs"]
    by_name = {_spec_name(s): s for s in specs}
    for name, variants in MISSION_SPECS.items():
        if name not in by_name:
            raise config.ConfigError(f"{path}: spack.specs: the mission's '{name}' is missing")
        missing = [v for v in variants if v not in by_name[name].split()]
        if missing:
            raise config.ConfigError(
                f"{path}: spack.specs: '{by_name[name]}' lacks {' '.join(missing)}"
            )
    for name in by_name.keys() - BUILTIN_PACKAGES:
        recipe = RECIPES / name.replace("-", "_") / "package.py"
        if not recipe.is_file():
            raise config.ConfigError(f"{path}: spack.specs: '{name}' has no recipe ({recipe})")
    return data


def _check_external_comments(path: Path):
    """Every external carries a comment, right above it, saying how its version was checked."""
    lines = path.read_text().splitlines()
    for number, line in enumerate(lines):
        if line.strip().startswith("- spec:"):
            above = lines[number - 1].strip() if number else ""
            if not above.startswith("#"):
                raise config.ConfigError(
                    f"{path}: line {number + 1}: external '{line.split(':', 1)[1].strip()}' "
                    "has no comment above it saying how its version was checked"
                )


def check_site_scope(system: str) -> list[Path]:
    """The files of configs/systems/<system>/spack/ against their schemas; returns them."""
    scope = site_scope(system)
    if not scope.is_dir():
        raise config.ConfigError(f"{scope}: no Spack site scope for system '{system}'")
    files = sorted(scope.glob("*.yaml"))
    if not files:
        raise config.ConfigError(f"{scope}: no Spack configuration files")
    for path in files:
        kind = SITE_SCOPE_FILES.get(path.name)
        if kind is None:
            raise config.ConfigError(
                f"{path}: unexpected file in a site scope (known: {', '.join(SITE_SCOPE_FILES)})"
            )
        data = config.validate(path, _read_yaml(path), kind)
        if kind == "spack-packages":
            _check_external_comments(path)
        for entry in data.get("include", []):
            target = (path.parent / entry["path"]).resolve()
            if not target.exists():
                raise config.ConfigError(f"{path}: include: {entry['path']} does not exist")
    return files


def systems_with_scopes() -> list[str]:
    return sorted(p.parent.name for p in (config.configs_dir() / "systems").glob("*/spack"))


def checked_files(systems: list[str]) -> list[tuple]:
    """(file, its check) of spack.yaml, the pins and the site scopes of systems, for
    iostudy.cli.checks.check_files."""
    checks = [(SPACK_ENV / "spack.yaml", check_environment), (PINS, read_pins)]
    checks += [(site_scope(s), lambda s=s: check_site_scope(s)) for s in systems]
    return checks


# --- building --------------------------------------------------------------------------------


def find_spack(explicit: str | None = None) -> Path:
    """--spack, else $SPACK_ROOT/bin/spack, else `spack` on PATH."""
    candidates = []
    if explicit:
        candidates.append(Path(explicit))
    if os.environ.get("SPACK_ROOT"):
        candidates.append(Path(os.environ["SPACK_ROOT"]) / "bin" / "spack")
    on_path = shutil.which("spack")
    if on_path:
        candidates.append(Path(on_path))
    for candidate in candidates:
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return candidate
    tried = ", ".join(str(c) for c in candidates) or "no --spack, SPACK_ROOT or PATH entry"
    how = HOW_TO_GET_SPACK.format(**read_pins()["spack"])
    raise SpackError(f"{how}\n(tried: {tried})")


def spack_env_vars(system: str) -> dict:
    """What spack-env/spack.yaml expands: the checkout and the system whose facts it includes."""
    return {**os.environ, "IOSTUDY_ROOT": str(REPO_ROOT), "IOSTUDY_SYSTEM": system}


def run_logged(cmd: list, env: dict, capture: bool = False, progress: Progress = QUIET) -> str:
    """Runs a command (Spack, pip) with its output shown as it comes (it prints its own
    progress), or captured; the command line goes to progress first. A failure raises
    SpackError naming the command."""
    progress.note("+ " + " ".join(str(c) for c in cmd))
    try:
        proc = subprocess.run(
            [str(c) for c in cmd], env=env, text=True, stdout=subprocess.PIPE if capture else None
        )
    except OSError as exc:
        raise SpackError(f"cannot run {cmd[0]}: {exc.strerror}") from exc
    if proc.returncode != 0:
        raise SpackError(f"`{' '.join(str(c) for c in cmd)}` failed with status {proc.returncode}")
    return proc.stdout or ""


def prepare(system: str, fresh: bool, progress: Progress = QUIET) -> Path:
    """build/spack/<system>/ with the current spack.yaml and, unless fresh or already there,
    the committed lock."""
    directory = env_dir(system)
    directory.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(SPACK_ENV / "spack.yaml", directory / "spack.yaml")
    lock = directory / "spack.lock"
    if fresh:
        lock.unlink(missing_ok=True)
    elif not lock.exists() and committed_lock(system).is_file():
        shutil.copyfile(committed_lock(system), lock)
        progress.note(f"using the committed lock {committed_lock(system).relative_to(REPO_ROOT)}")
    return directory


def build(system: str, spack: Path, jobs: int, fresh: bool, progress: Progress = QUIET) -> Path:
    """Concretizes and installs the environment of system; returns the build record's path."""
    config.load_system(system)
    check_environment()
    check_site_scope(system)
    env = spack_env_vars(system)
    directory = prepare(system, fresh, progress)
    spack_e = [spack, "-e", directory]
    concretize = spack_e + ["concretize"] + (["--fresh", "--force"] if fresh else [])
    run_logged(concretize, env, progress=progress)
    run_logged(spack_e + ["install", f"-j{jobs}", "--fail-fast"], env, progress=progress)
    specs = json.loads(run_logged(spack_e + ["find", "--json"], env, True, progress))

    keep_lock(system, directory / "spack.lock", progress)
    path = record_path(system)
    path.write_text(json.dumps(build_record_of(system, spack, directory, specs), indent=1) + "\n")
    return path


def lock_specs(path: Path) -> dict:
    """A spack.lock without its "spack" entry (the version and the source of the Spack that
    wrote it: a release, or a git clone and its commit), which says nothing about what is
    built."""
    data = json.loads(path.read_text())
    data.pop("spack", None)
    return data


def keep_lock(system: str, built: Path, progress: Progress = QUIET) -> bool:
    """Copies the lock Spack wrote to spack-env/locks/<system>/ only when a spec changed (a
    Spack from a git clone rather than a release writes another "spack" entry, nothing else);
    returns whether it did."""
    committed = committed_lock(system)
    if committed.is_file() and lock_specs(committed) == lock_specs(built):
        return False
    committed.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(built, committed)
    progress.note(f"{config.in_checkout(committed)} updated: commit it to pin this build")
    return True


def iostudy_commits(lock: Path) -> dict[str, str]:
    """{package: commit} of the lock's specs built from iostudy's checkout (namespace
    iostudy, fetched from git)."""
    specs = json.loads(lock.read_text())["concrete_specs"].values()
    return {
        s["name"]: s["parameters"]["commit"]
        for s in specs
        if s.get("namespace") == "iostudy" and "commit" in s.get("parameters", {})
    }


def build_record_of(system: str, spack: Path, directory: Path, specs: list) -> dict:
    """What build-record.json says: Spack (version; a release or a git clone and its commit,
    from the lock Spack wrote), the committed lock's checksum, the checkout, the iostudy commit
    of each of iostudy's own packages and `spack find --json`."""
    written = json.loads((directory / "spack.lock").read_text()).get("spack", {})
    committed = committed_lock(system)
    commit, dirty = provenance.git_state()
    return {
        "system": system,
        "created": dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds"),
        "spack": {
            "executable": str(spack),
            "version": written.get("version"),
            "source": written.get("type"),
            "commit": written.get("commit"),
        },
        "environment": config.in_checkout(directory),
        "view": config.in_checkout(view_dir(system)),
        "spack_lock": config.in_checkout(committed),
        "spack_lock_sha256": provenance.sha256_file(committed),
        "git_commit": commit,
        "git_dirty": dirty,
        "iostudy_packages": iostudy_commits(committed),
        "specs": specs,
    }
