"""What the regression judgement of ``iostudy compare`` catches and what it falsely flags, on real
runs with real slowdowns: ``make bench-compare`` (root).

1. An ext4 file system on a loop device (ci/kernel_limits.py, shared with the component tests),
   whose writes from the benchmark's cgroup the kernel's block throttle holds to ``--base-mib-s``
   (50 MiB/s), so that the disk, not the page cache, is measured.
2. A **run** is ``--repetitions`` (5) executions of ``dd if=/dev/urandom oflag=direct
   conv=notrunc,fsync`` writing ``--mib`` (48) MiB into one file, each about 1 s at 50 MiB/s;
   a repetition's value is MiB over its wall time (MiB/s), a run's values are one series point as
   a campaign's repetitions are. /dev/urandom makes the writer spend CPU (about a tenth of its
   wall time) as an application producing its data does, so that a CPU quota can slow it. A
   write of about 1 s: the throttle (cgroup v1 here) grants whole time slices, so that shorter
   ones measure one of two rates (16 MiB under a 45 MiB/s limit: 40 or 52 MiB/s, never 45),
   while 48 to 64 MiB follow the limit (45: -9 %, 37.5: -25 %, 25: -50 %).
3. The **quiet history** is one sequence of quiet runs, as a nightly campaign's is: ``--quiet``
   (10) first, then ``--fresh`` (3) more before each trial. A **trial** branches from the last
   ``--quiet`` quiet runs: each slowdown case in turn (the order rotated from trial to trial),
   the throttle lowered for it and set back after: 50 % and 25 % (one slowed run each: judged
   at the first), 10 % (three slowed runs: flagged within three) and a CPU quota (cgroup cpu.max
   / cpu.cfs_quota_us at half the CPU share the quiet runs used: three slowed runs). Each case
   is judged as the quiet history + its own slowed runs, never after another case's.
4. Every run goes through iostudy's own path: perf and runs tables as the store holds them (a
   perf row per repetition, unit MiB/s, no reference), ``compare.results_of`` then
   ``compare.judge``. Each judgement is of the latest run of a series cut where a nightly
   campaign would have stopped (every quiet run with the quiet runs before it; quiet history +
   slowed runs 1..k), so that a judge looking at the whole history never sees the future.
5. Counted: a detection is verdict "regression" on the slowed run (the first for 25 % and 50 %,
   any of the three for 10 % and the CPU quota); a false alarm is verdict "regression" on a
   quiet run, over the quiet runs judged (those with enough history: not "not judged" or the
   old judge's "no baseline").

Trials stop when ``--minutes`` (18) are spent, so that the whole takes at most 20 minutes. The
last line: ``detected 25%: a/b, 50%: c/d, 10% within 3 runs: e/f; false alarms: g/h``. A missed
target is printed, not an error; the exit status is non-zero only when a step failed to run
(without root: "not measured", status 0, as bench-runtime's ext4 run, so that make bench goes on).
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from iostudy.metrics import compare

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ci"))
from kernel_limits import loop_filesystem, write_throttle  # noqa: E402

# case -> (throughput kept: the throttle's share of the base rate, or None for the CPU quota,
# slowed runs, runs within which a flag counts)
CASES = {"50%": (0.50, 1, 1), "25%": (0.75, 1, 1), "10%": (0.90, 3, 3), "cpu": (None, 3, 3)}
TARGETS = {"50%": 0.90, "25%": 0.90, "10%": 0.80}  # detected in at least this share of trials
FALSE_ALARMS = 0.05  # at most this share of the quiet runs judged
NOT_JUDGED = ("not judged", "no baseline")  # the new judge's and the old one's


@dataclass
class Run:
    """One run: its repetitions' values (MiB/s), when it started, its CPU seconds."""

    values: list[float]
    started: dt.datetime
    cpu_s: float


@dataclass
class Trial:
    """The quiet runs it branches from (the history's last --quiet) and each case's runs."""

    quiet: list[Run]
    slowed: dict[str, list[Run]] = field(default_factory=dict)
    cpu_share: float = math.nan


