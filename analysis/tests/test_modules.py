"""The one registry of Darshan modules (iostudy.logs.modules) against two independent sources:
PyDarshan's own list of module names by id, and the runtime's ids (darshan_format.h)."""

import re

import darshan.backend.cffi_backend as pydarshan
import pytest

from iostudy.core.config import REPO_ROOT
from iostudy.logs import modules


def test_every_id_is_the_name_pydarshan_gives_it():
    for m in modules.MODULES:
        assert pydarshan._mod_names[m.module_id] == m.name, m


def test_the_runtime_writes_the_same_ids():
    header = (REPO_ROOT / "runtime/src/darshan_format.h").read_text()
    runtime = {name: int(i) for name, i in re.findall(r"IOS_MOD_(\w+) = (\d+)", header)}
    assert runtime, "no IOS_MOD_ ids found"
    for name, module_id in runtime.items():
        darshan_name = {"MPIIO": "MPI-IO"}.get(name, name)
        assert modules.BY_NAME[darshan_name].module_id == module_id, name
    # every module the runtime writes is read: its records, or its traces (iostudy.logs.dxt)
    assert set(modules.READ_MODULES) | set(modules.TRACE_MODULES) >= set(runtime.values())


@pytest.mark.parametrize(
    "names, interfaces, letters",
    [
        (["POSIX", "STDIO", "LUSTRE", "HEATMAP"], ["POSIX", "STDIO"], "S,P"),
        (["H5D"], ["HDF5"], "H"),  # dataset records alone: the job used HDF5
        (["PNETCDF_VAR", "MPI-IO", "DXT_POSIX"], ["MPI-IO", "PnetCDF"], "N,M"),
        # IOR's DFS backend: DAOS's file system over its objects; Table II has no letter
        (["POSIX", "STDIO", "DFS", "DAOS", "HEATMAP"], ["POSIX", "STDIO", "DFS", "DAOS"], "S,P"),
        (["APMPI", "APXC", "BG/Q"], [], ""),  # job-level modules: no I/O interface
        ([], [], ""),
    ],
)
def test_interfaces_and_letters(names, interfaces, letters):
    assert modules.interfaces(names) == interfaces
    assert modules.letters(names) == letters


@pytest.mark.parametrize(
    "name, token",
    [
        ("MPI-IO", "mpiio"),
        ("mpi-io", "mpiio"),
        ("MPIIO", "mpiio"),
        ("posix", "posix"),
        ("Stdio", "stdio"),
        ("pnetcdf_file", "pnetcdf"),
        ("PNETCDF_VAR", "pnetcdf_var"),
        ("h5f", "h5f"),
        ("H5D", "h5d"),
        ("dfs", "dfs"),
        ("DAOS", "daos"),
    ],
)
def test_a_module_a_user_names(name, token):
    """Every module with files rows, by Darshan's name in any case (or the store's token)."""
    assert modules.token_of(name) == token


def test_what_is_not_a_module_with_files_rows_is_refused_naming_the_choices():
    for name in ("DXT", "APMPI", "BG/Q", "LUSTRE"):
        with pytest.raises(ValueError, match="not one of POSIX, STDIO, MPI-IO, H5F, H5D, PNETC"):
            modules.token_of(name)


def test_the_default_scope_is_the_layers_that_moved_the_bytes():
    names = [modules.display(t) for t in modules.DEFAULT_SCOPE]
    assert names == ["POSIX", "STDIO", "DFS", "DAOS"]
    assert all(modules.BY_NAME[n].version for n in modules.GENERIC_MODULES + modules.AUTOPERF)
