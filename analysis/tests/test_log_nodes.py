"""A job's nodes from its log's job-level modules (issue 42: "nodes known or unknown, never
assumed; from the log when it says"): BG/Q's block and APMPI's records of every rank give the
nodes its ranks ran on, stored with nodes_source "log"; a tag or accounting still come first.

The oracle is PyDarshan's reading of the same records (test_every_module's readers: the BG/Q
record by its generic reader, APMPI's by its own), the count derived here by hand from them.
"""

import math

import pytest

from iostudy.core import nodecount
from iostudy.logs import jobmodules
from iostudy.store import ingest, store
from tests.test_every_module import JOB_LEVEL_LOGS, _flat, _pydarshan_autoperf, _pydarshan_bgq

NODE_LOGS = [p for p in JOB_LEVEL_LOGS if "apxc" not in p.parent.name]  # BG/Q or APMPI


def _expected_nodes(path, nprocs: int) -> int:
    """The nodes as PyDarshan's records say: BG/Q's ranks over its ranks per node, at most its
    block; APMPI's distinct processor names of its ranks' records (after its header)."""
    if bgq := _pydarshan_bgq(path):
        values = bgq[0]["values"]
        return min(values["BGQ_NNODES"], math.ceil(nprocs / values["BGQ_RANKSPERNODE"]))
    ranks = _pydarshan_autoperf(path)["APMPI"][1:]
    assert sorted(r["rank"] for r in ranks) == list(range(nprocs))  # one of every rank
    return len({r["node"] for r in ranks})


@pytest.fixture(scope="module")
def jobs(tmp_path_factory):
    """The logs ingested as a tree without accounting or system description."""
    root = tmp_path_factory.mktemp("log-nodes")
    tree = root / "logs"
    tree.mkdir()
    for path in NODE_LOGS:
        (tree / _flat(path)).write_bytes(path.read_bytes())
    counts = ingest.ingest([tree], root / "store")
    assert counts.logs_ingested == len(NODE_LOGS), counts.problems
    query = "SELECT log_path, nprocs, nodes, nodes_source FROM jobs"
    rows = store.connect(root / "store").execute(query).fetchall()
    return {path.split("/")[-1]: (nprocs, nodes, source) for path, nprocs, nodes, source in rows}


def test_the_logs_hold_both_kinds():
    kinds = {"BG/Q" if _pydarshan_bgq(p) else "APMPI" for p in NODE_LOGS}
    assert kinds == {"BG/Q", "APMPI"}


@pytest.mark.parametrize("path", NODE_LOGS, ids=_flat)
def test_a_job_level_module_gives_the_nodes(jobs, path):
    nprocs, nodes, source = jobs[_flat(path)]
    assert (nodes, source) == (_expected_nodes(path, nprocs), nodecount.LOG)


def _apmpi(nodes: list) -> dict:
    header = {"rank": 0, "node": None, "values": {}}
    return {"APMPI": [header] + [{"rank": r, "node": n, "values": {}} for r, n in enumerate(nodes)]}


def test_apmpi_without_a_record_of_every_rank_says_nothing():
    assert jobmodules.nodes(_apmpi(["a", "b", "b"]), 3) == 2
    assert jobmodules.nodes(_apmpi(["a", "b", "b"]), 4) is None  # rank 3 has no record
    assert jobmodules.nodes(_apmpi(["a", "", "b"]), 3) is None  # a rank without its node's name


def test_a_tag_comes_before_the_log_and_the_log_before_the_system():
    system = {"nodes": {"cores_per_node": 2, "count": 8}}
    assert nodecount.job_nodes(8, {"nodes": "3"}, system, 2) == (3, nodecount.TAG)
    assert nodecount.job_nodes(8, {"procs_per_node": "4"}, system, 1) == (2, nodecount.TAG)
    assert nodecount.job_nodes(8, {}, system, 1) == (1, nodecount.LOG)
    assert nodecount.job_nodes(8, {}, system, None) == (4, nodecount.SYSTEM)
    assert nodecount.job_nodes(8, {}, None, None) == (None, nodecount.UNKNOWN)


def test_one_rounding_of_processes_into_nodes_at_most_those_there_are():
    """nodecount.nodes_for is the one count of nodes from processes, for a system
    description (at most its nodes) and BG/Q's block (at most the block) alike, worked out by
    hand: 9 processes at 4 a node need 3 nodes."""
    assert nodecount.nodes_for(9, 4) == 3
    assert nodecount.nodes_for(9, 4, 2) == 2
    described = {"nodes": {"cores_per_node": 4, "count": 2}}
    assert nodecount.job_nodes(9, {}, described) == (2, nodecount.SYSTEM)
    assert jobmodules.nodes(_bgq(per_node=4, block=2), 9) == 2
    assert jobmodules.nodes(_bgq(per_node=4, block=128), 9) == 3


def _bgq(per_node: int, block: int) -> dict:
    values = {"BGQ_RANKSPERNODE": per_node, "BGQ_NNODES": block}
    return {"BG/Q": [{"rank": -1, "node": None, "values": values}]}
