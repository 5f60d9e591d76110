"""``iostudy compare-jobs A B``: two jobs side by side, before and after
(:mod:`iostudy.metrics.comparejobs`)."""

from __future__ import annotations

import sys

from iostudy.cli.options import add_store_option
from iostudy.cli.tableout import add_format_options, write_table
from iostudy.core.deferred import deferred
from iostudy.metrics import comparejobs, jobstats
from iostudy.store import store as store_mod

pd = deferred("pandas")

#: the pair's tables, in the order they are printed
TABLES = ("summary", "levels", "sizes")


def as_text(pair: dict) -> str:
    """Which jobs A and B are and how they were named, then each table."""
    parts = [
        f"{side}: {j['log_path']} (job {comparejobs.jobid_text(j['jobid'])}; named by its "
        f"{j['named_by']})\n"
        for side, j in (("A", pair["a"]), ("B", pair["b"]))
    ]
    for name in TABLES:
        parts.append(f"\n{name}:\n{pair[name].to_string(index=False)}\n")
    return "".join(parts)


def cmd_compare_jobs(args) -> int:
    jobstats.require_jobs(args.store)
    pair = comparejobs.compare(store_mod.connect(args.store), args.a, args.b)
    if args.csv or args.json:  # one table for a program: every row says which it is
        long = pd.concat([pair[n].assign(table=n) for n in TABLES])
        write_table(long, args, sys.stdout)
    else:
        sys.stdout.write(as_text(pair))
    return 0


def register(groups) -> None:
    p = groups.add_parser(
        "compare-jobs",
        help="two jobs side by side, before and after: MiB/s/CN, time split, operations and "
        "access sizes per level",
        description="Compare job B with job A (seed 000, Fig. 11: an application before and "
        "after tuning): MiB/s/CN and the other per-job figures, the I/O time split and the "
        "operations per module (the file system's POSIX level against the application's "
        "MPI-IO and HDF5), and the access sizes each level saw. A and B: a Slurm job id, a "
        "log's path (as the store has it, its file name, or a log file, relative or absolute) "
        "or a log's sha256 (or its first 8+ hex digits); a name read two ways that name two "
        "jobs is refused, naming both. Definitions: python -m pydoc iostudy.metrics.comparejobs.",
    )
    add_store_option(p)
    add_format_options(p, "print every table as one CSV (its column table says which)")
    p.add_argument("a", metavar="A", help="the job before")
    p.add_argument("b", metavar="B", help="the job after")
    p.set_defaults(func=cmd_compare_jobs)
