"""Facility-scale ingest, measured: `make bench-analysis`.

In one run, on one corpus of Darshan logs (built by corpus.py, or given with --corpus):

1. ``iostudy ingest CORPUS --store STORE``: the corpus is a facility log tree (no
   manifest.json). Wall time gives logs/s; memory is the peak of the sum of the resident set
   sizes of the whole process tree (the command and its worker processes), sampled every 50 ms
   from /proc, with the largest single process's peak beside it.
2. PyDarshan's ``python -m darshan job_stats --csv --log_paths_file LIST`` (module POSIX, a
   process pool over all CPUs) on the same logs, measured the same way; its CSV should hold one
   line per log with POSIX records.
3. Steps 1 and 2 again, ``--rounds`` times in all (3), ingest into a fresh store each time: the
   wall times of a shared machine vary by a third from one minute to the next, and alternating
   the two lets a slow spell weigh on both. The figures are the medians; each round's ratio is
   printed too.
4. Ingest again on the unchanged tree, which should find nothing to do: wall time.
5. The figures against the targets: ingest >= 500 logs/s, >= 5x job_stats, <= 1 GiB peak RSS.

Exits non-zero only when a step failed to run; a missed target is printed, not an error.
Benchmarks are never timed assertions in tests. Standard library only (plus the venv's iostudy
and darshan packages the steps run).
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import corpus

TARGET_LOGS_PER_S = 500.0
TARGET_RATIO = 5.0
TARGET_PEAK_RSS = 1 << 30
MIB = 1 << 20
SAMPLE_INTERVAL = 0.05
PAGE_SIZE = os.sysconf("SC_PAGE_SIZE")


# -- memory of a process tree, from /proc ----------------------------------------------------------


def _parent_map() -> dict[int, int]:
    """pid -> parent pid of every process visible in /proc."""
    parents = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as f:
                stat = f.read()
        except OSError:
            continue  # gone meanwhile
        # the command name (field 2) may hold spaces and parentheses: split after the last ")"
        fields = stat[stat.rfind(b")") + 2 :].split()
        parents[int(entry.name)] = int(fields[1])
    return parents


def tree_pids(root: int) -> list[int]:
    """root and all its descendants."""
    children: dict[int, list[int]] = {}
    for pid, ppid in _parent_map().items():
        children.setdefault(ppid, []).append(pid)
    found, todo = [], [root]
    while todo:
        pid = todo.pop()
        found.append(pid)
        todo.extend(children.get(pid, ()))
    return found


def rss_bytes(pid: int) -> int:
    """Resident set size of pid (0 once it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * PAGE_SIZE
    except (OSError, IndexError, ValueError):
        return 0


class TreeMemory(threading.Thread):
    """Samples the RSS of a process tree until stopped: peak sum, peak single process."""

    def __init__(self, root: int, interval: float = SAMPLE_INTERVAL):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_sum = self.peak_single = self.max_procs = self.samples = 0
        self._done = threading.Event()

    def sample(self) -> None:
        pids = tree_pids(self.root)
        sizes = [rss_bytes(p) for p in pids]
        self.samples += 1
        self.peak_sum = max(self.peak_sum, sum(sizes))
        self.peak_single = max(self.peak_single, max(sizes, default=0))
        self.max_procs = max(self.max_procs, sum(s > 0 for s in sizes))

    def run(self) -> None:
        while not self._done.is_set():
            self.sample()
            self._done.wait(self.interval)

    def stop(self) -> None:
        self._done.set()
        self.join()


# -- steps ---------------------------------------------------------------------------------------


@dataclass
class Step:
    name: str
    cmd: list
    returncode: int | None = None
    wall: float = 0.0
    peak_sum: int = 0
    peak_single: int = 0
    max_procs: int = 0
    stdout: Path | None = None
    stderr: Path | None = None
    error: str = ""
    notes: list = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return self.returncode == 0 and not self.error

    def tail(self, lines: int = 15) -> str:
        text = self.stderr.read_text(errors="replace") if self.stderr else ""
        return "\n".join(text.splitlines()[-lines:])


def clean_env() -> dict:
    """This environment without instrumentation: neither step may run under a Darshan runtime."""
    return {
        k: v
        for k, v in os.environ.items()
        if k != "LD_PRELOAD" and not k.startswith(("DARSHAN_", "IOSTUDY_", "DXT_"))
    }


def run_step(name: str, cmd: list, workdir: Path) -> Step:
    """Run cmd with stdout and stderr to files in workdir, timing it and sampling its memory."""
    step = Step(name, [str(c) for c in cmd])
    slug = re.sub(r"\W+", "-", name)
    step.stdout, step.stderr = workdir / f"{slug}.out", workdir / f"{slug}.err"
    print(f"bench: {name}: {' '.join(step.cmd)}", flush=True)
    # the previous step's writes (the corpus's 10,000 files, a store) are flushed first, so that
    # their writeback does not land in this step's time
    os.sync()
    with open(step.stdout, "wb") as out, open(step.stderr, "wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                step.cmd, stdout=out, stderr=err, stdin=subprocess.DEVNULL, env=clean_env()
            )
        except OSError as exc:
            step.error = f"cannot start: {exc}"
            return step
        memory = TreeMemory(proc.pid)
        memory.start()
        step.returncode = proc.wait()
        step.wall = time.perf_counter() - start
        memory.stop()
    step.peak_sum, step.peak_single = memory.peak_sum, memory.peak_single
    step.max_procs = memory.max_procs
    status = "ok" if step.returncode == 0 else f"FAILED (exit status {step.returncode})"
    print(
        f"bench: {name}: {status}, {step.wall:.2f} s, peak RSS {step.peak_sum / MIB:.0f} MiB "
        f"over {step.max_procs} processes ({memory.samples} samples)",
        flush=True,
    )
    if step.returncode != 0:
        print(f"bench: {name}: last lines of stderr:\n{step.tail()}", flush=True)
    return step


def iostudy_command() -> str:
    """The iostudy CLI of the venv running this script, else the one on PATH."""
    beside = Path(sys.executable).parent / "iostudy"  # not resolved: the venv's bin/
    if beside.is_file():
        return str(beside)
    found = shutil.which("iostudy")
    if not found:
        raise FileNotFoundError("no iostudy command: run `make setup`")
    return found


def last_line(path: Path) -> str:
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return lines[-1] if lines else ""


def ingest_counts(step: Step) -> dict:
    """The counts of ingest's last line ('... logs N ingested, N skipped, N quarantined')."""
    line = last_line(step.stdout)
    counts = {}
    for key in ("ingested", "skipped", "quarantined"):
        m = re.search(r"(\d+) " + key, line.rsplit("logs", 1)[-1])
        if m:
            counts[key] = int(m.group(1))
    return counts


def csv_rows(path: Path) -> int:
    """Data lines of job_stats' CSV (the header line not counted)."""
    lines = [ln for ln in path.read_text(errors="replace").splitlines() if ln.strip()]
    return max(0, len(lines) - 1)


# -- report --------------------------------------------------------------------------------------


def verdict(value, target, higher_is_better=True) -> tuple[str, str]:
    """(ratio to target, met?) of a figure."""
    if value is None:
        return "-", "not measured"
    ratio = value / target
    met = value >= target if higher_is_better else value <= target
    return f"{ratio:.2f}", "yes" if met else "NO: target missed"


def print_table(rows: list[tuple]) -> None:
    header = ("figure", "value", "target", "ratio", "met?")
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--logs", type=int, default=10_000, help="corpus size (default 10000)")
    p.add_argument("--corpus", type=Path, help="use this log tree instead of building one")
    p.add_argument("--jobs", type=int, help="passed to `iostudy ingest --jobs` (default: its own)")
    p.add_argument("--shared", type=Path, default=corpus.DEFAULT_SHARED, help="see corpus.py")
    p.add_argument("--runtime-build", type=Path, default=corpus.DEFAULT_RUNTIME_BUILD)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument(
        "--rounds", type=int, default=3, help="ingest, then job_stats, this many times (default 3)"
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (corpus, store)")
    args = p.parse_args(argv)

    cpus = len(os.sched_getaffinity(0))
    print(f"bench: {cpus} CPUs available; python {sys.executable}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="iostudy-bench-ingest-"))
    failed = []
    try:
        if args.corpus:
            tree = args.corpus.resolve()
            if not tree.is_dir():
                print(f"bench: error: {tree} is not a folder", file=sys.stderr)
                return 1
        else:
            tree = tmp / "corpus"
            start = time.perf_counter()
            try:
                corpus.build(
                    tree,
                    args.logs,
                    args.shared,
                    args.runtime_build,
                    seed=args.seed,
                    progress=lambda msg: print(msg, flush=True),
                )
            except (OSError, ValueError, RuntimeError) as exc:
                print(f"bench: error: corpus not built: {exc}", file=sys.stderr)
                return 1
            print(f"bench: corpus built in {time.perf_counter() - start:.1f} s", flush=True)
        logs = sorted(tree.rglob("*.darshan"))
        if not logs:
            print(f"bench: error: no *.darshan under {tree}", file=sys.stderr)
            return 1
        n = len(logs)
        with_posix = 0
        for log in logs:
            try:
                with_posix += corpus.has_posix(log.read_bytes())
            except corpus.LogFormatError:
                pass
        listing = tmp / "logs.txt"
        listing.write_text("".join(f"{log}\n" for log in logs))
        print(f"bench: corpus {tree}: {n} logs, {with_posix} with POSIX data", flush=True)

        # Rounds of ingest (a fresh store each) then job_stats, one after the other, so that a
        # slow spell of a shared machine weighs on both sides; the figures are the medians.
        rounds = []
        for i in range(1, args.rounds + 1):
            ingest = [iostudy_command(), "ingest", tree, "--store", tmp / f"store-{i}"]
            if args.jobs:
                ingest += ["--jobs", args.jobs]
            stats_cmd = [sys.executable, "-m", "darshan", "job_stats", "--csv",
                         "--log_paths_file", listing]  # fmt: skip
            rounds.append((run_step(f"ingest {i}", ingest, tmp),
                           run_step(f"job_stats {i}", stats_cmd, tmp)))  # fmt: skip
        ingests, statses = [r[0] for r in rounds], [r[1] for r in rounds]
        first, stats = ingests[-1], statses[-1]
        second = run_step("ingest again", ingest, tmp) if first.ok else None
        for step in (*ingests, *statses, second):
            if step is not None and not step.ok:
                failed.append(step.name)

        print()
        print(f"corpus: {n} logs ({with_posix} with POSIX data), {cpus} CPUs")
        ingest_wall = statistics.median(s.wall for s in ingests) if all(
            s.ok for s in ingests) else None  # fmt: skip
        stats_wall = statistics.median(s.wall for s in statses) if all(
            s.ok for s in statses) else None  # fmt: skip
        ingest_rate = n / ingest_wall if ingest_wall else None
        stats_rate = n / stats_wall if stats_wall else None
        if ingest_wall:
            counts = ingest_counts(first)
            walls = ", ".join(f"{s.wall:.2f}" for s in ingests)
            print(f"ingest: {ingest_wall:.2f} s = {ingest_rate:.0f} logs/s (median of {walls} s)")
            print(f"  | {last_line(first.stdout)}")
            if counts.get("ingested") != n:
                print(f"ingest: WARNING: {n} logs in the corpus, its counts say {counts or '?'}")
            top = max(ingests, key=lambda s: s.peak_sum)
            print(
                f"ingest: peak RSS {top.peak_sum / MIB:.0f} MiB summed over the process tree "
                f"(up to {top.max_procs} processes), largest process "
                f"{top.peak_single / MIB:.0f} MiB"
            )
        else:
            bad = next(s for s in ingests if not s.ok)
            print(f"ingest: FAILED to run: {bad.error or f'exit status {bad.returncode}'}")
        if second is not None and second.ok:
            counts = ingest_counts(second)
            idle = "" if counts.get("ingested", 0) == 0 else " (WARNING: it ingested logs again)"
            print(f"ingest again (unchanged tree): {second.wall:.2f} s{idle}")
            print(f"  | {last_line(second.stdout)}")
        if stats_wall:
            rows = csv_rows(stats.stdout)
            errors = sum(
                ln.startswith("Error processing")
                for ln in stats.stderr.read_text(errors="replace").splitlines()
            )
            check = "as expected" if rows == with_posix else "MISMATCH"
            walls = ", ".join(f"{s.wall:.2f}" for s in statses)
            print(
                f"job_stats: {stats_wall:.2f} s = {stats_rate:.0f} logs/s (median of {walls} s); "
                f"peak RSS {stats.peak_sum / MIB:.0f} MiB summed (up to {stats.max_procs} "
                f"processes), largest process {stats.peak_single / MIB:.0f} MiB"
            )
            print(
                f"job_stats: CSV has {rows} lines for {with_posix} logs with POSIX data "
                f"({check}); {errors} 'Error processing' lines on stderr"
            )
        else:
            bad = next(s for s in statses if not s.ok)
            print(f"job_stats: FAILED to run: {bad.error or f'exit status {bad.returncode}'}")
        if ingest_wall and stats_wall:
            each = ", ".join(f"{j.wall / i.wall:.2f}x" for i, j in rounds)
            print(f"ratio per round (job_stats / ingest): {each}")

        ratio = ingest_rate / stats_rate if ingest_rate and stats_rate else None
        peak = max(s.peak_sum for s in ingests) if ingest_wall else None
        table = [
            (
                "ingest throughput",
                f"{ingest_rate:.0f} logs/s" if ingest_rate else "-",
                f">= {TARGET_LOGS_PER_S:.0f} logs/s",
                *verdict(ingest_rate, TARGET_LOGS_PER_S),
            ),
            (
                "ingest / job_stats",
                f"{ratio:.2f}x" if ratio else "-",
                f">= {TARGET_RATIO:.0f}x",
                *verdict(ratio, TARGET_RATIO),
            ),
            (
                "ingest peak RSS (tree sum)",
                f"{peak / MIB:.0f} MiB" if peak else "-",
                f"<= {TARGET_PEAK_RSS / MIB:.0f} MiB",
                *verdict(peak, TARGET_PEAK_RSS, higher_is_better=False),
            ),
        ]
        print()
        print_table(table)
        missed = [row[0] for row in table if row[4] != "yes"]
        print()
        if missed:
            print(f"bench: target missed or not measured: {', '.join(missed)}")
        else:
            print("bench: all targets met")
        if failed:
            print(f"bench: error: step(s) failed to run: {', '.join(failed)}", file=sys.stderr)
            return 1
        return 0
    finally:
        if args.keep:
            print(f"bench: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
