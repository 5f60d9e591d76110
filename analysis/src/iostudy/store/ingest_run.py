"""A run directory into the store: its manifest, its Darshan logs, its ReFrame results, and its
runs row, all committed at once.

``results/<run-id>/``: manifest.json, darshan/**/*.darshan, reframe/report.json,
reframe/output/**/{iomodel,ior}.jsonl. A run whose manifest is unchanged since it was ingested
is skipped. A run ingested again (its manifest changed, e.g. it finished after a first ingest)
keeps the rows of the logs it already had; only new logs are read. A log whose sha256 the store
already holds for another run is skipped: logs are identified by content, not by path. Every
table of the run gets a part, even empty, so that the tables always exist once a run is in.
"""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from pathlib import Path
from typing import NamedTuple

from iostudy.core import jsonlimits, safeio
from iostudy.core.runmanifest import is_dry_run, study_of
from iostudy.logs.logpool import ReaderPool
from iostudy.logs.logrows import timestamp, utc_naive
from iostudy.logs.storerule import row_problems
from iostudy.store import catalog as catalog_mod
from iostudy.store.ingest_logs import LOG_ROWS, LogFile, hashed, read_logs, scan_logs
from iostudy.store.ingest_results import campaign_parameters, run_results
from iostudy.store.ingest_writer import Counts, PartWriter, quarantine, rel_path
from iostudy.store.store import TABLES, IngestError, Store


class RunManifest(NamedTuple):
    """A run directory's manifest.json: its content (a JSON object), the sha256 of the bytes
    read, and the run id it gives (its run_id, else the folder's name)."""

    content: dict
    sha256: str
    run_id: str


def read_manifest(run_dir: Path) -> RunManifest:
    """The run directory's manifest, read once; IngestError naming the file and why when it
    is not a run directory's, or its run id cannot name a part."""
    path = run_dir / "manifest.json"
    if not path.is_file():
        raise IngestError(f"{run_dir}: not a run directory (no manifest.json)")
    try:
        data = safeio.read_regular(path)
        manifest = jsonlimits.loads(data.decode("utf-8"))
    except (OSError, ValueError) as exc:
        raise IngestError(f"{path}: cannot read the manifest: {exc}") from None
    if not isinstance(manifest, dict):
        raise IngestError(f"{path}: the manifest is not a JSON object")
    run_id = str(manifest.get("run_id") or run_dir.name)
    try:
        run_id = catalog_mod.check_part_name(run_id)
    except catalog_mod.CatalogError as exc:
        raise IngestError(f"{path}: run_id: {exc}") from None
    return RunManifest(manifest, hashlib.sha256(data).hexdigest(), run_id)


def _run_info(run_id: str, manifest: dict) -> dict:
    """What the log readers are told of the run (logrows): its id, campaign, system and the
    system's description from the manifest's effective configuration."""
    effective = manifest.get("effective_config") or {}
    system_config = effective.get("system") if isinstance(effective, dict) else None
    return {
        "run_id": run_id,
        "campaign": manifest.get("campaign"),
        "system": manifest.get("system") or (system_config or {}).get("name"),
        "system_config": system_config if isinstance(system_config, dict) else None,
    }


def _run_row(run_dir: Path, base: Path, run_info: dict, manifest: dict, manifest_sha: str):
    """The run's runs row; IngestError naming the manifest's values the store's rule refuses
    (a campaign that is no string): a run is not ingested without it."""
    row = {
        "run_id": run_info["run_id"],
        "campaign": manifest.get("campaign"),
        "system": run_info["system"],
        "started": timestamp(manifest.get("started")),
        "finished": timestamp(manifest.get("finished")),
        "status": manifest.get("status"),
        "git_commit": manifest.get("git_commit"),
        "manifest_path": rel_path(run_dir / "manifest.json", base),
        "manifest_sha256": manifest_sha,
        # the study the report and the workflow find the run in (a campaign names its own)
        "study": study_of(manifest, manifest) or None,
        "git_dirty": manifest.get("git_dirty"),
        "tool_versions": json.dumps(manifest.get("tool_versions"), sort_keys=True),
        "ingested": utc_naive(datetime.now(timezone.utc)),
        "benchmark_versions": json.dumps(manifest.get("benchmark_versions") or {}, sort_keys=True),
        "source_root": str(base),
    }
    if problems := row_problems("runs", row, TABLES["runs"]):
        raise IngestError(f"{run_dir / 'manifest.json'}: {'; '.join(problems)}")
    return row


