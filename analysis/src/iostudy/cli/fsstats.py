"""``iostudy fsstats scan|diff|import``: file-system content snapshots (seed 000, II-B and IV):
a scan's progress and summary, the diff's tables (:mod:`iostudy.collect.fsstats`,
:mod:`iostudy.collect.fsstats_scan`)."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import sys
import textwrap
import time
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.cli.tableout import write_table
from iostudy.collect import fsstats
from iostudy.collect.fsstats_scan import INTERRUPTED, STOPPED, scan
from iostudy.collect.fsstats_snapshot import ERROR_EXAMPLES, ERROR_KINDS
from iostudy.collect.fsstats_walker import default_threads
from iostudy.core.exitcodes import EXIT_INTERRUPTED, EXIT_STOPPED
from iostudy.core.numfmt import binary_bytes
from iostudy.core.progress import QUIET, Progress


def _human(nbytes) -> str:
    return binary_bytes(nbytes, digits=4) if nbytes == nbytes else ""


def _error_summary(errors: dict) -> str:
    return ", ".join(f"{errors[k]:,} {k}" for k in ERROR_KINDS if errors.get(k)) or "no errors"


class ScanLine(Progress):
    """A scan's counts: a live line on a terminal (rich), else a line on stderr every `every`
    seconds, and the last counts when the scan ends."""

    def __init__(self, root, every: float = 30.0):
        self.every = every
        self.live = None
        self.last = time.monotonic()
        self.unsaid = None  # the latest counts not printed yet
        if sys.stderr.isatty():
            from rich.progress import Progress as Bar
            from rich.progress import SpinnerColumn, TextColumn, TimeElapsedColumn

            self.live = Bar(
                SpinnerColumn(),
                TextColumn("{task.description}"),
                TimeElapsedColumn(),
                transient=True,
            )
            self.task = self.live.add_task(f"fsstats scan {root}")

    def __enter__(self):
        if self.live:
            self.live.start()
        return self

    def __exit__(self, *exc):
        if self.live:
            self.live.stop()
        elif self.unsaid:
            print(self.unsaid, file=sys.stderr, flush=True)

    def note(self, text: str) -> None:
        if self.live:
            self.live.update(self.task, description=text)
        elif time.monotonic() - self.last >= self.every:
            print(text, file=sys.stderr, flush=True)
            self.last, self.unsaid = time.monotonic(), None
        else:
            self.unsaid = text


def cmd_scan(args) -> int:
    from rich.console import Console

    console = Console(stderr=True)
    shown = contextlib.nullcontext(QUIET) if args.quiet else ScanLine(args.path)
    with shown as progress:
        result = scan(
            args.path,
            args.out,
            name=args.name,
            threads=args.threads,
            checkpoint=args.checkpoint,
            checkpoint_every=args.checkpoint_every,
            resume=args.resume,
            max_dirs=args.max_dirs,
            listing=args.list,
            progress=progress,
        )
    t = result.tally
    for e in t.examples[:5]:
        console.print(
            f"{e['kind']}: {e['path']}: {e['error']} ({e['op']})",
            highlight=False,
            markup=False,
            soft_wrap=True,
        )
    if t.n_errors:
        console.print(
            f"warning: {_error_summary(t.errors)} errors (the snapshot lists the first "
            f"{ERROR_EXAMPLES}); those parts are not counted",
            highlight=False,
        )
    rate = t.total("entries") / result.elapsed if result.elapsed > 0 else 0.0
    done = (
        f"{t.total('files'):,} files ({_human(t.total('bytes'))}), {t.listed:,} directories "
        f"listed, {_error_summary(t.errors)}; {result.elapsed:.1f} s, "
        f"{rate:,.0f} entries/s"
    )
    if result.outcome == STOPPED:
        print(
            f"fsstats scan: stopped after --max-dirs {args.max_dirs} directories: {done} so "
            f"far; checkpoint {result.checkpoint} (go on with --resume)"
        )
        return EXIT_STOPPED
    if result.outcome == INTERRUPTED:
        where = (
            f"checkpoint {result.checkpoint} (go on with --resume)"
            if result.checkpoint
            else "nothing saved (--checkpoint FILE keeps an interrupted scan)"
        )
        print(f"fsstats scan: interrupted: {done} so far; {where}")
        return EXIT_INTERRUPTED
    print(f"fsstats scan: {result.snapshot['root']}: {done} -> {args.out}")
    return 0


# short headers of the diff's printed tables (the CSVs and the JSON keep the column names)
_HEADERS = {
    "usage_a": "usage A",
    "usage_b": "usage B",
    "usage_change_pct": "usage change",
    "files_a": "files A",
    "files_b": "files B",
    "files_change_pct": "files change",
    "usage_growth_share_pct": "share of new data",
    "files_growth_share_pct": "share of new files",
    "bytes_unmodified": "data unmodified",
    "bytes_total": "all data",
    "bytes_share_pct": "data share",
    "files_unmodified": "files unmodified",
    "files_total": "all files",
    "files_share_pct": "file share",
}


def _print_frame(console, title: str, frame, formats: dict) -> None:
    import pandas as pd
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for col in frame.columns:
        numeric = pd.api.types.is_numeric_dtype(frame[col])
        table.add_column(_HEADERS.get(col, col), justify="right" if numeric else "left")
    for record in frame.to_dict("records"):
        cells = []
        for col, v in record.items():
            fmt = formats.get(col)
            if isinstance(v, float) and math.isnan(v):
                cells.append("")
            elif fmt:
                cells.append(fmt(v))
            else:
                cells.append(f"{v:,}" if isinstance(v, int) else str(v))
        table.add_row(*cells)
    console.print(table)


def _print_diff(a: dict, b: dict, tables: dict) -> None:
    """The diff's tables for a reader (rich tables, sizes with binary prefixes)."""
    from rich.console import Console

    console = Console()
    if not console.is_terminal:  # a file or a pipe: wide enough for the growth table
        console = Console(width=160)
    growth = tables["growth"]
    pct = {c: (lambda v: f"{v:+.1f}%") for c in growth.columns if c.endswith("change_pct")}
    share = {c: (lambda v: f"{v:.1f}%") for c in growth.columns if c.endswith("share_pct")}
    usage = {c: _human for c in ("usage_a", "usage_b")}
    _print_frame(
        console,
        f"growth: {a['name']} ({a['started']}) -> {b['name']} "
        f"({b['started']}) (seed 000, Table III)",
        growth,
        pct | share | usage,
    )
    sizes = {"lo": _human, "hi": _human, "cdf": lambda v: f"{v:.4f}"}
    _print_frame(
        console, f"file-size CDF of {b['name']} (seed 000, Fig. 8)", tables["size_cdf"], sizes
    )
    _print_frame(
        console,
        "data not modified for DAYS days or more (seed 000, IV-B)",
        tables["unmodified"],
        {
            "bytes_unmodified": _human,
            "bytes_total": _human,
            "bytes_share_pct": lambda v: f"{v:.1f}%",
            "files_share_pct": lambda v: f"{v:.1f}%",
        },
    )


