"""Options several commands share, each defined once: the store they read or write, and the
bounds of the log reader (``iostudy log summary``, ``iostudy ingest``)."""

from pathlib import Path

from iostudy.core.paths import STORE


def add_store_option(parser, help: str = "the store") -> None:
    """The --store option every command that reads or writes a store takes."""
    parser.add_argument(
        "--store", type=Path, default=STORE, metavar="STORE", help=f"{help} (default {STORE})"
    )


def add_limit_options(parser) -> None:
    """The reader's decompression bounds as options (--max-inflated, --max-records) of a
    command that reads logs."""
    # imported here: only the commands that read logs pay for the reader's modules
    from iostudy.logs.logregions import DEFAULT_LIMITS

    parser.add_argument(
        "--max-inflated",
        type=int,
        default=DEFAULT_LIMITS.max_bytes >> 20,
        metavar="MIB",
        help="refuse a log whose regions inflate past MIB MiB in all (a decompression bomb; "
        "default %(default)s)",
    )
    parser.add_argument(
        "--max-records",
        type=int,
        default=DEFAULT_LIMITS.max_records,
        metavar="N",
        help="refuse a log with more than N records in one module (default %(default)s)",
    )


def limits_from(args):
    """The iostudy.logs.logregions.Limits that add_limit_options' options give."""
    from iostudy.logs.logregions import DEFAULT_LIMITS

    return DEFAULT_LIMITS._replace(max_bytes=args.max_inflated << 20, max_records=args.max_records)