def _to_read(logs: list[LogFile], elsewhere: set[str], counts: Counts) -> list[LogFile]:
    """The run's logs less those another run holds and the second of two equal ones."""
    todo, seen = [], set()
    for log in logs:
        if log.log_sha256 and (log.log_sha256 in elsewhere or log.log_sha256 in seen):
            counts.logs_skipped += 1
        else:
            todo.append(log)
        seen.add(log.log_sha256)
    return todo


def _carry_over(store: Store, run_id: str, carried: set[str], writer: PartWriter) -> set[str]:
    """Writes the run's committed rows of the logs in carried (read at an earlier ingest of the
    run); returns the sha256 of those logs found there, ingested or quarantined."""
    already = set()
    for table in LOG_ROWS:
        for chunk in store.old_rows(table, run_id, "log_sha256", carried):
            writer.write(table, chunk)
            if table == "jobs":
                already |= set(chunk.column("log_sha256").to_pylist())
    for chunk in store.old_rows("quarantine", run_id, "sha256", carried):
        writer.write("quarantine", chunk)
        already |= set(chunk.column("sha256").to_pylist())
    return already


def _write_results(
    run_dir: Path, base: Path, writer: PartWriter, run_info: dict, manifest: dict, counts: Counts
) -> None:
    """The rows of the run's ReFrame report (perf) and benchmark outputs (iomodel, ior,
    components, adaptive), each benchmark row with the file it came from; a file quarantined
    with why."""
    run_id = run_info["run_id"]
    params = campaign_parameters(manifest)
    for result in run_results(run_dir, run_id, run_info["system"], params):
        source = rel_path(result.path, base)
        if result.table:
            rows = result.rows
            if "source_path" in TABLES[result.table].names:  # the benchmark outputs' tables
                rows = [row | {"source_path": source} for row in rows]
            writer.write(result.table, rows)
        if result.problem:
            row = {
                "run_id": run_id,
                "path": source,
                "sha256": result.sha256,
                "reason": result.problem,
            }
            quarantine(writer, counts, row, result.path)


def ingest_run(run_dir, store: Store, pool: ReaderPool, counts: Counts, progress=None) -> bool:
    """Ingest one run directory; returns False when it was skipped (already in the store)."""
    run_dir = Path(run_dir)
    manifest, manifest_sha, run_id = read_manifest(run_dir)
    if is_dry_run(manifest):  # nothing ran: its skips would pass for a run's results
        counts.dry_runs.append(str(run_dir))
        return False
    base = run_dir.resolve().parent
    old = store.run_row(run_id)
    if old and old.get("manifest_sha256") == manifest_sha:
        counts.runs_skipped += 1
        return False
    run_info = _run_info(run_id, manifest)

    logs = [hashed(log) for log in scan_logs(run_dir / "darshan", base)]
    elsewhere = store.known_hashes(exclude_run=run_id)
    # Logs this run already has (a re-ingest after the manifest changed) are carried over,
    # unless its tables were written with other columns (an older iostudy): then read again.
    current = old and store.has_current_tables(run_id)
    shas = {log.log_sha256 for log in logs} - elsewhere - {None}
    carried = shas if current else set()
    todo = _to_read(logs, elsewhere, counts)

    writer = PartWriter(store, run_id)
    try:
        already = _carry_over(store, run_id, carried, writer)
        todo = [log for log in todo if log.log_sha256 is None or log.log_sha256 not in already]
        counts.logs_skipped += len(already)
        task = progress.add_task(run_id, total=len(todo)) if progress else None
        for _ in read_logs(todo, run_info, lambda: writer, pool, counts, progress, task):
            pass
        _write_results(run_dir, base, writer, run_info, manifest, counts)
        writer.write("runs", [_run_row(run_dir, base, run_info, manifest, manifest_sha)])
        writer.commit()
    except BaseException:
        writer.abort()
        raise
    counts.runs_ingested += 1
    return True
