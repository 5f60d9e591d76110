"""Command-line interface: ``iostudy <group> <command>``. ``iostudy`` alone, or a group alone,
prints its help; shell completion through argcomplete (``eval "$(register-python-argcomplete
iostudy)"``)."""

# PYTHON_ARGCOMPLETE_OK

import argparse
import importlib
import os
import shlex
import sys

from iostudy import __version__
from iostudy.cli.errors import error_line, exit_status
from iostudy.core.errors import IostudyError

# Command groups -> the module that registers each (its register(groups)), in --help's order.
# A command imports only its own module: `iostudy ingest` or `iostudy fsstats scan` start
# without the report's matplotlib or the campaign's ReFrame code (a second saved per call).
GROUP_MODULES = {
    "log": "log",
    "logs": "log",
    "config": "config",
    "list": "listing",
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
    argv = sys.argv[1:] if argv is None else argv
    named = next((a for a in argv if not a.startswith("-")), None)
    everything = named not in GROUP_MODULES
    wanted = [m for g, m in GROUP_MODULES.items() if named == g or everything]
    # a module may register several groups (log and its alias logs, export and import)
    for module in dict.fromkeys(wanted):
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


def _complete(parser) -> None:
    """Answers a shell's completion request; argcomplete ends the process there."""
    # Only a completion request needs these: the names offered read configs/ (jsonschema), which
    # every other command that does not read them starts without.
    import argcomplete

    from iostudy.cli import listing

    listing.add_completers(parser)
    argcomplete.autocomplete(parser)


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    completing = _completion_words()
    parser = build_parser(completing or argv)
    if completing is not None:
        _complete(parser)
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
