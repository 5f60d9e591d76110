"""Where campaigns write on the test cluster, and the guard that keeps a number from being
labelled with the wrong storage. Every job that writes to a storage entry of a distributed
fs_type first checks, on its node, that the folder is on that file system
(iostudy.benchmarks.checks.storage_guard_command); cluster-up, where it does not serve the
GlusterFS volume (IOSTUDY_GLUSTER=off, no FUSE, localhost mode), has env.sh say why, and the
system's volume entry (unavailable_env) then gives way to the local scratch."""

import json
import re
import subprocess
from pathlib import Path

from slurmtest import SYSTEM, configs_copy, run_campaign


def tiny_campaign(configs: Path, name: str) -> None:
    """One I/O-model job on both nodes, 16 MiB per model, one flavour."""
    campaign = {
        "name": name,
        "description": "test",
        "study": "tests",
        "environs": ["openmpi"],
        "checks": [
            {
                "check": "iomodel_check",
                "parameters": {
                    "size": "16M",
                    "max_procs": "system",
                    "procs_per_node": "system",
                    "read_back": False,
                    "sync": "auto",
                },
            }
        ],
    }
    (configs / "campaigns" / f"{name}.json").write_text(json.dumps(campaign))


def volume_entry(system: dict) -> dict:
    return next(s for s in system["storage"] if s.get("fs_type") == "glusterfs")


def run_dir_of(proc) -> Path:
    return Path(proc.stdout.splitlines()[-1])


def test_a_glusterfs_entry_that_is_not_mounted_fails_the_job_naming_why(cluster, tmp_path):
    configs = configs_copy(tmp_path)
    system_file = configs / "systems" / SYSTEM / "system.json"
    system = json.loads(system_file.read_text())
    # the volume's entry, still the campaigns' scratch, on a plain folder of this machine
    plain = tmp_path / "plain"
    plain.mkdir()
    entry = volume_entry(system)
    entry["path"] = str(plain)
    entry.pop("unavailable_env")  # even where the volume is not served: the guard decides
    system_file.write_text(json.dumps(system))
    tiny_campaign(configs, "guarded")
    proc = run_campaign(cluster, "guarded", configs, tmp_path, passes=False)
    # what the nodes see there: this machine's file system (their mounts are copies of ours)
    found = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "-T", str(plain)], capture_output=True, text=True
    ).stdout.split()[0]
    errors = "".join(p.read_text() for p in run_dir_of(proc).rglob("rfm_job.err"))
    nodes = "|".join(map(re.escape, cluster.nodes))
    message = re.compile(
        rf"storage gluster \(glusterfs\): {re.escape(str(plain))} on ({nodes}) is on "
        rf"{re.escape(found)}, expected fuse\.glusterfs: is it mounted on this node\?"
    )
    assert message.search(errors), errors[-2000:] + proc.stdout[-2000:]
    # the benchmark never started: nothing was written to the plain folder
    assert not any(plain.iterdir())


def test_campaigns_write_to_the_volume_where_served_else_to_local_scratch(cluster, tmp_path):
    configs = configs_copy(tmp_path)
    tiny_campaign(configs, "where")
    proc = run_campaign(cluster, "where", configs, tmp_path)
    run_dir = run_dir_of(proc)
    manifest = json.loads((run_dir / "manifest.json").read_text())
    entry = volume_entry(manifest["effective_config"]["system"])
    scripts = "".join(p.read_text() for p in run_dir.rglob("rfm_job.sh"))
    assert scripts, f"no job script kept under {run_dir}"
    why = cluster.env.get("IOSTUDY_GLUSTER_UNAVAILABLE")
    if why:
        # the run says which storage it used and why not the volume
        assert entry["unavailable"] == why
        assert manifest["layout"]["scratch"] == "scratch"  # <run>/scratch, the local entry
        assert "findmnt" not in scripts  # local storage: nothing to check
    else:
        assert "unavailable" not in entry
        mount = cluster.env["IOSTUDY_GLUSTER_MOUNT"]
        assert manifest["layout"]["scratch"] == mount
        # the guard ran before the benchmark, and passed (the run did)
        assert f"findmnt -n -o FSTYPE -T {mount}" in scripts
