"""Running a campaign (configs/campaigns/) on a system with ReFrame underneath (`iostudy
campaign`: :mod:`iostudy.cli.campaign`).

A run gets its own directory, results/<run-id>/ with run-id <UTC yyyymmddThhmmssZ>-<campaign>-
<system>:

    manifest.json   what was run: campaign, system, git commit, tool versions, command lines,
                    effective configuration, status and exit code (written at the start, completed
                    at the end)
    reframe/        ReFrame's --prefix: stage/, output/<system>/<partition>/<environ>/<test>/
                    (job script, stdout, stderr, the check's own files such as iomodel.jsonl),
                    perflogs/, report.json, reframe.out (ReFrame's console output),
                    debug.log (its debug log) and startup.log (its log of loading its
                    configuration)
    darshan/        the runtime's logs, <Y>/<M>/<D>/*.darshan, one per job, tagged
    scratch/        the benchmarks' files (a system's scratch storage relative to the run)

Every check gets the campaign's parameters as ReFrame variables: -S CHECK.VAR=VALUE, or
-P CHECK.VAR=V1,V2 for a list (a scan) and for the repetitions, so that each combination is a test
case of its own. A check's "exclude" entries leave combinations out of the scan: the check gets
them (-S CHECK.excluded=...) and skips those cases without running anything; they count as
"excluded", not as skips that leave the campaign incomplete. (ReFrame's -x cannot do it: it
filters before -P makes the combinations.)
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import re
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from iostudy import __version__
from iostudy.benchmarks import checks, spackenv
from iostudy.benchmarks.params import PER_NODE_OF_SYSTEM
from iostudy.core import checknames, config, provenance
from iostudy.core.reframe_names import param_text
from iostudy.run import profiles
from iostudy.run.campaign_rules import (
    CampaignError,
    resolve_max_procs,
    resolve_storage_target,
    validate,
)
from iostudy.run.runsystem import RunSystem

REPO_ROOT = config.REPO_ROOT
CHECKS_DIR = REPO_ROOT / "reframe-checks"
REFRAME_SETTINGS = REPO_ROOT / "configs" / "reframe_settings.py"


def run_id(campaign: str, system: str, now: dt.datetime | None = None) -> str:
    now = now or dt.datetime.now(dt.timezone.utc)
    return f"{now:%Y%m%dT%H%M%SZ}-{campaign}-{system}"


def check_file(check: str) -> Path:
    return CHECKS_DIR / f"{check}.py"


def environs(campaign: dict, system: dict) -> list[str]:
    """The MPI flavours to run with: the campaign's, all of them on the system."""
    wanted = campaign["environs"] or list(system["mpi"])
    missing = [e for e in wanted if e not in system["mpi"]]
    if missing:
        raise CampaignError(
            f"campaign {campaign['name']}: environs: {', '.join(missing)} not on system "
            f"{system['name']} (it has {', '.join(system['mpi'])})"
        )
    return wanted


def needed_binaries(campaign: dict, system: str, flavours: list[str]) -> list[Path]:
    """The runtime and every check's programs, where the checks will take them from."""
    needed = list(dict.fromkeys(checks.runtime_library(system, e) for e in flavours))
    for entry in campaign["checks"]:
        benchmark = checknames.CHECKS[entry["check"]].benchmark
        if benchmark:
            needed += [checks.benchmark_program(system, benchmark, e) for e in flavours]
    return needed


def scratch_dir(system: dict, run_dir: Path) -> Path:
    """The system's scratch storage (config.scratch_storage), relative paths taken from the run
    directory."""
    return config.storage_path(config.scratch_storage(system)["path"], run_dir)


def reframe_executable() -> list[str]:
    beside = Path(sys.executable).parent / "reframe"
    if beside.is_file():
        return [str(beside)]
    found = shutil.which("reframe")
    if not found:
        raise CampaignError("ReFrame is not installed: run `make setup`")
    return [found]


