"""The interference probe of seed 004: what probe_check computes and what the store keeps of
each sample (the report's tables are :mod:`iostudy.report.probe_report`). Pure functions, without
pandas: ReFrame imports this (the store's rows of a probe log are :mod:`iostudy.logs.proberows`).

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

from iostudy.benchmarks import benchparse
from iostudy.core.numfmt import MIB_S


def storage_targets(system: dict) -> int:
    """The system's storage targets (peaks.storage_targets of its system.json); 1 when it
    declares none (a probe then writes writers_per_target files to its one target)."""
    return (system.get("peaks") or {}).get("storage_targets") or 1


def writers(targets: int, writers_per_target: int) -> int:
    return targets * writers_per_target


def arguments(workdir, size: str, transfer: str, targets: int, on_bricks=()) -> list[str]:
    """ioprobe's arguments; on_bricks (placement.scratch_bricks): each target's brick, in
    order."""
    placed = [arg for _, brick in on_bricks for arg in ("--brick", brick)]
    return [
        "--dir",
        str(workdir),
        "--size",
        str(size),
        "--transfer",
        str(transfer),
        "--targets",
        str(targets),
        *placed,
    ]


def parse(text: str) -> dict:
    """ioprobe's JSON line in a job's output; ValueError when there is none."""
    return benchparse.json_line(text, "ioprobe")


def sanity(parsed: dict, writers_expected: int, size: int) -> list[str]:
    problems = []
    if parsed.get("writers") != writers_expected:
        problems.append(f"{parsed.get('writers')} writers, expected {writers_expected}")
    if parsed.get("bytes_per_writer") != size:
        problems.append(f"{parsed.get('bytes_per_writer')} bytes per writer, expected {size}")
    files = parsed.get("files")
    if files is not None and len(files) != writers_expected:
        problems.append(f"{len(files)} files named, expected {writers_expected}")
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
