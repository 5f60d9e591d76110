"""The Snakemake workflow (workflow/) run by the real Snakemake on the .test scenario: a working
directory whose results/ holds run directories made of real logs (see rundirs.py).

The DAG is ingest_run (one job per run directory) -> render_report and compute_metrics (the
metrics' CSV files are not the report's input). Without a report build available the run
stops at compute_metrics (the dry run still checks the whole DAG)."""

import csv
import json
import subprocess
import sys
from pathlib import Path

import pytest

from . import filestate
from .rundirs import REPO_ROOT, RUNTIME_MIB, make_run_dir

pytestmark = pytest.mark.workflow

WORKFLOW = REPO_ROOT / "workflow"
SNAKEFILE = WORKFLOW / "Snakefile"
TEST_CONFIG = WORKFLOW / ".test" / "config" / "config.yaml"
BIN = Path(sys.executable).parent
RUNS = ["20260302T090000Z-quick-local", "20260303T090000Z-quick-local"]


def snakemake(workdir, *args, check=True):
    cmd = [
        BIN / "snakemake",
        "-s",
        SNAKEFILE,
        "--directory",
        workdir,
        "--configfile",
        TEST_CONFIG,
        "-c2",
        *args,
    ]
    proc = subprocess.run(
        [str(c) for c in cmd], capture_output=True, text=True, timeout=600, cwd=workdir
    )
    if check:
        assert proc.returncode == 0, proc.stdout + proc.stderr
    return proc


def job_stats(proc) -> dict[str, int]:
    """Snakemake's "Job stats" table: jobs per rule."""
    text = proc.stdout + proc.stderr
    if "Job stats:" not in text:
        return {}
    table = text.split("Job stats:", 1)[1].split("\n\n", 1)[0].splitlines()[3:]
    return {rule: int(n) for rule, n in (line.split() for line in table) if rule != "total"}


def report_available() -> bool:
    proc = subprocess.run(
        [str(BIN / "iostudy"), "report", "build", "--help"], capture_output=True, timeout=60
    )
    return proc.returncode == 0


@pytest.fixture
def workdir(tmp_path, release_log):
    work = tmp_path / "work"
    make_run_dir(work / "results", RUNS[0], release_log, tmp_path / "scratch")
    return work


