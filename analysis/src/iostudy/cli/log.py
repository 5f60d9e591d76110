"""``iostudy log`` (alias ``logs``): a Darshan-format log's summary, the merge of the
memory-mapped logs a killed job left (:mod:`iostudy.logs.logmerge`), and a shared log root's
day folders (:mod:`iostudy.logs.logroot`)."""

import json
import sys
from pathlib import Path

from rich.console import Console
from rich.table import Column, Table

from iostudy.cli.errors import error_line
from iostudy.cli.options import add_limit_options, limits_from
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.helptext import plain
from iostudy.core.numfmt import binary_bytes
from iostudy.logs import logmerge, logroot, sharing, upconversion
from iostudy.logs.darshanlog import DarshanLogError, read_log
from iostudy.logs.summary import summarize

# A module's figures as the summary prints them, in its table's order.
_FIGURES = {
    "bytes_read": binary_bytes,
    "bytes_written": binary_bytes,
    "reads": str,
    "writes": str,
    "opens": str,
}


def _figures(figures: dict, version: int, not_counted=()) -> dict:
    """A module's (or file's) figures as printed: "-" where the module counts no such thing
    (``not_counted``), "not recorded (module version N)" where its version had no counter of
    it (None)."""
    return {
        k: _figure(figures[k], shown, version, k in not_counted) for k, shown in _FIGURES.items()
    }


def _figure(value, shown, version: int, uncounted: bool) -> str:
    if uncounted:
        return "-"
    return upconversion.text(version) if value is None else shown(value)


def _totals_line(m: dict) -> str:
    """A module's totals in words, without what it counts nowhere (H5F's bytes and operations:
    HDF5's are its datasets', H5D's)."""
    fig, uncounted = _figures(m, m["version"], m["not_counted"]), set(m["not_counted"])
    said = []
    for verb, moved, ops in (("read", "bytes_read", "reads"), ("wrote", "bytes_written", "writes")):
        if moved not in uncounted:
            said.append(
                f"{verb} {fig[moved]}" + ("" if ops in uncounted else f" in {fig[ops]} ops")
            )
    return ", ".join([*said, f"{fig['opens']} opens"])


def _print_job(s, console) -> None:
    """The log's path and its job's facts and metadata tags."""
    console.print(f"[bold]{s['path']}[/bold]", highlight=False)
    facts = Table.grid(Column(no_wrap=True), Column(overflow="fold"), padding=(0, 2))
    facts.add_row("job id", str(s["jobid"]))
    facts.add_row("processes", f"{s['nprocs']:,} (nprocs)")
    facts.add_row("run time", f"{s['run_time']:.3f} s ({s['start']} .. {s['end']})")
    facts.add_row("exe", s["exe"])
    facts.add_row("format", s["log_ver"])
    for key, value in s["metadata"].items():
        facts.add_row(f"tag {key}", value)
    console.print(facts, highlight=False)


def _print_module(m, nprocs: int, console) -> None:
    """A module's totals and the files that moved the most bytes."""
    title = f"{m['name']}: {m['records']} records, {m['files']} files"
    if m["partial"]:
        title += " [PARTIAL: the runtime ran out of memory, records are missing]"
    console.print()
    console.print(f"[bold]{title}[/bold]  {_totals_line(m)}", highlight=False)
    # File names are the point of the table: fold them rather than cut them.
    table = Table(Column("file", overflow="fold"), "processes")
    # a size fits its column whole; "not recorded (module version N)" wraps
    for heading in ("read", "written"):
        table.add_column(heading, justify="right", min_width=len("1000 KiB"))
    for heading in ("reads", "writes", "opens"):
        table.add_column(heading, justify="right", no_wrap=True)
    for f in m["top_files"]:
        procs = f"{f['sharing']} ({sharing.processes_text(f['processes'], nprocs)})"
        table.add_row(f["name"], procs, *_figures(f, m["version"], m["not_counted"]).values())
    console.print(table, highlight=False)


def _print_summary(s, console) -> None:
    _print_job(s, console)
    if not s["modules"]:
        console.print("no file records")
    for m in s["modules"]:
        _print_module(m, s["nprocs"], console)
    others = [
        f"{n}{' (partial)' if m['partial_flag'] else ''}" for n, m in s["other_modules"].items()
    ]
    if others:
        console.print()
        console.print("other modules: " + ", ".join(others), highlight=False)
    for api, h in s["heatmaps"].items():
        console.print(
            f"heatmap {api}: {h['nbins']} bins of {h['bin_width']:g} s, {h['nranks']} ranks",
            highlight=False,
        )


