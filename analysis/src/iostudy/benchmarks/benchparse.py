"""Parsers for the results IOR and mdtest print: pure functions from text to dicts.

The ReFrame checks of iostudy run IOR and mdtest (IOR 4.0.0) and judge what they print. The
functions here turn that output into plain dicts; they do no I/O (the caller reads the file) and
raise :class:`ValueError` naming what is missing when the text is not what they expect.

- :func:`ior_json`: IOR's ``-O summaryFormat=JSON`` output (stdout, or the ``-O summaryFile``).
- :func:`ior_text`: IOR's default text output (the ``Results:`` table of every test and the
  ``Summary of all tests`` table).
- :func:`mdtest_text`: mdtest's text output (``SUMMARY rate`` / ``SUMMARY time`` tables, the
  optional per-rank columns of ``--showRankStatistics``, the per-process values of
  ``--print-all-procs`` and rank 0's per-iteration lines of ``-v``).

Both IOR parsers return the same structure, so a check may use either format::

    {"format": "json" | "text", "version": "4.0.0", "command_line": str,
     "began": str, "finished": str | None, "machine": str,
     "tests":   [one dict per test (TestID): its parameters, see TEST_KEYS],
     "results": [one dict per test, iteration and operation (write/read), see RESULT_KEYS],
     "removes": [{"test_id", "iteration", "total_s"}: file removal times, only with -v],
     "summary": [one dict per test and operation: the summary statistics, see SUMMARY_KEYS],
     "warnings": [IOR's WARNING messages, in order]}

Every iteration of every test is kept in ``results``; ``iteration`` is IOR's 0-based ``iter``
(the JSON has no such field: it is the position of the result among the test's results of the
same operation). Bandwidths are MiB/s (2^20 bytes), times are seconds, sizes are bytes.
``aggregate_bytes`` is block size x segments x tasks, the bytes one iteration moves (IOR's
expected aggregate file size; only stonewalling makes IOR move fewer). Values IOR prints as
``-`` or ``NA`` become None.

IOR 4.0.0 writes *either* the text or the JSON (``-O summaryFile`` redirects all of the result
output to that file and stdout only says ``Writing output to FILE``), so one run never gives
both. With ``-v`` its JSON is invalid (hpc/ior issue #503, fixed after 4.0.0): run JSON
without ``-v``.
"""

from __future__ import annotations

import json
import re
import shlex

KIB = 2**10

# The keys of every dict in "results" (both IOR formats).
RESULT_KEYS = (
    "test_id",
    "operation",
    "api",
    "iteration",
    "bw_mib_s",
    "iops",
    "latency_s",
    "open_s",
    "wrrd_s",
    "close_s",
    "total_s",
    "block_size",
    "transfer_size",
    "segments",
    "tasks",
    "file_per_proc",
    "aggregate_bytes",
)
# The keys of every dict in "summary" (both IOR formats).
SUMMARY_KEYS = (
    "test_id",
    "operation",
    "api",
    "bw_max_mib_s",
    "bw_min_mib_s",
    "bw_mean_mib_s",
    "bw_std_mib_s",
    "ops_max",
    "ops_min",
    "ops_mean",
    "ops_std",
    "mean_time_s",
    "stonewall_s",
    "stonewall_bw_mib_s",
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
    "aggregate_mib",
    "reference_number",
)
# The keys of every dict in "tests" (both IOR formats); "options" holds IOR's own Options block.
TEST_KEYS = (
    "test_id",
    "api",
    "api_version",
    "test_file",
    "path",
    "start_time",
    "access",
    "file_per_proc",
    "collective",
    "segments",
    "block_size",
    "transfer_size",
    "tasks",
    "nodes",
    "tasks_per_node",
    "repetitions",
    "aggregate_bytes",
    "options",
)

# The operations mdtest reports, as it names them (longest first, for prefix matching).
MDTEST_OPERATIONS = (
    "Directory creation",
    "Directory removal",
    "Directory rename",
    "Directory stat",
    "Directory read",
    "File creation",
    "File removal",
    "File stat",
    "File read",
    "Tree creation",
    "Tree removal",
)
MDTEST_UNITS = {"rate": "ops/sec", "time": "sec"}


