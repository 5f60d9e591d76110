"""Runner configuration derived from system descriptions: the Snakemake profile and ReFrame's
settings, checked as data and by the tools themselves (ReFrame loads and validates its settings,
Snakemake parses the profile)."""

import copy
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import yaml

from iostudy.cli.cli import main
from iostudy.core import config
from iostudy.run import profiles

REPO_ROOT = Path(__file__).resolve().parents[2]
REFRAME_SETTINGS = REPO_ROOT / "configs" / "reframe_settings.py"
BIN = Path(sys.executable).parent


@pytest.fixture(scope="module")
def testcluster():
    return config.load_system("testcluster")


def other_machine(testcluster: dict) -> dict:
    """The test cluster's description without what only it has: the testbed section and the
    storage targets and servers on its nodes."""
    system = copy.deepcopy(testcluster)
    del system["testbed"]
    for entry in system["storage"]:
        entry.pop("targets", None)
        entry.pop("servers", None)
    return system


@pytest.fixture
def facility(testcluster):
    """A made-up facility machine: two partitions (the second the default), days of wall time."""
    system = other_machine(testcluster)
    system.update(
        name="site-machine",
        nodes={"count": 8, "name_prefix": "c", "cores_per_node": 16, "memory_mib": 65536},
        partitions=[
            {"name": "input", "default": False, "max_time_minutes": 30},
            {"name": "batch", "default": True, "max_time_minutes": 2880},
        ],
    )
    return system


@pytest.fixture
def local_system(testcluster):
    system = other_machine(testcluster)
    system.update(name="local", scheduler="local")
    system["nodes"]["count"] = 1
    return system


@pytest.fixture
def configs_copy(tmp_path, monkeypatch, facility, local_system):
    """A configs/ folder with testcluster, a facility machine and a local system."""
    root = tmp_path / "configs"
    (root / "schemas").mkdir(parents=True)
    schema = REPO_ROOT / "configs" / "schemas" / "system.schema.json"
    (root / "schemas" / schema.name).write_text(schema.read_text())
    for name in ("testcluster",):
        (root / "systems" / name).mkdir(parents=True)
        (root / "systems" / name / "system.json").write_text(config.system_path(name).read_text())
    for system in (facility, local_system):
        (root / "systems" / system["name"]).mkdir(parents=True)
        (root / "systems" / system["name"] / "system.json").write_text(json.dumps(system))
    monkeypatch.setenv("IOSTUDY_CONFIGS", str(root))
    return root


def test_snakemake_profile_testcluster(testcluster):
    prof = profiles.snakemake_profile(testcluster)
    assert prof["executor"] == "slurm"
    # 2 nodes of 2 cores; the debug partition (30 min); 2048 MiB shared by 2 cores.
    assert prof["jobs"] == 4
    assert prof["default-resources"] == [
        "slurm_partition='debug'",
        "runtime=30",
        "mem_mb=1024",
        "cpus_per_task=1",
    ]
    assert prof["slurm-status-command"] == "sacct"
    assert prof["slurm-init-seconds-before-status-checks"] == 1
    assert prof["seconds-between-status-checks"] == 2


def test_snakemake_profile_default_partition_and_runtime_cap(facility):
    prof = profiles.snakemake_profile(facility)
    assert prof["jobs"] == 8 * 16
    assert "slurm_partition='batch'" in prof["default-resources"]
    # batch allows 2880 minutes; a rule that states no runtime asks for the cap, an hour.
    assert "runtime=60" in prof["default-resources"]
    assert "mem_mb=4096" in prof["default-resources"]  # 65536 MiB / 16 cores


def test_snakemake_profile_local(local_system):
    assert profiles.snakemake_profile(local_system) == {"cores": 2}


