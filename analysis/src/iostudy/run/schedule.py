"""The hourly interference probe of a system in the user's table (`iostudy schedule probe`:
:mod:`iostudy.cli.schedule`).

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

from iostudy.core import config
from iostudy.core.errors import Failed

REPO_ROOT = config.REPO_ROOT
MARKER = "# iostudy schedule probe --system "


class ScheduleError(Failed):
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


def _run(cmd: list[str], text_in: str | None = None) -> subprocess.CompletedProcess:
    """The table command run; a failure to run it at all raises ScheduleError."""
    try:
        return subprocess.run(cmd, input=text_in, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ScheduleError(str(exc)) from exc


def read_table(command: str) -> list[str]:
    """The user's table as lines; empty when there is none (`-l` fails with "no crontab")."""
    if shutil.which(command) is None:
        hint = (
            "Slurm's scrontab client (Debian's slurm-client lacks it: ci/cluster/build-scrontab.sh)"
            if command == "scrontab"
            else "cron (apt-get install cron)"
        )
        raise ScheduleError(f"{command} not found: install {hint}")
    proc = _run([command, "-l"])
    if proc.returncode != 0:
        if "no crontab" in proc.stderr.lower() or "no crontab" in proc.stdout.lower():
            return []
        raise ScheduleError(f"{command} -l: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.splitlines()


def write_table(command: str, lines: list[str]) -> None:
    if not any(line.strip() and not line.startswith("#") for line in lines):
        # Nothing left to run: remove the table (an empty scrontab is refused by some Slurms).
        proc = _run([command, "-r"])
        if proc.returncode != 0 and "no crontab" not in proc.stderr.lower():
            raise ScheduleError(f"{command} -r: {proc.stderr.strip()}")
        return
    proc = _run([command, "-"], "\n".join(lines) + "\n")
    if proc.returncode != 0:
        raise ScheduleError(f"{command} -: {proc.stderr.strip() or proc.returncode}")


def default_log(system: str) -> Path:
    """Where the probe's runs write their output unless told."""
    return REPO_ROOT / "build" / "campaign-logs" / f"probe-{system}.log"


def install(command: str, system: str, entry: list[str]) -> bool:
    """Puts the entry in the table in place of the system's block; False when it was there."""
    current = read_table(command)
    others = without_block(current, system)
    if others + entry == current:
        return False
    write_table(command, others + entry)
    return True


def remove(command: str, system: str, dry_run: bool) -> list[str]:
    """Removes the system's block from the table (not on a dry run); returns its lines, none
    when the table has no block of the system."""
    current = read_table(command)
    others = without_block(current, system)
    if others != current and not dry_run:
        write_table(command, others)
    return [line for line in current if line not in others]