def _print_json(tables: dict, args) -> None:
    """The diff's tables as one JSON object on stdout, {name: table}, each table as
    write_table prints it with --json (a list of objects, NaN as null)."""
    parsed = {}
    for name, frame in tables.items():
        text = io.StringIO()
        write_table(frame, args, text)
        parsed[name] = json.loads(text.getvalue())
    json.dump(parsed, sys.stdout, indent=2)
    sys.stdout.write("\n")


def cmd_diff(args) -> int:
    a, b, tables = fsstats.diff_tables(args.a, args.b, args.days)
    if args.json:
        _print_json(tables, args)
    else:
        _print_diff(a, b, tables)
    if args.csv:
        fsstats.write_csvs(tables, args.csv)
        done = f"growth.csv, size_cdf.csv, unmodified.csv in {args.csv}"
    elif args.json:
        done = "growth, size_cdf and unmodified printed as JSON"
    else:
        done = "tables printed above (--csv DIR writes them)"
    # with --json, stdout holds the JSON alone
    print(
        f"fsstats diff: {args.a} -> {args.b}: {done}", file=sys.stderr if args.json else sys.stdout
    )
    return 0


def cmd_import(args) -> int:
    from iostudy.cli.output import StderrProgress

    rows, where = fsstats.import_snapshots(
        args.store, args.snapshots, args.name, StderrProgress("fsstats import")
    )
    n = len(args.snapshots)
    print(f"fsstats import: {n} snapshot{'s' * (n != 1)}, {rows} rows into {where}")
    return 0


