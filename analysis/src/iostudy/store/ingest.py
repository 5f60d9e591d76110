"""Run directories and log trees into the store (``iostudy ingest``: :mod:`iostudy.cli.ingest`).

A SOURCE is a run directory (``results/<run-id>/`` with an iostudy manifest.json:
:mod:`iostudy.store.ingest_run`) or a log tree (any folder of ``*.darshan`` logs, or one such
file: :func:`iostudy.store.ingest_logs.ingest_tree`); every source is checked before any is
read.
One ingest at a time writes a store (its lock, STORE/.lock). The logs are read by one pool of
worker processes for all sources; results are streamed into the Parquet parts in large row
groups as they arrive, so memory holds a batch of rows, not the run. The views in
STORE/store.duckdb are refreshed when the tables changed.
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from iostudy.core import jsonlimits, safeio
from iostudy.core.progress import QUIET, Progress
from iostudy.logs import dxtrows
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.store.ingest_logs import DEFAULT_COMMIT_EVERY, check_tree, ingest_tree, scan_logs
from iostudy.store.ingest_run import ingest_run, read_manifest
from iostudy.store.ingest_writer import Counts
from iostudy.store.store import DATABASE, IngestError, Store

# Logs a worker reads per answer of the pool. Each answer costs both sides a few milliseconds
# whatever its size (10,000 small logs: 64 a batch 3.4 s, 256 3.0 s, 512 2.8 s); a worker that
# dies has its batch read again a log at a time, and an answer's rows are held until written
# (the tree's peak memory: 586 MiB at 64, 662 at 256, 808 at 512).
READ_BATCH = 256


def is_run_manifest(path: Path) -> bool:
    """Whether path is an iostudy run's manifest.json (a JSON object with a run_id and a
    campaign), not any file of that name a facility's tree may hold."""
    try:
        data = jsonlimits.loads(safeio.read_text(path))
    except (OSError, ValueError):
        return False
    return isinstance(data, dict) and "run_id" in data and "campaign" in data


def source_kind(path: Path) -> str:
    """ "run" (a run directory: it has an iostudy manifest.json) or "tree" (a folder of logs,
    any depth, or one log file: a tree of one log); raises IngestError for anything else, and
    for a folder of run directories (each must be named: a tree ingest would lose their
    manifests)."""
    if not path.is_dir():
        return _log_file_kind(path)
    manifest = path / "manifest.json"
    if manifest.is_file() and is_run_manifest(manifest):
        return "run"
    runs = sorted(p.parent.name for p in path.glob("*/manifest.json"))
    if runs:
        shown = ", ".join(runs[:3]) + (", ..." if len(runs) > 3 else "")
        raise IngestError(
            f"{path}: holds run directories ({shown}); give them as RUN_DIR arguments "
            f"(e.g. {path}/*) so that their manifests are read"
        )
    if next(scan_logs(path, path), None) is None:
        what = (
            "manifest.json is not an iostudy run manifest"
            if manifest.exists()
            else ("no manifest.json")
        )
        raise IngestError(f"{path}: not a run directory ({what}) and no *.darshan log below it")
    return "tree"


def _check_trees(store: Store, trees: list[Path], options: dict) -> None:
    """Each tree (a folder or a log file) its own run: none of the store's other trees, and
    none named twice."""
    if options.get("name") and len(trees) > 1:
        raise IngestError("--name names one log tree; give one LOGTREE per ingest to use it")
    named: dict[str, Path] = {}
    for tree in trees:
        run_id = check_tree(tree, store, options.get("name"))
        if run_id in named and named[run_id].resolve() != tree.resolve():
            raise IngestError(
                f"{named[run_id]} and {tree} would both be {run_id}: ingest them "
                "one at a time, each with its --name"
            )
        named[run_id] = tree


def _log_file_kind(path: Path) -> str:
    """ "tree" for a log file (a regular *.darshan file, never reached through a link, as a
    tree's logs are read); IngestError for anything else."""
    try:
        mode = path.lstat().st_mode
    except OSError as exc:
        raise IngestError(f"{path}: {exc.strerror or exc}") from None
    if not path.name.endswith(".darshan"):
        raise IngestError(f"{path}: not a run directory, a tree of logs or a *.darshan log")
    if not stat.S_ISREG(mode):
        raise IngestError(
            f"{path}: not a regular file (a log is read where it is, never through a link)"
        )
    return "tree"


def default_jobs() -> int:
    return max(1, min(4, os.cpu_count() or 1))


def ingest(
    sources,
    store_root,
    jobs=None,
    timeout=120.0,
    progress: Progress = QUIET,
    tree_options=None,
    limits=DEFAULT_LIMITS,
    bar=None,
) -> Counts:
    """Ingest run directories and log trees (see :func:`source_kind`) into the store; returns
    the counts. tree_options: keyword arguments of :func:`ingest_tree` (name, study, system,
    commit_every); limits: each log's decompression bounds (logregions.Limits); bar: where each
    run's logs read are counted, shown while they are read (a rich.progress.Progress), or
    None."""
    store = Store(store_root)
    counts = Counts()
    kinds = [(Path(d), source_kind(Path(d))) for d in sources]  # all checked before any is read
    for path, kind in kinds:
        if kind == "run":
            read_manifest(path)
    _check_trees(store, [path for path, kind in kinds if kind == "tree"], tree_options or {})
    # a commit comes between batches: none larger than the commit interval
    commit_every = (tree_options or {}).get("commit_every") or DEFAULT_COMMIT_EVERY
    batch = max(1, min(READ_BATCH, commit_every))
    pool = ReaderPool(
        dxtrows.read_for_ingest,
        dxtrows.batch_rows,
        jobs or default_jobs(),
        timeout,
        batch,
        limits,
        dxtrows.weight,
    )
    pool.start()  # now, while this process runs one thread: the workers are forked, not spawned
    with pool, store.locked(progress), safeio.space_in(store.root):
        # the bar's refresh thread starts once the workers are forked (pool.start above); the
        # workers end with the reading, before the views are written
        with bar or contextlib.nullcontext(), pool:
            for path, kind in kinds:
                if kind == "run":
                    ingest_run(path, store, pool, counts, bar)
                else:
                    ingest_tree(path, store, pool, counts, bar, **(tree_options or {}))
        # the views change only with the tables: an ingest that added nothing changes nothing
        if counts.runs_ingested or not (store.root / DATABASE).is_file():
            store.refresh_views(progress)
    return counts
