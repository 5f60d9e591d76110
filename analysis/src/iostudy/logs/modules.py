"""Darshan's modules as iostudy knows them, defined once: the name PyDarshan and a log's header
give each, its id in the log format, the store's token for its records, the I/O interface it
stands for (seed 000's Fig. 2 and Table II), that interface's letter in Table II, its float
counters' prefix, the record version read, and what its records are to a job (its layer).

Every map of module names elsewhere derives from :data:`MODULES`. The runtime's ids
(runtime/src/darshan_format.h, ``IOS_MOD_*``) are the same numbers.
"""

from __future__ import annotations

from dataclasses import dataclass

# What a module's records are to a job (analysis/README.md, "Modules"):
MOVED = "moved"  # a layer that moved the bytes to storage: a job's bytes and I/O time
ABOVE = "above"  # a library over such a layer, which moved its bytes: its own figures only
JOB = "job"  # counters of the job or of its ranks, not of files: the jobcounters table


@dataclass(frozen=True)
class Module:
    name: str  # PyDarshan's name: a log header's modules, the jobs table's `modules`
    module_id: int  # the log format's id (format 3.41; the log-format reference, section 5)
    token: str | None = None  # the files table's `module`: modules whose records are files
    interface: str | None = None  # the I/O interface it shows
    fprefix: str | None = None  # its float counters' prefix (F_READ_TIME, ...)
    version: int | None = None  # the record version libdarshan-util 3.5.0 reads
    layer: str | None = None  # MOVED, ABOVE or JOB; None: LUSTRE's layouts, HEATMAP's bins


# In the order tables show them.
MODULES = (
    Module("POSIX", 1, "posix", "POSIX", "POSIX_F_", 4, MOVED),
    Module("STDIO", 9, "stdio", "STDIO", "STDIO_F_", 2, MOVED),
    Module("MPI-IO", 2, "mpiio", "MPI-IO", "MPIIO_F_", 3, ABOVE),
    # HDF5's files and datasets, PnetCDF's files and variables
    Module("H5F", 3, "h5f", "HDF5", "H5F_F_", 3, ABOVE),
    Module("H5D", 4, "h5d", "HDF5", "H5D_F_", 2, ABOVE),
    Module("PNETCDF_FILE", 5, "pnetcdf", "PnetCDF", "PNETCDF_FILE_F_", 3, ABOVE),
    Module("PNETCDF_VAR", 6, "pnetcdf_var", "PnetCDF", "PNETCDF_VAR_F_", 1, ABOVE),
    # DAOS's file system (DFS) and objects (arrays, key-values): I/O that bypassed POSIX
    Module("DFS", 16, "dfs", "DFS", "DFS_F_", 1, MOVED),
    Module("DAOS", 17, "daos", "DAOS", "DAOS_F_", 1, MOVED),
    # Blue Gene/Q's job description, AutoPerf's Cray XC router and MPI counters
    Module("BG/Q", 7, version=2, layer=JOB),
    Module("APXC", 13, version=1, layer=JOB),
    Module("APMPI", 14, version=1, layer=JOB),
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
#: the job-level modules (the jobcounters table's rows)
JOB_MODULES = tuple(m.name for m in MODULES if m.layer == JOB)
#: AutoPerf's modules: a header record, then a record per rank (or router), taken from the
#: region's bytes (iostudy.logs.jobmodules), never read through libdarshan-util
AUTOPERF = ("APXC", "APMPI")
#: the modules read record by record through libdarshan-util's generic reader
GENERIC_MODULES = tuple(m for m in RECORD_MODULES + JOB_MODULES if m not in AUTOPERF)
#: PyDarshan name -> the files table's module token
TOKENS = {m.name: m.token for m in MODULES if m.token}
#: token -> PyDarshan name
NAMES = {m.token: m.name for m in MODULES if m.token}
#: the modules read from a log but DXT's traces (iostudy.logs.dxt); id -> name
READ_MODULES = {m.module_id: m.name for m in MODULES if m.module_id not in TRACE_MODULES}
#: the record version read of each module read record by record (GENERIC_MODULES, AUTOPERF)
CURRENT_VERSIONS = {m.name: m.version for m in MODULES if m.version}
#: the float counters' prefix of each record module
FPREFIX = {m.name: m.fprefix for m in MODULES if m.token}
#: the interfaces, in the order tables and figures show them
INTERFACE_ORDER = tuple(dict.fromkeys(m.interface for m in MODULES if m.interface))
#: Table II's letter of each interface, in Table II's order (seed 000: H, N, M, S, P)
INTERFACE_LETTERS = {"HDF5": "H", "PnetCDF": "N", "MPI-IO": "M", "STDIO": "S", "POSIX": "P"}
#: the files table's tokens in the order tables show them: the layers that moved bytes first
TOKEN_ORDER = tuple(m.token for m in MODULES if m.token)
#: the scope per-job figures count by default: the layers that moved the job's bytes
DEFAULT_SCOPE = tuple(m.token for m in MODULES if m.layer == MOVED)
#: a layer that moved bytes over another one: its records count only where the log has none
#: of the other's of the same object (DFS calls DAOS, and both name an object by the same
#: record id: a hash of its pool, container and object id)
OVER = {"dfs": "daos"}


def counted(scope, files: str = "files") -> str:
    """The one rule of a job's totals, as an SQL condition on the store's files rows (``files``:
    the relation's name or alias): the rows of the modules of ``scope`` (tokens), but a row of
    a layer over another of the scope (:data:`OVER`) whose log has the other's record of the
    same object (that one counts its bytes and time)."""
    tokens = ", ".join(f"'{t}'" for t in scope)
    rule = f"{files}.module IN ({tokens})"
    for upper, lower in OVER.items():
        if upper in scope and lower in scope:
            rule += (
                f" AND NOT ({files}.module = '{upper}' AND EXISTS (SELECT 1 FROM files below"
                f" WHERE below.module = '{lower}' AND below.log_sha256 = {files}.log_sha256"
                f" AND below.record_id = {files}.record_id))"
            )
    return rule


def interfaces(names) -> list[str]:
    """The interfaces modules (PyDarshan names; others ignored) stand for, in table order."""
    present = {BY_NAME[n].interface for n in names if n in BY_NAME and BY_NAME[n].interface}
    return [i for i in INTERFACE_ORDER if i in present]


def letters(names) -> str:
    """Table II's letters of the interfaces modules (PyDarshan names) stand for: "H,M,P"."""
    present = set(interfaces(names))
    return ",".join(letter for i, letter in INTERFACE_LETTERS.items() if i in present)


def token_of(choice: str) -> str:
    """The files table's token of a module a user names, case-insensitive: Darshan's name
    (POSIX, MPI-IO, PNETCDF_VAR, ...) or a token (mpiio, pnetcdf); ValueError naming the
    choices otherwise."""
    if choice.lower() in NAMES:
        return choice.lower()
    if choice.upper() in TOKENS:
        return TOKENS[choice.upper()]
    raise ValueError(f"module {choice!r}: not one of {', '.join(TOKENS)}")


def display(token: str) -> str:
    """A token as users know the module: posix -> POSIX, mpiio -> MPI-IO."""
    return NAMES.get(token, token.upper())
