"""One job in detail, as a job page and ``iostudy compare-jobs`` show it (PyDarshan's ``darshan
summary`` of one log, from the store).

From the store's files rows of a log (every module, each record as stored; :func:`files_of`
reads those of many logs in one query):
- :func:`per_module`: per module (POSIX, STDIO, MPI-IO, HDF5's files and datasets, PnetCDF's
  files and variables, DFS, DAOS), bytes, operations and the I/O time split into read, write
  and metadata, each summed over the processes (the sums seed 000's metadata cost divides; a
  job's slowest-rank time is jobstats' io_time_slowest_s);
- :func:`size_bins`: accesses per size bin and direction of the modules that count them
  (POSIX's, DFS's and DAOS's are what reached storage; MPI-IO's, HDF5 datasets' and PnetCDF
  variables' the sizes the application asked for);
- :func:`file_table`: per file (a module's records of one path): bytes, time, class and the
  processes that accessed it (:mod:`iostudy.logs.sharing`: one process is never shared);
  :func:`dataset_table`: the same per HDF5 dataset and PnetCDF variable, with its file;
- :func:`rank_balance`: per rank, its bytes and time in its own records of the layers a job's
  totals count (POSIX, STDIO, DFS or DAOS; a one-process job's rank -1 records are its one
  process's); the processes with such records and those that moved bytes in them, of the
  job's nprocs; the fastest, the slowest, their mean and variance.

From its jobcounters rows: :func:`job_modules`, its job-level modules (BG/Q's block;
AutoPerf's Cray XC job and routers, its MPI operations and ranks).

:func:`page_rows_of` reads all a job page draws of many logs: their files and jobcounters
rows, and their accesssizes and heatmap rows (:mod:`iostudy.logs.accessrows`, made at ingest:
the four most common access sizes per module, Darshan's ACCESS1..4 counters of every record
summed per size; bytes per time bin and rank per API, from the HEATMAP records).
"""

from __future__ import annotations

import re

from iostudy.core.deferred import deferred
from iostudy.logs import jobmodules, logrows, modules, sharing, sizebins

pd = deferred("pandas")

SIZE_BINS, SIZE_LABELS = sizebins.NAMES, sizebins.LABELS
#: the files table's modules in the order a page shows them
MODULE_ORDER = modules.TOKEN_ORDER
#: the modules whose records count accesses per size bin, in that order
SIZED = tuple(t for t in MODULE_ORDER if modules.NAMES[t] in logrows.EXTRA_COUNTERS["read_0_100"])
_TIMES = ["read_time", "write_time", "meta_time"]
_COUNTS = ["bytes_read", "bytes_written", "reads", "writes", "opens", "seeks"]


def files_of(con, shas) -> pd.DataFrame:
    """The files rows of the logs ``shas`` (their sha256), every module, in one query, with
    ``counted``: whether the row is one a job's totals count (iostudy.logs.modules.counted: the
    layers that moved the bytes, each byte once), and ``file_path``: an HDF5 dataset's or
    PnetCDF variable's file, the path of the log's records of its file_record_id (null where
    the log has none, and for other modules). The record id itself is left out: a column of
    64-bit ids with nulls would reach pandas as floats, which cannot hold them."""
    rule = modules.counted(modules.DEFAULT_SCOPE)
    return con.execute(
        f"WITH mine AS (SELECT * FROM files WHERE log_sha256 IN (SELECT unnest(?::VARCHAR[]))), "
        "named AS (SELECT log_sha256, record_id, any_value(path) AS file_path FROM mine "
        "GROUP BY ALL) "
        f"SELECT files.* EXCLUDE (file_record_id), ({rule}) AS counted, named.file_path "
        "FROM mine files LEFT JOIN named ON named.log_sha256 = files.log_sha256 "
        "AND named.record_id = files.file_record_id",
        [sorted(set(shas))],
    ).df()


# The columns a job page draws of each table beside files (heatmap: each bin's start since the
# job started)
_PAGE_COLUMNS = {
    "jobcounters": "*",
    "accesssizes": "*",
    "heatmap": "run_id, log_sha256, api, rank, bin, bin * bin_width_s AS start_s, bin_width_s, "
    "read_bytes, write_bytes",
}