def reframe_command(
    campaign: dict, system: RunSystem, run_dir: Path, rid: str, flavours: list[str], dry_run: bool
) -> list[str]:
    """ReFrame's command line for the whole campaign (one session, one report)."""
    cmd = reframe_executable() + [
        "-C",
        str(REFRAME_SETTINGS),
        "--system",
        system.name,
        "--prefix",
        str(run_dir / "reframe"),
        "--report-file",
        str(run_dir / "reframe" / "report.json"),
        "--exec-policy=serial",
        "--nocolor",
        "-p",
        f"^({'|'.join(map(re.escape, flavours))})$",
    ]
    for name, value in (
        ("campaign", campaign["name"]),
        ("run_id", rid),
        ("run_dir", run_dir),
        ("scratch_dir", scratch_dir(system.description, run_dir)),
    ):
        cmd += ["-S", f"{name}={value}"]
    for entry in campaign["checks"]:
        check = entry["check"]
        cmd += ["-c", str(check_file(check))]
        view_mpi = system.spack_view_mpi if checknames.CHECKS[check].spack_view else None
        if view_mpi in flavours:
            cmd += ["-S", f"{check}.valid_prog_environs={view_mpi}"]
        for name, value in entry["parameters"].items():
            if name == "procs_per_node" and value == "system":
                value = PER_NODE_OF_SYSTEM
            elif name in ("max_procs", "procs"):
                value = resolve_max_procs(value, system.description)
            elif name == "storage_target":
                value = resolve_storage_target(value, system)
            if isinstance(value, list):
                cmd += ["-P", f"{check}.{name}={','.join(map(param_text, value))}"]
            else:
                cmd += ["-S", f"{check}.{name}={param_text(value)}"]
        if entry["repetitions"] > 1:
            cmd += ["-P", f"{check}.repetition={','.join(map(str, range(entry['repetitions'])))}"]
        else:
            cmd += ["-S", f"{check}.repetition=0"]
        if entry.get("exclude"):
            excluded = [checks.exclusion_text(e["parameters"]) for e in entry["exclude"]]
            cmd += ["-S", f"{check}.excluded={','.join(excluded)}"]
    cmd.append("--dry-run" if dry_run else "--run")
    return cmd


def tool_versions(system: dict) -> dict:
    versions = provenance.package_versions(
        {"reframe": "reframe-hpc", "snakemake": "snakemake", "darshan": "darshan"}
    )
    for flavour, mpi in system["mpi"].items():
        # The flavour's mpirun (or compiler wrapper) names the library's version.
        out = provenance.command_output(mpi.get("mpirun") or mpi["cc"], "--version")
        match = re.search(r"\d+\.\d+(\.\d+)?", out or "")
        versions[flavour] = match.group(0) if match else None
    return versions


def benchmark_versions(campaign: dict, system: str) -> dict[str, str | None]:
    """check -> "<package>@<version>" of the benchmark it runs: the Spack build's version, else
    iostudy's own for its benchmarks (`make setup` builds them from this checkout), else None
    (unknown: Debian's hmmsearch, or a check that will skip for want of its program)."""
    record = spackenv.build_record(system) or {}
    built = {s["name"]: s["version"] for s in record.get("specs", []) if s.get("version")}
    versions = {}
    for entry in campaign["checks"]:
        check = entry["check"]
        package = checknames.CHECKS[check].package
        if package in built:
            versions[check] = f"{package}@{built[package]}"
        elif checknames.CHECKS[check].benchmark:
            versions[check] = f"iostudy@{__version__}"
        else:
            versions[check] = None
    return versions


def _now() -> str:
    return dt.datetime.now(dt.timezone.utc).isoformat(timespec="seconds")


def new_run_dir(results: Path, campaign: str, system: str) -> tuple[str, Path]:
    """A fresh results/<run-id>/ (a run started within the same second waits for the next)."""
    results.mkdir(parents=True, exist_ok=True)
    while True:
        rid = run_id(campaign, system)
        try:
            (results / rid).mkdir()
            return rid, results / rid
        except FileExistsError:
            time.sleep(0.2)


def write_manifest(run_dir: Path, manifest: dict) -> None:
    tmp = run_dir / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2) + "\n")
    tmp.replace(run_dir / "manifest.json")


def keep_debug_logs(reframe_dir: Path) -> None:
    """Moves ReFrame's logs from its temporary folder (reframe/tmp) into reframe/: the debug logs
    its console's last line names (debug.log, debug-1.log, ...), then the one it wrote while
    loading its configuration (startup.log); removes the folder once empty."""
    tmp = reframe_dir / "tmp"
    for line in (reframe_dir / "reframe.out").read_text(errors="replace").splitlines():
        if line.startswith("Log file(s) saved in "):
            for i, found in enumerate(re.findall(r"'([^']+)'", line)):
                src = Path(found)
                if src.is_file() and src.parent == tmp:
                    shutil.move(src, reframe_dir / (f"debug-{i}.log" if i else "debug.log"))
    for i, src in enumerate(sorted(tmp.glob("rfm-*.log"))):
        shutil.move(src, reframe_dir / (f"startup-{i}.log" if i else "startup.log"))
    with contextlib.suppress(OSError):
        tmp.rmdir()