# --------------------------------------------------------------------------------------- IOR


def _aggregate(test: dict) -> int:
    return test["block_size"] * test["segments"] * test["tasks"]


def _result(test: dict, operation: str, iteration: int, values: dict) -> dict:
    """A results row: the iteration's measurements plus the test's sizes."""
    row = {"test_id": test["test_id"], "operation": operation, "api": test["api"]}
    row["iteration"] = iteration
    row.update(values)
    for key in ("block_size", "transfer_size", "segments", "tasks", "file_per_proc"):
        row[key] = test[key]
    row["aggregate_bytes"] = test["aggregate_bytes"]
    return row


def _json_error_hint(text: str) -> str:
    if text.lstrip().startswith("IOR-"):
        return " (this is IOR's text output: use ior_text)"
    if '"access": "remove"' in text or '"max": {' in text:
        return (
            " (IOR 4.0.0 writes invalid JSON when run with -v, hpc/ior issue #503: run the JSON"
            " summary without -v)"
        )
    return ""


def _require(mapping: dict, key: str, where: str):
    if not isinstance(mapping, dict) or key not in mapping:
        raise ValueError(f"IOR JSON: {where} has no {key!r} key")
    return mapping[key]


def _as_float(value, where: str) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise ValueError(f"IOR JSON: {where} is not a number: {value!r}") from None


