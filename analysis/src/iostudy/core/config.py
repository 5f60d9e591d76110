"""Configuration files: loading and validation against configs/schemas.

Configuration is data (DESIGN.md convention 4): every file is validated on entry, and a bad file
gets one error that names the file, the key and the problem. Defaults live only in the schemas
(their ``default`` keywords) and are filled in here, so no caller repeats them.
"""

from __future__ import annotations

import errno
import json
import os
import re
from pathlib import Path

import jsonschema

from iostudy.core import safeio
from iostudy.core.errors import BadInput

# configs/ beside analysis/ in a checkout; IOSTUDY_CONFIGS may point elsewhere (a site's copy).
REPO_ROOT = Path(__file__).resolve().parents[4]
# The store every command reads and writes unless told otherwise (iostudy.store.store).
DEFAULT_CONFIGS = REPO_ROOT / "configs"
# A configuration file is a few KiB; anything much larger is not one (and is not read whole).
MAX_CONFIG_BYTES = 1 << 20


class ConfigError(BadInput, ValueError):
    """A configuration file that cannot be used; the message names file, key and problem."""


def in_checkout(path: Path) -> str:
    """A path as a manifest records it: relative to the checkout when inside it, else as it is
    (a Spack build or a program a site keeps elsewhere, IOSTUDY_SPACK_BUILD)."""
    try:
        return str(Path(path).relative_to(REPO_ROOT))
    except ValueError:
        return str(path)


def configs_dir() -> Path:
    # An empty IOSTUDY_CONFIGS is unset, not the working directory.
    return Path(os.environ.get("IOSTUDY_CONFIGS") or DEFAULT_CONFIGS)


def _read_text(path: Path) -> str:
    """The UTF-8 text of the regular file at path, at most MAX_CONFIG_BYTES (safeio: a FIFO or
    a device in a file's place is refused instead of waited on)."""
    try:
        data = safeio.read_regular(path, MAX_CONFIG_BYTES)
    except OSError as exc:
        if exc.errno == errno.EFBIG:
            limit = MAX_CONFIG_BYTES >> 10
            raise ConfigError(f"{path}: larger than {limit} KiB: not a config file") from None
        if exc.errno == errno.EINVAL:  # safeio: a FIFO, a device, a folder
            raise ConfigError(f"{path}: not a regular file") from None
        raise ConfigError(f"{path}: cannot read: {exc.strerror}") from None
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        line = data.count(b"\n", 0, exc.start) + 1
        raise ConfigError(
            f"{path}: line {line}: not UTF-8 text (byte 0x{data[exc.start]:02x} "
            f"at offset {exc.start})"
        ) from None


def _parse(path: Path) -> object:
    """The JSON value of the file at path; any problem a ConfigError naming file and place."""
    text = _read_text(path)
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(
            f"{path}: line {exc.lineno} column {exc.colno}: not valid JSON: {exc.msg}"
        ) from None
    except RecursionError:
        raise ConfigError(f"{path}: nested too deeply to be a config file") from None


def _schema(kind: str) -> dict:
    path = configs_dir() / "schemas" / f"{kind}.schema.json"
    try:
        return _parse(path)
    except ConfigError as exc:
        raise ConfigError(f"cannot read the {kind} schema: {exc}") from None


def _is_int(_checker, value) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


# "integer" is a JSON integer (4), not a number with no fraction (4.0, 1e9) as the draft allows:
# the values are used as Python ints (counts, ranges).
_Validator = jsonschema.validators.extend(
    jsonschema.Draft202012Validator,
    type_checker=jsonschema.Draft202012Validator.TYPE_CHECKER.redefine("integer", _is_int),
)


def _key_path(error: jsonschema.ValidationError) -> str:
    parts = [str(p) if isinstance(p, str) else f"[{p}]" for p in error.absolute_path]
    return ".".join(parts).replace(".[", "[") or "(top level)"


def _fill_defaults(schema: dict, data):
    """Fills in the schema's ``default`` values for missing object properties, recursively."""
    if isinstance(data, dict):
        for key, sub in schema.get("properties", {}).items():
            if key not in data and "default" in sub:
                data[key] = sub["default"]
            if key in data:
                _fill_defaults(sub, data[key])
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for key in data.keys() - schema.get("properties", {}).keys():
                _fill_defaults(extra, data[key])
    elif isinstance(data, list) and isinstance(schema.get("items"), dict):
        for item in data:
            _fill_defaults(schema["items"], item)
    return data


