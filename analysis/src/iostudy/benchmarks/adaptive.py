"""Seed 004's adaptive I/O (section III-B) as adaptive_check runs it: iostudy's adaptive benchmark
(reframe-checks/src/adaptive) in one of three modes (adaptive, mpiio: one shared file written
collectively, posix-fpp: a file per process), its ranks in one group per storage target, with or
without induced interference (a competing writer on the first half of the targets, started by
the check, as seed 004's Figs. 5-7 compare). Pure functions, without pandas: ReFrame imports
this.

Each run is one record of adaptive.jsonl (the store's adaptive table); its performance
variables are the run's MiB/s and seconds, and the adaptive writes it made.
"""

from __future__ import annotations

import json
import shlex

from iostudy.benchmarks import benchparse
from iostudy.core.numfmt import MIB_S

MODES = ("adaptive", "mpiio", "posix-fpp")
#: the competing writer's file on an interfered target, and how much it writes at a time
INTERFERER_FILE = "interference.dat"
INTERFERER_MIB = 64
#: the program that names the competing writer's file onto a brick (reframe-checks/src)
PLACER = "glusterplace"


def arguments(index_dir, target_dirs: list, mode: str, size: str, block: str, on_bricks=()):
    """The benchmark's command line: the global index in index_dir, one folder per target, and
    on GlusterFS each target's brick (placement.scratch_bricks: (name, brick) pairs)."""
    args = ["--dir", str(index_dir), "--mode", mode, "--size", str(size), "--block", str(block)]
    for folder in target_dirs:
        args += ["--target-dir", str(folder)]
    for _, brick in on_bricks:
        args += ["--brick", brick]
    return args


def interfered(targets: list) -> list:
    """The targets a competing writer loads: the first half, at least one (seed 004: three
    writers on each of 8 of the file system's targets)."""
    return targets[: max(1, len(targets) // 2)]


def interference_commands(
    targets: list, on_bricks=(), placer=None, undo=()
) -> tuple[list[str], list[str]]:
    """The job's shell lines that start one competing writer per interfered target before the
    benchmark (dd of INTERFERER_MIB MiB with an fsync, again and again) and stop it and remove
    its file after. On GlusterFS (on_bricks: each target's (name, brick), as for the benchmark)
    placer (the glusterplace program) first names each writer's file onto its target's brick,
    the job failing when it cannot: the row's interferer_targets then say where it wrote. A job
    that fails so stops the writers already started and runs undo (the job's own cleanup, which
    its end would have run) first."""
    start = []
    stop = ["kill $IOSTUDY_INTERFERERS 2>/dev/null; wait $IOSTUDY_INTERFERERS 2>/dev/null"]
    for k, folder in enumerate(interfered(targets)):
        path = shlex.quote(f"{folder}/{INTERFERER_FILE}")
        if on_bricks:
            name, brick = on_bricks[k]
            var = f"IOSTUDY_INTERFERER_{k}"
            place = shlex.join([str(placer), f"{folder}/{INTERFERER_FILE}", brick])
            why = shlex.quote(f"the competing writer's file cannot be placed on {name} ({brick})")
            fail = "; ".join([f"echo {why} >&2", *stop, *undo, "exit 1"])
            start.append(f"{var}=$({place}) || {{ {fail}; }}")
            start.append(f'echo "competing writer on {name}: ${var}"')
            path = f'"${var}"'
        dd = f"dd if=/dev/zero of={path} bs=1M count={INTERFERER_MIB} conv=fsync status=none"
        # the loop's TERM ends its dd too: nothing writes once the job has stopped it
        loop = (
            f"trap 'kill $d 2>/dev/null; exit 0' TERM; "
            f"while :; do {dd} & d=$!; wait $d || break; done"
        )
        start.append(f'( {loop} ) & IOSTUDY_INTERFERERS="$IOSTUDY_INTERFERERS $!"')
        stop.append(f"rm -f {path}")
    return start, stop


def parse(text: str) -> dict:
    """The benchmark's JSON line in a job's output; ValueError when there is none."""
    return benchparse.json_line(text, "adaptive")


def sanity(parsed: dict, mode: str, writers: int, targets: int, size: int) -> list[str]:
    problems = []
    for key, want in (
        ("mode", mode),
        ("writers", writers),
        ("targets", targets),
        ("bytes_per_writer", size),
        ("verified", True),
    ):
        if parsed.get(key) != want:
            problems.append(f"{key} {parsed.get(key)!r}, expected {want!r}")
    if sum(parsed.get("writers_per_target") or []) != writers:
        problems.append(f"writers per target {parsed.get('writers_per_target')}: not {writers}")
    if not (parsed.get("seconds") or 0) > 0:
        problems.append(f"seconds {parsed.get('seconds')!r}: not positive")
    return problems


def performance(parsed: dict) -> dict[str, tuple[float, str]]:
    return {
        "mib_s": (parsed["mib_s"], MIB_S),
        "seconds": (parsed["seconds"], "s"),
        "moves": (parsed["moves"], "writes"),
    }


def record(parsed: dict, interference: bool, nodes: int, on_bricks=()) -> dict:
    """The store's row of one run (its lists as JSON text); target_names: the targets' names in
    order (on_bricks: the GlusterFS bricks the files were named onto), null elsewhere;
    interferer_targets: the targets the competing writer's files were named onto, likewise."""
    row = {
        k: parsed.get(k)
        for k in (
            "mode",
            "adapt",
            "writers",
            "targets",
            "bytes_per_writer",
            "bytes",
            "seconds",
            "mib_s",
            "moves",
            "index_s",
        )
    }
    row.update(
        interference=interference,
        nodes=nodes,
        target_s=json.dumps(parsed.get("target_s")),
        writers_per_target=json.dumps(parsed.get("writers_per_target")),
        target_names=json.dumps([name for name, _ in on_bricks]) if on_bricks else None,
        # where the competing writer's files were named onto (interference_commands)
        interferer_targets=(
            json.dumps([name for name, _ in interfered(on_bricks)])
            if interference and on_bricks
            else None
        ),
    )
    return row
