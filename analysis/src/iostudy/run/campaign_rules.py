"""What makes a campaign runnable on a system, checked before anything starts: the process
counts and their placement against the system's nodes and cores, the excluded combinations
against the scan, the storage targets against the system's, the I/O-model benchmark's
constraints. `iostudy campaign run` and `iostudy campaign check` refuse a campaign that fails
here with a CampaignError naming the campaign, the check's entry and the value."""

from __future__ import annotations

import itertools

from iostudy.benchmarks import checks, probe
from iostudy.core import checknames
from iostudy.core.errors import BadInput
from iostudy.core.nodecount import nodes_for
from iostudy.core.reframe_names import param_text
from iostudy.run.runsystem import RunSystem


class CampaignError(BadInput):
    """A campaign that cannot run on a system, or a missing piece; the message says what to do."""


def values(value) -> list:
    return value if isinstance(value, list) else [value]


def system_procs(system: dict) -> int:
    """What "max_procs": "system" means: every core of every node, so no rank waits for a core."""
    return system["nodes"]["count"] * system["nodes"]["cores_per_node"]


def resolve_max_procs(value, system: dict):
    """A process count of the campaign: "system" (alone or in a list) is system_procs, and
    "scaling" the doubling counts 1, 2, 4, ... up to it (and it). A list keeps each count once
    ([2, "system"] on a 2-core system is one test case)."""
    if isinstance(value, list):
        counts = (v for item in value for v in values(resolve_max_procs(item, system)))
        return list(dict.fromkeys(counts))
    if value == "scaling":
        top = system_procs(system)
        counts = [1 << k for k in range(top.bit_length()) if 1 << k < top]
        return [*counts, top]
    return system_procs(system) if value == "system" else value


def resolve_storage_target(value, system: RunSystem):
    """What fio_check's "storage_target": "each" means: every target the system lists (its
    storage entries' targets), else its scratch storage alone."""
    if value != "each":
        return value
    return list(system.storage_targets) or "scratch"


def validate(campaign: dict, system: RunSystem) -> None:
    """Refuses parameter combinations that cannot run on the system, before anything starts."""
    description = system.description
    cores = description["nodes"]["cores_per_node"]
    for i, entry in enumerate(campaign["checks"]):
        if entry.get("exclude") and not checknames.CHECKS[entry["check"]].excludable:
            excludable = sorted(name for name, c in checknames.CHECKS.items() if c.excludable)
            raise CampaignError(
                f"campaign {campaign['name']}: checks[{i}].exclude: {entry['check']} has no "
                f"exclusions (checks that have: {', '.join(excludable)})"
            )
        if "procs" in entry["parameters"]:
            validate_procs(campaign, description, i, entry["parameters"])
        if entry["check"] == checknames.PROBE.name:  # its processes: writers per target x targets
            params = entry["parameters"]
            targets = probe.storage_targets(description)
            per_target = values(params.get("writers_per_target", 1))
            procs = [probe.writers(targets, w) for w in per_target]
            validate_procs(campaign, description, i, {**params, "procs": procs})
        validate_excludes(campaign, i, entry)
        validate_storage_target(campaign, system, i, entry["parameters"])
        if entry["check"] != checknames.IOMODEL.name:
            continue
        params = entry["parameters"]
        max_procs = resolve_max_procs(params["max_procs"], description)
        for size, procs, per_node in itertools.product(
            values(params["size"]), values(max_procs), values(params["procs_per_node"])
        ):
            per_node = min(cores, procs) if per_node == "system" else per_node
            where = f"campaign {campaign['name']}: checks[{i}].parameters"
            problem = checks.iomodel_problem(checks.parse_size(size), procs, per_node)
            if problem:
                raise CampaignError(f"{where}: {problem}")
            if (
                description["scheduler"] != "local"
                and procs // per_node > description["nodes"]["count"]
            ):
                raise CampaignError(
                    f"{where}: max_procs {procs} at {per_node} per node needs "
                    f"{procs // per_node} nodes, system {system.name} has "
                    f"{description['nodes']['count']}"
                )


def validate_excludes(campaign: dict, i: int, entry: dict) -> None:
    """Each excluded combination names scanned parameters of the check and values they take."""
    for k, exclude in enumerate(entry.get("exclude") or []):
        where = f"campaign {campaign['name']}: checks[{i}].exclude[{k}]"
        for name, value in exclude["parameters"].items():
            scanned = entry["parameters"].get(name)
            if not isinstance(scanned, list):
                raise CampaignError(
                    f"{where}: {name} is not a scanned parameter of {entry['check']} "
                    "(only a parameter given as a list has combinations to leave out)"
                )
            if param_text(value) not in map(param_text, scanned):
                raise CampaignError(
                    f"{where}: {name}={param_text(value)} is not one of its values "
                    f"({', '.join(map(param_text, scanned))})"
                )
            if any(c in param_text(value) for c in ",&="):
                raise CampaignError(
                    f"{where}: {name}={param_text(value)}: no ',', '&' or '=' in it"
                )


def validate_storage_target(campaign: dict, system: RunSystem, i: int, params: dict) -> None:
    """A storage target a check names is one the system lists."""
    listed = system.storage_targets
    for name in values(params.get("storage_target", "scratch")):
        if name not in ("scratch", "each", *listed):
            raise CampaignError(
                f"campaign {campaign['name']}: checks[{i}].parameters.storage_target: {name!r} "
                f"is not a storage target of system {system.name} (its targets: "
                f"{', '.join(listed) or 'none'}; or scratch, or each)"
            )


def validate_procs(campaign: dict, system: dict, i: int, params: dict) -> None:
    """A check's process counts fit the system's nodes."""
    where = f"campaign {campaign['name']}: checks[{i}].parameters"
    if system["scheduler"] == "local":
        return
    cores, nodes = system["nodes"]["cores_per_node"], system["nodes"]["count"]
    per_node = params.get("procs_per_node", "system")
    if per_node != "system" and per_node > cores:
        raise CampaignError(
            f"{where}: procs_per_node {per_node} exceeds the {cores} cores per node of system "
            f"{system['name']} (the scheduler would keep the job pending for ever)"
        )
    for procs in values(resolve_max_procs(params["procs"], system)):
        used = min(cores, procs) if per_node == "system" else per_node
        if (needed := nodes_for(procs, used)) > nodes:
            raise CampaignError(
                f"{where}: procs {procs} at {used} per node needs {needed} nodes, "
                f"system {system['name']} has {nodes}"
            )