@dataclass
class Measured:
    """Every quiet run in order, and the trials that branch from them."""

    quiet: list[Run] = field(default_factory=list)
    trials: list[Trial] = field(default_factory=list)


class Bench:
    """The benchmark's target: the mounted file system and its limits."""

    def __init__(self, mount: Path, limits, args):
        self.file, self.limits, self.args = mount / "bench.dat", limits, args

    def repetition(self) -> tuple[float, float]:
        """One dd: (MiB/s over its wall time, its CPU seconds)."""
        mib = self.args.mib
        cmd = ["dd", "if=/dev/urandom", f"of={self.file}", "bs=1M", f"count={mib}"]
        cmd += ["oflag=direct", "conv=notrunc,fsync", "status=none"]
        t0 = time.monotonic()
        proc = subprocess.Popen(cmd, preexec_fn=self.limits)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:  # Ctrl-C or a kill: no dd left in the cgroup it must remove
            proc.kill()
            proc.wait()
            raise
        wall = time.monotonic() - t0
        if os.waitstatus_to_exitcode(status) != 0:
            raise RuntimeError(f"{' '.join(cmd)} failed (status {status})")
        return mib / wall, usage.ru_utime + usage.ru_stime

    def run(self) -> Run:
        started = dt.datetime.now(dt.timezone.utc)
        reps = [self.repetition() for _ in range(self.args.repetitions)]
        return Run([r[0] for r in reps], started, sum(r[1] for r in reps))

    def slowed(self, case: str, quiet: list[Run]) -> tuple[list[Run], float]:
        """The case's slowed runs, the limits set back after; and the CPU share it allowed."""
        kept, runs, _ = CASES[case]
        share = math.nan
        try:
            if kept is None:
                wall = sum(
                    len(r.values) * self.args.mib / statistics.median(r.values) for r in quiet
                )
                share = max(0.01, sum(r.cpu_s for r in quiet) / wall / 2)
                self.limits.cpu_share(share)
            else:
                self.limits.write_rate(self.args.base_mib_s * kept)
            return [self.run() for _ in range(runs)], share
        finally:
            self.limits.write_rate(self.args.base_mib_s)
            self.limits.cpu_share(None)

    def trial(self, number: int, measured: Measured) -> Trial:
        fresh = self.args.quiet if not measured.quiet else self.args.fresh
        measured.quiet += [self.run() for _ in range(fresh)]
        trial = Trial(measured.quiet[-self.args.quiet :])
        order = list(CASES)
        order = order[number % len(order) :] + order[: number % len(order)]
        for case in order:
            trial.slowed[case], share = self.slowed(case, trial.quiet)
            if case == "cpu":
                trial.cpu_share = share
        return trial


def series_rows(name: str, runs: list[Run]) -> tuple[list[dict], list[dict]]:
    """The perf rows (one per repetition) and runs rows of one series, as the store holds them:
    a system of its own (``name``), so that judge keeps it apart from every other series."""
    perf, rows = [], []
    for i, run in enumerate(runs):
        run_id = f"{name}/r{i:02d}"
        rows.append({"run_id": run_id, "system": name, "started": run.started, "site": None})
        for rep, value in enumerate(run.values):
            perf.append(
                {
                    "run_id": run_id,
                    "system": name,
                    "partition": "loop",
                    "environ": "builtin",
                    "check": "dd_direct_check",
                    "parameters": f'{{"oflag": "direct", "repetition": {rep}}}',
                    "variable": "write_mib_s",
                    "value": value,
                    "unit": "MiB/s",
                    "reference": math.nan,
                    "lower": math.nan,
                    "upper": math.nan,
                    "num_tasks": 1,
                    "num_tasks_per_node": 1,
                }
            )
    return perf, rows


# the runs a judgement of the latest can look at: its window and the runs judged with it
SEEN = compare.WINDOW + compare.TRAILING


