"""The GlusterFS volume cluster-up serves (ci/cluster/gluster.sh): mounted at one path on every
node by that node's own client, a file written on one node read back byte-identical on another,
files placed on the bricks of both nodes, and a teardown that leaves nothing behind.

Expected values come from the system description (bricks, nodes) and from this test's own
data, not from the scripts under test. Where the volume could not be served (no FUSE, no
glusterd, localhost mode), every test skips with cluster-up's reason from the env file."""

from __future__ import annotations

import hashlib
import os
import re
import subprocess
from pathlib import Path

from slurmtest import REPO_ROOT, on

PATHINFO = re.compile(r"<POSIX\(([^)]+)\):([^:>]+):([^>]+)>")


def ns_of(pid: int | str, kind: str) -> str:
    return os.readlink(f"/proc/{pid}/ns/{kind}")


def test_each_node_mounts_the_volume_with_its_own_client(cluster, volume):
    mount = volume["mount"]
    for node in cluster.nodes:
        shown = on(cluster, node, 'findmnt -n -o FSTYPE,SOURCE --mountpoint "$1"', mount).split()
        assert shown[0] == "fuse.glusterfs", f"{node}: {shown}"
        assert shown[1].endswith(f":{volume['name']}"), f"{node}: {shown}"
        # the client lives in the node's network namespace (its traffic crosses the node's
        # link) and in the mount namespace its slurmd gives the node's jobs
        run = volume["state"] / "run"
        client = (volume["state"] / "gluster" / node / "run" / "client.pid").read_text().split()[0]
        slurmd = (run / f"slurmd-{node}.pid").read_text().split()[0]
        for kind in ("net", "mnt"):
            assert ns_of(client, kind) == ns_of(slurmd, kind) != ns_of("self", kind), (node, kind)
    # not in this host's mount namespace: two mounts at one path need a namespace each
    assert subprocess.run(["mountpoint", "-q", mount]).returncode != 0


def pathinfo(cluster, node: str, mount: str, names: list[str]) -> dict[str, tuple[str, Path]]:
    """Each file's brick as its node's client reports it: name -> (brick host, brick path)."""
    out = on(
        cluster,
        node,
        'cd "$1" && shift && for f; do echo "$f $(getfattr --only-values -n '
        'trusted.glusterfs.pathinfo "$f" | tr -d "\\000")"; done',
        mount,
        *names,
    )
    found = {}
    for line in out.splitlines():
        name, info = line.split(" ", 1)
        (brick, host, path), *_ = PATHINFO.findall(info)
        assert path == f"{brick}/{name}", info
        found[name] = (host, Path(brick))
    return found


def test_a_file_written_on_one_node_reads_back_identical_on_another(cluster, volume, tmp_path):
    writer, reader = cluster.nodes[0], cluster.nodes[-1]
    assert writer != reader, "needs two nodes"
    data = os.urandom(8 * 1024 * 1024 + 17)
    source = tmp_path / "source"
    source.write_bytes(data)
    name = f"xnode-{os.getpid()}-{tmp_path.name}"
    target = f"{volume['mount']}/{name}"
    on(cluster, writer, 'cp "$1" "$2" && sync "$2"', source, target)
    read_back = on(cluster, reader, 'sha256sum "$1"', target).split()[0]
    assert read_back == hashlib.sha256(data).hexdigest()
    # one of the two reached the file's brick over the network: they are different nodes
    host, brick = pathinfo(cluster, reader, volume["mount"], [name])[name]
    assert brick == volume["bricks"][host] and (brick / name).read_bytes() == data
    on(cluster, reader, 'rm -f "$1"', target)


