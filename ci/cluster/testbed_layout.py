"""The test cluster's shape, from a system description: its nodes (names, addresses, ports,
namespaces), the ports it listens on, and the paths under its state directory.

Separate from the texts of the files (testbed_files.py), which are written from this shape, and
from the command that writes them (testbed.py). Two modes:

- ``netns``: every node is a slurmd in its own network namespace on a private bridge
  (``testbed.network``), so nodes have distinct host names and addresses like a real cluster;
- ``localhost``: several slurmd on 127.0.0.1 with one port each (Debian builds Slurm with
  ``--enable-multiple-slurmd``); needs no privilege beyond starting daemons.

State directory layout (every path the daemons use lives under it)::

    env.sh              what a user sources: SLURM_CONF and PATH (with the scrontab client)
    testbed.sh          facts for ci/cluster scripts (bash arrays: nodes, addresses, ports, ...)
    etc/                slurm.conf, slurmdbd.conf (0600), mariadb.cnf, task-prolog.sh
    spool/slurmctld     StateSaveLocation;   spool/slurmd/<node>   SlurmdSpoolDir
    tmp/<node>          TmpFS (per node: PMIx steps fail when nodes share it)
    targets/<name>      a storage target the system lists: ext4 on a loop device over
                        targets/<name>.img (made and mounted by cluster-up); a GlusterFS
                        target holds its brick in a folder of it
    gluster/<node>/     that node's glusterd: lib (its working directory), run, log
    gluster/scratch     the GlusterFS volume's mount point (each node's client mounts it
                        in that node's slurmd mount namespace)
    log/  run/          daemon logs; PID files and sockets
    mariadb/data        the private MariaDB's datadir
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from iostudy.core import config

MODES = ("netns", "localhost")
# The name a node's veth end gets inside its namespace; MPICH's hydra is pointed at it.
NODE_IFACE = "eth0"
# A Unix socket path holds at most 107 bytes (sun_path). slurmstepd makes its sockets in the
# node's spool directory, the longest "stepd.slurm.pmix.<job>.<step>" (job ids up to 8 digits,
# step ids of up to 5).
SUN_PATH_MAX = 107
STEPD_SOCKET_MAX = len("stepd.slurm.pmix.67043328.99999")
# Linux interface names hold at most 15 characters.
IFNAMSIZ = 15


@dataclass(frozen=True)
class Node:
    name: str
    addr: str
    port: int
    netns: str | None = None
    veth: str | None = None


@dataclass(frozen=True)
class Layout:
    """Absolute paths under one state directory (see the module docstring)."""

    state: Path

    @property
    def etc(self) -> Path:
        return self.state / "etc"

    @property
    def slurm_conf(self) -> Path:
        return self.etc / "slurm.conf"

    @property
    def slurmdbd_conf(self) -> Path:
        # slurmdbd has no -f: it reads slurmdbd.conf beside $SLURM_CONF.
        return self.etc / "slurmdbd.conf"

    @property
    def mariadb_cnf(self) -> Path:
        return self.etc / "mariadb.cnf"

    @property
    def task_prolog(self) -> Path:
        return self.etc / "task-prolog.sh"

    @property
    def epilog(self) -> Path:
        return self.etc / "epilog.sh"

    @property
    def mmap_staging(self) -> Path:
        """Where the epilog gathers a killed job's memory-mapped logs."""
        return self.state / "mmap-staging"

    @property
    def merged_logs(self) -> Path:
        """Where the epilog writes the merged log of a killed job."""
        return self.state / "darshan-logs"

    @property
    def env(self) -> Path:
        return self.state / "env.sh"

    @property
    def facts(self) -> Path:
        return self.state / "testbed.sh"

    @property
    def log(self) -> Path:
        return self.state / "log"

    @property
    def run(self) -> Path:
        return self.state / "run"

    @property
    def ctld_spool(self) -> Path:
        return self.state / "spool" / "slurmctld"

    @property
    def slurmd_spool(self) -> Path:
        return self.state / "spool" / "slurmd"

    @property
    def tmpfs(self) -> Path:
        return self.state / "tmp"

    @property
    def targets(self) -> Path:
        return self.state / "targets"

    @property
    def gluster(self) -> Path:
        """One folder per node: glusterd's working directory (lib), run and log folders."""
        return self.state / "gluster"

    @property
    def gluster_status(self) -> Path:
        """What cluster-up found of the volume (env.sh sources it)."""
        return self.run / "gluster.sh"

    @property
    def mariadb_data(self) -> Path:
        return self.state / "mariadb" / "data"

    @property
    def mariadb_socket(self) -> Path:
        return self.run / "mariadb.sock"


