"""Sizes a newcomer can read, checked by `make lint`: no module of analysis/src/iostudy over 600
lines and no function over 60. (Branches per function: ruff's C901 at 12, ruff.toml.) Standard
library only."""

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "analysis" / "src" / "iostudy"
MODULE_LINES, FUNCTION_LINES = 600, 60


def problems() -> list[str]:
    """Every module and function of the package over its limit, as a line to print."""
    out = []
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        if (n := text.count("\n")) > MODULE_LINES:
            out.append(f"module {rel}: {n} lines (limit {MODULE_LINES})")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > FUNCTION_LINES:
                    out.append(f"function {rel}:{node.name}: {n} lines (limit {FUNCTION_LINES})")
    return out


def main() -> int:
    bad = problems()
    for line in bad:
        print(f"check_sizes: {line}", file=sys.stderr)
    print(
        f"check_sizes: {len(bad)} over the limits ({MODULE_LINES} lines a module, "
        f"{FUNCTION_LINES} a function)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
