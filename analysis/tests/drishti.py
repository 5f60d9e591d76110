"""Drishti (``drishti-io`` 0.8 from PyPI) as an independent oracle for ``iostudy diagnose``: run
it on a log, read the triggers it exports (``--csv``), and set them beside iostudy's findings by
their Drishti code (``Rule.drishti``).

Where the two disagree, :func:`why` names the reason from the log's own counters (read with
PyDarshan, not through iostudy), and a test fails on a disagreement it cannot name.
"""

from __future__ import annotations

import csv
import functools
import json
import shutil
import subprocess
import sys
import tempfile
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from iostudy.metrics.diagnose_rules import RULES

#: Drishti 0.8's HIGH insights (includes/module.py: the codes it raises with HIGH)
HIGH = {
    "S01",
    "P05",
    "P06",
    "P07",
    "P08",
    "P11",
    "P13",
    "P15",
    "P16",
    "P17",
    "P18",
    "P19",
    "P21",
    "P22",
    "M02",
    "M03",
    "M09",
}
#: the codes iostudy's rules share with Drishti
CODES = {r.drishti for r in RULES if r.drishti}
RULE_OF = {r.drishti: r.name for r in RULES if r.drishti}
MIB = 1 << 20


def command() -> str:
    found = shutil.which("drishti", path=str(Path(sys.executable).parent))
    if found is None:
        raise FileNotFoundError(
            "drishti not installed: drishti-io is in analysis/pyproject.toml's test extras "
            "(make setup)"
        )
    return found


# Drishti's module parses the command line when imported: read its codes in a process of
# their own, with a command line it accepts
_CODES = """
import json, sys
sys.argv = ["drishti", "unused.darshan"]
from drishti.includes import module
print(json.dumps(sorted(v for k, v in vars(module).items()
                        if k.startswith("INSIGHTS_") and isinstance(v, str))))
"""


def all_codes() -> set[str]:
    """Every insight code Drishti defines (its INSIGHTS_* constants)."""
    out = subprocess.run(
        [sys.executable, "-c", _CODES], capture_output=True, text=True, check=True, timeout=60
    )
    return set(json.loads(out.stdout))


def triggers(log: Path, config: dict | None = None) -> tuple[set[str] | None, str]:
    """The codes Drishti sets on the log (with its thresholds ``config``: Drishti's --config
    JSON), or None and why when it fails on it."""
    with tempfile.TemporaryDirectory(prefix="iostudy-drishti-") as out:
        cmd = [command(), "--csv", "--export_dir", out, str(log)]
        if config is not None:
            (Path(out) / "config.json").write_text(json.dumps(config))
            cmd[1:1] = ["--config", str(Path(out) / "config.json")]
        proc = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
        exported = list(Path(out).glob("*.csv"))
        if not exported:
            last = (proc.stderr.strip().splitlines() or ["no output"])[-1]
            return None, f"Drishti failed (exit {proc.returncode}): {last}"
        header, values = list(csv.reader(exported[0].open()))[:2]
    return {code for code, value in zip(header, values, strict=True) if value == "True"}, ""


def all_triggers(logs: list[Path], config: dict | None = None) -> dict:
    """{log: (codes or None, error)} of Drishti on each log, two at a time."""
    with ThreadPoolExecutor(2) as pool:
        found = pool.map(lambda log: triggers(log, config), logs)
        return dict(zip(logs, found, strict=True))


def disagreements(ours: set[str], theirs: set[str]) -> list[tuple[str, bool, bool]]:
    """(code, iostudy fired, Drishti fired) of each shared code on which they differ; ``ours``:
    the Drishti codes of iostudy's findings."""
    return [
        (code, code in ours, code in theirs)
        for code in sorted(CODES)
        if (code in ours) != (code in theirs)
    ]


def _frames(report, module: str) -> dict:
    return report.records[module].to_df() if module in report.records else {}


def _impossible_time(report) -> str | None:
    """The first negative time in the log's records (Darshan wrote it wrong), named."""
    for module in ("POSIX", "MPI-IO", "STDIO"):
        frames = _frames(report, module)
        if not frames:
            continue
        times = frames["fcounters"].filter(regex=r"_F_\w+_TIME$")  # durations, no timestamps
        negative = times.lt(0) & ~times.columns.str.contains("VARIANCE")
        if negative.any().any():
            column = negative.any().idxmax()
            value = times.loc[negative[column], column].iloc[0]
            return f"{column} = {value:,.4g} s"
    return None


@functools.lru_cache(maxsize=4)
def _report(log: Path):
    import darshan

    return darshan.DarshanReport(str(log), read_all=True)


def why(log: Path, code: str, ours: bool, limits: dict) -> str | None:
    """The reason the two differ on this log and code, from its counters; None: unexplained."""
    report = _report(log)
    for reason in (_quarantined, _negative_meta_time, _inverse_traffic, _stdio_minimum):
        said = reason(report, code, ours, limits)
        if said:
            return said
    return None


def _quarantined(report, code, ours, limits) -> str | None:
    bad = _impossible_time(report)
    if not ours and bad:
        return f"the log holds an impossible value ({bad}): iostudy quarantines it"
    return None


def _negative_meta_time(report, code, ours, limits) -> str | None:
    """P19: Drishti adds a negative F_META_TIME into a shared file's time; iostudy, which
    stores it as null, counts it as none."""
    if code != "P19" or not ours:
        return None
    posix = _frames(report, "POSIX")
    shared = posix["fcounters"].query("rank == -1") if posix else None
    if shared is not None and (shared["POSIX_F_META_TIME"] < 0).any():
        meta = shared.loc[shared["POSIX_F_META_TIME"] < 0, "POSIX_F_META_TIME"].iloc[0]
        return (
            f"a shared file's POSIX_F_META_TIME is {meta:,.4g} s: Drishti adds it to the "
            "file's I/O time (its share of the straggler's gap goes negative); iostudy counts "
            "the impossible value as none"
        )
    return None


def _inverse_traffic(report, code, ours, limits) -> str | None:
    """P09/P10: Drishti fires when the highest offset exceeds the bytes moved: the inverse of
    its message ("more data than the highest offset")."""
    if code not in ("P09", "P10"):
        return None
    posix = _frames(report, "POSIX")
    if not posix:
        return None
    what = "READ" if code == "P09" else "WRITTEN"
    top = posix["counters"][f"POSIX_MAX_BYTE_{what}"].max()
    moved = posix["counters"][f"POSIX_BYTES_{what}"].sum()
    if (ours and top <= moved) or (not ours and top > moved):
        return (
            f"Drishti 0.8's {code} fires when the highest offset ({top:,}) exceeds the bytes "
            f"({moved:,}): the inverse of what its message says"
        )
    return None


def _stdio_minimum(report, code, ours, limits) -> str | None:
    minimum = limits["stdio-heavy"]["min_mib"]
    if code != "S01" or ours or not minimum:
        return None
    stdio = _frames(report, "STDIO")
    moved = 0
    if stdio:
        moved = int(stdio["counters"][["STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN"]].sum().sum())
    if moved < minimum * MIB:
        return f"STDIO moved {moved:,} bytes: under this site's minimum of {minimum} MiB"
    return None
