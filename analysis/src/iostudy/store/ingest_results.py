"""A run's ReFrame results into rows: the run report's performance values (the perf table) and
the benchmark outputs its test cases left (iomodel.jsonl, ior.jsonl: the iomodel and ior tables).

Apart from the log ingest (:mod:`iostudy.store.ingest_logs`): these are small JSON files read
in this process, with their own ways to be wrong (a line that is not benchmark output is left
out and its file quarantined with the line numbers).
"""

from __future__ import annotations

import json
import os
from datetime import datetime
from pathlib import Path

from iostudy.core import safeio
from iostudy.core.provenance import sha256_file
from iostudy.core.reframe_names import display_parameters
from iostudy.logs.logrows import epoch_utc, int_or_none, utc_naive
from iostudy.store.ingest_writer import Counts, PartWriter, rel_path
from iostudy.store.store import TABLES


def timestamp(value):
    """A UTC datetime from an ISO 8601 string or a number of seconds; None when not parseable."""
    if value is None:
        return None
    if isinstance(value, int | float):
        return epoch_utc(value)
    try:
        return utc_naive(datetime.fromisoformat(str(value).replace("Z", "+00:00")))
    except ValueError:
        return None


def _float_or_none(value):
    try:
        result = float(value)
    except (TypeError, ValueError):
        return None
    return result


def _case_parameters(case: dict, campaign_parameters=None) -> dict:
    """A test case's parameters: those its display name shows (display_parameters; typed
    as ReFrame recorded them in the case when it did), and the values in the case of the
    variables the campaign set for its check (``campaign_parameters``: check -> names), which
    ReFrame does not show in the name."""
    display = case.get("display_name") or case.get("name") or ""
    shown = display_parameters(display)
    params = {k: case.get(k, v) if "." not in k else v for k, v in shown.items()}
    for name in (campaign_parameters or {}).get(_case_check(case), ()):
        if name in case and name not in params:
            params[name] = case[name]
    return params


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


def _case_check(case: dict) -> str:
    return (case.get("display_name") or case.get("name") or "").split(" ")[0] or None


def _report_cases(report: dict) -> list[dict]:
    return [case for run in report.get("runs", []) for case in run.get("testcases", [])]


def perf_rows(report: dict, run_id: str, campaign_params=None) -> list[dict]:
    """One row per performance value of ReFrame's run report (report.json).

    ReFrame records each value as ``perfvalues["<system>:<partition>:<variable>"] = [value,
    reference, lower, upper, unit, result]``. campaign_params: see :func:`_case_parameters`.
    """
    rows = []
    for case in _report_cases(report):
        params = json.dumps(_case_parameters(case, campaign_params), sort_keys=True)
        for key, entry in (case.get("perfvalues") or {}).items():
            variable = key.split(":")[-1]
            value, ref, lower, upper, unit, result = (list(entry) + [None] * 6)[:6]
            rows.append(
                {
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
                }
            )
    return rows


def _case_by_outputdir(report: dict) -> dict[str, dict]:
    """Test cases keyed by their output folder relative to ReFrame's output prefix, so that they
    are found again after the run directory moved."""
    prefix = (report.get("session_info") or {}).get("prefix_output") or ""
    cases = {}
    for case in _report_cases(report):
        out = case.get("outputdir")
        if not out:
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


def _checked_records(lines, check) -> tuple[list[dict], list[str]]:
    """The JSON records of a benchmark's output lines that ``check`` accepts (it raises
    ValueError saying why not), and the problems of the other lines ("line N: why")."""
    records, problems = [], []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
            check(rec)
        except ValueError as exc:
            problems.append(f"line {number}: {exc}")
            continue
        records.append(rec)
    return records, problems


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
    records, problems = _checked_records(lines, _iomodel_record)
    rows = []
    for rec in records:
        row = {k: rec.get(k) for k in IOMODEL_FIELDS}
        row.update(
            run_id=run_id,
            system=case.get("system") or system,
            repetition=int_or_none(params.get("repetition")),
            partition=case.get("partition"),
            environ=case.get("environ"),
            check=_case_check(case) if case else None,
            parameters=json.dumps(params, sort_keys=True),
        )
        rows.append(row)
    return rows, problems


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
    if not isinstance(tags, dict) or tags.get("check") != "ior_check":
        raise ValueError("not an ior_check record")
    _require(rec, ("operation", "iteration", "bw_mib_s", "aggregate_bytes"))


def ior_rows(lines, run_id: str, system: str | None):
    """Rows of one ior.jsonl (ior_check: one IOR result per line, with the job's log tags under
    "log_tags") and the problems of the lines that are not."""
    records, problems = _checked_records(lines, _ior_record)
    rows = []
    for rec in records:
        tags = rec["log_tags"]
        fields = {**rec, **tags}
        row = {k: fields.get(k) for k in IOR_FIELDS}
        row.update(
            run_id=run_id,
            system=fields.get("system") or system,
            repetition=int_or_none(fields.get("repetition")),
            log_tags=log_tags_json(tags),
        )
        for key in ("procs", "procs_per_node", "nodes"):
            row[key] = int_or_none(row[key])
        rows.append(row)
    return rows, problems


# The components table's columns of one line of components.jsonl (the check's record; the run's
# and the tags' columns are set from the tags).
COMPONENT_FIELDS = ("component", "target", "operation", "block", "jobs", "iodepth", "bytes",
                    "procs", "nodes", "mib_s", "aggregate_mib_s")  # fmt: skip


