"""Every ReFrame check of reframe-checks/ by name, and what it is: its title, the program it
runs and that program's Spack package, whether the program comes from the system's Spack view,
whether a campaign may exclude combinations of it, the seed and studies it serves, and what it
stores (its ReFrame performance variables, the rows its output adds to the store). Plain data,
read by every layer that names a check (ingest, the metrics, the report, the campaign); a
check's parameters and the campaign schema made from them are
:mod:`iostudy.benchmarks.registry`'s."""

from __future__ import annotations

from dataclasses import dataclass

from iostudy.core.numfmt import MIB_S, OPS_S, SECONDS


@dataclass(frozen=True)
class Stored:
    """A ReFrame performance variable of a check (in the store's perf table)."""

    name: str
    unit: str


@dataclass(frozen=True)
class CheckInfo:
    """A ReFrame check of reframe-checks/ (the file <name>.py, the class <name>)."""

    name: str
    title: str
    program: str  # what the job runs (<flavour>: the MPI flavour's build)
    package: str  # the program's Spack package (spack-env/spack.yaml)
    seed: str
    studies: tuple[str, ...]  # the studies (reports) whose campaigns run it
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
    #: the Spack variants of its package the check needs (spack-env/spack.yaml must have them)
    variants: tuple[str, ...] = ()
    #: (operation, performance variable): an application's write or read MiB/s, held against
    #: the modelled ceiling of seed 001's Fig. 4 (iostudy.metrics.ceiling)
    bandwidth: tuple[tuple[str, str], ...] = ()


def _perf(unit: str, *names: str) -> tuple[Stored, ...]:
    return tuple(Stored(name, unit) for name in names)


IOMODEL = CheckInfo(
    "iomodel_check",
    "I/O-model benchmark",
    "iomodel-<flavour>",
    "iostudy-iomodel",
    "003",
    ("acceptance", "quick"),
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

IOR = CheckInfo(
    "ior_check",
    "IOR",
    "ior",
    "ior",
    "001",
    ("acceptance", "quick", "components"),
    _perf(MIB_S, "write_mib_s", "read_mib_s"),
    spack_view=True,
    rows=("ior",),
    variants=("+hdf5", "+ncmpi"),  # its HDF5 and NCMPI APIs
)

MDTEST = CheckInfo(
    "mdtest_check",
    "mdtest",
    "mdtest",
    "ior",
    "001",
    ("acceptance", "quick"),  # IOR ships mdtest
    _perf(OPS_S, "file_create_ops_s", "file_stat_ops_s", "file_remove_ops_s", "dir_create_ops_s"),
    spack_view=True,
)

METARATES = CheckInfo(
    "metarates_check",
    "metarates",
    "metarates-<flavour>",
    "metarates",
    "001",
    ("acceptance",),
    _perf(OPS_S, "create_ops_s", "stat_ops_s", "utime_ops_s", "remove_ops_s"),
    benchmark="metarates",
)

PROBE = CheckInfo(
    "probe_check",
    "Interference probe",
    "ioprobe-<flavour>",
    "iostudy-ioprobe",
    "004",
    ("probe",),
    (*_perf(MIB_S, "aggregate_mib_s", "mean_writer_mib_s"), Stored("imbalance", "x")),
    benchmark="ioprobe",
    rows=("probes",),
)

ADAPTIVE = CheckInfo(
    "adaptive_check",
    "Adaptive I/O",
    "adaptive-<flavour>",
    "iostudy-adaptive",
    "004",
    ("probe",),
    (Stored("mib_s", MIB_S), Stored("seconds", SECONDS), Stored("moves", "writes")),
    benchmark="adaptive",
    rows=("adaptive",),
)

BTIO = CheckInfo(
    "btio_check",
    "BTIO",
    "btio",
    "btio",
    "001",
    ("applications",),
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

MADBENCH = CheckInfo(
    "madbench_check",
    "MADbench2",
    "MADbench2.x",
    "madbench2",
    "001",
    ("applications",),
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

FLASHIO = CheckInfo(
    "flashio_check",
    "FLASH-IO",
    "flash_benchmark_io",
    "flash-io",
    "001",
    ("applications",),
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

HACCIO = CheckInfo(
    "haccio_check",
    "HACC-IO",
    "hacc_io_write, hacc_io_read (hacc_io with verify; *_shared for layout shared)",
    "hacc-io",
    "002",
    ("applications",),
    (*_perf(MIB_S, "write_mib_s", "read_mib_s"), *_perf(SECONDS, "write_time_s", "read_time_s")),
    spack_view=True,
    application=True,
    bandwidth=(("write", "write_mib_s"), ("read", "read_mib_s")),
)

HMMER = CheckInfo(
    "hmmer_check",
    "HMMER hmmsearch",
    "hmmsearch (the view's, else Debian's)",
    "hmmer",
    "002",
    ("applications",),
    (Stored("elapsed_s", SECONDS),),
    spack_view=True,
    application=True,
    variants=("+mpi",),
)

FIO = CheckInfo(
    "fio_check",
    "fio",
    "fio",
    "fio",
    "001",
    ("acceptance", "components"),
    (Stored("write_mib_s", MIB_S), Stored("read_mib_s", MIB_S), Stored("syncwrite_mib_s", MIB_S)),
    rows=("components",),
)

NETBW = CheckInfo(
    "netbw_check",
    "netbw",
    "netbw-<flavour>",
    "iostudy-netbw",
    "001",
    ("acceptance", "components"),
    _perf(MIB_S, "pair_mib_s", "aggregate_mib_s", "unaligned_mib_s"),
    benchmark="netbw",
    rows=("components",),
)


#: every check, by name, in the report's order
CHECKS: dict[str, CheckInfo] = {
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
