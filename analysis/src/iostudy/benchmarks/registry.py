"""Every ReFrame check of reframe-checks/ described once: its name and title, the program it
runs and that program's Spack package, whether the program comes from the system's Spack view,
whether a campaign may exclude combinations of it, the seed and studies it serves, its
parameters (ReFrame type, default, description, the JSON-schema constraints of a value) and what
it stores (its ReFrame performance variables, the rows its output adds to the store).

What derives from it: the campaign schema's per-check parameters (`campaign_schema`, written
into configs/schemas/campaign.schema.json by `python -m iostudy.benchmarks.registry --write`,
whose default run says whether the file is up to date), the checks' ReFrame defaults
(`reframe_defaults`), what `iostudy campaign run` needs of each check (iostudy.run.campaign) and
the report's application checks. Plain data, apart from the schema file: no ReFrame here.

A parameter's default is the value the check takes when it is not given. `filled` says whether
a campaign that omits it gets it written in (the schema's "default", which config.load_campaign
fills in): a filled parameter is part of every run's parameters, so of the fingerprint of its
results (iostudy.metrics.compare); one not filled is only the check's, and appears in a run's
parameters only when its campaign names it. A required parameter is one a campaign must give;
its default serves runs by hand.
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass, field, replace
from pathlib import Path

from iostudy.core import config

SCHEMA_PATH = config.DEFAULT_CONFIGS / "schemas" / "campaign.schema.json"
#: No default: the check needs the value (ReFrame's variable has none).
NO_DEFAULT = object()
#: "procs_per_node": "system" reaches a check as 0: the partition's cores per node, at most
#: the check's process count, resolved per test case.
PER_NODE_OF_SYSTEM = 0

# ---- the shared $defs of the campaign schema and the value forms built on them ----------------
SHARED_DEFS = {
    "size": {
        "description": "bytes, or KiB/MiB/GiB with a K/M/G suffix",
        "type": "string",
        "pattern": "^[1-9][0-9]*[KMG]?$",
    },
    "power_of_two": {"enum": [1 << k for k in range(17)]},
}
SIZE = {"$ref": "#/$defs/size"}
POWER_OF_TWO = {"$ref": "#/$defs/power_of_two"}
COUNT = {"type": "integer", "minimum": 1}
BOOLEAN = {"type": "boolean"}
SYSTEM = {"const": "system"}
TARGET_NAME = "^[A-Za-z0-9][A-Za-z0-9_.-]*$"  # as a system description's storage targets


def scanned(value: dict, item: dict | None = None) -> dict:
    """A value, or a list of distinct values to scan (each of item's form; by default value's)."""
    items = value if item is None else item
    return {"oneOf": [value, {"type": "array", "minItems": 1, "uniqueItems": True, "items": items}]}


def enum(*values) -> dict:
    return {"enum": list(values)}


# Shared scanned forms, named in the schema's $defs.
SHARED_DEFS["sizes"] = {"description": "a size, or a list of sizes to scan", **scanned(SIZE)}
SHARED_DEFS["positive_counts"] = {
    "description": "a count, or a list of counts to scan",
    **scanned(COUNT),
}
#: a scanned value of these forms refers to its $defs entry
SHARED_FORMS = ((SIZE, "sizes"), (COUNT, "positive_counts"))


@dataclass(frozen=True)
class Param:
    """A check's parameter: a ReFrame variable of the check, set by a campaign."""

    name: str
    type: type  # the ReFrame variable's: str, int, float or bool
    description: str
    value: dict  # the JSON schema of one value
    default: object = NO_DEFAULT
    required: bool = False  # a campaign must give it
    filled: bool = True  # a campaign that omits it gets the default (module docstring)
    scan: bool = True  # a list of values scans it
    item: dict | None = None  # the schema of a scanned list's item, when not that of a value

    def schema(self) -> dict:
        """The parameter's property in the campaign schema."""
        shared = next((name for form, name in SHARED_FORMS if form == self.value), None)
        if not self.scan:
            prop = {"description": self.description, **self.value}
        elif self.item is None and shared:
            prop = {"$ref": f"#/$defs/{shared}", "description": self.description}
        else:
            prop = {"description": self.description, **scanned(self.value, self.item)}
        if self.filled and not self.required and self.default is not NO_DEFAULT:
            prop["default"] = self.default
        return prop

    def reframe_default(self):
        """The default as the check's ReFrame variable holds it."""
        if self.name == "procs_per_node" and self.default == "system":
            return PER_NODE_OF_SYSTEM
        return float(self.default) if self.type is float else self.default


