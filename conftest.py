"""Fixtures shared by the test folders of every component (pytest finds this file first)."""

import os
import shutil
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parent


@pytest.fixture
def configs_copy(tmp_path, monkeypatch):
    """A copy of configs/ that a test may change, used by iostudy and ReFrame alike."""
    root = tmp_path / "configs"
    shutil.copytree(REPO_ROOT / "configs", root, ignore=shutil.ignore_patterns("__pycache__"))
    monkeypatch.setenv("IOSTUDY_CONFIGS", str(root))
    # testcluster's storage (its GlusterFS volume, the campaigns' scratch) lies under the
    # cluster's state directory: a folder of the test's when no cluster's is set
    if not os.environ.get("IOSTUDY_CLUSTER_STATE"):
        monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", str(tmp_path / "cluster-state"))
    return root


@pytest.fixture
def spack_build(tmp_path_factory, monkeypatch):
    """An empty stand-in for build/spack/ (IOSTUDY_SPACK_BUILD, where the checks look for
    Spack's programs): no system has a Spack build until a test adds one. A temporary folder,
    never inside the checkout."""
    root = tmp_path_factory.mktemp("spack-build")
    monkeypatch.setenv("IOSTUDY_SPACK_BUILD", str(root))
    return root


@pytest.fixture(scope="module")
def lustre_stand_ins(tmp_path_factory):
    """(statfs shim, directory holding liblustreapi.so.1): a directory on Lustre as far as a
    benchmark can tell, and the liblustreapi it loads (reframe-checks/tests/benchmark_runs.py,
    importable from the tests beside it, the only users). Here, not in a conftest.py of that
    folder: two modules named conftest on the path shadow each other."""
    from benchmark_runs import build_lustre_stand_ins

    return build_lustre_stand_ins(tmp_path_factory.mktemp("lustre"))