def _paragraphs(*texts: str) -> str:
    return "\n\n".join(textwrap.fill(t, 78) for t in texts)


_SCAN_HELP = _paragraphs(
    "Walk the tree under PATH (several threads of iostudy-fswalk, built by make setup) and "
    "write a JSON snapshot of its content: histograms of file size (with the bytes and "
    "allocated bytes in each bin), allocated size, age since mtime, atime and ctime (in days), "
    "directory size (entries) and name length; counts of files, directories, symlinks, hard "
    "links, special files and mount points; totals for the whole tree and per project (each "
    "top-level directory of PATH). The schema is in the module docstring (python -m pydoc "
    "iostudy.collect.fsstats_snapshot).",
    "The walk stays on PATH's file system and never follows a symbolic link (PATH itself is "
    "resolved once). A directory that cannot be read, or an entry that vanishes before it is "
    "looked at, is counted as an error by kind (permission, vanished, other) and the walk goes "
    "on. Nothing is kept per file unless --list asks for it.",
    "Long scans: --checkpoint FILE saves the state every --checkpoint-every seconds and on "
    "SIGINT or SIGTERM; --resume goes on from it (or starts afresh when FILE does not exist); "
    "--max-dirs N stops after N directories with a checkpoint, to split a scan over several "
    "windows. Progress goes to stderr (a live line on a terminal, else a line every 30 s).",
    "Exit status: 0 the snapshot is written; 1 the walker failed; 2 bad input (PATH not a "
    "directory, a checkpoint of another tree, no walker); 3 stopped by --max-dirs; 130 "
    "interrupted. The last line says where the snapshot (or the checkpoint) went.",
)


def register(groups) -> None:
    """Adds the ``fsstats`` command group to the CLI's group subparsers."""

    grp = groups.add_parser(
        "fsstats",
        help="file-system content snapshots: scan, compare, import into the store",
        description="fsstats (seed 000, II-B and IV): snapshots of what a file system holds "
        "(file sizes, ages, directory sizes, per project), their growth between two dates and "
        "the share of data not modified for 64 and 128 days.",
    )
    cmds = grp.add_subparsers(title="commands", dest="command", required=True)
    _add_scan(cmds)
    _add_diff(cmds)
    _add_import(cmds)


