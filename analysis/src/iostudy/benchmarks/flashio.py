"""FLASH-IO, PnetCDF version (PnetCDF's benchmarks/FLASH-IO, sources of checkpoint.1.14.1): its
command line, its output, what is wrong with a run and its performance values. Pure functions,
unit tested on real output (reframe-checks/tests/data/flashio/); reframe-checks/flashio_check.py
is their ReFrame adapter.

What the program does (flash_benchmark_io.F90, checkpoint_ncmpi_parallel.F90,
plotfile_ncmpi_parallel.F90): every rank holds local_blocks + rank % 3 blocks (local_blocks =
0.8 MAXBLOCKS: 80 in the Spack build) of NXB x NYB x NZB cells (16^3 in the Spack build) and
writes, through PnetCDF, three shared files one after the other: the checkpoint
(<prefix>ncmpi_chk_0000.nc: 24 variables in double precision plus the block tree), the plot file
of cell-centred data (<prefix>ncmpi_plt_cnt_0000.nc: 4 variables in single precision) and the
plot file of corner data (<prefix>ncmpi_plt_crn_0000.nc: the same 4 variables at (NXB+1)^3
corners). Write only: nothing is read back.

Its options, all at run time (1.14.1; older versions took `prefix blocking|nonblocking
coll|indep` as positional arguments): `-f prefix` (the files' name prefix, at most 128
characters: the program keeps it in a character(len=128)), `-i` MPI independent I/O instead of
collective (PnetCDF's independent data mode, hint romio_no_indep_rw=false), `-b` PnetCDF's
blocking API instead of its nonblocking one (iput + wait_all), `-q` quiet (no results printed:
useless to a check). Without `-f` it writes to the working folder; `-h` prints its usage and
exits 0.

Its output (rank 0; `print 1003` is Fortran F16.2): each file's time in seconds, with 2 decimals,
the slowest rank's (MPI_MAX of MPI_Wtime around the file's routine: create, header, data, close),
and its "I/O amount" in MiB: the bytes PnetCDF put (nfmpi_inq_put_size, summed over ranks)
divided by 1048576 in the source, so MiB (2^20) as printed, not 10^6; the last row gives the
whole run's time and bandwidth in MiB/s (total MiB / sum of the three times). No per-file
bandwidth is printed: this module derives it as MiB / seconds of the printed values, so its
precision is that of a 2-decimal time (a file written in 0.04 s has a bandwidth within +-12%; a
file written in under 5 ms prints 0.00 s and has none).
"""

from __future__ import annotations

import re

from iostudy.core.numfmt import MIB, MIB_S, SECONDS

PROGRAM = "flash_benchmark_io"
#: MPI-IO access of the data: the program's default, or -i
ACCESS = ("collective", "independent")
#: PnetCDF API: the program's default (iput + wait_all), or -b
REQUESTS = ("nonblocking", "blocking")
#: the prefix the check passes, relative: its job runs the program in its work folder
PREFIX = "flash_"
#: the program keeps the prefix in a character(len=128) (basenm): longer ones are cut
PREFIX_MAX = 128
#: the three files, as the check names them, with the label of their time line and the file name
FILES = {
    "checkpoint": ("checkpoint time", "ncmpi_chk_0000.nc"),
    "plot_centered": ("plot no corner", "ncmpi_plt_cnt_0000.nc"),
    "plot_corner": ("plot    corner", "ncmpi_plt_crn_0000.nc"),
}
#: the checkpoint's variables are double precision, the plot files' 4 variables single
CHECKPOINT_BYTES, PLOT_VARIABLES, PLOT_BYTES = 8, 4, 4
#: what PnetCDF writes besides the variables (header, block tree, coordinates): < 1 KiB per
#: block (164 bytes in the checkpoint) and the header; an amount beyond this tolerance is wrong
METADATA_SLACK = 0.01