# ReFrame's console line of a skipped case (its JSON report keeps no reason):
# "[     SKIP ] (1/4) ior_check %.layout=shared /3eeae412 @local:default+openmpi [reason]"
SKIP_LINE = re.compile(
    r"^\[\s*SKIP\s*\] \(\d+/\d+\) .*? /(?P<hash>[0-9a-f]+) @\S*?\+(?P<environ>\S+) "
    r"\[(?P<reason>.*)\]$"
)


def skip_reasons(console: Path) -> dict[tuple[str, str], str]:
    """(test hash, environ) -> the reason ReFrame printed for a case it skipped."""
    try:
        lines = console.read_text(errors="replace").splitlines()
    except OSError:
        return {}
    found = (SKIP_LINE.match(line) for line in lines)
    return {(m["hash"], m["environ"]): m["reason"] for m in found if m}


def case_results(
    report: Path, optional: tuple[str, ...] = (), excluded: dict | None = None, reasons=None
) -> list[dict] | None:
    """Every test case of ReFrame's report (None without one): check, name, environ, result
    and, for a case that did not run, why (``reasons``: :func:`skip_reasons`). A skipped case
    of an optional check (its program is not built here) is "skip-optional", one of a
    combination the campaign excluded (excluded: check -> its entries, checks.exclusion_text)
    "excluded", apart from the skips that leave the campaign incomplete."""
    try:
        data = json.loads(report.read_text())
    except (OSError, json.JSONDecodeError):
        return None
    out = []
    for run in data.get("runs", []):
        for case in run.get("testcases", []):
            name = case.get("name") or ""
            check = name.split(" ")[0]
            result = case.get("result")
            if result == "skip":
                # a variable's value, set with -S or scanned with -P: a key of the case
                if checks.excluded_by((excluded or {}).get(check, []), case.get):
                    result = "excluded"
                elif check in optional:
                    result = "skip-optional"
            why = (reasons or {}).get((case.get("hashcode"), case.get("environ")))
            out.append(
                {
                    "check": check,
                    "name": case.get("display_name") or name,
                    "environ": case.get("environ"),
                    "result": result,
                    "reason": why or case.get("fail_reason"),
                }
            )
    return out


def report_summary(cases: list[dict] | None) -> dict | None:
    """Test cases by result ({"pass": 2, "fail": 1}), None without a report."""
    if cases is None:
        return None
    counts = {}
    for case in cases:
        counts[case["result"]] = counts.get(case["result"], 0) + 1
    return counts


def require_built(binaries: list[Path], dry_run: bool) -> list[Path]:
    """Stops a run whose programs are not built; returns those a dry run goes without."""
    missing = [p for p in binaries if not p.is_file()]
    if missing and not dry_run:
        raise CampaignError(
            f"not built: {', '.join(config.in_checkout(p) for p in missing)}; run `make setup`"
        )
    return missing


def start_manifest(run: dict, binaries: list[Path], cmd: list[str], argv: list[str]) -> dict:
    """The manifest written as the run starts. run: the run's id, campaign, system
    (:class:`RunSystem`), flavours and dry_run."""
    campaign, system = run["campaign"], run["system"]
    commit, dirty = provenance.git_state()
    return {
        "run_id": run["rid"],
        "campaign": campaign["name"],
        "study": campaign["study"],
        "system": system.name,
        "dry_run": run["dry_run"],
        "started": _now(),
        "finished": None,
        "status": "running",
        "exit_code": None,
        "git_commit": commit,
        "git_dirty": dirty,
        "tool_versions": tool_versions(system.description),
        "binaries_sha256": {
            config.in_checkout(p): provenance.sha256_file(p) if p.is_file() else None
            for p in binaries
        },
        # The Spack build (record, lock) the binaries come from; None: `make setup`'s build.
        "spack_build": spackenv.manifest_entry(system.name, commit),
        # why the run lacks the Spack build its system expects (None: it has one or needs none)
        "spack_build_missing": spackenv.missing_build(system.name),
        "benchmark_versions": benchmark_versions(campaign, system.name),
        "command_line": ["iostudy", *argv],
        "reframe_command_line": cmd,
        "environs": run["flavours"],
        "effective_config": {
            "system": system.description,
            "campaign": campaign,
            "references": system.references,
        },
        "layout": {
            "reframe": "reframe",
            "report": "reframe/report.json",
            "darshan": "darshan",
            "scratch": str(scratch_dir(system.description, Path("."))),
        },
    }


