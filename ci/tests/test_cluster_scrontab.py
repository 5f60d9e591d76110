"""scrontab: a recurring job registered with slurmctld (the form ci/templates/scrontab uses)."""

import re

from slurmtest import REPO_ROOT, poll

ENTRY = "0 * * * * /bin/true"


def test_scrontab_entry_registered(cluster, own_scrontab):
    name = "iostudy-scron-test"
    cluster.run("scrontab", "-", input=f"#SCRON --job-name={name} --time=1\n{ENTRY}\n")
    assert ENTRY in cluster.run("scrontab", "-l").stdout.splitlines()

    jobs = cluster.run("squeue", "-h", f"--name={name}", "-o", "%i").stdout.split()
    assert len(jobs) == 1, jobs
    shown = cluster.run("scontrol", "show", "job", jobs[0]).stdout
    assert re.search(r"\bCronJob=Yes\b", shown), shown

    cluster.run("scrontab", "-r")
    poll(
        lambda: not cluster.run("squeue", "-h", f"--name={name}", "-o", "%i").stdout.split(),
        30,
        "the cron job to leave the queue after scrontab -r",
    )


def test_scrontab_template_is_accepted(cluster, own_scrontab):
    """ci/templates/scrontab as shipped: scrontab parses its #SCRON options and registers it."""
    template = REPO_ROOT / "ci" / "templates" / "scrontab"
    cluster.run("scrontab", template)
    entries = [line for line in template.read_text().splitlines() if line[:1].isdigit()]
    listed = cluster.run("scrontab", "-l").stdout.splitlines()
    assert entries and all(entry in listed for entry in entries)
    jobs = cluster.run("squeue", "-h", "--name=iostudy-campaign", "-o", "%i %l").stdout.split()
    assert jobs[1:] == ["4:00:00"], jobs
    assert "CronJob=Yes" in cluster.run("scontrol", "show", "job", jobs[0]).stdout
