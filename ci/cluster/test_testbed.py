"""`ci/cluster/testbed.py render`: the test cluster's configuration, checked against the system
file, without a cluster (run by `make test-python`; pytest puts this folder on sys.path, so the
renderer's modules beside it import by name).

Expected values come from configs/systems/testcluster/system.json through iostudy.core.config, never
from the renderer, so a renderer that drifts from the system description fails here.
"""

import re
import resource
import shutil
import stat
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
import testbed
import testbed_layout
from testbed_files import render as render_files

from iostudy.core import config

SYSTEM = "testcluster"
SCRIPT = Path(__file__).with_name("testbed.py")
MEMORY_LIMIT = 2 << 30  # bytes of address space: far more than rendering needs


@pytest.fixture(scope="module")
def system():
    return config.load_system(SYSTEM)


@pytest.fixture
def state_dir():
    """A short state directory: Slurm's Unix sockets below it must fit 107 bytes, and
    pytest's tmp_path (named after the test) may not."""
    path = Path(tempfile.mkdtemp(prefix="tb-"))
    yield path
    shutil.rmtree(path)


def render(system, state, mode, **kw):
    args = {"controller_host": "ctl", "tools_dir": state / "tools", "db_password": "pw"}
    files = render_files(system, state, mode, **(args | kw))
    testbed.write(state, files, testbed_layout.directories(system, state))
    return files


def conf_lines(path):
    """slurm.conf-style lines without comments, each as a dict of its KEY=VALUE words."""
    out = []
    for line in path.read_text().splitlines():
        if line.strip() and not line.startswith("#"):
            out.append(dict(word.split("=", 1) for word in line.split()))
    return out


def settings(path):
    """Single-word KEY=VALUE lines of a slurm.conf-style file as one dict."""
    return {k: v for d in conf_lines(path) if len(d) == 1 for k, v in d.items()}


def lines_with(path, key):
    return [d for d in conf_lines(path) if key in d]


@pytest.fixture(params=testbed_layout.MODES)
def rendered(request, system, state_dir):
    render(system, state_dir, request.param)
    return request.param, state_dir


def test_nodes_match_the_system(system, rendered):
    mode, state = rendered
    nodes = lines_with(state / "etc/slurm.conf", "NodeName")
    assert [n["NodeName"] for n in nodes] == config.node_names(system)
    for n in nodes:
        assert int(n["CPUs"]) == system["nodes"]["cores_per_node"]
        assert int(n["RealMemory"]) == system["nodes"]["memory_mib"]


def test_netns_nodes_sit_on_the_bridge_subnet(system, state_dir):
    render(system, state_dir, "netns")
    net = system["testbed"]["network"]
    conf = state_dir / "etc/slurm.conf"
    nodes = lines_with(conf, "NodeName")
    addrs = [n["NodeAddr"] for n in nodes]
    assert addrs == [f"{net['subnet_prefix']}.{10 + i}" for i in range(1, len(nodes) + 1)]
    # Own host names: each node runs in its own UTS namespace.
    assert [n["NodeHostname"] for n in nodes] == config.node_names(system)
    assert settings(conf)["SlurmctldHost"] == f"ctl({net['subnet_prefix']}.1)"
    assert int(settings(conf)["SlurmdPort"]) == system["testbed"]["ports"]["slurmd_first"]


def test_localhost_nodes_have_one_port_each(system, state_dir):
    render(system, state_dir, "localhost")
    nodes = lines_with(state_dir / "etc/slurm.conf", "NodeName")
    first = system["testbed"]["ports"]["slurmd_first"]
    assert [int(n["Port"]) for n in nodes] == list(range(first, first + len(nodes)))
    assert {(n["NodeHostname"], n["NodeAddr"]) for n in nodes} == {("localhost", "127.0.0.1")}


def test_partitions_match_the_system(system, rendered):
    _, state = rendered
    parts = lines_with(state / "etc/slurm.conf", "PartitionName")
    assert [p["PartitionName"] for p in parts] == [p["name"] for p in system["partitions"]]
    for line, part in zip(parts, system["partitions"], strict=True):
        assert int(line["MaxTime"]) == part["max_time_minutes"]
        assert (line.get("Default") == "YES") == part["default"]
        assert line["Nodes"] == "ALL" and line["State"] == "UP"


