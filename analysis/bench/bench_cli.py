"""How soon the command line answers, measured: `make bench-cli`.

Each command runs --repeat times as a whole process (its interpreter's start included), the
commands interleaved so that other work on the machine slows all alike:

1. ``python -c pass``: the interpreter alone, the floor of any command;
2. ``iostudy --help`` and ``iostudy GROUP --help`` for every group;
3. ``snakemake -n`` on the workflow (its parse and DAG) over a results folder of --runs run
   directories (manifests only: the parse reads nothing else);

and, with ``--baseline-src DIR`` (an older checkout: ``git worktree add SCRATCH COMMIT``), the
same commands of that checkout beside these, with the ratio of the medians. The median counts;
the targets: every --help <= 0.5 s, ``snakemake -n`` <= 3 s. Exits non-zero only when a
command failed to run; a missed target is printed, not an error.
"""

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_ingest import print_table, verdict

REPO_ROOT = Path(__file__).resolve().parents[2]
TARGET_HELP_S = 0.5
TARGET_DAG_S = 3.0


def groups() -> list[str]:
    """The command groups of this checkout's iostudy."""
    from iostudy.cli.cli import group_names

    return group_names()


def commands(src: Path, results: Path) -> dict[str, tuple[list[str], dict]]:
    """name -> (argv, environment) of each command measured, for the checkout at src."""
    env = {**os.environ, "PYTHONPATH": str(src / "analysis" / "src")}
    cli = [sys.executable, "-m", "iostudy.cli.cli"]
    out = {"iostudy --help": ([*cli, "--help"], env)}
    for group in groups():
        out[f"iostudy {group} --help"] = ([*cli, group, "--help"], env)
    snakefile = src / "workflow" / "Snakefile"
    snakemake = [
        sys.executable,
        "-m",
        "snakemake",
        "-n",
        "-q",
        "-s",
        str(snakefile),
        "--directory",
        str(results.parent),
    ]
    out["snakemake -n"] = (snakemake, env)
    return out


def make_results(root: Path, runs: int) -> Path:
    """root/results with ``runs`` run directories of the quick study (a manifest each)."""
    for k in range(runs):
        run = root / "results" / f"20261128T{k:06d}Z-quick-local"
        run.mkdir(parents=True)
        manifest = {"run_id": run.name, "campaign": "quick", "study": "quick", "system": "local"}
        (run / "manifest.json").write_text(json.dumps(manifest))
    return root / "results"


def timed(argv: list[str], env: dict) -> float:
    start = time.perf_counter()
    proc = subprocess.run(argv, env=env, capture_output=True, text=True)
    seconds = time.perf_counter() - start
    if proc.returncode != 0:
        raise RuntimeError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr[-2000:]}")
    return seconds


def measure(sets: dict[str, dict], repeat: int) -> dict[str, dict[str, list[float]]]:
    """{version: {command: [seconds]}}, every command of every version once per round."""
    times = {v: {name: [] for name in cmds} for v, cmds in sets.items()}
    for _ in range(repeat):
        for version, cmds in sets.items():
            for name, (argv, env) in cmds.items():
                times[version][name].append(timed(argv, env))
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=5, help="runs of each command (default 5)")
    parser.add_argument("--runs", type=int, default=50, help="run directories for snakemake -n")
    parser.add_argument("--baseline-src", type=Path, help="an older checkout to compare with")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="bench-cli-") as tmp:
        results = make_results(Path(tmp), args.runs)
        sets = {"this": commands(REPO_ROOT, results)}
        if args.baseline_src:
            sets["baseline"] = commands(args.baseline_src.resolve(), results)
        floor = {"python -c pass": ([sys.executable, "-c", "pass"], dict(os.environ))}
        times = measure({**sets, "floor": floor}, args.repeat)
    print(f"python -c pass: median {statistics.median(times['floor']['python -c pass']):.3f} s")
    rows = []
    for name in sets["this"]:
        median = statistics.median(times["this"][name])
        target = TARGET_DAG_S if name.startswith("snakemake") else TARGET_HELP_S
        ratio, met = verdict(median, target, higher_is_better=False)
        base = times.get("baseline", {}).get(name)
        before = f"{statistics.median(base):.3f}" if base else "-"
        speedup = f"{statistics.median(base) / median:.1f}x" if base else "-"
        rows.append(
            (
                name,
                f"{median:.3f}",
                f"{max(times['this'][name]):.3f}",
                before,
                speedup,
                f"{target:g}",
                ratio,
                met,
            )
        )
    print_table(
        ("command", "median s", "max s", "baseline s", "faster", "target s", "/ target", "met"),
        rows,
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