def _as_int(value, where: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ValueError(f"IOR JSON: {where} is not an integer: {value!r}") from None


# JSON key of a Results entry -> results key.
_JSON_RESULT = {
    "bwMiB": "bw_mib_s",
    "iops": "iops",
    "latency": "latency_s",
    "openTime": "open_s",
    "wrRdTime": "wrrd_s",
    "closeTime": "close_s",
    "totalTime": "total_s",
}
# JSON key of a summary entry -> summary key (ints, then floats).
_JSON_SUMMARY_INT = {
    "TestID": "test_id",
    "numTasks": "tasks",
    "tasksPerNode": "tasks_per_node",
    "repetitions": "repetitions",
    "filePerProc": "file_per_proc",
    "reorderTasks": "reorder_tasks",
    "taskPerNodeOffset": "task_per_node_offset",
    "reorderTasksRandom": "reorder_tasks_random",
    "reorderTasksRandomSeed": "reorder_tasks_random_seed",
    "segmentCount": "segments",
    "blockSize": "block_size",
    "transferSize": "transfer_size",
    "ReferenceNumber": "reference_number",
}
_JSON_SUMMARY_FLOAT = {
    "bwMaxMIB": "bw_max_mib_s",
    "bwMinMIB": "bw_min_mib_s",
    "bwMeanMIB": "bw_mean_mib_s",
    "bwStdMIB": "bw_std_mib_s",
    "OPsMax": "ops_max",
    "OPsMin": "ops_min",
    "OPsMean": "ops_mean",
    "OPsSD": "ops_std",
    "MeanTime": "mean_time_s",
    "xsizeMiB": "aggregate_mib",
}
# Present only when stonewalling wear-out is on.
_JSON_SUMMARY_OPTIONAL = {
    "StoneWallTime": "stonewall_s",
    "StoneWallbwMeanMIB": "stonewall_bw_mib_s",
}


def _json_test(raw: dict, index: int) -> dict:
    where = f"test {index}"
    params = _require(raw, "Parameters", where)
    options = _require(raw, "Options", where)
    test = {"test_id": _as_int(_require(raw, "TestID", where), f"{where} TestID")}
    where = f"test {test['test_id']}"
    test["api"] = str(_require(params, "api", f"{where} Parameters"))
    test["api_version"] = str(options.get("apiVersion", ""))
    test["test_file"] = str(_require(params, "testFileName", f"{where} Parameters"))
    test["path"] = raw.get("Path")
    test["start_time"] = raw.get("StartTime")
    test["access"] = options.get("access")
    test["file_per_proc"] = bool(_as_int(_require(params, "filePerProc", where), "filePerProc"))
    test["collective"] = bool(_as_int(params.get("collective", 0), "collective"))
    for key, name in (
        ("segments", "segmentCount"),
        ("block_size", "blockSize"),
        ("transfer_size", "transferSize"),
        ("repetitions", "repetitions"),
    ):
        test[key] = _as_int(_require(params, name, f"{where} Parameters"), f"{where} {name}")
    test["tasks"] = _as_int(_require(options, "tasks", f"{where} Options"), f"{where} tasks")
    test["nodes"] = _as_int(options.get("nodes", params.get("nodes")), f"{where} nodes")
    test["tasks_per_node"] = _as_int(
        options.get("clients per node", params.get("tasksPerNode")), f"{where} clients per node"
    )
    test["aggregate_bytes"] = _aggregate(test)
    test["options"] = dict(options)
    return test


# IOR's warnings (its WARN macro) go to its result stream: on stdout they land inside the JSON
# document, a line each (e.g. "WARNING: File write only not implemented in NCMPI").
IOR_WARNING = re.compile(r"^(?:ior )?WARNING: (.*)$", re.MULTILINE)


def _ior_warnings(text: str) -> list[str]:
    """IOR's warning messages in its output, in order, without the "WARNING:" prefix."""
    return [message.strip() for message in IOR_WARNING.findall(text)]


def ior_json(text: str) -> dict:  # noqa: C901
    """Parse IOR's JSON output (``-O summaryFormat=JSON``) into the structure of this module.

    ``text`` is the JSON document: IOR's stdout, or the file named by ``-O summaryFile``. IOR's
    warning lines inside it are taken out and kept, in order, under "warnings".
    """
    warnings = _ior_warnings(text)
    text = IOR_WARNING.sub("", text)
    try:
        doc = json.loads(text)
    except json.JSONDecodeError as err:
        raise ValueError(
            f"IOR JSON: not valid JSON (line {err.lineno} column {err.colno}: {err.msg})"
            + _json_error_hint(text)
        ) from None
    if not isinstance(doc, dict):
        raise ValueError(f"IOR JSON: the document is a {type(doc).__name__}, not an object")
    raw_tests = _require(doc, "tests", "the document")
    if not isinstance(raw_tests, list) or not raw_tests:
        raise ValueError("IOR JSON: 'tests' is not a non-empty list")
    raw_summary = _require(doc, "summary", "the document")
    if not isinstance(raw_summary, list):
        raise ValueError("IOR JSON: 'summary' is not a list")

    tests, results, removes = [], [], []
    for index, raw in enumerate(raw_tests):
        test = _json_test(raw, index)
        tests.append(test)
        where = f"test {test['test_id']}"
        entries = _require(raw, "Results", where)
        if not isinstance(entries, list):
            raise ValueError(f"IOR JSON: {where} 'Results' is not a list")
        seen: dict[str, int] = {}
        for k, entry in enumerate(entries):
            at = f"{where} result {k}"
            operation = _require(entry, "access", at)
            iteration = seen.get(operation, 0)
            seen[operation] = iteration + 1
            if operation == "remove":
                total = _as_float(_require(entry, "totalTime", at), f"{at} totalTime")
                removes.append(
                    {"test_id": test["test_id"], "iteration": iteration, "total_s": total}
                )
                continue
            if operation not in ("write", "read"):
                raise ValueError(f"IOR JSON: {at} has unknown access {operation!r}")
            values = {
                out: _as_float(_require(entry, key, at), f"{at} {key}")
                for key, out in _JSON_RESULT.items()
            }
            results.append(_result(test, operation, iteration, values))

    summary = []
    for k, entry in enumerate(raw_summary):
        at = f"summary entry {k}"
        row = {"test_id": None, "operation": _require(entry, "operation", at)}
        row["api"] = str(_require(entry, "API", at))
        for key, out in _JSON_SUMMARY_INT.items():
            row[out] = _as_int(_require(entry, key, at), f"{at} {key}")
        for key, out in _JSON_SUMMARY_FLOAT.items():
            row[out] = _as_float(_require(entry, key, at), f"{at} {key}")
        for key, out in _JSON_SUMMARY_OPTIONAL.items():
            row[out] = _as_float(entry[key], f"{at} {key}") if key in entry else None
        row["file_per_proc"] = bool(row["file_per_proc"])
        summary.append({key: row[key] for key in SUMMARY_KEYS})

    return {
        "format": "json",
        "version": doc.get("Version"),
        "command_line": _require(doc, "Command line", "the document"),
        "began": doc.get("Began"),
        "finished": doc.get("Finished"),
        "machine": doc.get("Machine"),
        "tests": tests,
        "results": results,
        "removes": removes,
        "summary": summary,
        "warnings": warnings,
    }


# IOR's "key: value" lines: the key is printed with "%-20s: ".
_KEYVAL = re.compile(r"^(?P<key>[^:\n]{20,}?):(?: (?P<value>.*))?$")
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
    test["aggregate_bytes"] = _aggregate(test)
    test["options"] = dict(options)
    return {key: test[key] for key in TEST_KEYS}


def ior_text(text: str) -> dict:  # noqa: C901
    """Parse IOR's default text output (its stdout) into the structure of this module.

    Lines IOR mixes into the output (WARNINGs, ``-v`` progress lines) are skipped.
    """
    lines = text.splitlines()
    header: dict[str, str] = {}
    version = None
    # One entry per "TestID" block: its header fields, Options and Results rows.
    blocks: list[dict] = []
    summary_at = None
    section = None
    for number, line in enumerate(lines, 1):
        if version is None and (match := _VERSION.match(line)):
            version = match["version"]
            continue
        if line.startswith(_SUMMARY_HEADER):
            summary_at = number - 1
            break
        if line.startswith("Options:"):
            section = "options"
            continue
        if line.startswith("Results:"):
            section = "results"
            if blocks:
                blocks[-1]["has_results"] = True
            continue
        if section == "results" and blocks and (match := _ROW.match(line)):
            blocks[-1]["rows"].append((number, match["op"], match["rest"].split()))
            continue
        if match := _KEYVAL.match(line):
            key, value = match["key"].strip(), (match["value"] or "").strip()
            if section == "results" and key != "TestID":
                continue  # e.g. "Commencing write performance test: <date>" with -v
            if key == "TestID":
                blocks.append(
                    {"id": _text_int(value, f"line {number} TestID"), "info": {}, "options": {}}
                )
                blocks[-1].update(rows=[], has_results=False)
                section = "info"
            elif section == "options" and blocks:
                blocks[-1]["options"][key] = value
            elif blocks:
                blocks[-1]["info"][key] = value
            else:
                header[key] = value

    written = re.search(r"^Writing output to (.+)$", text, re.MULTILINE)
    hint = (
        f"; the output says 'Writing output to {written[1]}': IOR wrote its results to that"
        " -O summaryFile instead of stdout"
        if written
        else ""
    )
    if version is None:
        raise ValueError("IOR text: no 'IOR-<version>: MPI Coordinated Test' header line" + hint)
    if not any(block["has_results"] for block in blocks):
        raise ValueError("IOR text: no 'Results:' table" + hint)
    if summary_at is None:
        raise ValueError("IOR text: no 'Summary of all tests' table (the run did not finish?)")
    summary = _text_summary(lines, summary_at)
    finished = None
    for line in lines[summary_at:]:
        if (match := _KEYVAL.match(line)) and match["key"].strip() == "Finished":
            finished = (match["value"] or "").strip()

    tests, results, removes = [], [], []
    for block in blocks:
        test = _text_test(block["id"], block["info"], block["options"], summary)
        tests.append(test)
        for number, operation, fields in block["rows"]:
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
                    {
                        "test_id": test["test_id"],
                        "iteration": iteration,
                        "total_s": values["total_s"],
                    }
                )
                continue
            del values["block_kib"], values["xfer_kib"]  # exact sizes come from the summary
            results.append(_result(test, operation, iteration, values))

    return {
        "format": "text",
        "version": version,
        "command_line": header.get("Command line"),
        "began": header.get("Began"),
        "finished": finished,
        "machine": header.get("Machine"),
        "tests": tests,
        "results": results,
        "removes": removes,
        "summary": summary,
        "warnings": _ior_warnings(text),
    }


