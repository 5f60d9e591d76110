"""A study's rows of the store, for its report's sections: DuckDB views, never whole tables.

:class:`StudyData` holds a connection (:func:`iostudy.store.store.connect`) in which every table
that has runs (``files``, ``jobs``, ``perf``, ...) is a temporary view of the same name over the
study's runs only, with another site's systems named "site/system"; the tables of no run
(``sched``, ``iostat``, ``fsstats``) are the store's. Sections query it with SQL (``query``) or,
for the tables a study has few rows of, take them as DataFrames (``data[name]``, read once).
The tables that grow with every log or sample (:data:`QUERY_ONLY`) are never read whole: a
section asks for the rows and columns it draws, or for aggregates.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path

from iostudy.core.deferred import deferred
from iostudy.metrics import compare, jobdetail, jobstats
from iostudy.store import store as store_mod

pd = deferred("pandas")

# Tables with a row per file record, per OST of a file, per Slurm job, per DXT segment or per
# counter of a rank: queried only.
QUERY_ONLY = frozenset({"files", "lustre", "sched", "dxt", "jobcounters", "accesssizes", "heatmap"})


class StudyData(Mapping):
    """A store opened for a report: ``all_runs`` (every run, :func:`_all_runs`); after
    :meth:`restrict` to the study's runs, ``data[name]``: the study's rows of a store table as
    a DataFrame (not for :data:`QUERY_ONLY`), ``data.query(sql, params)``: a DataFrame from SQL
    over the study's views, ``data.con``: the connection, for the metrics that take one."""

    def __init__(self, store: Path | None = None, con=None):
        self.con = con if con is not None else store_mod.connect(store)
        self.all_runs = _all_runs(self.con)
        self._frames: dict[str, pd.DataFrame] = {}
        self._job_table: pd.DataFrame | None = None

    def job_table(self) -> pd.DataFrame:
        """The study's jobstats.job_table (one row per job log), made once per build: three
        sections read it, and at a facility's scale it is the build's largest query."""
        if self._job_table is None:
            self._job_table = jobstats.job_table(self.con)
        return self._job_table

    @classmethod
    def of_frames(cls, frames: dict[str, pd.DataFrame]) -> StudyData:
        """Tables given as DataFrames (a column the store has and a frame lacks is null; a
        table not given is empty), restricted to every run they name: sections on made-up
        data."""
        import duckdb
        import pyarrow as pa

        con = duckdb.connect()
        for name, schema in store_mod.TABLES.items():
            given = frames.get(name)
            rows = [] if given is None else given.to_dict("records")
            table = pa.Table.from_pylist(
                [{c: _value(r.get(c)) for c in schema.names} for r in rows], schema=schema
            )
            con.register("given", table)
            con.execute(f'CREATE TABLE "{name}" AS SELECT * FROM given')
            con.unregister("given")
        data = cls(con=con)
        ids = {r for f in frames.values() if "run_id" in f for r in f["run_id"].dropna()}
        data.restrict(sorted(ids))
        return data

    def restrict(self, run_ids: list[str]) -> None:
        """Views of the study's runs only, in place of the store's."""
        imported = self.all_runs[self.all_runs["site"].notna()]
        labels = dict(zip(imported["run_id"], imported["system"], strict=True))
        labels = {r: labels[r] for r in run_ids if r in labels}
        for name, schema in store_mod.TABLES.items():
            if "run_id" in schema.names:
                system = labels if "system" in schema.names else None
                self.con.execute(_study_view(name, run_ids, system))
        self._frames.clear()
        self._job_table = None

    def __getitem__(self, name: str) -> pd.DataFrame:
        if name in QUERY_ONLY:
            raise KeyError(f"table {name!r} is queried, never read whole (StudyData.query)")
        if name not in store_mod.TABLES:
            raise KeyError(name)
        if name not in self._frames:
            self._frames[name] = self.query(f'SELECT * FROM "{name}"')
        return self._frames[name]

    def __iter__(self):
        return (name for name in store_mod.TABLES if name not in QUERY_ONLY)

    def __len__(self) -> int:
        return len(store_mod.TABLES) - len(QUERY_ONLY)

    def query(self, sql: str, params=None) -> pd.DataFrame:
        return self.con.execute(sql, params or []).df()

    def files_of_logs(self, logs) -> pd.DataFrame:
        """The study's files rows of some logs (their sha256s)."""
        return jobdetail.files_of(self.con, logs)

    def page_rows_of_logs(self, logs) -> dict[str, pd.DataFrame]:
        """The study's rows a job page draws of some logs (their sha256s), by table
        (jobdetail.page_rows_of)."""
        return jobdetail.page_rows_of(self.con, logs)

    def files_matching(self, pattern: str) -> pd.DataFrame:
        """The study's files rows whose path matches ``pattern`` (a regular expression both
        Python and DuckDB's RE2 read alike)."""
        return self.query("SELECT * FROM files WHERE regexp_matches(path, ?)", [pattern])

    def count_by_run(self, table: str, where: str = "true") -> dict[str, int]:
        """The study's rows of a table per run (``where``: an SQL condition on its columns)."""
        rows = self.con.execute(
            f'SELECT run_id, COUNT(*) FROM "{table}" WHERE {where} GROUP BY run_id'
        ).fetchall()
        return dict(rows)

    def close(self) -> None:
        self.con.close()


def _value(v):
    """A frame's cell as pyarrow takes it: pandas' missing values as None."""
    return None if v is pd.NaT or (isinstance(v, float) and math.isnan(v)) else v


def _study_view(table: str, run_ids: list[str], labels: dict[str, str] | None) -> str:
    """A temporary view named as the store's view (it shadows it in this connection) over the
    study's runs, its system renamed by ``labels`` (run id -> label; None: no system column);
    ``memory.main.<table>`` is the store's own. The runs are a list of literals, not a join, so
    that the rows keep the store's order."""
    system = ""
    if labels:
        cases = " ".join(f"WHEN {_literal(r)} THEN {_literal(s)}" for r, s in labels.items())
        system = f" REPLACE (CASE t.run_id {cases} ELSE t.system END AS system)"
    ids = ", ".join(map(_literal, run_ids)) or "NULL"
    return (
        f'CREATE OR REPLACE TEMP VIEW "{table}" AS SELECT *{system} '
        f'FROM memory.main."{table}" AS t WHERE t.run_id IN ({ids})'
    )


def _literal(text: str) -> str:
    return "'" + str(text).replace("'", "''") + "'"


def _all_runs(con) -> pd.DataFrame:
    """Every run of the store with its ``site`` (None: this site's own); another site's system
    is named "site/system", as everywhere in the report, so that its runs never fall into a
    series of this site's system of the same name."""
    runs = con.execute("SELECT * FROM memory.main.runs").df()
    if "site" not in runs:  # no import yet: every run is this site's own
        runs["site"] = None
    imported = runs["site"].notna()
    runs.loc[imported, "system"] = [
        compare.system_label(site, system)
        for site, system in zip(
            runs.loc[imported, "site"], runs.loc[imported, "system"], strict=True
        )
    ]
    return runs