def load(path: Path, kind: str) -> dict:
    """Reads and validates one configuration file of kind (the schema's name)."""
    path = Path(path)
    return validate(path, _parse(path), kind)


def validate(path: Path, data, kind: str):
    """Validates data read from path against the schema of kind and fills in its defaults;
    the first problem is raised as a ConfigError naming file and key."""
    schema = _schema(kind)
    validator = _Validator(schema)
    try:
        errors = sorted(validator.iter_errors(data), key=lambda e: list(e.absolute_path))
    except RecursionError:  # data nested deeper than the schema walks: no config is
        raise ConfigError(f"{path}: nested too deeply to be a config file") from None
    if errors:
        first = errors[0]
        more = f" (and {len(errors) - 1} more problems)" if len(errors) > 1 else ""
        raise ConfigError(f"{path}: {_key_path(first)}: {first.message}{more}")
    return _fill_defaults(schema, data)


def system_path(name: str) -> Path:
    return configs_dir() / "systems" / name / "system.json"


def system_names() -> list[str]:
    return sorted(p.parent.name for p in (configs_dir() / "systems").glob("*/system.json"))


def load_system(name: str) -> dict:
    """The validated description of system name (configs/systems/<name>/system.json)."""
    # A name is one folder: not empty (configs/systems/system.json), no path, not '..'.
    if not isinstance(name, str) or name in ("", ".", "..") or "/" in name or "\0" in name:
        raise ConfigError(
            f"system name {name!r}: not a system (the name of a folder of "
            f"{configs_dir() / 'systems'})"
        )
    path = system_path(name)
    if not path.exists():
        known = ", ".join(system_names()) or "none"
        raise ConfigError(f"{path}: no such system '{name}' (known: {known})")
    system = load(path, "system")
    if system["name"] != name:
        raise ConfigError(f"{path}: name: '{system['name']}' differs from its folder '{name}'")
    _check_targets(path, system)
    return with_availability(system)


def with_availability(system: dict, environ=None) -> dict:
    """The system with each storage entry whose ``unavailable_env`` variable is set (to why) in
    environ (default: this process's) marked ``unavailable``, and unmarked where it is not: the
    test cluster's GlusterFS volume where cluster-up could not serve it (env.sh exports the
    reason). scratch_storage then passes it over, and a run's manifest (its effective system)
    says why."""
    environ = os.environ if environ is None else environ
    for entry in system.get("storage") or []:
        if "unavailable_env" not in entry:
            continue
        why = environ.get(entry["unavailable_env"])
        if why:
            entry["unavailable"] = why
        else:
            entry.pop("unavailable", None)
    return system


def _check_targets(path: Path, system: dict) -> None:
    """Storage target names are unique across the system, each node and server one of its
    nodes."""
    seen, nodes = set(), node_names(system)
    for i, entry in enumerate(system.get("storage") or []):
        for server in entry.get("servers") or []:
            if server not in nodes:
                raise ConfigError(
                    f"{path}: storage[{i}].servers: {server!r} is not one of the system's "
                    f"nodes ({', '.join(nodes)})"
                )
        for k, target in enumerate(entry.get("targets") or []):
            where = f"{path}: storage[{i}].targets[{k}]"
            if target["name"] in seen:
                raise ConfigError(f"{where}.name: {target['name']!r} names another target too")
            seen.add(target["name"])
            if "node" in target and target["node"] not in nodes:
                raise ConfigError(
                    f"{where}.node: {target['node']!r} is not one of the "
                    f"system's nodes ({', '.join(nodes)})"
                )


def scratch_storage(system: dict) -> dict:
    """The storage entry campaigns write to: of those not ``unavailable`` (with_availability),
    the one marked ``scratch``, else the one named scratch, else the first; <run>/scratch when
    the system lists none."""
    listed = system.get("storage") or [{"name": "scratch", "path": "scratch"}]
    storage = [s for s in listed if not s.get("unavailable")] or listed
    marked = [s for s in storage if s.get("scratch")]
    named = [s for s in storage if s["name"] == "scratch"]
    return (marked or named or storage)[0]


