"""``iostudy sacct import``: job metadata from Slurm accounting into the store
(:mod:`iostudy.collect.sacct`)."""

import argparse
import textwrap
from pathlib import Path

from rich.console import Console

from iostudy.cli.options import add_store_option
from iostudy.cli.output import StderrProgress
from iostudy.collect import sacct


def import_sacct(args) -> int:
    """``iostudy sacct import``: the files or sacct's live output into the store."""
    if args.live:
        inputs = sacct.read_live(args.starttime, args.endtime, args.clusters)
    else:
        inputs = sacct.read_inputs(args.files, args.name, args.timezone)
    where = sacct.import_inputs(args.store, inputs, StderrProgress("sacct import"))
    console = Console(stderr=True)
    for _, _, problems, _ in inputs:
        for p in problems:
            console.print(f"skipped: {p}", highlight=False, markup=False, soft_wrap=True)
    n_rows = sum(len(rows) for _, rows, _, _ in inputs)
    n_bad = sum(len(problems) for _, _, problems, _ in inputs)
    n_steps = sum(steps for *_, steps in inputs)
    print(
        f"sacct import: {n_rows} jobs into {where}; {n_steps} step lines left out, "
        f"{n_bad} lines skipped"
    )
    return 0


def _paragraphs(*texts: str) -> str:
    return "\n\n".join(textwrap.fill(t, 78) for t in texts)


_IMPORT_HELP = "\n\n".join(
    [
        _paragraphs(
            "Read sacct --parsable2 output, header line included (--noheader output is "
            "refused: its columns cannot be known), into STORE/sched/sacct-<name>.parquet, one "
            "row per job allocation; steps (123.batch, 123.0) are left out, an array task keeps "
            "its own id (JobIDRaw). Columns may come in any order, extra ones are ignored; "
            "required: JobID or JobIDRaw, Account, NNodes, NCPUS or AllocCPUS, ElapsedRaw or "
            "Elapsed ([DD-]HH:MM:SS), Start. Capture a file with:"
        ),
        f"  TZ=UTC sacct --allusers --parsable2 --format={sacct.SACCT_FORMAT} -S START",
        _paragraphs(
            "Lines that cannot be used are reported (file:line: why) and skipped. <name> is the "
            "file's stem, so importing a file again replaces its rows. With --live, sacct is run "
            "here (with --allocations and TZ=UTC) and <name> is live-<UTC time>. When several "
            "imports hold a job (cluster, jobid), the one imported last counts.",
            "Exit status: 0; 2 when an input cannot be read or has no header, or sacct is "
            "missing or fails. The last line says where the rows went and the counts.",
        ),
    ]
)


def register(groups) -> None:
    """Adds the ``sacct`` command group to the CLI's group subparsers."""
    grp = groups.add_parser(
        "sacct",
        help="import job metadata from Slurm accounting (sacct) into the store",
        description="Slurm accounting: which project (account) each job belongs to, its nodes, "
        "cores and elapsed time, for coverage (seed 000 Table II: how much of the machine's "
        "work the logs cover).",
    )
    cmds = grp.add_subparsers(title="commands", dest="command", required=True)
    p = cmds.add_parser(
        "import",
        help="import sacct output (files, or --live) into the store's sched table",
        description=_IMPORT_HELP,
        # The capture command is one line to copy: argparse's wrapping would break it.
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("files", nargs="*", type=Path, metavar="FILE", help="sacct output files")
    p.add_argument("--live", action="store_true", help="run sacct here instead of reading files")
    p.add_argument(
        "--starttime",
        "-S",
        metavar="T",
        help="with --live: sacct's --starttime (default: sacct's, 00:00 today)",
    )
    p.add_argument("--endtime", "-E", metavar="T", help="with --live: sacct's --endtime")
    p.add_argument(
        "--clusters",
        "-M",
        metavar="C",
        help="with --live: sacct's --clusters (default: the local cluster)",
    )
    p.add_argument(
        "--timezone",
        metavar="ZONE",
        help="files: the time zone of their times without an offset, e.g. "
        "Europe/Berlin (default UTC; sacct prints its machine's local time)",
    )
    p.add_argument(
        "--name",
        help="one FILE: its part's name, STORE/sched/sacct-NAME.parquet (default: the file's "
        "stem); an import under the same name replaces it",
    )
    add_store_option(p)

    def run(args):
        if args.name and (args.live or len(args.files) != 1):
            p.error("--name names the part of one FILE")
        if args.live and args.files:
            p.error("give FILE... or --live, not both")
        if not args.live and not args.files:
            p.error("give FILE... or --live")
        if not args.live and (args.starttime or args.endtime or args.clusters):
            p.error("--starttime, --endtime and --clusters go with --live")
        if args.live and args.timezone:
            p.error("--timezone goes with files (--live runs sacct with TZ=UTC)")
        return import_sacct(args)

    p.set_defaults(func=run)
