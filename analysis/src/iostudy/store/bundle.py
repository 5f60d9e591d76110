"""Portable result bundles: a site's results handed to another site.

``iostudy export --store STORE --out BUNDLE.tar [--site NAME] [--anonymize]`` writes one tar
file holding this store's own runs (never the runs it imported from other sites):

    bundle.json                  format, site, creation time, iostudy version and commit, the
                                 runs and systems, the files of each table, what is missing
    tables/<table>/<file>        the store's Parquet files, as they are (or anonymized)
    manifests/<run id>.json      each run's manifest: spack.lock hash, tool and benchmark
                                 versions, effective config, command lines
    systems/<system>.json        each system's description (its latest run's effective config)
    SHA256SUMS                   the sha256 of every other member
    SIGNATURE                    the site, its public key and its Ed25519 signature of
                                 SHA256SUMS (iostudy.store.siteid)

The bundle's id is the sha256 of its SHA256SUMS. The tar is written in the plain ustar format
(no pax headers), with zeroed times and owners, so that every byte of it is checked on import:
member contents by SHA256SUMS, headers by their tar checksums, and the padding and the end of
the archive must be zeros. A bundle with any byte changed is rejected.

``iostudy import BUNDLE --store STORE`` adds another site's bundle, once all of it is checked:
its bytes, its signature by the key the store trusts for the site (``iostudy trust add``, or
``--trust-on-first-use``), and what iostudy.store.bundlecheck checks; nothing is written before.
Identities stay apart: the rows keep their system names and get the bundle's site (runs.site),
and run ids become ``<site>:<run id>`` in every table, so that two sites' runs never merge even
when their ids or system names are equal. Files go to ``STORE/<table>/<site>:<file>``, manifests
and systems to ``STORE/sites/<site>/``, and the import is recorded in
``STORE/imports/<bundle id>.json``: the same bundle imported again changes nothing. A later
bundle of the same site adds its new runs; one that would change a part imported before needs
``--replace``. A store's own site (``STORE/site.json``) is never imported into it. Slurm
accounting, iostat and fsstats tables travel in the bundle but
are not imported: they carry no run id to keep them apart from this store's own.
"""

from __future__ import annotations

import json
import os
import shutil
from datetime import datetime, timezone
from pathlib import Path

from iostudy.core import safeio
from iostudy.core.deferred import deferred
from iostudy.core.processes import private_dir
from iostudy.core.progress import QUIET, Progress
from iostudy.store import catalog, siteid
from iostudy.store import store as store_mod
from iostudy.store.bundle_file import NOT_IMPORTED, BundleError, Opened, open_bundle
from iostudy.store.bundlecheck import META
from iostudy.store.siteid import SiteError, fingerprint

pa = deferred("pyarrow")
pq = deferred("pyarrow.parquet")

WORK_PREFIX = "iostudy-import-"  # + pid-<random>: an import's folder in the temporary folder


def site_qualified(site: str, run_id: str) -> str:
    return f"{site}:{run_id}"


# -- import -------------------------------------------------------------------------------------


def _set(data: pa.Table, name: str, values: list) -> pa.Table:
    """data with column ``name`` (string) replaced by values, or added."""
    column = pa.array(values, pa.string())
    if name in data.column_names:
        return data.set_column(data.schema.get_field_index(name), name, column)
    return data.append_column(name, column)


def _qualified_table(data: pa.Table, table: str, site: str) -> pa.Table:
    """A bundle's table with run ids qualified by the site; runs also get the site and their
    manifests' place in this store."""
    if "run_id" not in data.column_names:
        return data
    ids = data["run_id"].to_pylist()
    qualified = _set(data, "run_id", [None if r is None else site_qualified(site, r) for r in ids])
    if table != "runs":
        return qualified
    paths = data["manifest_path"].to_pylist() if "manifest_path" in data.column_names else ids
    paths = [
        f"sites/{site}/manifests/{r}.json" if p else None for r, p in zip(ids, paths, strict=True)
    ]
    return _set(_set(qualified, "site", [site] * data.num_rows), "manifest_path", paths)


def _part(site: str, name: str) -> str:
    return site_qualified(site, name.removesuffix(".parquet"))