def test_files_are_placed_on_the_bricks_of_both_nodes(cluster, volume):
    names = [f"place-{os.getpid()}-{k}" for k in range(16)]
    node = cluster.nodes[0]
    on(
        cluster,
        node,
        'cd "$1" && shift && for f; do echo "$f" >"$f"; done',
        volume["mount"],
        *names,
    )
    placed = pathinfo(cluster, node, volume["mount"], names)
    served = set()
    for name, (host, brick) in placed.items():
        # a brick reports its server's host name, the node's
        served.add(host)
        # the brick the system lists for that node, and the file really is in it
        assert brick == volume["bricks"][host], (name, host, brick)
        assert (brick / name).read_text() == f"{name}\n"
    # the chance that 16 names hash to one of two bricks is 2 ** -15
    assert served == set(volume["bricks"]) == set(cluster.nodes)
    on(cluster, node, 'cd "$1" && shift && rm -f "$@"', volume["mount"], *names)


def facts(state: Path, *names: str) -> list[list[str]]:
    """Bash arrays of the cluster's testbed.sh."""
    script = 'source "$1/testbed.sh" && shift && for a; do eval "echo \\${$a[*]}"; done'
    out = subprocess.run(
        ["bash", "-c", script, "facts", str(state), *names],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    return [line.split() for line in out.splitlines()]


def live(state: Path) -> dict[str, str]:
    """pid -> command of every process a PID file of the state directory names."""
    found = {}
    for pidfile in [*state.glob("run/*.pid"), *state.glob("gluster/*/run/**/*.pid")]:
        pid = pidfile.read_text().split()[0] if pidfile.stat().st_size else ""
        comm = Path(f"/proc/{pid}/comm")
        if pid.isdigit() and comm.exists():
            found[pid] = comm.read_text().strip()
    return found


def leftovers(state: Path, before: dict[str, str], netns, veths, images) -> list[str]:
    left = [f"{c} {p}" for p, c in before.items() if live_comm(p) == c]
    left += [f"netns {n}" for n in netns if Path(f"/run/netns/{n}").exists()]
    left += [f"link {v}" for v in veths if Path(f"/sys/class/net/{v}").exists()]
    for image in images:
        loops = subprocess.run(["losetup", "-n", "-O", "NAME", "-j", image], capture_output=True)
        left += [f"loop {d}" for d in loops.stdout.decode().split()]
    mounts = Path("/proc/self/mountinfo").read_text()
    left += [f"mount {line.split()[4]}" for line in mounts.splitlines() if str(state) in line]
    return left


def live_comm(pid: str) -> str | None:
    try:
        return Path(f"/proc/{pid}/comm").read_text().strip()
    except OSError:
        return None


def test_teardown_leaves_nothing_and_the_volume_comes_back(cluster, volume):
    """cluster-down stops every process, unmounts every client and target, and removes the
    namespaces, links and loop devices; cluster-up then serves the volume again (the tests
    after this one use the cluster)."""
    state = volume["state"]
    netns, veths, bridge = facts(state, "TESTBED_NETNS", "TESTBED_VETHS", "TESTBED_BRIDGE")
    images = [str(p) for p in state.glob("targets/*.img")]
    before = live(state)
    kinds = set(before.values())
    assert {"glusterd", "glusterfsd", "glusterfs", "slurmd"} <= kinds, before
    env = {**os.environ, "CLUSTER_STATE": str(state)}
    down = subprocess.run(
        [REPO_ROOT / "ci/cluster/cluster-down.sh"], env=env, capture_output=True, text=True
    )
    assert down.returncode == 0, down.stderr
    assert leftovers(state, before, netns, veths + bridge, images) == [], down.stdout
    env["CLUSTER_SYSTEM"] = cluster.system["name"]
    up = subprocess.run(
        [REPO_ROOT / "ci/cluster/cluster-up.sh"],
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert up.returncode == 0, up.stderr
    assert "no GlusterFS volume" not in up.stderr
    for node in cluster.nodes:
        shown = on(cluster, node, 'findmnt -n -o FSTYPE --mountpoint "$1"', volume["mount"])
        assert shown.strip() == "fuse.glusterfs", node