def cmd_log_summary(args) -> int:
    """Each log's summary in turn; a log that cannot be read is one error line, and the others
    are still summarised (exit EXIT_BAD_INPUT if any failed). --json: one object for one log,
    a list for several."""
    summaries, status = [], 0
    for path in args.log:
        try:
            log = read_log(path, timeout=args.timeout, limits=limits_from(args))
        except DarshanLogError as exc:
            print(error_line(f"cannot read log {exc}"), file=sys.stderr)
            status = EXIT_BAD_INPUT
            continue
        summaries.append(summarize(log, top=args.top))
        if not args.json:
            if len(summaries) > 1:
                print()
            _print_summary(summaries[-1], Console())
    if args.json and summaries:
        json.dump(summaries if len(args.log) > 1 else summaries[0], sys.stdout, indent=2)
        print()
    return status


def cmd_merge(args) -> int:
    logs, output = [Path(p) for p in args.logs], Path(args.output)
    log = logmerge.merge(logs, output, args.job_end_time, args.reduce)
    counts = ", ".join(f"{m} {len(r)}" for m, r in log["records"].items())
    print(
        f"merged {len(logs)} logs of job {log['job']['jobid']} ({log['job']['nprocs']} processes) "
        f"into {output}: {counts or 'no records'}"
    )
    return 0


def cmd_mkdirs(args) -> int:
    made, there = logroot.make_day_dirs(Path(args.root), args.years)
    print(f"logs mkdirs: {args.root}: {made} folders made, {there} days were there")
    return 0


def _add_summary(log_commands) -> None:
    summary = log_commands.add_parser(
        "summary",
        help="print a summary of each log",
        description="Print job facts, metadata tags and, per module with file records (POSIX, "
        "STDIO, MPI-IO, HDF5, PnetCDF, DFS, DAOS), "
        "record count, partial flag, bytes and operations, and the files that moved the "
        "most bytes, for each log in turn. The logs are read in a separate process; a damaged "
        f"log is reported as one error line naming the file, with exit status {EXIT_BAD_INPUT} "
        "once the others are summarised.",
    )
    summary.add_argument("log", nargs="+", metavar="LOG", help="path of a .darshan log")
    summary.add_argument("--json", action="store_true", help="print the summary as JSON")
    summary.add_argument(
        "--top", type=int, default=5, metavar="N", help="files listed per module (default 5)"
    )
    summary.add_argument(
        "--timeout",
        type=float,
        default=120,
        metavar="SEC",
        help="give up reading the log after SEC seconds (default 120)",
    )
    add_limit_options(summary)
    summary.set_defaults(func=cmd_log_summary)


def _add_merge(log_commands) -> None:
    m = log_commands.add_parser(
        "merge",
        help="merge the memory-mapped logs a killed job left into one log",
        description=plain(logmerge.__doc__.split("\n\n")[1]),
    )
    m.add_argument("logs", nargs="+", metavar="LOG", help="the job's *_mmap-log-*.darshan files")
    m.add_argument("--output", required=True, help="the merged log (must not exist)")
    m.add_argument(
        "--job-end-time",
        type=float,
        metavar="SECONDS",
        help="the job's end (Unix seconds, e.g. from sacct); default: the last record's",
    )
    m.add_argument(
        "--no-shared-reduction",
        dest="reduce",
        action="store_false",
        help="keep every process's record of a file every process opened",
    )
    m.set_defaults(func=cmd_merge)


def _add_mkdirs(log_commands) -> None:
    m = log_commands.add_parser(
        "mkdirs",
        help="make a shared log root's day folders for whole years (as darshan-mk-log-dirs)",
        description=plain(logroot.__doc__.split("\n\n")[0].split(": ", 1)[1]),
    )
    m.add_argument("root", help="the log root (DARSHAN_LOGPATH), made by the site")
    m.add_argument(
        "--years",
        type=int,
        nargs="+",
        required=True,
        metavar="Y",
        help="the years whose day folders to make",
    )
    m.set_defaults(func=cmd_mkdirs)


def register(groups) -> None:
    log = groups.add_parser(
        "log",
        aliases=["logs"],
        help="inspect Darshan-format logs, merge a killed job's logs",
        description="Inspect Darshan-format logs (as written by the iostudy runtime or Darshan); "
        "merge the memory-mapped per-process logs a killed job left.",
    )
    log_commands = log.add_subparsers(title="commands", dest="command", required=True)
    _add_summary(log_commands)
    _add_merge(log_commands)
    _add_mkdirs(log_commands)