def test_snakemake_reads_the_profile(tmp_path, facility):
    """Snakemake itself reads the profile and evaluates its resources (run here with the local
    executor): the partition stays a string even when its name means something to Snakemake."""
    facility["partitions"][0]["default"] = True  # "input": a name Snakemake's eval would resolve
    facility["partitions"][1]["default"] = False
    profiles.write_snakemake_profile(facility, tmp_path / "prof")
    (tmp_path / "Snakefile").write_text(
        "rule show_resources:\n"
        '    output: "resources.txt"\n'
        '    shell: "echo {resources.slurm_partition} {resources.runtime} {resources.mem_mb} '
        '{resources.cpus_per_task} > {output}"\n'
    )
    proc = subprocess.run(
        [BIN / "snakemake", "--profile", "prof", "--executor", "local", "--cores", "1", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "resources.txt").read_text().split() == ["input", "30", "4096", "1"]


def test_cli_writes_profile(tmp_path, capsys):
    out = tmp_path / "profile"
    assert main(["config", "snakemake-profile", "testcluster", "--out", str(out)]) == 0
    written = yaml.safe_load((out / "config.yaml").read_text())
    # From configs/systems/testcluster/system.json by hand: 2 nodes x 2 cores = 4 jobs; the
    # default (only) partition debug, its 30 minutes under the hour's cap; 2048 MiB / 2 cores;
    # sacct polling after 1 s, then every 2 s.
    assert written == {
        "executor": "slurm",
        "jobs": 4,
        "default-resources": [
            "slurm_partition='debug'",
            "runtime=30",
            "mem_mb=1024",
            "cpus_per_task=1",
        ],
        "slurm-status-command": "sacct",
        "slurm-init-seconds-before-status-checks": 1,
        "seconds-between-status-checks": 2,
    }
    (line,) = capsys.readouterr().out.splitlines()
    assert str(out / "config.yaml") in line


def test_cli_profile_of_unknown_system(tmp_path, capsys):
    assert main(["config", "snakemake-profile", "nosuch", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "no such system 'nosuch'" in err and not (tmp_path / "config.yaml").exists()


def test_reframe_environments(testcluster):
    openmpi, mpich = profiles.reframe_environments(testcluster)
    assert (openmpi["name"], openmpi["cc"]) == ("openmpi", "mpicc.openmpi")
    assert ["SLURM_MPI_TYPE", "pmix"] in openmpi["env_vars"]
    assert ["OMPI_MCA_btl", "self,tcp"] in openmpi["env_vars"]
    assert (mpich["name"], mpich["cc"]) == ("mpich", "mpicc.mpich")
    assert mpich["env_vars"] == [["SLURM_MPI_TYPE", "pmi2"]]
    assert openmpi["target_systems"] == mpich["target_systems"] == ["testcluster"]


def test_reframe_local_system_has_no_srun(local_system):
    (part,) = profiles.reframe_system(local_system)["partitions"]
    assert (part["scheduler"], part["launcher"], part["max_jobs"]) == ("local", "local", 2)
    for env in profiles.reframe_environments(local_system):
        assert all(name != "SLURM_MPI_TYPE" for name, _ in env["env_vars"])


def test_reframe_jobs_get_the_callers_tmpdir(tmp_path, monkeypatch):
    monkeypatch.setenv("TMPDIR", str(tmp_path / "caller"))
    env = profiles.reframe_environment(tmp_path / "run")
    assert env["TMPDIR"] == str(tmp_path / "run"), "ReFrame's own files go to the run"
    profiles.give_jobs_the_callers_tmpdir(env)
    assert env["TMPDIR"] == str(tmp_path / "caller") and profiles.CALLER_TMPDIR not in env
    monkeypatch.delenv("TMPDIR")
    env = profiles.reframe_environment(tmp_path / "run")
    profiles.give_jobs_the_callers_tmpdir(env)
    assert "TMPDIR" not in env, "a caller without TMPDIR: the jobs have none either"
    outside = {"TMPDIR": str(tmp_path / "mine")}
    profiles.give_jobs_the_callers_tmpdir(outside)
    assert outside == {"TMPDIR": str(tmp_path / "mine")}, "ReFrame run by hand: left alone"


def show_config(system, env=None):
    """ReFrame's --show-config for system, its logs left in a temporary folder of its own."""
    with tempfile.TemporaryDirectory() as tmp:
        return subprocess.run(
            [BIN / "reframe", "-C", REFRAME_SETTINGS, "--system", system, "--show-config"],
            capture_output=True,
            text=True,
            env=dict(env or os.environ, TMPDIR=tmp),
            timeout=120,
        )


def reframe_show_config(system, env=None):
    """The configuration ReFrame itself loads, validates and selects for system."""
    proc = show_config(system, env)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return json.loads(proc.stdout)


def test_reframe_loads_settings_for_testcluster():
    shown = reframe_show_config("testcluster")
    (system,) = shown["systems"]
    assert system["name"] == "testcluster" and system["hostnames"] == [".*"]
    (part,) = system["partitions"]
    assert (part["name"], part["scheduler"], part["launcher"]) == ("debug", "slurm", "srun")
    assert part["access"] == ["-p debug"] and part["max_jobs"] == 4
    assert part["environs"] == ["openmpi", "mpich"]
    envs = {e["name"]: e for e in shown["environments"]}
    assert envs["mpich"]["cc"] == "mpicc.mpich"
    assert ["SLURM_MPI_TYPE", "pmix"] in envs["openmpi"]["env_vars"]


def test_reframe_settings_cover_every_system(configs_copy):
    env = dict(os.environ, IOSTUDY_CONFIGS=str(configs_copy))
    (site,) = reframe_show_config("site-machine", env)["systems"]
    assert [p["name"] for p in site["partitions"]] == ["input", "batch"]
    assert site["partitions"][1]["access"] == ["-p batch"]
    assert site["partitions"][1]["max_jobs"] == 128
    (local,) = reframe_show_config("local", env)["systems"]
    assert local["partitions"][0]["scheduler"] == "local"


def test_reframe_settings_refuse_a_bad_system_file(configs_copy):
    bad = configs_copy / "systems" / "site-machine" / "system.json"
    data = json.loads(bad.read_text())
    data["nodes"]["count"] = 0
    bad.write_text(json.dumps(data))
    proc = show_config("testcluster", dict(os.environ, IOSTUDY_CONFIGS=str(configs_copy)))
    assert proc.returncode != 0
    assert "nodes.count" in proc.stdout + proc.stderr


def test_reframe_local_system_launches_with_each_flavours_mpirun():
    """local: one partition, and each environment names its flavour's mpirun for the launcher."""
    shown = reframe_show_config("local")
    ((part,),) = [s["partitions"] for s in shown["systems"]]
    # The launcher iostudy registers with ReFrame (configs/reframe_settings.py), by its name.
    assert (part["scheduler"], part["launcher"]) == ("local", "iostudy-mpirun")
    envs = {
        e["name"]: dict(e["env_vars"])
        for e in shown["environments"]
        if "mpi" in e.get("features", [])
    }
    assert envs["openmpi"]["IOSTUDY_MPIRUN"] == "mpirun.openmpi"
    assert envs["openmpi"]["OMPI_MCA_rmaps_base_oversubscribe"] == "1"
    assert envs["mpich"]["IOSTUDY_MPIRUN"] == "mpiexec.mpich"


def test_reframe_refuses_mixed_launchers(local_system):
    local_system["mpi"]["openmpi"]["launcher"] = "mpirun"
    with pytest.raises(config.ConfigError, match="mpi: the flavours launch with mpirun, srun"):
        profiles.reframe_system(local_system)
