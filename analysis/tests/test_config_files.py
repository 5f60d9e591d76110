"""Malformed configuration files: `iostudy config check` gives one error naming the file, the
key and the problem, never a traceback, a hang or a vacuous pass. (The test cluster renderer's
own refusals are tested beside it, in ci/cluster/test_testbed.py.)

Each command runs as its own process with a time and memory limit, so that a hang or a runaway
allocation fails the test instead of stalling the suite or the machine.
"""

import json
import os
import resource
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from iostudy.core import config

IOSTUDY = Path(sys.executable).with_name("iostudy")
MEMORY_LIMIT = 2 << 30  # bytes of address space: far more than any config needs


def _limited():
    resource.setrlimit(resource.RLIMIT_AS, (MEMORY_LIMIT, MEMORY_LIMIT))


def run(args, configs: Path, timeout=60):
    env = dict(os.environ, IOSTUDY_CONFIGS=str(configs))
    return subprocess.run(
        [IOSTUDY, *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        preexec_fn=_limited,
    )


@pytest.fixture
def configs(tmp_path):
    """A configs folder with the repository's schemas and no system yet."""
    root = tmp_path / "configs"
    shutil.copytree(config.DEFAULT_CONFIGS / "schemas", root / "schemas")
    (root / "systems").mkdir()
    return root


def cluster_system() -> dict:
    return json.loads((config.DEFAULT_CONFIGS / "systems/testcluster/system.json").read_text())


def put_system(configs: Path, name: str, content) -> Path:
    """configs/systems/<name>/system.json holding content: bytes as they are, else as JSON."""
    path = configs / "systems" / name / "system.json"
    path.parent.mkdir(parents=True)
    data = content if isinstance(content, bytes) else json.dumps(content).encode()
    path.write_bytes(data)
    return path


def with_nodes(**nodes) -> dict:
    system = cluster_system()
    system["nodes"] |= nodes
    return system


def with_storage(name: str, index: int, **fields) -> dict:
    """testcluster as system name, with fields of its storage entry index replaced."""
    system = cluster_system() | {"name": name}
    system["storage"][index] |= fields
    return system


def with_link_rate(rate) -> dict:
    system = cluster_system()
    system["testbed"]["network"]["link_rate"] = rate
    return system


# name -> (content of system.json, what the error says after "<path>: ")
BAD = {
    "latin1": (b'{"name": "caf\xe9"}', "line 1: not UTF-8 text (byte 0xe9 at offset 13)"),
    "deep": (b"[" * 100_000 + b"]" * 100_000, "nested too deeply"),
    "huge": (b" " * (2 << 20) + b"{}", "larger than 1024 KiB"),
    "nodes": (with_nodes(count=10**9), "nodes.count: 1000000000 is greater than the maximum"),
    "cores": (with_nodes(cores_per_node=10**9), "nodes.cores_per_node: 1000000000 is greater"),
    "float": (with_nodes(count=4.0), "nodes.count: 4.0 is not of type 'integer'"),
    "servers": (
        with_storage("servers", 1, servers=["n1", "n9"]),
        "storage[1].servers: 'n9' is not one of the system's nodes (n1, n2)",
    ),
    "rate": (with_link_rate("fast"), "testbed.network.link_rate: 'fast' does not match"),
}


@pytest.mark.parametrize("name", BAD)
def test_a_malformed_system_is_one_error(configs, name):
    content, problem = BAD[name]
    path = put_system(configs, name, content)
    proc = run(["config", "check", name], configs)
    assert proc.returncode == 2, proc.stderr
    assert f"iostudy: error: {path}: {problem}" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_a_fifo_as_system_json_is_refused_not_waited_on(configs):
    path = configs / "systems" / "fifo" / "system.json"
    path.parent.mkdir()
    os.mkfifo(path)
    proc = run(["config", "check", "fifo"], configs, timeout=30)
    assert proc.returncode == 2
    assert f"iostudy: error: {path}: not a regular file" in proc.stderr


def test_an_empty_system_name_is_an_error(configs):
    put_system(configs, "testcluster", cluster_system())
    proc = run(["config", "check", ""], configs)
    assert proc.returncode == 2
    assert "iostudy: error: system name '': not a system" in proc.stderr


def test_nothing_to_check_is_an_error_not_a_pass(configs):
    proc = run(["config", "check"], configs)
    assert proc.returncode == 2
    assert f"no files to check in {configs}" in proc.stderr
    assert "0 of 0" not in proc.stdout