def cuts(measured: Measured) -> list[tuple[str, str, int, list[Run]]]:
    """Every judgement asked: (trial's name, case, runs, the series cut there): each quiet run
    with the quiet runs before it, and each trial's case: its quiet runs + its first k slowed
    runs."""
    out = []
    for n in range(1, len(measured.quiet) + 1):
        out.append(("quiet", "quiet", n, measured.quiet[max(0, n - SEEN) : n]))
    for t, trial in enumerate(measured.trials):
        for case, runs in trial.slowed.items():
            for k in range(1, len(runs) + 1):
                out.append((f"t{t:02d}", case, k, trial.quiet + runs[:k]))
    return out


def judged(measured: Measured) -> pd.DataFrame:
    """Each cut's latest run as compare.judge sees it: trial, case, k, verdict, change_pct."""
    perf, runs, keys = [], [], []
    for trial, case, k, series in cuts(measured):
        name = f"{trial}-{case}-{k}"
        p, r = series_rows(name, series)
        perf += p
        runs += r
        keys.append({"system": name, "trial": trial, "case": case, "k": k})
    table = compare.results_of(pd.DataFrame(perf), pd.DataFrame(runs))
    out = compare.judge(table)
    out = out[out["latest"]][["system", "verdict", "change_pct", "value"]]
    return pd.DataFrame(keys).merge(out, on="system")


def wilson(hits: int, n: int) -> str:
    """The 95 % Wilson interval of hits/n, in %."""
    if n == 0:
        return "-"
    z, p = 1.96, hits / n
    mid = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return f"{100 * max(0, mid - half):.0f}..{100 * min(1, mid + half):.0f} %"


def score(verdicts: pd.DataFrame) -> dict[str, tuple[int, int]]:
    """case -> (flagged, out of): a trial per slowdown case, a judged quiet run for quiet."""
    flag = verdicts["verdict"] == "regression"
    out = {}
    for case, (_, _, within) in CASES.items():
        rows = verdicts[(verdicts["case"] == case) & (verdicts["k"] <= within)]
        hit = flag[rows.index].groupby(rows["trial"]).any()
        out[case] = (int(hit.sum()), len(hit))
        if within > 1:
            first = flag[rows.index][rows["k"] == 1]
            out[f"{case} first"] = (int(first.sum()), len(first))
    quiet = verdicts[(verdicts["case"] == "quiet") & ~verdicts["verdict"].isin(NOT_JUDGED)]
    out["quiet"] = (int(flag[quiet.index].sum()), len(quiet))
    return out


def measured_change(trials: list[Trial], case: str) -> float:
    """The median over trials of the case's first slowed run against its quiet runs (% of the
    quiet median of run medians)."""
    changes = []
    for trial in trials:
        quiet = statistics.median(statistics.median(r.values) for r in trial.quiet)
        slowed = statistics.median(trial.slowed[case][0].values)
        changes.append(100 * (slowed - quiet) / quiet)
    return statistics.median(changes)


def table(trials: list[Trial], scores: dict[str, tuple[int, int]], args) -> list[str]:
    """The per-case results as a Markdown table (the one analysis/README.md holds)."""
    lines = [
        "| case | limit | change of the 1st slowed run (median) | flagged | share (95 % interval)"
        " | target | met |",
        "|---|---|---|---|---|---|---|",
    ]
    for case, (kept, _, within) in CASES.items():
        limit = (
            f"write throttle {args.base_mib_s * kept:g} MiB/s"
            if kept is not None
            else f"CPU quota {100 * statistics.median(t.cpu_share for t in trials):.1f} % of a CPU"
        )
        for key, when in ((case, within), (f"{case} first", 1)):
            if key not in scores:
                continue
            hits, n = scores[key]
            target = TARGETS.get(case) if when == within else None
            met = "-" if target is None or n == 0 else "yes" if hits >= target * n else "no"
            lines.append(
                f"| {case} ({'at the 1st run' if when == 1 else f'within {when} runs'}) | {limit}"
                f" | {measured_change(trials, case):+.1f} % | {hits}/{n} | {wilson(hits, n)}"
                f" | {f'>= {100 * target:.0f} %' if target else '-'} | {met} |"
            )
    hits, n = scores["quiet"]
    met = "yes" if n and hits <= FALSE_ALARMS * n else "no"
    lines.append(
        f"| quiet (false alarms) | write throttle {args.base_mib_s:g} MiB/s | - | {hits}/{n}"
        f" | {wilson(hits, n)} | <= {100 * FALSE_ALARMS:.0f} % | {met} |"
    )
    return lines


