"""Where campaigns write, and the guard of a distributed storage: a storage entry whose
unavailable_env is set gives way to the next scratch storage (the test cluster without its
GlusterFS volume), and a job that writes to a distributed fs_type first checks on its node that
the folder is on that file system. On the real cluster: ci/tests/test_cluster_storage_guard.py."""

import subprocess

from iostudy.benchmarks import checks
from iostudy.core import config

STATE = "/srv/cluster"


def the_testcluster(monkeypatch, why=None):
    monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", STATE)
    if why:
        monkeypatch.setenv("IOSTUDY_GLUSTER_UNAVAILABLE", why)
    else:
        monkeypatch.delenv("IOSTUDY_GLUSTER_UNAVAILABLE", raising=False)
    return config.load_system("testcluster")


def test_campaigns_write_to_the_volume_while_it_is_served(monkeypatch):
    system = the_testcluster(monkeypatch)
    assert config.scratch_storage(system)["name"] == "gluster"
    assert all("unavailable" not in s for s in system["storage"])


def test_without_the_volume_campaigns_write_to_the_local_scratch_and_say_why(monkeypatch):
    system = the_testcluster(monkeypatch, why="switched off (IOSTUDY_GLUSTER=off)")
    assert config.scratch_storage(system)["name"] == "scratch"
    gluster = next(s for s in system["storage"] if s["name"] == "gluster")
    assert gluster["unavailable"] == "switched off (IOSTUDY_GLUSTER=off)"
    assert gluster["scratch"] is True  # the description is kept; the entry is passed over


def test_an_empty_reason_is_no_reason(monkeypatch):
    system = the_testcluster(monkeypatch)
    monkeypatch.setenv("IOSTUDY_GLUSTER_UNAVAILABLE", "")
    assert config.scratch_storage(config.load_system("testcluster"))["name"] == "gluster"
    assert config.scratch_storage(system)["name"] == "gluster"


def test_availability_follows_the_environment_given(monkeypatch):
    system = the_testcluster(monkeypatch, why="glusterd on n1 did not start")
    served = config.with_availability(system, {"IOSTUDY_GLUSTER_UNAVAILABLE": ""})
    assert config.scratch_storage(served)["name"] == "gluster"
    assert all("unavailable" not in s for s in served["storage"])
    off = config.with_availability(served, {"IOSTUDY_GLUSTER_UNAVAILABLE": "no /dev/fuse"})
    assert config.scratch_storage(off)["name"] == "scratch"


def test_only_unavailable_storage_is_still_written_to():
    only = {"storage": [{"name": "vol", "path": "/v", "unavailable": "down"}]}
    assert config.scratch_storage(only)["name"] == "vol"


def guard(system, folder, run_dir="/run"):
    return checks.storage_guard_command(system, folder, run_dir)


def test_the_guard_fails_where_the_volume_is_not_mounted(monkeypatch, tmp_path):
    system = the_testcluster(monkeypatch)
    mount = tmp_path / "gluster" / "scratch"
    mount.mkdir(parents=True)
    next(s for s in system["storage"] if s["name"] == "gluster")["path"] = str(mount)
    line = guard(system, mount / "testcluster" / "debug" / "openmpi" / "case")
    found = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "-T", str(tmp_path)], capture_output=True, text=True
    ).stdout.split()[0]
    proc = subprocess.run(
        ["sh", "-c", line + "; echo benchmark ran"],
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin", "SLURMD_NODENAME": "n7"},
    )
    assert proc.returncode == 1 and "benchmark ran" not in proc.stdout
    assert proc.stderr == (
        f"storage gluster (glusterfs): {mount} on n7 is on {found}, expected fuse.glusterfs: "
        "is it mounted on this node?\n"
    )
    # a folder that does not exist is on no file system
    missing = tmp_path / "none"
    next(s for s in system["storage"] if s["name"] == "gluster")["path"] = str(missing)
    proc = subprocess.run(["sh", "-c", guard(system, missing)], capture_output=True, text=True)
    assert proc.returncode == 1 and "is on no file system (no such folder)" in proc.stderr


def test_nothing_to_guard_on_local_storage_memory_or_a_storage_target(monkeypatch):
    system = the_testcluster(monkeypatch)
    assert guard(system, "/run/scratch/testcluster") is None  # "scratch": local
    assert guard(system, "/dev/shm/iostudy-r1") is None
    assert guard(system, f"{STATE}/targets/n1-disk") is None  # fio on a target: its own check
    # a storage path whose variable is unset here cannot hold the folder
    monkeypatch.delenv("IOSTUDY_CLUSTER_STATE")
    assert guard(system, f"{STATE}/gluster/scratch/x") is None


def test_each_distributed_type_names_what_the_node_reports():
    reports = {"lustre": "lustre", "nfs": "nfs nfs4", "gpfs": "gpfs", "glusterfs": "fuse.glusterfs"}
    for fs_type, reported in reports.items():
        system = {"storage": [{"name": "big", "path": "/big", "fs_type": fs_type}]}
        assert f'case " {reported} "' in guard(system, "/big/run")
    assert guard({"storage": [{"name": "x", "path": "/x", "fs_type": "zfs"}]}, "/x/y") is None
