"""Synthetic stores for the benchmarks: job logs' rows written straight into a store's tables (no
log is written or read), so that what reads the store, not ingest, is what is measured.

- :func:`synthetic_jobs`: ``n`` jobs of one log tree's run (``RUN``): 1 to 4,096 processes
  over a year, 300 users, 40 programs;
- :func:`synthetic_files`: bench_report's files rows, a POSIX and a STDIO record per job;
- :func:`diagnosable_files`: bench_diagnose's, every job's records as Darshan writes them for one
  of five layouts, with values varied enough that each diagnosis rule fires on a share of the
  jobs (its docstring says how);
- :func:`make_store`: a store of such rows (study "facility"), the jobs' ``modules`` taken from
  their files rows.

Every column of the store's schema (``TABLES``) is written: the ones a generator gives, nulls for
the ones a module has no counter of, and a plausible value for a column this module does not
know yet (:func:`generic_column`, by its name and type), so that a new column breaks no bench.
The same arguments give the same store.
"""

from __future__ import annotations

import hashlib
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from iostudy.logs import modules
from iostudy.logs.logrows import SIZE_BINS
from iostudy.store.ingest_writer import PartWriter
from iostudy.store.store import TABLES, TREE_STATUS, Store

RUN = "facility-tree"
KIB, MIB = 1024, 1024**2
# The layouts of a job's records (diagnosable_files): one process; a file per process; files
# shared by all ranks (rank -1 records), through MPI-IO most often; rank 0 alone; many small files.
SERIAL, FPP, SHARED, RANK0, MANY = range(5)
LAYOUTS = ("serial", "file per process", "shared files", "rank 0 alone", "many files")
# Kinds of records: a process's own file, a file every rank opened (rank -1), a file of a group
# of ranks (a record per rank, N:M), STDIO's
RANK_FILE, SHARED_FILE, GROUP_FILE, STDOUT, STDIO_FILE = range(5)
# The upper edges of Darshan's size bins (SIZE_BINS), 1K = 1,024 bytes.
BIN_EDGES = np.array([100, KIB, 10 * KIB, 100 * KIB, MIB, 4 * MIB, 10 * MIB, 100 * MIB, 1024 * MIB])
SIZE_COLUMNS = [f"{op}_{b.lower()}" for op in ("read", "write") for b in SIZE_BINS]
# The files columns diagnosable_files fills (or leaves null) knowingly; others: generic_column.
KNOWN = {
    *SIZE_COLUMNS,
    "run_id",
    "log_sha256",
    "module",
    "record_id",
    "rank",
    "path",
    "bytes_read",
    "bytes_written",
    "reads",
    "writes",
    "read_time",
    "write_time",
    "meta_time",
    "open_start",
    "read_end",
    "write_end",
    "close_end",
    "slowest_rank_time",
    "shared",
    "sharing",
    "opens",
    "read_start",
    "write_start",
    "seeks",
    "max_byte",
    "unaligned",
    "seq_ops",
    "small_reads",
    "small_writes",
    "coll_ops",
    "indep_ops",
    "mode",
    "unaligned_mem",
    "seq_reads",
    "coll_reads",
    "indep_reads",
    "fastest_rank",
    "slowest_rank",
    "fastest_rank_bytes",
    "slowest_rank_bytes",
    "fastest_rank_time",
}