def last_line(scores: dict[str, tuple[int, int]]) -> str:
    a, b = scores["25%"]
    c, d = scores["50%"]
    e, f = scores["10%"]
    g, h = scores["quiet"]
    return f"detected 25%: {a}/{b}, 50%: {c}/{d}, 10% within 3 runs: {e}/{f}; false alarms: {g}/{h}"


def measure(args) -> Measured:
    """Trials until --trials are done or --minutes spent (a trial's time, measured, must fit)."""
    deadline = time.monotonic() + 60 * args.minutes
    measured = Measured()
    trials = measured.trials
    with tempfile.TemporaryDirectory(prefix="bench-compare-", dir=args.tmp) as folder:
        with (
            loop_filesystem(Path(folder), args.mib * 4) as mount,
            write_throttle(mount, args.base_mib_s, cpu=True) as limits,
        ):
            bench = Bench(mount, limits, args)
            bench.run()  # the file's blocks allocated before anything is measured
            longest = 0.0
            while len(trials) < args.trials and time.monotonic() + longest < deadline:
                t0 = time.monotonic()
                trials.append(bench.trial(len(trials), measured))
                longest = max(longest, time.monotonic() - t0)
                print(
                    f"bench-compare: trial {len(trials)}/{args.trials} in "
                    f"{time.monotonic() - t0:.1f} s",
                    flush=True,
                )
    return measured


def interrupted(signum, frame):
    raise KeyboardInterrupt(signal.Signals(signum).name)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--trials", type=int, default=30, help="trials at most (30)")
    ap.add_argument("--minutes", type=float, default=18, help="no trial starts after (18)")
    ap.add_argument("--quiet", type=int, default=10, help="quiet runs a trial (10, at least 8)")
    ap.add_argument("--fresh", type=int, default=3, help="new quiet runs before a trial (3)")
    ap.add_argument("--repetitions", type=int, default=5, help="dd executions a run (5)")
    ap.add_argument("--mib", type=int, default=48, help="MiB each dd writes (48)")
    ap.add_argument("--base-mib-s", type=float, default=50, help="the quiet throttle (50)")
    ap.add_argument("--save", help="write every run's values and start there (JSON)")
    ap.add_argument("--tmp", help="where the loop device's image goes (the temporary folder)")
    args = ap.parse_args(argv)
    if os.geteuid() != 0:
        # as bench-runtime's ext4 run: make bench goes on without it
        print("bench-compare: not measured: needs root (a loop device, the throttle, a quota)")
        return 0
    signal.signal(signal.SIGTERM, interrupted)  # a kill undoes the limits as Ctrl-C does
    signal.signal(signal.SIGINT, interrupted)  # even where the shell ignored it (cmd &)
    t0 = time.monotonic()
    measured = measure(args)
    trials = measured.trials
    if not trials:
        print("bench-compare: no trial fitted in --minutes")
        return 1
    t1 = time.monotonic()
    if args.save:  # every repetition's value, to look at or judge again
        Path(args.save).write_text(json.dumps(dataclasses.asdict(measured), default=str))
    scores = score(judged(measured))
    print(
        f"\nbench-compare: {len(trials)} trials from {len(measured.quiet)} quiet runs "
        f"(each from the last {args.quiet}), {args.repetitions} repetitions a run, measured in "
        f"{(t1 - t0) / 60:.1f} min, judged in {time.monotonic() - t1:.1f} s\n"
    )
    print("\n".join(table(trials, scores, args)))
    print()
    print(last_line(scores))
    return 0


if __name__ == "__main__":
    sys.exit(main())
