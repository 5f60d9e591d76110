"""A run's ReFrame results into rows: the run report's performance values (the perf table) and
the benchmark outputs its test cases left (iomodel.jsonl, ior.jsonl: the iomodel and ior tables).

Apart from the log ingest (:mod:`iostudy.store.ingest_logs`): these are small JSON files read
in this process, with their own ways to be wrong. A line is kept when it is JSON within
:mod:`iostudy.core.jsonlimits`' limits, a record of its benchmark, and its row is within the
store's rule (:func:`iostudy.logs.storerule.row_problems`: each value of its column's type
and bounds, what another site's import checks); any other line is left out and its file
quarantined with each line's number and why. A performance value out of the rule is left out
and the report quarantined the same way. Each file's rows and why it is quarantined are
returned (:func:`run_results`): :mod:`iostudy.store.ingest_run` writes them.
"""

from __future__ import annotations

import json
import math
import os
from pathlib import Path
from typing import NamedTuple

from iostudy.core import jsonlimits, safeio
from iostudy.core.checknames import ADAPTIVE, FIO, IOR, NETBW
from iostudy.core.provenance import sha256_file
from iostudy.core.reframe_names import display_parameters
from iostudy.logs.logrows import int_or_none, timestamp
from iostudy.logs.storerule import row_problems, shown
from iostudy.store.store import TABLES


def _float_or_none(value):
    """value as a float, infinite when too large for one (the rule refuses it); None when it
    is no number."""
    try:
        return float(value)
    except OverflowError:
        return math.inf
    except (TypeError, ValueError):
        return None


def _case_parameters(case: dict, campaign_parameters=None) -> dict:
    """A test case's parameters: those its display name shows (display_parameters; typed
    as ReFrame recorded them in the case when it did), and the values in the case of the
    variables the campaign set for its check (``campaign_parameters``: check -> names), which
    ReFrame does not show in the name. What the case measured is not one of them: it has its
    own column (:func:`_case_measures`)."""
    display = _display_name(case)
    shown = display_parameters(display)
    params = {k: case.get(k, v) if "." not in k else v for k, v in shown.items()}
    for name in (campaign_parameters or {}).get(_case_check(case), ()):
        if name in case and name not in params:
            params[name] = case[name]
    return params


def _case_measures(case: dict) -> str | None:
    """What a test case measured: its ``measures`` label ("storage (O_DIRECT)", "page cache
    possible: ..."; iostudy.benchmarks.measures), None when it does not say."""
    label = case.get("measures")
    return label if isinstance(label, str) and label else None


def campaign_parameters(manifest: dict) -> dict[str, list[str]]:
    """check -> the variables the run's campaign set for it (its parameters and repetition),
    from the manifest's effective campaign."""
    effective = manifest.get("effective_config") or {}
    campaign = effective.get("campaign") if isinstance(effective, dict) else None
    names = {}
    for entry in (campaign or {}).get("checks") or []:
        if isinstance(entry, dict) and entry.get("check"):
            names[entry["check"]] = [*(entry.get("parameters") or {}), "repetition"]
    return names


def _display_name(case: dict):
    """A test case's display name (its name when it has none); "" when it has no text."""
    name = case.get("display_name") or case.get("name")
    return name if isinstance(name, str) else ""


def _case_check(case: dict) -> str:
    return _display_name(case).split(" ")[0] or None


def _report_cases(report: dict) -> list[dict]:
    """The test cases of a report, those that are JSON objects (a report may be anything)."""
    runs = [run for run in _listed(report.get("runs")) if isinstance(run, dict)]
    return [
        case for run in runs for case in _listed(run.get("testcases")) if isinstance(case, dict)
    ]


def _listed(value) -> list:
    return value if isinstance(value, list) else []


