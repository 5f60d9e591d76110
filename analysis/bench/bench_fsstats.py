"""The file-system scan, measured: `make bench-fsstats`.

In one run, on one generated tree (or --tree DIR), with a warm cache (the tree is walked once
by find before anything is timed), each step --repeat times, interleaved:

1. ``find TREE -xdev -printf '%s %b %T@ %A@ %C@ %n %i %y %p\\n' > /dev/null``: one lstat per
   entry and a line each, what fsstats needs of an entry;
2. ``iostudy fsstats scan TREE --out SNAPSHOT``: wall time of the whole command (its Python
   start included) and the walk's own time (the snapshot's elapsed_s), each as entries/s;
   memory is the peak of the sum of the resident set sizes of the command and its walker,
   sampled every 50 ms from /proc (bench_ingest.TreeMemory);
3. the original fsstats Perl tool (``perl fsstats -i 0 -o CSV TREE``), when installed (on PATH
   as ``fsstats``, or --perl-fsstats PATH);
4. the figures against the targets: the scan at least as fast as find, >= 5x the Perl tool,
   <= 200 MiB peak RSS. The best of the repetitions counts (other work on the machine only
   ever slows a run down); the median is printed beside it.

Exits non-zero only when a step failed to run; a missed target is printed, not an error.
"""

import argparse
import json
import os
import random
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest import MIB, iostudy_command, print_table, run_step, verdict

TARGET_RATIO_FIND = 1.0
TARGET_RATIO_PERL = 5.0
TARGET_PEAK_RSS = 200 * MIB
DAY = 86400
FIND_FORMAT = r"%s %b %T@ %A@ %C@ %n %i %y %p\n"


