"""Darshan logs into the store: finding them (never following a link), hashing them, reading
them with the worker pool into a writer's parts, and the ingest of a log tree.

A log tree (any folder of logs without a manifest, e.g. a facility's Darshan log directory, or
one log file: a tree of one log) is a source like a run directory: see :func:`ingest_tree`. Its
logs already read are found by path, size and mtime, so a re-ingest of an unchanged tree reads
and hashes nothing. A run directory's
logs (:mod:`iostudy.store.ingest_run`) are found and read by the same functions.

Every log is read by :func:`iostudy.logs.darshanlog_worker.dump` in a long-lived worker process of
:class:`iostudy.logs.logpool.ReaderPool`, one log at a time; a log that cannot be read, or that
crashes the reader, goes to the quarantine table with the reason, and the others go on.
"""

from __future__ import annotations

import os
import stat
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.core.provenance import sha256_file
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logrows import utc_naive
from iostudy.store import catalog as catalog_mod
from iostudy.store.ingest_writer import Counts, PartWriter, quarantine, rel_path
from iostudy.store.store import DEFAULT_STUDY, TREE_STATUS, IngestError, Store, connect

duckdb = deferred("duckdb")
pa = deferred("pyarrow")
pc = deferred("pyarrow.compute")
pq = deferred("pyarrow.parquet")

# The tables of a log's rows (iostudy.logs.dxtrows.batch_rows), all keyed by its log_sha256.
LOG_ROWS = ("jobs", "files", "probes", "lustre", "jobcounters", "accesssizes", "heatmap", "dxt")
# The default --commit-every: a log tree's logs committed at a time.
DEFAULT_COMMIT_EVERY = 20_000


class LogFile(NamedTuple):
    """A log found in a run or a tree: the file read, its log_path (as the store keeps it:
    relative to the store's base), lstat (never followed: a link is not read), and, once
    hashed, its log_sha256; problem: why it is quarantined without being read (not a regular
    file, cannot be hashed)."""

    file: str
    log_path: str
    st: os.stat_result
    log_sha256: str | None = None
    problem: str | None = None


_FILE_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
    (stat.S_ISDIR, "a directory"),
)


def _not_regular(st: os.stat_result) -> str | None:
    if stat.S_ISREG(st.st_mode):
        return None
    kind = next((name for test, name in _FILE_KINDS if test(st.st_mode)), "not a regular file")
    return f"not read: {kind}, not a regular file"


def scan_logs(folder: Path, base: Path):
    """The folder's Darshan logs (*.darshan, any depth; symlinks, to files or folders, never
    followed) as LogFile items with lstat, in a stable order; a generator: a facility tree is
    walked, not listed into memory first. A *.darshan that is not a regular file comes with its
    problem, to be quarantined without being opened. A log file for folder: that log alone."""
    top, base = str(Path(folder).resolve()), str(Path(base).resolve()).rstrip("/") + "/"
    # the link's path relative to base, not its target's: a slice when top is below base
    rel = (
        (lambda p: p[len(base) :]) if top.startswith(base) else (lambda p: os.path.relpath(p, base))
    )
    if os.path.exists(top) and not os.path.isdir(top):
        st = os.lstat(top)
        yield LogFile(top, rel(top), st, problem=_not_regular(st))
        return
    for dirpath, dirs, files in os.walk(top):
        dirs.sort()
        names = sorted(files) + [d for d in dirs if d.endswith(".darshan")]
        for name in names:
            if name.endswith(".darshan"):
                path = os.path.join(dirpath, name)
                st = os.lstat(path)
                yield LogFile(path, rel(path), st, problem=_not_regular(st))


def hashed(log: LogFile) -> LogFile:
    """log with its sha256, or with the problem that kept it from being hashed."""
    if log.problem:
        return log
    try:
        return log._replace(log_sha256=sha256_file(log.file, follow=False))
    except OSError as exc:
        return log._replace(problem=f"not read: {exc.strerror or exc}")