def perf_rows(report: dict, run_id: str, campaign_params=None) -> tuple[list[dict], list[str]]:
    """One row per performance value of ReFrame's run report (report.json), and the problems
    of the values left out (their row out of the store's rule).

    ReFrame records each value as ``perfvalues["<system>:<partition>:<variable>"] = [value,
    reference, lower, upper, unit, result]``. campaign_params: see :func:`_case_parameters`.
    """
    rows, problems = [], []
    for case in _report_cases(report):
        params = json.dumps(_case_parameters(case, campaign_params), sort_keys=True)
        values = case.get("perfvalues")
        for key, entry in (values if isinstance(values, dict) else {}).items():
            row = _perf_row(case, params, run_id, key.split(":")[-1], entry)
            if bad := row_problems("perf", row, TABLES["perf"]):
                problems.append(f"{shown(row['test_name'])} {key}: {'; '.join(bad)}")
            else:
                rows.append(row)
    return rows, problems


def _perf_row(case: dict, params: str, run_id: str, variable: str, entry) -> dict:
    """The perf row of one of a test case's performance values."""
    value, ref, lower, upper, unit, result = (_listed(entry) + [None] * 6)[:6]
    return {
        "run_id": run_id,
        "system": case.get("system"),
        "partition": case.get("partition"),
        "environ": case.get("environ"),
        "check": _case_check(case),
        "parameters": params,
        "variable": variable,
        "value": _float_or_none(value),
        "unit": unit,
        "reference": _float_or_none(ref),
        "lower": _float_or_none(lower),
        "upper": _float_or_none(upper),
        "result": result,
        "case_result": case.get("result"),
        "jobid": None if case.get("jobid") is None else str(case.get("jobid")),
        "completed": timestamp(case.get("job_completion_time_unix")),
        "test_name": case.get("display_name") or case.get("name"),
        "num_tasks": int_or_none(case.get("num_tasks")),
        "num_tasks_per_node": int_or_none(case.get("num_tasks_per_node")),
        "measures": _case_measures(case),
    }


def _case_by_outputdir(report: dict) -> dict[str, dict]:
    """Test cases keyed by their output folder relative to ReFrame's output prefix, so that they
    are found again after the run directory moved."""
    prefix = (report.get("session_info") or {}).get("prefix_output") or ""
    cases = {}
    for case in _report_cases(report):
        out = case.get("outputdir")
        if not isinstance(out, str) or not out:
            continue
        rel = os.path.relpath(out, prefix) if prefix and os.path.isabs(out) else out
        cases[Path(rel).as_posix()] = case
    return cases


IOMODEL_FIELDS = (
    "n",
    "p",
    "f",
    "m",
    "io_procs",
    "procs_per_file",
    "files",
    "nodes",
    "bytes",
    "write_seconds",
    "write_mib_s",
    "read_seconds",
    "read_mib_s",
    "model",
)


def _line_rows(lines, table: str, check, to_row) -> tuple[list[dict], list[str]]:
    """The rows of a benchmark's output lines (bytes or text) and the problems of the other
    lines ("line N: why"): a line is kept when it is JSON within jsonlimits' limits, a record
    ``check`` accepts (it raises ValueError saying why not), and its row (``to_row``) is within
    the store's rule for ``table``."""
    rows, problems = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = jsonlimits.parse_line(line)
            check(rec)
            row = to_row(rec)
            if bad := row_problems(table, row, TABLES[table]):
                raise ValueError("; ".join(bad))
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        rows.append(row)
    return rows, problems


def _require(rec: dict, keys) -> None:
    for key in keys:
        if rec.get(key) is None:
            raise ValueError(f"no {key}")


def _iomodel_record(rec) -> None:
    if not isinstance(rec, dict) or rec.get("benchmark") != "iomodel":
        raise ValueError("not an iomodel record")
    _require(rec, ("n", "p", "f", "m", "bytes", "write_seconds", "write_mib_s"))


def iomodel_rows(lines, run_id: str, case: dict | None, system: str | None, campaign_params=None):
    """Rows of one iomodel.jsonl and the problems of the lines that are not benchmark output.
    case: the ReFrame test case that wrote it (system, environ, parameters), when known."""
    case = case or {}
    params = _case_parameters(case, campaign_params)

    def to_row(rec: dict) -> dict:
        return {k: rec.get(k) for k in IOMODEL_FIELDS} | {
            "run_id": run_id,
            "system": case.get("system") or system,
            "repetition": int_or_none(params.get("repetition")),
            "partition": case.get("partition"),
            "environ": case.get("environ"),
            "check": _case_check(case) if case else None,
            "parameters": json.dumps(params, sort_keys=True),
            "measures": _case_measures(case),
        }

    return _line_rows(lines, "iomodel", _iomodel_record, to_row)


