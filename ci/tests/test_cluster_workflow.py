"""iostudy's workflow (workflow/) on Slurm: every rule (ingest_run, compute_metrics,
render_report) runs as a Slurm job through the profile that `iostudy config snakemake-profile
testcluster` derives, on a run directory made of real logs (one of them truncated)."""

import json
import re
import shutil

from slurmtest import REPO_ROOT, SYSTEM, VENV_BIN

WORKFLOW = REPO_ROOT / "workflow"
RELEASE_LOG = (
    REPO_ROOT.parent / "shared/testdata/darshan-logs/release_logs/mpi-io-test-x86_64-3.5.0.darshan"
)
RUN = f"20260302T093000Z-quick-{SYSTEM}"


def make_run(results):
    logs = results / RUN / "darshan"
    logs.mkdir(parents=True)
    manifest = {
        "run_id": RUN,
        "campaign": "quick",
        "system": SYSTEM,
        "started": "2026-03-02T09:30:00Z",
        "finished": "2026-03-02T09:35:00Z",
        "status": "finished",
        "effective_config": {"campaign": {"name": "quick", "study": "quick"}},
    }
    (results / RUN / "manifest.json").write_text(json.dumps(manifest))
    shutil.copyfile(RELEASE_LOG, logs / "mpi-io-test.darshan")
    data = RELEASE_LOG.read_bytes()
    (logs / "truncated.darshan").write_bytes(data[: len(data) // 2])


def test_workflow_on_slurm(cluster, tmp_path):
    profile = tmp_path / "profile"
    cluster.run(VENV_BIN / "iostudy", "config", "snakemake-profile", SYSTEM, "--out", profile)
    work = tmp_path / "work"
    make_run(work / "results")
    proc = cluster.run(
        VENV_BIN / "snakemake",
        "--snakefile",
        WORKFLOW / "Snakefile",
        "--directory",
        work,
        "--configfile",
        WORKFLOW / ".test" / "config" / "config.yaml",
        "--profile",
        profile,
        check=False,
        timeout=400,
    )
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out

    ingest_log = (work / "logs" / "ingest_run" / f"{RUN}.log").read_text().splitlines()
    assert ingest_log[-1].endswith("logs 1 ingested, 0 skipped, 1 quarantined"), ingest_log
    assert (work / "results" / "metrics" / "jobs.csv").is_file()
    assert (work / "reports" / "quick" / "v1" / "index.html").is_file()

    jobids = re.findall(r"submitted with SLURM jobid (\d+)", out)
    assert len(jobids) == 3, out  # ingest_run, compute_metrics, render_report
    for jobid in jobids:
        assert cluster.sacct(jobid)["state"] == "COMPLETED"
