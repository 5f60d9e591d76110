"""The one map from an error a library raises to the exit status and the line a user sees."""

from iostudy.core.errors import BadInput, Failed, IostudyError, Stopped
from iostudy.core.exitcodes import EXIT_BAD_INPUT, EXIT_FAILED, EXIT_STOPPED

#: each kind of error with its exit status, most specific first
EXIT_OF = (
    (BadInput, EXIT_BAD_INPUT),
    (Stopped, EXIT_STOPPED),
    (Failed, EXIT_FAILED),
    (IostudyError, EXIT_FAILED),
)


def exit_status(exc: IostudyError) -> int:
    """The exit status a command returns for ``exc``."""
    return next(status for kind, status in EXIT_OF if isinstance(exc, kind))


def error_line(exc: BaseException | str) -> str:
    """The one line a failed command (or one of its inputs) prints on stderr."""
    return f"iostudy: error: {exc}"
