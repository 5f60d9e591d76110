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
    # every module the runtime writes is read
    assert set(modules.READ_MODULES) >= set(runtime.values())


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


def test_a_module_a_user_names():
    assert modules.token_of("MPI-IO") == "mpiio"
    assert modules.token_of("posix") == "posix"
    assert modules.token_of("pnetcdf_file") == "pnetcdf"
    with pytest.raises(ValueError, match="'DXT': not one of POSIX, STDIO, MPI-IO, H5F"):
        modules.token_of("DXT")
    assert [modules.display(t) for t in modules.DEFAULT_SCOPE] == ["POSIX", "STDIO"]
