"""``iostudy schedule probe``: install, show or remove the hourly interference probe of a system
(:mod:`iostudy.run.schedule`)."""

from pathlib import Path

from iostudy.cli.options import add_store_option
from iostudy.core import config, paths
from iostudy.run import schedule


def _remove(args, command: str) -> None:
    removed = schedule.remove(command, args.system, args.dry_run)
    if not removed:
        print(f"schedule: no probe of {args.system} in the {command}; nothing removed")
    elif args.dry_run:
        print(f"schedule: would remove from the {command}:")
        print("\n".join(removed))
    else:
        print(f"schedule: probe of {args.system} removed from the {command}")


def cmd_probe(args) -> int:
    system = config.load_system(args.system)
    command = schedule.table_command(system["scheduler"])
    log = args.log or schedule.default_log(args.system)
    entry = schedule.probe_entry(
        args.system,
        system["scheduler"],
        args.results.resolve(),
        args.store.resolve(),
        Path(log).resolve(),
        args.minute,
        args.time_limit,
    )
    if args.remove:
        _remove(args, command)
    elif args.dry_run:
        print("\n".join(entry))
    elif not schedule.install(command, args.system, entry):
        print(f"schedule: the probe of {args.system} is already in the {command}; unchanged")
    else:
        print(
            f"schedule: hourly probe of {args.system} installed in the {command} "
            f"(`{command} -l` lists it); runs log to {log}"
        )
    return 0


def _minute(text: str) -> int:
    value = int(text)
    if not 0 <= value <= 59:
        raise ValueError(text)
    return value


def register(groups) -> None:
    grp = groups.add_parser(
        "schedule",
        help="install the hourly interference probe (scrontab on Slurm, crontab elsewhere)",
        description="Scheduled collection on a system.",
    )
    cmds = grp.add_subparsers(title="commands", dest="command", required=True)
    probe_p = cmds.add_parser(
        "probe",
        help="install, show (--dry-run) or remove (--remove) the hourly probe of a system",
        description="Installs an hourly entry that runs the probe campaign on SYSTEM and "
        "ingests it into STORE (one sample of seed 004's time series per hour): in the user's "
        "scrontab when the system's scheduler is Slurm (scrontab -l lists it), else in the "
        "user's crontab under flock. Installing again replaces the system's entry; other "
        "entries are kept. Exit status: 0; 1 when the table cannot be read or written; 2 for "
        "an unknown system.",
    )
    probe_p.add_argument("--system", required=True, metavar="SYSTEM")
    probe_p.add_argument(
        "--results",
        type=Path,
        default=paths.RESULTS,
        metavar="DIR",
        help=f"where the probe's run directories go (default {paths.RESULTS}; the crontab entry "
        "holds it absolute)",
    )
    add_store_option(probe_p, "the store the samples go to")
    probe_p.add_argument(
        "--log",
        type=Path,
        metavar="FILE",
        help="where the runs' output goes (default: build/campaign-logs/probe-SYSTEM.log)",
    )
    probe_p.add_argument(
        "--minute",
        type=_minute,
        default=0,
        metavar="M",
        help="minute of the hour it starts (0-59, default 0)",
    )
    probe_p.add_argument(
        "--time-limit",
        type=int,
        default=50,
        metavar="MIN",
        help="Slurm time limit of a run in minutes (default 50)",
    )
    probe_p.add_argument("--remove", action="store_true", help="remove the system's entry")
    probe_p.add_argument(
        "--dry-run",
        action="store_true",
        help="print the entry (or what --remove would remove); change nothing",
    )
    probe_p.set_defaults(func=cmd_probe)