def _facts(log: LogFile) -> tuple:
    """What the pool hands the reader with the log: logrows.LOG_FACTS."""
    return log.log_path, log.log_sha256, log.st.st_size, log.st.st_mtime_ns


def read_logs(logs, run_info: dict, writers, pool, counts: Counts, progress=None, task=None):
    """Reads logs (LogFile items) with the pool and writes their rows, or quarantines each one
    that fails with its reason, as they come back; yields the number of logs done after each
    batch. ``writers()`` is the writer to write to at that moment (a tree commits and starts a
    new one every commit_every logs, while the pool still reads)."""
    run_id = run_info["run_id"]

    def readable():
        for log in logs:
            if log.problem:  # never handed to a reader
                _quarantine(writers(), counts, run_id, log.file, _facts(log), log.problem)
                yield None
            else:
                yield log.file, _facts(log)

    for batch in pool.map((item for item in readable() if item), context=run_info):
        writer = writers()
        if batch.payload:
            for table, parts in batch.payload.items():
                if table == "dxt":  # a table at a time (iostudy.logs.dxtrows.CHUNK)
                    for chunk in parts:
                        writer.write(table, [chunk])
                else:
                    writer.write(table, parts)
            counts.logs_ingested += len(batch.done)
        for (file, facts), reason in batch.failed:
            _quarantine(writer, counts, run_id, file, facts, reason)
        if progress:
            progress.advance(task, len(batch.done) + len(batch.failed))
        yield len(batch.done) + len(batch.failed)


def _quarantine(writer, counts: Counts, run_id: str, file: str, facts: tuple, reason: str):
    log_path, log_sha256, size, mtime_ns = facts
    row = {
        "run_id": run_id,
        "path": log_path,
        "sha256": log_sha256,
        "reason": reason,
        "size": size,
        "mtime_ns": mtime_ns,
    }
    quarantine(writer, counts, row, file)


# -- a log tree ------------------------------------------------------------------------------

# A facility's log tree (Darshan's <year>/<month>/<day>/ or any layout) is a source like a run:
# its rows carry run_id "logs-<tree name>" and go into parts <run_id>.<NNNNNN>, one part per
# commit: every commit_every logs, and at the end, so that a long ingest keeps what it read.
# Each commit puts the tree's runs row (part <run_id>) in place with the part.
TREE_PREFIX = "logs-"
# The tables a log tree fills (no ReFrame report, no benchmark output).
LOG_TABLES = (*LOG_ROWS, "quarantine")


def _tree_index(store: Store, run_id: str) -> dict[str, tuple[int, int, str | None]]:
    """{log_path: (size, mtime_ns, sha256)} of every log of the tree already read (ingested or
    quarantined): those whose size and mtime are unchanged are not read, nor even hashed,
    again."""
    con = connect(store.root)
    try:
        rows = con.execute(
            "SELECT log_path, log_size, log_mtime_ns, log_sha256 FROM jobs WHERE run_id = $1 "
            "UNION ALL SELECT path, size, mtime_ns, sha256 FROM quarantine WHERE run_id = $1",
            [run_id],
        ).fetchall()
    except duckdb.BinderException:  # a store written before the columns existed
        return {}
    return {path: (size, mtime, sha) for path, size, mtime, sha in rows}


def _tree_parts(store: Store, run_id: str) -> dict[str, list[str]]:
    """table -> the names of the tree's committed parts in it."""
    catalog = store.catalog()
    return {
        t: sorted(n for n, p in catalog.parts(t).items() if p.run_id == run_id and n != run_id)
        for t in LOG_TABLES
    }


def _next_part(store: Store, run_id: str) -> int:
    numbers = [
        int(n.rsplit(".", 1)[1])
        for names in _tree_parts(store, run_id).values()
        for n in names
        if n.rsplit(".", 1)[-1].isdigit()
    ]
    return max(numbers, default=0) + 1


