"""Summary of one Darshan log: pure functions from the dict of :func:`read_log` to plain data."""

from __future__ import annotations

from datetime import datetime, timezone

from iostudy.core.deferred import deferred
from iostudy.logs import sharing, upconversion

np = deferred("numpy")

# Counters summed into each figure, per module (PyDarshan module names and counter names).
MODULE_COUNTERS = {
    "POSIX": {
        "bytes_read": ["POSIX_BYTES_READ"],
        "bytes_written": ["POSIX_BYTES_WRITTEN"],
        "opens": ["POSIX_OPENS"],
        "reads": ["POSIX_READS"],
        "writes": ["POSIX_WRITES"],
    },
    "STDIO": {
        "bytes_read": ["STDIO_BYTES_READ"],
        "bytes_written": ["STDIO_BYTES_WRITTEN"],
        "opens": ["STDIO_OPENS", "STDIO_FDOPENS"],
        "reads": ["STDIO_READS"],
        "writes": ["STDIO_WRITES"],
    },
    "MPI-IO": {
        "bytes_read": ["MPIIO_BYTES_READ"],
        "bytes_written": ["MPIIO_BYTES_WRITTEN"],
        "opens": ["MPIIO_INDEP_OPENS", "MPIIO_COLL_OPENS"],
        "reads": ["MPIIO_INDEP_READS", "MPIIO_COLL_READS", "MPIIO_SPLIT_READS", "MPIIO_NB_READS"],
        "writes": [
            "MPIIO_INDEP_WRITES",
            "MPIIO_COLL_WRITES",
            "MPIIO_SPLIT_WRITES",
            "MPIIO_NB_WRITES",
        ],
    },
    # The libraries' file-level records: opens and closes (HDF5), bytes by PnetCDF's count
    "H5F": {
        "bytes_read": [],
        "bytes_written": [],
        "opens": ["H5F_OPENS"],
        "reads": [],
        "writes": [],
    },
    "PNETCDF_FILE": {
        "bytes_read": ["PNETCDF_FILE_BYTES_READ"],
        "bytes_written": ["PNETCDF_FILE_BYTES_WRITTEN"],
        "opens": ["PNETCDF_FILE_CREATES", "PNETCDF_FILE_OPENS"],
        "reads": [],
        "writes": [],
    },
    # The libraries' datasets and variables: the bytes the application asked them for
    "H5D": {
        "bytes_read": ["H5D_BYTES_READ"],
        "bytes_written": ["H5D_BYTES_WRITTEN"],
        "opens": ["H5D_OPENS"],
        "reads": ["H5D_READS"],
        "writes": ["H5D_WRITES"],
    },
    "PNETCDF_VAR": {
        "bytes_read": ["PNETCDF_VAR_BYTES_READ"],
        "bytes_written": ["PNETCDF_VAR_BYTES_WRITTEN"],
        "opens": ["PNETCDF_VAR_OPENS"],  # a variable defined or inquired
        # blocking independent and collective calls, and non-blocking ones (counted apart)
        "reads": ["PNETCDF_VAR_INDEP_READS", "PNETCDF_VAR_COLL_READS", "PNETCDF_VAR_NB_READS"],
        "writes": [
            "PNETCDF_VAR_INDEP_WRITES",
            "PNETCDF_VAR_COLL_WRITES",
            "PNETCDF_VAR_NB_WRITES",
        ],
    },
    # DAOS's file system: a file opened, looked up or made local from another rank's handle;
    # read or written with or without an I/O descriptor (a non-blocking call is either too)
    "DFS": {
        "bytes_read": ["DFS_BYTES_READ"],
        "bytes_written": ["DFS_BYTES_WRITTEN"],
        "opens": ["DFS_OPENS", "DFS_GLOBAL_OPENS", "DFS_LOOKUPS"],
        "reads": ["DFS_READS", "DFS_READXS"],
        "writes": ["DFS_WRITES", "DFS_WRITEXS"],
    },
    # DAOS's objects: plain objects, arrays and key-value stores
    "DAOS": {
        "bytes_read": ["DAOS_BYTES_READ"],
        "bytes_written": ["DAOS_BYTES_WRITTEN"],
        "opens": ["DAOS_OBJ_OPENS", "DAOS_ARRAY_OPENS", "DAOS_KV_OPENS"],
        "reads": ["DAOS_OBJ_FETCHES", "DAOS_ARRAY_READS", "DAOS_KV_GETS"],
        "writes": ["DAOS_OBJ_UPDATES", "DAOS_ARRAY_WRITES", "DAOS_KV_PUTS"],
    },
}


