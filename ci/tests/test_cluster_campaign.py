"""The quick campaign on testcluster, as a facility runs it: `iostudy campaign run quick --system
testcluster`, ReFrame submitting the I/O-model check to Slurm on both nodes, under the runtime."""

import json
from pathlib import Path

from slurmtest import REPO_ROOT, SYSTEM, VENV_BIN

from iostudy.core import config
from iostudy.logs.darshanlog import read_log


def test_quick_campaign_on_testcluster(cluster, tmp_path):
    # The run directory must be visible from every node: the nodes share this machine's files.
    results = tmp_path / "results"
    proc = cluster.run(
        VENV_BIN / "iostudy",
        "campaign",
        "run",
        "quick",
        "--system",
        SYSTEM,
        "--results",
        results,
        check=False,
        timeout=900,
        cwd=REPO_ROOT,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    run_dir = Path(proc.stdout.splitlines()[-1])
    assert run_dir.parent == results and run_dir.name.endswith(f"-quick-{SYSTEM}")

    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert (manifest["status"], manifest["exit_code"]) == ("passed", 0)
    assert manifest["effective_config"]["system"] == cluster.system

    report = json.loads((run_dir / "reframe" / "report.json").read_text())
    cases = [case for run in report["runs"] for case in run["testcases"]]
    # quick's IOR and mdtest points are optional: they pass where the Spack view of testcluster
    # exists (make spack SYSTEM=testcluster), else they are skipped without failing the run.
    spack_points = [c for c in cases if c["name"] in ("ior_check", "mdtest_check")]
    assert spack_points and {c["result"] for c in spack_points} <= {"pass", "skip"}
    cases = [c for c in cases if c["name"] == "iomodel_check"]
    # quick's 5 repetitions of each flavour, a job each
    assert len(cases) == 5 * len(cluster.system["mpi"])
    partition = config.default_partition(cluster.system)["name"]
    assert {(c["partition"], c["environ"], c["result"]) for c in cases} == {
        (partition, flavour, "pass") for flavour in cluster.system["mpi"]
    }
    jobs = {}
    for case in cases:
        # 4 ranks, 2 per node: both nodes of the cluster.
        assert case["num_tasks"] == 4 and case["procs_per_node"] == 2
        # Allocated nodes from accounting's NNodes: its node *list* (and ReFrame's
        # job_nodelist, taken from it) may name only the first node of a short job.
        nnodes = cluster.run("sacct", "-X", "-n", "-j", str(case["jobid"]), "-o", "NNodes")
        assert nnodes.stdout.split() == [str(len(cluster.nodes))]
        assert Path(case["outputdir"], "iomodel.jsonl").read_text().count("\n") == 9
        jobs[str(case["jobid"])] = case["environ"]

    # One log per Slurm job, named by its job id, tagged by the check (the IOR and mdtest points
    # that ran left theirs too: IOR one per phase, its write and read launches).
    every = sorted((run_dir / "darshan").rglob("*.darshan"))
    logs = [p for p in every if "_iomodel-" in p.name]
    assert len(logs) == len(cases), logs
    launches = {"ior_check": 2, "mdtest_check": 1}
    ran = sum(launches[c["name"]] for c in spack_points if c["result"] == "pass")
    assert len(every) - len(logs) == ran, every
    for path in logs:
        log = read_log(path)
        tags = log["job"]["metadata"]
        assert str(log["job"]["jobid"]) in jobs
        assert tags["environ"] == jobs[str(log["job"]["jobid"])]
        assert log["job"]["nprocs"] == 4
        assert (tags["campaign"], tags["check"], tags["system"]) == (
            "quick",
            "iomodel_check",
            SYSTEM,
        )
        assert (tags["nodes"], tags["procs_per_node"], tags["run_id"]) == ("2", "2", run_dir.name)
        # quick's sync auto (reframe-checks/README.md): the mode used and what it measured
        assert (tags["sync"], tags["measures"]) in {
            ("direct", "storage (O_DIRECT)"),
            ("fsync", "storage (fsync)"),
            ("fsync", "memory (tmpfs)"),
        }, tags
