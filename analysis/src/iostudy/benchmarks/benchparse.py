"""Parsers for the results IOR and mdtest print: pure functions from text to dicts.

The ReFrame checks of iostudy run IOR and mdtest (IOR 4.0.0) and judge what they print. The
functions here turn that output into plain dicts; they do no I/O (the caller reads the file) and
raise :class:`ValueError` naming what is missing when the text is not what they expect.

- :func:`ior_json`: IOR's ``-O summaryFormat=JSON`` output (stdout, or the ``-O summaryFile``).
- :func:`iostudy.benchmarks.iortext.ior_text`: IOR's default text output (the ``Results:``
  table of every test and the ``Summary of all tests`` table), a module of its own.
- :func:`json_line`: the one JSON line iostudy's own benchmarks (ioprobe, netbw) print.
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

from iostudy.core import jsonlimits

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


def aggregate_bytes(test: dict) -> int:
    """The bytes one iteration of a test moves: block size x segments x tasks."""
    return test["block_size"] * test["segments"] * test["tasks"]


def result_row(test: dict, operation: str, iteration: int, values: dict) -> dict:
    """A results row: the iteration's measurements plus the test's sizes."""
    row = {"test_id": test["test_id"], "operation": operation, "api": test["api"]}
    row["iteration"] = iteration
    row.update(values)
    for key in ("block_size", "transfer_size", "segments", "tasks", "file_per_proc"):
        row[key] = test[key]
    row["aggregate_bytes"] = test["aggregate_bytes"]
    return row


# IOR's "key: value" lines (mdtest's too): the key is printed with "%-20s: ".
KEY_VALUE = re.compile(r"^(?P<key>[^:\n]{20,}?):(?: (?P<value>.*))?$")
# IOR's warnings (its WARN macro) go to its result stream: on stdout they land inside the JSON
# document, a line each (e.g. "WARNING: File write only not implemented in NCMPI").
IOR_WARNING = re.compile(r"^(?:ior )?WARNING: (.*)$", re.MULTILINE)


def ior_warnings(text: str) -> list[str]:
    """IOR's warning messages in its output, in order, without the "WARNING:" prefix."""
    return [message.strip() for message in IOR_WARNING.findall(text)]


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
    test["aggregate_bytes"] = aggregate_bytes(test)
    test["options"] = dict(options)
    return test


def _json_document(text: str) -> dict:
    """The JSON document (IOR's warning lines taken out), checked to hold tests and a summary."""
    try:
        doc = jsonlimits.loads(text)  # nested too deep: ValueError, said as it is
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
    return doc


def _json_results(raw: dict, test: dict, results: list, removes: list) -> None:
    """A test's Results entries appended to results (write, read) and removes (remove)."""
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
            removes.append({"test_id": test["test_id"], "iteration": iteration, "total_s": total})
            continue
        if operation not in ("write", "read"):
            raise ValueError(f"IOR JSON: {at} has unknown access {operation!r}")
        values = {
            out: _as_float(_require(entry, key, at), f"{at} {key}")
            for key, out in _JSON_RESULT.items()
        }
        results.append(result_row(test, operation, iteration, values))


def _json_summary(entry: dict, k: int) -> dict:
    """A summary row of the k-th summary entry."""
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
    return {key: row[key] for key in SUMMARY_KEYS}


def ior_json(text: str) -> dict:
    """Parse IOR's JSON output (``-O summaryFormat=JSON``) into the structure of this module.

    ``text`` is the JSON document: IOR's stdout, or the file named by ``-O summaryFile``. IOR's
    warning lines inside it are taken out and kept, in order, under "warnings".
    """
    warnings = ior_warnings(text)
    doc = _json_document(IOR_WARNING.sub("", text))
    tests, results, removes = [], [], []
    for index, raw in enumerate(doc["tests"]):
        test = _json_test(raw, index)
        tests.append(test)
        _json_results(raw, test, results, removes)
    summary = [_json_summary(entry, k) for k, entry in enumerate(doc["summary"])]
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


class _MdScan:
    """What a pass over mdtest's lines finds: the header's fields (out), the runs and, inside a
    run's per-process block, which table ("rate" or "time") its lines belong to."""

    def __init__(self, lines: list[str]):
        self.lines = lines
        self.out = {
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
        self.runs: list[dict] = []
        self.per_process_kind = None

    def header_line(self, line: str) -> bool:
        """Whether the line is one of the header's (then taken into out)."""
        out = self.out
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
        elif line.startswith("Path") and (match := KEY_VALUE.match(line)):
            out["path"] = (match["value"] or "").strip()
        else:
            return False
        return True

    def run_line(self, number: int, line: str) -> None:
        """A line of a run: its first line, a SUMMARY table, the per-process values."""
        runs = self.runs
        if match := _MD_RUN.match(line):
            runs.append(_md_new_run(int(match["tasks"]), int(match["items"])))
            self.per_process_kind = None
        elif match := _MD_SUMMARY.match(line):
            if not runs:
                raise ValueError(
                    f"mdtest: line {number}: a SUMMARY table before the"
                    " '<N> tasks, <M> files/directories' line"
                )
            runs[-1]["iterations"] = int(match["iterations"])
            runs[-1][match["kind"]] = _md_table(self.lines, number - 1, match["kind"])
            self.per_process_kind = None
        elif runs and (match := _MD_PER_PROCESS.match(line)):
            self.per_process_kind = match["kind"]
            runs[-1]["per_process"][self.per_process_kind] = []
        elif not self._per_process_line(number, line):
            self._verbose_line(number, line)

    def _per_process_line(self, number: int, line: str) -> bool:
        """Whether the line is one of --print-all-procs' (then taken)."""
        kind = self.per_process_kind
        if kind and _MD_ITERATION.match(line):
            self.runs[-1]["per_process"][kind].append({})
        elif kind and line.startswith("Test "):
            found = _md_operation(line[len("Test ") :])
            iterations = self.runs[-1]["per_process"][kind]
            if found is None or not iterations:
                raise ValueError(f"mdtest: line {number}: unexpected per-process line {line!r}")
            name, rest = found
            iterations[-1][name] = [
                _md_float(tok, f"line {number} {name}") for tok in rest.strip().split(",")
            ]
        else:
            return False
        return True

    def _verbose_line(self, number: int, line: str) -> None:
        """Rank 0's per-iteration lines of -v."""
        runs = self.runs
        if runs and _MD_VERBOSE_ITERATION.match(line):
            runs[-1]["rank0_iterations"].append({})
        elif runs and runs[-1]["rank0_iterations"] and (match := _MD_VERBOSE_OP.match(line)):
            runs[-1]["rank0_iterations"][-1][match["op"]] = {
                "seconds": _md_float(match["seconds"], f"line {number} seconds"),
                "rate": _md_float(match["rate"], f"line {number} rate"),
            }


def mdtest_text(text: str) -> dict:
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
    lines = text.splitlines()
    scan = _MdScan(lines)
    for number, line in enumerate(lines, 1):
        if not scan.header_line(line):
            scan.run_line(number, line)
    out, runs = scan.out, scan.runs
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


def json_line(text: str, benchmark: str) -> dict:
    """The JSON object line of ``benchmark`` (its "benchmark" key) in a job's output, which
    may hold other lines (the launcher's, the runtime's); ValueError when there is none."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                record = jsonlimits.parse_line(line)
            except ValueError:
                continue
            if isinstance(record, dict) and record.get("benchmark") == benchmark:
                return record
    raise ValueError(f"no {benchmark} JSON line in the output")
