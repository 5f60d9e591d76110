"""The interference probe of seed 004: what probe_check computes and what the store keeps of
each sample (the report's tables are :mod:`iostudy.probe_report`). Pure functions, without
pandas: ingest's reader workers and ReFrame import this.

A sample is one run of iostudy's ioprobe benchmark: writers_per_target writers per storage
target of the system (its `storage_targets`), each writing bytes_per_writer bytes to a file of
its own with POSIX calls, all starting together. Its figures come from the runtime's per-file
records (POSIX_F_WRITE_TIME: the writes and the fsync, without open and close, as the seed
measures):

    aggregate_mib_s     all bytes / the slowest writer's write time
    mean_writer_mib_s   the mean over writers of their bytes / their write time
    imbalance           the slowest writer's write time / the fastest's (seed 004, section II)
"""

from __future__ import annotations

import json
import re

from .numfmt import MIB_S

#: the file each writer writes: DIR/writer.<rank>
WRITER_FILE = re.compile(r"/writer\.(\d+)$")


def storage_targets(system: dict) -> int:
    """The system's storage targets (peaks.storage_targets of its system.json); 1 when it
    declares none (a probe then writes writers_per_target files to its one target)."""
    return (system.get("peaks") or {}).get("storage_targets") or 1


def writers(targets: int, writers_per_target: int) -> int:
    return targets * writers_per_target


def arguments(workdir, size: str, transfer: str, targets: int) -> list[str]:
    return ["--dir", str(workdir), "--size", str(size), "--transfer", str(transfer),
            "--targets", str(targets)]  # fmt: skip


def parse(text: str) -> dict:
    """ioprobe's JSON line in a job's output; ValueError when there is none."""
    for line in text.splitlines():
        line = line.strip()
        if line.startswith("{"):
            try:
                record = json.loads(line)
            except json.JSONDecodeError:
                continue
            if isinstance(record, dict) and record.get("benchmark") == "ioprobe":
                return record
    raise ValueError("no ioprobe JSON line in the output")


def sanity(parsed: dict, writers_expected: int, size: int) -> list[str]:
    problems = []
    if parsed.get("writers") != writers_expected:
        problems.append(f"{parsed.get('writers')} writers, expected {writers_expected}")
    if parsed.get("bytes_per_writer") != size:
        problems.append(f"{parsed.get('bytes_per_writer')} bytes per writer, expected {size}")
    times = parsed.get("write_s") or []
    if len(times) != writers_expected or not all(t and t > 0 for t in times):
        problems.append(f"write times {times}: expected {writers_expected} positive ones")
    return problems


def performance(parsed: dict) -> dict[str, tuple[float, str]]:
    """The probe's own figures (its MPI_Wtime): the log's are the report's."""
    return {
        "aggregate_mib_s": (parsed["aggregate_mib_s"], MIB_S),
        "mean_writer_mib_s": (parsed["mean_writer_mib_s"], MIB_S),
        "imbalance": (parsed["imbalance"], "x"),
    }


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def is_probe(job: dict) -> bool:
    """Whether a jobs row is a probe_check job's."""
    return job.get("check") == "probe_check"


def probe_rows(job: dict, files: list[dict]) -> list[dict]:
    """The probes table's rows of one log (the store's jobs row and files rows): one per writer
    file of a probe_check job, empty for any other job."""
    if not is_probe(job):
        return []
    tags = json.loads(job.get("tags") or "{}")
    rows = []
    for rec in files:
        match = WRITER_FILE.search(rec.get("path") or "")
        if rec["module"] != "posix" or not match or not rec["bytes_written"]:
            continue
        rows.append(
            {
                "run_id": job["run_id"],
                "log_sha256": job["log_sha256"],
                "system": job["system"],
                "campaign": job["campaign"],
                "environ": job["environ"],
                "jobid": job["jobid"],
                "start": job["start"],
                "nodes": job["nodes"],
                "writers": job["nprocs"],
                "writers_per_target": _int(tags.get("writers_per_target")),
                "targets": _int(tags.get("targets")),
                "target": tags.get("target"),
                "writer": int(match.group(1)),
                "rank": rec["rank"],
                "bytes": rec["bytes_written"],
                "write_time": rec["write_time"],
                "write_start": rec["write_start"],
                "write_end": rec["write_end"],
            }
        )
    return rows