def testbed_section(system: dict) -> dict:
    """The system's ``testbed`` section; a system without one cannot be stood up."""
    where = config.system_path(system["name"])
    if "testbed" not in system:
        raise config.ConfigError(f"{where}: testbed: missing (the system cannot be stood up)")
    return system["testbed"]


def with_node_count(system: dict, count: int | None) -> dict:
    """The system with nodes.count replaced (make cluster-up CLUSTER_NODES=...)."""
    if count is None:
        return system
    if count < 1:
        raise config.ConfigError(f"node count override: {count} is not a positive integer")
    return {**system, "nodes": {**system["nodes"], "count": count}}


def _check_node_room(system: dict, mode: str, first_port: int) -> None:
    """The node count fits the mode's addresses: checked on the count, before any list of
    nodes is made (a count of a billion would take the memory of the machine)."""
    count = system["nodes"]["count"]
    where = config.system_path(system["name"])
    last = first_port + count - 1
    if mode == "localhost" and last > 65535:
        raise config.ConfigError(
            f"{where}: testbed.ports.slurmd_first: {count} nodes need ports "
            f"{first_port}-{last}, beyond 65535"
        )
    # Node i gets .(10+i) of the /24 (schema of testbed.network.subnet_prefix).
    if mode == "netns" and count > 244:
        raise config.ConfigError(
            f"{where}: nodes.count: {count} nodes do not fit a /24 from .11 in netns mode"
        )


def nodes(system: dict, mode: str) -> list[Node]:
    """Name, address, slurmd port and (netns mode) namespace and host-side veth of each node."""
    if mode not in MODES:
        raise ValueError(f"unknown testbed mode {mode!r} (known: {', '.join(MODES)})")
    bed = testbed_section(system)
    first = bed["ports"]["slurmd_first"]
    _check_node_room(system, mode, first)
    names = config.node_names(system)
    if mode == "localhost":
        return [Node(n, "127.0.0.1", first + i) for i, n in enumerate(names)]
    prefix = bed["network"]["subnet_prefix"]
    bridge = bed["network"]["bridge"]
    out = []
    for i, name in enumerate(names, start=1):
        # Host-side veth names derive from the bridge (ours alone) and stay within IFNAMSIZ.
        veth = f"{bridge[: IFNAMSIZ - 1 - len(str(i))]}v{i}"
        out.append(Node(name, f"{prefix}.{10 + i}", first, f"{bed['cluster_name']}-{name}", veth))
    return out


def bridge_addr(system: dict) -> str:
    return f"{testbed_section(system)['network']['subnet_prefix']}.1"


def host_ports(system: dict, mode: str) -> dict[str, int]:
    """Every TCP port the cluster listens on in the host's network namespace, by daemon."""
    ports = testbed_section(system)["ports"]
    out = {"mariadb": ports["mariadb"], "slurmdbd": ports["slurmdbd"]}
    out["slurmctld"] = ports["slurmctld"]
    if mode == "localhost":
        out.update({f"slurmd-{n.name}": n.port for n in nodes(system, mode)})
    seen: dict[int, str] = {}
    for daemon, port in out.items():
        if port in seen:
            raise config.ConfigError(
                f"{config.system_path(system['name'])}: testbed.ports: {daemon} and "
                f"{seen[port]} would both listen on port {port}"
            )
        seen[port] = daemon
    return out


def glusterd_socket(layout: Layout, node: str) -> Path:
    """The socket a node's glusterd takes commands on (`gluster --glusterd-sock`)."""
    return layout.gluster / node / "run" / "glusterd.socket"


def check_socket_room(layout: Layout, system: dict) -> None:
    """The Unix sockets the daemons make under the state directory fit sun_path."""
    longest = max(len(n) for n in config.node_names(system))
    needs = {
        layout.slurmd_spool: len(str(layout.slurmd_spool)) + 1 + longest + 1 + STEPD_SOCKET_MAX,
        layout.mariadb_socket: len(str(layout.mariadb_socket)),
        layout.gluster: len(str(glusterd_socket(layout, "n" * longest))),
    }
    for where, length in needs.items():
        if length > SUN_PATH_MAX:
            raise config.ConfigError(
                f"state directory {layout.state}: too long for the Unix sockets made at "
                f"{where} ({length} > {SUN_PATH_MAX} bytes); choose a shorter --state"
            )


