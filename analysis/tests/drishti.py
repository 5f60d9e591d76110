"""Drishti (``drishti-io`` 0.8 from PyPI) as an independent oracle for ``iostudy diagnose``: run
it on a log, read the triggers it exports (``--csv``), and set them beside iostudy's rules.

Where the two disagree, :func:`why` names the reason from the log's own counters (read with
PyDarshan, not through iostudy), and a test fails on a disagreement it cannot name.
"""

from __future__ import annotations

import csv
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

MIB = 1 << 20
#: iostudy's rule -> the Drishti triggers (its insight codes) that say the same
PAIRS = {
    "small-writes": {"P06"},
    "small-reads": {"P05"},
    "misaligned": {"P08"},
    "stdio-heavy": {"S01"},
    "shared-file-independent": {"M02", "M03"},
    "rank-imbalance": {"P21", "P22"},
    "repeated-reads": {"P09"},
    "metadata-dominated": {"P17"},
}
#: Drishti's threshold of P17: a rank with more metadata time than this (seconds)
P17_SECONDS = 30


def command() -> str:
    found = shutil.which("drishti", path=str(Path(sys.executable).parent))
    if found is None:
        raise FileNotFoundError("drishti not installed: drishti-io is in analysis/pyproject.toml's "
                                "test extras (make setup)")  # fmt: skip
    return found


def triggers(log: Path) -> tuple[set[str] | None, str]:
    """The codes Drishti sets on the log, or None and why when it fails on it."""
    with tempfile.TemporaryDirectory(prefix="iostudy-drishti-") as out:
        proc = subprocess.run([command(), "--csv", "--export_dir", out, str(log)],
                              capture_output=True, text=True, timeout=300)  # fmt: skip
        exported = list(Path(out).glob("*.csv"))
        if not exported:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"Drishti failed (exit {proc.returncode}): {last}"
        header, values = list(csv.reader(exported[0].open()))[:2]
    return {code for code, value in zip(header, values, strict=True) if value == "True"}, ""


def all_triggers(logs: list[Path]) -> dict[Path, tuple[set[str] | None, str]]:
    with ThreadPoolExecutor(2) as pool:
        return dict(zip(logs, pool.map(triggers, logs), strict=True))


def disagreements(ours: set[str], theirs: set[str]) -> list[tuple[str, bool, bool]]:
    """(rule, iostudy fired, Drishti fired) of each pair on which they differ."""
    return [(rule, rule in ours, bool(theirs & codes)) for rule, codes in PAIRS.items()
            if (rule in ours) != bool(theirs & codes)]  # fmt: skip


def _posix(report) -> dict:
    return report.records["POSIX"].to_df() if "POSIX" in report.records else {}


def why(log: Path, rule: str, ours: bool, limits: dict) -> str | None:
    """The reason the two differ on this log and rule, from its counters; None: unexplained."""
    import darshan

    report = darshan.DarshanReport(str(log), read_all=True)
    posix = _posix(report)
    if rule == "stdio-heavy" and not ours:
        stdio = report.records["STDIO"].to_df()["counters"] if "STDIO" in report.records else None
        moved = 0 if stdio is None else int(stdio["STDIO_BYTES_READ"].sum()
                                             + stdio["STDIO_BYTES_WRITTEN"].sum())  # fmt: skip
        if moved < limits["stdio-heavy"]["min_mib"] * MIB:
            return (
                f"STDIO moved {moved:,} bytes: under iostudy's minimum of "
                f"{limits['stdio-heavy']['min_mib']} MiB (Drishti has none)"
            )
    if rule == "metadata-dominated" and ours and len(posix):
        meta = posix["fcounters"]["POSIX_F_META_TIME"].sum()
        if meta <= P17_SECONDS:
            return (
                f"Drishti's P17 needs a rank with over {P17_SECONDS} s of metadata time "
                f"(all ranks: {meta:.3g} s); iostudy's rule is metadata's share of the I/O time"
            )
    if rule == "repeated-reads" and ours and len(posix):
        top = posix["counters"]["POSIX_MAX_BYTE_READ"].max()
        read = posix["counters"]["POSIX_BYTES_READ"].sum()
        if top <= read:
            return (
                f"Drishti 0.8's P09 fires when the highest offset read ({top:,}) exceeds "
                f"the bytes read ({read:,}): the inverse of what its message says"
            )
    if rule == "rank-imbalance" and ours and len(posix):
        per_file = posix["counters"].query("rank >= 0").groupby("id")["rank"].nunique()
        if (per_file < 2).all():
            return (
                "each rank moved its bytes in files of its own: Drishti's P21/P22 compare "
                "the ranks of one file, iostudy the ranks' totals"
            )
    return None
