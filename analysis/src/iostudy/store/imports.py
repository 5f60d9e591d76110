"""The store's imported tables (IMPORTED_TABLES: Slurm accounting, the storage servers'
collectors: iostudy.collect.sacct, iostatmon, fsstats) written: what is not a run, each import a
part of its own, committed under the store's lock."""

from __future__ import annotations

from datetime import datetime, timezone
from pathlib import Path

from iostudy.core.deferred import deferred
from iostudy.core.progress import QUIET, Progress
from iostudy.logs.logrows import utc_naive
from iostudy.store import catalog as catalog_mod
from iostudy.store.store import TABLES, Store

pa = deferred("pyarrow")
pq = deferred("pyarrow.parquet")


def import_parts(store_root, table: str, parts, progress: Progress = QUIET) -> str:
    """Writes each (name, rows) of parts with :func:`write_import` under the store's lock, all
    with one imported time, then refreshes the views; returns where the rows went (the part,
    or the table's folder and the number of parts), for the command's last line."""
    store = Store(store_root)
    imported = utc_naive(datetime.now(timezone.utc))
    with store.locked(progress):
        written = [write_import(store_root, name, rows, imported, table) for name, rows in parts]
        store.refresh_views(progress)
    return str(written[0]) if len(written) == 1 else f"{store.root / table} ({len(written)} parts)"


def write_import(store_root, name: str, rows: list[dict], imported: datetime, table: str) -> Path:
    """Commits rows as the part ``name`` of a table of IMPORTED_TABLES (an import of the same
    name replaces it), each with the imported time; returns the part's file. The caller holds
    the store's lock."""
    schema = TABLES[table]
    catalog_mod.check_part_name(name)
    folder = Path(store_root) / table
    folder.mkdir(parents=True, exist_ok=True)
    data = [{c: r.get(c) for c in schema.names} | {"imported": imported} for r in rows]
    tmp = folder / f"{name}.parquet.tmp"
    try:
        pq.write_table(pa.Table.from_pylist(data, schema), tmp)
        commit = catalog_mod.Commit(Path(store_root))
        commit.put(table, name, tmp, None, len(data))
        return commit.apply().part_path(table, name)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
