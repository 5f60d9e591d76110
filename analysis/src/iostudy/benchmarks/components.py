"""Seed 001's component analysis (section 4.2): what fio_check and netbw_check run and what the
store keeps of each measurement. Pure functions, without pandas: ReFrame imports this.

- Storage targets (Fig. 3): fio, large direct sequential writes or reads of ``block`` bytes
  (4 MiB, as seed 001's sgp_dd) by ``jobs`` processes on one target, each ``size`` bytes of a
  file of its own, ``iodepth`` requests in flight each (a device serves a queue faster than
  one request at a time); and ``syncwrite``: small writes each followed by fsync (seed 001's
  metadata updates of 4 KiB to 256 KiB, 5-8 MiB/s on its device). The figure is fio's
  aggregate bandwidth over the jobs (group reporting).
- Network (Fig. 2b): iostudy's netbw, ping-pong between pairs of ranks across message sizes with
  NetPIPE's perturbations (a few bytes more and less than each power of two): one pair alone
  and all pairs at once.
- The client ceiling (Fig. 2a) is ior_check's memory target, as before.

Each check writes components.jsonl, one record per measured point (the store's components
table), and its ReFrame performance variables are the peaks.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from iostudy.benchmarks import benchparse, spackenv
from iostudy.core.numfmt import MIB, MIB_S

FIO_OPERATIONS = ("write", "read", "syncwrite")


# ---- storage targets: fio --------------------------------------------------------------------
def fio_program(system: str) -> Path | None:
    """The system's Spack view's fio, else the machine's (Debian's)."""
    found = spackenv.view_program(system, "fio") or shutil.which("fio")
    return Path(found) if found else None


def fio_arguments(
    workdir, operation: str, jobs: int, size: str, block: str, iodepth: int = 1
) -> list[str]:
    """fio's command line: ``jobs`` processes, each on a file of its own in workdir, direct
    I/O (the page cache would measure memory), one JSON report for the group. No
    preallocation (fio's default fallocates the files first): the blocks are allocated as they
    are written, as an application's (and IOR's, and dd's) are."""
    rw = "write" if operation == "syncwrite" else operation
    # one request at a time per job (psync: as dd and an application's write calls), or
    # iodepth in flight (libaio: as a device's queue, seed 001's sgp_dd threads)
    engine = ["--ioengine=psync"] if iodepth == 1 else ["--ioengine=libaio", f"--iodepth={iodepth}"]
    args = [
        f"--name={operation}",
        f"--directory={workdir}",
        f"--rw={rw}",
        f"--bs={block}",
        f"--size={size}",
        f"--numjobs={jobs}",
        "--direct=1",
        *engine,
        "--group_reporting",
        "--output-format=json",
        "--end_fsync=1",
        "--fallocate=none",
    ]
    if operation == "syncwrite":
        args.append("--fsync=1")  # every write followed by fsync: seed 001's metadata updates
    return args


def fio_parse(text: str) -> dict:
    """fio's JSON report in a job's output (fio may print notes before it); ValueError when
    there is none."""
    start = text.find("{")
    while start >= 0:
        try:
            report, _ = json.JSONDecoder().raw_decode(text[start:])
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        if isinstance(report, dict) and isinstance(report.get("jobs"), list) and report["jobs"]:
            return report
        start = text.find("{", start + 1)
    raise ValueError("no fio JSON report in the output")


def fio_mib_s(report: dict, operation: str) -> float:
    """The group's bandwidth of the operation, MiB/s (fio's bw_bytes: bytes per second)."""
    side = "read" if operation == "read" else "write"
    return report["jobs"][0][side]["bw_bytes"] / MIB


def fio_sanity(report: dict, operation: str, jobs: int, size: int) -> list[str]:
    """What is wrong with a fio report of ``jobs`` jobs of ``size`` bytes each."""
    job = report["jobs"][0]
    side = "read" if operation == "read" else "write"
    problems = []
    if job.get("error"):
        problems.append(f"fio error {job['error']}")
    moved = job.get(side, {}).get("io_bytes", 0)
    if moved != jobs * size:
        problems.append(f"fio moved {moved} bytes, expected {jobs} x {size}")
    if not fio_mib_s(report, operation) > 0:
        problems.append("fio reports no bandwidth")
    return problems


def fio_records(
    report: dict, operation: str, jobs: int, block: int, iodepth: int = 1, target: str = "scratch"
):
    """fio's group as the store's one row: ``target`` the storage target's name (scratch: the
    system's scratch storage)."""
    mib_s = fio_mib_s(report, operation)
    return [
        {
            "component": "storage",
            "target": target,
            "operation": operation,
            "block": block,
            "jobs": jobs,
            "iodepth": iodepth,
            "bytes": None,
            "procs": jobs,
            "nodes": 1,
            "mib_s": mib_s / jobs,
            "aggregate_mib_s": mib_s,
        }
    ]


def fio_performance(report: dict, operation: str) -> dict[str, tuple[float, str]]:
    return {f"{operation}_mib_s": (fio_mib_s(report, operation), MIB_S)}


# ---- network: iostudy's netbw ----------------------------------------------------------------
def netbw_arguments(min_size: str, max_size: str, perturb: int, seconds: float) -> list[str]:
    return [
        "--min",
        str(min_size),
        "--max",
        str(max_size),
        "--perturb",
        str(perturb),
        "--seconds",
        f"{seconds:g}",
    ]


def netbw_parse(text: str) -> dict:
    """netbw's JSON line in a job's output; ValueError when there is none."""
    return benchparse.json_line(text, "netbw")


def netbw_sanity(parsed: dict, procs: int) -> list[str]:
    problems = []
    if parsed.get("pairs") != procs // 2:
        problems.append(f"{parsed.get('pairs')} pairs, expected {procs // 2}")
    points = parsed.get("points") or []
    if not points or not all(p.get("pair_mib_s", 0) > 0 for p in points):
        problems.append("a message size without a bandwidth")
    return problems


def netbw_records(parsed: dict, procs: int, nodes: int) -> list[dict]:
    return [
        {
            "component": "network",
            "operation": "pingpong",
            "block": None,
            "jobs": None,
            "iodepth": None,
            "bytes": p["bytes"],
            "procs": procs,
            "nodes": nodes,
            "mib_s": p["pair_mib_s"],
            "aggregate_mib_s": p["aggregate_mib_s"],
        }
        for p in parsed["points"]
    ]


def netbw_performance(parsed: dict) -> dict[str, tuple[float, str]]:
    return {
        name: (parsed[name], MIB_S) for name in ("pair_mib_s", "aggregate_mib_s", "unaligned_mib_s")
    }