def synthetic_jobs(n: int, rng) -> pa.Table:
    nprocs = 2 ** rng.integers(0, 13, n)
    start = np.datetime64("2026-01-01T00:00:00", "s") + rng.integers(0, 365 * 86400, n)
    run_time = rng.lognormal(6, 1.5, n)
    columns = {
        "run_id": [RUN] * n,
        "log_path": [
            f"2026/{i % 12 + 1}/{i % 28 + 1}/user{i % 300}_app_id{i}.darshan" for i in range(n)
        ],
        "log_sha256": [hashlib.sha256(str(i).encode()).hexdigest() for i in range(n)],
        "jobid": np.arange(n) + 1_000_000,
        "nprocs": nprocs,
        "nodes": np.maximum(1, nprocs // 64),
        "start": start,
        "end": start + run_time.astype("timedelta64[s]"),
        "run_time": run_time,
        "exe": [f"/apps/app{i % 40}/bin/app{i % 40}" for i in range(n)],
        "system": ["facility"] * n,
        "uid": 1000 + np.arange(n) % 300,
        "modules": ["POSIX+STDIO"] * n,
        "nodes_source": ["system"] * n,
    }
    return table("jobs", n, columns)


def synthetic_files(jobs: pa.Table, rng) -> pa.Table:
    n = jobs.num_rows
    logs = np.repeat(np.arange(n), 2)
    nprocs = np.asarray(jobs["nprocs"])[logs]
    shared = (rng.random(2 * n) < 0.3) & (nprocs > 1)
    written = rng.lognormal(20, 3, 2 * n).astype(np.int64)
    columns = {
        "run_id": [RUN] * (2 * n),
        "log_sha256": np.asarray(jobs["log_sha256"])[logs],
        "module": ["posix", "stdio"] * n,
        "record_id": rng.integers(1, 2**63, 2 * n).astype(np.uint64),
        "rank": np.where(shared, -1, 0),
        "path": [f"/scratch/p{i % 500}/out{i}.dat" for i in range(2 * n)],
        "bytes_read": (written * rng.random(2 * n)).astype(np.int64),
        "bytes_written": written,
        "reads": rng.integers(1, 10_000, 2 * n),
        "writes": rng.integers(1, 10_000, 2 * n),
        "read_time": rng.lognormal(0, 2, 2 * n),
        "write_time": rng.lognormal(1, 2, 2 * n),
        "meta_time": rng.lognormal(-2, 2, 2 * n),
        "open_start": rng.uniform(0.1, 10, 2 * n),
        "write_end": rng.uniform(10, 100, 2 * n),
        "slowest_rank_time": rng.lognormal(1, 2, 2 * n),
        "shared": shared,
        "sharing": np.where(shared, "N:1", "N:N"),
        "opens": rng.integers(1, 100, 2 * n),
    }
    return table("files", 2 * n, columns)


def diagnosable_files(jobs: pa.Table, rng, rank_records: int = 64) -> pa.Table:
    """Files rows a diagnosis finds things in: each job's records as Darshan writes them for one
    of LAYOUTS. Jobs of one process: serial, 7% many small files. Parallel jobs: a file per
    process 35% (40% of them with an input every rank reads whole, 30% with a file per group of
    2 to 16 ranks beside: N:M), files shared by all ranks 35% (rank -1 records; MPI-IO's
    records beside POSIX's for 70% of them, independent only, collective only or both; rank 0
    reads small inputs), rank 0 alone 20%, many small files 10% of those of at most 4
    processes. What a job's values are drawn from spans wide ranges (_job_params): the access
    size (32 B to 64 MiB), a rank's bytes per file, reads and writes, the share of misaligned
    accesses, re-reads and rewrites, opens per file (100 to 5,000 for 15% of the jobs), the
    spread between ranks. 85% of the jobs write a STDOUT record, 8% a STDIO data file. A
    file-per-process job has the records of its first ``rank_records`` ranks (a bound on the
    rows; Darshan keeps every rank's); the rows are a log's together, as ingest writes them."""
    p = _job_params(jobs, rng)
    posix = _posix_rows(p, _posix_plan(p, rng, rank_records), rng)
    parts = [
        ("posix", posix),
        ("mpiio", _mpiio_rows(p, posix, rng)),
        ("stdio", _stdio_rows(p, rng)),
    ]
    tables = [_part(p, module, cols, rng) for module, cols in parts]
    order = np.argsort(np.concatenate([cols["job"] for _, cols in parts]), kind="stable")
    return pa.concat_tables(tables).take(order)


def _job_params(jobs: pa.Table, rng) -> dict:
    """Per job: its layout, and what its records' values are drawn from."""
    n, nprocs = jobs.num_rows, np.asarray(jobs["nprocs"])
    u = rng.random(n)
    layout = np.select([u < 0.35, u < 0.7, u < 0.9], [FPP, SHARED, RANK0], MANY)
    layout[(layout == MANY) & (nprocs > 4)] = FPP
    layout[nprocs == 1] = np.where(u[nprocs == 1] < 0.07, MANY, SERIAL)

    def either(share, yes, no):
        return np.where(rng.random(n) < share, yes, no)

    return {
        "n": n,
        "nprocs": nprocs,
        "layout": layout,
        "run_time": np.asarray(jobs["run_time"]),
        "jobid": np.asarray(jobs["jobid"]),
        "uid": np.asarray(jobs["uid"]),
        "log_sha256": np.asarray(jobs["log_sha256"]),
        "size": 2.0 ** rng.uniform(5, 26, n),  # the application's access size, bytes
        "volume": np.minimum(rng.lognormal(np.log(64 * MIB), 2.5, n), 2.0**40),  # a rank's, a file
        "read_share": either(0.3, 0.0, either(0.3 / 0.7, 1.0, rng.random(n))),
        "reread": either(0.1, rng.uniform(2, 10, n), 1.0),  # bytes read / the file's bytes
        "rewrite": either(0.05, rng.uniform(2, 10, n), 1.0),  # bytes written / the file's
        "unaligned": either(0.5, rng.uniform(0, 0.05, n), rng.uniform(0.1, 1, n)),
        "unaligned_mem": either(0.8, 0.0, rng.uniform(0, 0.5, n)),
        "seq": rng.uniform(0.2, 1, n),  # the share of sequential accesses
        "bw": rng.lognormal(np.log(300 * MIB), 1, n),  # a process's bytes per second
        "latency": rng.lognormal(np.log(50e-6), 1, n),  # seconds per access
        "opens": either(0.15, rng.integers(100, 5000, n), rng.integers(1, 4, n)),  # a process's
        "meta_latency": rng.lognormal(np.log(1e-3), 1, n),  # seconds per open, stats and close
        "imbalance": either(0.5, 0.0, rng.uniform(0.2, 1.5, n)),  # sigma of a rank's bytes (log)
        "mpiio": (layout == SHARED) & (rng.random(n) < 0.7),
        # the share of MPI-IO's operations: independent only, collective only, or both
        "collective": either(0.4, 0.0, either(2 / 3, 1.0, rng.random(n))),
        "files_per_rank": rng.integers(1, 3, n),
        "group": np.where(
            (layout == FPP) & (nprocs >= 4) & (rng.random(n) < 0.3), 2 ** rng.integers(1, 5, n), 0
        ),  # ranks per file of a group; 0: none
        "stdout": rng.random(n) < 0.85,
        "stdio_file": rng.random(n) < 0.08,
    }


def _expand(counts) -> tuple:
    """Row i of each job's counts[job] rows: (its job, its number among the job's rows)."""
    counts = np.asarray(counts, np.int64)
    job = np.repeat(np.arange(len(counts)), counts)
    return job, np.arange(len(job)) - np.repeat(np.cumsum(counts) - counts, counts)


def _posix_plan(p: dict, rng, rank_records: int) -> dict:
    """Every job's POSIX records: job, rank (-1: shared by all), kind, k (the file's number
    among the job's of its kind)."""
    n, layout, nprocs = p["n"], p["layout"], p["nprocs"]
    ranks = np.minimum(nprocs, rank_records)
    own = np.select(
        [layout == SERIAL, layout == FPP, layout == SHARED, layout == RANK0],
        [
            np.minimum(rng.geometric(0.4, n), 20),
            ranks * p["files_per_rank"],
            rng.integers(0, 3, n),
            rng.integers(1, 7, n),
        ],
        nprocs * rng.integers(40, 160, n),
    )
    shared = np.select(
        [layout == SHARED, layout == FPP],
        [rng.integers(1, 4, n), (rng.random(n) < 0.4).astype(int)],
        0,
    )
    job_own, k_own = _expand(own)
    cycle = np.where(layout == FPP, ranks, nprocs)[job_own]  # a process's files in turn
    rank_own = np.where(np.isin(layout[job_own], (FPP, MANY)), k_own % cycle, 0)
    job_shared, k_shared = _expand(shared)
    job_group, rank_group = _expand(np.where(p["group"] > 0, ranks, 0))
    return {
        "job": np.concatenate([job_own, job_shared, job_group]),
        "k": np.concatenate([k_own, k_shared, rank_group // p["group"][job_group]]),
        "kind": np.repeat(
            [RANK_FILE, SHARED_FILE, GROUP_FILE], [len(job_own), len(job_shared), len(job_group)]
        ),
        "rank": np.concatenate([rank_own, np.full(len(job_shared), -1), rank_group]),
    }


def _posix_rows(p: dict, plan: dict, rng) -> dict:
    """POSIX's values of the planned records: a process's own files, rank 0's small inputs (in a
    shared-file job), files every rank opened (one record of all: bytes, counts and times summed
    over the ranks, as Darshan reduces them)."""
    job, rank, kind = plan["job"], plan["rank"], plan["kind"]
    m, layout, nprocs = len(job), p["layout"][job], p["nprocs"][job]
    shared = rank == -1
    procs = np.where(shared, nprocs, 1)  # the processes a record sums
    small_input = (kind == RANK_FILE) & (layout == SHARED)
    input_all = shared & (layout == FPP)  # an input every rank reads whole
    volume = p["volume"][job] * np.exp(p["imbalance"][job] * rng.standard_normal(m))
    volume = np.where(layout == MANY, volume / 100, volume)
    volume = np.where(small_input, rng.lognormal(np.log(16 * KIB), 1, m), volume)
    total = np.maximum(volume * procs, 1).astype(np.int64)
    read_share = np.where(small_input | input_all, 1.0, p["read_share"][job])
    cols = {"job": job, "k": plan["k"], "kind": kind, "rank": rank, "shared": shared}
    cols["bytes_read"] = (total * read_share).astype(np.int64)
    cols["bytes_written"] = total - cols["bytes_read"]
    reread = np.where(input_all, nprocs, p["reread"][job])
    extent = np.maximum(cols["bytes_written"] / p["rewrite"][job], cols["bytes_read"] / reread)
    # a rank of a group accesses its block of the file, after those of the ranks before it
    extent *= np.where(kind == GROUP_FILE, rank % np.maximum(p["group"][job], 1) + 1, 1)
    cols["max_byte"] = np.maximum(extent.astype(np.int64) - 1, 0)
    size = p["size"][job] * rng.lognormal(0, 0.3, m)
    collective = p["mpiio"][job] & shared & (p["collective"][job] >= 0.5)
    size = np.where(collective, np.maximum(size, 4 * MIB), size)  # the aggregators' requests
    size = np.where(small_input, 4 * KIB, size)
    cols |= _accesses(p, job, cols, size, collective, rng)
    cols["opens"] = np.where(small_input, 1, p["opens"][job] * procs)
    cols["mode"] = np.where(cols["bytes_written"] > 0, 0o644, 0)  # created: opened with a mode
    cols["sharing"] = np.select([shared, kind == GROUP_FILE], ["N:1", "N:M"], "N:N")
    return cols | _times(p, job, cols, procs, rng)


def _accesses(p: dict, job, cols: dict, size, aligned, rng) -> dict:
    """POSIX's counts of accesses of ``size`` bytes (about): per size bin, under 1 MiB, not
    aligned to the block (a tenth of the job's share where MPI-IO's aggregators made them),
    sequential, seeks."""
    reads = np.ceil(cols["bytes_read"] / size).astype(np.int64)
    writes = np.ceil(cols["bytes_written"] / size).astype(np.int64)
    out = {"reads": reads, "writes": writes}
    for op, count in (("read", reads), ("write", writes)):
        bins = _bins(count, size)
        out |= {f"{op}_{b.lower()}": bins[:, i] for i, b in enumerate(SIZE_BINS)}
        out[f"small_{op}s"] = bins[:, :5].sum(axis=1)
    ops = reads + writes
    share = p["unaligned"][job] * rng.uniform(0.5, 1.5, len(job)) * np.where(aligned, 0.1, 1)
    out["unaligned"] = np.minimum(ops, ops * share).astype(np.int64)
    out["unaligned_mem"] = (ops * p["unaligned_mem"][job]).astype(np.int64)
    out["seq_reads"] = (reads * p["seq"][job]).astype(np.int64)
    out["seq_ops"] = out["seq_reads"] + (writes * p["seq"][job]).astype(np.int64)
    out["seeks"] = ops - out["seq_ops"]
    return out


def _bins(count, size) -> np.ndarray:
    """count accesses of about ``size`` bytes per size bin: 80% in size's, 10% in each beside."""
    b = np.searchsorted(BIN_EDGES, size, side="right")
    out = np.zeros((len(count), len(SIZE_BINS)), np.int64)
    rows, tenth = np.arange(len(count)), count // 10
    out[rows, np.maximum(b - 1, 0)] += tenth
    out[rows, np.minimum(b + 1, len(SIZE_BINS) - 1)] += tenth
    out[rows, b] += count - 2 * tenth
    return out


def _times(p: dict, job, cols: dict, procs, rng) -> dict:
    """A record's times, summed over the processes it sums (Darshan's *_TIME): bytes at the
    job's bandwidth, accesses at its latency, opens at its metadata latency, scaled down where a
    process would not fit in the job's run time; its slowest process's timestamps within it."""
    m, run_time = len(job), p["run_time"][job]
    read = cols["bytes_read"] / p["bw"][job] + cols["reads"] * p["latency"][job]
    write = cols["bytes_written"] / p["bw"][job] + cols["writes"] * p["latency"][job]
    meta = cols["opens"] * p["meta_latency"][job] * rng.lognormal(0, 0.3, m)
    slow = 1 + np.where(procs > 1, rng.uniform(0, 0.3, m) + p["imbalance"][job] / 2, 0)
    per_rank = (read + write + meta) / procs
    fit = np.minimum(1, 0.9 * run_time / np.maximum(per_rank * slow, 1e-9))
    read, write, meta, per_rank = read * fit, write * fit, meta * fit, per_rank * fit
    open_start = rng.random(m) * (run_time - per_rank * slow)
    read_start = open_start + meta / procs / 2
    read_end = read_start + read / procs
    write_end = read_end + write / procs
    has_r, has_w = cols["reads"] > 0, cols["writes"] > 0
    out = {
        "read_time": read,
        "write_time": write,
        "meta_time": meta,
        "open_start": open_start,
        "read_start": np.where(has_r, read_start, 0.0),
        "read_end": np.where(has_r, read_end, 0.0),
        "write_start": np.where(has_w, read_end, 0.0),
        "write_end": np.where(has_w, write_end, 0.0),
        "close_end": open_start + per_rank * slow,
    }
    return out | _extremes(p, job, cols, procs > 1, per_rank, slow, rng)


def _extremes(p: dict, job, cols: dict, shared, per_rank, slow, rng) -> dict:
    """A shared record's fastest and slowest ranks: which, their bytes and I/O time (Darshan's
    *_FASTEST_RANK, ...; zero in a process's own record, as Darshan leaves them)."""
    m, nprocs, spread = len(job), p["nprocs"][job], np.minimum(p["imbalance"][job], 1)
    slowest = rng.integers(0, nprocs)
    fastest = (slowest + rng.integers(1, np.maximum(nprocs, 2))) % nprocs
    total = cols["bytes_read"] + cols["bytes_written"]
    mean = total / nprocs
    values = {
        "slowest_rank": slowest,
        "fastest_rank": fastest,
        "slowest_rank_bytes": np.minimum(total, mean * (1 + rng.random(m) * spread)),
        "fastest_rank_bytes": mean * (1 - 0.9 * rng.random(m) * spread),
        "slowest_rank_time": per_rank * slow,
        "fastest_rank_time": per_rank * rng.uniform(0.5, 1, m),
    }
    return {
        name: np.where(shared, v, 0).astype(np.float64 if name.endswith("time") else np.int64)
        for name, v in values.items()
    }


def _mpiio_rows(p: dict, posix: dict, rng) -> dict:
    """MPI-IO's records of the shared files of the jobs that use it: the same files (record,
    path, bytes), the application's calls of the job's access size, collective or independent
    in the job's proportion, their times a little above POSIX's."""
    sel = (posix["rank"] == -1) & p["mpiio"][posix["job"]]
    same = (
        "job",
        "k",
        "kind",
        "rank",
        "shared",
        "sharing",
        "bytes_read",
        "bytes_written",
        "open_start",
        "read_start",
        "write_start",
        "close_end",
        "fastest_rank",
        "slowest_rank",
        "fastest_rank_bytes",
        "slowest_rank_bytes",
    )
    cols = {c: posix[c][sel] for c in same}
    job, m = cols["job"], int(sel.sum())
    size = p["size"][job] * rng.lognormal(0, 0.3, m)
    collective = p["collective"][job]
    for op, moved in (("read", "bytes_read"), ("write", "bytes_written")):
        calls = np.ceil(cols[moved] / size).astype(np.int64)
        cols[f"{op}s"] = calls
        cols[f"coll_{op}s"] = np.round(calls * collective).astype(np.int64)
        cols[f"indep_{op}s"] = calls - cols[f"coll_{op}s"]
        bins = _bins(calls, size)
        cols |= {f"{op}_{b.lower()}": bins[:, i] for i, b in enumerate(SIZE_BINS)}
    cols["coll_ops"] = cols["coll_reads"] + cols["coll_writes"]
    cols["indep_ops"] = cols["indep_reads"] + cols["indep_writes"]
    cols["opens"] = p["nprocs"][job]
    above = rng.uniform(1.0, 1.2, m)  # MPI-IO's time: POSIX's and its own
    for t in ("read_time", "write_time", "meta_time", "slowest_rank_time", "fastest_rank_time"):
        cols[t] = posix[t][sel] * above
    for t in ("read_end", "write_end"):
        cols[t] = np.where(posix[t][sel] > 0, posix[t][sel] * above, 0.0)
    cols["close_end"] = np.maximum(
        cols["close_end"], np.maximum(cols["read_end"], cols["write_end"])
    )
    return cols


def _stdio_rows(p: dict, rng) -> dict:
    """STDIO's records: the job's STDOUT (rank 0's; all ranks' in a rank -1 record for 30% of
    the parallel jobs), and a data file read or written through fread and fwrite."""
    job_out, k_out = _expand(p["stdout"])
    job_file, k_file = _expand(p["stdio_file"])
    job, k = np.concatenate([job_out, job_file]), np.concatenate([k_out, k_file])
    kind = np.repeat([STDOUT, STDIO_FILE], [len(job_out), len(job_file)])
    m, nprocs, out = len(job), p["nprocs"][job], kind == STDOUT
    shared = (nprocs > 1) & (rng.random(m) < 0.3)
    procs = np.where(shared, nprocs, 1)
    per_rank = np.where(
        out, rng.lognormal(np.log(8 * KIB), 2, m), rng.lognormal(np.log(256 * MIB), 2, m)
    )
    total = np.maximum(per_rank * procs, 1).astype(np.int64)
    bytes_read = (total * np.where(out, 0.0, p["read_share"][job])).astype(np.int64)
    op_size = np.where(out, rng.uniform(20, 200, m), 2.0 ** rng.uniform(6, 16, m))
    cols = {"job": job, "k": k, "kind": kind, "rank": np.where(shared, -1, 0), "shared": shared}
    cols |= {"bytes_read": bytes_read, "bytes_written": total - bytes_read}
    cols["reads"] = np.ceil(bytes_read / op_size).astype(np.int64)
    cols["writes"] = np.ceil(cols["bytes_written"] / op_size).astype(np.int64)
    cols["opens"] = np.where(out, 0, procs)  # STDOUT is open when the program starts
    cols["seeks"] = np.where(out, 0, cols["opens"])
    cols["max_byte"] = np.maximum(cols["bytes_written"], bytes_read) - 1
    cols["sharing"] = np.where(shared, "N:1", "N:N")
    return cols | _times(p, job, cols, procs, rng)


# A record's path by its category (_names): a process's file, rank 0's input, an input every
# rank reads, a shared file, a group's file, STDOUT, a STDIO data file.
PATHS = (
    "{d}/rank{r}/out{k}.dat",
    "/home/u{u}/input{k}.cfg",
    "{d}/input.nc",
    "{d}/shared{k}.h5",
    "{d}/node{k}.dat",
    "<STDOUT>",
    "{d}/log{k}.txt",
)


def _names(p: dict, cols: dict) -> tuple:
    """The records' paths, and their record ids (a hash of the file, as Darshan's of its path:
    the same in every module, and in every job for STDOUT and a user's inputs)."""
    job, kind, k, layout = cols["job"], cols["kind"], cols["k"], p["layout"][cols["job"]]
    cat = np.select(
        [kind == RANK_FILE, kind == SHARED_FILE, kind == GROUP_FILE, kind == STDOUT],
        [np.where(layout == SHARED, 1, 0), np.where(layout == FPP, 2, 3), 4, 5],
        6,
    )
    folder = [f"/scratch/p{u % 97}/{j}" for u, j in zip(p["uid"], p["jobid"], strict=True)]
    uid = p["uid"]
    paths = [
        PATHS[c].format(d=folder[j], r=r, k=i, u=uid[j])
        for c, j, r, i in zip(cat, job, cols["rank"], k, strict=True)
    ]
    key = np.select([cat == 1, cat == 5], [uid[job], 0], p["jobid"][job]).astype(np.uint64)
    x = (key * np.uint64(16) + cat.astype(np.uint64)) * np.uint64(1 << 24) + k.astype(np.uint64)
    # splitmix64's finalizer: a bijection of uint64
    x = (x ^ (x >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
    x = (x ^ (x >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
    return paths, x ^ (x >> np.uint64(31))


def _part(p: dict, module: str, cols: dict, rng) -> pa.Table:
    """One module's records as files rows: its columns, their names, the log's keys, and a
    value for each column of the schema this module does not know (generic_column)."""
    m = len(cols["job"])
    paths, ids = _names(p, cols)
    cols = cols | {
        "run_id": [RUN] * m,
        "log_sha256": p["log_sha256"][cols["job"]],
        "module": [module] * m,
        "path": paths,
        "record_id": ids,
    }
    for field in TABLES["files"]:
        if field.name not in KNOWN:
            cols[field.name] = generic_column(field, cols, p["nprocs"][cols["job"]], rng)
    return table("files", m, {k: v for k, v in cols.items() if v is not None})


def generic_column(field: pa.Field, cols: dict, nprocs, rng):
    """A value for a files column this module does not know, by its name and type: a rank
    (integers named *rank*), bytes (*byte*: up to the record's), a count (other integers: up to
    its accesses), seconds (floats: up to its I/O time), False; None (null) for other types."""
    m = len(cols["job"])
    if pa.types.is_integer(field.type):
        if "rank" in field.name:
            return np.where(cols["rank"] >= 0, cols["rank"], rng.integers(0, nprocs))
        moved = cols["bytes_read"] + cols["bytes_written"]
        base = moved if "byte" in field.name else cols["reads"] + cols["writes"]
        return (base * rng.random(m)).astype(np.int64)
    if pa.types.is_floating(field.type):
        return (cols["read_time"] + cols["write_time"] + cols["meta_time"]) * rng.random(m)
    if pa.types.is_boolean(field.type):
        return np.zeros(m, bool)
    return None


def unknown_columns() -> list[str]:
    """The files columns filled by generic_column: the schema's that diagnosable_files does not
    know."""
    return [f.name for f in TABLES["files"] if f.name not in KNOWN]


def table(name: str, n: int, columns: dict) -> pa.Table:
    """The table with the store's schema: the columns given (cast to the schema's types), the
    others null."""
    arrays = [
        _arrow(columns[f.name], f.type) if f.name in columns else pa.nulls(n, f.type)
        for f in TABLES[name]
    ]
    return pa.Table.from_arrays(arrays, schema=TABLES[name])


def _arrow(values, type_: pa.DataType) -> pa.Array:
    try:
        return pa.array(values, type_)
    except (pa.ArrowInvalid, pa.ArrowTypeError):  # e.g. integers for a float column
        return pa.array(values).cast(type_, safe=False)


def with_modules(jobs: pa.Table, files: pa.Table) -> pa.Table:
    """jobs with ``modules`` as ingest writes it: the modules its files rows come from, in the
    log's order (their ids), PyDarshan's names "+"-joined."""
    job = np.asarray(pc.index_in(files["log_sha256"], value_set=jobs["log_sha256"]))
    token = np.asarray(files["module"])
    found = sorted(
        (modules.BY_NAME[modules.NAMES[t]] for t in np.unique(token)), key=lambda m: m.module_id
    )
    has = {m.name: np.bincount(job[token == m.token], minlength=jobs.num_rows) > 0 for m in found}
    names = ["+".join(name for name in has if has[name][i]) for i in range(jobs.num_rows)]
    where = jobs.schema.get_field_index("modules")
    return jobs.set_column(where, "modules", pa.array(names, pa.string()))


def make_store(
    root: Path, n: int, files=synthetic_files, seed: int = 2026, chunk=None, group=None
) -> Path:
    """A store at root of n synthetic jobs and the files rows ``files(jobs, rng)`` gives them,
    committed as one log tree's run of study "facility", its views made. ``chunk``: the jobs
    whose rows are made at once (default all; less memory, other draws); ``group``: rows
    written at once, hence the row groups (default all, up to Parquet's 1 Mi rows; ingest
    writes PartWriter.FLUSH_ROWS)."""
    rng = np.random.default_rng(seed)
    store = Store(root)
    writer = PartWriter(store, RUN)
    jobs = synthetic_jobs(n, rng)
    for start in range(0, n, chunk or max(n, 1)):
        some = jobs.slice(start, chunk or n)
        rows = files(some, rng)
        for name, data in (("jobs", with_modules(some, rows)), ("files", rows)):
            for at in range(0, data.num_rows, group or max(data.num_rows, 1)):
                writer.write(name, data.slice(at, group or data.num_rows))
    writer.write(
        "runs",
        [
            {
                "run_id": RUN,
                "system": "facility",
                "status": TREE_STATUS,
                "study": "facility",
                "manifest_path": "facility-logs",
            }
        ],
    )
    writer.commit()
    store.refresh_views()
    return root