# ------------------------------------------------------------------------------------ mdtest

_MD_VERSION = re.compile(
    r"^mdtest-(?P<version>\S+) was launched with (?P<tasks>\d+) total task\(s\) on"
    r" (?P<nodes>\d+) node\(s\)"
)
_MD_RUN = re.compile(r"^(?P<tasks>\d+) tasks, (?P<items>\d+) files(?:/directories)?\b")
_MD_SUMMARY = re.compile(r"^SUMMARY (?P<kind>rate|time): \(of (?P<iterations>\d+) iterations?\)")
_MD_PER_PROCESS = re.compile(r"^Per process result \((?P<kind>rate|time)\):")
_MD_ITERATION = re.compile(r"^iteration: (?P<iteration>\d+)")
_MD_VERBOSE_ITERATION = re.compile(r"^V-1: .*\* iteration (?P<iteration>\d+) \*")
_MD_VERBOSE_OP = re.compile(
    r"^V-1: .*?(?P<op>" + "|".join(MDTEST_OPERATIONS) + r")\s*:\s+(?P<seconds>[-+.\deE]+) sec,"
    r"\s+(?P<rate>[-+.\deEinf]+) ops/sec"
)
_MD_STARTED = re.compile(r"^-- started at (?P<when>.+?) --")
_MD_FINISHED = re.compile(r"^-- finished at (?P<when>.+?) --")


