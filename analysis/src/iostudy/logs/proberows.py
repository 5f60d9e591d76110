"""The store's probes rows of an interference probe's log (seed 004; the probe itself is
:mod:`iostudy.benchmarks.probe`): one per writer file, from the runtime's per-file POSIX records.
Pure functions, without pandas: ingest's reader workers import this."""

from __future__ import annotations

import json
import re

from iostudy.core.checknames import PROBE

#: the file each writer writes: DIR/writer.<rank>, or DIR/writer.<rank>.<i> when its name was
#: chosen to put it on a GlusterFS brick (ioprobe --brick)
WRITER_FILE = re.compile(r"/writer\.(\d+)(?:\.\d+)?$")


def _int(value):
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


def writer_target(tags: dict, writer: int) -> str | None:
    """The target writer's file was placed on: the writer_targets tag (the targets' names in
    order, comma-separated; writer r on target r mod K), else the check's target tag."""
    names = [n for n in (tags.get("writer_targets") or "").split(",") if n]
    return names[writer % len(names)] if names else tags.get("target")


def is_probe(job: dict) -> bool:
    """Whether a jobs row is a probe_check job's."""
    return job.get("check") == PROBE.name


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
                "target": writer_target(tags, int(match.group(1))),
                "writer": int(match.group(1)),
                "rank": rec["rank"],
                "bytes": rec["bytes_written"],
                "write_time": rec["write_time"],
                "write_start": rec["write_start"],
                "write_end": rec["write_end"],
            }
        )
    return rows
