"""``iostudy ingest SOURCE... --store STORE``: run directories and log trees into the store.

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

import argparse
import os
import stat
import sys
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from iostudy.core import config, jsonlimits, safeio
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.paths import add_store_option
from iostudy.logs import dxtrows
from iostudy.logs.darshanlog import add_limit_options, limits_from
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.store.ingest_logs import DEFAULT_COMMIT_EVERY, check_tree, ingest_tree, scan_logs
from iostudy.store.ingest_run import ingest_run, load_manifest, manifest_run_id
from iostudy.store.ingest_writer import Counts
from iostudy.store.store import DATABASE, DEFAULT_STUDY, IngestError, Store

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
    console=None,
    tree_options=None,
    limits=DEFAULT_LIMITS,
) -> Counts:
    """Ingest run directories and log trees (see :func:`source_kind`) into the store; returns
    the counts. tree_options: keyword arguments of :func:`ingest_tree` (name, study, system,
    commit_every); limits: each log's decompression bounds (logregions.Limits)."""
    store = Store(store_root)
    counts = Counts()
    console = console or Console(stderr=True)
    kinds = [(Path(d), source_kind(Path(d))) for d in sources]  # all checked before any is read
    for path, kind in kinds:
        if kind == "run":
            manifest_run_id(path, load_manifest(path))
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
    with pool, store.locked(console), safeio.space_in(store.root):
        progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            console=console,
            transient=False,
        )
        with progress, pool:
            for path, kind in kinds:
                if kind == "run":
                    ingest_run(path, store, pool, counts, progress)
                else:
                    ingest_tree(path, store, pool, counts, progress, **(tree_options or {}))
        # the views change only with the tables: an ingest that added nothing changes nothing
        if counts.runs_ingested or not (store.root / DATABASE).is_file():
            store.refresh_views(console)
    return counts


def ingest_and_report(
    sources, store_root, jobs=None, timeout=120.0, tree_options=None, limits=DEFAULT_LIMITS
) -> int:
    """ingest() with its problems and counts said; the exit status of `iostudy ingest`."""
    console = Console(stderr=True)
    try:
        counts = ingest(sources, store_root, jobs, timeout, console, tree_options, limits)
    except IngestError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    for problem in counts.problems:
        console.print(f"quarantined: {problem}", highlight=False, markup=False, soft_wrap=True)
    for run_dir in counts.dry_runs:
        console.print(
            f"not ingested: {run_dir}: a dry run (nothing ran)",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    dry = f", {len(counts.dry_runs)} dry runs left out" if counts.dry_runs else ""
    print(
        f"ingest: store {store_root} ({DATABASE}): runs {counts.runs_ingested} ingested, "
        f"{counts.runs_skipped} skipped{dry}; logs {counts.logs_ingested} ingested, "
        f"{counts.logs_skipped} skipped, {counts.quarantined} quarantined"
    )
    return 0


def cmd_ingest(args):
    if args.system:
        try:
            config.load_system(args.system)
        except config.ConfigError as exc:
            print(f"iostudy: error: {exc}", file=sys.stderr)
            return EXIT_BAD_INPUT
    options = {
        "name": args.name,
        "study": args.study,
        "system": args.system,
        "commit_every": args.commit_every,
    }
    limits = limits_from(args)._replace(dxt_segments=args.max_dxt_segments)
    return ingest_and_report(args.sources, args.store, args.jobs, args.timeout, options, limits)


def _log_count(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: a number of logs, at least 1")
    return value


def _segments(text: str) -> int:
    value = int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text}: a number of segments, at least 0")
    return value


def register(groups) -> None:
    """Adds the ``ingest`` command to the CLI's group subparsers."""
    p = groups.add_parser(
        "ingest",
        help="ingest run directories and trees of Darshan logs into the store",
        description="Read each SOURCE into the Parquet tables of the store (STORE/<table>/"
        "*.parquet, DuckDB views in STORE/store.duckdb). A SOURCE is either a RUN_DIR "
        "(results/<run-id>/: manifest.json, darshan/**/*.darshan, reframe/report.json, "
        "reframe/output/**/{iomodel,ior}.jsonl), a LOGTREE: any folder of *.darshan logs, at "
        "any depth (a facility's Darshan log directory), of format 3.00 to 3.41 in either byte "
        "order, or a LOG: one *.darshan file, a tree of one log, its run named after the file "
        "(logs-<its name without .darshan>: Darshan names a log after its user, program and "
        "job id). Incremental: a run whose manifest is unchanged is skipped; a tree's logs already "
        "read (same path, size and mtime) are not even hashed again; a log whose content "
        "(sha256) the store already holds is not read again. Logs are read in worker processes, "
        "one at a time each: a log that cannot be read, or that crashes the reader, is "
        "quarantined with its reason (the quarantine table) and the others go on. The last line "
        "says where things went and the counts.",
    )
    p.add_argument(
        "sources", nargs="+", type=Path, metavar="SOURCE", help="RUN_DIR, LOGTREE or LOG"
    )
    add_store_option(p)
    p.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=None,
        metavar="N",
        help=f"worker processes reading logs (default {default_jobs()} here: CPUs, at most 4)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=120.0,
        metavar="SEC",
        help="give up reading one log after SEC seconds and quarantine it (default 120)",
    )
    add_limit_options(p)
    p.add_argument(
        "--max-dxt-segments",
        type=_segments,
        default=DEFAULT_LIMITS.dxt_segments,
        metavar="N",
        help="keep at most N DXT segments of a log (the dxt table): past N, each file's first "
        "writes and first reads on each rank are kept, as many each as N allows, and the jobs "
        "row's flags say how many were dropped (default %(default)s)",
    )
    _add_tree_options(p.add_argument_group("log trees"))
    p.set_defaults(func=cmd_ingest)


def _add_tree_options(tree) -> None:
    """The options of ``iostudy ingest`` for log trees."""
    tree.add_argument(
        "--name",
        help="the tree's name in the store: its rows get run_id logs-NAME (default: the "
        "folder's name, a LOG's file name without .darshan; give the same name for every "
        "ingest of one tree; a name the store gives another tree that is still there is "
        "refused)",
    )
    tree.add_argument(
        "--study",
        default=DEFAULT_STUDY,
        help=f"the study the tree belongs to, for iostudy report build --study "
        f"(default {DEFAULT_STUDY})",
    )
    tree.add_argument(
        "--system",
        help="the system (configs/systems/<SYSTEM>) the logs come from: their system column, "
        "and node counts from its cores per node when Slurm accounting is not imported (with "
        "neither, a job's nodes are unknown, and so is its MiB/s/CN)",
    )
    tree.add_argument(
        "--commit-every",
        type=_log_count,
        default=DEFAULT_COMMIT_EVERY,
        metavar="N",
        help="commit what is read every N logs, so that an interrupted ingest keeps it; a "
        f"commit puts every table's part in place at once (default {DEFAULT_COMMIT_EVERY})",
    )
