"""Commands live in one layer, checked by `make lint`: outside analysis/src/iostudy/cli no module
parses a command line (argparse), prints, writes to stdout or stderr, ends the process
(sys.exit) or words an error for the terminal ("iostudy: error"). The library returns values or
raises the typed errors of iostudy.core.errors and reports progress through the
iostudy.core.progress.Progress the command hands it. Standard library only."""

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "analysis" / "src" / "iostudy"
COMMAND_LAYER = "cli"
ERROR_WORDING = "iostudy: error"
# sys.<name> that reach the terminal or end the process
TERMINAL = {"stdout", "stderr", "exit"}


def _imports_argparse(node: ast.AST) -> bool:
    if isinstance(node, ast.Import):
        return any(a.name == "argparse" for a in node.names)
    return isinstance(node, ast.ImportFrom) and node.module == "argparse"


def _reaches_terminal(node: ast.AST) -> str | None:
    """What the node does that only a command may do, or None."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
        return "print()"
    if (
        isinstance(node, ast.Attribute)
        and node.attr in TERMINAL
        and isinstance(node.value, ast.Name)
        and node.value.id == "sys"
    ):
        return f"sys.{node.attr}"
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return f'"{ERROR_WORDING}"' if ERROR_WORDING in node.value else None
    return "argparse" if _imports_argparse(node) else None


def _flushed(tree: ast.Module) -> set[int]:
    """The ``sys.stdout``/``sys.stderr`` nodes only flushed or asked their descriptor: a reader
    of fd 2 (a library's C code writes there) flushes it and says nothing itself."""
    return {
        id(node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute) and node.attr in ("flush", "fileno")
    }


def problems(package: Path = PACKAGE) -> list[str]:
    """Each place outside the command layer that does a command's work, as a line to print."""
    out = []
    for path in sorted(package.rglob("*.py")):
        rel = path.relative_to(package)
        if rel.parts[0] == COMMAND_LAYER:
            continue
        tree = ast.parse(path.read_text())
        quiet = _flushed(tree)
        for node in ast.walk(tree):
            if id(node) not in quiet and (what := _reaches_terminal(node)):
                out.append(f"{rel.as_posix()}:{node.lineno}: {what} outside iostudy/cli")
    return out


def main(argv: list[str]) -> int:
    """Checks the package (or the folder ``argv`` names: a test plants a fault in a copy)."""
    bad = problems(Path(argv[0]) if argv else PACKAGE)
    for line in bad:
        print(f"check_commands: {line}", file=sys.stderr)
    print(f"check_commands: {len(bad)} places where the library does a command's work")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
