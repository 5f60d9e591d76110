"""Darshan's modules as iostudy knows them, defined once: the name PyDarshan and a log's header
give each, its id in the log format, the store's token for its records, the I/O interface it
stands for (seed 000's Fig. 2 and Table II), that interface's letter in Table II, its float
counters' prefix and the record version read.

Every map of module names elsewhere derives from :data:`MODULES`. The runtime's ids
(runtime/src/darshan_format.h, ``IOS_MOD_*``) are the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Module:
    name: str  # PyDarshan's name: a log header's modules, the jobs table's `modules`
    module_id: int  # the log format's id (format 3.41; the log-format reference, section 5)
    token: str | None = None  # the files table's `module`: record modules only
    interface: str | None = None  # the I/O interface it shows
    fprefix: str | None = None  # its float counters' prefix (F_READ_TIME, ...)
    version: int | None = None  # the record version libdarshan-util 3.5.0 reads


# In the order tables show them. H5D and PNETCDF_VAR are not read (their files' records are the
# H5F and PNETCDF_FILE ones), but a log that has them used the interface.
MODULES = (
    Module("POSIX", 1, "posix", "POSIX", "POSIX_F_", 4),
    Module("STDIO", 9, "stdio", "STDIO", "STDIO_F_", 2),
    Module("MPI-IO", 2, "mpiio", "MPI-IO", "MPIIO_F_", 3),
    Module("H5F", 3, "h5f", "HDF5", "H5F_F_", 3),
    Module("H5D", 4, interface="HDF5"),
    Module("PNETCDF_FILE", 5, "pnetcdf", "PnetCDF", "PNETCDF_FILE_F_", 3),
    Module("PNETCDF_VAR", 6, interface="PnetCDF"),
    Module("LUSTRE", 8),
    Module("HEATMAP", 15),
    # every read and write of POSIX's and MPI-IO's, traced (iostudy.logs.dxt: the dxt table)
    Module("DXT_POSIX", 10),
    Module("DXT_MPIIO", 11),
)
BY_NAME = {m.name: m for m in MODULES}
#: the modules of I/O traces (iostudy.logs.dxt); id -> name
TRACE_MODULES = {m.module_id: m.name for m in MODULES if m.name in ("DXT_POSIX", "DXT_MPIIO")}

#: the modules whose records are a file's counters (the files table's rows)
RECORD_MODULES = tuple(m.name for m in MODULES if m.token)
#: PyDarshan name -> the files table's module token
TOKENS = {m.name: m.token for m in MODULES if m.token}
#: token -> PyDarshan name
NAMES = {m.token: m.name for m in MODULES if m.token}
#: the modules read from a log: the record modules, LUSTRE and HEATMAP; id -> name
READ_MODULES = {m.module_id: m.name for m in MODULES if m.token or m.name in ("LUSTRE", "HEATMAP")}
#: the record version read of each record module
CURRENT_VERSIONS = {m.name: m.version for m in MODULES if m.token}
#: the float counters' prefix of each record module
FPREFIX = {m.name: m.fprefix for m in MODULES if m.token}
#: the interfaces, in the order tables and figures show them
INTERFACE_ORDER = tuple(dict.fromkeys(m.interface for m in MODULES if m.interface))
#: Table II's letter of each interface, in Table II's order (seed 000: H, N, M, S, P)
INTERFACE_LETTERS = {"HDF5": "H", "PnetCDF": "N", "MPI-IO": "M", "STDIO": "S", "POSIX": "P"}
#: the scope per-job figures count by default (seed 000's MiB/s/CN: POSIX and STDIO)
DEFAULT_SCOPE = ("posix", "stdio")


def interfaces(names) -> list[str]:
    """The interfaces modules (PyDarshan names; others ignored) stand for, in table order."""
    present = {BY_NAME[n].interface for n in names if n in BY_NAME and BY_NAME[n].interface}
    return [i for i in INTERFACE_ORDER if i in present]


def letters(names) -> str:
    """Table II's letters of the interfaces modules (PyDarshan names) stand for: "H,M,P"."""
    present = set(interfaces(names))
    return ",".join(letter for i, letter in INTERFACE_LETTERS.items() if i in present)


def token_of(choice: str) -> str:
    """The files table's token of a module a user names (POSIX, MPI-IO, STDIO, ... or a
    token); ValueError naming the choices otherwise."""
    if choice in NAMES:
        return choice
    if choice.upper() in TOKENS:
        return TOKENS[choice.upper()]
    raise ValueError(f"module {choice!r}: not one of {', '.join(TOKENS)}")


def display(token: str) -> str:
    """A token as users know the module: posix -> POSIX, mpiio -> MPI-IO."""
    return NAMES.get(token, token.upper())
