"""Facility-scale ingest, measured: `make bench-analysis`.

In one run, on one corpus of Darshan logs (built by corpus.py, or given with --corpus):

1. ``iostudy ingest CORPUS --store STORE``: the corpus is a facility log tree (no
   manifest.json). Wall time gives logs/s; memory is the peak of the sum of the resident set
   sizes of the whole process tree (the command and its worker processes), sampled every 50 ms
   from /proc, with the largest single process's peak beside it.
2. PyDarshan's ``python -m darshan job_stats --csv --log_paths_file LIST`` (module POSIX, a
   process pool over all CPUs) on the same logs, measured the same way; its CSV should hold one
   line per log with POSIX records.
3. The damaged-log cost: ``iostudy ingest`` of a second corpus, ``--damaged`` logs (400)
   damaged by damage.py (cut short inside a region, the job region zeroed, a deflate stream
   changed), alone into a fresh store, and of a tree of one good log (the start-up: Python, the
   imports, the pool, the commit). Per log, net of the start-up, a damaged log's wall time over
   a good log's of the same round.
4. Steps 1 to 3 again, ``--rounds`` times in all (3), ingest into a fresh store each time: the
   wall times of a shared machine vary by a third from one minute to the next, and alternating
   the steps lets a slow spell weigh on all of them. The figures are the medians; each round's
   ratios are printed too.
5. Ingest again on the unchanged tree, which should find nothing to do: wall time.
6. The trace step: ``iostudy ingest`` of a corpus with DXT traces (tracecorpus.py: 200 copies
   of a 4,000-segment trace and 4 logs of 3,000,000 segments, each cut to ingest's bound of
   1,000,000), once: its peak memory, as step 1 measures it. The corpus of steps 1 to 5 has
   no DXT (corpus.py drops the test logs' traces): the speed targets are for logs without DXT.
7. The figures against the targets: ingest >= 500 logs/s, >= 5x job_stats, <= 1 GiB peak RSS
   (with and without DXT), a damaged log <= 2x a good log.

With ``--baseline-src DIR`` (e.g. analysis/src of a git worktree of an older commit), every
ingest step is run for that iostudy too (this Python, PYTHONPATH=DIR), right after this tree's,
on the same logs (the damaged ones: the first ``--baseline-damaged``, 100), and the table gives
both columns and their ratio.

Exits non-zero only when a step failed to run; a missed target is printed, not an error.
Benchmarks are never timed assertions in tests. Standard library only (plus the venv's iostudy
and darshan packages the steps run; damage.py builds on corpus.py).
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
import damage
import tracecorpus

TARGET_LOGS_PER_S = 500.0
TARGET_RATIO = 5.0
TARGET_PEAK_RSS = 1 << 30
TARGET_DAMAGED_RATIO = 2.0  # a damaged log's cost over a good log's, start-up taken off both
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


def pss_bytes(pid: int) -> int:
    """Proportional set size of pid: its private pages, and its share of each page it shares
    with other processes (0 once it is gone). Summed over a process tree, the memory the tree
    holds; a fork's inherited pages are counted once, not in every process as RSS counts them.
    Reading it walks the page tables (about 2 ms for a 400 MiB process)."""
    try:
        with open(f"/proc/{pid}/smaps_rollup", "rb") as f:
            for line in f:
                if line.startswith(b"Pss:"):
                    return int(line.split()[1]) * 1024
    except (OSError, IndexError, ValueError):
        pass
    return 0


class TreeMemory(threading.Thread):
    """Samples the RSS of a process tree until stopped: peak sum, peak single process, and the
    PSS sum at each new peak of the RSS sum (PSS costs too much to read every 50 ms)."""

    def __init__(self, root: int, interval: float = SAMPLE_INTERVAL):
        super().__init__(daemon=True)
        self.root, self.interval = root, interval
        self.peak_sum = self.peak_single = self.max_procs = self.samples = self.peak_pss = 0
        self._done = threading.Event()

    def sample(self) -> None:
        pids = tree_pids(self.root)
        sizes = [rss_bytes(p) for p in pids]
        self.samples += 1
        if sum(sizes) > self.peak_sum:
            self.peak_pss = max(self.peak_pss, sum(pss_bytes(p) for p in pids))
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
    peak_pss: int = 0
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


def run_step(name: str, cmd: list, workdir: Path, env: dict | None = None) -> Step:
    """Run cmd with stdout and stderr to files in workdir, timing it and sampling its memory;
    env: variables to set on top of clean_env()."""
    step = Step(name, [str(c) for c in cmd])
    slug = re.sub(r"\W+", "-", name)
    step.stdout, step.stderr = workdir / f"{slug}.out", workdir / f"{slug}.err"
    shown = "".join(f"{k}={v} " for k, v in (env or {}).items())
    print(f"bench: {name}: {shown}{' '.join(step.cmd)}", flush=True)
    # the previous step's writes (the corpus's 10,000 files, a store) are flushed first, so that
    # their writeback does not land in this step's time
    os.sync()
    with open(step.stdout, "wb") as out, open(step.stderr, "wb") as err:
        start = time.perf_counter()
        try:
            proc = subprocess.Popen(
                step.cmd,
                stdout=out,
                stderr=err,
                stdin=subprocess.DEVNULL,
                env={**clean_env(), **(env or {})},
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
    step.peak_pss, step.max_procs = memory.peak_pss, memory.max_procs
    status = "ok" if step.returncode == 0 else f"FAILED (exit status {step.returncode})"
    print(
        f"bench: {name}: {status}, {step.wall:.2f} s, peak RSS {step.peak_sum / MIB:.0f} MiB "
        f"(PSS {step.peak_pss / MIB:.0f} MiB) over {step.max_procs} processes "
        f"({memory.samples} samples)",
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


def print_table(header: tuple, rows: list[tuple]) -> None:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    for row in [header, tuple("-" * w for w in widths), *rows]:
        print("  ".join(str(c).ljust(w) for c, w in zip(row, widths, strict=True)).rstrip())


# -- the versions of iostudy measured ------------------------------------------------------------


@dataclass
class Version:
    """An iostudy to measure: the command that runs its CLI, and the variables it needs."""

    label: str  # "iostudy" (this tree's), "baseline"
    cli: list
    env: dict = field(default_factory=dict)

    def ingest(self, tree: Path, store: Path, jobs: int | None) -> list:
        cmd = [*self.cli, "ingest", tree, "--store", store]
        return cmd + ["--jobs", jobs] if jobs else cmd


def baseline_version(src: Path) -> Version:
    """The iostudy whose package is src/iostudy (e.g. analysis/src of a git worktree of an older
    commit), run by this venv's Python with src first on PYTHONPATH. Raises ValueError unless
    that Python imports it from there."""
    src = src.resolve()
    if not (src / "iostudy" / "__init__.py").is_file():
        raise ValueError(f"{src} holds no iostudy package (give the folder holding iostudy/)")
    env = {"PYTHONPATH": str(src)}
    probe = subprocess.run(
        [sys.executable, "-c", "import iostudy; print(iostudy.__file__)"],
        env={**clean_env(), **env},
        capture_output=True,
        text=True,
        check=False,
    )
    where = Path(probe.stdout.strip() or "?").resolve()
    if probe.returncode != 0 or not where.is_relative_to(src):
        raise ValueError(f"PYTHONPATH={src} imports iostudy from {where}: {probe.stderr.strip()}")
    print(f"bench: baseline: iostudy imported from {where}", flush=True)
    return Version("baseline", [sys.executable, "-m", "iostudy.cli.cli"], env)


def copy_subtree(paths: list[Path], root: Path, out: Path) -> None:
    """Copy paths (files under root) to the same places under out."""
    for path in paths:
        dest = out / path.relative_to(root)
        dest.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, dest)


def median_of(steps: list) -> float | None:
    return statistics.median(s.wall for s in steps) if steps and all(s.ok for s in steps) else None


def paired_ratios(ours: list, theirs: list) -> list[float]:
    """Per round, their wall time over ours (our throughput over theirs); none if a step
    failed."""
    if not ours or not all(s.ok for s in [*ours, *theirs]):
        return []
    return [b.wall / a.wall for a, b in zip(ours, theirs, strict=True)]


def fmt(value, spec: str, unit: str = "") -> str:
    return "-" if value is None else f"{value:{spec}}{unit}"


@dataclass
class Figures:
    """One version's figures: medians over the rounds (the highest peak memory)."""

    ingest_wall: float | None = None
    rate: float | None = None
    peak: int | None = None  # RSS, summed over the process tree
    peak_pss: int | None = None  # PSS, summed over the process tree, at the RSS peak
    peak_single: int = 0
    max_procs: int = 0
    ratio: float | None = None  # throughput / job_stats', median of the rounds' ratios
    ratios: list = field(default_factory=list)
    startup: float | None = None  # wall of ingesting a one-log tree
    damaged_gross: float | None = None  # s per damaged log, start-up included
    damaged_net: float | None = None  # s per damaged log, start-up taken off
    good_net: float | None = None  # s per good log, start-up taken off
    damaged_ratio: float | None = None  # damaged_net / good_net, median of the rounds' ratios
    damaged_ratios: list = field(default_factory=list)


