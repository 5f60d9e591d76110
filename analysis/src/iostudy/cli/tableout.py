"""How a command prints a table, one way for every command: aligned text for a reader, or
with ``--csv`` or ``--json`` (a list of objects, one a line; NaN as null, times in ISO 8601) for
a program."""

from __future__ import annotations

import json
import sys


def add_format_options(parser, csv_help: str = "print the table as CSV") -> None:
    """--csv and --json, one of them at most."""
    formats = parser.add_mutually_exclusive_group()
    formats.add_argument("--csv", action="store_true", help=csv_help)
    formats.add_argument("--json", action="store_true", help="print the table as JSON")


def write_table(frame, args, out=None, text=None) -> None:
    """frame (pandas) to out (default stdout) as args ask: CSV, JSON, or text(frame) (default
    its to_string without the index)."""
    out = out or sys.stdout
    if getattr(args, "json", False):
        # through pandas for NaN and times, through json for plain slashes; an object a line
        # (json's C encoder: an indented dump is pure Python, 4 s for 340,000 findings)
        records = json.loads(
            frame.to_json(orient="records", date_format="iso", double_precision=15)
        )
        lines = ",\n".join(map(json.dumps, records))
        out.write(f"[\n{lines}\n]\n" if records else "[]\n")
    elif getattr(args, "csv", False):
        frame.to_csv(out, index=False, lineterminator="\n")
    else:
        out.write((text(frame) if text else frame.to_string(index=False)) + "\n")