@dataclass(frozen=True)
class Stored:
    """A ReFrame performance variable of a check (in the store's perf table)."""

    name: str
    unit: str


@dataclass(frozen=True)
class Check:
    """A ReFrame check of reframe-checks/ (the file <name>.py, the class <name>)."""

    name: str
    title: str
    description: str  # of its parameters, in the campaign schema
    program: str  # what the job runs (<flavour>: the MPI flavour's build)
    package: str  # the program's Spack package (spack-env/spack.yaml)
    seed: str
    studies: tuple[str, ...]  # the studies (reports) whose campaigns run it
    parameters: tuple[Param, ...]
    perf: tuple[Stored, ...]
    #: the program comes from the system's Spack view, built with one MPI: the check runs with
    #: that flavour only (without a view it skips, naming what is missing)
    spack_view: bool = False
    #: iostudy's own benchmark, <benchmark>-<flavour>: the view's, else `make setup`'s build
    benchmark: str | None = None
    #: built on iostudy.benchmarks.benchcheck.BenchmarkCheck: it takes a campaign's exclusions
    excludable: bool = True
    application: bool = False  # an application check (the report's applications section)
    #: the store's tables its output adds rows to, beyond the perf table and the log's
    rows: tuple[str, ...] = ()
    schema_extra: dict = field(default_factory=dict)
    #: the Spack variants of its package the check needs (spack-env/spack.yaml must have them)
    variants: tuple[str, ...] = ()
    #: (operation, performance variable): an application's write or read MiB/s, held against
    #: the modelled ceiling of seed 001's Fig. 4 (iostudy.metrics.ceiling)
    bandwidth: tuple[tuple[str, str], ...] = ()


# ---- parameters several checks share ----------------------------------------------------------
PROCS = Param(
    "procs",
    int,
    'processes: a count, "system" (every core), or "scaling" (1, 2, 4, ... up to every core)',
    {"oneOf": [COUNT, enum("system", "scaling")]},
    default=1,
    filled=False,
)
PROCS_PER_NODE = Param(
    "procs_per_node",
    int,
    '"system": the system\'s cores per node, at most procs',
    {"oneOf": [COUNT, SYSTEM]},
    default="system",
    filled=False,
    scan=False,
)
TARGET = Param(
    "target",
    str,
    "scratch: the system's scratch storage; memory: /dev/shm of the nodes, the client-side ceiling",
    enum("scratch", "memory"),
    default="scratch",
    filled=False,
)
#: the scaling checks': a campaign gives the processes and gets the placement and target
SCALING_POINT = (
    replace(PROCS, required=True),
    replace(PROCS_PER_NODE, filled=True),
    replace(TARGET, filled=True),
)
#: the application checks': a campaign's parameters hold only what it names
APP_POINT = (PROCS, PROCS_PER_NODE, TARGET)


def _perf(unit: str, *names: str) -> tuple[Stored, ...]:
    return tuple(Stored(name, unit) for name in names)


MIB_S, SECONDS, OPS_S = "MiB/s", "s", "ops/s"