def _add_scan(cmds) -> None:
    p = cmds.add_parser(
        "scan",
        help="scan a tree into a JSON snapshot",
        description=_SCAN_HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("path", type=Path, metavar="PATH", help="the root of the tree to scan")
    p.add_argument(
        "--out",
        "-o",
        type=Path,
        required=True,
        metavar="SNAPSHOT",
        help="the JSON snapshot to write (a temporary file renamed into place)",
    )
    p.add_argument("--name", help="the snapshot's name in the store (default: SNAPSHOT's stem)")
    p.add_argument(
        "--threads",
        "-j",
        type=int,
        metavar="N",
        help=f"walker threads (default {default_threads()} here: 2 per CPU, 4 to 32; "
        "more help on a parallel file system)",
    )
    _add_checkpoint_options(p)
    p.add_argument(
        "--list",
        type=Path,
        metavar="FILE",
        help="also write a listing: per entry a NUL-terminated record "
        "type<TAB>size<TAB>blocks<TAB>mtime<TAB>atime<TAB>ctime<TAB>nlink<TAB>inode"
        "<TAB>path (type f, d, l, o; d+ a mount point)",
    )
    p.add_argument("--quiet", "-q", action="store_true", help="no progress on stderr")

    def run_scan(args):
        if args.threads is not None and not 1 <= args.threads <= 1024:
            p.error("--threads must be 1 to 1024")
        if args.max_dirs is not None and args.max_dirs < 1:
            p.error("--max-dirs must be at least 1")
        if args.checkpoint_every <= 0:
            p.error("--checkpoint-every must be positive")
        return cmd_scan(args)

    p.set_defaults(func=run_scan)


def _add_checkpoint_options(p) -> None:
    """scan's options of a long scan: --checkpoint, --checkpoint-every, --resume, --max-dirs."""
    p.add_argument(
        "--checkpoint",
        type=Path,
        metavar="FILE",
        help="keep the scan's state in FILE and FILE.pending.<n> (removed when done)",
    )
    p.add_argument(
        "--checkpoint-every",
        type=float,
        default=600.0,
        metavar="SEC",
        help="with --checkpoint: save every SEC seconds (default 600)",
    )
    p.add_argument(
        "--resume", action="store_true", help="go on from --checkpoint FILE if it exists"
    )
    p.add_argument(
        "--max-dirs",
        type=int,
        metavar="N",
        help="stop after listing N directories, with a checkpoint (exit status 3)",
    )


def _add_diff(cmds) -> None:
    d = cmds.add_parser(
        "diff",
        help="compare two snapshots: growth, size CDF, unmodified data",
        description="Compare snapshot A (the earlier) with B: the growth table (usage in bytes "
        "and files, per project and in all, the change in %% and each project's share of the "
        "growth: seed 000's Table III), B's file-size CDF with and without the project holding "
        "the most files (Fig. 8), and for both the share of the data and of the files not "
        "modified for DAYS days or more (64 and 128 by default; powers of 2, the age bins' "
        "edges).",
    )
    d.add_argument("a", type=Path, metavar="A", help="the earlier snapshot (JSON)")
    d.add_argument("b", type=Path, metavar="B", help="the later snapshot (JSON)")
    d.add_argument(
        "--days",
        type=int,
        nargs="+",
        default=[64, 128],
        metavar="DAYS",
        help="ages of the unmodified shares (default 64 128)",
    )
    d.add_argument(
        "--csv",
        type=Path,
        metavar="DIR",
        help="also write growth.csv, size_cdf.csv and unmodified.csv into DIR",
    )
    d.add_argument(
        "--json",
        action="store_true",
        help='print the tables as one JSON object instead, {"growth": [...], "size_cdf": '
        '[...], "unmodified": [...]}, each a list of objects with the CSV columns (NaN as '
        "null); the last line goes to stderr",
    )
    d.set_defaults(func=cmd_diff)


def _add_import(cmds) -> None:
    i = cmds.add_parser(
        "import",
        help="import snapshots into the store's fsstats table",
        description="Write each SNAPSHOT into the store's fsstats table as "
        "STORE/fsstats/<name>.parquet (one row per histogram bin, count, error kind and "
        "file-system figure; the module docstring of iostudy.collect.fsstats_store lists them). "
        "Importing a snapshot again replaces its rows. Every snapshot is read before any is "
        "written.",
    )
    i.add_argument("snapshots", nargs="+", type=Path, metavar="SNAPSHOT")
    i.add_argument(
        "--name",
        help="the snapshot's name in the store (one SNAPSHOT; default: the name it was "
        "scanned with)",
    )
    add_store_option(i)
    i.set_defaults(func=cmd_import)
