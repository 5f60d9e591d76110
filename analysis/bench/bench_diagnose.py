"""`iostudy diagnose` on a facility-scale store, measured: `make bench-diagnose`.

1. A store of ``--jobs`` synthetic job logs (100,000 by default) is written straight into the
   store's tables (synthstore.py: the jobs of bench_report.py, and files rows of five layouts of
   records, POSIX, MPI-IO and STDIO, per-rank and shared by all ranks, with values varied so that
   every rule fires on a share of the jobs; ``synthstore.diagnosable_files``), so that the
   diagnosis, not ingest, is what is measured.
2. ``iostudy diagnose --store STORE --json`` runs in a child process, its output to a file:
   wall time, peak resident memory (the child's own, from wait4), the findings (the JSON's rows)
   and the jobs with one, per rule; ``--runs`` times (default 3), the median.
3. With ``--baseline-src DIR`` (analysis/src of a git worktree of an older commit), the same
   command by that iostudy (this Python, PYTHONPATH=DIR) on the same store, alternating with
   this tree's run by run, and the ratio (the median of each run pair's).
4. The figures against the issue's target: 100,000 jobs diagnosed in at most 30 s on 2 CPUs.

Exits non-zero only when a step failed; a missed target is printed, not an error. Benchmarks are
never timed assertions in tests.
"""

from __future__ import annotations

import argparse
import functools
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

import duckdb
import synthstore
from bench_ingest import Version, baseline_version, clean_env, iostudy_command

from iostudy.store import store as store_mod
from iostudy.store.ingest_writer import PartWriter

TARGET_S, TARGET_JOBS = 30.0, 100_000
CHUNK = 10_000  # jobs whose files rows are made at once (the generator's memory)
# diagnose's JSON findings, read by DuckDB (little memory where json.load takes GiBs)
FOUND = "read_json(?, format = 'array', columns = {rule: 'VARCHAR', log_sha256: 'VARCHAR'})"


def build_store(root: Path, jobs: int, rank_records: int, seed: int) -> Path:
    """The synthetic store (synthstore.diagnosable_files), with what it holds printed."""
    t0 = time.monotonic()
    files = functools.partial(synthstore.diagnosable_files, rank_records=rank_records)
    synthstore.make_store(root, jobs, files, seed, chunk=CHUNK, group=PartWriter.FLUSH_ROWS)
    seconds = time.monotonic() - t0
    query = "SELECT module, COUNT(*) FROM files GROUP BY ALL ORDER BY 1"
    rows = dict(store_mod.connect(root).execute(query).fetchall())
    held = ", ".join(f"{module} {n:,}" for module, n in rows.items())
    print(
        f"bench-diagnose: a store of {jobs:,} jobs, {sum(rows.values()):,} files rows "
        f"({held}) in {seconds:.1f} s",
        flush=True,
    )
    unknown = synthstore.unknown_columns()
    if unknown:
        print(f"bench-diagnose: files columns filled by name and type alone: {', '.join(unknown)}")
    return root


def run_diagnose(version: Version, store: Path, out: Path) -> dict:
    """One `iostudy diagnose --json` in a child process, stdout to ``out``: wall seconds, the
    child's peak resident memory (GiB, from wait4), its findings, per rule, and the jobs with
    one."""
    cmd = [*version.cli, "diagnose", "--store", str(store), "--json"]
    err = out.with_suffix(".err")
    with open(out, "wb") as stdout, open(err, "wb") as stderr:
        t0 = time.monotonic()
        proc = subprocess.Popen(
            cmd, stdout=stdout, stderr=stderr, env={**clean_env(), **version.env}
        )
        _, status, usage = os.wait4(proc.pid, 0)
        seconds = time.monotonic() - t0
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        tail = err.read_text(errors="replace")[-2000:]
        raise SystemExit(
            f"bench-diagnose: {version.label}: diagnose exited {proc.returncode}:\n{tail}"
        )
    con = duckdb.connect()
    rules = dict(
        con.execute(f"SELECT rule, COUNT(*) FROM {FOUND} GROUP BY ALL", [str(out)]).fetchall()
    )
    jobs = con.execute(f"SELECT COUNT(DISTINCT log_sha256) FROM {FOUND}", [str(out)]).fetchone()[0]
    return {
        "s": seconds,
        "gib": usage.ru_maxrss / 2**20,  # KiB on Linux
        "findings": sum(rules.values()),
        "jobs": jobs,
        "rules": Counter(rules),
    }