IOMODEL = Check(
    "iomodel_check",
    "I/O-model benchmark",
    "The I/O-model benchmark (seed 003): every model between file per process and single "
    "shared file, S bytes in total each",
    "iomodel-<flavour>",
    "iostudy-iomodel",
    "003",
    ("acceptance", "quick"),
    (
        Param(
            "size",
            str,
            "total size S written by every model (a multiple of max_procs)",
            SIZE,
            required=True,
        ),
        Param(
            "max_procs",
            int,
            'ranks of the job (M, a power of two); "system": every core of every node of the '
            "system (no oversubscription), also as an item of a scanned list",
            {"oneOf": [SYSTEM, POWER_OF_TWO]},
            required=True,
        ),
        Param(
            "procs_per_node",
            int,
            'ranks per node (P, a power of two dividing max_procs); "system": the system\'s '
            "cores per node, at most max_procs",
            {"oneOf": [SYSTEM, POWER_OF_TWO]},
            default="system",
            item=POWER_OF_TWO,
        ),
        Param(
            "read_back",
            bool,
            "read every model's files back after writing them",
            BOOLEAN,
            default=False,
            scan=False,
        ),
    ),
    _perf(
        MIB_S,
        "fpp_write_mib_s",
        "ssf_write_mib_s",
        "max_write_mib_s",
        "fpp_read_mib_s",
        "ssf_read_mib_s",
        "max_read_mib_s",
    ),
    benchmark="iomodel",
    excludable=False,
    rows=("iomodel",),
)

IOR = Check(
    "ior_check",
    "IOR",
    "IOR (seed 001's scaling campaign): write then read back, transfers calls of transfer "
    "bytes per process; a list scans the parameter",
    "ior",
    "ior",
    "001",
    ("acceptance", "quick", "components"),
    (
        *SCALING_POINT,
        Param(
            "api",
            str,
            "IOR's -a; MPIIO is collective (-c)",
            enum("POSIX", "MPIIO", "HDF5", "NCMPI"),
            default="POSIX",
        ),
        Param(
            "layout",
            str,
            "shared: one file (N-1); fpp: a file per process (N-N)",
            enum("shared", "fpp"),
            default="shared",
        ),
        Param(
            "transfer",
            str,
            "bytes per call: a multiple of the stripe (e.g. 4M) is aligned, 4000000 is not",
            SIZE,
            default="4M",
            required=True,
        ),
        Param(
            "transfers",
            int,
            "transfers per process and iteration (IOR's block = transfers x transfer): fixed "
            "data per process",
            COUNT,
            default=16,
            required=True,
        ),
        Param(
            "iterations",
            int,
            "IOR's -i: every iteration is kept",
            {"type": "integer", "minimum": 1, "maximum": 100},
            default=3,
            scan=False,
        ),
    ),
    _perf(MIB_S, "write_mib_s", "read_mib_s"),
    spack_view=True,
    rows=("ior",),
    variants=("+hdf5", "+ncmpi"),  # its HDF5 and NCMPI APIs
)

MDTEST = Check(
    "mdtest_check",
    "mdtest",
    "mdtest: files and directories per process, each process in a directory of its own; a "
    "list scans the parameter",
    "mdtest",
    "ior",
    "001",
    ("acceptance", "quick"),  # IOR ships mdtest
    (
        *SCALING_POINT,
        Param("files_per_proc", int, "mdtest's -n", COUNT, default=1000, required=True),
        Param(
            "iterations",
            int,
            "mdtest's -i",
            {"type": "integer", "minimum": 1, "maximum": 100},
            default=3,
            scan=False,
        ),
    ),
    _perf(OPS_S, "file_create_ops_s", "file_stat_ops_s", "file_remove_ops_s", "dir_create_ops_s"),
    spack_view=True,
)

METARATES = Check(
    "metarates_check",
    "metarates",
    "iostudy's metarates: barrier-synchronized create, stat, utime and remove rates, one "
    "directory per process",
    "metarates-<flavour>",
    "metarates",
    "001",
    ("acceptance",),
    (
        *SCALING_POINT,
        Param(
            "files_per_proc", int, "files each process creates", COUNT, default=1000, required=True
        ),
    ),
    _perf(OPS_S, "create_ops_s", "stat_ops_s", "utime_ops_s", "remove_ops_s"),
    benchmark="metarates",
)

