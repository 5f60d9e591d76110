"""How the tests of the ReFrame checks run them the way a facility does: a campaign written into
the `configs_copy` fixture's copy of configs/, `iostudy campaign run` (a dry run that only
writes the job scripts, or a real run), and what the run leaves: the manifest, ReFrame's report,
the job scripts and the logs. The test modules beside it import it as `runs` (pytest puts this
folder on sys.path); the tests' own assertions stay in the tests.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from iostudy.benchmarks import spackenv
from iostudy.cli.cli import main


def write_campaign(configs: Path, name: str, entries: list[dict], **fields) -> Path:
    """configs/campaigns/NAME.json of the test study with the checks `entries`; fields add to
    (or replace) the campaign's other keys."""
    path = configs / "campaigns" / f"{name}.json"
    doc = {"name": name, "description": "test", "study": "tests", "checks": entries, **fields}
    path.write_text(json.dumps(doc))
    return path


def run_campaign(capsys, name: str, system: str, results: Path, *extra) -> tuple[int, str, Path]:
    """`iostudy campaign run NAME --system SYSTEM --results RESULTS [EXTRA]`: (status, output,
    run directory)."""
    status = main(["campaign", "run", name, "--system", system, "--results", str(results), *extra])
    out = capsys.readouterr().out
    runs = [p for p in Path(results).iterdir() if p.is_dir()] if Path(results).is_dir() else []
    assert len(runs) == 1, f"not one run directory in {results}: {runs}\n{out}"
    return status, out, runs[0]


def dry_run(capsys, name: str, system: str, results: Path) -> tuple[int, str, Path]:
    """`iostudy campaign run NAME --system SYSTEM --dry-run`: ReFrame writes the job scripts and
    runs nothing. (status, output, run directory)."""
    return run_campaign(capsys, name, system, results, "--dry-run")


def real_run(capsys, configs: Path, name: str, entries: list[dict], results: Path) -> Path:
    """The campaign NAME of `entries` run for real on local; it must pass (else its output's
    end is shown). Its run directory."""
    write_campaign(configs, name, entries)
    status, out, run_dir = run_campaign(capsys, name, "local", results)
    assert status == 0, out[-3000:]
    return run_dir


def require_view(system: str, *programs: str, what: str | None = None) -> str:
    """The MPI flavour of the system's Spack view (this machine's build/spack/<system>) when it
    has every one of programs; else the test is skipped, naming what (by default the programs)
    and how to build it."""
    if spackenv.view_mpi(system) is None or not all(
        spackenv.view_program(system, name) for name in programs
    ):
        pytest.skip(
            f"no {what or ', '.join(programs)} in the Spack view of {system}: "
            f"run `make spack SYSTEM={system}`"
        )
    return spackenv.view_mpi(system)[0]


def manifest(run_dir: Path) -> dict:
    return json.loads((run_dir / "manifest.json").read_text())


def report_cases(run_dir: Path) -> list[dict]:
    """Every test case of ReFrame's report of the run."""
    report = json.loads((run_dir / "reframe" / "report.json").read_text())
    return [case for run in report["runs"] for case in run["testcases"]]


def perf_values(case: dict) -> dict[str, list]:
    """A test case's performance variables by name, without the system:partition prefix."""
    return {key.split(":")[-1]: value for key, value in case["perfvalues"].items()}


def skip_lines(out: str, check: str) -> list[str]:
    """The lines of a campaign's output that report a test of the check as skipped."""
    return [line for line in out.splitlines() if "SKIP" in line and check in line]


def job_scripts(run_dir: Path, stage: str) -> list[Path]:
    """The job scripts ReFrame left in the stage folders named like the glob `stage` (for a
    parameterised check, "CHECK_*": a folder per point), sorted."""
    return sorted((run_dir / "reframe" / "stage").rglob(f"{stage}/rfm_job.sh"))


def exported(script: str, name: str) -> str:
    """The value of a variable after bash runs the script's export lines."""
    exports = "\n".join(line for line in script.splitlines() if line.startswith("export "))
    proc = subprocess.run(
        ["bash", "-c", f'{exports}\nprintf %s "${name}"'], capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    return proc.stdout


def log_tags(script: str) -> dict[str, str]:
    """The log tags (IOSTUDY_LOG_TAGS) the script's exports leave: the last export's."""
    return dict(kv.split("=", 1) for kv in exported(script, "IOSTUDY_LOG_TAGS").split(";"))


def darshan_logs(run_dir: Path) -> list[Path]:
    """The runtime's logs of the run, sorted."""
    return sorted((run_dir / "darshan").rglob("*.darshan"))


def records_by_name(report, module: str) -> dict[str, object]:
    """{file name: its counters (a pandas row)} of a module's records in a log PyDarshan read
    (darshan.DarshanReport with read_all); of a file with records of several ranks, the last."""
    counters = report.records[module].to_df()["counters"]
    rows = zip(counters["id"], counters.iterrows(), strict=True)
    return {report.name_records[i]: row for i, (_, row) in rows}