def page_rows_of(con, shas) -> dict[str, pd.DataFrame]:
    """The rows a job page draws of the logs ``shas`` (their sha256), by table, each in
    ingest's order: files (:func:`files_of`), jobcounters, accesssizes (per module, the most
    common sizes and their accesses, the most first) and heatmap (api, rank, bin, start_s,
    bin_width_s, read_bytes, write_bytes: only the bins where a rank moved bytes)."""
    rows = {"files": files_of(con, shas)}
    for table, columns in _PAGE_COLUMNS.items():
        rows[table] = con.execute(
            f"SELECT {columns} FROM {table} WHERE log_sha256 IN (SELECT unnest(?::VARCHAR[]))",
            [sorted(set(shas))],
        ).df()
    return rows


def _ordered(df: pd.DataFrame) -> pd.DataFrame:
    order = {m: i for i, m in enumerate(MODULE_ORDER)}
    df = df.assign(_o=df["module"].map(order).fillna(len(order)))
    df = df.sort_values(["_o", "module"]).drop(columns="_o")
    return df.assign(module=df["module"].map(modules.display))


def per_module(files: pd.DataFrame) -> pd.DataFrame:
    """Per module: records, bytes, operations, and read, write and metadata time summed over
    the processes (seconds), with each one's share of the module's I/O time."""
    cols = ["module", "records", *_COUNTS, *_TIMES, "io_time", "meta_pct"]
    if files.empty:
        return pd.DataFrame(columns=cols)
    sums = files.groupby("module")[_COUNTS + _TIMES].sum(min_count=1)
    sums.insert(0, "records", files.groupby("module").size())
    sums["io_time"] = sums[_TIMES].sum(axis=1)
    sums["meta_pct"] = 100 * sums["meta_time"] / sums["io_time"].where(sums["io_time"] > 0)
    return _ordered(sums.reset_index())[cols]


def size_bins(files: pd.DataFrame) -> pd.DataFrame:
    """Accesses per module (those of SIZED), direction and size bin: module, operation, size,
    accesses (every bin, zeros too, so that two jobs line up)."""
    rows = []
    for module in SIZED:
        mine = files[files["module"] == module]
        if mine.empty:
            continue
        for op in ("read", "write"):
            for b in SIZE_BINS:
                count = mine[f"{op}_{b.lower()}"].sum()
                rows.append(
                    {
                        "module": modules.display(module),
                        "operation": op,
                        "size": SIZE_LABELS[b],
                        "accesses": int(count),
                    }
                )
    return pd.DataFrame(rows, columns=["module", "operation", "size", "accesses"])


#: file_table's columns
FILE_COLUMNS = [
    "path",
    "module",
    "sharing",
    "processes",
    "bytes_read",
    "bytes_written",
    "bytes",
    "io_time",
    "read_time",
    "write_time",
    "meta_time",
    "opens",
    "reads",
    "writes",
]


def file_table(files: pd.DataFrame, nprocs: int) -> pd.DataFrame:
    """Per file and module: its path, class (N:N, N:1, N:M), the processes of the job's
    ``nprocs`` that accessed it (iostudy.logs.sharing.processes: a record of all of them counts
    them all; one process is 1, in a one-process job too), bytes read and written, and its I/O
    time summed over the processes."""
    cols = FILE_COLUMNS
    if files.empty:
        return pd.DataFrame(columns=cols)
    own = files.assign(own=files["rank"].where(files["rank"] >= 0))
    g = own.groupby(["path", "module"], dropna=False)
    # a column of null only (a value the log's module version did not record) stays null
    table = g[["bytes_read", "bytes_written", *_TIMES, "opens", "reads", "writes"]].sum(min_count=1)
    table["sharing"] = g["sharing"].first()
    reduced = g["rank"].min() < 0
    table["processes"] = sharing.processes(g["own"].nunique(), reduced, nprocs)
    table["bytes"] = table["bytes_read"] + table["bytes_written"]
    table["io_time"] = table[_TIMES].sum(axis=1)
    table = table.reset_index()
    table["module"] = table["module"].map(modules.display)
    return table[cols]