PROBE = Check(
    "probe_check",
    "Interference probe",
    "The interference probe (seed 004): writers_per_target writers per storage target of the "
    "system, a file each, size bytes each, POSIX",
    "ioprobe-<flavour>",
    "iostudy-ioprobe",
    "004",
    ("probe",),
    (
        Param(
            "writers_per_target",
            int,
            "writers per storage target (the sweep: 1 to 32)",
            COUNT,
            default=1,
        ),
        Param(
            "size",
            str,
            "bytes per writer (the sweep: 1M to 1G, scaled to the system)",
            SIZE,
            default="64M",
            required=True,
        ),
        Param(
            "transfer", str, "bytes per write call, at most size", SIZE, default="1M", scan=False
        ),
        PROCS_PER_NODE,
        TARGET,
    ),
    (*_perf(MIB_S, "aggregate_mib_s", "mean_writer_mib_s"), Stored("imbalance", "x")),
    benchmark="ioprobe",
    rows=("probes",),
)

ADAPTIVE = Check(
    "adaptive_check",
    "Adaptive I/O",
    "Seed 004's adaptive I/O (section III-B) against one shared file (MPI-IO, collective) and a "
    "file per process: procs writers in one group per storage target, size bytes each, with "
    "or without a competing writer on half the targets",
    "adaptive-<flavour>",
    "iostudy-adaptive",
    "004",
    ("probe",),
    (
        replace(PROCS, required=True),
        PROCS_PER_NODE,
        Param(
            "mode",
            str,
            "adaptive (writers moved from busy targets to idle ones), mpiio (one "
            "shared file, collective writes) or posix-fpp (a file per process)",
            enum("adaptive", "mpiio", "posix-fpp"),
            default="adaptive",
            required=True,
        ),
        Param(
            "size",
            str,
            "bytes per process (seed 004: 2M, 128M, 1024M)",
            SIZE,
            default="16M",
            required=True,
        ),
        Param("block", str, "bytes per write call, at most size", SIZE, default="1M", scan=False),
        Param(
            "interference",
            bool,
            "a competing writer (dd, again and again) on the first "
            "half of the targets while the benchmark runs (seed 004, Figs. 5-7)",
            BOOLEAN,
            default=False,
        ),
    ),
    (Stored("mib_s", MIB_S), Stored("seconds", SECONDS), Stored("moves", "writes")),
    benchmark="adaptive",
    rows=("adaptive",),
)
BTIO = Check(
    "btio_check",
    "BTIO",
    "BTIO, full subtype: collective MPI-IO (seed 001, 4.4); square process counts",
    "btio",
    "btio",
    "001",
    ("applications",),
    (
        *APP_POINT,
        Param(
            "problem_class",
            str,
            "NPB problem class (grid size; dumps = time steps / 5)",
            enum("S", "W", "A", "B", "C", "D", "E"),
            default="S",
        ),
    ),
    (
        *_perf(MIB_S, "write_mib_s", "read_mib_s"),
        *_perf(SECONDS, "write_time_s", "read_time_s"),
        Stored("io_mib_s", MIB_S),
        Stored("io_time_s", SECONDS),
        Stored("io_gib", "GiB"),
    ),
    spack_view=True,
    application=True,
    bandwidth=(("write", "write_mib_s"), ("read", "read_mib_s")),
)


def _count(name: str, description: str, default: int) -> Param:
    """A count of an application's input that a campaign names when it means it."""
    return Param(name, int, description, COUNT, default=default, filled=False)


