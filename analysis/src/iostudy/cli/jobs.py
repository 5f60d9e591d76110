"""``iostudy jobs``: the store's job logs, one row each, with seed 000's per-job figures
(:mod:`iostudy.metrics.jobstats`)."""

from __future__ import annotations

import sys
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.cli.tableout import add_format_options, write_table
from iostudy.core.deferred import deferred
from iostudy.metrics import jobstats
from iostudy.store import store as store_mod

pd = deferred("pandas")

#: the columns the text table shows (--csv and --json give them all)
TEXT_COLUMNS = jobstats.COLUMNS[:18]


def as_text(table) -> str:
    """The first columns, for a reader."""
    with pd.option_context("display.max_columns", 20, "display.width", 200):
        return table[TEXT_COLUMNS].to_string(index=False)


def cmd_jobs(args) -> int:
    scope = "+".join(jobstats.scope_modules(args.module))
    jobstats.require_jobs(args.store)
    table = jobstats.job_table(store_mod.connect(args.store), args.module)
    out = open(args.out, "w", newline="") if args.out else sys.stdout  # noqa: SIM115
    try:
        write_table(table, args, out, text=as_text)
    finally:
        if args.out:
            out.close()
    flagged = int(table["flags"].notna().sum())
    print(
        f"jobs: {len(table)} jobs of {args.store} (modules {scope}; {flagged} flagged) to "
        f"{args.out or 'stdout'}",
        file=sys.stderr,
    )
    return 0


def register(groups) -> None:
    p = groups.add_parser(
        "jobs",
        help="one row per job log: bytes, aggregate bandwidth, MiB/s/CN, strategy, ...",
        description="Print the store's job logs, one row each, with seed 000's per-job "
        "figures: bytes read and written, the slowest rank's I/O time and the aggregate "
        "bandwidth it gives (PyDarshan's agg_perf_by_slowest), MiB/s per compute node, "
        "metadata cost, files, sequential and aligned shares, MiB per process, interfaces, "
        "strategy (N:N, N:1, N:M, rank-0) and seed 003's model coordinates (io_procs, "
        "procs_per_file). Slurm accounting imported with iostudy sacct import gives account, "
        "user, nodes and cores; without it, nor a system description (ingest --system), nor "
        "the harness's tags, a job's nodes are unknown and it has no MiB/s/CN. Definitions: "
        "python -m pydoc iostudy.metrics.jobstats.",
    )
    add_store_option(p)
    add_format_options(p, "print every column as CSV")
    p.add_argument(
        "--module",
        metavar="MODULE",
        help="count only this module's records, by Darshan's name in any case: posix, stdio, "
        "mpi-io, h5f, h5d, pnetcdf_file, pnetcdf_var, dfs or daos (default: the layers that "
        "moved the job's bytes, each byte once: POSIX, STDIO, DFS and DAOS)",
    )
    p.add_argument("--out", type=Path, help="write to this file instead of stdout")
    p.set_defaults(func=cmd_jobs)