def storage_targets(system: dict) -> list[dict]:
    """The devices a system lists behind its storage (each storage entry's ``targets``), in
    order: each {name, path, node?}."""
    return [t for entry in system.get("storage") or [] for t in entry.get("targets") or []]


_LEADING_VARIABLE = re.compile(r"^\$(?:\{([A-Za-z_][A-Za-z0-9_]*)\}|([A-Za-z_][A-Za-z0-9_]*))")


def storage_path(text: str, run_dir: Path) -> Path:
    """A storage path of a system description: absolute; beginning with $NAME or ${NAME}, an
    environment variable (a facility's $SCRATCH; the test cluster's state directory), which
    must be set; else relative to the run directory."""
    found = _LEADING_VARIABLE.match(text)
    if found:
        name = found.group(1) or found.group(2)
        value = os.environ.get(name)
        if not value:
            raise ConfigError(f"storage path {text!r}: the environment variable {name} is not set")
        text = value + text[found.end() :]
    return Path(run_dir) / text  # an absolute path stays as it is


# What the node's kernel reports (`findmnt -n -o FSTYPE -T PATH`) for a folder of a storage
# entry of each distributed fs_type: a folder that reports anything else is not on that storage
# (a mount missing on the node: the job would write to the disk under the mount point). Other
# fs_types (local, or unknown here) are not checked.
MOUNT_TYPES = {
    "glusterfs": ("fuse.glusterfs",),
    "lustre": ("lustre",),
    "gpfs": ("gpfs",),
    "nfs": ("nfs", "nfs4"),
    "beegfs": ("beegfs",),
    "cephfs": ("ceph", "fuse.ceph-fuse"),
}


def node_names(system: dict) -> list[str]:
    """Slurm node names of a system: <prefix>1 .. <prefix>N."""
    nodes = system["nodes"]
    return [f"{nodes['name_prefix']}{i}" for i in range(1, nodes["count"] + 1)]


def default_partition(system: dict) -> dict:
    partitions = system["partitions"]
    return next((p for p in partitions if p["default"]), partitions[0])


def _named_file(folder: str, name_or_path: str) -> Path:
    """configs/<folder>/<name>.json, or the file itself when given a path (a .json name, or one
    with a folder in it: a campaign kept outside configs/)."""
    given = Path(name_or_path)
    if given.suffix == ".json" or len(given.parts) > 1:
        return given
    return configs_dir() / folder / f"{name_or_path}.json"


def campaign_names() -> list[str]:
    return sorted(p.stem for p in (configs_dir() / "campaigns").glob("*.json"))


def campaign_path(name_or_path: str) -> Path:
    return _named_file("campaigns", name_or_path)


def load_campaign(name_or_path: str) -> dict:
    """The validated campaign name (configs/campaigns/<name>.json) or the campaign file at a
    path, with the defaults of its checks' parameters filled in from the schema."""
    path = campaign_path(name_or_path)
    if not path.exists():
        known = ", ".join(campaign_names()) or "none"
        raise ConfigError(f"{path}: no such campaign '{name_or_path}' (known: {known})")
    campaign = load(path, "campaign")
    if campaign["name"] != path.stem:
        raise ConfigError(f"{path}: name: '{campaign['name']}' differs from the file's name")
    # The parameters' schema hangs off an if/then per check, which load() does not walk: fill
    # their defaults here, still from the schema alone.
    defs = _schema("campaign").get("$defs", {})
    seen = set()
    for i, entry in enumerate(campaign["checks"]):
        if entry["check"] in seen:
            raise ConfigError(
                f"{path}: checks[{i}].check: '{entry['check']}' appears more than once "
                "(give a parameter a list of values to scan it instead)"
            )
        seen.add(entry["check"])
        _fill_defaults(defs.get(f"{entry['check']}_parameters", {}), entry["parameters"])
    return campaign


def references_path(system: str) -> Path:
    return configs_dir() / "references" / f"{system}.json"


def load_references(system: str) -> dict:
    """The validated performance references of system (configs/references/<system>.json).

    A system without the file has no references: its checks are measured, never failed on
    performance. The result has the file's layout, {"system", "description", "checks"}.
    """
    path = references_path(system)
    if not path.exists():
        return {"system": system, "description": f"no references ({path} is missing)", "checks": {}}
    refs = load(path, "references")
    if refs["system"] != system:
        raise ConfigError(f"{path}: system: '{refs['system']}' differs from the file's name")
    return refs