def _md_float(token: str, where: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"mdtest: {where}: {token!r} is not a number") from None


def _md_operation(text: str) -> tuple[str, str] | None:
    """(operation, rest of the line) when text starts with an mdtest operation name."""
    for name in MDTEST_OPERATIONS:
        if text.startswith(name):
            return name, text[len(name) :]
    return None


def _md_table(lines: list[str], start: int, kind: str) -> dict:
    """The rows of a SUMMARY table whose title is lines[start] (header and dashes follow)."""
    per_rank = "per Rank" in (lines[start + 1] if start + 1 < len(lines) else "")
    table = {}
    for number, line in enumerate(lines[start + 3 :], start + 4):
        found = _md_operation(line.strip())
        if found is None:
            break
        name, rest = found
        values = [_md_float(tok, f"line {number} {name}") for tok in rest.split()]
        expected = 7 if per_rank else 4
        if len(values) != expected:
            raise ValueError(
                f"mdtest: line {number}: {name} has {len(values)} numbers, expected {expected}"
            )
        row = {"unit": MDTEST_UNITS[kind]}
        if per_rank:
            row.update(rank_max=values[0], rank_min=values[1], rank_mean=values[2])
            values = values[3:]
        row.update(max=values[0], min=values[1], mean=values[2], stddev=values[3])
        table[name] = row
    if not table:
        raise ValueError(f"mdtest: the 'SUMMARY {kind}' table at line {start + 1} has no rows")
    return table


def _md_new_run(tasks: int, items: int) -> dict:
    return {
        "tasks": tasks,
        "items": items,
        "iterations": None,
        "rate": None,
        "time": None,
        "per_process": {},
        "rank0_iterations": [],
    }


