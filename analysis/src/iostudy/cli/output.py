"""What the command layer hands the library to hear from it: progress and warnings on stderr."""

import sys

from iostudy.core.progress import Progress


class StderrProgress(Progress):
    """Progress lines and warnings on stderr, each prefixed with the command's name."""

    def __init__(self, prefix: str = "iostudy"):
        self.prefix = prefix

    def note(self, text: str) -> None:
        print(f"{self.prefix}: {text}", file=sys.stderr, flush=True)

    def warn(self, text: str) -> None:
        print(f"{self.prefix}: warning: {text}", file=sys.stderr, flush=True)
