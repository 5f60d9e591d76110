"""IOR's default text output (its stdout) parsed into the structure of
:mod:`iostudy.benchmarks.benchparse`: the ``Results:`` table of every test and the ``Summary of all
tests`` table.

The checks run IOR with ``-O summaryFormat=JSON`` (:func:`iostudy.benchmarks.benchparse.ior_json`);
this parser reads the runs made without it. It is a module of its own because the text is read
line by line, with a state of its own (which test, which section), that the JSON parser has no
use for. Lines IOR mixes into the output (WARNINGs, ``-v`` progress lines) are skipped.
"""

from __future__ import annotations

import re

from iostudy.benchmarks.benchparse import (
    KEY_VALUE,
    SUMMARY_KEYS,
    TEST_KEYS,
    aggregate_bytes,
    ior_warnings,
    result_row,
)

_VERSION = re.compile(r"^IOR-(?P<version>\S+): MPI Coordinated Test of Parallel I/O")
_ROW = re.compile(r"^(?P<op>write|read|remove)\s+(?P<rest>\S.*?)\s*$")
_SUMMARY_HEADER = "Summary of all tests:"
# Column of the text summary table -> summary key (StdDev appears twice: bandwidth, then OPs).
_TEXT_SUMMARY_COLUMNS = {
    "Operation": "operation",
    "Max(MiB)": "bw_max_mib_s",
    "Min(MiB)": "bw_min_mib_s",
    "Mean(MiB)": "bw_mean_mib_s",
    "StdDev": "bw_std_mib_s",
    "Max(OPs)": "ops_max",
    "Min(OPs)": "ops_min",
    "Mean(OPs)": "ops_mean",
    "StdDev#2": "ops_std",
    "Mean(s)": "mean_time_s",
    "Stonewall(s)": "stonewall_s",
    "Stonewall(MiB)": "stonewall_bw_mib_s",
    "Test#": "test_id",
    "#Tasks": "tasks",
    "tPN": "tasks_per_node",
    "reps": "repetitions",
    "fPP": "file_per_proc",
    "reord": "reorder_tasks",
    "reordoff": "task_per_node_offset",
    "reordrand": "reorder_tasks_random",
    "seed": "reorder_tasks_random_seed",
    "segcnt": "segments",
    "blksiz": "block_size",
    "xsize": "transfer_size",
    "aggs(MiB)": "aggregate_mib",
    "API": "api",
    "RefNum": "reference_number",
}
_TEXT_SUMMARY_INTS = {
    "test_id",
    "tasks",
    "tasks_per_node",
    "repetitions",
    "file_per_proc",
    "reorder_tasks",
    "task_per_node_offset",
    "reorder_tasks_random",
    "reorder_tasks_random_seed",
    "segments",
    "block_size",
    "transfer_size",
    "reference_number",
}
# The fields of a Results row after the operation, in IOR's order.
_TEXT_ROW_FIELDS = (
    "bw_mib_s",
    "iops",
    "latency_s",
    "block_kib",
    "xfer_kib",
    "open_s",
    "wrrd_s",
    "close_s",
    "total_s",
    "iteration",
)


def _text_number(token: str, where: str) -> float | None:
    if token in ("-", "NA"):
        return None
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"IOR text: {where}: {token!r} is not a number") from None


def _text_int(token: str, where: str) -> int:
    try:
        return int(token)
    except ValueError:
        raise ValueError(f"IOR text: {where}: {token!r} is not an integer") from None


def _text_summary(lines: list[str], start: int) -> list[dict]:
    """The rows of the 'Summary of all tests' table whose title is lines[start]."""
    if start + 1 >= len(lines):
        raise ValueError("IOR text: the 'Summary of all tests' table has no header line")
    header = []
    for name in lines[start + 1].split():
        header.append(f"{name}#2" if name in header else name)
    missing = [name for name in _TEXT_SUMMARY_COLUMNS if name not in header]
    if missing:
        raise ValueError(f"IOR text: the 'Summary of all tests' header lacks the columns {missing}")
    rows = []
    for number, line in enumerate(lines[start + 2 :], start + 3):
        tokens = line.split()
        if not tokens or tokens[0] not in ("write", "read"):
            break
        where = f"summary line {number}"
        if len(tokens) != len(header):
            raise ValueError(
                f"IOR text: {where} has {len(tokens)} fields, the header {len(header)}"
            )
        raw = dict(zip(header, tokens, strict=True))
        row = {}
        for name, key in _TEXT_SUMMARY_COLUMNS.items():
            if key in ("operation", "api"):
                row[key] = raw[name]
            elif key in _TEXT_SUMMARY_INTS:
                row[key] = _text_int(raw[name], f"{where} {name}")
            else:
                row[key] = _text_number(raw[name], f"{where} {name}")
        row["file_per_proc"] = bool(row["file_per_proc"])
        rows.append({key: row[key] for key in SUMMARY_KEYS})
    if not rows:
        raise ValueError("IOR text: the 'Summary of all tests' table has no rows")
    return rows


def _text_test(test_id: int, info: dict, options: dict, summary: list[dict]) -> dict:
    """A test's parameters from its header and Options block, sizes from the summary table."""
    where = f"test {test_id}"
    rows = [row for row in summary if row["test_id"] == test_id]
    if not rows:
        raise ValueError(f"IOR text: {where} has no row in the 'Summary of all tests' table")
    first = rows[0]
    for key in ("api", "tasks"):
        if key not in options:
            raise ValueError(f"IOR text: {where} has no {key!r} in its Options")
    test = {
        "test_id": test_id,
        "api": options["api"],
        "api_version": options.get("apiVersion", ""),
        "test_file": options.get("test filename"),
        "path": info.get("Path"),
        "start_time": info.get("StartTime"),
        "access": options.get("access"),
        "file_per_proc": first["file_per_proc"],
        "collective": options.get("type") == "collective",
        "segments": first["segments"],
        "block_size": first["block_size"],
        "transfer_size": first["transfer_size"],
        "tasks": _text_int(options["tasks"], f"{where} tasks"),
        "nodes": _text_int(options.get("nodes", "0"), f"{where} nodes"),
        "tasks_per_node": _text_int(options.get("clients per node", "0"), f"{where} clients"),
        "repetitions": first["repetitions"],
    }
    test["aggregate_bytes"] = aggregate_bytes(test)
    test["options"] = dict(options)
    return {key: test[key] for key in TEST_KEYS}


