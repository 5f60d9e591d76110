"""JSON that comes from outside (benchmark output lines, iostat-mon's day files, manifests,
ReFrame reports), parsed within limits: json.loads itself has none. Without them a line nested
100000 levels deep raises RecursionError (no ValueError: a reader's ``except`` misses it), a
50 MB line is parsed whole, and ``Infinity``, ``NaN`` or ``1e999`` become floats no store
column may hold.

- :func:`parse_line`: one JSON line (a record of a .jsonl file) of at most :data:`MAX_LINE`
  bytes of UTF-8, nested at most :data:`MAX_DEPTH` levels, every number finite;
- :func:`loads`: a whole document (read within :mod:`iostudy.core.safeio`'s limit), nested at
  most MAX_DEPTH levels; its numbers are judged by whoever takes rows from it;
- :func:`numbered_lines`: a file's lines, numbered, none read whole past the line limit.

Each raises ValueError saying why (the caller names the file and line). The depth is found by
a scan of the brackets outside strings, not by recursion, before json.loads runs.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import BinaryIO

MAX_LINE = 1 << 20  # bytes: a benchmark's record or an iostat interval is well under a KiB
MAX_DEPTH = 32  # levels of arrays and objects: the records hold 3

# A string (possessive: a string that never ends fails once, without backtracking), a bracket,
# or the quote of a string that never ends.
_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*+"|[][{}]|"', re.DOTALL)
_STEP = {"[": 1, "{": 1, "]": -1, "}": -1}


def _check_depth(text: str) -> None:
    """ValueError when text nests arrays and objects deeper than MAX_DEPTH, as json.loads
    would read it: a bracket inside a string does not count, and nothing after a string that
    never ends does (json.loads stops there)."""
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # the common case: no scan
        return
    depth = 0
    for match in _TOKEN.finditer(text):
        if match[0] == '"':
            return
        depth += _STEP.get(match[0], 0)
        if depth > MAX_DEPTH:
            raise ValueError(f"nested deeper than {MAX_DEPTH} levels")


def _not_finite(word: str):
    raise ValueError(f"{word}: not a finite number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):  # 1e999
        _not_finite(text)
    return value


def loads(text: str):
    """A JSON document nested at most MAX_DEPTH levels; ValueError otherwise."""
    _check_depth(text)
    return json.loads(text)


def parse_line(line: bytes | str):
    """The JSON value of one line within the limits (see the module docstring); ValueError
    saying why not: too long, not UTF-8, nested too deep, a number not finite, not JSON."""
    data = line.encode() if isinstance(line, str) else line  # a lone surrogate: ValueError
    if len(data) > MAX_LINE:
        raise ValueError(f"longer than {MAX_LINE} bytes")
    try:
        text = data.decode()
    except UnicodeDecodeError as exc:
        raise ValueError(f"not UTF-8 ({exc.reason} at byte {exc.start})") from None
    _check_depth(text)
    return json.loads(text, parse_constant=_not_finite, parse_float=_finite_float)


def numbered_lines(f: BinaryIO) -> Iterator[tuple[int, bytes]]:
    """(number from 1, line without its end) of each line of a binary file that is not blank,
    a line read with at most MAX_LINE + 1 bytes of it in memory: a longer one is given cut
    there (parse_line refuses it) and the rest of it skipped."""
    number = 0
    while line := f.readline(MAX_LINE + 1):
        number += 1
        if len(line) > MAX_LINE and not line.endswith(b"\n"):
            while (rest := f.readline(MAX_LINE)) and not rest.endswith(b"\n"):
                pass
        if line.strip():
            yield number, line.rstrip(b"\r\n")
