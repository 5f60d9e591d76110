"""Fortran build facts shared by the recipes of Fortran benchmarks."""

import os

from spack.package import *


def mpi_fortran_flags(spec):
    """MPI's Fortran bindings take choice buffers of any type; gfortran 10+ rejects the
    mismatch as an error unless told otherwise."""
    return ["-fallow-argument-mismatch"] if spec.satisfies("%gcc@10:") else []


def pnetcdf_fortran_include(pnetcdf):
    """-I flags for pnetcdf.mod and pnetcdf.inc: under include/ for a Spack build, under
    lib/<triplet>/fortran/gfortran-mod-*/ for Debian's package."""
    dirs = {pnetcdf.prefix.include}
    for found in find(pnetcdf.prefix.lib, "pnetcdf.mod", max_depth=3):
        dirs.add(os.path.dirname(found))
    return [f"-I{d}" for d in sorted(dirs)]