#: the modules whose records are objects in a file (its datasets, its variables)
IN_FILES = ("h5d", "pnetcdf_var")


def dataset_table(files: pd.DataFrame, nprocs: int) -> pd.DataFrame:
    """Per HDF5 dataset and PnetCDF variable (the H5D and PNETCDF_VAR records of one name):
    the file it belongs to (``file_path``: its file_record_id's), its name in that file (its
    record's name, "<file>:<dataset>", after the file's path), and file_table's figures; the
    most bytes first."""
    cols = ["file", "name", *FILE_COLUMNS[1:]]
    mine = files[files["module"].isin(IN_FILES)]
    if mine.empty:
        return pd.DataFrame(columns=cols)
    table = file_table(mine, nprocs)
    file_of = mine.groupby("path")["file_path"].first()
    table["file"] = table["path"].map(file_of)
    table["name"] = [
        path[len(f) + 1 :] if isinstance(f, str) and path.startswith(f"{f}:") else path
        for path, f in zip(table["path"], table["file"], strict=True)
    ]
    table = table.sort_values(["bytes", "file", "name"], ascending=[False, True, True])
    return table[cols].reset_index(drop=True)


def rank_balance(files: pd.DataFrame, nprocs: int) -> tuple[pd.DataFrame, dict]:
    """Per rank (the records of one rank a job's totals count, ``files_of``'s ``counted``:
    POSIX's and STDIO's, DFS's or DAOS's where the I/O bypassed POSIX; a record of all the
    processes of a parallel job is not any one rank's, that of a one-process job is rank 0's:
    iostudy.logs.sharing.own_ranks): bytes and I/O time; and {nprocs, records (those
    counted), ranks (the processes with records of their own), moved (those of them that moved
    bytes in them), fastest, slowest (rank and seconds), mean_s, variance_s2,
    shared_slowest_s: the slowest rank's time over the records of all the processes, as the
    log kept it}."""
    moved = files[files["counted"]]
    moved = moved.assign(rank=sharing.own_ranks(moved["rank"].to_numpy(), nprocs))
    own = moved[moved["rank"] >= 0]
    per_rank = own.groupby("rank").agg(
        bytes_read=("bytes_read", "sum"),
        bytes_written=("bytes_written", "sum"),
        read_time=("read_time", "sum"),
        write_time=("write_time", "sum"),
        meta_time=("meta_time", "sum"),
    )
    per_rank["io_time"] = per_rank[_TIMES].sum(axis=1)
    per_rank = per_rank.reset_index()
    shared = moved.loc[moved["rank"] < 0, "slowest_rank_time"].sum()
    moved_bytes = (per_rank["bytes_read"] + per_rank["bytes_written"]) > 0
    counts = {
        "nprocs": int(nprocs),
        "records": len(moved),
        "ranks": len(per_rank),
        "moved": int(moved_bytes.sum()),
        "shared_slowest_s": shared,
    }
    if per_rank.empty:
        return per_rank, counts
    t = per_rank.set_index("rank")["io_time"]
    summary = {
        "fastest_rank": int(t.idxmin()),
        "fastest_s": t.min(),
        "slowest_rank": int(t.idxmax()),
        "slowest_s": t.max(),
        "mean_s": t.mean(),
        "variance_s2": t.var(ddof=0),
        **counts,
    }
    return per_rank, summary


# An APMPI counter of one MPI operation: the operation, and what it counts
_MPI_OP = re.compile(r"^(MPI_\w+?)_(CALL_COUNT|TOTAL_BYTES|TOTAL_TIME|MAX_TIME|TOTAL_SYNC_TIME)$")
_MPI_COLUMNS = {
    "CALL_COUNT": "calls",
    "TOTAL_BYTES": "bytes",
    "TOTAL_TIME": "time_s",
    "MAX_TIME": "longest_call_s",
    "TOTAL_SYNC_TIME": "sync_time_s",
}


