"""``iostudy campaign schema [--write] [--schema FILE]``: whether
configs/schemas/campaign.schema.json is what the checks' parameters make
(:mod:`iostudy.benchmarks.campaignschema`), or, with ``--write``, rewriting it."""

from __future__ import annotations

from pathlib import Path

from iostudy.benchmarks import campaignschema
from iostudy.core.errors import Failed


def cmd_campaign_schema(args) -> int:
    text = campaignschema.schema_text(args.schema)
    if args.write:
        args.schema.write_text(text)
        print(f"wrote {args.schema}")
        return 0
    if args.schema.read_text() != text:
        raise Failed(f"{args.schema}: not what the registry makes: run with --write")
    print(f"ok: {args.schema}")
    return 0


def register(campaign_commands) -> None:
    """Adds ``schema`` to the campaign group's commands."""
    p = campaign_commands.add_parser(
        "schema",
        help="check (or --write) the campaign schema's per-check parts",
        description="The campaign schema's check names, per-check parameters and $defs, made "
        "from the checks' parameters (iostudy.benchmarks.registry): says whether the schema "
        "file is what they make (exit 1 when not); --write rewrites it.",
    )
    p.add_argument("--write", action="store_true", help="rewrite the schema file")
    p.add_argument(
        "--schema",
        type=Path,
        default=campaignschema.SCHEMA_PATH,
        help="the schema file (default: the checkout's configs/schemas/campaign.schema.json)",
    )
    p.set_defaults(func=cmd_campaign_schema)
