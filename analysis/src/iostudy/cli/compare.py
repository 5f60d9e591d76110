"""``iostudy compare``: every performance value judged against its band and its history
(:mod:`iostudy.metrics.compare`); exit 1 on a regression."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.cli.tableout import add_format_options, write_table
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.exitcodes import EXIT_REGRESSION
from iostudy.core.helptext import plain
from iostudy.metrics import compare

pd = deferred("pandas")

#: the judged table's columns as the command shows them
COLUMNS = ["label", "run_id", "metric", "unit", "value", "change_pct", "basis", "verdict"]
VERDICTS = ("regression", "improvement", "ok", "noisy history", "no baseline")


def as_text(view) -> str:
    with pd.option_context(
        "display.max_rows",
        None,
        "display.max_columns",
        None,
        "display.width",
        250,
        "display.max_colwidth",
        70,
    ):
        return view.to_string(index=False, float_format=lambda v: f"{v:.4g}")


def _check(args) -> None:
    if not Path(args.store).is_dir():
        raise BadInput(f"store {args.store}: no such directory")
    if args.k <= 0 or args.window < 1 or args.min_history < 1 or args.tolerance < 0:
        raise BadInput("--k and --window, --min-history must be positive, --tolerance at least 0")


def _asked(args):
    """The store's results of the systems and checks asked for."""
    table = compare.results(args.store)
    if args.system:
        table = table[table["label"].isin(args.system)]
    if args.check:
        table = table[table["check"].isin(args.check)]
    return table


def _say_verdicts(shown) -> None:
    """The verdicts' counts, then one line per regression, on stderr."""
    counts = shown["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in VERDICTS)
    print(
        f"compare: {len(shown)} results of {shown['label'].nunique()} systems judged: {summary}",
        file=sys.stderr,
    )
    for row in shown[shown["verdict"] == "regression"].itertuples():
        change = "" if pd.isna(row.change_pct) else f"{row.change_pct:+.0f}% against the median; "
        print(
            f"REGRESSION: {row.label} {row.metric}: {row.value:.4g} {row.unit} in run "
            f"{row.run_id} ({change}{row.basis})",
            file=sys.stderr,
        )


def cmd_compare(args) -> int:
    _check(args)
    table = _asked(args)
    if table.empty:
        print(
            f"compare: no performance values in {args.store}"
            + (" for the systems and checks asked" if args.system or args.check else "")
        )
        return 0
    judged = compare.judge(table, args.k, args.window, args.min_history, args.tolerance)
    shown = judged if args.all else judged[judged["latest"]]
    write_table(shown[COLUMNS].rename(columns={"label": "system"}), args, text=as_text)
    _say_verdicts(shown)
    return EXIT_REGRESSION if (shown["verdict"] == "regression").any() else 0


def register(groups) -> None:
    p = groups.add_parser(
        "compare",
        help="judge every performance value against its band and history; exit 1 on a regression",
        description=plain(compare.__doc__.split("\n\n", 1)[1]),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_store_option(p)
    p.add_argument(
        "--system",
        action="append",
        help="only this system (site/system for another site's); repeatable",
    )
    p.add_argument("--check", action="append", help="only this check; repeatable")
    p.add_argument("--all", action="store_true", help="judge every run, not only the latest")
    p.add_argument("--k", type=float, default=3.0, help="history band: k x MAD-sigma (default 3)")
    p.add_argument("--window", type=int, default=10, help="previous runs in the history (10)")
    p.add_argument("--min-history", type=int, default=3, help="runs a history needs (default 3)")
    p.add_argument(
        "--tolerance",
        type=float,
        default=0.1,
        help="history band at least this fraction of the median (default 0.1)",
    )
    add_format_options(p, "the table as CSV on stdout")
    p.set_defaults(func=cmd_compare)
