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