# The ior table's columns of one line of ior.jsonl: IOR's result and the job's log tags.
IOR_FIELDS = tuple(
    name for name in TABLES["ior"].names if name not in ("run_id", "source_path", "log_tags")
)


def log_tags_json(tags: dict) -> str:
    """Tags as the jobs table's tags column has them: a JSON object of strings, keys sorted
    (a log's metadata lines are text)."""
    return json.dumps({str(k): str(v) for k, v in tags.items()}, sort_keys=True)


def _ior_record(rec) -> None:
    tags = rec.get("log_tags") if isinstance(rec, dict) else None
    if not isinstance(tags, dict) or tags.get("check") != IOR.name:
        raise ValueError(f"not an {IOR.name} record")
    _require(rec, ("operation", "iteration", "bw_mib_s", "aggregate_bytes"))


def ior_rows(lines, run_id: str, system: str | None):
    """Rows of one ior.jsonl (ior_check: one IOR result per line, with the job's log tags under
    "log_tags") and the problems of the lines that are not."""

    def to_row(rec: dict) -> dict:
        tags = rec["log_tags"]
        fields = {**rec, **tags}
        row = {k: fields.get(k) for k in IOR_FIELDS}
        row.update(
            run_id=run_id,
            system=fields.get("system") or system,
            repetition=int_or_none(fields.get("repetition")),
            log_tags=log_tags_json(tags),
        )
        for key in ("procs", "procs_per_node", "nodes"):  # the tags' text
            row[key] = int_or_none(row[key])
        return row

    return _line_rows(lines, "ior", _ior_record, to_row)


# The components table's columns of one line of components.jsonl (the check's record; the run's
# and the tags' columns are set from the tags).
COMPONENT_FIELDS = (
    "component",
    "target",
    "operation",
    "block",
    "jobs",
    "iodepth",
    "bytes",
    "procs",
    "nodes",
    "mib_s",
    "aggregate_mib_s",
)


def _components_record(rec) -> None:
    tags = rec.get("log_tags") if isinstance(rec, dict) else None
    if not isinstance(tags, dict) or tags.get("check") not in (FIO.name, NETBW.name):
        raise ValueError(f"not a {FIO.name} or {NETBW.name} record")
    if rec.get("component") not in ("storage", "network"):
        raise ValueError(f"component {shown(rec.get('component'))}: not storage or network")
    _require(rec, ("operation", "mib_s", "aggregate_mib_s"))


def _tagged_rows(lines, run_id: str, system: str | None, table: str, record_check, fields):
    """Rows of a check's JSON lines, each a record with the job's log tags (the check named in
    them): its fields, the run and the tags' system, environ, check and repetition; and the
    problems of the lines that are not."""

    def to_row(rec: dict) -> dict:
        tags = rec["log_tags"]
        return {k: rec.get(k) for k in fields} | {
            "run_id": run_id,
            "system": tags.get("system") or system,
            "environ": tags.get("environ"),
            "check": tags.get("check"),
            "repetition": int_or_none(tags.get("repetition")),  # a log's tags are text
            "log_tags": log_tags_json(tags),
        }

    return _line_rows(lines, table, record_check, to_row)


def components_rows(lines, run_id: str, system: str | None):
    """Rows of one components.jsonl (iostudy.benchmarks.components: a measured point per line,
    with the job's log tags) and the problems of the lines that are not."""
    return _tagged_rows(lines, run_id, system, "components", _components_record, COMPONENT_FIELDS)


ADAPTIVE_FIELDS = (
    "mode",
    "adapt",
    "interference",
    "writers",
    "targets",
    "nodes",
    "bytes_per_writer",
    "bytes",
    "seconds",
    "mib_s",
    "moves",
    "index_s",
    "target_s",
    "writers_per_target",
    "target_names",
    "interferer_targets",
)


