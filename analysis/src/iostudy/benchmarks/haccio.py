"""HACC-IO (github.com/glennklockwood/hacc-io, commit b4d8c1d of 2018-01-17, the CORAL kernel of
HACC's checkpoint/restart): its programs and command lines, its output, what is wrong with a
run and its performance values. Pure functions, unit tested on real output
(reframe-checks/tests/data/haccio/); reframe-checks/haccio_check.py is their ReFrame adapter.

What the programs do (testhacc_io.cc, restartio_glean.cc): each rank writes `particles` particles
of 38 bytes (7 floats, an int64 id, a uint16 mask) as nine arrays, after a header of 24 MiB
(FILE_HEADER_SIZE_MAX) that the first rank of each file writes at close, then reads them back.
File per process (the Makefile's `fpp` build, Spack's hacc_io, hacc_io_write, hacc_io_read):
<prefix>-Part<rank>-of-<ranks>.data, one per rank; shared file (its `all` build, Spack's
*_shared): one <prefix>-Part00000000-of-00000001.data. hacc_io writes, reads back and compares
every value in memory ("CONTENTS VERIFIED... Success"); hacc_io_write only writes, hacc_io_read
only reads an earlier checkpoint of the same ranks and particles (it aborts on another count).

Interface: the library has a POSIX path (open/lseek/write/read) and an MPI-IO one
(MPI_File_write_at / read_at, independent), but upstream's main program always calls
SetPOSIX_IO_Interface() and opens the checkpoint plainly (O_CREAT|O_WRONLY, then O_WRONLY /
O_RDONLY; no fsync). Seed 002 modified the source for MPI-IO and O_DIRECT|O_SYNC. iostudy's
Spack recipe (spack-env/repos/.../hacc_io) patches two switches in, read at run time:
HACC_IO_INTERFACE=mpiio takes the MPI-IO path (the check's default, interface "mpiio": the
seed's), and HACC_IO_OSYNC=1 opens the POSIX checkpoint O_SYNC (osync; MPI-IO has no such open
mode). O_DIRECT is not offered: it needs buffers aligned to the block size, and HACC-IO's arrays
are not. Between a write-only and a read-only launch the check flushes the files and drops their
cached pages (drop_cached_pages_command), so that the read phase reads the storage.

Output (rank 0, C++ iostream, 6 significant digits) at the end of each phase:

     WRITE Checkpoint Perf: 240.318 BW[MB/s] 57931648 Bytes 0.229895 MaxTime[sec]
     READ Restart Perf: 1535.97 BW[MB/s] 57931648 Bytes 0.0359694 MaxTime[sec]

"Bytes" is the files' size (header included) for the write phase and the bytes each rank
counts as read for the read phase (header included: every rank counts the 24 MiB header,
though in a shared file only its first rank reads it); "MaxTime" is the slowest rank's time
from the phase's create/open to its close (MPI_Wtime). The bandwidth is labelled MB/s but the
source divides by 1024.0 * 1024.0: it is MiB/s. This module derives MiB/s from Bytes and
MaxTime (the printed figure has 6 digits only); nothing is converted.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

from iostudy.benchmarks import checks
from iostudy.core.checknames import HACCIO
from iostudy.core.numfmt import MIB, MIB_S, SECONDS

#: record of one particle: 7 floats, an int64 and a uint16
PARTICLE_BYTES = 7 * 4 + 8 + 2
#: the header every file begins with (restartio_glean.h FILE_HEADER_SIZE_MAX)
HEADER_BYTES = 25165824
#: the program reads the count with atoi(): an int
PARTICLES_MAX = 2**31 - 1
LAYOUTS = ("fpp", "shared")  # file per process (N-N), one shared file (N-1)
#: the programs of each layout: write then read back and verify, write only, read only
PROGRAMS = {
    "fpp": {"verify": "hacc_io", "write": "hacc_io_write", "read": "hacc_io_read"},
    "shared": {
        "verify": "hacc_io_shared",
        "write": "hacc_io_write_shared",
        "read": "hacc_io_read_shared",
    },
}
#: HACC_IO_INTERFACE of iostudy's build: the library's MPI-IO path, or upstream's POSIX one
INTERFACES = ("mpiio", "posix")
#: the checkpoint's name prefix in the work folder
PREFIX = "checkpoint"
PHASES = ("write", "read")

_NUMBER = r"([0-9]+(?:\.[0-9]*)?(?:[eE][-+]?[0-9]+)?)"
_PERF = re.compile(
    r"^\s*(WRITE Checkpoint|READ Restart) Perf:\s*"
    + _NUMBER
    + r"\s+BW\[MB/s\]\s+([0-9]+)\s+Bytes\s+"
    + _NUMBER
    + r"\s+MaxTime\[sec\]"
)
_OPERATION = {"WRITE Checkpoint": "write", "READ Restart": "read"}
VERIFIED = "CONTENTS VERIFIED... Success"
#: what the programs print when something went wrong (and carry on, or abort)
FAILURES = (
    "@ PERROR @",  # GLEAN_PRINT_PERROR: a failed open, seek, write or close, on stdout
    "Particles Counts Do NOT MATCH",
    "Values Don't Match",
    "Unknown Interface",
    "Unknown Mode",
)


def programs(layout: str, verify: bool) -> dict[str, str]:
    """The program of each launch: {"verify": hacc_io} (write, read back and compare in one
    launch) or {"write": ..., "read": ...} (a launch per phase)."""
    if layout not in LAYOUTS:
        raise ValueError(f"HACC-IO layout {layout!r}: not one of {', '.join(LAYOUTS)}")
    names = PROGRAMS[layout]
    return {"verify": names["verify"]} if verify else {p: names[p] for p in PHASES}


def environment(interface: str, osync: bool) -> dict[str, str]:
    """The switches of iostudy's HACC-IO build (see the module docstring) for a run."""
    if interface not in INTERFACES:
        raise ValueError(f"HACC-IO interface {interface!r}: not one of {', '.join(INTERFACES)}")
    if osync and interface != "posix":
        raise ValueError("HACC-IO osync: O_SYNC is an open flag of the POSIX interface only")
    return {"HACC_IO_INTERFACE": interface, **({"HACC_IO_OSYNC": "1"} if osync else {})}