def read_csv(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def test_dag_has_every_rule(workdir, release_log, tmp_path):
    make_run_dir(workdir / "results", RUNS[1], release_log, tmp_path / "scratch2", corrupt=False)
    proc = snakemake(workdir, "--dry-run")
    assert job_stats(proc) == {
        "all": 1,
        "ingest_run": 2,
        "compute_metrics": 1,
        "render_report": 1,
    }


def test_workflow_runs_and_is_incremental(workdir, release_log, tmp_path):
    target = [] if report_available() else ["compute_metrics"]
    proc = snakemake(workdir, *target)
    expected = {"ingest_run": 1, "compute_metrics": 1}
    if not target:
        expected |= {"render_report": 1, "all": 1}
    assert job_stats(proc) == expected

    store = workdir / "results" / "store"
    assert filestate.part(store, "runs", RUNS[0]).is_file()
    assert (store / "store.duckdb").is_file()
    log = (workdir / "logs" / "ingest_run" / f"{RUNS[0]}.log").read_text().splitlines()
    assert log[-1].endswith("logs 2 ingested, 0 skipped, 1 quarantined"), log
    metrics = workdir / "results" / "metrics"
    jobs = {Path(r["log_path"]).name: r for r in read_csv(metrics / "jobs.csv")}
    assert set(jobs) == {"dd_id1.darshan", "mpi-io-test_id3171794.darshan"}
    dd = jobs["dd_id1.darshan"]
    assert int(dd["bytes_read"]) + int(dd["bytes_written"]) == RUNTIME_MIB * 2**20
    assert jobs["mpi-io-test_id3171794.darshan"]["strategy"] == "N:1"
    assert float(jobs["mpi-io-test_id3171794.darshan"]["mib_s_per_cn"]) > 0
    (model,) = read_csv(metrics / "model_throughput.csv")
    assert (model["n"], model["p"], model["f"], model["m"]) == ("1", "1", "1", "1")
    if not target:
        assert (workdir / "reports" / "quick" / "index.html").is_file()
        assert (workdir / "reports" / "quick" / "v1" / "index.html").is_file()

    # Nothing changed: nothing to do.
    assert job_stats(snakemake(workdir, *target)) == {}

    # A new run: only it is ingested, then the metrics (and report) are redone.
    make_run_dir(workdir / "results", RUNS[1], release_log, tmp_path / "scratch2", corrupt=False)
    proc = snakemake(workdir, *target)
    assert job_stats(proc) == expected
    log = (workdir / "logs" / "ingest_run" / f"{RUNS[1]}.log").read_text().splitlines()
    # Its release log is the same file as in the first run: skipped by sha256.
    assert log[-1].endswith("logs 1 ingested, 1 skipped, 0 quarantined"), log
    assert len(read_csv(metrics / "jobs.csv")) == 3
    if not target:
        assert (workdir / "reports" / "quick" / "v2" / "index.html").is_file()


def test_bad_config_is_rejected(workdir):
    proc = snakemake(workdir, "--dry-run", "--config", "study=no good", check=False)
    assert proc.returncode != 0
    out = proc.stdout + proc.stderr
    assert "Error validating config file" in out
    assert "'no good' does not match" in out


def test_a_report_per_study_of_the_runs_and_no_dry_run(workdir, release_log, tmp_path):
    """No study in the config: each run's manifest names its study (its campaign's), and each
    study gets its report; a dry run is left out (nothing ran), its study too."""
    other = "20260304T090000Z-probe-local"
    make_run_dir(workdir / "results", other, release_log, tmp_path / "s2", corrupt=False)
    dry = "20260305T090000Z-acceptance-local"
    make_run_dir(workdir / "results", dry, release_log, tmp_path / "s3", corrupt=False)
    for run, study, extra in ((other, "interference", {}), (dry, "acceptance", {"dry_run": True})):
        path = workdir / "results" / run / "manifest.json"
        manifest = json.loads(path.read_text())
        manifest["effective_config"]["campaign"]["study"] = study
        path.write_text(json.dumps(manifest | extra))
    proc = snakemake(workdir, "--dry-run")
    assert job_stats(proc) == {"all": 1, "ingest_run": 2, "compute_metrics": 1, "render_report": 2}
    out = proc.stdout + proc.stderr
    assert "reports/quick/index.html" in out and "reports/interference/index.html" in out
    assert "acceptance" not in out


def test_no_runs_says_what_to_do(tmp_path):
    (tmp_path / "results").mkdir()
    proc = snakemake(tmp_path, "--dry-run", check=False)
    assert proc.returncode != 0
    assert "no run directory (with manifest.json) under results" in proc.stdout + proc.stderr


def test_lint_only_asks_for_conda(workdir):
    # The rules run in the project's .venv (make setup), not in per-rule conda environments:
    # that is the one lint left.
    proc = snakemake(workdir, "--lint", check=False)
    lints = {
        line.strip()
        for line in (proc.stdout + proc.stderr).splitlines()
        if line.strip().startswith("* ")
    }
    assert lints == {"* Specify a conda environment or container for each rule.:"}, (
        proc.stdout + proc.stderr
    )


def test_imports_of_accounting_and_collectors(workdir, tmp_path):
    """Slurm accounting (a real export), a storage server's iostat-mon folder (the real monitor,
    stopped by SIGTERM) and an fsstats snapshot (a real scan), named in the config, are
    imported into the store before the report, and only again when they change."""
    import shutil
    import signal
    import time

    if not shutil.which("iostat"):
        pytest.skip("sysstat's iostat is not installed (make apt-packages)")
    iostat = tmp_path / "srv1"
    mon = subprocess.Popen(
        [BIN / "iostudy", "iostat-mon", "--interval", "1", "--out", iostat],
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and not any(
            '"io"' in p.read_text() for p in iostat.glob("*.jsonl")
        ):
            time.sleep(0.2)
    finally:
        mon.send_signal(signal.SIGTERM)
        assert mon.wait(15) == 0
    tree = tmp_path / "fs" / "project"
    tree.mkdir(parents=True)
    (tree / "data.bin").write_bytes(b"x" * 5000)
    snapshot = tmp_path / "fs.json"
    scan = [BIN / "iostudy", "fsstats", "scan", tmp_path / "fs", "--out", snapshot, "-q"]
    subprocess.run([str(c) for c in scan], check=True, capture_output=True)
    sacct = REPO_ROOT / "analysis" / "tests" / "data" / "sacct" / "testcluster.txt"
    extra = tmp_path / "collect.yaml"
    extra.write_text(
        f"sacct: {{tc: '{sacct}'}}\niostat: {{srv1: '{iostat}'}}\nfsstats: {{jan: '{snapshot}'}}\n"
    )
    target = [] if report_available() else ["compute_metrics"]
    proc = snakemake(workdir, "--configfile", extra, *target)
    stats = job_stats(proc)
    assert {k: stats[k] for k in ("import_sacct", "import_iostat", "import_fsstats")} == {
        "import_sacct": 1,
        "import_iostat": 1,
        "import_fsstats": 1,
    }, stats
    store = workdir / "results" / "store"
    for part in ("sched/sacct-tc", "iostat/iostat-srv1", "fsstats/jan"):
        assert filestate.part(store, *part.split("/")).is_file(), part
    if not target:
        html = (workdir / "reports" / "quick" / "v1" / "index.html").read_text()
        assert 'href="#section-iostat"' in html and 'href="#section-fsstats"' in html
    # Nothing changed: nothing imported again; a new snapshot: only it.
    assert job_stats(snakemake(workdir, "--configfile", extra, *target)) == {}
