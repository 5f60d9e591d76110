"""Fixtures shared by the test folders of every component (pytest finds this file first)."""

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
    return root


@pytest.fixture
def spack_build(monkeypatch):
    """An empty stand-in for build/spack/ (IOSTUDY_SPACK_BUILD): no system has a Spack build
    until a test adds one. Inside the checkout, since manifests name builds relative to it."""
    root = REPO_ROOT / "build" / "test-spack-build"
    shutil.rmtree(root, ignore_errors=True)
    monkeypatch.setenv("IOSTUDY_SPACK_BUILD", str(root))
    yield root
    shutil.rmtree(root, ignore_errors=True)
