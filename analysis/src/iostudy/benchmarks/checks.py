"""What iostudy's ReFrame checks (reframe-checks/) compute, so that the checks stay thin adapters:
the I/O-model benchmark's expected models, its JSON lines and performance values, the tags of
each job's log, the references of configs/references/<system>.json in ReFrame's form, and
where each check finds its programs.

Pure functions of plain data, unit tested without ReFrame.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from iostudy.benchmarks import benchparse, spackenv
from iostudy.core import config, jsonlimits
from iostudy.core.checknames import IOR
from iostudy.core.reframe_names import param_text

RUNTIME_BUILD = config.REPO_ROOT / "build" / "runtime" / "libiostudy.so"
CHECKS_BUILD = config.REPO_ROOT / "build" / "reframe-checks"
SIZE = re.compile(r"^([1-9][0-9]*)([KMG]?)$")
SIZE_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}


def runtime_library(system: str, environ: str) -> Path:
    """The runtime the jobs of an MPI flavour preload: the system's Spack view (`make spack`)
    when its runtime has that flavour's plugin (it is built for the view's one MPI), else the
    CMake build of `make setup`, which has a plugin per flavour."""
    if spackenv.view_library(system, f"libiostudy-mpi-{environ}.so"):
        return spackenv.view_library(system, "libiostudy.so") or RUNTIME_BUILD
    return RUNTIME_BUILD


def benchmark_program(system: str, benchmark: str, environ: str) -> Path:
    """iostudy's own benchmark for an MPI flavour, <benchmark>-<environ>: from the system's
    Spack view when it has one, else from the CMake build of `make setup`."""
    return tool_program(system, f"{benchmark}-{environ}")


def tool_program(system: str, name: str) -> Path:
    """A program of the benchmarks' build by its file name (a benchmark's, or one without MPI
    such as glusterplace): from the system's Spack view when it has one, else from the CMake
    build."""
    return spackenv.view_program(system, name) or CHECKS_BUILD / name


def parse_size(text: str | int) -> int:
    """Bytes of a size as the benchmark reads it: a number with an optional K, M or G suffix
    (KiB, MiB, GiB)."""
    match = SIZE.match(str(text))
    if not match:
        raise ValueError(f"size '{text}': expected a positive number with an optional K/M/G suffix")
    return int(match.group(1)) * SIZE_UNITS[match.group(2)]


def _powers_of_two(limit: int) -> list[int]:
    return [1 << i for i in range(limit.bit_length()) if 1 << i <= limit]


def _is_power_of_two(x: int) -> bool:
    return x >= 1 and x & (x - 1) == 0


def iomodel_problem(size: int, max_procs: int, procs_per_node: int) -> str | None:
    """Why the benchmark would refuse these parameters (seed 003's definition), or None."""
    if not _is_power_of_two(max_procs):
        return f"max_procs {max_procs} is not a power of two"
    if not _is_power_of_two(procs_per_node):
        return f"procs_per_node {procs_per_node} is not a power of two"
    if procs_per_node > max_procs:
        return f"procs_per_node {procs_per_node} exceeds max_procs {max_procs}"
    if size % max_procs:
        return f"size {size} is not a multiple of max_procs {max_procs}"
    return None


def iomodel_models(max_procs: int, procs_per_node: int) -> list[tuple[int, int, int, int]]:
    """The models (n, p, f, m) of seed 003 for M ranks, P per node: n nodes used of N = M / P,
    p processes per node doing I/O, f files per node, m nodes sharing each file."""
    nodes = max_procs // procs_per_node
    return [
        (n, p, f, m)
        for n in _powers_of_two(nodes)
        for p in _powers_of_two(procs_per_node)
        for f in _powers_of_two(p)
        for m in _powers_of_two(n)
    ]


def iomodel_lines(text: str) -> list[dict]:
    """The benchmark's JSON lines in a job's output (other lines, e.g. an MPI's notices, are
    skipped)."""
    found = []
    for line in text.splitlines():
        line = line.strip()
        if not line.startswith("{"):
            continue
        try:
            record = jsonlimits.parse_line(line)
        except ValueError:
            continue
        if isinstance(record, dict) and record.get("benchmark") == "iomodel":
            found.append(record)
    return found


def iomodel_sanity(lines: list[dict], size: int, max_procs: int, procs_per_node: int) -> list[str]:
    """Problems of a run's JSON lines: each expected model exactly once, and S bytes each."""
    expected = iomodel_models(max_procs, procs_per_node)
    problems = []
    if len(lines) != len(expected):
        problems.append(f"{len(lines)} models reported, expected {len(expected)}")
    seen = [tuple(r.get(k) for k in "npfm") for r in lines]
    missing = sorted(set(expected) - set(seen))
    extra = sorted(set(seen) - set(expected))
    if missing:
        problems.append(f"models missing (n, p, f, m): {missing}")
    if extra:
        problems.append(f"unexpected models (n, p, f, m): {extra}")
    wrong = [
        (m, r.get("bytes")) for m, r in zip(seen, lines, strict=True) if r.get("bytes") != size
    ]
    if wrong:
        problems.append(f"models that did not move {size} bytes: {wrong}")
    return problems


def iomodel_performance(
    lines: list[dict], max_procs: int, procs_per_node: int, read_back: bool
) -> dict[str, float]:
    """The check's performance variables (MiB/s): write, and read when read back, of the file per
    process model at full scale (n = N, p = f = P, m = 1), of the single shared file (n = m = N,
    p = P, f = 1) and the maximum over all models."""
    nodes = max_procs // procs_per_node
    by_model = {(r["n"], r["p"], r["f"], r["m"]): r for r in lines}
    named = {
        "fpp": (nodes, procs_per_node, procs_per_node, 1),
        "ssf": (nodes, procs_per_node, 1, nodes),
    }
    values = {}
    for phase in ("write",) + (("read",) if read_back else ()):
        key = f"{phase}_mib_s"
        for name, model in named.items():
            if model in by_model and by_model[model].get(key) is not None:
                values[f"{name}_{key}"] = float(by_model[model][key])
        measured = [float(r[key]) for r in lines if r.get(key) is not None]
        if measured:
            values[f"max_{key}"] = max(measured)
    return values


def save_iomodel_lines(stdout: Path, dest: Path) -> list[dict]:
    """Copies the benchmark's JSON lines from a job's stdout to dest (JSON lines); returns them."""
    lines = iomodel_lines(Path(stdout).read_text(errors="replace"))
    Path(dest).write_text("".join(json.dumps(r) + "\n" for r in lines))
    return lines


def memory_target_root(run_id: str) -> Path:
    """Where a run's jobs with target "memory" keep their files: /dev/shm of the nodes, in a
    folder of the run's own that the campaign removes (a parent shared by runs would stay: a
    concurrent run may be making its folder in it)."""
    return Path("/dev/shm") / f"iostudy-{run_id or 'manual'}"


def storage_of(system: dict, folder: Path, run_dir: Path) -> tuple[dict, Path] | None:
    """The storage entry of the system that folder is in, and that entry's path; None when it
    is in none (/dev/shm, a storage target's folder) or an entry's path cannot be resolved
    here (its variable is unset: folder cannot be in it)."""
    for entry in system.get("storage") or []:
        try:
            root = config.storage_path(entry["path"], run_dir)
        except config.ConfigError:
            continue
        if Path(folder) == root or root in Path(folder).parents:
            return entry, root
    return None


def storage_guard_command(system: dict, folder: Path, run_dir: Path) -> str | None:
    """A shell line for the job: fails, naming the storage entry, its path, the node and the
    expected and found file system types, unless folder's storage entry is, on the node, the
    distributed file system its fs_type says (config.MOUNT_TYPES). Without it a job on a node
    that lacks the mount writes to the disk under the mount point, and its numbers are
    labelled with the wrong storage. None where there is nothing to check (a local fs_type,
    or folder in no storage entry)."""
    found = storage_of(system, folder, run_dir)
    if found is None:
        return None
    entry, root = found
    types = config.MOUNT_TYPES.get(entry.get("fs_type") or "")
    if not types:
        return None
    path, expected = shlex.quote(str(root)), " or ".join(types)
    what = shlex.quote(f"storage {entry['name']} ({entry['fs_type']}): {root} on")
    return (
        f"found=$(findmnt -n -o FSTYPE -T {path} 2>/dev/null | head -n 1); "
        f'case " {" ".join(types)} " in *" ${{found:-none}} "*) ;; '
        f'*) echo {what} "${{SLURMD_NODENAME:-$(hostname)}} is on '
        f"${{found:-no file system (no such folder)}}, expected {expected}: "
        f'is it mounted on this node?" >&2; exit 1 ;; esac'
    )


def remove_empty_dirs(root: Path) -> None:
    """Removes root and the folders under it, deepest first, that are empty; a folder that
    still holds a file stays (and with it its parents), so nothing is lost."""
    if not root.is_dir():
        return
    below = sorted((p for p in root.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts))
    for folder in [*below, root]:
        if not any(folder.iterdir()):
            folder.rmdir()


#: The runtime's default DARSHAN_EXCLUDE_DIRS (runtime/src/default_excludes.def, which the C build
#: includes) without /dev/: what a job whose files are in /dev/shm (target "memory") excludes, so
#: that its log records them.
RUNTIME_EXCLUDES_BUT_DEV = tuple(
    prefix
    for prefix in re.findall(
        r'^X\("([^"]+)"\)$',
        (config.REPO_ROOT / "runtime" / "src" / "default_excludes.def").read_text(),
        re.MULTILINE,
    )
    if prefix != "/dev/"
)


#: How a check's skip of a combination the campaign excluded begins.
EXCLUDED = "excluded by the campaign"


def exclusion_text(parameters: dict) -> str:
    """An excluded combination as a check's `excluded` entry: name=value&name=value."""
    return "&".join(f"{name}={param_text(value)}" for name, value in parameters.items())


def excluded_by(entries, value_of) -> str | None:
    """The first entry ("name=value&...") all of whose values the case has (value_of(name)
    gives the case's value), or None."""
    for entry in entries:
        pairs = [part.partition("=") for part in entry.split("&")]
        if all(param_text(value_of(name)) == value for name, _, value in pairs):
            return entry
    return None


def log_tags(tags: dict) -> str:
    """IOSTUDY_LOG_TAGS for a job: key=value pairs joined by ';' (the runtime's separator)."""
    for key, value in tags.items():
        if any(c in f"{key}{value}" for c in ";\n") or "=" in str(key):
            raise ValueError(f"log tag {key}={value}: no ';' or newline, no '=' in the key")
    return ";".join(f"{key}={value}" for key, value in tags.items())


def reframe_references(check: str, system: str, partition_fullname: str) -> dict:
    """ReFrame's ``reference`` of check on a partition, from configs/references/<system>.json:
    {partition: {variable: (value, lower, upper, unit)}}; empty when the system has none."""
    refs = config.load_references(system)["checks"].get(check, {})
    return {
        partition_fullname: {
            name: (r["value"], r["lower"], r["upper"], r["unit"]) for name, r in refs.items()
        }
    }


# ---- programs from the Spack view (IOR, mdtest, ...) ----------------------------------------
def spack_program(system: str, name: str, environ: str) -> tuple[Path | None, str]:
    """A benchmark the Spack view of system provides, built for environ's MPI: (its path, "")
    or (None, why it cannot run); a check skips with that reason."""
    path = spackenv.view_program(system, name)
    if path is None:
        return None, (
            f"{name} is not built: no {spackenv.view_dir(system) / 'bin' / name} "
            f"(run `make spack SYSTEM={system}`)"
        )
    mpi = spackenv.view_mpi(system)
    if mpi and mpi[0] != environ:
        return None, f"{name} of the Spack view is built with {mpi[0]}, not {environ}"
    return path, ""


# ---- IOR (seed 001's scaling campaign) --------------------------------------------------------
IOR_APIS = ("POSIX", "MPIIO", "HDF5", "NCMPI")
IOR_LAYOUTS = ("shared", "fpp")  # N-1, N-N


#: IOR's phases, each a launch of its own in one job, so that each leaves a log of its own: a log
#: records only the first open of a file, and seed 000's time of a shared file starts there
IOR_PHASES = ("write", "read")


def ior_arguments(
    api: str,
    layout: str,
    transfer: str,
    transfers: int,
    iterations: int,
    path: Path,
    phase: str,
    direct: bool = False,
) -> list[str]:
    """IOR's options for one phase: transfers calls of transfer bytes per process (its block);
    write with fsync before closing (-e), or read other tasks' data (-C); with direct, O_DIRECT
    (--posix.odirect: IOR 4's form of IOR 3's -B, POSIX only); the files kept (-k) for the read
    phase and removed by the job; every iteration's results as JSON on stdout."""
    if phase not in IOR_PHASES:
        raise ValueError(f"IOR phase {phase!r}: not one of {', '.join(IOR_PHASES)}")
    if direct and api != "POSIX":
        raise ValueError(f"IOR's O_DIRECT is the POSIX backend's, not {api}'s")
    block = parse_size(transfer) * transfers
    args = ["-a", api] + (["--posix.odirect"] if direct else [])
    args += ["-w", "-e"] if phase == "write" else ["-r", "-C"]
    args += ["-k", "-b", str(block), "-t", str(parse_size(transfer)), "-i", str(iterations)]
    args += ["-o", str(path)]
    if layout == "fpp":
        args.append("-F")
    if api == "MPIIO":
        args.append("-c")  # collective: the access MPI-IO's aggregation is for
    return args + ["-O", "summaryFormat=JSON"]


def drop_cached_pages_command(
    workdir: Path, pattern: str = "testfile*", check: str = IOR.name, sync: bool = False
) -> str:
    """Shell that drops this node's cached pages of the files pattern matches in workdir (GNU
    dd: count=0 with iflag=nocache drops a whole file's clean pages; no privileges needed), so
    that a read phase reads the storage back, not memory: IOR's -C reads other ranks' data,
    which in a one-node job this node's cache holds. sync first writes back the dirty pages of
    a program that does not fsync (`sync FILE`). Both run without the runtime, which would log
    them as jobs of the check. A file it cannot drop is said on stderr; the read runs anyway."""
    files = shlex.quote(str(workdir)) + "/" + pattern
    write_back = 'env -u LD_PRELOAD sync "$f" && ' if sync else ""
    return (
        f"for f in {files}; do {write_back}"
        'env -u LD_PRELOAD dd if="$f" iflag=nocache count=0 status=none'
        f' || echo "{check}: could not drop the cached pages of $f: its read measures memory"'
        " >&2; done"
    )


def ior_results(stdout: str) -> dict:
    """IOR's JSON document from its stdout (ranks' warnings may come before it)."""
    start = stdout.find("{")
    if start < 0:
        raise ValueError("IOR printed no JSON document")
    return benchparse.ior_json(stdout[start:])


def ior_phase_results(outputs: dict[str, str], log_tags: dict) -> dict:
    """The results of a job's IOR phases ({phase: its stdout}), each phase's rows of its own
    operation with the tags of that phase's log (log_tags and phase) under "log_tags"."""
    rows, warnings = [], []
    for phase, stdout in outputs.items():
        try:
            parsed = ior_results(stdout)
        except ValueError as exc:
            raise ValueError(f"{phase} phase: {exc}") from None
        tags = {**log_tags, "phase": phase}
        rows += [{**r, "log_tags": tags} for r in parsed["results"] if r["operation"] == phase]
        warnings += parsed.get("warnings", [])
    return {"results": rows, "warnings": warnings}


def ior_sanity(parsed: dict, iterations: int, procs: int, block: int) -> list[str]:
    """What is wrong with an IOR run's results (empty: nothing)."""
    problems = []
    for op in ("write", "read"):
        rows = [r for r in parsed["results"] if r["operation"] == op]
        if len(rows) != iterations:
            problems.append(f"{len(rows)} {op} results, expected {iterations}")
        for r in rows:
            if r["tasks"] != procs or r["aggregate_bytes"] != procs * block:
                problems.append(
                    f"{op} iteration {r['iteration']}: {r['tasks']} tasks moving "
                    f"{r['aggregate_bytes']} bytes, expected {procs} moving {procs * block}"
                )
            if not r["bw_mib_s"] or r["bw_mib_s"] <= 0:
                problems.append(f"{op} iteration {r['iteration']}: no bandwidth")
    return problems


def ior_performance(parsed: dict) -> dict[str, float]:
    """write_mib_s and read_mib_s: the mean over the iterations, as IOR's summary gives it."""
    values = {}
    for op in ("write", "read"):
        bws = [r["bw_mib_s"] for r in parsed["results"] if r["operation"] == op]
        if bws:
            values[f"{op}_mib_s"] = sum(bws) / len(bws)
    return values


def save_json_lines(rows: list[dict], dest: Path, log_tags: dict) -> None:
    """One JSON line per row, with the tags of the job's log under "log_tags" unless the row
    names its own log's (the store links the rows to the log by them): what the store ingests."""
    dest.write_text("".join(json.dumps({"log_tags": log_tags, **row}) + "\n" for row in rows))


# ---- metadata rates: mdtest and iostudy's metarates --------------------------------------------
OPS_S = "ops/s"
#: mdtest operations the check reports, as performance variable names
MDTEST_PERF = {
    "File creation": "file_create_ops_s",
    "File stat": "file_stat_ops_s",
    "File removal": "file_remove_ops_s",
    "Directory creation": "dir_create_ops_s",
}


def mdtest_arguments(files_per_proc: int, iterations: int, path: Path) -> list[str]:
    """mdtest's options: files_per_proc files and directories per process, each process in a
    directory of its own (-u), iterations times."""
    return ["-n", str(files_per_proc), "-i", str(iterations), "-u", "-d", str(path)]


def mdtest_sanity(parsed: dict, procs: int, files_per_proc: int, iterations: int) -> list[str]:
    problems = []
    if parsed["tasks"] != procs:
        problems.append(f"{parsed['tasks']} tasks, expected {procs}")
    if parsed["items"] != procs * files_per_proc:
        problems.append(f"{parsed['items']} files, expected {procs * files_per_proc}")
    if parsed["iterations"] != iterations:
        problems.append(f"{parsed['iterations']} iterations, expected {iterations}")
    for op in MDTEST_PERF:
        if not (parsed["rate"] or {}).get(op, {}).get("mean"):
            problems.append(f"no {op} rate")
    return problems


def mdtest_performance(parsed: dict) -> dict[str, float]:
    """The mean rate over the iterations of each reported operation (mdtest's summary)."""
    return {name: parsed["rate"][op]["mean"] for op, name in MDTEST_PERF.items()}


def metarates_arguments(files_per_proc: int, path: Path) -> list[str]:
    return ["--dir", str(path), "--files-per-proc", str(files_per_proc)]


def metarates_lines(text: str) -> list[dict]:
    """The JSON lines metarates prints, one per phase (ValueError: one is not JSON within
    iostudy.core.jsonlimits' limits)."""
    return [jsonlimits.parse_line(line) for line in text.splitlines() if line.startswith("{")]


def metarates_sanity(lines: list[dict], procs: int, files_per_proc: int) -> list[str]:
    phases = [line.get("phase") for line in lines]
    problems = [] if phases == ["create", "stat", "utime", "remove"] else [f"phases {phases}"]
    for line in lines:
        if line.get("ops") != procs * files_per_proc or not line.get("rate_ops_s"):
            problems.append(f"{line.get('phase')}: {line.get('ops')} ops, no rate or wrong count")
    return problems


def metarates_performance(lines: list[dict]) -> dict[str, float]:
    return {f"{line['phase']}_ops_s": line["rate_ops_s"] for line in lines}