def run_reframe(cmd: list[str], run_dir: Path, manifest: dict, echo: Callable[[str], None]) -> int:
    """Runs ReFrame, each line of its progress to echo as it comes and to reframe/reframe.out,
    its temporary files in reframe/tmp; returns its exit status. Interrupted, the manifest says
    so."""
    tmp = run_dir / "reframe" / "tmp"
    tmp.mkdir()
    with open(run_dir / "reframe" / "reframe.out", "w") as log:
        proc = subprocess.Popen(
            cmd,
            cwd=run_dir,
            env=profiles.reframe_environment(tmp),
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            bufsize=1,
        )
        try:
            for line in proc.stdout:
                echo(line)
                log.write(line)
            return proc.wait()
        except KeyboardInterrupt:
            # ReFrame got the signal too (same process group) and cancels its jobs.
            rc = proc.wait()
            manifest.update(finished=_now(), status="interrupted", exit_code=rc)
            write_manifest(run_dir, manifest)
            raise


def run_status(campaign: dict, run_dir: Path, rc: int, dry_run: bool) -> tuple[str, list | None]:
    """The run's status and its test cases (:func:`case_results`), from ReFrame's report and
    console."""
    optional = tuple(e["check"] for e in campaign["checks"] if e["optional"])
    excluded = {
        e["check"]: [checks.exclusion_text(x["parameters"]) for x in e.get("exclude") or []]
        for e in campaign["checks"]
    }
    reasons = skip_reasons(run_dir / "reframe" / "reframe.out")
    cases = case_results(run_dir / "reframe" / "report.json", optional, excluded, reasons)
    if cases is None:
        return "error", cases
    if rc != 0:
        return "failed", cases
    if any(c["result"] == "skip" for c in cases):
        return "incomplete", cases  # a check could not run: a skip never counts as a pass
    return ("dry-run" if dry_run else "passed"), cases


@dataclass
class Prepared:
    """A run ready to start: its directory made, its manifest written."""

    rid: str
    run_dir: Path
    campaign: dict
    dry_run: bool
    cmd: list[str]
    manifest: dict
    #: the programs a dry run goes without (not built)
    not_built: list[Path]


def prepare(
    campaign: dict, system: RunSystem, results: Path, dry_run: bool, argv: list[str]
) -> Prepared:
    """Checks the campaign on the system (both read already: config.load_campaign,
    :func:`iostudy.run.runsystem.resolve_system`), makes its run directory and writes its
    manifest."""
    flavours = environs(campaign, system.description)
    validate(campaign, system)
    binaries = needed_binaries(campaign, system.name, flavours)
    not_built = require_built(binaries, dry_run)

    rid, run_dir = new_run_dir(Path(results).resolve(), campaign["name"], system.name)
    (run_dir / "darshan").mkdir()
    (run_dir / "reframe").mkdir()
    cmd = reframe_command(campaign, system, run_dir, rid, flavours, dry_run)
    this_run = {
        "rid": rid,
        "campaign": campaign,
        "system": system,
        "dry_run": dry_run,
        "flavours": flavours,
    }
    manifest = start_manifest(this_run, binaries, cmd, argv)
    write_manifest(run_dir, manifest)
    return Prepared(rid, run_dir, campaign, dry_run, cmd, manifest, not_built)


def execute(prepared: Prepared, echo: Callable[[str], None]) -> tuple[str, dict | None]:
    """Runs ReFrame (its output's lines to echo) and completes the manifest; returns the run's
    status (:func:`run_status`) and its test cases by result (:func:`report_summary`)."""
    run_dir, manifest = prepared.run_dir, prepared.manifest
    rc = run_reframe(prepared.cmd, run_dir, manifest, echo)
    keep_debug_logs(run_dir / "reframe")
    # Each job removes its own memory-target folder; the run's empty tree above them goes here,
    # once no job can be making a folder in it (this machine's /dev/shm: local, the test cluster).
    checks.remove_empty_dirs(checks.memory_target_root(prepared.rid))
    status, cases = run_status(prepared.campaign, run_dir, rc, prepared.dry_run)
    counts = report_summary(cases)
    # what did not run and why, for the report's verdict
    not_run = None if cases is None else [c for c in cases if c["result"] not in ("pass", "fail")]
    manifest.update(finished=_now(), status=status, exit_code=rc, results=counts, not_run=not_run)
    write_manifest(run_dir, manifest)
    return status, counts