def _commit_tables(store: Path, opened: Opened, site: str) -> list[str]:
    """Puts the bundle's tables in the store in one commit (iostudy.store.catalog): all of them or,
    if anything fails, none; returns the parts ("<table>/<part name>")."""
    commit, written = catalog.Commit(store), []
    for (table, name), data in opened.tables.items():
        part = catalog.check_part_name(_part(site, name))
        tmp = store / table / f"{part}.parquet.tmp"
        tmp.parent.mkdir(parents=True, exist_ok=True)
        pq.write_table(_qualified_table(data, table, site), tmp)
        run_id = site_qualified(site, catalog.part_run(name.removesuffix(".parquet")))
        commit.put(table, part, tmp, run_id, data.num_rows)
        written.append(f"{table}/{part}")
    commit.apply()
    return written


def import_records(store: Path) -> list[dict]:
    """The store's import records in the order the imports were made: by their sequence number
    (records of before it: first, by import time). Never by file name: a record's name is its
    bundle's id, and a later import must win over an earlier one."""
    records = []
    for path in (store / "imports").glob("*.json"):
        try:
            data = json.loads(path.read_text())
            if not isinstance(data, dict):
                raise ValueError("not a JSON object")
        except (OSError, ValueError) as exc:
            raise BundleError(f"{path}: cannot read this store's import record: {exc}") from None
        records.append(data)
    return sorted(records, key=lambda r: (r.get("sequence", 0), str(r.get("imported"))))


def _previous_parts(store: Path, site: str) -> dict[str, str | None]:
    """{"<table>/<part>": the sha256 of the bundle member it came from (None: not recorded)}
    of the site's parts that earlier imports wrote, the latest import's where several did."""
    parts = {}
    for data in import_records(store):
        if data.get("site") == site:
            shas = data.get("parts") or {}
            parts |= {f.removesuffix(".parquet"): shas.get(f) for f in data.get("files", [])}
    return parts


def _replacements(store: Path, opened: Opened, site: str) -> list[str]:
    """What the bundle would replace of the site's data already in the store: each part whose
    content differs from what an earlier import wrote, with its rows before and after."""
    previous = _previous_parts(store, site)
    if not previous:
        return []
    live = catalog.load(store)
    changes = []
    for (table, name), data in opened.tables.items():
        key = f"{table}/{_part(site, name)}"
        if key in previous and previous[key] != opened.digests[f"tables/{table}/{name}"]:
            before = live.parts(table).get(_part(site, name))
            rows = "?" if before is None or before.rows is None else before.rows
            changes.append(f"{key}: {rows} rows -> {data.num_rows}")
    return changes


def _check_replacements(store: Path, opened: Opened, bundle, replace: bool) -> list[str]:
    """What the bundle changes of its site's data imported before (_replacements); BundleError
    when it changes any and ``replace`` is not given."""
    site = opened.meta["site"]
    changes = _replacements(store, opened, site)
    if changes and not replace:
        more = f"; and {len(changes) - 5} more" if len(changes) > 5 else ""
        raise BundleError(
            f"{bundle}: would replace data of site {site} imported before ("
            f"{'; '.join(changes[:5])}{more}): give --replace to replace it"
        )
    return changes


def _check_signer(store: Path, site: str, signer: bytes, trust_new: bool) -> bool:
    """Whether the signer is a key to trust now (first use); BundleError when the store trusts
    another key for the site, or none and trust_new is not given."""
    known = siteid.trusted(store, site)
    if known == signer:
        return False
    if known is not None:
        raise BundleError(
            f"site {site} is trusted with key {fingerprint(known)}; this bundle is signed by "
            f"{fingerprint(signer)}: refused"
        )
    if not trust_new:
        raise BundleError(
            f"site {site} is not trusted (bundle signed by {fingerprint(signer)}): add the key "
            f"the site gives you (`iostudy trust own` there) with `iostudy trust add {site} "
            "FILE`, or import with --trust-on-first-use"
        )
    return True


def import_bundle(
    bundle, store, progress: Progress = QUIET, trust_new=False, replace=False
) -> dict:
    """Add the bundle to the store; returns {site, id, key, runs, files, skipped: bool}. Nothing
    is written, in the store or beside it, until the whole bundle is checked; the bundle is
    extracted into a folder of this process in the temporary folder, removed at the end (or,
    when the import is killed, by the next import)."""
    store = Path(store)
    work = private_dir(WORK_PREFIX)  # a killed import's folder goes at the next
    try:
        return _import_checked(bundle, store, work, progress, trust_new, replace)
    finally:
        shutil.rmtree(work, ignore_errors=True)


