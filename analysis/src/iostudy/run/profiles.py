"""Runner configuration derived from a system description: the Snakemake profile and ReFrame's
site configuration.

configs/systems/<system>/system.json is the one source of truth for a machine (DESIGN.md
convention 1); nothing here knows a site. The functions are pure (system dict in, plain data out)
so that the derivations are unit tested without a cluster; ``iostudy config snakemake-profile``
(:mod:`iostudy.cli.config`) writes a profile, and configs/reframe_settings.py calls
``reframe_site_configuration``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import yaml

from iostudy.core import config

# A rule that states no runtime gets at most this many minutes, even on a partition that allows
# days: a long default request delays every job in the backfill queue.
DEFAULT_RUNTIME_CAP_MINUTES = 60

# Status polling of the Slurm executor plugin. Its defaults (40 s before the first check, then
# every 10 s) make two trivial jobs take two minutes; these bring them to about 26 s
# (shared/reference/slurm-test-cluster.md). The plugin queries all active jobs in one call.
SLURM_INIT_SECONDS_BEFORE_STATUS_CHECKS = 1
SECONDS_BETWEEN_STATUS_CHECKS = 2


def job_slots(system: dict) -> int:
    """How many single-core jobs the system runs at once: nodes × cores per node."""
    nodes = system["nodes"]
    return nodes["count"] * nodes["cores_per_node"]


def default_mem_mb(system: dict) -> int:
    """A one-core job's share of a node's memory."""
    nodes = system["nodes"]
    return nodes["memory_mib"] // nodes["cores_per_node"]


def snakemake_profile(system: dict) -> dict:
    """The contents of a Snakemake 9 profile (config.yaml) for system.

    On a Slurm system every rule becomes a job of the default partition (one core, a core's share
    of memory) through snakemake-executor-plugin-slurm, which polls job states with sacct (iostudy
    requires accounting on Slurm systems). A local system runs rules on this machine.
    """
    if system["scheduler"] == "local":
        return {"cores": job_slots(system)}
    partition = config.default_partition(system)
    runtime = min(partition["max_time_minutes"], DEFAULT_RUNTIME_CAP_MINUTES)
    # Resource values are Python expressions to Snakemake: quote the partition so that a name
    # like "input" or "1" stays a string.
    resources = {
        "slurm_partition": repr(partition["name"]),
        "runtime": runtime,
        "mem_mb": default_mem_mb(system),
        "cpus_per_task": 1,
    }
    return {
        "executor": "slurm",
        "jobs": job_slots(system),
        "default-resources": [f"{key}={value}" for key, value in resources.items()],
        "slurm-status-command": "sacct",
        "slurm-init-seconds-before-status-checks": SLURM_INIT_SECONDS_BEFORE_STATUS_CHECKS,
        "seconds-between-status-checks": SECONDS_BETWEEN_STATUS_CHECKS,
    }


def snakemake_profile_yaml(system: dict) -> str:
    header = (
        f"# Snakemake profile for system '{system['name']}', derived from "
        f"configs/systems/{system['name']}/system.json\n"
        f"# by `iostudy config snakemake-profile {system['name']}`: edit the system file and "
        "regenerate, not this file.\n"
    )
    return header + yaml.safe_dump(snakemake_profile(system), sort_keys=False)


def write_snakemake_profile(system: dict, out: Path) -> Path:
    """Writes out/config.yaml (the folder is what `snakemake --profile` takes); returns its path."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    path = out / "config.yaml"
    path.write_text(snakemake_profile_yaml(system))
    return path


# ReFrame has one launcher per partition, but each MPI flavour has its own mpirun: the partition
# gets this launcher, and each flavour's environment says which mpirun it stands for.
MPIRUN_LAUNCHER = "iostudy-mpirun"
MPIRUN_VARIABLE = "IOSTUDY_MPIRUN"


def register_reframe_launcher():
    """Registers MPIRUN_LAUNCHER with ReFrame (once per process): `"$IOSTUDY_MPIRUN" -np N`, the
    variable set by the environment of the flavour (mpirun.openmpi, mpiexec.mpich, ...)."""
    from reframe.core.backends import getlauncher, register_launcher
    from reframe.core.exceptions import ConfigError as ReframeConfigError
    from reframe.core.launchers import JobLauncher

    try:
        getlauncher(MPIRUN_LAUNCHER)
        return
    except ReframeConfigError:
        pass

    @register_launcher(MPIRUN_LAUNCHER)
    class FlavourMpirunLauncher(JobLauncher):
        def command(self, job):
            # -np: both Open MPI's mpirun and MPICH's mpiexec (Hydra) take it.
            return [f'"${{{MPIRUN_VARIABLE}:-mpirun}}"', "-np", str(job.num_tasks)]


