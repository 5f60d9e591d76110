"""Where a file lives (iostudy.collect.placement): pathinfo texts as GlusterFS 10.3's client
answered them on the test cluster, mapped to testcluster's targets. The real attribute of a file
on the volume is read in ci/tests/test_cluster_placement.py."""

import errno

import pytest

from iostudy.collect import placement
from iostudy.core import config

STATE = "/srv/cluster"
# Copied from `getfattr -n trusted.glusterfs.pathinfo` on the test cluster (state dir replaced).
ON_N2 = (
    "(<DISTRIBUTE:iostudy-dht> <POSIX(/srv/cluster/targets/n2-disk/brick):n2:"
    "/srv/cluster/targets/n2-disk/brick/t1/writer.1>)"
)
ON_N1 = ON_N2.replace("n2", "n1").replace("writer.1", "writer.0.1")


@pytest.fixture
def system(monkeypatch):
    monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", STATE)
    return config.load_system("testcluster")


def test_parse_pathinfo_names_node_and_brick():
    assert placement.parse_pathinfo(ON_N2) == [("n2", "/srv/cluster/targets/n2-disk/brick")]
    # a replicated volume's answer: one copy per brick, in order
    both = f"(<REPLICATE:v-replicate-0> {ON_N1[26:-1]} {ON_N2[26:-1]})"
    assert [node for node, _ in placement.parse_pathinfo(both)] == ["n1", "n2"]


def test_parse_pathinfo_refuses_what_names_no_brick():
    with pytest.raises(ValueError, match="no brick"):
        placement.parse_pathinfo("(<DISTRIBUTE:iostudy-dht>)")


def test_target_named_maps_a_brick_to_the_systems_target(system):
    assert placement.target_named(system, ON_N2) == "n2-disk"
    assert placement.target_named(system, ON_N1) == "n1-disk"


def test_target_named_refuses_a_brick_the_system_does_not_list(system):
    elsewhere = ON_N2.replace("/srv/cluster", "/other")
    with pytest.raises(ValueError, match="no brick of system 'testcluster'"):
        placement.target_named(system, elsewhere)
    # the right path served by the wrong node is not that target either
    with pytest.raises(ValueError, match="n1:/srv/cluster/targets/n2-disk/brick"):
        placement.target_named(system, ON_N2.replace(":n2:", ":n1:"))


def test_target_of_a_file_off_glusterfs_says_so(system, tmp_path):
    local = tmp_path / "f"
    local.write_text("x")
    with pytest.raises(OSError) as caught:
        placement.target_of(system, local)
    assert caught.value.errno in (errno.ENODATA, errno.ENOTSUP, errno.EPERM)