def make_tree(root: Path, files: int, seed: int = 0, progress=print) -> dict:
    """A tree shaped like a project file system: 12 projects, one of them with half the files
    (seed 000's EarthScience); directories of 20 to 200 files up to 4 levels deep; sizes
    log-uniform up to 64 MiB, a tenth empty (sparse files: nothing is written); modified 0 to
    400 days ago; a symlink per 100 files. Returns the counts made."""
    rng = random.Random(seed)
    projects = [f"project{p:02d}" for p in range(12)]
    weights = [0.5] + [0.5 / 11] * 11
    made = {"files": 0, "dirs": 1 + len(projects), "symlinks": 0}
    now = time.time()
    dirs = {p: [root / p] for p in projects}
    for d in dirs.values():
        d[0].mkdir(parents=True)
    start = time.monotonic()
    while made["files"] < files:
        project = rng.choices(projects, weights)[0]
        parent = rng.choice(dirs[project][-20:])  # recent ones: the tree grows deep and wide
        if len(parent.relative_to(root).parts) >= 5:
            parent = dirs[project][0]
        folder = parent / f"d{made['dirs']:06d}"
        folder.mkdir()
        dirs[project].append(folder)
        made["dirs"] += 1
        for i in range(min(rng.randint(20, 200), files - made["files"])):
            size = 0 if rng.random() < 0.1 else int(2 ** rng.uniform(0, 26))
            fd = os.open(folder / f"f{i:03d}.dat", os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
            try:
                os.ftruncate(fd, size)
                mtime = now - rng.uniform(0, 400) * DAY
                os.utime(fd, (mtime, mtime))
            finally:
                os.close(fd)
            made["files"] += 1
            if made["files"] % 100 == 0:
                os.symlink("f000.dat", folder / f"link{i}")
                made["symlinks"] += 1
            if made["files"] % 100_000 == 0:
                rate = made["files"] / (time.monotonic() - start)
                progress(f"bench: tree: {made['files']:,} files ({rate:,.0f}/s)")
    return made


def perl_fsstats(given: Path | None) -> Path | None:
    """The original fsstats (Perl): --perl-fsstats, else `fsstats` on PATH if it is Perl."""
    candidate = given or (Path(p) if (p := shutil.which("fsstats")) else None)
    if candidate is None or not candidate.is_file():
        return None
    with open(candidate, "rb") as f:
        first = f.readline()
    return candidate if b"perl" in first or given else None


def loadavg() -> str:
    try:
        return " ".join(Path("/proc/loadavg").read_text().split()[:3])
    except OSError:
        return "?"


def main(argv=None) -> int:  # noqa: C901
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--files", type=int, default=500_000, help="tree size (default 500000)")
    p.add_argument("--tree", type=Path, help="scan this tree instead of generating one")
    p.add_argument("--repeat", type=int, default=3, help="runs of each step (default 3)")
    p.add_argument("--threads", type=int, help="passed to `iostudy fsstats scan --threads`")
    p.add_argument("--perl-fsstats", type=Path, help="the original fsstats Perl script")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--keep", action="store_true", help="keep the temporary folder (tree, outputs)")
    args = p.parse_args(argv)

    cpus = len(os.sched_getaffinity(0))
    print(f"bench: {cpus} CPUs available; load average {loadavg()}", flush=True)
    tmp = Path(tempfile.mkdtemp(prefix="iostudy-bench-fsstats-"))
    failed = []
    try:
        if args.tree:
            tree = args.tree.resolve()
            if not tree.is_dir():
                print(f"bench: error: {tree} is not a folder", file=sys.stderr)
                return 1
        else:
            tree = tmp / "tree"
            start = time.perf_counter()
            made = make_tree(tree, args.files, args.seed, lambda m: print(m, flush=True))
            print(
                f"bench: tree {tree}: {made['files']:,} files, {made['dirs']:,} directories, "
                f"{made['symlinks']:,} symlinks, made in {time.perf_counter() - start:.1f} s",
                flush=True,
            )
        perl = perl_fsstats(args.perl_fsstats)
        print(f"bench: Perl fsstats: {perl or 'not installed (--perl-fsstats PATH)'}", flush=True)

        warm = run_step("warm the cache (find)", ["find", tree, "-xdev", "-printf", ""], tmp)
        if not warm.ok:
            failed.append(warm.name)
        find_cmd = ["sh", "-c", f'find "$1" -xdev -printf "{FIND_FORMAT}" > /dev/null', "sh", tree]
        scan_cmd = [iostudy_command(), "fsstats", "scan", tree, "--out", tmp / "snap.json", "-q"]
        if args.threads:
            scan_cmd += ["--threads", args.threads]
        runs = {"find": [], "scan": [], "perl": []}
        walks = []
        for r in range(args.repeat):
            runs["find"].append(run_step(f"find #{r + 1}", find_cmd, tmp))
            step = run_step(f"iostudy fsstats scan #{r + 1}", scan_cmd, tmp)
            runs["scan"].append(step)
            if step.ok:
                snap = json.loads((tmp / "snap.json").read_text())
                walks.append(snap["elapsed_s"])
                entries = snap["counts"]["entries"]
            if perl:
                cmd = ["perl", perl, "-i", "0", "-o", tmp / "perl.csv", tree]
                runs["perl"].append(run_step(f"Perl fsstats #{r + 1}", cmd, tmp))
        for steps in runs.values():
            failed += [s.name for s in steps if not s.ok]
        if not all(s.ok for s in runs["scan"]):
            print("bench: the scan failed; no figures", file=sys.stderr)
            return 1

        def best(steps):
            walls = [s.wall for s in steps if s.ok]
            return (min(walls), statistics.median(walls)) if walls else (None, None)

        print()
        print(
            f"tree: {snap['counts']['files']:,} files, {snap['counts']['dirs']:,} directories, "
            f"{snap['counts']['symlinks']:,} symlinks: {entries:,} entries; {cpus} CPUs; "
            f"load average now {loadavg()}"
        )
        scan_best, scan_median = best(runs["scan"])
        walk_best, walk_median = min(walks), statistics.median(walks)
        find_best, find_median = best(runs["find"])
        perl_best, perl_median = best(runs["perl"])
        peak = max(s.peak_sum for s in runs["scan"])
        largest = max(s.peak_single for s in runs["scan"])
        rate = {}
        for name, b, m in (
            ("find", find_best, find_median),
            ("scan (whole command)", scan_best, scan_median),
            ("scan (walk)", walk_best, walk_median),
            ("Perl fsstats", perl_best, perl_median),
        ):
            if b is None:
                continue
            rate[name] = entries / b
            print(
                f"{name}: best {b:.2f} s = {entries / b:,.0f} entries/s; median {m:.2f} s = "
                f"{entries / m:,.0f} entries/s"
            )
        print(
            f"scan: peak RSS {peak / MIB:.0f} MiB summed over the command and its walker, "
            f"largest process {largest / MIB:.0f} MiB; find {runs['find'][0].peak_sum / MIB:.1f}"
            " MiB"
            + (f"; Perl fsstats {runs['perl'][0].peak_sum / MIB:.0f} MiB" if runs["perl"] else "")
        )

        rows = []
        for name in ("scan (whole command)", "scan (walk)"):
            if "find" in rate:
                ratio, met = verdict(rate[name] / rate["find"], TARGET_RATIO_FIND)
                rows.append(
                    (
                        f"{name} / find",
                        f"{rate[name] / rate['find']:.2f}x",
                        f">= {TARGET_RATIO_FIND:g}x",
                        ratio,
                        met,
                    )
                )
            if "Perl fsstats" in rate:
                r = rate[name] / rate["Perl fsstats"]
                ratio, met = verdict(r, TARGET_RATIO_PERL)
                rows.append(
                    (
                        f"{name} / Perl fsstats",
                        f"{r:.1f}x",
                        f">= {TARGET_RATIO_PERL:g}x",
                        ratio,
                        met,
                    )
                )
        ratio, met = verdict(peak, TARGET_PEAK_RSS, higher_is_better=False)
        rows.append(
            (
                "scan peak RSS",
                f"{peak / MIB:.0f} MiB",
                f"<= {TARGET_PEAK_RSS / MIB:.0f} MiB",
                ratio,
                met,
            )
        )
        if "Perl fsstats" not in rate:
            rows.append(
                (
                    "scan / Perl fsstats",
                    "-",
                    f">= {TARGET_RATIO_PERL:g}x",
                    "-",
                    "not measured: Perl fsstats not installed",
                )
            )
        print()
        print_table(rows)
        if failed:
            print(f"\nbench: steps that failed: {', '.join(failed)}")
        return 1 if failed else 0
    finally:
        if args.keep:
            print(f"bench: kept {tmp}")
        else:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