def _drop_rewritten(store: Store, run_id: str, log_paths: set[str], commit: catalog_mod.Commit):
    """Adds to commit the tree's committed parts without the rows of the logs at log_paths
    (logs rewritten in place since they were read: their new content replaces them)."""
    if not log_paths:
        return
    parts, catalog = _tree_parts(store, run_id), store.catalog()
    wanted = pa.array(sorted(log_paths), pa.string())
    old_shas = set()
    for name in parts["jobs"]:
        jobs = pq.read_table(catalog.part_path("jobs", name), columns=["log_path", "log_sha256"])
        hit = jobs.filter(pc.is_in(jobs["log_path"], value_set=wanted))
        old_shas |= set(hit["log_sha256"].to_pylist())
    shas = pa.array(sorted(old_shas), pa.string())
    keys = {"quarantine": ("path", wanted), "jobs": ("log_path", wanted)}
    for table, names in parts.items():
        column, values = keys.get(table, ("log_sha256", shas))
        for name in names:
            _put_filtered(catalog, table, name, run_id, column, values, commit)


def _put_filtered(catalog, table, name, run_id, column, values, commit: catalog_mod.Commit):
    """Adds to commit a copy of the part without the rows whose column is in values (when it
    has any)."""
    data = pq.read_table(catalog.part_path(table, name))
    drop = pc.is_in(data[column], value_set=values)
    if not pc.any(drop).as_py():
        return
    kept = data.filter(pc.invert(drop))
    tmp = catalog.root / table / f"{name}.parquet.tmp"
    pq.write_table(kept, tmp)
    commit.put(table, name, tmp, run_id, kept.num_rows)


def _tree_run_row(run_id: str, tree: Path, base: Path, study, system) -> dict:
    return {
        "run_id": run_id,
        "system": system,
        "status": TREE_STATUS,
        "manifest_path": rel_path(tree, base),
        "study": study,
        "ingested": utc_naive(datetime.now(timezone.utc)),
        "source_root": str(base),
    }


def _tree_run_id(tree: Path, name) -> str:
    """logs-NAME: --name, else the folder's name, or a log file's without .darshan."""
    path = tree.resolve()
    run_id = TREE_PREFIX + (name or (path.name if path.is_dir() else path.stem))
    try:
        return catalog_mod.check_part_name(run_id)
    except catalog_mod.CatalogError as exc:
        raise IngestError(f"{tree}: the tree's name (--name): {exc}") from None


def check_tree(tree: Path, store: Store, name=None) -> str:
    """The tree's run id; IngestError when the store's tree of that name is another tree that
    is still there (two sites' "darshan" folders): its logs' paths would be taken for this
    one's. A tree that moved is the same tree: its source_root follows it."""
    run_id = _tree_run_id(tree, name)
    row = store.run_row(run_id) or {}
    if row.get("source_root") and row.get("manifest_path"):  # kept since source_root exists
        before = Path(row["source_root"]) / row["manifest_path"]
        if before != tree.resolve() and before.exists():
            raise IngestError(
                f"{tree}: the store's {run_id} is another tree, {before}; give "
                "--name to ingest this one beside it"
            )
    return run_id


