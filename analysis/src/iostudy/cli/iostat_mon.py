"""``iostudy iostat-mon``: block-device statistics of storage servers (seed 000, II-A and IV).
This module is the command's arguments and output; the work is in modules of its own:

- :mod:`iostudy.collect.iostatmonitor`: ``iostudy iostat-mon --out DIR [--interval 60]``, the
  monitor that runs sysstat's iostat (its output files and record fields are described there);
- :mod:`iostudy.collect.iostatjson`: iostat's JSON read as it comes, the records made of it;
- :mod:`iostudy.collect.iostatdays`: the day files the records go to;
- :mod:`iostudy.collect.iostatimport`: ``iostudy iostat-mon import DIR... --store STORE``, the
  records into the store's ``iostat`` table;
- :mod:`iostudy.collect.iostatanalysis`: seed 000's numbers from that table (the report's
  section draws them: :mod:`iostudy.report.devices`).
"""

from __future__ import annotations

import argparse
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

from iostudy.cli.options import add_store_option
from iostudy.cli.output import StderrProgress
from iostudy.collect import iostatimport
from iostudy.collect.iostatmonitor import DEFAULT_INTERVAL, DEFAULT_MAX_BACKOFF, Monitor, Options


def cmd_run(args) -> int:
    if args.out is None:
        args._parser.error("--out DIR is required (or a command: import)")
    options = Options(
        out=args.out,
        interval=args.interval,
        host=args.host,
        include=args.include or [],
        exclude=args.exclude or [],
        dm_names=args.dm_names,
        iostat=args.iostat,
        max_backoff=args.max_backoff,
    )
    Monitor(options, StderrProgress("iostat-mon")).run()
    return 0


def cmd_import(args) -> int:
    console = Console(stderr=True)
    bar = Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        console=console,
        transient=True,
    )
    with bar:
        inputs = iostatimport.read_dirs(args.dirs, args.host, args.name, bar)
    where = iostatimport.import_inputs(args.store, inputs, StderrProgress("iostat-mon import"))
    for *_, problems, _d in inputs:
        for p in problems:
            console.print(f"skipped: {p}", highlight=False, markup=False, soft_wrap=True)
    kinds = Counter(r["kind"] for _, rs, *_ in inputs for r in rs)
    n_bad = sum(len(p) for *_, p, _d in inputs)
    print(
        f"iostat-mon import: {kinds['io']} device intervals, {kinds['gap']} gaps into {where}; "
        f"{n_bad} lines skipped"
    )
    return 0


def _positive_int(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text}: must be a whole number of seconds >= 1")
    return value


def register(groups) -> None:
    """Adds the ``iostat-mon`` command (and its ``import``) to the CLI's group subparsers."""
    p = groups.add_parser(
        "iostat-mon",
        help="monitor block devices with iostat (storage servers); import the records",
        description="Run sysstat's iostat every --interval seconds and keep, per device and "
        "interval, bytes read and written, IOPS, utilization and wait times in DIR/<UTC "
        "day>.jsonl (a past day compressed to .jsonl.gz), fsync'd every interval. iostat is "
        "restarted with backoff (1, 2, 4 ... s) when it dies, and the gap is recorded. "
        "SIGTERM or SIGINT stops cleanly (exit 0), losing at most the interval in progress. "
        "Exit status 2: DIR is taken by another monitor, or iostat is missing or refuses to "
        "run. iostudy iostat-mon import DIR... puts the records into the store.",
    )
    _add_monitor_options(p)
    p.set_defaults(func=cmd_run, _parser=p)
    cmds = p.add_subparsers(title="commands", dest="command", metavar="{import}")
    _add_import(cmds)


def _add_monitor_options(p) -> None:
    """The monitor's options (iostudy iostat-mon without a command)."""
    p.add_argument("--out", type=Path, metavar="DIR", help="where the day files go (required)")
    p.add_argument(
        "--interval",
        type=_positive_int,
        default=DEFAULT_INTERVAL,
        metavar="S",
        help=f"seconds per record (default {DEFAULT_INTERVAL})",
    )
    p.add_argument("--host", help="the host name the records carry (default: this host's)")
    p.add_argument(
        "--include",
        action="append",
        metavar="GLOB",
        help="keep only devices matching GLOB (repeatable; default all), e.g. 'sd*'",
    )
    p.add_argument(
        "--exclude",
        action="append",
        metavar="GLOB",
        help="drop devices matching GLOB (repeatable), e.g. the OS disk 'nvme0n1'",
    )
    p.add_argument(
        "--dm-names",
        action="store_true",
        help="device-mapper devices by their names (iostat -N), e.g. multipath LUNs",
    )
    p.add_argument(
        "--max-backoff",
        type=float,
        default=DEFAULT_MAX_BACKOFF,
        metavar="S",
        help=f"longest wait before restarting iostat (default {DEFAULT_MAX_BACKOFF:g})",
    )
    p.add_argument("--iostat", default="iostat", metavar="PATH", help="the iostat to run")


def _add_import(cmds) -> None:
    """``iostudy iostat-mon import``."""
    imp = cmds.add_parser(
        "import",
        help="import iostat-mon DIRs into the store's iostat table",
        description="Read the day files (.jsonl, .jsonl.gz) of each DIR into STORE/iostat/"
        "iostat-<name>.parquet, one row per device and interval plus the gap, start and stop "
        "records (kind column). <name> is --name, else the host the records name (else the "
        "DIR's name); importing a DIR again replaces its part. A line that cannot be read "
        "(cut short by a crash) is reported and skipped. The last line says where the rows "
        "went.",
    )
    imp.add_argument("dirs", nargs="+", type=Path, metavar="DIR")
    add_store_option(imp)
    imp.add_argument("--host", help="the host column of every row (default: the records')")
    imp.add_argument("--name", help="the part's name (one DIR; default: the host)")
    imp.set_defaults(func=cmd_import)
