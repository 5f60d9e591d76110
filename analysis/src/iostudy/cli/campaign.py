"""``iostudy campaign``: run a campaign (configs/campaigns/) on a system with ReFrame underneath
(:mod:`iostudy.run.campaign`), check the campaign and references files."""

import shlex
import sys
from pathlib import Path

from iostudy.cli import schema
from iostudy.cli.checks import check_files
from iostudy.cli.errors import error_line
from iostudy.core import config, paths
from iostudy.core.exitcodes import EXIT_FAILED
from iostudy.run import campaign
from iostudy.run.runsystem import resolve_system


def _echo(line: str) -> None:
    sys.stdout.write(line)
    sys.stdout.flush()


def _warn_missing_build(manifest: dict) -> None:
    if manifest["spack_build_missing"]:
        print(f"campaign: WARNING: no Spack build: {manifest['spack_build_missing']}", flush=True)


def run(args, argv: list[str]) -> tuple[int, Path]:
    """Runs the campaign with ReFrame's progress shown; returns (exit status, run directory)."""
    system = resolve_system(args.system)
    loaded = config.load_campaign(args.campaign)
    prepared = campaign.prepare(loaded, system, args.results, args.dry_run, argv)
    for path in prepared.not_built:
        print(f"campaign: warning: {config.in_checkout(path)} is not built (dry run)")
    which = f"campaign {prepared.campaign['name']} on {system.name}"
    print(f"{which}: run {prepared.rid}")
    _warn_missing_build(prepared.manifest)
    print("+ " + shlex.join(prepared.cmd), flush=True)
    status, counts = campaign.execute(prepared, _echo)
    described = ", ".join(f"{n} {r}" for r, n in sorted((counts or {}).items())) or "no results"
    print(f"{which}: {status} ({described})")
    _warn_missing_build(prepared.manifest)  # again at the end, where a reader of the outcome looks
    return (0 if status in ("passed", "dry-run") else EXIT_FAILED), prepared.run_dir


def cmd_run(args) -> int:
    argv = ["campaign", "run", args.campaign, "--system", args.system]
    argv += ["--dry-run"] * args.dry_run + ["--results", str(args.results)]
    if args.ingest:
        argv += ["--ingest", str(args.ingest)]
    status, run_dir = run(args, argv)
    if args.ingest and not args.dry_run:
        # here: the store's imports are not needed for a run alone
        from iostudy.cli.ingest import ingest_and_report
        from iostudy.store.store import IngestError

        # A failed check's run is ingested too: its logs and verdicts belong in the store.
        try:
            ingest_and_report([run_dir], args.ingest)
        except IngestError as exc:
            print(error_line(exc), file=sys.stderr)
            status = status or EXIT_FAILED
    print(run_dir)
    return status


def cmd_check(args):
    checks = [
        (path(name), lambda load=load, name=name: load(name))
        for load, items, path in (
            (config.load_campaign, config.campaign_names(), config.campaign_path),
            (config.load_references, config.system_names(), config.references_path),
        )
        for name in items
        if path(name).exists()
    ]
    return check_files(checks, "campaign check: campaign and references")


def register(groups):
    """Adds the `campaign` command group."""
    grp = groups.add_parser(
        "campaign",
        help="run campaigns (configs/campaigns/) with ReFrame",
        description="A campaign says which checks to run with which parameters; "
        "campaign run runs it on a system into a new run directory.",
    )
    cmds = grp.add_subparsers(title="commands", dest="command", required=True)
    run_p = cmds.add_parser(
        "run",
        help="run a campaign on a system",
        description="Runs CAMPAIGN (a name of configs/campaigns/ or a campaign file) on SYSTEM "
        "with ReFrame into DIR/<run-id>/ (manifest.json, reframe/, darshan/), showing "
        "ReFrame's progress. The last line of output is the run directory. Exit status: 0 all "
        f"passed, {EXIT_FAILED} a check failed or was skipped (its program is not built; "
        "optional checks excepted), 2 a configuration or build problem.",
    )
    run_p.add_argument("campaign", metavar="CAMPAIGN")
    run_p.add_argument("--system", required=True, metavar="SYSTEM")
    run_p.add_argument(
        "--dry-run",
        action="store_true",
        help="write the job scripts (under reframe/stage/) without running them",
    )
    run_p.add_argument(
        "--results",
        type=Path,
        default=paths.RESULTS,
        metavar="DIR",
        help=f"where run directories go (default {paths.RESULTS})",
    )
    run_p.add_argument(
        "--ingest",
        type=Path,
        metavar="STORE",
        help="ingest the run into STORE when it ends (what the scheduled probe does)",
    )
    run_p.set_defaults(func=cmd_run)
    check_p = cmds.add_parser(
        "check",
        help="validate every campaign and references file",
        description="Validates configs/campaigns/*.json and configs/references/<system>.json "
        "against their schemas.",
    )
    check_p.set_defaults(func=cmd_check)
    schema.register(cmds)