class _TreeIngest:
    """One ingest of a log tree: the part being written, the logs found so far and those
    rewritten in place since the last commit (their old rows go with the next one)."""

    def __init__(self, tree, store: Store, counts: Counts, progress, name, study, system):
        self.tree = Path(tree)
        self.run_id = _tree_run_id(self.tree, name)
        self.base = self.tree.resolve().parent
        self.store, self.counts, self.progress = store, counts, progress
        self.study, self.system = study, system
        self.rewritten: set[str] = set()
        self.found = 0
        self.part = 0
        self.writer: PartWriter | None = None

    def run(self, pool: ReaderPool, commit_every: int) -> bool:
        """Reads the new logs with the pool, committing a part every commit_every logs and at
        the end; returns False when there was nothing new (nothing is committed then)."""
        read_before = _tree_index(self.store, self.run_id)
        known = self.store.known_hashes()
        progress = self.progress
        task = None
        if progress:
            task = progress.add_task(f"{self.run_id} (finding new logs)", total=None)
        system_config = config.load_system(self.system) if self.system else None
        run_info = {
            "run_id": self.run_id,
            "campaign": None,
            "system": self.system,
            "system_config": system_config,
        }
        self.part = _next_part(self.store, self.run_id)
        self.writer = self._part_writer()
        try:
            since_commit = 0
            logs = self._new_logs(read_before, known, task)
            writers = self._current_writer  # a new one after each commit
            for n in read_logs(logs, run_info, writers, pool, self.counts, progress, task):
                since_commit += n
                if since_commit >= commit_every:  # keep what is read so far
                    self._commit_part()
                    since_commit, self.part = 0, self.part + 1
                    self.writer = self._part_writer()
            if progress:
                progress.update(task, total=self.found, description=self.run_id)
            if not self.found and not self.rewritten and self._same_root():
                self.writer.abort()
                self.counts.runs_skipped += 1
                return False
            self._commit_part()
        except BaseException:
            self.writer.abort()
            raise
        self.counts.runs_ingested += 1
        return True

    def _same_root(self) -> bool:
        """Whether the store has the tree's runs row, with this source_root (a tree that moved
        has its row rewritten, though no log is new)."""
        row = self.store.run_row(self.run_id)
        return row is not None and row.get("source_root") == str(self.base)

    def _new_logs(self, read_before: dict, known: set, task):
        """The tree's logs to read, found while the first ones are read; the progress total
        grows with them."""
        for log in scan_logs(self.tree, self.base):
            new = self._if_new(log, read_before.get(log.log_path, (None, None, None)), known)
            if new is None:
                self.counts.logs_skipped += 1
                continue
            self.found += 1
            if self.progress:
                self.progress.update(task, total=self.found)
            yield new

    def _if_new(self, log: LogFile, before: tuple, known: set) -> LogFile | None:
        """log, hashed, when it is to be read; None when it is not: its path, size and mtime
        are as read before, or its content is in the store (under this path or another)."""
        size, mtime_ns, old_sha = before
        if (size, mtime_ns) == (log.st.st_size, log.st.st_mtime_ns):
            return None
        log = hashed(log)
        if log.log_sha256 is not None and log.log_sha256 == old_sha:  # touched, not changed
            return None
        if size is not None:
            self.rewritten.add(log.log_path)
        if log.log_sha256 is not None and log.log_sha256 in known:  # another path, or source
            return None
        known.add(log.log_sha256)
        return log

    def _current_writer(self) -> PartWriter:
        return self.writer

    def _part_writer(self) -> PartWriter:
        return PartWriter(
            self.store,
            f"{self.run_id}.{self.part:06d}",
            tables=(*LOG_TABLES, "runs"),
            all_tables=False,
            run_id=self.run_id,
            names={"runs": self.run_id},
        )

    def _commit_part(self) -> None:
        row = _tree_run_row(self.run_id, self.tree, self.base, self.study, self.system)
        self.writer.write("runs", [row])
        commit = catalog_mod.Commit(self.store.root)
        _drop_rewritten(self.store, self.run_id, self.rewritten, commit)
        self.writer.commit(commit)
        self.rewritten.clear()


def ingest_tree(
    tree,
    store: Store,
    pool: ReaderPool,
    counts: Counts,
    progress=None,
    name=None,
    study=DEFAULT_STUDY,
    system=None,
    commit_every=DEFAULT_COMMIT_EVERY,
) -> bool:
    """Ingest the logs of a tree that are new since its last ingest; returns False when there
    were none. A log is new when its path is not in the store with the same size and mtime
    (checked by stat alone) and its content (sha256) is in no run or tree of the store. A log
    rewritten in place (same path, new size or mtime) replaces its earlier rows."""
    return _TreeIngest(tree, store, counts, progress, name, study, system).run(pool, commit_every)
