"""A log's access pattern as the store keeps it for its job page: its most common access sizes
per module (the accesssizes table) and its heatmap (the heatmap table), made at ingest from
what its reader worker read (:func:`iostudy.logs.logrows.read_for_ingest`), so that no page
reads a log again.

- :func:`access_rows`: per module with Darshan's ACCESS1..4 counters (POSIX, MPI-IO, HDF5's
  datasets, PnetCDF's variables, DFS, DAOS), the four sizes accessed most often, summed over
  the named records (those PyDarshan reads), most accesses first, then the smaller size.
- :func:`heatmap_rows`: the HEATMAP records combined per API as PyDarshan's report does (a
  record's id names its API; a rank's last record is its heatmap), a row per bin in which the
  rank moved bytes.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.logs.recordlayout import record_layout

np = deferred("numpy")

#: the store's accesssizes table (iostudy.store.store.TABLES): its columns and their pyarrow
#: types; a row per module and size, at most TOP_SIZES a module
ACCESS_COLUMNS = (
    ("run_id", "string"),
    ("log_sha256", "string"),
    ("module", "string"),  # Darshan's name: POSIX, MPI-IO, H5D, PNETCDF_VAR, DFS, DAOS
    ("size", "int64"),  # bytes
    ("accesses", "int64"),
)
#: the store's heatmap table: a row per API, rank and bin in which the rank moved bytes
HEATMAP_COLUMNS = (
    ("run_id", "string"),
    ("log_sha256", "string"),
    ("api", "string"),  # POSIX, STDIO, MPIIO, DFS, DAOS (another's: its record id)
    ("rank", "int64"),
    ("bin", "int64"),  # its start is bin * bin_width_s seconds after the job's start
    ("bin_width_s", "float64"),
    ("read_bytes", "int64"),
    ("write_bytes", "int64"),
)
#: the modules with Darshan's ACCESS1..4 counters -> their counters' prefix
ACCESS_PREFIX = {
    "POSIX": "POSIX",
    "MPI-IO": "MPIIO",
    "H5D": "H5D",
    "PNETCDF_VAR": "PNETCDF_VAR",
    "DFS": "DFS",
    "DAOS": "DAOS",
}
#: the common access sizes kept per module, as Darshan's job summary shows them
TOP_SIZES = 4
#: a HEATMAP record's id -> its API (PyDarshan's report.read_all_heatmap_records; any other id
#: is its API's name, as there)
HEATMAP_APIS = {
    16592106915301738621: "POSIX",
    3989511027826779520: "STDIO",
    3668870418325792824: "MPIIO",
    1597927878319380788: "DFS",
    4131494093108637317: "DAOS",
}


def access_rows(log: dict, run: dict) -> list[dict]:
    """The accesssizes rows of one log (``records`` as stored: bytes of each module's records;
    ``run``: its run_id and log_sha256)."""
    rows = []
    for module, prefix in ACCESS_PREFIX.items():
        if not (stored := log["records"].get(module)):
            continue
        layout = record_layout(module)
        records = np.frombuffer(stored, layout.dtype)
        named = np.array([i in log["name_records"] for i in records["id"].tolist()], bool)
        counters = records["counters"][named]
        counts: dict[int, int] = {}
        for i in range(1, 5):
            sizes = counters[:, layout.cnames.index(f"{prefix}_ACCESS{i}_ACCESS")]
            accesses = counters[:, layout.cnames.index(f"{prefix}_ACCESS{i}_COUNT")]
            kept = (accesses > 0) & (sizes >= 0)
            for size, n in zip(sizes[kept].tolist(), accesses[kept].tolist(), strict=True):
                counts[size] = counts.get(size, 0) + n
        best = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:TOP_SIZES]
        rows += [
            {"run_id": run["run_id"], "log_sha256": run["log_sha256"], "module": module}
            | {"size": size, "accesses": n}
            for size, n in best
        ]
    return rows


def heatmap_rows(log: dict, run: dict) -> list[dict]:
    """The heatmap rows of one log (its ``heatmap_records``), by API in the order the records
    name them, then rank, then bin."""
    by_api: dict[str, dict[int, dict]] = {}
    for record in log.get("heatmap_records") or ():
        api = HEATMAP_APIS.get(record["id"], str(record["id"]))
        by_api.setdefault(api, {})[record["rank"]] = record
    rows = []
    for api, ranks in by_api.items():
        for rank in sorted(ranks):
            record = ranks[rank]
            for b, (read, write) in enumerate(zip(record["read"], record["write"], strict=True)):
                if read or write:
                    rows.append(
                        {
                            "run_id": run["run_id"],
                            "log_sha256": run["log_sha256"],
                            "api": api,
                            "rank": rank,
                            "bin": b,
                            "bin_width_s": record["bin_width"],
                            "read_bytes": read,
                            "write_bytes": write,
                        }
                    )
    return rows
