"""`iostudy logs mkdirs ROOT --years Y [Y ...]`: a facility's log root made ready, as Darshan's
darshan-mk-log-dirs.pl does: ``ROOT/<Y>/<M>/<D>`` for every day of the years (month and day not
zero padded, as the runtime names them). Each folder it makes gets the root's own mode (1777 on
a root shared by all users), set exactly, whatever the administrator's umask; folders that
exist are left as they are. The runtime makes a missing day's folders the same way."""

from __future__ import annotations

import calendar
import os
import stat
from pathlib import Path

from iostudy.core.errors import BadInput

YEARS = range(1970, 10000)


class LogRootError(BadInput):
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
        os.chmod(folder, mode)  # mkdir's mode passes through the umask
    except FileExistsError:
        return False
    except OSError as exc:  # no permission, no space: the folder named
        raise LogRootError(str(exc)) from None
    return True