def reframe_launcher(system: dict) -> str:
    """The ReFrame launcher of system's partitions: the flavours' mpirun when every flavour
    launches with mpirun, else srun on Slurm, and none (the program itself) on a local system."""
    launchers = {mpi["launcher"] for mpi in system["mpi"].values()}
    if launchers == {"mpirun"}:
        return MPIRUN_LAUNCHER
    if "mpirun" in launchers:
        raise config.ConfigError(
            f"{config.system_path(system['name'])}: mpi: the flavours launch with "
            f"{', '.join(sorted(launchers))}; ReFrame needs one launcher per partition"
        )
    return "local" if system["scheduler"] == "local" else "srun"


def reframe_environments(system: dict) -> list[dict]:
    """One ReFrame environment per MPI flavour of system, named after the flavour.

    srun reads the PMI plugin from SLURM_MPI_TYPE, so a flavour's srun_mpi travels with its
    environment, as does its mpirun when it launches with one; the flavour's own variables (e.g.
    Open MPI's transport choice) come along.
    """
    environs = []
    for flavour, mpi in system["mpi"].items():
        env_vars = []
        if system["scheduler"] == "slurm" and mpi.get("srun_mpi"):
            env_vars.append(["SLURM_MPI_TYPE", mpi["srun_mpi"]])
        if mpi["launcher"] == "mpirun":
            env_vars.append([MPIRUN_VARIABLE, mpi.get("mpirun", "mpirun")])
        env_vars += [[name, value] for name, value in mpi.get("env", {}).items()]
        environs.append(
            {
                "name": flavour,
                "target_systems": [system["name"]],
                "features": ["mpi", flavour],
                "cc": mpi["cc"],
                "env_vars": env_vars,
            }
        )
    return environs


def reframe_system(system: dict) -> dict:
    """ReFrame's description of system: one partition per Slurm partition (or one local one).

    Every system matches any host name, so ReFrame must be told which one with --system.
    """
    environs = list(system["mpi"])
    cpus = {"num_cpus": system["nodes"]["cores_per_node"]}
    if system["scheduler"] == "local":
        partitions = [
            {
                "name": "default",
                "scheduler": "local",
                "launcher": reframe_launcher(system),
                "environs": environs,
                "max_jobs": job_slots(system),
                "processor": cpus,
            }
        ]
    else:
        partitions = [
            {
                "name": p["name"],
                "descr": f"Slurm partition {p['name']}",
                "scheduler": "slurm",
                "launcher": reframe_launcher(system),
                "access": [f"-p {p['name']}"],
                "environs": environs,
                "max_jobs": job_slots(system),
                "processor": cpus,
            }
            for p in system["partitions"]
        ]
    return {
        "name": system["name"],
        "descr": system["description"],
        "hostnames": [".*"],
        "modules_system": "nomod",
        "partitions": partitions,
    }


# While ReFrame runs under a campaign, the caller's TMPDIR ("" when it had none): ReFrame's own is
# the run's, and the jobs it starts get this one back (give_jobs_the_callers_tmpdir).
CALLER_TMPDIR = "IOSTUDY_CALLER_TMPDIR"


def reframe_environment(tmp: Path) -> dict[str, str]:
    """The environment to run ReFrame in with its temporary files in tmp: it makes one while it
    loads its configuration, names it nowhere and leaves it there."""
    return dict(os.environ, TMPDIR=str(tmp), **{CALLER_TMPDIR: os.environ.get("TMPDIR", "")})


def give_jobs_the_callers_tmpdir(environ=os.environ) -> None:
    """Called in ReFrame's process as its configuration loads (configs/reframe_settings.py): its
    own files stay in the folder where it began (Python's tempfile keeps the first it finds),
    the jobs it starts get the caller's TMPDIR back. Nothing to do outside a campaign."""
    if CALLER_TMPDIR not in environ:
        return
    tempfile.gettempdir()
    caller = environ.pop(CALLER_TMPDIR)
    if caller:
        environ["TMPDIR"] = caller
    else:
        environ.pop("TMPDIR", None)


# Site-free logging: progress on stdout, a debug log in a temporary file (ReFrame names it),
# performance logs under <prefix>/perflogs/<system>/<partition>/<test>.log.
REFRAME_LOGGING = [
    {
        "level": "debug",
        "handlers": [
            {"type": "stream", "name": "stdout", "level": "info", "format": "%(message)s"},
            {
                "type": "file",
                "level": "debug",
                "format": "[%(asctime)s] %(levelname)s: %(check_info)s: %(message)s",
                "append": False,
            },
        ],
        "handlers_perflog": [
            {
                "type": "filelog",
                "prefix": "%(check_system)s/%(check_partition)s",
                "level": "info",
                "format": (
                    "%(check_job_completion_time)s|%(check_result)s|%(check_name)s|"
                    "%(check_environ)s|%(check_perfvalues)s"
                ),
                "format_perfvars": "%(check_perf_value)s|%(check_perf_unit)s|",
                "append": True,
            }
        ],
    }
]


def reframe_site_configuration(systems: list[dict]) -> dict:
    """ReFrame 4's ``site_configuration`` for the given system descriptions."""
    return {
        "systems": [reframe_system(s) for s in systems],
        "environments": [e for s in systems for e in reframe_environments(s)],
        "logging": REFRAME_LOGGING,
    }