MADBENCH = Check(
    "madbench_check",
    "MADbench2",
    "MADbench2 in I/O mode (seed 001, 4.4); square process counts",
    "MADbench2.x",
    "madbench2",
    "001",
    ("applications",),
    (
        *APP_POINT,
        _count("npix", "pixels: each matrix is NPIX^2 doubles", 4096),
        _count("nbin", "bins: matrices per phase", 4),
        _count("sblocksize", "ScaLAPACK block size", 32),
        _count("fblocksize", "file block size (bytes the I/O aligns to)", 4096),
        _count("rmod", "RMOD: 1 of every RMOD processes reads at a time", 1),
        _count("wmod", "WMOD: 1 of every WMOD processes writes at a time", 1),
        Param("iomethod", str, "POSIX (stdio) or MPI-IO", enum("POSIX", "MPI"), default="POSIX"),
        Param(
            "filetype",
            str,
            "one shared file, or a file per process",
            enum("SHARED", "UNIQUE"),
            default="SHARED",
        ),
        Param(
            "bwexp",
            float,
            "busy-work exponent (seed 001: 1)",
            {"type": "number", "exclusiveMinimum": 0},
            default=1,
            scan=False,
        ),
    ),
    (
        *_perf(SECONDS, "s_write_s", "w_read_s", "w_write_s", "c_read_s"),
        *_perf(
            MIB_S,
            "s_write_mib_s",
            "w_read_mib_s",
            "w_write_mib_s",
            "c_read_mib_s",
            "write_mib_s",
            "read_mib_s",
        ),
        *_perf(SECONDS, "s_total_s", "w_total_s", "c_total_s"),
    ),
    spack_view=True,
    application=True,
    bandwidth=(("write", "write_mib_s"), ("read", "read_mib_s")),
)

FLASHIO = Check(
    "flashio_check",
    "FLASH-IO",
    "FLASH-IO (PnetCDF): checkpoint and two plot files (seed 001, 4.4)",
    "flash_benchmark_io",
    "flash-io",
    "001",
    ("applications",),
    (
        *APP_POINT,
        Param(
            "access",
            str,
            "MPI-IO access of the variables",
            enum("collective", "independent"),
            default="collective",
        ),
        Param(
            "requests",
            str,
            "PnetCDF's request API",
            enum("nonblocking", "blocking"),
            default="nonblocking",
        ),
    ),
    (
        *_perf(SECONDS, "checkpoint_time_s", "plot_centered_time_s", "plot_corner_time_s"),
        *_perf(MIB_S, "checkpoint_mib_s", "plot_centered_mib_s", "plot_corner_mib_s"),
        Stored("total_time_s", SECONDS),
        Stored("total_mib_s", MIB_S),
    ),
    spack_view=True,
    application=True,
    bandwidth=(("write", "checkpoint_mib_s"),),
)

HACCIO = Check(
    "haccio_check",
    "HACC-IO",
    "HACC-IO: checkpoint and restart, particles per rank (seed 002, V-A)",
    "hacc_io_write, hacc_io_read (hacc_io with verify; *_shared for layout shared)",
    "hacc-io",
    "002",
    ("applications",),
    (
        *APP_POINT,
        _count(
            "particles",
            "particles per rank (38 bytes each, plus a 24 MiB header per file)",
            1_000_000,
        ),
        Param(
            "layout",
            str,
            "a file per process (N-N) or one shared file (N-1)",
            enum("fpp", "shared"),
            default="fpp",
        ),
        Param(
            "verify",
            bool,
            "one launch that writes, reads back and compares",
            BOOLEAN,
            default=False,
        ),
        Param(
            "drop_cache",
            bool,
            "drop the files' cached pages between the phases (scratch target)",
            BOOLEAN,
            default=True,
        ),
        Param(
            "interface",
            str,
            "mpiio: the library's MPI-IO path (seed 002's); posix: upstream's POSIX path "
            "(iostudy's build of hacc-io reads HACC_IO_INTERFACE)",
            enum("mpiio", "posix"),
            default="mpiio",
        ),
        Param(
            "osync",
            bool,
            "open the POSIX checkpoint O_SYNC (interface posix only)",
            BOOLEAN,
            default=False,
        ),
    ),
    (*_perf(MIB_S, "write_mib_s", "read_mib_s"), *_perf(SECONDS, "write_time_s", "read_time_s")),
    spack_view=True,
    application=True,
    bandwidth=(("write", "write_mib_s"), ("read", "read_mib_s")),
)

