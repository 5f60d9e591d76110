"""What a bundle must be before anything of it is written: a bundle comes from another site, and
is treated as hostile until every part of it is checked.

- :func:`member_kind`: a member's name has one of the bundle's shapes (``bundle.json``,
  ``SHA256SUMS``, ``SIGNATURE``, ``tables/<table>/<part>.parquet``, ``manifests/<run>.json``,
  ``systems/<system>.json``), each name one the store can use as a file name;
- :func:`check_meta`: ``bundle.json`` against its schema (every field, its type and its names);
- :func:`check_listing`: the members are exactly what ``bundle.json`` lists;
- :func:`check_tables`: each table file is Parquet with the store's columns and types (an
  anonymized bundle's pseudonymized columns are strings), run ids of the bundle's runs only, and
  values within :func:`iostudy.logs.storerule.table_problems`' bounds.

Each raises :class:`BundleInvalid` naming the member or field and the problem.
"""

from __future__ import annotations

import re

import jsonschema

from iostudy.core.anonymize import COLUMNS as ANONYMIZED_COLUMNS
from iostudy.core.deferred import deferred
from iostudy.logs.storerule import table_problems
from iostudy.store.catalog import PART_NAME, CatalogError, check_part_name
from iostudy.store.siteid import SITE_NAME
from iostudy.store.store import IMPORTED_TABLES, LOCAL_COLUMNS, TABLES

pa = deferred("pyarrow")
pq = deferred("pyarrow.parquet")

FORMAT = "iostudy-bundle/2"
META = "bundle.json"
SUMS = "SHA256SUMS"
SIGNATURE = "SIGNATURE"
# A part, run or system name: what the store's catalog accepts as a file name (no "..").
NAME = PART_NAME.pattern
SYSTEM_NAME = r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,99}$"
MAX_RUNS = 100_000
MAX_PARTS = 1_000_000

_MEMBER = re.compile(
    r"^(?:(?P<top>bundle\.json|SHA256SUMS|SIGNATURE)"
    rf"|tables/(?P<table>{'|'.join(map(re.escape, TABLES))})/(?P<part>[^/]+)\.parquet"
    r"|manifests/(?P<run>[^/]+)\.json"
    r"|systems/(?P<system>[^/]+)\.json)$"
)

_STRING_OR_NULL = {"type": ["string", "null"], "maxLength": 4096}
META_SCHEMA = {
    "type": "object",
    "required": ["format", "site", "created", "runs", "tables"],
    "additionalProperties": False,
    "properties": {
        "format": {"const": FORMAT},
        "site": {"type": "string", "pattern": SITE_NAME.pattern},
        "created": {"type": "string", "maxLength": 64},
        "iostudy": {
            "type": "object",
            "additionalProperties": False,
            "properties": {
                "version": _STRING_OR_NULL,
                "git_commit": _STRING_OR_NULL,
                "git_dirty": {"type": ["boolean", "null"]},
            },
        },
        "anonymized": _STRING_OR_NULL,
        "runs": {
            "type": "array",
            "maxItems": MAX_RUNS,
            "items": {
                "type": "object",
                "required": ["run_id"],
                "additionalProperties": False,
                "properties": {
                    "run_id": {"type": "string", "pattern": NAME, "not": {"pattern": r"\.\."}},
                    "system": {"type": ["string", "null"], "pattern": SYSTEM_NAME},
                    "started": _STRING_OR_NULL,
                },
            },
        },
        "systems": {"type": "array", "items": {"type": "string", "pattern": SYSTEM_NAME}},
        "tables": {
            "type": "object",
            "propertyNames": {"enum": list(TABLES)},
            "additionalProperties": {
                "type": "array",
                "maxItems": MAX_PARTS,
                "items": {"type": "string", "pattern": r"^[^/]+\.parquet$"},
            },
        },
        "missing_manifests": {"type": "object", "additionalProperties": _STRING_OR_NULL},
        "not_imported_tables": {"type": "array", "items": {"type": "string", "maxLength": 64}},
    },
}


class BundleInvalid(Exception):
    """A bundle that is not what iostudy writes; the message names the member or field."""


def _usable(name: str, what: str) -> str:
    """name, when the store's catalog can use it as a file name (catalog.check_part_name)."""
    try:
        return check_part_name(name)
    except CatalogError as exc:
        raise BundleInvalid(f"{what} {exc}") from None