def _adaptive_record(rec) -> None:
    tags = rec.get("log_tags") if isinstance(rec, dict) else None
    if not isinstance(tags, dict) or tags.get("check") != ADAPTIVE.name:
        raise ValueError(f"not an {ADAPTIVE.name} record")
    _require(rec, ("mode", "writers", "seconds", "mib_s"))
    if rec["mode"] not in ("adaptive", "mpiio", "posix-fpp"):
        raise ValueError(f"mode {shown(rec['mode'])}: not adaptive, mpiio or posix-fpp")
    for key in ("seconds", "mib_s"):
        if not isinstance(rec[key], int | float) or not rec[key] > 0:
            raise ValueError(f"{key} {shown(rec[key])}: not a positive number")


def adaptive_rows(lines, run_id: str, system: str | None):
    """Rows of one adaptive.jsonl (iostudy.benchmarks.adaptive: one run per line, with the
    job's log tags) and the problems of the lines that are not."""
    return _tagged_rows(lines, run_id, system, "adaptive", _adaptive_record, ADAPTIVE_FIELDS)


#: each benchmark output file a run's ReFrame output holds -> its table and its rows' reader
#: (lines, run_id, case, system, campaign parameters)
OUTPUTS = {
    "iomodel.jsonl": ("iomodel", iomodel_rows),
    "ior.jsonl": (
        "ior",
        lambda lines, run_id, case, system, params: ior_rows(lines, run_id, system),
    ),
    "components.jsonl": (
        "components",
        lambda lines, run_id, case, system, params: components_rows(lines, run_id, system),
    ),
    "adaptive.jsonl": (
        "adaptive",
        lambda lines, run_id, case, system, params: adaptive_rows(lines, run_id, system),
    ),
}


class ResultFile(NamedTuple):
    """One file of a run's results, read: the table its rows go to (None: it gave none) and
    the rows, and why the file is quarantined (None: it is not) with its sha256 (None: not a
    file that can be read)."""

    path: Path
    table: str | None
    rows: list[dict]
    problem: str | None = None
    sha256: str | None = None


def _result(path: Path, table: str | None, rows: list[dict], problem: str | None) -> ResultFile:
    """A file's ResultFile; a file quarantined has its sha256."""
    sha = sha256_file(path, follow=False) if problem and path.is_file() else None
    return ResultFile(path, table, rows, problem, sha)


def run_results(run_dir: Path, run_id: str, system: str | None, campaign_params) -> list:
    """The ResultFile of the run's ReFrame report (perf: report.json missing, the run did not
    get that far; unreadable, quarantined) and of each benchmark output its test cases left."""
    path = run_dir / "reframe" / "report.json"
    report, problem = _read_report(path)
    results = [_result(path, None, [], problem)] if problem else []
    if report:
        rows, left_out = perf_rows(report, run_id, campaign_params)
        why = "performance values left out: " + "; ".join(left_out) if left_out else None
        results.append(_result(path, "perf", rows, why))
    return results + _benchmark_results(run_dir, report, run_id, system, campaign_params)


def _read_report(path: Path) -> tuple[dict | None, str | None]:
    """ReFrame's report.json, or None and why it is quarantined (None when it is missing)."""
    if not os.path.lexists(path):
        return None, None
    try:
        report = jsonlimits.loads(safeio.read_text(path))
        if not isinstance(report, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        return None, f"unreadable ReFrame report: {exc}"
    return report, None


def _benchmark_results(run_dir: Path, report, run_id, system, campaign_params) -> list:
    """A ResultFile per benchmark output of the run's ReFrame output, its rows those of the
    lines kept; it is quarantined with the lines left out, when any is."""
    output = run_dir / "reframe" / "output"
    cases = _case_by_outputdir(report or {})
    found = [p for n in OUTPUTS for p in sorted(output.rglob(n))] if output.is_dir() else []
    results = []
    for path in found:
        table, reader = OUTPUTS[path.name]
        try:
            lines = safeio.read_regular(path).splitlines()
        except OSError as exc:
            rows, problems = [], [str(exc)]
        else:
            case = cases.get(path.parent.relative_to(output).as_posix())
            rows, problems = reader(lines, run_id, case, system, campaign_params)
        why = "benchmark output lines left out: " + "; ".join(problems) if problems else None
        results.append(_result(path, table, rows, why))
    return results
