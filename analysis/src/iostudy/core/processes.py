"""Whether a process is alive, and the files and folders named after the process that made
them (a reader's scratch folder, a key being made, a bundle being written): a command killed on
the way leaves them, and the next command that makes one of their kind clears those whose
process is gone."""

import os
import re
import shutil
import tempfile
from pathlib import Path


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: it cannot be signalled)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def own_name(prefix: str) -> str:
    """``<prefix><pid>-``: the start of the name of a file or folder of this process."""
    return f"{prefix}{os.getpid()}-"


def clear_dead(folder, prefix: str) -> None:
    """Remove the entries of folder named ``<prefix><pid>`` or ``<prefix><pid>-...`` whose
    process is gone and that this user owns (a link is removed, never followed). Another process
    may be clearing them at the same moment: one gone meanwhile is no error."""
    pattern = re.compile(rf"{re.escape(prefix)}(\d+)(?:-.*)?", re.DOTALL)
    try:
        entries = list(os.scandir(folder))
    except FileNotFoundError:
        return
    for entry in entries:
        owner = pattern.fullmatch(entry.name)
        if owner and not alive(int(owner[1])):
            _remove_if_mine(entry)


def _remove_if_mine(entry: os.DirEntry) -> None:
    try:
        if entry.stat(follow_symlinks=False).st_uid != os.getuid():
            return
        if entry.is_dir(follow_symlinks=False):
            shutil.rmtree(entry.path, ignore_errors=True)
        else:
            os.unlink(entry.path)
    except FileNotFoundError:
        pass


def private_dir(prefix: str, folder=None) -> Path:
    """A new folder of this process (mode 0700) in folder (default: the temporary folder),
    once those of dead processes of the same prefix are gone."""
    folder = folder if folder is not None else tempfile.gettempdir()
    clear_dead(folder, prefix)
    return Path(tempfile.mkdtemp(prefix=own_name(prefix), dir=folder))
