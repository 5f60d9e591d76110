"""The campaign schema's check names, per-check parameters and $defs, made from the checks'
parameters (:mod:`iostudy.benchmarks.registry`) into configs/schemas/campaign.schema.json
(`iostudy campaign schema`); the rest of the schema is the file's own."""

from __future__ import annotations

import json
from pathlib import Path

from iostudy.benchmarks.params import SHARED_DEFS
from iostudy.benchmarks.registry import PARAMETERS, CheckParameters
from iostudy.core import config

SCHEMA_PATH = config.DEFAULT_CONFIGS / "schemas" / "campaign.schema.json"


def parameters_schema(check: CheckParameters) -> dict:
    """The schema of a campaign entry's parameters for check."""
    schema = {"description": check.description, "type": "object", "additionalProperties": False}
    required = [p.name for p in check.parameters if p.required]
    if required:
        schema["required"] = required
    schema["properties"] = {p.name: p.schema() for p in check.parameters}
    return {**schema, **check.schema_extra}


def campaign_schema(schema: dict) -> dict:
    """The campaign schema with what the registry says written in: the check names, the
    if/then that gives each check's parameters their schema, and the $defs."""
    entry = schema["properties"]["checks"]["items"]
    entry["properties"]["check"]["enum"] = sorted(PARAMETERS)
    entry["allOf"] = [
        {
            "if": {"properties": {"check": {"const": name}}},
            "then": {"properties": {"parameters": {"$ref": f"#/$defs/{name}_parameters"}}},
        }
        for name in PARAMETERS
    ]
    schema["$defs"] = {
        **SHARED_DEFS,
        **{f"{name}_parameters": parameters_schema(c) for name, c in PARAMETERS.items()},
    }
    return schema


def schema_text(path: Path = SCHEMA_PATH) -> str:
    """The campaign schema file's text as the registry makes it (the rest from the file)."""
    return json.dumps(campaign_schema(json.loads(Path(path).read_text())), indent=2) + "\n"
