"""Accounting: slurmdbd records how jobs ended, as sacct (and so ReFrame and Snakemake) see it."""


def test_sacct_completed(cluster):
    jobid = cluster.sbatch("--time=1", "--output=/dev/null", "--wrap=true")
    record = cluster.wait_job(jobid)
    assert (record["state"], record["exit_code"]) == ("COMPLETED", "0:0")


def test_sacct_failed_with_exit_code(cluster):
    jobid = cluster.sbatch("--time=1", "--output=/dev/null", "--wrap=exit 3")
    record = cluster.wait_job(jobid)
    assert (record["state"], record["exit_code"]) == ("FAILED", "3:0")
