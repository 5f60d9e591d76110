"""BTIO (reframe-checks/btio_check.py): what the check runs and how its output reads. Pure
functions of plain data, unit tested without ReFrame on captured output.

The Spack view's `btio` is Northwestern's BTIO (W.-k. Liao, github.com/wkliao/BTIO, the
2019-07-21 commit): NPB BT's block-tridiagonal partition of a grid of 5 doubles per point over a
square number of processes, each writing (or reading) sqrt(P) cells of every record, one record
per dump, to one shared file `<dir>/btio.mpi`. It reads its parameters from an input file (mode
w or r, I/O method, dumps, grid points, directory) and does one phase per launch: the check runs
the write phase, then the read phase of the same file.

Seed 001 ran NPB 3.3's BTIO "full" subtype: MPI-IO collective writes and reads of a nested
strided datatype with collective buffering. Here that is I/O method 0, MPI collective I/O
(MPI_File_write_all / read_all with the file view of the cells), with no hints, so the MPI-IO
layer's collective buffering (two-phase I/O) applies with its defaults. NPB's problem classes
become a cubic grid and a number of dumps: BT's time steps over NPB's write interval of 5
(class E: 1020^3 points, 250 steps, 50 dumps, 1976.65 GiB: seed 001's Table 1).

BTIO prints its amounts in MiB (bytes / 1048576) and its bandwidth in MiB/s: the performance
values keep that unit (no MB-to-MiB conversion is needed; NPB's own BTIO prints MB, 10^6).
"""

from __future__ import annotations

import math
import re
from pathlib import Path

from iostudy.benchmarks import checks
from iostudy.core.checknames import BTIO
from iostudy.core.numfmt import MIB

#: bytes per grid point: 5 doubles (BTIO's FIVE_DBL dimension)
POINT_BYTES = 5 * 8
#: NPB BT's classes: (grid points per side, time steps); BTIO dumps every WRITE_INTERVAL steps
CLASSES = {
    "S": (12, 60),
    "W": (24, 200),
    "A": (64, 200),
    "B": (102, 200),
    "C": (162, 200),
    "D": (408, 250),
    "E": (1020, 250),
}
WRITE_INTERVAL = 5
#: BTIO's I/O methods (the input file's second line); "full" is 0
METHODS = {
    0: "MPI collective I/O",
    1: "MPI independent I/O",
    2: "Parallel netCDF blocking I/O",
    3: "Parallel netCDF non-blocking I/O",
}
FULL = 0
#: the file BTIO's MPI-IO methods write in their directory
FILE_NAME = "btio.mpi"
PHASES = ("write", "read")
#: the smallest cell BTIO accepts per dimension (make_set: "Min size is 3")
MIN_CELL = 3
#: dir_path is a Fortran character(len=512)
MAX_DIR = 511


def class_size(problem_class: str) -> tuple[int, int]:
    """(grid points per side, dumps) of an NPB class."""
    if problem_class not in CLASSES:
        raise ValueError(f"BTIO class {problem_class!r}: not one of {', '.join(CLASSES)}")
    points, steps = CLASSES[problem_class]
    return points, steps // WRITE_INTERVAL


def io_bytes(points: int, dumps: int) -> int:
    """Bytes one phase moves: every dump is the whole grid, 5 doubles per point."""
    return points**3 * POINT_BYTES * dumps


def square_root(procs: int) -> int | None:
    root = math.isqrt(procs) if procs > 0 else 0
    return root if root * root == procs and procs > 0 else None