_NUMBER = r"([0-9]+(?:\.[0-9]*)?)"
_MODE = re.compile(
    r"^\s*Using (PnetCDF (nonblocking|blocking) APIs|MPI (collective|independent) I/O)"
)
_COUNT = re.compile(r"^\s*number of (guards|blocks|variables)\s*:\s*([0-9]+)\s*$")
_TIME = re.compile(
    r"^\s*(checkpoint time|plot no corner|plot    corner)\s*:\s*" + _NUMBER + r"\s+sec"
)
_PART = re.compile(r"^\s*max (header|unknown|close)\s*:\s*" + _NUMBER + r"\s+sec")
_AMOUNT = re.compile(r"^\s*I/O amount\s*:\s*" + _NUMBER + r"\s+MiB")
_TOTAL = re.compile(r"^\s*Total I/O amount\s*:\s*" + _NUMBER + r"\s+MiB")
_BASE = re.compile(r"^\s*File base name\s*:\s?(.*)$")
_ROW = re.compile(
    r"^\s*([0-9]+)\s+([0-9]+)\s+x\s+([0-9]+)\s+x\s+([0-9]+)\s+"
    + _NUMBER
    + r"\s+"
    + _NUMBER
    + r"\s*$"
)
_HINT = re.compile(r"^MPI File Info: \[\s*[0-9]+\] key =\s*(\S+), value =(.*)$")


def arguments(access: str = "collective", requests: str = "nonblocking", prefix: str = PREFIX):
    """The program's options: its files named prefix..., MPI-IO access and PnetCDF API."""
    if access not in ACCESS:
        raise ValueError(f"FLASH-IO access {access!r}: not one of {', '.join(ACCESS)}")
    if requests not in REQUESTS:
        raise ValueError(f"FLASH-IO requests {requests!r}: not one of {', '.join(REQUESTS)}")
    if not prefix or prefix.startswith("-") or len(prefix) > PREFIX_MAX:
        raise ValueError(
            f"FLASH-IO prefix {prefix!r}: 1 to {PREFIX_MAX} characters, not beginning with '-'"
        )
    args = ["-i"] if access == "independent" else []
    args += ["-b"] if requests == "blocking" else []
    return args + ["-f", prefix]


def file_names(prefix: str = PREFIX) -> dict[str, str]:
    """The files a run writes, by the check's name of each."""
    return {name: prefix + suffix for name, (_, suffix) in FILES.items()}


def parse(text: str) -> dict:
    """FLASH-IO's printed results:

    {"requests": "nonblocking", "access": "collective", "guards": 4, "blocks": 80 (each rank's
     local_blocks; rank r has blocks + r % 3), "variables": 24, "prefix": "flash_",
     "files": {"checkpoint" | "plot_centered" | "plot_corner":
               {"seconds", "header_seconds", "unknown_seconds", "close_seconds", "mib"}},
     "total_mib", "procs", "block_cells": (nxb, nyb, nzb), "total_seconds", "total_mib_s",
     "hints": {MPI-IO hint: value}}

    Raises ValueError naming what is missing (the usage text, quiet mode's empty output or a
    cut-off run are not results)."""
    parsed: dict = {"files": {}, "hints": {}}
    labels = {label: name for name, (label, _) in FILES.items()}
    current = None
    for line in text.splitlines():
        if _setting_line(line, parsed):
            continue
        current, taken = _file_line(line, parsed["files"], labels, current)
        if not taken:
            _total_line(line, parsed)
    missing = _missing(parsed)
    if missing:
        raise ValueError(
            "not FLASH-IO's results (quiet mode, usage, or cut short): no " + ", ".join(missing)
        )
    return parsed


def _setting_line(line: str, parsed: dict) -> bool:
    """Whether the line is one of the run's settings (then taken into parsed): the MPI-IO
    access, PnetCDF's requests, the numbers of guards, blocks and variables."""
    if m := _MODE.match(line):
        if m.group(2):
            parsed["requests"] = m.group(2)
        else:
            parsed["access"] = m.group(3)
    elif m := _COUNT.match(line):
        parsed[m.group(1)] = int(m.group(2))
    else:
        return False
    return True


def _file_line(line: str, files: dict, labels: dict, current: str | None):
    """(the file whose lines follow, whether the line was taken): a file's time, its parts'
    maximum times and its I/O amount (its last line) into files."""
    if m := _TIME.match(line):
        current = labels[m.group(1)]
        files[current] = {"seconds": float(m.group(2))}
    elif (m := _PART.match(line)) and current:
        files[current][f"{m.group(1)}_seconds"] = float(m.group(2))
    elif (m := _AMOUNT.match(line)) and current:
        files[current]["mib"] = float(m.group(1))
        current = None
    else:
        return current, False
    return current, True


