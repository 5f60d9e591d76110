"""`iostudy logs mkdirs ROOT --years Y [Y ...]`: a facility's log root made ready, as Darshan's
darshan-mk-log-dirs.pl does: ``ROOT/<Y>/<M>/<D>`` for every day of the years (month and day not
zero padded, as the runtime names them). Each folder it makes gets the root's own mode (1777 on
a root shared by all users), set exactly, whatever the administrator's umask; folders that
exist are left as they are. The runtime makes a missing day's folders the same way."""

from __future__ import annotations

import calendar
import os
import stat
import sys
from pathlib import Path

from iostudy.core.exitcodes import EXIT_BAD_INPUT
from iostudy.core.helptext import plain

YEARS = range(1970, 10000)


class LogRootError(Exception):
    """A root or a year that cannot be used; the message says which."""


def make_day_dirs(root: Path, years) -> tuple[int, int]:
    """Makes ROOT/<Y>/<M>/<D> for every day of ``years``; returns (folders made, days whose
    folder was there)."""
    try:
        st = root.stat()
    except OSError as exc:
        raise LogRootError(f"{root}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise LogRootError(f"{root}: not a folder (the log root is made by the site)")
    for year in years:
        if year not in YEARS:
            raise LogRootError(f"--years {year}: not a year from {YEARS[0]} to {YEARS[-1]}")
    mode, made, there = stat.S_IMODE(st.st_mode), 0, 0
    for year in years:
        made += _made(root / str(year), mode)
        for month in range(1, 13):
            folder = root / str(year) / str(month)
            made += _made(folder, mode)
            for day in range(1, calendar.monthrange(year, month)[1] + 1):
                if _made(folder / str(day), mode):
                    made += 1
                else:
                    there += 1
    return made, there


def _made(folder: Path, mode: int) -> bool:
    """Whether folder was made now (with exactly mode); False if it was there."""
    try:
        folder.mkdir(mode)
    except FileExistsError:
        return False
    os.chmod(folder, mode)  # mkdir's mode passes through the umask
    return True


def cmd_mkdirs(args) -> int:
    try:
        made, there = make_day_dirs(Path(args.root), args.years)
    except (LogRootError, OSError) as exc:
        print(f"iostudy: error: {exc}", file=sys.stderr)
        return EXIT_BAD_INPUT
    print(f"logs mkdirs: {args.root}: {made} folders made, {there} days were there")
    return 0


def register(log_commands) -> None:
    """Adds `mkdirs` to the `iostudy log` (alias `logs`) group's subparsers."""
    m = log_commands.add_parser(
        "mkdirs",
        help="make a shared log root's day folders for whole years (as darshan-mk-log-dirs)",
        description=plain(__doc__.split("\n\n")[0].split(": ", 1)[1]),
    )
    m.add_argument("root", help="the log root (DARSHAN_LOGPATH), made by the site")
    m.add_argument(
        "--years",
        type=int,
        nargs="+",
        required=True,
        metavar="Y",
        help="the years whose day folders to make",
    )
    m.set_defaults(func=cmd_mkdirs)