HMMER = Check(
    "hmmer_check",
    "HMMER hmmsearch",
    "HMMER's hmmsearch in seed 002's configurations (Table I), on one node",
    "hmmsearch (the view's, else Debian's)",
    "hmmer",
    "002",
    ("applications",),
    (
        Param(
            "config",
            str,
            "A: results to stdout; B: to a file (-o); C: as B, the database first copied to "
            "node-local memory",
            enum("A", "B", "C"),
            default="A",
        ),
        PROCS,
        Param(
            "families",
            int,
            "generated inputs: profile HMMs (queries), each planted in every tenth sequence",
            COUNT,
            default=4,
        ),
        Param("sequences", int, "generated inputs: sequences of the database", COUNT, default=2000),
        Param(
            "length",
            int,
            "generated inputs: residues per sequence (at least 30)",
            COUNT,
            default=300,
        ),
        Param(
            "hmm_file",
            str,
            "a facility's own HMM file (e.g. Pfam-A.hmm) instead of generated inputs; with "
            "fasta_file",
            {"type": "string"},
            default="",
            filled=False,
            scan=False,
        ),
        Param(
            "fasta_file",
            str,
            "a facility's own sequence database (e.g. uniprot_sprot.fasta); with hmm_file",
            {"type": "string"},
            default="",
            filled=False,
            scan=False,
        ),
    ),
    (Stored("elapsed_s", SECONDS),),
    spack_view=True,
    application=True,
    schema_extra={"dependentRequired": {"hmm_file": ["fasta_file"], "fasta_file": ["hmm_file"]}},
    variants=("+mpi",),
)

FIO = Check(
    "fio_check",
    "fio",
    "fio on the system's scratch storage or each of its storage targets (seed 001, Fig. 3): "
    "jobs processes on one node, a file each; large direct sequential writes or reads, or "
    "small writes each followed by fsync",
    "fio",
    "fio",
    "001",
    ("acceptance", "components"),
    (
        Param(
            "operation",
            str,
            "write, read (large, direct, sequential) or syncwrite (small "
            "writes each followed by fsync: seed 001's metadata updates)",
            enum("write", "read", "syncwrite"),
            default="write",
            required=True,
        ),
        Param(
            "jobs",
            int,
            "fio processes on the target (seed 001: 1 to N threads per server)",
            COUNT,
            default=1,
            required=True,
        ),
        Param("size", str, "bytes per job", SIZE, default="256M", required=True),
        Param(
            "block",
            str,
            "bytes per request (4M as seed 001's sgp_dd; 4K to 256K for syncwrite)",
            SIZE,
            default="4M",
            required=True,
        ),
        Param(
            "iodepth",
            int,
            "requests in flight per job: 1 (one at a time, as dd) or more (a device's queue)",
            {"type": "integer", "minimum": 1, "maximum": 256},
            default=1,
        ),
        Param(
            "storage_target",
            str,
            'where fio writes: "scratch" (the system\'s scratch '
            "storage), the name of one of the targets its storage entries list (on its "
            'node), or "each" (every listed target, one test case each; scratch when the '
            "system lists none)",
            {"type": "string", "pattern": TARGET_NAME},
            default="scratch",
        ),
    ),
    (Stored("write_mib_s", MIB_S), Stored("read_mib_s", MIB_S), Stored("syncwrite_mib_s", MIB_S)),
    rows=("components",),
)
NETBW = Check(
    "netbw_check",
    "netbw",
    "iostudy's netbw (seed 001, Fig. 2b): ping-pong between rank pairs across message sizes "
    "with NetPIPE's unaligned perturbations, one pair alone and all pairs at once",
    "netbw-<flavour>",
    "iostudy-netbw",
    "001",
    ("acceptance", "components"),
    (
        replace(PROCS, default=2, required=True),
        replace(PROCS_PER_NODE, filled=True),
        Param("min_size", str, "smallest message", SIZE, default="1K", scan=False),
        Param("max_size", str, "largest message", SIZE, default="4M", scan=False),
        Param(
            "perturb",
            int,
            "bytes added to and taken from each power of two (NetPIPE: 3)",
            {"type": "integer", "minimum": 0, "maximum": 4096},
            default=3,
            scan=False,
        ),
        Param(
            "seconds",
            float,
            "time per size and mode",
            {"type": "number", "minimum": 0.001, "maximum": 60},
            default=0.05,
            scan=False,
        ),
    ),
    _perf(MIB_S, "pair_mib_s", "aggregate_mib_s", "unaligned_mib_s"),
    benchmark="netbw",
    rows=("components",),
)