def _components_record(rec) -> None:
    tags = rec.get("log_tags") if isinstance(rec, dict) else None
    if not isinstance(tags, dict) or tags.get("check") not in ("fio_check", "netbw_check"):
        raise ValueError("not a fio_check or netbw_check record")
    if rec.get("component") not in ("storage", "network"):
        raise ValueError(f"component {rec.get('component')!r}: not storage or network")
    _require(rec, ("operation", "mib_s", "aggregate_mib_s"))
    if not isinstance(rec.get("target", ""), str | None):
        raise ValueError(f"target {rec['target']!r}: not a storage target's name")
    for key in ("mib_s", "aggregate_mib_s"):
        if not isinstance(rec[key], int | float) or not rec[key] >= 0:
            raise ValueError(f"{key} {rec[key]!r}: not a rate")


def _tagged_rows(lines, run_id: str, system: str | None, record_check, fields, counts):
    """Rows of a check's JSON lines, each a record with the job's log tags (the check named in
    them): its fields, the integer ones (counts) as integers, the run and the tags' system,
    environ, check and repetition; and the problems of the lines that are not."""
    records, problems = _checked_records(lines, record_check)
    rows = []
    for rec in records:
        tags = rec["log_tags"]
        row = {k: rec.get(k) for k in fields}
        row.update(run_id=run_id, system=tags.get("system") or system,
                   environ=tags.get("environ"), check=tags.get("check"),
                   repetition=int_or_none(tags.get("repetition")),
                   log_tags=log_tags_json(tags))  # fmt: skip
        row.update({key: int_or_none(row[key]) for key in counts})
        rows.append(row)
    return rows, problems


def components_rows(lines, run_id: str, system: str | None):
    """Rows of one components.jsonl (iostudy.benchmarks.components: a measured point per line,
    with the job's log tags) and the problems of the lines that are not."""
    counts = ("block", "jobs", "iodepth", "bytes", "procs", "nodes")
    return _tagged_rows(lines, run_id, system, _components_record, COMPONENT_FIELDS, counts)


ADAPTIVE_FIELDS = ("mode", "adapt", "interference", "writers", "targets", "nodes",
                   "bytes_per_writer", "bytes", "seconds", "mib_s", "moves", "index_s",
                   "target_s", "writers_per_target")  # fmt: skip


def _adaptive_record(rec) -> None:
    tags = rec.get("log_tags") if isinstance(rec, dict) else None
    if not isinstance(tags, dict) or tags.get("check") != "adaptive_check":
        raise ValueError("not an adaptive_check record")
    _require(rec, ("mode", "writers", "seconds", "mib_s"))
    if rec["mode"] not in ("adaptive", "mpiio", "posix-fpp"):
        raise ValueError(f"mode {rec['mode']!r}: not adaptive, mpiio or posix-fpp")
    for key in ("seconds", "mib_s"):
        if not isinstance(rec[key], int | float) or not rec[key] > 0:
            raise ValueError(f"{key} {rec[key]!r}: not a positive number")


def adaptive_rows(lines, run_id: str, system: str | None):
    """Rows of one adaptive.jsonl (iostudy.benchmarks.adaptive: one run per line, with the
    job's log tags) and the problems of the lines that are not."""
    counts = ("writers", "targets", "nodes", "bytes_per_writer", "bytes", "moves")
    return _tagged_rows(lines, run_id, system, _adaptive_record, ADAPTIVE_FIELDS, counts)


#: each benchmark output file a run's ReFrame output holds -> its table and its rows' reader
#: (lines, run_id, case, system, campaign parameters)
OUTPUTS = {
    "iomodel.jsonl": ("iomodel", iomodel_rows),
    "ior.jsonl": ("ior", lambda lines, run_id, case, system, params: ior_rows(
        lines, run_id, system)),
    "components.jsonl": ("components", lambda lines, run_id, case, system, params: (
        components_rows(lines, run_id, system))),
    "adaptive.jsonl": ("adaptive", lambda lines, run_id, case, system, params: (
        adaptive_rows(lines, run_id, system))),
}  # fmt: skip


def read_report(run_dir: Path, base: Path, writer: PartWriter, run_id: str, counts: Counts):
    """ReFrame's report.json, or None (missing: the run did not get that far; unreadable:
    quarantined)."""
    path = run_dir / "reframe" / "report.json"
    if not os.path.lexists(path):
        return None
    try:
        report = json.loads(safeio.read_text(path))
        if not isinstance(report, dict):
            raise ValueError("not a JSON object")
    except (OSError, ValueError) as exc:
        reason = f"unreadable ReFrame report: {exc}"
        writer.write("quarantine", [_quarantine_file(run_id, path, base, reason)])
        counts.quarantined += 1
        counts.problems.append(f"{path}: {reason}")
        return None
    return report


def _quarantine_file(run_id, path, base, reason):
    sha = sha256_file(path, follow=False) if Path(path).is_file() else None
    return {"run_id": run_id, "path": rel_path(path, base), "sha256": sha, "reason": reason}


def benchmark_rows(run_dir, base, writer, run_id, report, system, counts, campaign_params):
    output = run_dir / "reframe" / "output"
    cases = _case_by_outputdir(report or {})
    found = [p for n in OUTPUTS for p in sorted(output.rglob(n))] if output.is_dir() else []
    for path in found:
        case = cases.get(path.parent.relative_to(output).as_posix())
        try:
            lines = safeio.read_text(path).splitlines()
        except OSError as exc:
            lines, problems = [], [str(exc)]
        else:
            table, reader = OUTPUTS[path.name]
            rows, problems = reader(lines, run_id, case, system, campaign_params)
            for row in rows:
                row["source_path"] = rel_path(path, base)
            writer.write(table, rows)
        if problems:
            reason = "benchmark output lines left out: " + "; ".join(problems)
            writer.write("quarantine", [_quarantine_file(run_id, path, base, reason)])
            counts.quarantined += 1
            counts.problems.append(f"{path}: {reason}")
