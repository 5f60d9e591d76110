"""``iostudy ingest SOURCE... --store STORE``: run directories and log trees into the store
(:mod:`iostudy.store.ingest`)."""

import argparse
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from iostudy.cli.options import add_limit_options, add_store_option, limits_from
from iostudy.cli.output import StderrProgress
from iostudy.core import config
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.store.ingest import default_jobs, ingest
from iostudy.store.ingest_logs import DEFAULT_COMMIT_EVERY
from iostudy.store.store import DATABASE, DEFAULT_STUDY


def ingest_and_report(
    sources, store_root, jobs=None, timeout=120.0, tree_options=None, limits=DEFAULT_LIMITS
) -> None:
    """ingest() with a bar of the logs read (ingest shows it while it reads), then its problems
    and counts said."""
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        console=console,
        transient=False,
    )
    counts = ingest(
        sources, store_root, jobs, timeout, StderrProgress("ingest"), tree_options, limits, bar
    )
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


def cmd_ingest(args) -> int:
    if args.system:
        config.load_system(args.system)
    options = {
        "name": args.name,
        "study": args.study,
        "system": args.system,
        "commit_every": args.commit_every,
    }
    limits = limits_from(args)._replace(dxt_segments=args.max_dxt_segments)
    ingest_and_report(args.sources, args.store, args.jobs, args.timeout, options, limits)
    return 0


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