#: every check, by name, in the report's order
CHECKS: dict[str, Check] = {
    c.name: c
    for c in (
        IOMODEL,
        IOR,
        MDTEST,
        METARATES,
        FIO,
        NETBW,
        PROBE,
        ADAPTIVE,
        BTIO,
        MADBENCH,
        FLASHIO,
        HACCIO,
        HMMER,
    )
}


#: the application checks (seeds 001 and 002) and the title of the benchmark each runs
APP_CHECKS = {c.name: c.title for c in CHECKS.values() if c.application}


def reframe_defaults(check: str) -> dict:
    """A check's parameters that have a default, as its ReFrame variables hold them."""
    params = CHECKS[check].parameters
    return {p.name: p.reframe_default() for p in params if p.default is not NO_DEFAULT}


# ---- the campaign schema ---------------------------------------------------------------------
def parameters_schema(check: Check) -> dict:
    """The schema of a campaign entry's parameters for check."""
    schema = {"description": check.description, "type": "object", "additionalProperties": False}
    required = [p.name for p in check.parameters if p.required]
    if required:
        schema["required"] = required
    schema["properties"] = {p.name: p.schema() for p in check.parameters}
    return {**schema, **check.schema_extra}


def campaign_schema(schema: dict) -> dict:
    """The campaign schema with what the registry says written in: the check names, the
    if/then that gives each check's parameters their schema, and the $defs."""
    entry = schema["properties"]["checks"]["items"]
    entry["properties"]["check"]["enum"] = sorted(CHECKS)
    entry["allOf"] = [
        {
            "if": {"properties": {"check": {"const": name}}},
            "then": {"properties": {"parameters": {"$ref": f"#/$defs/{name}_parameters"}}},
        }
        for name in CHECKS
    ]
    schema["$defs"] = {
        **SHARED_DEFS,
        **{f"{name}_parameters": parameters_schema(c) for name, c in CHECKS.items()},
    }
    return schema


def schema_text(path: Path = SCHEMA_PATH) -> str:
    """The campaign schema file's text as the registry makes it (the rest from the file)."""
    return json.dumps(campaign_schema(json.loads(Path(path).read_text())), indent=2) + "\n"


def main(argv=None) -> int:
    """Says whether configs/schemas/campaign.schema.json is what the registry makes (exit 1 when
    not); with --write, rewrites it."""
    parser = argparse.ArgumentParser(
        prog="python -m iostudy.benchmarks.registry",
        description="The campaign schema's check names, per-check parameters and $defs, made "
        "from the check registry (iostudy.benchmarks.registry).",
    )
    parser.add_argument("--write", action="store_true", help="rewrite the schema file")
    parser.add_argument("--schema", type=Path, default=SCHEMA_PATH, help="the schema file")
    args = parser.parse_args(argv)
    text = schema_text(args.schema)
    if args.write:
        args.schema.write_text(text)
        print(f"wrote {args.schema}")
        return 0
    if args.schema.read_text() != text:
        print(f"{args.schema}: not what the registry makes: run with --write", file=sys.stderr)
        return 1
    print(f"ok: {args.schema}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
