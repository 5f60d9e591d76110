"""How a library layer tells a person what it is doing without printing: it is handed a
``Progress`` by the command layer (``iostudy.cli.output.StderrProgress`` writes to stderr) and
calls it; the default one keeps quiet, so that library calls from tests, the workflow or a
notebook print nothing."""


class Progress:
    """Receives a long operation's progress lines and its warnings; this one drops them."""

    def note(self, text: str) -> None:
        """A step done or started ("ingested 3 runs")."""

    def warn(self, text: str) -> None:
        """Something the user should know that does not stop the operation."""


#: the progress of a caller that wants none
QUIET = Progress()