def problem(problem_class: str, procs: int) -> str | None:
    """Why BTIO would refuse (or cannot run) this class on procs processes, or None."""
    if problem_class not in CLASSES:
        return f"problem_class {problem_class!r} is not one of {', '.join(CLASSES)}"
    cells = square_root(procs)
    if cells is None:
        return f"procs {procs} is not a square number (BTIO needs 1, 4, 9, 16, ...)"
    points, _ = class_size(problem_class)
    if points // cells < MIN_CELL:
        most = (points // MIN_CELL) ** 2
        return (
            f"class {problem_class} ({points}^3 points) on {procs} processes: cells of "
            f"{points // cells} points per side, BTIO needs at least {MIN_CELL} (at most "
            f"{most} processes for this class)"
        )
    return None


def input_text(phase: str, points: int, dumps: int, directory: Path, method: int = FULL) -> str:
    """BTIO's input file for one phase: mode, I/O method, dumps, grid, directory of btio.mpi."""
    if phase not in PHASES:
        raise ValueError(f"BTIO phase {phase!r}: not one of {', '.join(PHASES)}")
    if method not in METHODS:
        raise ValueError(f"BTIO I/O method {method}: not one of {sorted(METHODS)}")
    if len(str(directory)) > MAX_DIR or "\n" in str(directory):
        raise ValueError(f"BTIO directory: one line of at most {MAX_DIR} characters")
    return f"{phase[0]}\n{method}\n{dumps}\n{points} {points} {points}\n{directory}\n"


def drop_cached_pages_command(directory: Path) -> str:
    """Shell that writes BTIO's file back (BTIO does not sync it) and drops this node's cached
    pages of it, as ior_check does between its phases: the read phase reads the storage."""
    return checks.drop_cached_pages_command(directory, FILE_NAME, BTIO.name, sync=True)


# ---- output ----------------------------------------------------------------------------------
_HEADER = re.compile(r"^-- BT-IO Benchmark \((write|read)\s+operation only\) --$", re.M)
_FIELDS = {
    "procs": ("Number of MPI processes", int),
    "x": ("Global array size X", int),
    "y": ("Global array size Y", int),
    "z": ("Global array size Z", int),
    "iterations": ("Number of I/O iterations", int),
    "amount_mib": ("Total I/O amount", float),
    "time_s": ("Total I/O time in sec", float),
    "bandwidth_mib_s": ("I/O bandwidth", float),
}
_PHASE_TIMES = {
    "write": {
        "open_s": "Max file create time in sec",
        "post_s": "Max write post  time in sec",
        "wait_s": "Max write wait  time in sec",
    },
    "read": {
        "open_s": "Max file open   time in sec",
        "post_s": "Max read post   time in sec",
        "wait_s": "Max read wait   time in sec",
    },
}
_METHOD = re.compile(r"^Using (.+) method$", re.M)
_REFUSALS = ("Number of processes must be a square number", "No input file", "Usage:", "Error")


def _field(text: str, label: str, kind):
    match = re.search(rf"^{re.escape(label)}\s*:\s*(\S+)", text, re.M)
    if not match:
        raise ValueError(f"BTIO output: no {label!r} line")
    token = match.group(1)
    if set(token) == {"*"}:
        raise ValueError(f"BTIO output: {label!r} overflowed its field ({token})")
    try:
        return kind(token)
    except ValueError:
        raise ValueError(f"BTIO output: {label!r} is not a number: {token!r}") from None


def parse(text: str) -> dict:
    """One launch's report (rank 0's stdout): {"phase", "procs", "grid": (x, y, z),
    "iterations", "amount_mib", "time_s", "bandwidth_mib_s", "open_s", "post_s", "wait_s",
    "method", "path"}. ValueError naming what is missing (or BTIO's own refusal)."""
    header = _HEADER.search(text)
    if not header:
        refusal = next(
            (line.strip() for line in text.splitlines() if line.strip().startswith(_REFUSALS)),
            None,
        )
        if refusal:
            raise ValueError(f"BTIO did not run: {refusal}")
        raise ValueError("BTIO output: no '-- BT-IO Benchmark (... operation only) --' header")
    phase = header.group(1)
    report = text[header.start() :]
    parsed = {"phase": phase}
    for key, (label, kind) in _FIELDS.items():
        parsed[key] = _field(report, label, kind)
    for key, label in _PHASE_TIMES[phase].items():
        parsed[key] = _field(report, label, float)
    method = _METHOD.search(report)
    if not method:
        raise ValueError("BTIO output: no 'Using ... method' line")
    parsed["method"] = method.group(1)
    path = re.search(r"^output file path\s*:\s*(.*)$", report, re.M)
    parsed["path"] = path.group(1).strip() if path else None
    parsed["grid"] = (parsed.pop("x"), parsed.pop("y"), parsed.pop("z"))
    return parsed


def phase_results(outputs: dict[str, str]) -> dict[str, dict]:
    """Each phase's parsed report ({phase: its stdout}); a phase's ValueError names it."""
    parsed = {}
    for phase, text in outputs.items():
        try:
            parsed[phase] = parse(text)
        except ValueError as exc:
            raise ValueError(f"{phase} phase: {exc}") from None
    return parsed


def sanity(phases: dict[str, dict], procs: int, points: int, dumps: int) -> list[str]:
    """What is wrong with the phases' reports (empty: nothing): each phase present and of its
    mode, procs processes, the grid and dumps asked for, the full (collective) method, the
    amount of data of the grid, a positive bandwidth."""
    problems = []
    expected_mib = io_bytes(points, dumps) / MIB
    for phase in PHASES:
        if phase not in phases:
            problems.append(f"no {phase} phase")
            continue
        p = phases[phase]
        if p["phase"] != phase:
            problems.append(f"{phase} phase: BTIO ran its {p['phase']} operation")
        if p["procs"] != procs:
            problems.append(f"{phase} phase: {p['procs']} processes, expected {procs}")
        if tuple(p["grid"]) != (points,) * 3:
            problems.append(f"{phase} phase: grid {p['grid']}, expected {(points,) * 3}")
        if p["iterations"] != dumps:
            problems.append(f"{phase} phase: {p['iterations']} dumps, expected {dumps}")
        if p["method"] != METHODS[FULL]:
            problems.append(f"{phase} phase: {p['method']} method, expected {METHODS[FULL]}")
        # printed with 2 decimals
        if abs(p["amount_mib"] - expected_mib) > 0.006:
            problems.append(
                f"{phase} phase: {p['amount_mib']} MiB moved, expected {expected_mib:.2f}"
            )
        if not p["bandwidth_mib_s"] > 0:
            problems.append(f"{phase} phase: no bandwidth ({p['bandwidth_mib_s']} MiB/s)")
    return problems


def phase_seconds(parsed: dict) -> float:
    """A phase's time: its amount over its bandwidth, as BTIO computed the bandwidth (from the
    unrounded time); BTIO prints the time itself with 2 decimals only."""
    return phase_mib(parsed) / parsed["bandwidth_mib_s"]


def phase_mib(parsed: dict) -> float:
    """The MiB a phase moved: its grid of 5 doubles per point, once per dump (io_bytes of
    a cubic grid)."""
    x, y, z = parsed["grid"]
    return x * y * z * POINT_BYTES * parsed["iterations"] / MIB


def performance(phases: dict[str, dict]) -> dict[str, tuple[float, str]]:
    """{name: (value, unit)}: each phase's bandwidth as BTIO prints it (MiB/s) and its time
    (s), and both phases together: io_mib_s, the data of both over the time of both (seed 001's
    overall BTIO rate, "a measure of both the write and read phases"), io_time_s, io_gib."""
    values = {}
    total_mib = total_s = 0.0
    for phase in PHASES:
        if phase not in phases:
            continue
        p = phases[phase]
        seconds = phase_seconds(p)
        values[f"{phase}_mib_s"] = (p["bandwidth_mib_s"], "MiB/s")
        values[f"{phase}_time_s"] = (seconds, "s")
        total_mib += phase_mib(p)
        total_s += seconds
    if total_s > 0:
        values["io_mib_s"] = (total_mib / total_s, "MiB/s")
        values["io_time_s"] = (total_s, "s")
        values["io_gib"] = (total_mib / 1024, "GiB")
    return values
