"""The kinds of failure a library layer raises, so that the command layer alone decides what a
user sees and which exit status a command returns (``iostudy.cli.errors`` maps each kind to its
status, once). A module's own error class derives from one of these."""


class IostudyError(Exception):
    """Anything iostudy reports as one error line naming the file, field or value at fault."""


class BadInput(IostudyError):
    """The input cannot be used: a file, a field or a value (a damaged log, a bad config)."""


class Failed(IostudyError):
    """The operation ran and failed: a build, a merge, a check, an external command."""


class Stopped(IostudyError):
    """Stopped by a bound before the end (a time or size limit)."""