def member_kind(name: str) -> tuple[str, tuple]:
    """("top", ()), ("table", (table, part)), ("manifest", (run,)) or ("system", (system,)) of
    a member's name; BundleInvalid when it is not one a bundle holds."""
    match = _MEMBER.match(name)
    if not match:
        raise BundleInvalid(f"member {name!r}: not a member of an iostudy bundle")
    if match["top"]:
        return "top", ()
    if match["table"]:
        return "table", (match["table"], _usable(match["part"], f"member {name!r}: part"))
    if match["run"]:
        return "manifest", (_usable(match["run"], f"member {name!r}: run"),)
    if not re.match(SYSTEM_NAME, match["system"]):
        raise BundleInvalid(f"member {name!r}: {match['system']!r} is not a system name")
    return "system", (match["system"],)


def check_meta(meta) -> dict:
    """``bundle.json``, parsed, against META_SCHEMA (and the part names it lists)."""
    error = jsonschema.exceptions.best_match(
        jsonschema.Draft202012Validator(META_SCHEMA).iter_errors(meta)
    )
    if error is not None:
        where = error.json_path.replace("$", META, 1)
        raise BundleInvalid(f"{where}: {error.message}")
    for table, names in meta["tables"].items():
        for name in names:
            _usable(name.removesuffix(".parquet"), f"{META} tables.{table}: part")
    runs = [r["run_id"] for r in meta["runs"]]
    if len(set(runs)) != len(runs):
        raise BundleInvalid(f"{META} runs: a run id is listed twice")
    return meta


def check_listing(meta: dict, members: list[str]) -> None:
    """The members are what bundle.json lists: each listed table file, manifests of its runs
    only, descriptions of its systems only."""
    listed = {f"tables/{t}/{name}" for t, names in meta["tables"].items() for name in names}
    runs, systems = {r["run_id"] for r in meta["runs"]}, set(meta.get("systems", []))
    for name in members:
        kind, parts = member_kind(name)
        if kind == "table" and name not in listed:
            raise BundleInvalid(f"member {name}: a table file {META} does not list")
        if kind == "manifest" and parts[0] not in runs:
            raise BundleInvalid(f"member {name}: the manifest of a run {META} does not list")
        if kind == "system" and parts[0] not in systems:
            raise BundleInvalid(f"member {name}: a system {META} does not list")
    for name in sorted(listed - set(members)):
        raise BundleInvalid(f"{META} lists {name}, which the bundle does not hold")


def check_tables(meta: dict, folder) -> dict[tuple[str, str], pa.Table]:
    """{(table, part file name): its rows} of the bundle extracted in ``folder``, every one
    checked (see the module docstring). Tables that are not imported are not read."""
    runs = {r["run_id"] for r in meta["runs"]}
    anonymized = bool(meta.get("anonymized"))
    checked = {}
    for table, names in meta["tables"].items():
        if table in IMPORTED_TABLES:
            continue
        for name in names:
            member = f"tables/{table}/{name}"
            try:
                data = pq.read_table(folder / member)
            except (OSError, pa.ArrowException) as exc:
                raise BundleInvalid(f"member {member}: not a Parquet table: {exc}") from None
            _check_columns(member, table, data.schema, anonymized)
            _check_runs(member, data, runs)
            if problems := table_problems(table, data):
                raise BundleInvalid(f"member {member}: implausible values: {'; '.join(problems)}")
            checked[table, name] = data
    return checked


def _check_columns(member: str, table: str, schema: pa.Schema, anonymized: bool) -> None:
    """Every column is one of the store's table but its local ones, of its type (a bundle of an
    older iostudy may lack newer columns: they read as null)."""
    expected = TABLES[table]
    for field in schema:
        if field.name not in expected.names:
            raise BundleInvalid(f"member {member}: column {field.name!r} is not one of {table}'s")
        if field.name in LOCAL_COLUMNS:  # it would send a job page to read this machine's files
            raise BundleInvalid(
                f"member {member}: column {field.name} names folders of the "
                "exporting machine; an export leaves it out"
            )
        want = expected.field(field.name).type
        pseudonym = anonymized and field.name in ANONYMIZED_COLUMNS and field.type == pa.string()
        if field.type != want and not pseudonym:
            raise BundleInvalid(
                f"member {member}: column {field.name} is {field.type}, the store's is {want}"
            )
    if "run_id" in expected.names and "run_id" not in schema.names:
        raise BundleInvalid(f"member {member}: no run_id column")


def _check_runs(member: str, data: pa.Table, runs: set) -> None:
    """Every row belongs to one of the bundle's runs."""
    if "run_id" not in data.column_names:
        return
    found = set(data["run_id"].unique().to_pylist())
    if stray := sorted(found - runs, key=str):
        raise BundleInvalid(f"member {member}: rows of run {stray[0]!r}, not a run of the bundle")
