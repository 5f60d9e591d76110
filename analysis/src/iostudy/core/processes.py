"""Whether a process is alive: files and folders named after the process that made them (a
reader's scratch folder, a key being made) are cleared once it is gone."""

import os


def alive(pid: int) -> bool:
    """Whether process ``pid`` exists (another user's counts: it cannot be signalled)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
