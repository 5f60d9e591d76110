"""The job-level modules (:data:`iostudy.logs.modules.JOB_MODULES`): counters of a job, its
ranks or its nodes, not of files, as the store's ``jobcounters`` rows: one per record and
counter that is not 0 (Darshan starts every counter at 0: a counter without a row is 0),
named as darshan-parser prints it; APMPI's MPI_PROCESSOR_NAME is each row's ``node``.

- BG/Q (Blue Gene/Q): one record per job, the block it ran on (BGQ_NNODES, BGQ_RANKSPERNODE,
  BGQ_DDRPERNODE, the torus' dimensions, ...); a generic record, read by libdarshan-util
  (which up-converts version 1 and byte-swaps Mira's big-endian logs).
- APXC (AutoPerf, Cray XC): a header (the job's groups, chassis, blades, the nodes' memory and
  cluster modes by their code in :data:`MEMORY_MODES` and :data:`CLUSTER_MODES`, and whether
  every node had the same, the application id), then a record per Aries router of the job's
  nodes (its group, chassis, blade, node and its 392 flit and stall counters).
- APMPI (AutoPerf, MPI): a header (the variance of the ranks' MPI time), then a record per
  rank (MPI_PROCESSOR_NAME: its node; each MPI operation's calls, bytes, message sizes and
  times; its total MPI time).

AutoPerf's regions are a header record, then records of another size, and libdarshan-util
tells them apart by a flag it keeps in a static variable for the life of the process
(darshan-apmpi-logutils.c and darshan-apxc-logutils.c, ``static int first_rec``): the second
log a process reads has its header read as a rank's record. So the check of a log's regions
(:mod:`iostudy.logs.logregions`) takes them from the bytes it inflates: :func:`walk`, which
also refuses a region that is not a header (with its module's magic number) and whole
records.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.logs.recordlayout import record_layout, struct_dtype

np = deferred("numpy")
backend = deferred("darshan.backend.cffi_backend")

# The header's magic numbers (darshan-{apxc,apmpi}-log-format.h: the letters, big-endian)
MAGIC = {"APXC": int.from_bytes(b"AUTOPERF", "big"), "APMPI": int.from_bytes(b"APMPI", "big")}
# APXC's memory and cluster modes as darshan-parser names them (bit 31: not the same on
# every node); PyDarshan's apxc.py has the same lists
MEMORY_MODES = ("unknown", "flat", "equal", "split", "cache")
CLUSTER_MODES = ("unknown", "all2all", "quad", "hemi", "snc4", "snc2")
_INCONSISTENT = 1 << 31


@functools.cache
def _dtypes(mod: str) -> tuple[np.dtype, np.dtype]:
    """The header's and a rank's (router's) record of an AutoPerf module."""
    return tuple(
        struct_dtype(backend._structdefs[f"{mod}-{part}"].rstrip(" *"))
        for part in ("HEADER", "PERF")
    )


def rank_record_size(mod: str) -> int:
    """The size of an AutoPerf module's record per rank (or router): what the record bound of
    the check counts."""
    return _dtypes(mod)[1].itemsize


@functools.cache
def _names(mod: str) -> dict[str, list[str]]:
    """An AutoPerf record's array fields -> their counters' names (libdarshan-util's tables)."""
    if mod == "APXC":
        return {"counters": backend.counter_names(mod)}
    return {
        "counters": backend.counter_names(mod),
        "fcounters": backend.counter_names(mod, fcnts=True, special="mpiop_totaltime_"),
        "fsynccounters": backend.counter_names(mod, fcnts=True, special="mpiop_synctime_"),
        "fglobalcounters": backend.counter_names(mod, fcnts=True, special="mpi_global_"),
    }


def walk(mod: str, raw: bytes, order: str) -> list[dict]:
    """The records of an AutoPerf module's inflated region (of a log in byte order ``order``)
    as {rank, node, values {counter: int or float}} (the values not 0; node: APMPI's
    MPI_PROCESSOR_NAME of a rank, else None), the header first;
    ValueError, naming why, when the region is not a header with the module's magic number
    and whole records."""
    head, rank = _dtypes(mod)
    size = len(raw) - head.itemsize
    if size < 0 or size % rank.itemsize:
        raise ValueError(
            f"{mod} region: {len(raw)} bytes, not a {head.itemsize}-byte header "
            f"and whole {rank.itemsize}-byte records"
        )
    header = np.frombuffer(raw, head.newbyteorder(order), 1)[0]
    if int(header["magic"]) != MAGIC[mod]:
        raise ValueError(
            f"{mod} region: its header's magic number is {int(header['magic'])}, "
            f"not {mod}'s {MAGIC[mod]}"
        )
    ranks = np.frombuffer(raw, rank.newbyteorder(order), offset=head.itemsize)
    values = _apxc_header(header) if mod == "APXC" else _apmpi_header(header)
    records = [{"rank": int(header["rank"]), "node": None, "values": values}]
    nodes = _nodes(ranks) if mod == "APMPI" else [None] * len(ranks)
    per_rank = zip(ranks["rank"].tolist(), nodes, _rank_values(mod, ranks), strict=True)
    records += [{"rank": r, "node": node, "values": v} for r, node, v in per_rank]
    return records


def _nodes(ranks) -> list[str]:
    """APMPI's MPI_PROCESSOR_NAME of each rank's record (a C string)."""
    return [
        name.split(b"\0")[0].decode("utf-8", "backslashreplace")
        for name in ranks["node_name"].tolist()
    ]


def _apxc_header(header) -> dict:
    """An APXC header's values as darshan-parser names them (the modes by their code: an
    index of MEMORY_MODES, CLUSTER_MODES)."""
    values = {
        "APXC_GROUPS": int(header["ngroups"]),
        "APXC_CHASSIS": int(header["nchassis"]),
        "APXC_BLADES": int(header["nblades"]),
    }
    for what, modes in (("MEMORY", MEMORY_MODES), ("CLUSTER", CLUSTER_MODES)):
        code = int(header[f"{what.lower()}_mode"])
        mode = code & ~_INCONSISTENT
        if not 0 <= mode < len(modes):
            raise ValueError(f"APXC header: {what.lower()} mode {code}, not one of {modes}")
        values[f"APXC_{what}_MODE"] = mode
        values[f"APXC_{what}_MODE_CONSISTENT"] = int(not code & _INCONSISTENT)
    values["APXC_APPLICATION_ID"] = int(header["appid"])
    return {name: v for name, v in values.items() if v}


def _apmpi_header(header) -> dict:
    """An APMPI header's values as darshan-parser prints them."""
    values = {"MPI_TOTAL_COMM_TIME_VARIANCE": float(header["apmpi_f_variance_total_mpitime"])}
    if header["sync_flag"]:
        values["MPI_TOTAL_COMM_SYNC_TIME_VARIANCE"] = float(
            header["apmpi_f_variance_total_mpisynctime"]
        )
    return {name: v for name, v in values.items() if v}


def _rank_values(mod: str, ranks) -> list[dict]:
    """{name: value} of the values not 0 of each AutoPerf record of a rank (a router), in
    darshan-parser's order. A whole field of all the records at once: a router's 392 counters
    one by one took most of an AutoPerf log's reading."""
    out = [{} for _ in range(len(ranks))]
    for field, names in _named_fields(mod):
        block = (
            np.column_stack([ranks[f] for f in field]) if isinstance(field, tuple) else ranks[field]
        )
        rows, cols = np.nonzero(block)
        picked, values = names[cols].tolist(), block[rows, cols].tolist()
        bounds = np.searchsorted(rows, np.arange(len(ranks) + 1)).tolist()
        for record, (start, end) in zip(out, itertools.pairwise(bounds), strict=True):
            record.update(zip(picked[start:end], values[start:end], strict=True))
    return out


@functools.cache
def _named_fields(mod: str) -> list[tuple]:
    """(field, its counters' names as an object array) of an AutoPerf record of a rank (a
    router), in darshan-parser's order; APXC's four fields that place its router come first,
    as one (a tuple of fields)."""
    out = []
    if mod == "APXC":
        place = ("group", "chassis", "blade", "node")
        out.append((place, np.array([f"APXC_{f.upper()}" for f in place], dtype=object)))
    out += [(field, np.array(names, dtype=object)) for field, names in _names(mod).items()]
    return out


def generic_records(mod: str, stored: bytes) -> list[dict]:
    """The records of a generic job-level module (BG/Q; ``stored``: its records as the reader
    stores them, :func:`iostudy.logs.recordlayout.record_layout`'s) as :func:`walk` gives
    AutoPerf's. Every one: a job's record is no file, and has no name (darshan-bgq.c registers
    none; PyDarshan's DarshanReport, which keeps named records only, drops it)."""
    lay = record_layout(mod)
    names = lay.cnames + lay.fnames
    records = []
    for record in np.frombuffer(stored, lay.dtype):
        values = record["counters"].tolist() + record["fcounters"].tolist()
        pairs = zip(names, values, strict=True)
        values = {n: v for n, v in pairs if v}
        records.append({"rank": int(record["rank"]), "node": None, "values": values})
    return records


def nodes(job_records: dict, nprocs: int) -> int | None:
    """The job's compute nodes as its job-level modules say (iostudy.core.nodecount's "log"),
    or None: BG/Q's block, its ranks over BGQ_RANKSPERNODE at most BGQ_NNODES (a job of 4
    ranks at 16 a node in a block of 128 nodes ran on 1); else APMPI's records, when there is
    one of every rank, by their distinct MPI_PROCESSOR_NAME."""
    if bgq := job_records.get("BG/Q"):
        values = bgq[0]["values"]
        per_node, block = values.get("BGQ_RANKSPERNODE"), values.get("BGQ_NNODES")
        if per_node and block and nprocs > 0:
            return nodecount.nodes_for(nprocs, per_node, block)
    ranks = job_records.get("APMPI", [])[1:]  # after its header
    if ranks and len({r["rank"] for r in ranks}) == nprocs and all(r["node"] for r in ranks):
        return len({r["node"] for r in ranks})
    return None


# A record's values on each of its jobcounters rows (iostudy.store.store.TABLES); then the
# counter's name and its value (an int in ``value``, a float in ``fvalue``)
SAME = ("run_id", "log_sha256", "module", "record", "rank", "node")


class CounterRows(NamedTuple):
    """The jobcounters rows of one kind of value: each record's SAME values and how many rows
    it has, then every row's counter and value, in order."""

    records: list
    counts: list
    counters: list
    values: list


def counter_rows(entries) -> dict[type, CounterRows]:
    """The jobcounters rows of logs [(run, log)] (log: the dict of
    :func:`iostudy.logs.darshanlog_worker.read`), by the kind of their value (int, float):
    each log's job-level modules' records, a row per value, with the record's node (APMPI's)
    and its index among its module's (0: AutoPerf's header; a rank's record may share its rank,
    and a counter's name: APXC_CHASSIS is the job's chassis in the header, a router's in the
    others). A record's values are given once per record: an AutoPerf log has thousands of
    rows."""
    out = {kind: CounterRows([], [], [], []) for kind in (int, float)}
    for run, log in entries:
        for mod, records in log["job_records"].items():
            for k, record in enumerate(records):
                same = (run["run_id"], run["log_sha256"], mod, k, record["rank"], record["node"])
                for kind, (names, values) in _by_kind(record["values"]).items():
                    if names:
                        rows = out[kind]
                        rows.records.append(same)
                        rows.counts.append(len(names))
                        rows.counters.extend(names)
                        rows.values.extend(values)
    return out


def _by_kind(values: dict) -> dict[type, tuple[list, list]]:
    """A record's {counter: value} as ([counters], [values]) per kind of value."""
    out = {int: ([], []), float: ([], [])}
    for name, value in values.items():
        names, kept = out[float if isinstance(value, float) else int]
        names.append(name)
        kept.append(value)
    return out
