"""What ingest's reader workers run: :mod:`iostudy.logs.logrows`' read and rows, and the dxt
table's rows of the logs' DXT traces (:mod:`iostudy.logs.dxt`).

A module of its own above logrows: the DXT segments are taken from a log's bytes by the check
libdarshan-util's reading depends on (:mod:`iostudy.logs.logregions`), which logrows imports,
and their rows are Columns as logrows makes them.

The dxt table (:data:`COLUMNS`): a row per segment kept.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.logs import dxt, logrows, plausibility
from iostudy.logs.darshanlog_worker import CheckedLog
from iostudy.logs.logrows import Columns, Repeated

np = deferred("numpy")

# Segments a Columns of dxt rows holds at most: ingest's writer turns one into a table at a
# time, and a log's million segments at once would cost it a few hundred MiB.
CHUNK = 1 << 16

#: the store's dxt table (iostudy.store.store.TABLES): its columns and their pyarrow types
COLUMNS = (
    ("run_id", "string"),
    ("log_sha256", "string"),
    ("module", "string"),  # the files table's token of the module traced: posix, mpiio
    ("record_id", "uint64"),  # the file's, as in the files table
    ("path", "string"),
    ("rank", "int64"),
    ("hostname", "string"),
    ("operation", "string"),  # read or write
    ("offset", "int64"),  # null: not recorded (DXT_MPIIO 1, or its -1: logs.dxt.by_offsets)
    ("length", "int64"),
    ("start", "float64"),  # seconds since the job started
    ("end", "float64"),
)


def read_for_ingest(checked: CheckedLog, facts: tuple) -> dict:
    """logrows.read_for_ingest, with the log's DXT trace (``dxt``) and its quirks (segments
    dropped over the bound, a DXT version not read); raises ImplausibleLog (the pool
    quarantines the log) when a kept segment is out of the store's bounds."""
    log = logrows.read_for_ingest(checked, facts)
    if checked.traces is not None:
        plausibility.raise_problems(dxt.problems(checked.traces, int(log["job"]["nprocs"])))
    log["quirks"] += [plausibility.Quirk(r) for r in dxt.quirks(checked.traces, log["modules"])]
    log["dxt"] = checked.traces
    return log


def batch_rows(run_info: dict, entries) -> dict[str, list[Columns]]:
    """logrows.batch_rows' tables of a batch of logs [(LOG_FACTS values, log)], and the dxt
    table's."""
    return logrows.batch_rows(run_info, entries) | {"dxt": dxt_columns(run_info, entries)}


def weight(log: dict) -> float:
    """A log's share of a worker's answer (iostudy.logs.logpool): its kept DXT segments."""
    return dxt.weight(log.get("dxt"))


def dxt_columns(run_info: dict, entries) -> list[Columns]:
    """The dxt rows of a batch's logs, Columns of at most CHUNK rows: of the segments with
    offsets, and of those without (a column left out is null)."""
    sha = logrows.LOG_FACTS.index("log_sha256")
    groups = {True: [[]], False: [[]]}  # per kind, lists of (log sha256, part, names)
    for facts, log in entries:
        for whole in log["dxt"].parts if log.get("dxt") is not None else ():
            for part, offsets in dxt.by_offsets(whole) if len(whole.segments) else ():
                for piece in dxt.pieces(part, CHUNK):
                    group = groups[offsets][-1]
                    if sum(len(p.segments) for _, p, _ in group) + len(piece.segments) > CHUNK:
                        groups[offsets].append(group := [])
                    group.append((facts[sha], piece, log["name_records"]))
    return [
        _columns(run_info["run_id"], group, offsets)
        for offsets, kind in groups.items()
        for group in kind
        if group
    ]


def _columns(run_id: str, group: list, offsets: bool) -> Columns:
    """The rows of parts [(log sha256, dxt.Part, its log's names)], column-wise: the record's
    values repeated over its runs of segments."""
    per_part = np.array([len(part.segments) for _, part, _ in group])
    runs = _joined([part.counts for _, part, _ in group])
    ids = _joined([part.ids for _, part, _ in group])
    segments = _joined([part.segments for _, part, _ in group])
    paths = [names.get(rid) for _, part, names in group for rid in part.ids.tolist()]
    data = {
        "run_id": Repeated([run_id], np.array([len(segments)])),
        "log_sha256": Repeated([sha for sha, _, _ in group], per_part),
        "module": Repeated([dxt.TOKENS[part.module] for _, part, _ in group], per_part),
        # a record's values over its run of segments: repeated by the writer, a chunk at a time
        "record_id": Repeated(ids.tolist(), runs),
        "rank": Repeated(_joined([part.ranks for _, part, _ in group]).tolist(), runs),
        "path": Repeated(paths, runs),
        "hostname": Repeated([h for _, part, _ in group for h in part.hosts], runs),
        "operation": Repeated(
            ["write" if w else "read" for _, part, _ in group for w in part.writes.tolist()], runs
        ),
        **({"offset": segments["offset"]} if offsets else {}),
        "length": segments["length"],
        "start": segments["start"],
        "end": segments["end"],
    }
    return Columns(len(segments), data)


def _joined(arrays: list):
    """The arrays end to end; the one array itself when there is one (a big trace's chunk:
    its segments are a view of the log's, not copied)."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)