def figures(n, ingests, statses, ones, damaged, n_damaged) -> Figures:
    f = Figures(ingest_wall=median_of(ingests))
    if f.ingest_wall:
        f.rate = n / f.ingest_wall
        top = max(ingests, key=lambda s: s.peak_sum)
        f.peak, f.peak_single, f.max_procs = top.peak_sum, top.peak_single, top.max_procs
        f.peak_pss = max(s.peak_pss for s in ingests)
        if median_of(statses):
            f.ratios = [j.wall / i.wall for i, j in zip(ingests, statses, strict=True)]
            f.ratio = statistics.median(f.ratios)
    f.startup = median_of(ones)
    if f.ingest_wall and f.startup and median_of(damaged) and n_damaged:
        f.damaged_gross = median_of(damaged) / n_damaged
        per_round = []
        for good, one, bad in zip(ingests, ones, damaged, strict=True):
            good_net = (good.wall - one.wall) / n
            bad_net = (bad.wall - one.wall) / n_damaged
            per_round.append((bad_net, good_net))
        f.damaged_net = statistics.median(b for b, _ in per_round)
        f.good_net = statistics.median(g for _, g in per_round)
        f.damaged_ratios = [b / g if g > 0 else float("inf") for b, g in per_round]
        f.damaged_ratio = statistics.median(f.damaged_ratios)
    return f


