"""Command-line interface: ``iostudy <group> <command>``. ``iostudy`` alone, or a group alone,
prints its help; shell completion through argcomplete (``eval "$(register-python-argcomplete
iostudy)"``)."""

# PYTHON_ARGCOMPLETE_OK

import argparse
import importlib
import json
import os
import shlex
import sys

import argcomplete
from rich.console import Console
from rich.table import Column, Table

from iostudy import __version__
from iostudy.cli import listing
from iostudy.cli.errors import error_line, exit_status
from iostudy.core import config
from iostudy.core.errors import IostudyError
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.numfmt import binary_bytes
from iostudy.logs import logmerge, logroot, sharing, upconversion
from iostudy.logs.darshanlog import DarshanLogError, add_limit_options, limits_from, read_log
from iostudy.logs.summary import summarize
from iostudy.run import profiles

# Command groups -> the module that registers each (its register(groups)), in --help's order.
# A command imports only its own module: `iostudy ingest` or `iostudy fsstats scan` start
# without the report's matplotlib or the campaign's ReFrame code (a second saved per call).
GROUP_MODULES = {
    "campaign": "campaign",
    "ingest": "ingest",
    "jobs": "jobs",
    "diagnose": "diagnose",
    "compare-jobs": "compare_jobs",
    "metrics": "metrics",
    "report": "report",
    "schedule": "schedule",
    "sacct": "sacct",
    "iostat-mon": "iostat_mon",
    "fsstats": "fsstats",
    "spack": "spack",
    "offline": "offline",
    "export": "bundle",
    "import": "bundle",
    "trust": "trust",
    "compare": "compare",
}
# Groups cli.py defines itself.
INLINE_GROUPS = ("log", "logs", "config", "list")


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


def _print_summary(s, console):
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

    if not s["modules"]:
        console.print("no file records")
    for m in s["modules"]:
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
            procs = f"{f['sharing']} ({sharing.processes_text(f['processes'], s['nprocs'])})"
            table.add_row(f["name"], procs, *_figures(f, m["version"], m["not_counted"]).values())
        console.print(table, highlight=False)

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


def cmd_log_summary(args):
    """Each log's summary in turn; a log that cannot be read is one error line, and the others
    are still summarised (exit EXIT_BAD_INPUT if any failed). --json: one object for one log,
    a list for several."""
    summaries, status = [], 0
    for path in args.log:
        try:
            log = read_log(path, timeout=args.timeout, limits=limits_from(args))
        except DarshanLogError as exc:
            print(f"iostudy: error: cannot read log {exc}", file=sys.stderr)
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


def cmd_config_check(args):
    names = args.systems or config.system_names()
    checks = [(config.system_path(n), lambda n=n: config.load_system(n)) for n in names]
    return 0 if config.check_files(checks, "config check: system") else EXIT_BAD_INPUT


def cmd_config_show(args):
    try:
        system = config.load_system(args.system)
    except config.ConfigError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    json.dump(system, sys.stdout, indent=2)
    print()
    return 0


def add_config_commands(groups):
    cfg = groups.add_parser(
        "config",
        help="check and show configuration (configs/)",
        description="Configuration is data under configs/ (IOSTUDY_CONFIGS overrides the "
        "folder), validated against configs/schemas/. A bad file is reported as one error "
        "naming the file, the key and the problem.",
    )
    cmds = cfg.add_subparsers(title="commands", dest="command", required=True)
    check = cmds.add_parser("check", help="validate system descriptions")
    check.add_argument("systems", nargs="*", metavar="SYSTEM", help="default: every system")
    check.set_defaults(func=cmd_config_check)
    show = cmds.add_parser("show", help="print a system with its defaults filled in")
    show.add_argument("system", metavar="SYSTEM")
    show.set_defaults(func=cmd_config_show)
    return cmds


def build_parser(argv=None):
    """The parser for argv (default sys.argv[1:]): with every group when argv names none (e.g.
    --help), else with the group it names."""
    parser = argparse.ArgumentParser(
        prog="iostudy",
        description="iostudy: HPC I/O-study harness (analysis side). "
        "Reads Darshan-format logs with PyDarshan, summarises them.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    groups = parser.add_subparsers(title="command groups", dest="group", required=True)

    log = groups.add_parser(
        "log",
        aliases=["logs"],
        help="inspect Darshan-format logs, merge a killed job's logs",
        description="Inspect Darshan-format logs (as written by the iostudy runtime or Darshan); "
        "merge the memory-mapped per-process logs a killed job left.",
    )
    log_cmds = log.add_subparsers(title="commands", dest="command", required=True)
    summary = log_cmds.add_parser(
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
    logmerge.register(log_cmds)
    logroot.register(log_cmds)
    profiles.register(add_config_commands(groups))
    listing.register(groups)
    argv = sys.argv[1:] if argv is None else argv
    named = next((a for a in argv if not a.startswith("-")), None)
    everything = named not in GROUP_MODULES and named not in INLINE_GROUPS
    wanted = [m for g, m in GROUP_MODULES.items() if named == g or everything]
    for module in dict.fromkeys(wanted):  # a module may register several groups (export, import)
        importlib.import_module(f"iostudy.cli.{module}").register(groups)
    return parser


def _groups(parser) -> argparse._SubParsersAction:
    return next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))


def group_names() -> list[str]:
    """Every command group (aliases included), in --help's order."""
    return list(_groups(build_parser([])).choices)


def _help_wanted(parser, argv) -> argparse.ArgumentParser | None:
    """The parser whose help a bare `iostudy` or `iostudy GROUP` (of a group with commands)
    asks for, or None."""
    if not argv:
        return parser
    group = _groups(parser).choices.get(argv[0]) if len(argv) == 1 else None
    has_commands = group is not None and any(
        isinstance(a, argparse._SubParsersAction) for a in group._actions
    )
    return group if has_commands else None


def _completion_words() -> list[str] | None:
    """The words typed before the cursor when the shell asks argcomplete for completions (the
    group they name is the only one to register), else None."""
    if "_ARGCOMPLETE" not in os.environ:
        return None
    line = os.environ.get("COMP_LINE", "")[: int(os.environ.get("COMP_POINT", "0") or 0)]
    try:
        return shlex.split(line)[1:]
    except ValueError:  # an open quote
        return line.split()[1:]


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(_completion_words() or argv)
    listing.add_completers(parser)
    argcomplete.autocomplete(parser)  # a shell's completion request ends here
    if (wanted := _help_wanted(parser, argv)) is not None:
        wanted.print_help()
        return 0
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except IostudyError as exc:
        print(error_line(exc), file=sys.stderr)
        return exit_status(exc)
    except BrokenPipeError:
        # The reader of our output went away (e.g. `| head`): not an error worth a traceback.
        sys.stdout = open(os.devnull, "w")
        return 1


if __name__ == "__main__":
    sys.exit(main())
