"""``iostudy metrics --store STORE --out DIR``: every metric table of
:mod:`iostudy.metrics.metrics`, each written as DIR/<name>.csv."""

from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.core.errors import BadInput
from iostudy.metrics import metrics
from iostudy.store import store


def cmd_metrics(args) -> int:
    if not Path(args.store).is_dir():
        raise BadInput(f"{args.store}: no store (run `iostudy ingest` first)")
    tables = metrics.compute_all(store.connect(args.store))
    metrics.write_csvs(tables, args.out)
    counts = ", ".join(f"{name} {len(t)}" for name, t in tables.items())
    print(f"metrics: {len(tables)} tables written to {args.out} as CSV (rows: {counts})")
    return 0


def register(groups) -> None:
    """Adds the ``metrics`` command to the CLI's group subparsers."""
    p = groups.add_parser(
        "metrics",
        help="compute the metric tables from the store and write them as CSV",
        description="Compute MiB/s/CN per job (seed 000 II-D), throughput per I/O model derived "
        "from the logs with the Table I cross-check against the benchmark, the same check for "
        "every IOR run of ior_check, and the seed-003 "
        "2D histograms, from STORE; write each table as DIR/<name>.csv.",
    )
    add_store_option(p)
    p.add_argument("--out", type=Path, required=True, metavar="DIR")
    p.set_defaults(func=cmd_metrics)