def trace_step(tmp: Path, sizes, version: Version, jobs: int | None) -> Step | None:
    """Ingest of the trace corpus (tracecorpus.py; ``sizes``: its copies, big logs and their
    segments), measured as the other steps; None when there is none."""
    copies, big, segments = sizes
    if not copies + big:
        return None
    start = time.perf_counter()
    n = tracecorpus.build(tmp / "traces", copies, big, segments)
    print(f"bench: trace corpus: {n} logs built in {time.perf_counter() - start:.1f} s", flush=True)
    cmd = version.ingest(tmp / "traces", tmp / "store-traces", jobs)
    step = run_step(f"{version.label} ingest with DXT", cmd, tmp, version.env)
    if step.ok:
        print(f"  | {last_line(step.stdout)}")
        print(
            f"bench: with DXT: largest process {step.peak_single / MIB:.0f} MiB, PSS "
            f"{step.peak_pss / MIB:.0f} MiB summed",
            flush=True,
        )
    return step


def main(argv=None) -> int:  # noqa: C901
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
    p.add_argument(
        "--damaged",
        type=int,
        default=400,
        help="damaged logs (damage.py) ingested alone each round; 0: none (default 400)",
    )
    p.add_argument(
        "--baseline-src",
        type=Path,
        metavar="DIR",
        help="also measure the iostudy whose package is DIR/iostudy (e.g. analysis/src of a git "
        "worktree of an older commit), run by this Python with PYTHONPATH=DIR",
    )
    p.add_argument(
        "--baseline-damaged",
        type=int,
        default=100,
        metavar="N",
        help="the baseline ingests the first N damaged logs only (default 100: an older iostudy "
        "may take about a second per damaged log)",
    )
    p.add_argument(
        "--trace-logs",
        type=int,
        nargs=3,
        default=(200, 4, 3_000_000),
        metavar=("COPIES", "BIG", "SEGMENTS"),
        help="the trace step's corpus: COPIES of a 4,000-segment trace and BIG logs of SEGMENTS "
        "segments (default 200 4 3000000); 0 0 0: no trace step",
    )
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (corpus, store)")
    args = p.parse_args(argv)

    cpus = len(os.sched_getaffinity(0))
    print(f"bench: {cpus} CPUs available; python {sys.executable}", flush=True)
    versions = [Version("iostudy", [iostudy_command()])]
    if args.baseline_src:
        try:
            versions.append(baseline_version(args.baseline_src))
        except ValueError as exc:
            print(f"bench: error: --baseline-src: {exc}", file=sys.stderr)
            return 1
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

        # The damaged corpus, and a tree of one good log: its ingest is the start-up cost (Python,
        # imports, the pool, the store's commit) that is taken off the per-log figures.
        damaged_trees = {}
        if args.damaged > 0:
            try:
                written = damage.build(
                    tmp / "damaged",
                    args.damaged,
                    args.shared,
                    args.seed,
                    progress=lambda msg: print(f"bench: {msg}", flush=True),
                )
            except (OSError, ValueError) as exc:
                print(f"bench: error: damaged corpus not built: {exc}", file=sys.stderr)
                return 1
            damaged_trees["iostudy"] = (tmp / "damaged", len(written))
            if len(versions) > 1:
                m = min(len(written), max(1, args.baseline_damaged))
                copy_subtree([w[0] for w in written[:m]], tmp / "damaged", tmp / "damaged-base")
                damaged_trees["baseline"] = (tmp / "damaged-base", m)
                print(f"bench: the baseline ingests the first {m} damaged logs", flush=True)
            copy_subtree([logs[0]], tree, tmp / "one-log")

        # Rounds of ingest (a fresh store each; each version in turn) then job_stats, then the
        # damaged logs and the one-log tree, one after the other, so that a slow spell of a
        # shared machine weighs on every side; the figures are the medians.
        steps = {(v.label, kind): [] for v in versions for kind in ("ingest", "damaged", "one")}
        statses = []
        for i in range(1, args.rounds + 1):
            for v in versions:
                cmd = v.ingest(tree, tmp / f"store-{v.label}-{i}", args.jobs)
                steps[v.label, "ingest"].append(run_step(f"{v.label} ingest {i}", cmd, tmp, v.env))
            stats_cmd = [
                sys.executable,
                "-m",
                "darshan",
                "job_stats",
                "--csv",
                "--log_paths_file",
                listing,
            ]
            statses.append(run_step(f"job_stats {i}", stats_cmd, tmp))
            if damaged_trees:
                for v in versions:
                    dtree = damaged_trees[v.label][0]
                    cmd = v.ingest(dtree, tmp / f"dstore-{v.label}-{i}", args.jobs)
                    steps[v.label, "damaged"].append(
                        run_step(f"{v.label} damaged {i}", cmd, tmp, v.env)
                    )
                    cmd = v.ingest(tmp / "one-log", tmp / f"ostore-{v.label}-{i}", args.jobs)
                    steps[v.label, "one"].append(
                        run_step(f"{v.label} one log {i}", cmd, tmp, v.env)
                    )
        traced = trace_step(tmp, args.trace_logs, versions[0], args.jobs)
        agains = {}
        for v in versions:
            last = steps[v.label, "ingest"][-1]
            if last.ok:
                cmd = v.ingest(tree, tmp / f"store-{v.label}-{args.rounds}", args.jobs)
                agains[v.label] = run_step(f"{v.label} ingest again", cmd, tmp, v.env)
        traces = [traced] if traced else []
        for step in [
            *statses,
            *traces,
            *agains.values(),
            *(s for ss in steps.values() for s in ss),
        ]:
            if not step.ok:
                failed.append(step.name)

        print()
        print(f"corpus: {n} logs ({with_posix} with POSIX data), {cpus} CPUs")
        stats_wall = median_of(statses)
        stats_rate = n / stats_wall if stats_wall else None
        figs = {}
        for v in versions:
            ingests = steps[v.label, "ingest"]
            nd = damaged_trees.get(v.label, (None, 0))[1]
            f = figs[v.label] = figures(
                n, ingests, statses, steps[v.label, "one"], steps[v.label, "damaged"], nd
            )
            name = v.label if len(versions) > 1 else "ingest"
            if f.ingest_wall:
                first = ingests[-1]
                counts = ingest_counts(first)
                walls = ", ".join(f"{s.wall:.2f}" for s in ingests)
                print(f"{name}: {f.ingest_wall:.2f} s = {f.rate:.0f} logs/s (median of {walls} s)")
                print(f"  | {last_line(first.stdout)}")
                if counts.get("ingested") != n:
                    print(
                        f"{name}: WARNING: {n} logs in the corpus, its counts say {counts or '?'}"
                    )
                print(
                    f"{name}: peak RSS {f.peak / MIB:.0f} MiB summed over the process tree "
                    f"(up to {f.max_procs} processes), largest process "
                    f"{f.peak_single / MIB:.0f} MiB; PSS {f.peak_pss / MIB:.0f} MiB summed"
                )
            else:
                bad = next(s for s in ingests if not s.ok)
                print(f"{name}: FAILED to run: {bad.error or f'exit status {bad.returncode}'}")
            again = agains.get(v.label)
            if again is not None and again.ok:
                counts = ingest_counts(again)
                idle = (
                    "" if counts.get("ingested", 0) == 0 else " (WARNING: it ingested logs again)"
                )
                print(f"{name} again (unchanged tree): {again.wall:.2f} s{idle}")
                print(f"  | {last_line(again.stdout)}")
            if f.ratios:
                each = ", ".join(f"{r:.2f}x" for r in f.ratios)
                print(f"{name}: ratio per round (job_stats / ingest): {each}")
            if nd and f.damaged_ratio is not None:
                bad = steps[v.label, "damaged"][-1]
                counts = ingest_counts(bad)
                walls = ", ".join(f"{s.wall:.2f}" for s in steps[v.label, "damaged"])
                ones = ", ".join(f"{s.wall:.2f}" for s in steps[v.label, "one"])
                print(f"{name}: {nd} damaged logs alone: {walls} s; one good log alone: {ones} s")
                print(f"  | {last_line(bad.stdout)}")
                if counts.get("quarantined", 0) + counts.get("ingested", 0) != nd:
                    print(f"{name}: WARNING: {nd} damaged logs, its counts say {counts or '?'}")
                each = ", ".join(f"{r:.1f}x" for r in f.damaged_ratios)
                print(
                    f"{name}: per damaged log {f.damaged_net * 1e3:.1f} ms net of start-up "
                    f"({f.damaged_gross * 1e3:.1f} ms gross), per good log "
                    f"{f.good_net * 1e3:.2f} ms net: ratio per round {each}"
                )
            elif nd:
                print(f"{name}: damaged-log cost not measured (a step failed)")
        if stats_wall:
            stats = statses[-1]
            rows = csv_rows(stats.stdout)
            errors = sum(
                ln.startswith("Error processing")
                for ln in stats.stderr.read_text(errors="replace").splitlines()
            )
            check = "as expected" if rows == with_posix else "MISMATCH"
            walls = ", ".join(f"{s.wall:.2f}" for s in statses)
            top = max(statses, key=lambda s: s.peak_sum)
            print(
                f"job_stats: {stats_wall:.2f} s = {stats_rate:.0f} logs/s (median of {walls} s); "
                f"peak RSS {top.peak_sum / MIB:.0f} MiB summed (up to {top.max_procs} "
                f"processes), largest process {top.peak_single / MIB:.0f} MiB"
            )
            print(
                f"job_stats: CSV has {rows} lines for {with_posix} logs with POSIX data "
                f"({check}); {errors} 'Error processing' lines on stderr"
            )
        else:
            bad = next(s for s in statses if not s.ok)
            print(f"job_stats: FAILED to run: {bad.error or f'exit status {bad.returncode}'}")

        f = figs["iostudy"]
        rows = [
            (
                "ingest throughput",
                fmt(f.rate, ".0f", " logs/s"),
                f">= {TARGET_LOGS_PER_S:.0f} logs/s",
                *verdict(f.rate, TARGET_LOGS_PER_S),
            ),
            (
                "ingest / job_stats",
                fmt(f.ratio, ".2f", "x"),
                f">= {TARGET_RATIO:.0f}x",
                *verdict(f.ratio, TARGET_RATIO),
            ),
            (
                "ingest peak RSS (tree sum)",
                fmt(f.peak and f.peak / MIB, ".0f", " MiB"),
                f"<= {TARGET_PEAK_RSS / MIB:.0f} MiB",
                *verdict(f.peak, TARGET_PEAK_RSS, higher_is_better=False),
            ),
            (
                "ingest peak PSS (tree sum)",
                fmt(f.peak_pss and f.peak_pss / MIB, ".0f", " MiB"),
                "",
                "",
                "",
            ),
        ]
        if damaged_trees:
            rows += [
                (
                    "damaged log, net of start-up",
                    fmt(f.damaged_net and f.damaged_net * 1e3, ".1f", " ms"),
                    "",
                    "",
                    "",
                ),
                (
                    "damaged log / good log",
                    fmt(f.damaged_ratio, ".1f", "x"),
                    f"<= {TARGET_DAMAGED_RATIO:.0f}x",
                    *verdict(f.damaged_ratio, TARGET_DAMAGED_RATIO, higher_is_better=False),
                ),
            ]
        if traced:
            peak = traced.peak_sum if traced.ok else None
            rows.append(
                (
                    "with DXT: peak RSS (tree sum)",
                    fmt(peak and peak / MIB, ".0f", " MiB"),
                    f"<= {TARGET_PEAK_RSS / MIB:.0f} MiB",
                    *verdict(peak, TARGET_PEAK_RSS, higher_is_better=False),
                )
            )
        header = ("figure", "value", "target", "ratio", "met?")
        if len(versions) > 1:
            b = figs["baseline"]
            base = [
                fmt(b.rate, ".0f", " logs/s"),
                fmt(b.ratio, ".2f", "x"),
                fmt(b.peak and b.peak / MIB, ".0f", " MiB"),
                fmt(b.peak_pss and b.peak_pss / MIB, ".0f", " MiB"),
                fmt(b.damaged_net and b.damaged_net * 1e3, ".1f", " ms"),
                fmt(b.damaged_ratio, ".1f", "x"),
            ]
            pairs = [
                (f.rate, b.rate),
                (f.ratio, b.ratio),
                (f.peak, b.peak),
                (f.peak_pss, b.peak_pss),
                (f.damaged_net, b.damaged_net),
                (f.damaged_ratio, b.damaged_ratio),
            ]
            change = [fmt(a / z if a and z else None, ".2f", "x") for a, z in pairs]
            # throughput: each round's pair (run back to back) compared, then their median, so
            # that a slow spell of the machine during one round weighs on both sides of one pair
            paired = paired_ratios(steps["iostudy", "ingest"], steps["baseline", "ingest"])
            if paired:
                each = ", ".join(f"{r:.2f}x" for r in paired)
                print(f"iostudy/baseline throughput per round: {each}")
                change[0] = fmt(statistics.median(paired), ".2f", "x (paired)")
            # the trace step is this tree's only (it comes last): no baseline column
            measured = 6 if damaged_trees else 4  # base's figures this run has rows of
            beside = list(zip(base, change, strict=True))[:measured] + [("-", "-")] * len(rows)
            rows = [(r[0], r[1], *beside[k], *r[2:]) for k, r in enumerate(rows)]
            header = ("figure", "iostudy", "baseline", "iostudy/baseline", *header[2:])
        print()
        print_table(header, rows)
        missed = [row[0] for row in rows if row[-1] not in ("yes", "")]
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
