"""Fixtures of the benchmark tests in this folder (pytest finds this file by itself)."""

import pytest
from benchmark_runs import build_lustre_stand_ins


@pytest.fixture(scope="module")
def lustre_stand_ins(tmp_path_factory):
    """(statfs shim, directory holding liblustreapi.so.1): a directory on Lustre as far as a
    benchmark can tell, and the liblustreapi it loads (benchmark_runs)."""
    return build_lustre_stand_ins(tmp_path_factory.mktemp("lustre"))
