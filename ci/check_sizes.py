"""Sizes a newcomer can read, checked by `make lint` on the code as the formatter writes it: no
module of analysis/src/iostudy over 600 lines and no function over 60 (branches per function:
ruff's C901 at 12, ruff.toml). The formatter may be turned off (its skip comment) only on a data
table, at most 25 times: a skip elsewhere would let packed code pass these limits. Standard
library only."""

import ast
import io
import sys
import tokenize
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "analysis" / "src" / "iostudy"
MODULE_LINES, FUNCTION_LINES, FORMATTER_SKIPS = 600, 60, 25
# the comment by which the formatter leaves a line as written (split: this file has none)
SKIP = "# fmt: " + "skip"
# what a data table is: a literal, assigned or given as a default
LITERALS = (ast.List, ast.Tuple, ast.Dict, ast.Set, ast.Constant)


def size_problems(rel: str, text: str, tree: ast.Module) -> list[str]:
    """The module's size and each function's, where over its limit."""
    out = []
    if (n := text.count("\n")) > MODULE_LINES:
        out.append(f"module {rel}: {n} lines (limit {MODULE_LINES})")
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            n = node.end_lineno - node.lineno + 1
            if n > FUNCTION_LINES:
                out.append(f"function {rel}:{node.name}: {n} lines (limit {FUNCTION_LINES})")
    return out


def skip_lines(text: str) -> list[int]:
    """The lines that end in the formatter's skip comment (comments only, not strings)."""
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    return [t.start[0] for t in tokens if t.type == tokenize.COMMENT and t.string == SKIP]


def is_data_table(tree: ast.Module, line: int) -> bool:
    """Whether the statement that ends on ``line`` assigns a literal."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.Assign, ast.AnnAssign)) and node.end_lineno == line:
            return isinstance(node.value, LITERALS)
    return False


def skip_problems(found: list[tuple[str, int, bool]]) -> list[str]:
    """Each skip on something other than a data table, and the count if over its limit."""
    out = [f"{SKIP} on code, not a data table: {rel}:{n}" for rel, n, data in found if not data]
    if len(found) > FORMATTER_SKIPS:
        out.append(f"{len(found)} '{SKIP}' in the package (limit {FORMATTER_SKIPS})")
    return out


def problems(package: Path = PACKAGE) -> list[str]:
    """Every module and function of the package over its limit, and every skip of the formatter
    that is not allowed, as a line to print."""
    out, skips = [], []
    for path in sorted(package.rglob("*.py")):
        rel, text = path.relative_to(package).as_posix(), path.read_text()
        tree = ast.parse(text)
        out += size_problems(rel, text, tree)
        skips += [(rel, n, is_data_table(tree, n)) for n in skip_lines(text)]
    return out + skip_problems(skips)


def main(argv: list[str]) -> int:
    """Checks the package (or the folder ``argv`` names: a test plants a fault in a copy)."""
    bad = problems(Path(argv[0]) if argv else PACKAGE)
    for line in bad:
        print(f"check_sizes: {line}", file=sys.stderr)
    print(
        f"check_sizes: {len(bad)} problems ({MODULE_LINES} lines a module, {FUNCTION_LINES} a "
        f"function, '{SKIP}' on at most {FORMATTER_SKIPS} data tables)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