def _figures(mod, counters, missing):
    """A record's figures: the sums of their counters, those its version had (``missing``:
    those it did not; libdarshan-util reads them as -1); None for a figure the module counts
    nowhere (H5F's bytes: HDF5's are its datasets', H5D)."""
    return {
        key: sum(counters[c] for c in names if c not in missing) if names else None
        for key, names in MODULE_COUNTERS[mod].items()
    }


def not_counted(mod: str) -> list[str]:
    """The figures a module has no counter of, at any version (H5F's bytes, reads, writes)."""
    return [key for key, names in MODULE_COUNTERS[mod].items() if not names]


def _unrecorded(mod, missing) -> list[str]:
    """The figures of a module none of whose counters a version lacking ``missing`` had."""
    return [key for key, names in MODULE_COUNTERS[mod].items() if names and missing >= set(names)]


def _timestamp(sec, nsec):
    return datetime.fromtimestamp(sec + nsec / 1e9, timezone.utc).isoformat(timespec="seconds")


def _file_classes(log) -> dict:
    """Each record id's sharing class (iostudy.logs.sharing), over every module of the log."""
    recs = [
        (rec["id"], rec["rank"]) for mod in MODULE_COUNTERS for rec in log["records"].get(mod, ())
    ]
    if not recs:
        return {}
    ids = np.array([i for i, _ in recs], np.uint64)
    index = sharing.classes(
        np.zeros(len(recs), np.int64),
        ids,
        np.array([r for _, r in recs], np.int64),
        np.array([int(log["job"]["nprocs"])]),
    )
    return {int(i): sharing.CLASSES[c] for i, c in zip(ids.tolist(), index.tolist(), strict=True)}


def _module_summary(log, mod, top, file_classes):
    records = log["records"][mod]
    version = log["modules"][mod]["ver"]
    missing = upconversion.not_recorded(mod, version)
    uncounted = not_counted(mod)
    zero = {key: None if key in uncounted else 0 for key in MODULE_COUNTERS[mod]}
    totals = dict(zero)
    # Records are per (file, rank); a file seen by several ranks is one row of the top list.
    files = {}
    for rec in records:
        figures = _figures(mod, rec["counters"], missing)
        f = files.setdefault(rec["id"], {"ranks": set(), **zero})
        f["ranks"].add(rec["rank"])
        for key, value in figures.items():
            if value is not None:
                totals[key] += value
                f[key] += value
    ranked = sorted(
        files.items(),
        key=lambda kv: (kv[1]["bytes_read"] or 0) + (kv[1]["bytes_written"] or 0),
        reverse=True,
    )
    unrecorded = dict.fromkeys(_unrecorded(mod, missing))  # None: not recorded
    top_files = []
    for rec_id, f in ranked[:top]:
        ranks = f.pop("ranks")
        nranks, nprocs = len(ranks - {-1}), int(log["job"]["nprocs"])
        top_files.append(
            {
                "name": log["name_records"].get(rec_id, rec_id),
                "sharing": file_classes[rec_id],
                "nranks": nranks,
                "processes": int(sharing.processes(nranks, -1 in ranks, nprocs)),
                **f,
                **unrecorded,
            }
        )
    return {
        "name": mod,
        "version": version,
        "records": len(records),
        "files": len(files),
        "partial": log["modules"][mod]["partial_flag"],
        "not_counted": uncounted,
        **totals,
        **unrecorded,
        "top_files": top_files,
    }


def summarize(log, top=5):
    """Job facts, per-module totals and the ``top`` files by bytes moved."""
    job = log["job"]
    file_classes = _file_classes(log)
    return {
        "path": log["path"],
        "jobid": job["jobid"],
        "nprocs": job["nprocs"],
        "uid": job["uid"],
        "start": _timestamp(job["start_time_sec"], job["start_time_nsec"]),
        "end": _timestamp(job["end_time_sec"], job["end_time_nsec"]),
        "run_time": job["run_time"],
        "log_ver": job["log_ver"],
        "metadata": job["metadata"],
        "exe": log["exe"],
        "modules": [
            _module_summary(log, mod, top, file_classes)
            for mod in MODULE_COUNTERS
            if mod in log["records"]
        ],
        # Modules iostudy does not summarise (LUSTRE, HEATMAP, DXT_*, the job-level ones):
        # presence only.
        "other_modules": {
            name: m for name, m in log["modules"].items() if name not in MODULE_COUNTERS
        },
        "heatmaps": {
            api: {"nbins": h["nbins"], "bin_width": h["bin_width"], "nranks": len(h["ranks"])}
            for api, h in log["heatmaps"].items()
        },
    }