def job_modules(counters: pd.DataFrame) -> dict[str, pd.DataFrame]:
    """What a job page shows of the job-level modules of a job's jobcounters rows, by name:

    - "BG/Q": the Blue Gene/Q block (counter, value);
    - "APXC": its header (counter, value: the job's groups, chassis, blades, the nodes'
      modes by name, the application id); "APXC routers": per Aries router (a record after the
      header), its rank, place (group, chassis, blade, node), flits in (its INCOMING_FLIT
      counters) and stalls (its STALL counters), the most stalls first;
    - "APMPI operations": per MPI operation over the ranks, its calls, bytes, time, the longest
      call and the time waiting to synchronize, the most time first; "APMPI ranks": per rank,
      its node and its MPI time (MPI_TOTAL_COMM_TIME) and sync time, the most first.
    """
    out = {}
    for module, rows in counters.groupby("module", sort=False):
        value = rows["value"].astype(object).where(rows["value"].notna(), rows["fvalue"])
        rows = rows.assign(value=value)
        if module == "APMPI":
            out["APMPI operations"], out["APMPI ranks"] = _apmpi(rows)
        elif module == "APXC":
            out["APXC"] = _apxc_header(rows[rows["record"] == 0])
            out["APXC routers"] = _apxc_routers(rows[rows["record"] > 0])
        else:
            out[module] = rows[["counter", "value"]].reset_index(drop=True)
    return out


def _apmpi(rows: pd.DataFrame) -> tuple[pd.DataFrame, pd.DataFrame]:
    ranks = rows[rows["record"] > 0]  # the header's is the variance over them
    found = ranks["counter"].str.extract(_MPI_OP)
    ops = ranks.assign(operation=found[0], what=found[1].map(_MPI_COLUMNS))
    ops = ops.dropna(subset=["operation"]).astype({"value": float})
    longest = ops["what"] == "longest_call_s"
    table = ops[~longest].groupby(["operation", "what"])["value"].sum().unstack("what")
    table = table.join(ops[longest].groupby("operation")["value"].max().rename("longest_call_s"))
    table = table.reindex(columns=list(_MPI_COLUMNS.values()))
    for column in ("calls", "bytes"):
        table[column] = table[column].astype("Int64")
    table = table.sort_values("time_s", ascending=False).reset_index()
    wanted = {"MPI_TOTAL_COMM_TIME": "mpi_time_s", "MPI_TOTAL_COMM_SYNC_TIME": "sync_time_s"}
    mine = ranks[ranks["counter"].isin(wanted)]
    per = mine.set_index(["record", "rank", "node", "counter"])["value"].unstack("counter")
    per = per.reindex(columns=list(wanted)).rename(columns=wanted).astype(float).reset_index()
    per = per.sort_values("mpi_time_s", ascending=False)
    return table, per.drop(columns="record").reset_index(drop=True)


def _apxc_header(rows: pd.DataFrame) -> pd.DataFrame:
    """APXC's header, its modes by name (a mode not in a row: code 0, unknown)."""
    table = rows[["counter", "value"]].set_index("counter")["value"].astype(object)
    for what, modes in (("MEMORY", jobmodules.MEMORY_MODES), ("CLUSTER", jobmodules.CLUSTER_MODES)):
        table[f"APXC_{what}_MODE"] = modes[int(table.get(f"APXC_{what}_MODE", 0))]
    return table.reset_index()


def _apxc_routers(rows: pd.DataFrame) -> pd.DataFrame:
    names = rows["counter"]
    kind = pd.Series(None, index=rows.index, dtype=object)
    for column, test in (("flits", "INCOMING_FLIT"), ("stalls", "STALL")):
        kind = kind.where(~names.str.contains(test), column)
    place = {f"APXC_{p.upper()}": p for p in ("group", "chassis", "blade", "node")}
    kind = kind.where(~names.isin(place), names.map(place))
    kept = rows.assign(kind=kind, value=rows["value"].astype("int64")).dropna(subset=["kind"])
    table = kept.groupby(["record", "rank", "kind"])["value"].sum().unstack("kind")
    table = table.reindex(columns=[*place.values(), "flits", "stalls"]).fillna(0).astype("int64")
    return table.reset_index().sort_values("stalls", ascending=False).drop(columns="record")
