"""`iostudy schedule probe` on a system without Slurm: the user's real crontab (Debian's cron),
kept and put back around each test. The Slurm side (scrontab) is tested on the test cluster
(ci/tests/test_cluster_probe.py)."""

import subprocess

import pytest

from iostudy.cli.cli import main
from iostudy.run import schedule

OTHER = "15 3 * * * /bin/true  # someone else's entry"


def crontab_lines() -> list[str]:
    proc = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    return proc.stdout.splitlines() if proc.returncode == 0 else []


@pytest.fixture
def own_crontab():
    """The user's crontab as it was, put back afterwards; the test starts with OTHER in it."""
    before = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    subprocess.run(["crontab", "-"], input=OTHER + "\n", text=True, check=True)
    yield
    if before.returncode == 0 and before.stdout.strip():
        subprocess.run(["crontab", "-"], input=before.stdout, text=True, check=True)
    else:
        subprocess.run(["crontab", "-r"], capture_output=True)


def test_install_is_idempotent_and_remove_leaves_the_rest(own_crontab, tmp_path, capsys):
    args = [
        "schedule",
        "probe",
        "--system",
        "local",
        "--store",
        str(tmp_path / "store"),
        "--results",
        str(tmp_path / "results"),
        "--minute",
        "7",
    ]
    assert main(args + ["--dry-run"]) == 0
    shown = capsys.readouterr().out.splitlines()
    assert crontab_lines() == [OTHER], "--dry-run changed the crontab"
    assert shown[0] == "# iostudy schedule probe --system local"
    assert shown[1].startswith("7 * * * * mkdir -p ") and " && flock -n " in shown[1]
    assert "campaign run probe --system local" in shown[1]
    assert f"--ingest {tmp_path / 'store'}" in shown[1]

    assert main(args) == 0
    assert crontab_lines() == [OTHER, *shown]
    assert "installed in the crontab" in capsys.readouterr().out
    assert main(args) == 0  # again: unchanged
    assert crontab_lines() == [OTHER, *shown]
    assert "already in the crontab; unchanged" in capsys.readouterr().out
    assert main(args[:-1] + ["9"]) == 0  # another minute replaces the entry
    assert crontab_lines() == [OTHER, shown[0], shown[1].replace("7 * * * *", "9 * * * *", 1)]

    assert main(args + ["--remove", "--dry-run"]) == 0
    assert len(crontab_lines()) == 3
    assert main(args + ["--remove"]) == 0
    assert crontab_lines() == [OTHER]
    assert main(args + ["--remove"]) == 0
    assert "nothing removed" in capsys.readouterr().out


def test_the_installed_command_runs(tmp_path, capsys):
    """The command line of the entry, as cron would run it (sh -c), is a valid command: here
    with an unknown system in place of the real one it stops at once, naming the system in its
    log, whose folder it makes first (as on a fresh checkout)."""
    log = tmp_path / "no-folder-yet" / "probe.log"
    args = ["schedule", "probe", "--system", "local", "--log", str(log), "--dry-run"]
    assert main(args) == 0
    command = capsys.readouterr().out.splitlines()[1].split(None, 5)[5]
    command = command.replace("--system local", "--system no-such-system")
    proc = subprocess.run(["sh", "-c", command], capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2, proc.stderr
    assert "no such system 'no-such-system'" in log.read_text()


def test_errors_are_named(tmp_path, monkeypatch, capsys):
    assert main(["schedule", "probe", "--system", "nope", "--dry-run"]) == 2
    assert "no such system 'nope'" in capsys.readouterr().err
    monkeypatch.setenv("PATH", str(tmp_path))  # no crontab command
    assert main(["schedule", "probe", "--system", "local"]) == 1
    assert "crontab not found: install cron" in capsys.readouterr().err


def test_a_percent_sign_is_escaped_for_cron_only(tmp_path):
    """cron ends a command at an unescaped %; scrontab passes the line to a batch script."""
    odd = tmp_path / "50%"
    cron = schedule.probe_entry("local", "local", odd, odd, odd / "p.log", 0, 50)[-1]
    assert "%" not in cron.replace("\\%", "")
    scron = schedule.probe_entry("testcluster", "slurm", odd, odd, odd / "p.log", 0, 50)[-1]
    assert "\\%" not in scron and "50%" in scron
