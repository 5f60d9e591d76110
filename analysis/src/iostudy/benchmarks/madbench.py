"""MADbench2 (reframe-checks/madbench_check.py): what the check runs and how its output reads.
Pure functions of plain data, unit tested without ReFrame on captured output.

The Spack view's `MADbench2.x` (J. Borrill, LBNL, October 2006) is built in I/O mode (-DIO):
the out-of-core pattern of MADspec without its computation. Its command line is
`MADbench2.x NPIX NBIN NOGANG SBLOCKSIZE FBLOCKSIZE RMOD WMOD`; the environment chooses
IOMETHOD (POSIX: fopen/fwrite/fread, or MPI: MPI_File_write/read, independent), IOMODE (SYNC),
FILETYPE (SHARED: one file, UNIQUE: a file per process) and BWEXP, the busy-work exponent.
It works in `files/` of its current directory. Three phases, each timed between barriers:

- S: builds and writes NBIN matrices of NPIX x NPIX doubles (S_w);
- W: reads them back (W_r) and writes NBIN result matrices (W_w);
- C: reads those (C_r).

With one gang (NOGANG 1, the I/O mode of seed 001) every phase's reads or writes move
NBIN x NPIX^2 x 8 bytes over all processes. MADbench2 prints per phase the time of each part
(cc: the rest, bw: busy-work, r: reads, w: writes, total) as the mean over the processes and
[min:max], in seconds with 2 decimals.

Seed 001 (section 4.4.2): busy-work exponent 1 (no significant computation), RMOD = WMOD = 1
(all processes do I/O at once), FBLOCKSIZE 4096 (the file alignment), a square number of
processes, NPIX 400,384 on 65,536 processes (~20 MB, 18.7 MiB, per process and matrix); its
5.13 "TiB" per component is 4 x 400384^2 x 8 = 5.13 x 10^12 bytes, that is NBIN 4.
"""

from __future__ import annotations

import math
import re

from iostudy.core.numfmt import MIB

DOUBLE = 8
IOMETHODS = ("POSIX", "MPI")
FILETYPES = ("SHARED", "UNIQUE")
IOMODE = "SYNC"
GANGS = 1
#: the phases and the I/O parts of each, as MADbench2 names them (S_w, W_r, W_w, C_r)
IO_PARTS = {"S": ("w",), "W": ("r", "w"), "C": ("r",)}
#: every part of a phase MADbench2 times (cc, bw: its busy-work and compute), I/O or not
PARTS = ("cc", "bw", "r", "w", "total")
OPERATION = {"r": "read", "w": "write"}


def arguments(npix: int, nbin: int, sblocksize: int, fblocksize: int, rmod: int, wmod: int):
    """MADbench2's command line after the program: NPIX NBIN NOGANG SBLOCKSIZE FBLOCKSIZE RMOD
    WMOD, one gang."""
    return [str(v) for v in (npix, nbin, GANGS, sblocksize, fblocksize, rmod, wmod)]


def environment(iomethod: str, filetype: str, bwexp: float) -> dict[str, str]:
    """The variables MADbench2 reads: the method, synchronous I/O, the file type, the busy-work
    exponent."""
    return {"IOMETHOD": iomethod, "IOMODE": IOMODE, "FILETYPE": filetype, "BWEXP": f"{bwexp:g}"}