def arguments(particles: int, prefix: Path | str) -> list[str]:
    """The programs' two arguments: particles per rank and the checkpoint's path prefix."""
    if not 1 <= particles <= PARTICLES_MAX:
        raise ValueError(f"HACC-IO particles {particles}: 1 to {PARTICLES_MAX} per rank")
    return [str(particles), str(prefix)]


def file_names(prefix: str, layout: str, procs: int) -> list[str]:
    """The checkpoint's files (restartio_glean.cc: %s-Part%08d-of-%08d.data)."""
    files = procs if layout == "fpp" else 1
    return [f"{prefix}-Part{i:08d}-of-{files:08d}.data" for i in range(files)]


def expected_bytes(
    particles: int, procs: int, layout: str, interface: str = "posix"
) -> dict[str, int]:
    """The Bytes each phase reports: the files' size when written; when read, what every rank
    counts: through POSIX its particles and the header (though in a shared file only its first
    rank reads it), through MPI-IO its particles only."""
    data = procs * particles * PARTICLE_BYTES
    files = procs if layout == "fpp" else 1
    headers_read = procs * HEADER_BYTES if interface == "posix" else 0
    return {"write": data + files * HEADER_BYTES, "read": data + headers_read}


def parse(text: str) -> dict:
    """A HACC-IO output's phases and verdict:

    {"phases": {"write" | "read": {"bytes", "seconds", "printed_bw"}}, "verified": bool,
     "failures": [the lines that say something failed]}

    Raises ValueError when it reports no phase (the usage, an abort before any phase ends)."""
    phases, failures = {}, []
    for line in text.splitlines():
        if m := _PERF.match(line):
            op = _OPERATION[m.group(1)]
            if op in phases:
                raise ValueError(f"HACC-IO output: two {op} phases")
            phases[op] = {
                "printed_bw": float(m.group(2)),
                "bytes": int(m.group(3)),
                "seconds": float(m.group(4)),
            }
        elif any(f in line for f in FAILURES):
            failures.append(line.strip())
    if not phases:
        why = f" ({failures[0]})" if failures else ""
        raise ValueError(
            "not HACC-IO's results: no 'WRITE Checkpoint Perf:' or 'READ Restart Perf:' line" + why
        )
    return {"phases": phases, "verified": VERIFIED in text, "failures": failures}


def merge(outputs: dict[str, str]) -> dict:
    """The parsed outputs of a job's launches ({"write": text, "read": text} or {"verify":
    text}) as one: the write phase from the write launch, the read phase from the read launch."""
    merged = {"phases": {}, "verified": False, "failures": []}
    for launch, text in outputs.items():
        try:
            parsed = parse(text)
        except ValueError as exc:
            raise ValueError(f"{launch} launch: {exc}") from None
        wanted = PHASES if launch == "verify" else (launch,)
        for phase in wanted:
            if phase not in parsed["phases"]:
                raise ValueError(f"{launch} launch: HACC-IO reported no {phase} phase")
            merged["phases"][phase] = parsed["phases"][phase]
        merged["verified"] |= parsed["verified"]
        merged["failures"] += parsed["failures"]
    return merged


def sanity(
    parsed: dict, particles: int, procs: int, layout: str, verify: bool, interface: str = "posix"
) -> list[str]:
    """What is wrong with a run (empty: nothing): a phase missing, Bytes other than procs ranks
    of particles (and the headers) make, a failure the program printed, the verdict of hacc_io
    missing."""
    problems = []
    expected = expected_bytes(particles, procs, layout, interface)
    for phase in PHASES:
        got = parsed["phases"].get(phase)
        if got is None:
            problems.append(f"no {phase} phase")
            continue
        if got["bytes"] != expected[phase]:
            problems.append(
                f"{phase}: {got['bytes']} bytes, expected {expected[phase]} ({procs} ranks of "
                f"{particles} particles, {layout}, {interface})"
            )
        if not got["seconds"] > 0:
            problems.append(f"{phase}: no time")
    problems += [f"HACC-IO printed: {line}" for line in parsed["failures"]]
    if verify and not parsed["verified"]:
        problems.append(f"no '{VERIFIED}': the data read back was not verified")
    return problems


def performance(parsed: dict) -> dict[str, tuple[float, str]]:
    """{name: (value, unit)}: write_mib_s, write_time_s, read_mib_s, read_time_s: each phase's
    Bytes over its MaxTime (MiB/s, as the program computes it) and MaxTime (s)."""
    values = {}
    for phase, p in parsed["phases"].items():
        values[f"{phase}_time_s"] = (p["seconds"], SECONDS)
        if p["seconds"] > 0:
            values[f"{phase}_mib_s"] = (p["bytes"] / p["seconds"] / MIB, MIB_S)
    return values


def drop_cached_pages_command(workdir: Path, prefix: str = PREFIX) -> str:
    """Shell that writes the checkpoint's files back (hacc-io does not sync them) and drops
    this node's cached pages of them, so that the read phase reads the storage, not memory."""
    return checks.drop_cached_pages_command(
        workdir, f"{shlex.quote(prefix)}-Part*.data", HACCIO.name, sync=True
    )