def _import_checked(bundle, store: Path, work: Path, progress, trust_new, replace) -> dict:
    """import_bundle, the bundle extracted into ``work``."""
    with safeio.space_in(work):
        opened = open_bundle(bundle, work)
    site, bundle_id = opened.meta["site"], opened.id
    summary = {
        "site": site,
        "id": bundle_id,
        "key": fingerprint(opened.signer),
        "runs": len(opened.meta["runs"]),
        "files": 0,
    }
    if (store / "imports" / f"{bundle_id}.json").is_file():
        return summary | {"skipped": True}
    first_use = _admitted(store, opened, bundle, trust_new, replace)
    store.mkdir(parents=True, exist_ok=True)
    with safeio.space_in(store), store_mod.Store(store).locked(progress):
        # again under the lock: an import made meanwhile is one this bundle may replace
        for change in _check_replacements(store, opened, bundle, replace):
            progress.note(f"replacing {change}")
        if first_use:
            siteid.trust(store, site, opened.signer)
        # the site's files first: without its tables no report looks at them, so the commit
        # of the tables makes the whole import visible at once
        _place_site_files(store, work, site, bundle_id)
        written = _commit_tables(store, opened, site)
        _record_import(store, opened, written)
        store_mod.Store(store).refresh_views(progress)
    if skipped := [t for t in NOT_IMPORTED if opened.meta["tables"].get(t)]:
        progress.note(
            f"kept in the bundle, not imported: {', '.join(skipped)} "
            "(no run id to keep them apart from this store's own)"
        )
    return summary | {"files": len(written), "skipped": False, "trusted_now": first_use}


def _admitted(store: Path, opened: Opened, bundle, trust_new: bool, replace: bool) -> bool:
    """Whether the bundle's signer is to be trusted now (first use), once the bundle may come
    in: not of this store's own site, signed by the key trusted for its site, replacing
    nothing imported before unless ``replace``. Nothing is written."""
    site = opened.meta["site"]
    try:
        if siteid.recorded_site(store) == site:
            raise BundleError(f"{bundle}: site {site!r} is this store's own site")
        first_use = _check_signer(store, site, opened.signer, trust_new)
    except SiteError as exc:
        raise BundleError(str(exc)) from None
    _check_replacements(store, opened, bundle, replace)
    return first_use


def _place_site_files(store: Path, work: Path, site: str, bundle_id: str) -> None:
    """The bundle's manifests, system descriptions and bundle.json into STORE/sites/<site>/."""
    site_dir = store / "sites" / site
    for folder in ("manifests", "systems"):
        for source in sorted((work / folder).glob("*.json")):
            target = site_dir / folder / source.name
            target.parent.mkdir(parents=True, exist_ok=True)
            tmp = target.with_name(f".{target.name}.tmp")
            shutil.copyfile(source, tmp)
            os.replace(tmp, target)
    site_dir.mkdir(parents=True, exist_ok=True)  # a bundle of log trees has no manifest
    shutil.copyfile(work / META, site_dir / f"bundle-{bundle_id[:16]}.json")


def _record_import(store: Path, opened: Opened, written: list[str]) -> None:
    """STORE/imports/<bundle id>.json, last: an interrupted import is done again in full."""
    record = store / "imports" / f"{opened.id}.json"
    site = opened.meta["site"]
    parts = {f"{t}/{_part(site, n)}": opened.digests[f"tables/{t}/{n}"] for t, n in opened.tables}
    record.parent.mkdir(exist_ok=True)
    sequence = max((r.get("sequence", 0) for r in import_records(store)), default=0) + 1
    text = json.dumps(
        {
            "site": site,
            "id": opened.id,
            "key": fingerprint(opened.signer),
            "files": written,
            "parts": parts,
            "imported": datetime.now(timezone.utc).isoformat(timespec="microseconds"),
            "sequence": sequence,
            "created": opened.meta.get("created"),
        },
        indent=2,
    )
    tmp = record.with_name(f".{record.name}.tmp")
    tmp.write_text(text + "\n")
    os.replace(tmp, record)
