"""ReFrame runs a site-free check on testcluster with the settings derived from system.json."""

import json

from slurmtest import REPO_ROOT, SYSTEM, VENV_BIN

from iostudy.run import profiles

CHECK = REPO_ROOT / "ci" / "tests" / "reframe" / "mpi_hello_check.py"
SETTINGS = REPO_ROOT / "configs" / "reframe_settings.py"


def test_reframe_mpi_hello(cluster, tmp_path):
    report = tmp_path / "report.json"
    proc = cluster.run(
        VENV_BIN / "reframe",
        f"--config-file={SETTINGS}",
        f"--system={SYSTEM}",
        f"--checkpath={CHECK}",
        "--run",
        f"--prefix={tmp_path}",
        f"--report-file={report}",
        "--exec-policy=serial",
        check=False,
        timeout=240,
        cwd=tmp_path,
        # as a campaign runs it: ReFrame's logs in the run's folder, the jobs' TMPDIR the caller's
        env={"TMPDIR": str(tmp_path), profiles.CALLER_TMPDIR: cluster.env.get("TMPDIR", "")},
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    cases = [case for run in json.loads(report.read_text())["runs"] for case in run["testcases"]]
    results = {(c["name"], c["system"], c["partition"], c["environ"]): c["result"] for c in cases}
    expected = {
        ("mpi_hello_check", SYSTEM, part["name"], env): "pass"
        for part in cluster.system["partitions"]
        for env in cluster.system["mpi"]
    }
    assert results == expected