def problem(
    procs: int,
    npix: int,
    nbin: int,
    sblocksize: int,
    fblocksize: int,
    rmod: int,
    wmod: int,
    iomethod: str,
    filetype: str,
) -> str | None:
    """Why MADbench2 would refuse these parameters (its own checks, in I/O mode), or None."""
    if iomethod not in IOMETHODS:
        return f"iomethod {iomethod!r} is not one of {', '.join(IOMETHODS)}"
    if filetype not in FILETYPES:
        return f"filetype {filetype!r} is not one of {', '.join(FILETYPES)}"
    if min(procs, npix, nbin, sblocksize, fblocksize, rmod, wmod) < 1:
        return "procs, npix, nbin, sblocksize, fblocksize, rmod and wmod must be positive"
    root = math.isqrt(procs)
    if root * root != procs:
        return f"procs {procs} is not a square number (MADbench2 needs 1, 4, 9, 16, ...)"
    if -(-npix // sblocksize) < root:
        return (
            f"sblocksize {sblocksize} too large for npix {npix} on {procs} processes "
            f"(needs ceil(npix / sblocksize) >= {root})"
        )
    if fblocksize % DOUBLE:
        return f"fblocksize {fblocksize} is not a whole number of doubles (8 bytes)"
    for name, mod in (("rmod", rmod), ("wmod", wmod)):
        if procs % mod:
            return f"{name} {mod} does not divide procs {procs}"
    # the shared file's offsets and the counts are C ints of doubles
    if npix * npix // procs * nbin >= 2**31:
        return f"npix {npix} and nbin {nbin}: more than 2^31 doubles per process"
    return None


def phase_bytes(npix: int, nbin: int) -> int:
    """Bytes every I/O part (S_w, W_r, W_w, C_r) moves over all processes: NBIN matrices."""
    return nbin * npix * npix * DOUBLE


# ---- output ----------------------------------------------------------------------------------
_PARAMS = re.compile(
    r"^no_pe = (\d+)\s+no_pix = (\d+)\s+no_bin = (\d+)\s+no_gang = (\d+)\s+"
    r"sblocksize = (\d+)\s+fblocksize = (\d+)\s+r_mod = (\d+)\s+w_mod = (\d+)",
    re.M,
)
_PARAM_NAMES = ("procs", "npix", "nbin", "gangs", "sblocksize", "fblocksize", "rmod", "wmod")
_ENV = re.compile(
    r"^IOMETHOD = (\S+)\s+IOMODE = (\S+)\s+FILETYPE = (\S+)\s+REMAP = (\S+)"
    r"(?:\s+BWEXP = (\S+))?",
    re.M,
)
_NUMBER = r"(-?[0-9.]+|\*+|nan|inf)"
_TIME = re.compile(
    rf"^([SWC])_({'|'.join(PARTS)})\s*{_NUMBER}\s+\[\s*{_NUMBER}:\s*{_NUMBER}\]\s*$", re.M
)


def _number(token: str, where: str) -> float:
    try:
        return float(token)
    except ValueError:
        raise ValueError(f"MADbench2 output: {where}: {token!r} is not a number") from None


def parse(text: str) -> dict:
    """MADbench2's stdout: {"procs", "npix", "nbin", "gangs", "sblocksize", "fblocksize",
    "rmod", "wmod", "iomethod", "iomode", "filetype", "remap", "bwexp" (None: MADbench2's
    default), "phases": {"S": {"w": {"mean", "min", "max"}, ...}, "W": ..., "C": ...}}
    (seconds). ValueError naming what is missing."""
    if "MADbench 2.0" not in text:
        raise ValueError("MADbench2 output: no 'MADbench 2.0' banner")
    params = _PARAMS.search(text)
    if not params:
        raise ValueError("MADbench2 output: no 'no_pe = ... w_mod = ...' parameter line")
    parsed = dict(zip(_PARAM_NAMES, map(int, params.groups()), strict=True))
    env = _ENV.search(text)
    if not env:
        raise ValueError(
            "MADbench2 output: no 'IOMETHOD = ... FILETYPE = ...' line (MADbench2 stopped "
            "checking its parameters: its stderr says why)"
        )
    parsed.update(zip(("iomethod", "iomode", "filetype", "remap"), env.groups()[:4], strict=True))
    parsed["bwexp"] = float(env.group(5)) if env.group(5) else None
    phases = {}
    for match in _TIME.finditer(text):
        phase, part = match.group(1), match.group(2)
        where = f"{phase}_{part}"
        phases.setdefault(phase, {})[part] = {
            key: _number(token, where)
            for key, token in zip(("mean", "min", "max"), match.groups()[2:], strict=True)
        }
    for phase, parts in IO_PARTS.items():
        for part in (*parts, "total"):
            if part not in phases.get(phase, {}):
                raise ValueError(
                    f"MADbench2 output: no {phase}_{part} line (the {phase} phase did not end)"
                )
    parsed["phases"] = phases
    return parsed


def sanity(
    parsed: dict,
    procs: int,
    npix: int,
    nbin: int,
    rmod: int,
    wmod: int,
    iomethod: str,
    filetype: str,
    bwexp: float,
) -> list[str]:
    """What is wrong with a run (empty: nothing): the parameters and environment it reports
    against those asked for, and every I/O part timed (a max printed as 0.00 s cannot give a
    bandwidth: too little data for MADbench2's 10 ms resolution)."""
    problems = []
    expected = {
        "procs": procs,
        "npix": npix,
        "nbin": nbin,
        "gangs": GANGS,
        "rmod": rmod,
        "wmod": wmod,
        "iomethod": iomethod,
        "iomode": IOMODE,
        "filetype": filetype,
    }
    for key, value in expected.items():
        if parsed.get(key) != value:
            problems.append(f"{key} {parsed.get(key)}, expected {value}")
    if parsed.get("bwexp") is None or abs(parsed["bwexp"] - bwexp) > 0.005:
        problems.append(f"busy-work exponent {parsed.get('bwexp')}, expected {bwexp:.2f}")
    for phase, parts in IO_PARTS.items():
        for part in parts:
            times = parsed["phases"].get(phase, {}).get(part)
            if times is None:
                problems.append(f"no {phase}_{part} time")
            elif not times["max"] > 0:
                problems.append(
                    f"{phase}_{part}: {times['max']:.2f} s, too short to time (MADbench2 "
                    "prints 10 ms steps): raise npix or nbin"
                )
    return problems


def performance(parsed: dict) -> dict[str, tuple[float, str]]:
    """{name: (value, unit)}: per phase and I/O part, its time (s: the slowest process's,
    between MADbench2's barriers, so the part's duration) and bandwidth (MiB/s: NBIN x NPIX^2
    doubles over that time): s_write, w_read, w_write, c_read; then write_mib_s and read_mib_s,
    the data of all writes (reads) over their times; and each phase's total time (the mean
    over the processes, as MADbench2 prints first)."""
    size = phase_bytes(parsed["npix"], parsed["nbin"]) / MIB
    values = {}
    sums = {"write": [0.0, 0.0], "read": [0.0, 0.0]}
    for phase, parts in IO_PARTS.items():
        for part in parts:
            operation = OPERATION[part]
            seconds = parsed["phases"][phase][part]["max"]
            name = f"{phase.lower()}_{operation}"
            values[f"{name}_s"] = (seconds, "s")
            if seconds > 0:
                values[f"{name}_mib_s"] = (size / seconds, "MiB/s")
                sums[operation][0] += size
                sums[operation][1] += seconds
    for operation, (mib, seconds) in sums.items():
        if seconds > 0:
            values[f"{operation}_mib_s"] = (mib / seconds, "MiB/s")
    for phase in IO_PARTS:
        values[f"{phase.lower()}_total_s"] = (parsed["phases"][phase]["total"]["mean"], "s")
    return values
