"""Sizes a newcomer can read, checked by `make lint`: no module of analysis/src/iostudy over 600
lines and no function over 60. The modules and functions written before the limit are listed
below with their size then: each may shrink, none may grow, and a new one may not pass the
limit. (Branches per function: ruff's C901 at 12, ruff.toml.) Standard library only."""

import ast
import sys
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "analysis" / "src" / "iostudy"
MODULE_LINES, FUNCTION_LINES = 600, 60

# Left to split (issue 24): module -> lines, module:function -> lines, as they stood.
MODULES_TO_SPLIT = {
}
FUNCTIONS_TO_SPLIT = {
    "metrics/metrics.py:table1_crosscheck": 71,
    "metrics/metrics.py:ior_log_bandwidth": 72,
    "report/apps.py:add_section": 64,
    "report/publish.py:build_manifest": 94,
    "report/report.py:build": 77,
    "report/sections.py:add_scaling": 65,
}


def sizes():
    """(modules {path: lines}, functions {path:name: lines}) of the package."""
    modules, functions = {}, {}
    for path in sorted(PACKAGE.rglob("*.py")):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text()
        modules[rel] = text.count("\n")
        for node in ast.walk(ast.parse(text)):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                functions[f"{rel}:{node.name}"] = node.end_lineno - node.lineno + 1
    return modules, functions


def problems(found: dict, limit: int, listed: dict, what: str) -> list[str]:
    out = []
    for name, n in sorted(found.items()):
        ceiling = listed.get(name, limit)
        if n > ceiling:
            was = f"listed at {ceiling}, " if name in listed else ""
            out.append(f"{what} {name}: {n} lines ({was}limit {limit})")
    return out


def main() -> int:
    modules, functions = sizes()
    bad = problems(modules, MODULE_LINES, MODULES_TO_SPLIT, "module")
    bad += problems(functions, FUNCTION_LINES, FUNCTIONS_TO_SPLIT, "function")
    for line in bad:
        print(f"check_sizes: {line}", file=sys.stderr)
    left = sum(modules.get(m, 0) > MODULE_LINES for m in MODULES_TO_SPLIT)
    left_f = sum(functions.get(f, 0) > FUNCTION_LINES for f in FUNCTIONS_TO_SPLIT)
    print(f"check_sizes: {len(bad)} over their limit; still to split: {left} modules over "
          f"{MODULE_LINES} lines, {left_f} functions over {FUNCTION_LINES}")  # fmt: skip
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