def measure(versions: list, store: Path, runs: int, tmp: Path) -> dict:
    """``runs`` rounds of every version's diagnose, alternating (the order swapped every
    round, so that a slow spell of the machine weighs on both): {label: [run, ...]}."""
    results = {v.label: [] for v in versions}
    for i in range(runs):
        for v in versions if i % 2 == 0 else versions[::-1]:
            r = run_diagnose(v, store, tmp / f"{v.label}.json")
            results[v.label].append(r)
            print(
                f"bench-diagnose: run {i + 1}/{runs}, {v.label}: {r['s']:.2f} s, "
                f"peak RSS {r['gib']:.2f} GiB, {r['findings']:,} findings",
                flush=True,
            )
    return results


def summary(runs: list) -> dict:
    """The median wall time, the highest peak memory, the last run's findings."""
    last = runs[-1]
    return {
        "s": statistics.median(r["s"] for r in runs),
        "gib": max(r["gib"] for r in runs),
        "findings": last["findings"],
        "jobs": last["jobs"],
        "rules": last["rules"],
        "walls": [r["s"] for r in runs],
    }


def report(jobs: int, results: dict) -> None:
    """The figures, per rule, the ratio to the baseline, and the last line against the target."""
    this = summary(results["iostudy"])
    base = summary(results["baseline"]) if "baseline" in results else None
    print(f"\n{'rule':26}{'findings':>10}{'of jobs':>8}" + (f"{'baseline':>10}" if base else ""))
    for rule in sorted(set(this["rules"]) | set(base["rules"] if base else ())):
        line = f"{rule:26}{this['rules'][rule]:10,}{this['rules'][rule] / jobs:8.1%}"
        print(line + (f"{base['rules'][rule]:10,}" if base else ""))
    print(f"\n{'':28}{'this tree':>12}" + (f"{'baseline':>12}{'ratio':>8}" if base else ""))
    for key, what in (
        ("s", "diagnose, s (median)"),
        ("gib", "peak RSS, GiB"),
        ("findings", "findings"),
        ("jobs", "jobs with a finding"),
    ):
        shown = ",.2f" if key in ("s", "gib") else ",.0f"
        line = f"{what:28}{this[key]:12{shown}}"
        if base:
            ratio = this[key] / base[key] if base[key] else float("nan")
            line += f"{base[key]:12{shown}}{ratio:8.2f}"
        print(line)
    walls = ", ".join(f"{s:.2f}" for s in this["walls"])
    print(f"this tree's runs: {walls} s")
    tail = ""
    if base:
        paired = [
            a["s"] / b["s"] for a, b in zip(results["iostudy"], results["baseline"], strict=True)
        ]
        each = ", ".join(f"{r:.2f}" for r in paired)
        print(
            f"baseline's runs: {', '.join(f'{s:.2f}' for s in base['walls'])} s; "
            f"this/baseline per run: {each}"
        )
        tail = f"; baseline {base['s']:.2f} s, this/baseline {statistics.median(paired):.2f}x"
    ratio = this["s"] / TARGET_S
    verdict = (
        ("met" if ratio <= 1 else "MISSED")
        if jobs == TARGET_JOBS
        else f"the target is for {TARGET_JOBS:,} jobs"
    )
    print(
        f"diagnose: {jobs:,} jobs in {this['s']:.2f} s (target {TARGET_S:g} s): {verdict}, "
        f"{ratio:.2f} of the target; peak RSS {this['gib']:.2f} GiB; {this['findings']:,} "
        f"findings on {this['jobs']:,} jobs ({this['jobs'] / jobs:.0%}){tail}"
    )


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=TARGET_JOBS, help="synthetic job logs (100,000)")
    ap.add_argument("--runs", type=int, default=3, help="runs of each diagnose; the median (3)")
    ap.add_argument(
        "--baseline-src", type=Path, help="analysis/src of an older iostudy, run beside"
    )
    ap.add_argument(
        "--rank-records",
        type=int,
        default=64,
        help="a file-per-process job's records: its first N ranks' (64)",
    )
    ap.add_argument("--seed", type=int, default=2026, help="the generator's seed (2026)")
    args = ap.parse_args(argv)
    versions = [Version("iostudy", [iostudy_command()])]
    if args.baseline_src:
        try:
            versions.append(baseline_version(args.baseline_src))
        except ValueError as exc:
            print(f"bench-diagnose: error: --baseline-src: {exc}", file=sys.stderr)
            return 2
    print(f"bench-diagnose: {len(os.sched_getaffinity(0))} CPUs available", flush=True)
    with tempfile.TemporaryDirectory(prefix="bench-diagnose-") as tmp:
        store = build_store(Path(tmp) / "store", args.jobs, args.rank_records, args.seed)
        results = measure(versions, store, max(1, args.runs), Path(tmp))
    report(args.jobs, results)
    return 0


if __name__ == "__main__":
    sys.exit(main())
