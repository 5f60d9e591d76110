"""``iostudy list campaigns|systems|studies|runs|checks``: what there is to name in a command,
one per line, or as JSON with ``--json``."""

from __future__ import annotations

import argparse
import json
import sys

from iostudy.cli.options import add_store_option
from iostudy.core import checknames, config, paths
from iostudy.core.errors import BadInput

#: a run's columns as `list runs` shows them
RUN_COLUMNS = ("run_id", "study", "campaign", "system", "started", "status", "site")


def campaigns() -> list[dict]:
    """Every campaign of configs/campaigns with its study."""
    return [
        {"campaign": name, "study": config.load_campaign(name).get("study")}
        for name in config.campaign_names()
    ]


def systems() -> list[dict]:
    """Every system of configs/systems with its scheduler and node count."""
    out = []
    for name in config.system_names():
        system = config.load_system(name)
        nodes = (system.get("nodes") or {}).get("count")
        out.append({"system": name, "scheduler": system.get("scheduler"), "nodes": nodes})
    return out


def studies() -> list[dict]:
    """Every study the campaigns name, with its campaigns."""
    by_study: dict[str, list[str]] = {}
    for c in campaigns():
        by_study.setdefault(c["study"], []).append(c["campaign"])
    return [{"study": s, "campaigns": sorted(c)} for s, c in sorted(by_study.items())]


def checks() -> list[dict]:
    """Every ReFrame check (iostudy.core.checknames) with what it runs and for whom."""
    return [
        {
            "check": c.name,
            "title": c.title,
            "package": c.package,
            "seed": c.seed,
            "studies": list(c.studies),
        }
        for c in sorted(checknames.CHECKS.values(), key=lambda c: c.name)
    ]


def runs(store) -> list[dict]:
    """The store's runs, oldest first."""
    from iostudy.store import store as store_mod  # only this listing needs DuckDB

    con = store_mod.connect(store)
    try:
        rows = con.execute(
            f"SELECT {', '.join(RUN_COLUMNS)} FROM runs ORDER BY started NULLS LAST, run_id"
        ).fetchall()
    finally:
        con.close()
    return [dict(zip(RUN_COLUMNS, (_plain(v) for v in r), strict=True)) for r in rows]


def _plain(value):
    return value.isoformat() if hasattr(value, "isoformat") else value


LISTINGS = {
    "campaigns": lambda args: campaigns(),
    "systems": lambda args: systems(),
    "studies": lambda args: studies(),
    "checks": lambda args: checks(),
    "runs": lambda args: runs(args.store),
}


def run_dirs() -> list[str]:
    """The run directories of the default results folder (each has a manifest.json)."""
    return sorted(str(p.parent) for p in paths.RESULTS.glob("*/manifest.json"))


#: an argument's dest -> the names it takes, offered by shell completion
COMPLETIONS = {
    "system": config.system_names,
    "systems": config.system_names,
    "campaign": config.campaign_names,
    "study": lambda: [s["study"] for s in studies() if s["study"]],
    "check": lambda: [c["check"] for c in checks()],
    "sources": run_dirs,
}


def add_completers(parser: argparse.ArgumentParser) -> None:
    """Give every argument that takes a name iostudy knows (COMPLETIONS) its completer, in
    every command of parser."""
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                add_completers(sub)
        elif action.dest in COMPLETIONS:
            action.completer = _completer(COMPLETIONS[action.dest])


def _completer(names):
    def complete(prefix="", **_):
        try:
            return [n for n in names() if n.startswith(prefix)]
        except (OSError, ValueError):  # a configuration that cannot be read offers nothing
            return []

    return complete


def cmd_list(args) -> int:
    try:
        items = LISTINGS[args.what](args)
    except (OSError, ValueError) as exc:  # a config file that cannot be read or is invalid
        raise BadInput(str(exc)) from None
    if args.json:
        json.dump(items, sys.stdout, indent=2)
        print()
        return 0
    for item in items:
        first, *rest = item.values()
        extra = "  ".join(f"{k}={_text(v)}" for k, v in list(item.items())[1:] if v is not None)
        print(f"{first}  {extra}".rstrip() if rest else first)
    return 0


def _text(value) -> str:
    return ",".join(map(str, value)) if isinstance(value, list) else str(value)


def register(groups) -> None:
    p = groups.add_parser(
        "list",
        help="list campaigns, systems, studies, runs or checks",
        description="What there is to name in a command: the campaigns and systems of "
        "configs/, the studies the campaigns name, the ReFrame checks of reframe-checks/, the "
        "runs of a store. One per line (its name first), or as JSON.",
    )
    p.add_argument("what", choices=sorted(LISTINGS))
    p.add_argument("--json", action="store_true", help="print a JSON list of objects")
    add_store_option(p, "the store whose runs are listed")
    p.set_defaults(func=cmd_list)
