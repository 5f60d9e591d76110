"""Snakemake runs a two-rule workflow as Slurm jobs, through the profile that
`iostudy config snakemake-profile testcluster` derives from system.json."""

import re

from slurmtest import REPO_ROOT, SYSTEM, VENV_BIN

SNAKEFILE = REPO_ROOT / "ci" / "tests" / "snakemake" / "Snakefile"


def test_snakemake_on_slurm(cluster, tmp_path):
    profile = tmp_path / "profile"
    cluster.run(VENV_BIN / "iostudy", "config", "snakemake-profile", SYSTEM, "--out", profile)
    work = tmp_path / "work"
    proc = cluster.run(
        VENV_BIN / "snakemake",
        "--snakefile",
        SNAKEFILE,
        "--directory",
        work,
        "--profile",
        profile,
        check=False,
        timeout=240,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr

    greeting = (work / "greeting.txt").read_text().split()
    assert greeting[:2] == ["hello", "from"]
    assert greeting[2] in cluster.node_hostnames().values()
    assert (work / "count.txt").read_text().strip() == "3"

    jobids = re.findall(r"submitted with SLURM jobid (\d+)", proc.stdout + proc.stderr)
    assert len(jobids) == 2, proc.stderr
    for jobid in jobids:
        assert cluster.sacct(jobid)["state"] == "COMPLETED"