class _Scan:
    """What a pass over the lines finds before the 'Summary of all tests' table: the header's
    key: value lines, IOR's version, one block per TestID (its header fields, Options and
    Results rows) and the line where the summary table starts."""

    def __init__(self):
        self.header: dict[str, str] = {}
        self.version = None
        self.blocks: list[dict] = []
        self.summary_at = None
        self.section = None

    def read(self, lines: list[str]) -> _Scan:
        for number, line in enumerate(lines, 1):
            if self.version is None and (match := _VERSION.match(line)):
                self.version = match["version"]
            elif line.startswith(_SUMMARY_HEADER):
                self.summary_at = number - 1
                break
            elif not self._section_title(line):
                self._content(number, line)
        return self

    def _section_title(self, line: str) -> bool:
        """Whether the line starts a test's Options or Results (then taken)."""
        if line.startswith("Options:"):
            self.section = "options"
        elif line.startswith("Results:"):
            self.section = "results"
            if self.blocks:
                self.blocks[-1]["has_results"] = True
        else:
            return False
        return True

    def _content(self, number: int, line: str) -> None:
        if self.section == "results" and self.blocks and (match := _ROW.match(line)):
            self.blocks[-1]["rows"].append((number, match["op"], match["rest"].split()))
        elif match := KEY_VALUE.match(line):
            self._key_value(number, match["key"].strip(), (match["value"] or "").strip())

    def _key_value(self, number: int, key: str, value: str) -> None:
        if self.section == "results" and key != "TestID":
            return  # e.g. "Commencing write performance test: <date>" with -v
        if key == "TestID":
            test_id = _text_int(value, f"line {number} TestID")
            self.blocks.append(
                {"id": test_id, "info": {}, "options": {}, "rows": [], "has_results": False}
            )
            self.section = "info"
        elif self.section == "options" and self.blocks:
            self.blocks[-1]["options"][key] = value
        elif self.blocks:
            self.blocks[-1]["info"][key] = value
        else:
            self.header[key] = value


def _check_found(text: str, scan: _Scan) -> None:
    """ValueError when the output lacks the version line, a Results table or the summary."""
    written = re.search(r"^Writing output to (.+)$", text, re.MULTILINE)
    hint = (
        f"; the output says 'Writing output to {written[1]}': IOR wrote its results to that"
        " -O summaryFile instead of stdout"
        if written
        else ""
    )
    if scan.version is None:
        raise ValueError("IOR text: no 'IOR-<version>: MPI Coordinated Test' header line" + hint)
    if not any(block["has_results"] for block in scan.blocks):
        raise ValueError("IOR text: no 'Results:' table" + hint)
    if scan.summary_at is None:
        raise ValueError("IOR text: no 'Summary of all tests' table (the run did not finish?)")


def _finished(lines: list[str]) -> str | None:
    """The last 'Finished' time of the lines (from the summary table on)."""
    finished = None
    for line in lines:
        if (match := KEY_VALUE.match(line)) and match["key"].strip() == "Finished":
            finished = (match["value"] or "").strip()
    return finished


def _text_rows(rows: list, test: dict, results: list, removes: list) -> None:
    """A test's Results rows appended to results (write, read) and removes (remove)."""
    for number, operation, fields in rows:
        where = f"line {number}"
        if len(fields) != len(_TEXT_ROW_FIELDS):
            raise ValueError(
                f"IOR text: {where}: a {operation} row has {len(fields)} fields after the"
                f" operation, expected {len(_TEXT_ROW_FIELDS)}"
            )
        raw = dict(zip(_TEXT_ROW_FIELDS, fields, strict=True))
        iteration = _text_int(raw.pop("iteration"), f"{where} iter")
        values = {key: _text_number(value, f"{where} {key}") for key, value in raw.items()}
        if operation == "remove":
            removes.append(
                {"test_id": test["test_id"], "iteration": iteration, "total_s": values["total_s"]}
            )
            continue
        del values["block_kib"], values["xfer_kib"]  # exact sizes come from the summary
        results.append(result_row(test, operation, iteration, values))


def ior_text(text: str) -> dict:
    """Parse IOR's default text output (its stdout) into the structure of
    :mod:`iostudy.benchmarks.benchparse`.

    Lines IOR mixes into the output (WARNINGs, ``-v`` progress lines) are skipped.
    """
    lines = text.splitlines()
    scan = _Scan().read(lines)
    _check_found(text, scan)
    summary = _text_summary(lines, scan.summary_at)
    tests, results, removes = [], [], []
    for block in scan.blocks:
        test = _text_test(block["id"], block["info"], block["options"], summary)
        tests.append(test)
        _text_rows(block["rows"], test, results, removes)
    return {
        "format": "text",
        "version": scan.version,
        "command_line": scan.header.get("Command line"),
        "began": scan.header.get("Began"),
        "finished": _finished(lines[scan.summary_at :]),
        "machine": scan.header.get("Machine"),
        "tests": tests,
        "results": results,
        "removes": removes,
        "summary": summary,
        "warnings": ior_warnings(text),
    }