def _total_line(line: str, parsed: dict) -> None:
    """The run's totals, file base name, summary row and MPI-IO hints, into parsed."""
    if m := _TOTAL.match(line):
        parsed["total_mib"] = float(m.group(1))
    elif m := _BASE.match(line):
        parsed["prefix"] = m.group(1).strip()
    elif m := _ROW.match(line):
        parsed["procs"] = int(m.group(1))
        parsed["block_cells"] = tuple(int(m.group(i)) for i in (2, 3, 4))
        parsed["total_seconds"] = float(m.group(5))
        parsed["total_mib_s"] = float(m.group(6))
    elif m := _HINT.match(line):
        parsed["hints"][m.group(1)] = m.group(2).strip()


def _missing(parsed: dict) -> list[str]:
    """What parse found no line for, as the error names it."""
    missing = [f"'{label}'" for name, (label, _) in FILES.items() if name not in parsed["files"]]
    missing += [
        f"'{label}' of {name}"
        for name, values in parsed["files"].items()
        for key, label in (("mib", "I/O amount"), ("unknown_seconds", "max unknown"))
        if key not in values
    ]
    for key, label in (
        ("access", "Using MPI ... I/O"),
        ("requests", "Using PnetCDF ... APIs"),
        ("blocks", "number of blocks"),
        ("variables", "number of variables"),
        ("total_mib", "Total I/O amount"),
        ("procs", "nproc ... bandwidth (MiB/s)"),
    ):
        if key not in parsed:
            missing.append(f"'{label}'")
    return missing


def blocks_of_run(blocks: int, procs: int) -> int:
    """All ranks' blocks: rank r holds blocks + r % 3 (flash_benchmark_io.F90)."""
    return sum(blocks + r % 3 for r in range(procs))


def expected_mib(parsed: dict, procs: int) -> dict[str, float]:
    """The MiB of variables each file must hold for procs ranks, from the geometry the run
    printed (blocks per rank, variables, cells per block): PnetCDF writes these and a little
    metadata more."""
    nx, ny, nz = parsed["block_cells"]
    blocks = blocks_of_run(parsed["blocks"], procs)
    return {
        "checkpoint": blocks * parsed["variables"] * nx * ny * nz * CHECKPOINT_BYTES / MIB,
        "plot_centered": blocks * PLOT_VARIABLES * nx * ny * nz * PLOT_BYTES / MIB,
        "plot_corner": blocks * PLOT_VARIABLES * (nx + 1) * (ny + 1) * (nz + 1) * PLOT_BYTES / MIB,
    }


def sanity(parsed: dict, procs: int, access: str, requests: str) -> list[str]:
    """What is wrong with a run's results (empty: nothing): the ranks, the I/O modes asked for,
    and each file's amount against the variables of every rank's blocks."""
    problems = []
    if parsed["procs"] != procs:
        problems.append(f"{parsed['procs']} processes reported, expected {procs}")
    if parsed["access"] != access:
        problems.append(f"MPI {parsed['access']} I/O reported, expected {access}")
    if parsed["requests"] != requests:
        problems.append(f"PnetCDF {parsed['requests']} API reported, expected {requests}")
    for name, mib in expected_mib(parsed, procs).items():
        got = parsed["files"][name]["mib"]
        # printed with 2 decimals: 0.005 MiB either way
        if not mib - 0.005 <= got <= mib * (1 + METADATA_SLACK) + 0.005:
            problems.append(
                f"{name}: {got:.2f} MiB written, expected {mib:.2f} MiB of variables "
                f"(+{METADATA_SLACK:.0%} metadata) from {procs} processes"
            )
        if parsed["files"][name]["seconds"] < 0:
            problems.append(f"{name}: negative time")
    total = sum(f["mib"] for f in parsed["files"].values())
    if abs(total - parsed["total_mib"]) > 0.02:
        problems.append(f"total {parsed['total_mib']} MiB is not the files' sum {total:.2f}")
    return problems


def performance(parsed: dict) -> dict[str, tuple[float, str]]:
    """{name: (value, unit)}: each file's time (<file>_time_s, s) and bandwidth (<file>_mib_s,
    MiB/s: its MiB over its time, both as printed), and the whole run's, the program's own
    (total_time_s, total_mib_s). A file whose time printed as 0.00 has no bandwidth (it took
    under 5 ms)."""
    values = {}
    for name, f in parsed["files"].items():
        values[f"{name}_time_s"] = (f["seconds"], SECONDS)
        if f["seconds"] > 0:
            values[f"{name}_mib_s"] = (f["mib"] / f["seconds"], MIB_S)
    values["total_time_s"] = (parsed["total_seconds"], SECONDS)
    values["total_mib_s"] = (parsed["total_mib_s"], MIB_S)
    return values