def test_ports_and_accounting(system, rendered):
    _, state = rendered
    ports = system["testbed"]["ports"]
    slurm = settings(state / "etc/slurm.conf")
    dbd = settings(state / "etc/slurmdbd.conf")
    assert int(slurm["SlurmctldPort"]) == ports["slurmctld"]
    assert slurm["AccountingStorageType"] == "accounting_storage/slurmdbd"
    assert int(slurm["AccountingStoragePort"]) == int(dbd["DbdPort"]) == ports["slurmdbd"]
    assert slurm["ClusterName"] == system["testbed"]["cluster_name"]
    assert int(dbd["StoragePort"]) == ports["mariadb"]
    assert dbd["StorageHost"] == "127.0.0.1" and dbd["StoragePass"] == "pw"
    cnf = (state / "etc/mariadb.cnf").read_text().splitlines()
    assert f"port={ports['mariadb']}" in cnf and "bind-address=127.0.0.1" in cnf


def test_essentials_for_one_machine(rendered):
    _, state = rendered
    slurm = settings(state / "etc/slurm.conf")
    expected = {
        "SlurmdParameters": "config_overrides",
        "ProctrackType": "proctrack/linuxproc",
        "TaskPlugin": "task/none",
        "JobAcctGatherType": "jobacct_gather/linux",
        "SelectType": "select/cons_tres",
        "SelectTypeParameters": "CR_Core",
        "ReturnToService": "1",
        "MailProg": "/bin/true",
        "ScronParameters": "enable",
        "MpiDefault": "none",
    }
    assert {k: slurm.get(k) for k in expected} == expected
    # Per-node directories: a shared TmpFS breaks PMIx steps on all nodes but the first.
    for key in ("SlurmdSpoolDir", "SlurmdPidFile", "SlurmdLogFile", "TmpFS"):
        assert "%n" in slurm[key] and slurm[key].startswith(str(state))


def test_per_node_directories_exist(system, rendered):
    _, state = rendered
    slurm = settings(state / "etc/slurm.conf")
    for node in config.node_names(system):
        for key in ("SlurmdSpoolDir", "TmpFS"):
            assert (state / slurm[key].replace("%n", node)).is_dir()


def test_slurmdbd_conf_is_private_and_beside_slurm_conf(rendered):
    _, state = rendered
    dbd = state / "etc/slurmdbd.conf"
    # slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF and wants mode 0600.
    assert dbd.parent == (state / "etc/slurm.conf").parent
    assert stat.S_IMODE(dbd.stat().st_mode) == 0o600


