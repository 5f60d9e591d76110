"""What every ingest source writes with: a set of Parquet parts committed together, the counts
of an ingest, and paths relative to the folder of the run directories.

Apart from :mod:`iostudy.store.store` (the tables and their readers) because only ingest
writes this way: rows buffered and streamed into temporary files in large row groups, then
put in place by one catalog commit.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from iostudy.core.deferred import deferred
from iostudy.logs.logrows import Columns, Repeated, Strings
from iostudy.logs.storerule import table_problems
from iostudy.store import catalog as catalog_mod
from iostudy.store.store import RUN_TABLES, TABLES, IngestError, Store

np = deferred("numpy")
pa = deferred("pyarrow")
pc = deferred("pyarrow.compute")
pq = deferred("pyarrow.parquet")


@dataclass
class Counts:
    """What an ingest did: runs and logs ingested and skipped, logs quarantined and why."""

    runs_ingested: int = 0
    runs_skipped: int = 0
    dry_runs: list[str] = field(default_factory=list)  # run directories of dry runs, left out
    logs_ingested: int = 0
    logs_skipped: int = 0
    quarantined: int = 0
    problems: list[str] = field(default_factory=list)


def rel_path(path: Path, base: Path) -> str:
    """path as the tables store it: relative to base (the folder of the run directories), or
    as given when it is not below base."""
    try:
        return Path(path).resolve().relative_to(base.resolve()).as_posix()
    except ValueError:
        return Path(path).as_posix()


def quarantine(writer: PartWriter, counts: Counts, row: dict, shown) -> None:
    """A file into the quarantine table (``row``: its run_id, path as stored, sha256, reason,
    and size and mtime_ns when known), counted, and said by its path as ingest was given it
    (``shown``)."""
    writer.write("quarantine", [row])
    counts.quarantined += 1
    counts.problems.append(f"{shown}: {row['reason']}")


def _rows_table(name: str, rows: list[dict]) -> pa.Table:
    schema = TABLES[name]
    return pa.Table.from_pylist([{c: r.get(c) for c in schema.names} for r in rows], schema)


def _within_rule(table: str, data: pa.Table) -> pa.Table:
    """data, when its values are within the store's rule (storerule.table_problems, what
    another site's import checks). Its sources judged each row already (a log out of the rule
    is quarantined, a benchmark's line left out): a value out of it here is a bug of ingest,
    which stops rather than store what no other site could import."""
    if problems := table_problems(table, data):
        raise IngestError(f"ingest would store {table} values out of bounds: {'; '.join(problems)}")
    return data


def _columns_table(table: str, chunks: list[Columns]) -> pa.Table:
    """One pyarrow table from many Columns chunks; chunks with the same columns (e.g. one
    module's records) are joined column by column, and a column a chunk lacks is null."""
    schema = TABLES[table]
    groups: dict[tuple, list[Columns]] = {}
    for chunk in chunks:
        groups.setdefault(tuple(chunk.data), []).append(chunk)
    tables = []
    for keys, group in groups.items():
        n = sum(c.n for c in group)
        arrays = []
        for f in schema:
            if f.name not in keys:
                arrays.append(pa.nulls(n, f.type))
                continue
            parts = [c.data[f.name] for c in group]
            if isinstance(parts[0], Strings):  # taken as they are: no Python string per row
                arrays.append(
                    pa.chunked_array(
                        [
                            pa.StringArray.from_buffers(
                                len(p.offsets) - 1, pa.py_buffer(p.offsets), pa.py_buffer(p.data)
                            )
                            for p in parts
                        ],
                        f.type,
                    )
                )
            elif isinstance(parts[0], Repeated):
                values = pa.array([v for p in parts for v in p.values], f.type)
                arrays.append(_expanded(values, np.concatenate([p.counts for p in parts])))
            elif all(isinstance(p, np.ndarray) for p in parts):
                arrays.append(pa.array(np.concatenate(parts)).cast(f.type))
            else:  # lists with nulls (a batch's logs with quirks) beside arrays: typed as one
                values = [p.tolist() if isinstance(p, np.ndarray) else p for p in parts]
                arrays.append(pa.array([x for p in values for x in p], f.type))
        tables.append(pa.Table.from_arrays(arrays, schema=schema))
    return pa.concat_tables(tables)


def _expanded(values: pa.Array, counts: np.ndarray) -> pa.Array:
    """values[i] counts[i] times, in turn: run-end decoded, which takes a tenth of the time of
    a take of every row's index (a batch of AutoPerf logs repeats a record's values over its
    hundreds of counters)."""
    if not (counts > 0).all():  # run ends must increase
        keep = counts > 0
        values, counts = values.filter(pa.array(keep)), counts[keep]
    ends = pa.array(np.cumsum(counts, dtype=np.int64))
    return pc.run_end_decode(pa.RunEndEncodedArray.from_arrays(ends, values))


class PartWriter:
    """A set of parts (a run's tables, or one part of a log tree's), written to temporary files
    and committed together by :meth:`commit` (iostudy.store.catalog). Rows are buffered and written
    in large row groups: a row group per log would make the files slow to read."""

    FLUSH_ROWS = 50_000

    def __init__(
        self, store: Store, name: str, tables=RUN_TABLES, all_tables=True, run_id=None, names=None
    ):
        self.store, self.run_id = store, run_id or name
        self.tables = tables  # the tables this writer may write
        self.all_tables = all_tables  # write every table, even empty (a run's set is complete)
        # each table's part name: name, unless names says otherwise (a tree's runs row)
        self.names = {t: (names or {}).get(t, name) for t in tables}
        self.tmp = {t: store.root / t / f"{self.names[t]}.parquet.tmp" for t in tables}
        self.writers = {}
        self.rows, self.columns, self.chunks = ({t: [] for t in tables} for _ in range(3))
        self.buffered = dict.fromkeys(tables, 0)
        self.written = dict.fromkeys(tables, 0)

    def write(self, table: str, data):
        """Add rows: a list of row dicts, a list of Columns (both checked against the store's
        rule when written out), or a pyarrow table (rows the store holds already)."""
        if isinstance(data, pa.Table):
            if data.num_rows:
                self.chunks[table].append(data)
            self.buffered[table] += data.num_rows
        elif data and isinstance(data[0], Columns):
            self.columns[table].extend(data)
            self.buffered[table] += sum(c.n for c in data)
        else:
            self.rows[table].extend(data)
            self.buffered[table] += len(data)
        if self.buffered[table] >= self.FLUSH_ROWS:
            self._flush(table)

    def _flush(self, table: str):
        if self.rows[table]:
            self.chunks[table].append(_within_rule(table, _rows_table(table, self.rows[table])))
            self.rows[table] = []
        if self.columns[table]:
            built = _columns_table(table, self.columns[table])
            self.chunks[table].append(_within_rule(table, built))
            self.columns[table] = []
        if not self.chunks[table] and (table in self.writers or not self.all_tables):
            return
        if table not in self.writers:
            self.tmp[table].parent.mkdir(parents=True, exist_ok=True)
            self.writers[table] = pq.ParquetWriter(self.tmp[table], TABLES[table])
        if self.chunks[table]:
            data = pa.concat_tables(self.chunks[table])
            self.writers[table].write_table(data)
            self.written[table] += data.num_rows
        self.chunks[table], self.buffered[table] = [], 0

    def commit(self, commit: catalog_mod.Commit | None = None):
        """Puts every table written in place in one commit (with what ``commit`` already
        holds): readers see all of them or none."""
        for table in self.tables:
            self._flush(table)
        for w in self.writers.values():
            w.close()
        commit = commit or catalog_mod.Commit(self.store.root)
        for table in self.writers:
            name = self.names[table]
            commit.put(table, name, self.tmp[table], self.run_id, self.written[table])
        commit.apply()

    def abort(self):
        for w in self.writers.values():
            with contextlib.suppress(Exception):
                w.close()
        for path in self.tmp.values():
            path.unlink(missing_ok=True)
