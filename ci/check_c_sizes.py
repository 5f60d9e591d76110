"""Sizes a newcomer can read in the C runtime, checked by `make lint`: no file of runtime/src,
runtime/tools, runtime/tests/programs, runtime/tests/unit or runtime/bench over 800 lines and no
function over 80. Standard library only.

The code is clang-format'ed, so a function is found by its layout: its signature starts at
column 0, the signature's last line ends with the body's `{`, and the body ends at the next `}`
at column 0 (a `};` there ends data: a struct or an initializer). A function a macro defines
counts as the macro's lines: every multi-line `#define` is held to the same limit."""

import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The C sources of the runtime, as the Makefile's C_FILES lists them, and the merge tool's.
GLOBS = (
    "runtime/src/*.[ch]",
    "runtime/tools/*.[ch]",
    "runtime/tests/programs/*.[ch]",
    "runtime/tests/unit/*.c",
    "runtime/bench/*.c",
)
FILE_LINES, FUNCTION_LINES = 800, 80
# Column-0 lines that never start a declaration: preprocessor, comments, braces, labels.
NOT_A_DECLARATION = re.compile(r"^($|[#/*}{ \t]|\w+:\s*$)")
FUNCTION_NAME = re.compile(r"(\w+)\)?\s*\(")
ATTRIBUTE = re.compile(r"__attribute__\(\(.*?\)\)")


def sources() -> list[Path]:
    """Every C file the limits apply to, in a stable order."""
    return sorted({p for pattern in GLOBS for p in ROOT.glob(pattern)})


def macro_spans(lines: list[str]) -> list[tuple[str, int]]:
    """(name, lines) of every #define continued over several lines."""
    spans, i = [], 0
    while i < len(lines):
        start = i
        if lines[i].startswith("#define"):
            while lines[i].rstrip().endswith("\\") and i + 1 < len(lines):
                i += 1
            if i > start:
                name = re.match(r"#define\s+(\w+)", lines[start])
                spans.append((name.group(1) if name else "?", i - start + 1))
        i += 1
    return spans


def function_spans(lines: list[str]) -> list[tuple[str, int]]:
    """(name, lines from the signature's first line to the closing brace) of every function."""
    spans, start, i = [], None, 0
    while i < len(lines):
        line = lines[i]
        if start is None and not NOT_A_DECLARATION.match(line):
            start = i
        if start is not None and line.rstrip().endswith("{"):
            end = i + 1
            while end < len(lines) and not lines[end].startswith("}"):
                end += 1
            if end < len(lines) and not lines[end].startswith("};"):
                signature = ATTRIBUTE.sub("", " ".join(lines[start : i + 1]))
                name = FUNCTION_NAME.search(signature)
                spans.append((name.group(1) if name else "?", end - start + 1))
            start, i = None, end
        elif start is not None and line.rstrip().endswith((";", "}")):
            start = None  # a declaration, a prototype or a one-line function
        i += 1
    return spans


def problems() -> list[str]:
    """Every file and function over its limit, as a line to print."""
    out = []
    for path in sources():
        rel = path.relative_to(ROOT).as_posix()
        lines = path.read_text().splitlines()
        if len(lines) > FILE_LINES:
            out.append(f"file {rel}: {len(lines)} lines (limit {FILE_LINES})")
        for kind, spans in (("function", function_spans), ("macro", macro_spans)):
            for name, n in spans(lines):
                if n > FUNCTION_LINES:
                    out.append(f"{kind} {rel}:{name}: {n} lines (limit {FUNCTION_LINES})")
    return out


def main() -> int:
    bad = problems()
    for line in bad:
        print(f"check_c_sizes: {line}", file=sys.stderr)
    print(
        f"check_c_sizes: {len(bad)} over the limits ({FILE_LINES} lines a file, "
        f"{FUNCTION_LINES} a function or macro)"
    )
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
