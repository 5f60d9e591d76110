"""Every ReFrame check's parameters, described once (the checks themselves, by name, are
:mod:`iostudy.core.checknames`): a parameter's ReFrame type, default, description and the
JSON-schema constraints of a value, and what a campaign's entry of the check may add.

What derives from it: the campaign schema's per-check parameters
(:mod:`iostudy.benchmarks.campaignschema`, written into configs/schemas/campaign.schema.json by
`iostudy campaign schema --write`, whose default run says whether the file is up to date) and
the checks' ReFrame defaults (`reframe_defaults`). Plain data: no ReFrame here.

A parameter's default is the value the check takes when it is not given. `filled` says whether
a campaign that omits it gets it written in (the schema's "default", which config.load_campaign
fills in): a filled parameter is part of every run's parameters, so of the fingerprint of its
results (iostudy.metrics.compare); one not filled is only the check's, and appears in a run's
parameters only when its campaign names it. A required parameter is one a campaign must give;
its default serves runs by hand.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from iostudy.benchmarks.params import (
    BOOLEAN,
    COUNT,
    NO_DEFAULT,
    POWER_OF_TWO,
    SIZE,
    SYSTEM,
    TARGET_NAME,
    Param,
    enum,
)
from iostudy.core import checknames
from iostudy.core.checknames import CheckInfo


@dataclass(frozen=True)
class CheckParameters:
    """A check's parameters (iostudy.core.checknames names the check and says what it is)."""

    info: CheckInfo
    description: str  # of its parameters, in the campaign schema
    parameters: tuple[Param, ...]
    schema_extra: dict = field(default_factory=dict)


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


def _sync(modes: tuple[str, ...], default: str, what: str) -> Param:
    """What a storage benchmark's time includes (iostudy.benchmarks.measures): not filled, so
    that the results of campaigns that do not name it keep their fingerprints."""
    return Param(
        "sync",
        str,
        f"{what}; auto: direct where the file system takes O_DIRECT (not tmpfs) and the "
        "transfers are aligned, else fsync. Each result is labelled with what it measured "
        "(`measures`)",
        enum(*modes),
        default=default,
        filled=False,
        scan=False,
    )


IOMODEL = CheckParameters(
    checknames.IOMODEL,
    "The I/O-model benchmark (seed 003): every model between file per process and single "
    "shared file, S bytes in total each",
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
        _sync(
            ("auto", "direct", "fsync", "none"),
            "none",
            "direct: O_DIRECT; fsync: each rank fsyncs before its close, inside the timed "
            "phase; none: the page cache may hold the data",
        ),
    ),
)

IOR = CheckParameters(
    checknames.IOR,
    "IOR (seed 001's scaling campaign): write then read back, transfers calls of transfer "
    "bytes per process; a list scans the parameter",
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
        _sync(
            ("auto", "direct", "fsync"),
            "fsync",
            "direct: O_DIRECT (-B, POSIX only); fsync: fsync before each close of the write "
            "phase (-e) and the read phase's cached pages dropped first (both always)",
        ),
    ),
)

MDTEST = CheckParameters(
    checknames.MDTEST,
    "mdtest: files and directories per process, each process in a directory of its own; a "
    "list scans the parameter",
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
)

METARATES = CheckParameters(
    checknames.METARATES,
    "iostudy's metarates: barrier-synchronized create, stat, utime and remove rates, one "
    "directory per process",
    (
        *SCALING_POINT,
        Param(
            "files_per_proc", int, "files each process creates", COUNT, default=1000, required=True
        ),
    ),
)

PROBE = CheckParameters(
    checknames.PROBE,
    "The interference probe (seed 004): writers_per_target writers per storage target of the "
    "system, a file each, size bytes each, POSIX",
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
)

ADAPTIVE = CheckParameters(
    checknames.ADAPTIVE,
    "Seed 004's adaptive I/O (section III-B) against one shared file (MPI-IO, collective) and a "
    "file per process: procs writers in one group per storage target, size bytes each, with "
    "or without a competing writer on half the targets",
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
)
BTIO = CheckParameters(
    checknames.BTIO,
    "BTIO, full subtype: collective MPI-IO (seed 001, 4.4); square process counts",
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
)


def _count(name: str, description: str, default: int) -> Param:
    """A count of an application's input that a campaign names when it means it."""
    return Param(name, int, description, COUNT, default=default, filled=False)


MADBENCH = CheckParameters(
    checknames.MADBENCH,
    "MADbench2 in I/O mode (seed 001, 4.4); square process counts",
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
)

FLASHIO = CheckParameters(
    checknames.FLASHIO,
    "FLASH-IO (PnetCDF): checkpoint and two plot files (seed 001, 4.4)",
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
)

HACCIO = CheckParameters(
    checknames.HACCIO,
    "HACC-IO: checkpoint and restart, particles per rank (seed 002, V-A)",
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
)

HMMER = CheckParameters(
    checknames.HMMER,
    "HMMER's hmmsearch in seed 002's configurations (Table I), on one node",
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
    schema_extra={"dependentRequired": {"hmm_file": ["fasta_file"], "fasta_file": ["hmm_file"]}},
)

FIO = CheckParameters(
    checknames.FIO,
    "fio on the system's scratch storage or each of its storage targets (seed 001, Fig. 3): "
    "jobs processes on one node, a file each; large direct sequential writes or reads, or "
    "small writes each followed by fsync",
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
)
NETBW = CheckParameters(
    checknames.NETBW,
    "iostudy's netbw (seed 001, Fig. 2b): ping-pong between rank pairs across message sizes "
    "with NetPIPE's unaligned perturbations, one pair alone and all pairs at once",
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
)

#: every check's parameters, by its name, in the report's order (checknames.CHECKS'): a check
#: named there without its parameters here fails the import (KeyError)
_DEFINED = {p.info.name: p for p in list(globals().values()) if isinstance(p, CheckParameters)}
PARAMETERS: dict[str, CheckParameters] = {name: _DEFINED[name] for name in checknames.CHECKS}


def reframe_defaults(check: str) -> dict:
    """A check's parameters that have a default, as its ReFrame variables hold them."""
    params = PARAMETERS[check].parameters
    return {p.name: p.reframe_default() for p in params if p.default is not NO_DEFAULT}
