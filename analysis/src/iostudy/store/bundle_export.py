"""``iostudy export``: a store's own runs written as a bundle (see :mod:`iostudy.store.bundle`).

What goes in: the runs this store ingested itself (never those it imported from other sites),
their Parquet parts (anonymized with ``--anonymize``), their manifests as ingested (a manifest
changed since is left out, and said), each system's description, and bundle.json listing it
all. How it is written and signed is :mod:`iostudy.store.bundle_file`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import shlex
import tarfile
from datetime import datetime, timezone
from pathlib import Path

from iostudy import __version__
from iostudy.core import config, provenance, safeio
from iostudy.core.anonymize import COLUMNS, AnonymizeError, Anonymizer
from iostudy.core.deferred import deferred
from iostudy.core.processes import clear_dead, own_name
from iostudy.core.progress import QUIET, Progress
from iostudy.store import catalog as catalog_mod
from iostudy.store import siteid
from iostudy.store import store as store_mod
from iostudy.store.bundle_file import NOT_IMPORTED, BundleError, add_member, signature_member
from iostudy.store.bundlecheck import FORMAT, META, SIGNATURE, SUMS
from iostudy.store.siteid import SiteError, fingerprint, own_site
from iostudy.store.umask import store_umask_applied

pa = deferred("pyarrow")
pq = deferred("pyarrow.parquet")

PARTIAL = ".iostudy-export-"  # + pid-<bundle name>: the bundle being written, beside it


def _anonymized_manifest(manifest: dict, anonymizer) -> dict:
    """A manifest without names: command lines and paths through the anonymizer."""
    out = json.loads(json.dumps(manifest))
    for key in ("command_line", "reframe_command_line"):
        if isinstance(out.get(key), list):
            out[key] = shlex.split(anonymizer.command(shlex.join(map(str, out[key]))))
    for key in ("results_dir", "run_dir"):
        if isinstance(out.get(key), str):
            out[key] = anonymizer.path(out[key])
    return out


def _anonymized_schema(schema: pa.Schema) -> pa.Schema:
    """schema with the columns the anonymizer rewrites as strings: their values become
    pseudonyms, also where the store keeps numbers (uid 1000 -> uid-3f9a0c21d4)."""
    for i, field in enumerate(schema):
        if field.name in COLUMNS:
            schema = schema.set(i, field.with_type(pa.string()))
    return schema


def _table_bytes(path: Path, anonymizer) -> bytes:
    local = [c for c in store_mod.LOCAL_COLUMNS if c in pq.read_schema(path).names]
    if anonymizer is None and not local:
        return path.read_bytes()
    table = pq.read_table(path).drop_columns(local)
    if anonymizer is not None:
        frame = anonymizer.frame(table.to_pandas())
        schema = _anonymized_schema(table.schema)
        table = pa.Table.from_pandas(frame, schema=schema, preserve_index=False)
    sink = io.BytesIO()
    pq.write_table(table, sink)
    return sink.getvalue()


def _site_and_key(store: Path, site):
    """The store's site (named now at its first export) and its signing key (made now at its
    first export)."""
    try:
        return own_site(store, site), siteid.own_key(store, create=True)
    except SiteError as exc:
        raise BundleError(str(exc)) from None


def _anonymizer(store: Path, anonymize: bool):
    if not anonymize:
        return None
    try:
        return Anonymizer.for_store(store)
    except AnonymizeError as exc:
        raise BundleError(str(exc)) from None


def _runs(store: Path, catalog) -> tuple[list[tuple], set[str]]:
    """(run id, system, started, manifest path, manifest sha256) of the store's own runs in
    ``catalog``, in time order (a log tree's manifest path is None), and the ids of the runs it
    imported from other sites."""
    con = store_mod.connect(store, catalog)
    try:
        frame = con.execute("SELECT * FROM runs ORDER BY started, run_id").df()
    finally:
        con.close()
    foreign = set(frame.loc[frame["site"].notna(), "run_id"])
    frame = frame[frame["site"].isna()].astype(object)
    frame = frame.where(frame.notna(), None)
    # a log tree has no manifest: its manifest_path is the tree's folder
    frame.loc[frame["status"] == store_mod.TREE_STATUS, "manifest_path"] = None
    runs = [
        (r.run_id, r.system, r.started, r.manifest_path, r.manifest_sha256)
        for r in frame.itertuples()
    ]
    if not runs:
        raise BundleError(f"store {store}: no runs of its own to export")
    return runs, foreign


def _manifests(runs: list[tuple], results: Path) -> tuple[dict, dict, dict]:
    """(run id -> its manifest, system -> its description from its latest run's manifest,
    run id -> why its manifest is left out)."""
    manifests, systems, missing = {}, {}, {}
    for run_id, system, _, manifest_path, manifest_sha in runs:
        if not manifest_path:
            continue
        path = results / manifest_path
        if not path.is_file():
            missing[run_id] = f"{path}: not found (give the run directories' folder: --results)"
        elif provenance.sha256_file(path) != manifest_sha:
            missing[run_id] = f"{path}: changed since it was ingested (sha256 differs)"
        else:
            manifests[run_id] = json.loads(path.read_text())
            effective = manifests[run_id].get("effective_config") or {}
            if isinstance(effective.get("system"), dict):
                systems[system] = effective["system"]  # runs are in time order: the latest
    return manifests, systems, missing


def _add_configured_systems(runs: list[tuple], systems: dict) -> None:
    """The description in configs/systems/ of each system of the runs that no manifest gave."""
    # a log tree ingested without --system has no system, hence no description
    for system in {r[1] for r in runs if r[1]} - systems.keys():
        try:
            systems[system] = config.load_system(system)
        except config.ConfigError:
            pass


def _meta(
    site: str, anonymizer, runs: list[tuple], systems: dict, tables: dict, missing: dict
) -> dict:
    """bundle.json."""
    commit, dirty = provenance.git_state()
    return {
        "format": FORMAT,
        "site": site,
        "created": datetime.now(timezone.utc).isoformat(timespec="seconds"),
        "iostudy": {"version": __version__, "git_commit": commit, "git_dirty": dirty},
        "anonymized": anonymizer.key_id() if anonymizer else None,
        "runs": [
            {"run_id": r[0], "system": r[1], "started": None if r[2] is None else str(r[2])}
            for r in runs
        ],
        "systems": sorted(systems),
        "tables": tables,
        "missing_manifests": missing,
        "not_imported_tables": list(NOT_IMPORTED),
    }


def _add_members(
    tar, meta: dict, catalog, manifests: dict, systems: dict, anonymizer, sums: dict
) -> None:
    """bundle.json, the tables' parts, the manifests and the systems' descriptions."""
    add_member(tar, META, (json.dumps(meta, indent=2, default=str) + "\n").encode(), sums)
    for table, names in meta["tables"].items():
        for name in names:
            path = catalog.part_path(table, name.removesuffix(".parquet"))
            add_member(tar, f"tables/{table}/{name}", _table_bytes(path, anonymizer), sums)
    for run_id, manifest in manifests.items():
        if anonymizer:
            manifest = _anonymized_manifest(manifest, anonymizer)
        add_member(tar, f"manifests/{run_id}.json", json.dumps(manifest, indent=2).encode(), sums)
    for system, description in sorted(systems.items()):
        data = json.dumps(description, indent=2).encode()
        add_member(tar, f"systems/{system}.json", data, sums)


def _write(
    out: Path, meta: dict, catalog, manifests: dict, systems: dict, anonymizer, key
) -> bytes:
    """Writes the bundle to out (through a temporary file beside it); returns its
    SHA256SUMS."""
    out.parent.mkdir(parents=True, exist_ok=True)
    clear_dead(out.parent, PARTIAL)  # a killed export's
    tmp = out.with_name(own_name(PARTIAL) + out.name)
    sums: dict[str, str] = {}
    try:
        with tarfile.open(tmp, "w", format=tarfile.USTAR_FORMAT) as tar:
            _add_members(tar, meta, catalog, manifests, systems, anonymizer, sums)
            text = "".join(f"{digest}  {name}\n" for name, digest in sorted(sums.items()))
            add_member(tar, SUMS, text.encode(), None)
            add_member(tar, SIGNATURE, signature_member(key, meta["site"], text.encode()), None)
        os.replace(tmp, out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    return text.encode()


def export(
    store, out, site=None, results=None, anonymize=False, progress: Progress = QUIET
) -> dict:
    """Write the bundle of the store's own runs to ``out`` (refused if it exists); returns its
    bundle.json with the id. results: the folder of the run directories (default: the store's
    parent), where the manifests are. What is written is one committed generation of the store
    (catalog.snapshot), whatever an ingest commits meanwhile."""
    store, out = Path(store), Path(out)
    if not (store / "runs").is_dir():
        raise BundleError(f"store {store}: no runs (run `iostudy ingest` first)")
    if out.exists():
        raise BundleError(f"{out} exists: a bundle is never overwritten; give another --out")
    site, key = _site_and_key(store, site)
    results = Path(results) if results else store.parent
    anonymizer = _anonymizer(store, anonymize)
    try:
        with catalog_mod.snapshot(store) as catalog:
            meta = _export_generation(store, out, catalog, results, site, key, anonymizer, progress)
    except catalog_mod.CatalogError as exc:
        raise BundleError(str(exc)) from None
    meta["key"] = fingerprint(siteid.raw_public(key.public_key()))
    return meta


def _own_parts(catalog, table: str, foreign: set[str]) -> list[str]:
    """The file names in a bundle of the table's parts that are not of a run imported."""
    parts = sorted(catalog.parts(table).items())
    return [f"{name}.parquet" for name, part in parts if part.run_id not in foreign]


def _export_generation(store, out, catalog, results, site, key, anonymizer, progress) -> dict:
    """The bundle of the runs of one generation of the store (``catalog``) written to out;
    its bundle.json with the id."""
    runs, foreign = _runs(store, catalog)
    manifests, systems, missing = _manifests(runs, results)
    for run_id, reason in missing.items():
        progress.warn(f"manifest of {run_id} left out: {reason}")
    _add_configured_systems(runs, systems)
    tables = {table: _own_parts(catalog, table, foreign) for table in store_mod.TABLES}
    meta = _meta(site, anonymizer, runs, systems, tables, missing)
    with safeio.space_in(out.parent), store_umask_applied():
        sums = _write(out, meta, catalog, manifests, systems, anonymizer, key)
    meta["id"] = hashlib.sha256(sums).hexdigest()
    return meta