def mdtest_text(text: str) -> dict:  # noqa: C901
    """Parse mdtest's text output (its stdout) into a dict.

    Returns::

        {"version": "4.0.0", "command_line": str, "argv": [str], "launched_tasks": int,
         "nodes": int, "path": str | None, "started": str | None, "finished": str | None,
         "warnings": [str],
         "runs": [run, ...],
         # and, copied from runs[0]:
         "tasks", "items", "iterations", "rate", "time", "per_process", "rank0_iterations"}

    mdtest runs once per task count (several with ``-f/-l/-s``); each run is::

        {"tasks": int, "items": int (files/directories of all tasks), "iterations": int,
         "rate": {operation: {"unit": "ops/sec", "max", "min", "mean", "stddev",
                              and with --showRankStatistics "rank_max", "rank_min", "rank_mean"}}
                 or None (with -Z only the time table is printed),
         "time": the same in "sec" or None (printed with -P or -Z),
         "per_process": {"rate"/"time": [{operation: [value of rank 0, rank 1, ...]} per
                         iteration]} (with --print-all-procs, else {}),
         "rank0_iterations": [{operation: {"seconds", "rate"}} per iteration] (with -v, else [])}

    The ``max/min/mean/stddev`` columns are over iterations of the aggregate of all tasks.
    ``rank0_iterations`` is what rank 0 prints with ``-v``: for tree creation/removal (done by
    rank 0 alone) the iteration's rate, for the other operations rank 0's own rate.
    """
    lines = text.splitlines()
    out = {
        "version": None,
        "command_line": None,
        "argv": None,
        "launched_tasks": None,
        "nodes": None,
        "path": None,
        "started": None,
        "finished": None,
        "warnings": [],
    }
    runs: list[dict] = []
    per_process_kind = None
    for number, line in enumerate(lines, 1):
        if match := _MD_VERSION.match(line):
            out["version"] = match["version"]
            out["launched_tasks"] = int(match["tasks"])
            out["nodes"] = int(match["nodes"])
        elif line.startswith("Command line used: "):
            out["command_line"] = line[len("Command line used: ") :].strip()
            try:
                out["argv"] = shlex.split(out["command_line"])
            except ValueError:
                out["argv"] = None
        elif match := _MD_STARTED.match(line):
            out["started"] = match["when"]
        elif match := _MD_FINISHED.match(line):
            out["finished"] = match["when"]
        elif line.startswith("WARNING:"):
            out["warnings"].append(line[len("WARNING:") :].strip())
        elif line.startswith("Path") and (match := _KEYVAL.match(line)):
            out["path"] = (match["value"] or "").strip()
        elif match := _MD_RUN.match(line):
            runs.append(_md_new_run(int(match["tasks"]), int(match["items"])))
            per_process_kind = None
        elif match := _MD_SUMMARY.match(line):
            if not runs:
                raise ValueError(
                    f"mdtest: line {number}: a SUMMARY table before the"
                    " '<N> tasks, <M> files/directories' line"
                )
            runs[-1]["iterations"] = int(match["iterations"])
            runs[-1][match["kind"]] = _md_table(lines, number - 1, match["kind"])
            per_process_kind = None
        elif runs and (match := _MD_PER_PROCESS.match(line)):
            per_process_kind = match["kind"]
            runs[-1]["per_process"][per_process_kind] = []
        elif per_process_kind and (match := _MD_ITERATION.match(line)):
            runs[-1]["per_process"][per_process_kind].append({})
        elif per_process_kind and line.startswith("Test "):
            found = _md_operation(line[len("Test ") :])
            iterations = runs[-1]["per_process"][per_process_kind]
            if found is None or not iterations:
                raise ValueError(f"mdtest: line {number}: unexpected per-process line {line!r}")
            name, rest = found
            iterations[-1][name] = [
                _md_float(tok, f"line {number} {name}") for tok in rest.strip().split(",")
            ]
        elif runs and (match := _MD_VERBOSE_ITERATION.match(line)):
            runs[-1]["rank0_iterations"].append({})
        elif runs and runs[-1]["rank0_iterations"] and (match := _MD_VERBOSE_OP.match(line)):
            runs[-1]["rank0_iterations"][-1][match["op"]] = {
                "seconds": _md_float(match["seconds"], f"line {number} seconds"),
                "rate": _md_float(match["rate"], f"line {number} rate"),
            }

    if out["version"] is None:
        raise ValueError("mdtest: no 'mdtest-<version> was launched with' header line")
    if not runs:
        raise ValueError("mdtest: no '<N> tasks, <M> files/directories' line")
    for run in runs:
        if run["rate"] is None and run["time"] is None:
            raise ValueError(
                f"mdtest: no 'SUMMARY rate' table (nor 'SUMMARY time') for {run['tasks']} tasks"
                " (the run did not finish?)"
            )
    out["runs"] = runs
    for key in ("tasks", "items", "iterations", "rate", "time", "per_process"):
        out[key] = runs[0][key]
    out["rank0_iterations"] = runs[0]["rank0_iterations"]
    return out
