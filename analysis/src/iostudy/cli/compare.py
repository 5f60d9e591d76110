"""``iostudy compare``: every performance value judged against its baseline, its system's
ceiling and its reference band (:mod:`iostudy.metrics.compare`); exit 1 on a regression."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.cli.tableout import add_format_options, write_table
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_REGRESSION
from iostudy.core.helptext import plain
from iostudy.metrics import compare

pd = deferred("pandas")

#: the judged table's columns as the command shows them
COLUMNS = ["label", "run_id", "metric", "unit", "value", "change_pct", "verdict", "basis"]
#: the columns of a series in --json (the judged rows' identity, verdict and evidence)
JSON_COLUMNS = [
    "site",
    "system",
    "label",
    "run_id",
    "started",
    "fingerprint",
    "check",
    "variable",
    "unit",
    "metric",
    "measures",
    "measured",
    "direction",
    "value",
    "repetitions",
    "verdict",
    *compare.STAT_COLUMNS,  # the evidence, as judge() names it (one list)
    "baseline",
    "basis",
    "against",
    "change_point",
    "band_low",
    "band_high",
    "latest",
]
EXITS = f"""exit status: 0 no regression, {EXIT_REGRESSION} a regression among the judged values,
{EXIT_BAD_INPUT} bad input (no such store, a bad option)."""


def as_text(view) -> str:
    with pd.option_context(
        "display.max_rows",
        None,
        "display.max_columns",
        None,
        "display.width",
        250,
        "display.max_colwidth",
        90,
    ):
        return view.to_string(index=False, float_format=lambda v: f"{v:.4g}")


def _check(args) -> None:
    if not Path(args.store).is_dir():
        raise BadInput(f"store {args.store}: no such directory")
    if args.window < 1 or not 0 < args.alpha < 1 or args.tolerance < 0 or args.noise_limit <= 0:
        raise BadInput("--window must be positive, --alpha in 0..1, --tolerance at least 0")


def _asked(args):
    """The store's results of the systems and checks asked for."""
    table = compare.results(args.store)
    if args.system:
        table = table[table["label"].isin(args.system)]
    if args.check:
        table = table[table["check"].isin(args.check)]
    for option, run in (("--baseline", args.baseline), ("--run", args.run)):
        if run and not (table["run_id"] == run).any():
            raise BadInput(f"{option} {run}: no such run among the values asked")
    return table


def _say_verdicts(shown) -> None:
    """The verdicts' counts, then one line per regression, on stderr."""
    counts = shown["verdict"].value_counts()
    summary = ", ".join(f"{counts.get(v, 0)} {v}" for v in compare.VERDICTS)
    print(
        f"compare: {len(shown)} results of {shown['label'].nunique()} systems judged: {summary}",
        file=sys.stderr,
    )
    for row in shown[shown["verdict"] == "regression"].itertuples():
        print(
            f"REGRESSION: {row.label} {row.metric}: {row.value:.4g} {row.unit} in run "
            f"{row.run_id} ({row.basis})",
            file=sys.stderr,
        )


def as_json(shown, status: int, error: str | None = None) -> str:
    """The --json object: every judged row (NaN and unbounded edges as null), the verdicts'
    counts, the exit status."""
    series = json.loads(
        shown[JSON_COLUMNS].to_json(orient="records", date_format="iso", double_precision=15)
    )
    counts = shown["verdict"].value_counts() if len(shown) else {}
    out = {
        "series": series,
        "verdicts": {v: int(counts.get(v, 0)) for v in compare.VERDICTS},
        "exit_status": status,
    }
    return json.dumps(out | ({"error": error} if error else {}), indent=1)


def cmd_compare(args) -> int:
    try:
        _check(args)
        table = _asked(args)
    except BadInput as e:
        if not args.json:
            raise
        print(as_json(pd.DataFrame(columns=JSON_COLUMNS), EXIT_BAD_INPUT, str(e)))
        return EXIT_BAD_INPUT
    if table.empty:
        if args.json:
            print(as_json(pd.DataFrame(columns=JSON_COLUMNS), 0))
            return 0
        print(
            f"compare: no performance values in {args.store}"
            + (" for the systems and checks asked" if args.system or args.check else "")
        )
        return 0
    judged = compare.judge(
        table,
        window=args.window,
        tolerance=args.tolerance,
        alpha=args.alpha,
        noise_limit=args.noise_limit,
        baseline_run=args.baseline,
        descriptions=compare.system_descriptions(args.store, table),
        ceiling_fraction=args.ceiling_fraction,
    )
    shown = judged if args.all else judged[judged["latest"]]
    if args.run:
        # each value judged against the runs before it, shown for this run only: a scheduled
        # campaign judges its new run, not again another campaign's older one
        shown = judged[judged["run_id"] == args.run]
    status = EXIT_REGRESSION if (shown["verdict"] == "regression").any() else 0
    if args.json:
        print(as_json(shown, status))
    else:
        write_table(shown[COLUMNS].rename(columns={"label": "system"}), args, text=as_text)
    _say_verdicts(shown)
    return status


def register(groups) -> None:
    p = groups.add_parser(
        "compare",
        help="judge every performance value against its baseline, ceiling and reference; "
        "exit 1 on a regression",
        description=plain(compare.__doc__.split("\n\n", 1)[1]),
        epilog=EXITS,
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
    p.add_argument(
        "--run",
        metavar="RUN_ID",
        help="only this run's values, each judged against the runs before it (the run a "
        "scheduled campaign just made)",
    )
    p.add_argument(
        "--baseline",
        metavar="RUN_ID",
        help="the accepted run: its repetitions are the baseline of the runs after it",
    )
    p.add_argument(
        "--window", type=int, default=compare.WINDOW, help="earlier runs in the baseline (10)"
    )
    p.add_argument(
        "--alpha", type=float, default=compare.ALPHA, help="the rank test's significance (0.01)"
    )
    p.add_argument(
        "--tolerance",
        type=float,
        default=compare.TOLERANCE,
        help="a change's interval must pass this fraction of the median (default 0.05)",
    )
    p.add_argument(
        "--noise-limit",
        type=float,
        default=compare.NOISE_LIMIT,
        help="too noisy when the smallest detectable change is over this fraction (0.5)",
    )
    p.add_argument(
        "--ceiling-fraction",
        type=float,
        default=compare.CEILING_FRACTION,
        help="a rate under this fraction of its system's ceiling regressed (0.1; 0: off)",
    )
    add_format_options(p, "the table as CSV on stdout")
    p.set_defaults(func=cmd_compare)