def test_env_file_exports_slurm_conf_path_and_the_state(rendered):
    _, state = rendered
    env = state / "env.sh"
    code = [ln for ln in env.read_text().splitlines() if ln and not ln.startswith("#")]
    assert [
        ln
        for ln in code
        if "export" in ln
        and not any(
            f"export {name}=" in ln
            for name in (
                "SLURM_CONF",
                "PATH",
                "IOSTUDY_CLUSTER_STATE",
                "IOSTUDY_CLUSTER_SYSTEM",
                "IOSTUDY_GLUSTER_VOLUME",
                "IOSTUDY_GLUSTER_MOUNT",
                "IOSTUDY_GLUSTER_UNAVAILABLE",
            )
        )
    ] == []
    script = 'echo "$SLURM_CONF|$PATH|$IOSTUDY_CLUSTER_STATE"'
    out = subprocess.run(
        ["bash", "-c", f"PATH=/usr/bin:/bin; source {env}; source {env}; {script}"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    conf, path, where = out.split("|")
    assert conf == str(state / "etc/slurm.conf") and where == str(state)
    # The scrontab directory first, once, however often the file is sourced.
    assert path == f"{state / 'tools'}:/usr/bin:/bin"


def test_task_prolog_exports_every_mpi_env(system, rendered):
    mode, state = rendered
    out = subprocess.run(
        [state / "etc/task-prolog.sh"], capture_output=True, text=True, check=True
    ).stdout
    exported = dict(ln.removeprefix("export ").split("=", 1) for ln in out.splitlines())
    for flavour in system["mpi"].values():
        for key, value in flavour.get("env", {}).items():
            assert exported[key] == value
    if mode == "localhost":
        # Nodes share a host name and /dev/shm here: TCP on lo only.
        assert exported["OMPI_MCA_btl"] == "self,tcp"
        assert exported["OMPI_MCA_btl_tcp_if_include"] == "lo"
    else:
        assert exported["HYDRA_IFACE"] == testbed_layout.NODE_IFACE


def test_facts_for_the_scripts(system, rendered):
    mode, state = rendered
    script = f"source {state / 'testbed.sh'}; " + "; ".join(
        f'echo "${{{name}[*]}}"' for name in ("TESTBED_NODES", "TESTBED_PORTS", "TESTBED_MODE")
    )
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    names, ports, got_mode = out.stdout.splitlines()
    assert names.split() == config.node_names(system)
    assert got_mode == mode
    bed = system["testbed"]["ports"]
    expected = {bed["mariadb"], bed["slurmdbd"], bed["slurmctld"]}
    if mode == "localhost":
        expected |= {bed["slurmd_first"] + i for i in range(system["nodes"]["count"])}
    assert set(map(int, ports.split())) == expected


def test_each_storage_target_is_made_in_the_state_directory(system, rendered):
    _, state = rendered
    script = f'source {state / "testbed.sh"}; echo "${{TESTBED_TARGETS[*]}}"'
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    listed = config.storage_targets(system)
    assert [t["node"] for t in listed] == config.node_names(system)  # one a node
    expected = [str(state / "targets" / t["path"].rsplit("/", 1)[1]) for t in listed]
    assert out.stdout.split() == expected


def test_a_storage_target_outside_the_state_directory_is_refused(system, state_dir):
    elsewhere = {
        **system,
        "storage": [
            {"name": "scratch", "path": "scratch", "targets": [{"name": "t", "path": "/srv/t"}]}
        ],
    }
    with pytest.raises(
        config.ConfigError,
        match=r"storage target t: path '/srv/t' is not "
        r"\$IOSTUDY_CLUSTER_STATE/targets/<folder>",
    ):
        render(elsewhere, state_dir, "netns")


def bash_lines(state, script):
    """Output lines of script run in bash after sourcing the state directory's testbed.sh."""
    full = f"source {state / 'testbed.sh'}; {script}"
    return subprocess.run(["bash", "-c", full], capture_output=True, text=True, check=True).stdout


def test_the_glusterfs_volume_is_placed_as_the_system_says(system, rendered):
    mode, state = rendered
    entry = next(s for s in system["storage"] if s.get("fs_type") == "glusterfs")
    out = bash_lines(
        state,
        'echo "$TESTBED_GLUSTER_VOLUME"; echo "$TESTBED_GLUSTER_MOUNT"; '
        'echo "${TESTBED_GLUSTER_BRICK_NODES[*]}"; echo "${TESTBED_GLUSTER_BRICKS[*]}"; '
        'echo "${TESTBED_GLUSTER_DIRS[*]}"; echo "$TESTBED_LINK_RATE"',
    ).split("\n")
    volume, mount, nodes, bricks, dirs, rate = out[:6]
    in_state = "$IOSTUDY_CLUSTER_STATE/"
    assert volume == entry["volume"] == "iostudy"
    assert mount == str(state / entry["path"].removeprefix(in_state))
    assert nodes.split() == [t["node"] for t in entry["targets"]] == config.node_names(system)
    assert bricks.split() == [
        str(state / t["brick"].removeprefix(in_state)) for t in entry["targets"]
    ]
    assert dirs.split() == [str(state / "gluster" / n) for n in config.node_names(system)]
    # tc shapes veths, which only netns mode has
    assert rate == (system["testbed"]["network"]["link_rate"] if mode == "netns" else "")


def test_each_glusterd_keeps_its_state_in_its_node_folder(system, state_dir):
    render(system, state_dir, "netns")
    for node in config.node_names(system):
        text = (state_dir / "etc" / f"glusterd-{node}.vol").read_text()
        options = dict(re.findall(r"^ *option (\S+) (.*)$", text, re.M))
        assert options["working-directory"] == str(state_dir / "gluster" / node / "lib")
        socket = state_dir / "gluster" / node / "run" / "glusterd.socket"
        assert options["glusterd-sockfile"] == str(socket)
        assert (state_dir / "gluster" / node / "lib").is_dir()


def sourced_env(state):
    script = f"source {state / 'env.sh'}; env -0"
    out = subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True)
    return dict(item.split("=", 1) for item in out.stdout.split("\0") if "=" in item)


def test_env_says_why_the_volume_is_not_served_until_cluster_up_says_it_is(system, state_dir):
    render(system, state_dir, "netns")
    env = sourced_env(state_dir)
    assert env["IOSTUDY_GLUSTER_MOUNT"] == str(state_dir / "gluster" / "scratch")
    assert env["IOSTUDY_CLUSTER_SYSTEM"] == SYSTEM
    assert env["IOSTUDY_GLUSTER_UNAVAILABLE"] == "cluster-up has not served it"
    status = state_dir / "run" / "gluster.sh"
    status.write_text("export IOSTUDY_GLUSTER_UNAVAILABLE='no /dev/fuse on this machine'\n")
    assert sourced_env(state_dir)["IOSTUDY_GLUSTER_UNAVAILABLE"] == "no /dev/fuse on this machine"
    status.write_text("unset IOSTUDY_GLUSTER_UNAVAILABLE\n")
    assert "IOSTUDY_GLUSTER_UNAVAILABLE" not in sourced_env(state_dir)


def test_a_brick_outside_its_target_is_refused(system, state_dir):
    entry = next(s for s in system["storage"] if s.get("fs_type") == "glusterfs")
    target = {**entry["targets"][0], "brick": "$IOSTUDY_CLUSTER_STATE/targets/n2-disk/brick"}
    moved = {**system, "storage": [{**entry, "targets": [target]}]}
    with pytest.raises(config.ConfigError, match="is not a folder of the target's path"):
        render(moved, state_dir, "netns")


def test_node_count_override(system, state_dir):
    bigger = testbed_layout.with_node_count(system, 5)
    render(bigger, state_dir, "netns")
    nodes = lines_with(state_dir / "etc/slurm.conf", "NodeName")
    assert [n["NodeName"] for n in nodes] == config.node_names(bigger)
    assert len(nodes) == 5 and system["nodes"]["count"] != 5


def test_second_write_changes_nothing(system, state_dir):
    files = render(system, state_dir, "netns")
    again = testbed.write(state_dir, files, testbed_layout.directories(system, state_dir))
    assert again == []


def test_long_state_dir_is_refused(system, state_dir):
    deep = state_dir / ("x" * 100)
    with pytest.raises(config.ConfigError, match="too long for the Unix sockets"):
        render(system, deep, "netns")


def test_clashing_ports_are_refused(system):
    ports = system["testbed"]["ports"]
    clash = {**system, "testbed": {**system["testbed"], "ports": {**ports}}}
    clash["testbed"]["ports"]["slurmdbd"] = ports["slurmctld"]
    with pytest.raises(config.ConfigError, match="would both listen on port"):
        testbed_layout.host_ports(clash, "netns")


def test_cli_keeps_password_and_reports_unchanged(state_dir, capsys):
    argv = ["render", "--system", SYSTEM, "--state", str(state_dir), "--mode", "netns"]
    assert testbed.main([*argv, "--controller-host", "ctl"]) == 0
    first = settings(state_dir / "etc/slurmdbd.conf")["StoragePass"]
    assert testbed.main([*argv, "--controller-host", "ctl"]) == 0
    assert settings(state_dir / "etc/slurmdbd.conf")["StoragePass"] == first
    out = capsys.readouterr().out.splitlines()
    assert "unchanged" in out[-2] and out[-1].endswith(str(state_dir / "env.sh"))


def test_cli_node_override_and_bad_count(system, state_dir, capsys):
    argv = ["render", "--system", SYSTEM, "--state", str(state_dir), "--mode"]
    assert testbed.main([*argv, "localhost", "--nodes", "3"]) == 0
    nodes = lines_with(state_dir / "etc/slurm.conf", "NodeName")
    assert len(nodes) == 3
    assert testbed.main([*argv, "localhost", "--nodes", "0"]) == 2
    assert "node count" in capsys.readouterr().err


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def test_a_billion_nodes_is_refused_at_once(tmp_path):
    """A count the schema allows per mode is checked before any list of nodes is made: the
    --nodes override of a billion nodes is an error, not gigabytes of node names (the script
    runs as cluster-up.sh runs it, with a time and memory limit)."""
    state = tmp_path / "state"
    for mode, problem in (("localhost", "need ports"), ("netns", "do not fit a /24")):
        argv = ["render", "--system", SYSTEM, "--state", str(state), "--mode", mode]
        proc = subprocess.run(
            [sys.executable, SCRIPT, *argv, "--nodes", str(10**9)],
            capture_output=True,
            text=True,
            timeout=60,
            preexec_fn=_limited,
        )
        assert proc.returncode == 2, proc.stderr
        assert "1000000000 nodes" in proc.stderr and problem in proc.stderr
        assert "Traceback" not in proc.stderr
    assert not state.exists()