#: the variable a test cluster's storage target paths begin with: its state directory
#: (env.sh exports it, so that a campaign finds the targets where cluster-up mounted them)
STATE_VARIABLE = "IOSTUDY_CLUSTER_STATE"
#: each target's size: a sparse file, so only what fio writes takes room
TARGET_MIB = 1024


def storage_targets(system: dict, layout: Layout) -> list[tuple[str, Path]]:
    """The storage targets cluster-up makes (one ext4 file system on a loop device each),
    (name, mount point), those on nodes the cluster has; each path must lie in the state
    directory's targets/ (the test cluster makes nothing elsewhere)."""
    prefix = f"${STATE_VARIABLE}/targets/"
    made, names = [], config.node_names(system)
    for target in config.storage_targets(system):
        name, path = target["name"], target["path"]
        if not path.startswith(prefix) or "/" in path[len(prefix) :] or path == prefix:
            raise config.ConfigError(
                f"{config.system_path(system['name'])}: storage target {name}: path {path!r} "
                f"is not {prefix}<folder> (the test cluster makes its targets there)"
            )
        if "node" not in target or target["node"] in names:
            made.append((name, layout.targets / path[len(prefix) :]))
    return made


def directories(system: dict, state: Path) -> list[Path]:
    """The directories the rendered configuration names (Slurm creates none of the %n ones)."""
    layout = Layout(Path(state))
    names = config.node_names(system)
    return [
        layout.etc,
        layout.log,
        layout.run,
        layout.mmap_staging,
        layout.merged_logs,
        layout.ctld_spool,
        layout.mariadb_data.parent,
        *(layout.slurmd_spool / n for n in names),
        *(layout.tmpfs / n for n in names),
        *(layout.gluster / n / d for n in names for d in ("lib", "run", "log")),
    ]


@dataclass(frozen=True)
class Volume:
    """The system's GlusterFS storage as the test cluster serves it."""

    name: str
    mount: Path
    #: (node, brick folder) per target, in the system's order
    bricks: tuple[tuple[str, Path], ...]


def _state_path(system: dict, layout: Layout, what: str, path: str) -> Path:
    """A path of the system description under $IOSTUDY_CLUSTER_STATE, resolved."""
    prefix = f"${STATE_VARIABLE}/"
    rest = path[len(prefix) :]
    if not path.startswith(prefix) or not rest or ".." in Path(rest).parts:
        raise config.ConfigError(
            f"{config.system_path(system['name'])}: {what}: path {path!r} is not "
            f"{prefix}<folder> (the test cluster makes nothing elsewhere)"
        )
    return layout.state / rest


def gluster_volume(system: dict, layout: Layout) -> Volume | None:
    """The system's first glusterfs storage entry, None when it lists none. Each target needs
    its node (the brick's server) and a brick inside the target's folder; bricks on nodes the
    cluster lacks (a smaller CLUSTER_NODES) are left out."""
    entry = next((s for s in system.get("storage") or [] if s.get("fs_type") == "glusterfs"), None)
    if entry is None:
        return None
    where = f"{config.system_path(system['name'])}: storage {entry['name']}"
    names, bricks = config.node_names(system), []
    for target in entry.get("targets") or []:
        if "node" not in target or "brick" not in target:
            raise config.ConfigError(f"{where}: target {target['name']} needs a node and a brick")
        root = _state_path(system, layout, f"storage target {target['name']}", target["path"])
        brick = _state_path(system, layout, f"brick of {target['name']}", target["brick"])
        if root not in brick.parents:
            raise config.ConfigError(
                f"{where}: target {target['name']}: brick {target['brick']!r} is not a folder "
                f"of the target's path {target['path']!r}"
            )
        if target["node"] in names:
            bricks.append((target["node"], brick))
    if not bricks:
        raise config.ConfigError(f"{where}: no brick on the cluster's nodes")
    mount = _state_path(system, layout, f"storage {entry['name']}", entry["path"])
    return Volume(entry.get("volume") or entry["name"], mount, tuple(bricks))


def link_rate(system: dict) -> str:
    """The tc rate of every node's link, "" for none."""
    return testbed_section(system)["network"].get("link_rate") or ""
