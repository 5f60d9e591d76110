"""`iostudy schedule probe`: install, show or remove the hourly interference probe of a system.

Each hour the entry runs the probe campaign (configs/campaigns/probe.json) on the system and
ingests the run into the store, which appends the sample to the probes table (seed 004's time
series). On a system whose scheduler is Slurm the entry goes to the user's scrontab: slurmctld
runs it as a batch job and never starts one while the last is still running. Elsewhere it is a
line of the user's crontab, under flock so that runs never overlap either.

The entry is a block that starts with a marker line naming the system; installing replaces the
system's block (so installing twice leaves one), removing deletes it, and every other line of
the table stays as it was.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import sys
from pathlib import Path

from iostudy.core import config, paths
from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.paths import add_store_option

REPO_ROOT = config.REPO_ROOT
MARKER = "# iostudy schedule probe --system "


class ScheduleError(Exception):
    """The table cannot be read or written; the message names the command and its error."""


def marker(system: str) -> str:
    return f"{MARKER}{system}"


def table_command(scheduler: str) -> str:
    return "scrontab" if scheduler == "slurm" else "crontab"


def probe_entry(
    system: str, scheduler: str, results: Path, store: Path, log: Path, minute: int, time_limit: int
) -> list[str]:
    """The lines of the system's block: the marker, Slurm's options (scrontab), the command."""
    iostudy = Path(sys.executable).parent / "iostudy"
    run = (
        f"cd {shlex.quote(str(REPO_ROOT))} && {shlex.quote(str(iostudy))} campaign run probe "
        f"--system {shlex.quote(system)} --results {shlex.quote(str(results))} "
        f"--ingest {shlex.quote(str(store))} >> {shlex.quote(str(log))} 2>&1"
    )
    lines = [marker(system)]
    if scheduler == "slurm":
        lines += [
            f"#SCRON --job-name=iostudy-probe-{system}",
            f"#SCRON --time={time_limit}",
            "#SCRON --output=/dev/null",
        ]
    else:  # cron starts the next run even when the last one still runs: skip it instead
        lock = Path(log).with_suffix(".lock")
        run = f"flock -n {shlex.quote(str(lock))} sh -c {shlex.quote(run)}"
    # The log's folder first: a fresh checkout has none, and flock opens its lock there.
    command = f"mkdir -p {shlex.quote(str(Path(log).parent))} && {run}"
    if scheduler != "slurm":
        command = command.replace("%", r"\%")  # cron turns an unescaped % into a newline
    return lines + [f"{minute} * * * * {command}"]


def without_block(lines: list[str], system: str) -> list[str]:
    """The table without the system's block (its marker, #SCRON lines and command line)."""
    kept, skipping = [], False
    for line in lines:
        if line == marker(system):
            skipping = True
            continue
        if skipping:
            if line.startswith("#SCRON"):
                continue
            skipping = False
            continue  # the block's command line
        kept.append(line)
    return kept


def read_table(command: str) -> list[str]:
    """The user's table as lines; empty when there is none (`-l` fails with "no crontab")."""
    if shutil.which(command) is None:
        hint = (
            "Slurm's scrontab client (Debian's slurm-client lacks it: ci/cluster/build-scrontab.sh)"
            if command == "scrontab"
            else "cron (apt-get install cron)"
        )
        raise ScheduleError(f"{command} not found: install {hint}")
    proc = subprocess.run([command, "-l"], capture_output=True, text=True, timeout=60)
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower() or "no crontab" in proc.stdout.lower():
            return []
        raise ScheduleError(f"{command} -l: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.splitlines()


def write_table(command: str, lines: list[str]) -> None:
    if not any(line.strip() and not line.startswith("#") for line in lines):
        # Nothing left to run: remove the table (an empty scrontab is refused by some Slurms).
        proc = subprocess.run([command, "-r"], capture_output=True, text=True, timeout=60)
        if proc.returncode != 0 and "no crontab" not in proc.stderr.lower():
            raise ScheduleError(f"{command} -r: {proc.stderr.strip()}")
        return
    proc = subprocess.run(
        [command, "-"], input="\n".join(lines) + "\n", capture_output=True, text=True, timeout=60
    )
    if proc.returncode != 0:
        raise ScheduleError(f"{command} -: {proc.stderr.strip() or proc.returncode}")


def cmd_probe(args) -> int:
    try:
        system = config.load_system(args.system)
    except config.ConfigError as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    command = table_command(system["scheduler"])
    log = args.log or REPO_ROOT / "build" / "campaign-logs" / f"probe-{args.system}.log"
    entry = probe_entry(
        args.system,
        system["scheduler"],
        args.results.resolve(),
        args.store.resolve(),
        Path(log).resolve(),
        args.minute,
        args.time_limit,
    )
    if args.dry_run and not args.remove:
        print("\n".join(entry))
        return 0
    try:
        current = read_table(command)
        others = without_block(current, args.system)
        if args.remove:
            if others == current:
                print(f"schedule: no probe of {args.system} in the {command}; nothing removed")
            elif args.dry_run:
                print(f"schedule: would remove from the {command}:")
                print("\n".join(line for line in current if line not in others))
            else:
                write_table(command, others)
                print(f"schedule: probe of {args.system} removed from the {command}")
            return 0
        if others + entry == current:
            print(f"schedule: the probe of {args.system} is already in the {command}; unchanged")
            return 0
        write_table(command, others + entry)
    except (ScheduleError, OSError, subprocess.TimeoutExpired) as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return 1
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
