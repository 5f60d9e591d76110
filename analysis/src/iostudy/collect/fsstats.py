"""File-system content snapshots (seed 000, section II-B and IV): fsstats, redone. This module
compares two snapshots and imports them into the store; the scan and the snapshot are in its
siblings, the ``iostudy fsstats`` command group in :mod:`iostudy.cli.fsstats`.

``iostudy fsstats scan PATH --out SNAPSHOT`` walks the tree under PATH in parallel and writes one
JSON snapshot of what it holds: histograms, counts and totals, for the whole tree and per
project (a top-level directory of PATH). ``iostudy fsstats diff A B`` compares two snapshots
(seed 000's Table III, Fig. 8 and the shares of data not modified for 64 and 128 days; ``--json``
prints them as JSON, ``--csv DIR`` also writes them as CSV), and ``iostudy fsstats import
SNAPSHOT... --store STORE`` puts snapshots in the store's ``fsstats`` table, which the report's
section (:mod:`iostudy.report.filesystems`) is drawn from.

- :mod:`iostudy.collect.fsstats_snapshot`: the snapshot's format (documented there), read and
  written;
- :mod:`iostudy.collect.fsstats_scan`: a scan's session (checkpoints, progress, the snapshot);
- :mod:`iostudy.collect.fsstats_walker`: the walk, by the C walker ``iostudy-fswalk``;
- :mod:`iostudy.collect.fsstats_tally`: its records binned into histograms and counts;
- :mod:`iostudy.collect.fsstats_store`: a snapshot as rows of the store's table;
- :mod:`iostudy.collect.fsstats_diff`: seed 000's tables of one or two snapshots.
"""

from __future__ import annotations

from pathlib import Path

from iostudy.collect.fsstats_diff import growth_table, size_cdf, unmodified_shares
from iostudy.collect.fsstats_snapshot import FsstatsError, load_snapshot
from iostudy.collect.fsstats_store import TABLE, part_name, snapshot_rows
from iostudy.core.progress import QUIET, Progress


def _unmodified(a: dict, b: dict, days: tuple):
    """The unmodified shares of a and of b, one table, the snapshot's name first. ValueError
    when a day is not an edge of the age bins."""
    import pandas as pd

    shares = pd.concat(
        [unmodified_shares(s, days).assign(snapshot=s["name"]) for s in (a, b)],
        ignore_index=True,
    )
    return shares[["snapshot", *[c for c in shares.columns if c != "snapshot"]]]


def _size_cdfs(b: dict):
    """b's file-size CDF of all files, and without the project holding the most files when
    there is one, one table (series says which)."""
    import pandas as pd

    whole = size_cdf(b)
    without = size_cdf(b, exclude_largest_project=True)
    cdf = whole.assign(series="all files")
    if without.attrs["excluded"] is not None:
        cdf = pd.concat(
            [cdf, without.assign(series=f"without {without.attrs['excluded']}")], ignore_index=True
        )
    return cdf


def diff_tables(a_path: Path, b_path: Path, days) -> tuple[dict, dict, dict]:
    """Snapshots A and B and the tables comparing them, named as their CSV files: growth,
    size_cdf (B's) and unmodified (the shares not modified for each of days). FsstatsError when
    a snapshot cannot be read or a day is not an edge of the age bins."""
    a, b = load_snapshot(a_path), load_snapshot(b_path)
    try:
        shares = _unmodified(a, b, tuple(days))
    except ValueError as exc:
        raise FsstatsError(str(exc)) from None
    return a, b, {"growth": growth_table(a, b), "size_cdf": _size_cdfs(b), "unmodified": shares}


def write_csvs(tables: dict, folder: Path) -> None:
    """Each table as folder/<name>.csv."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, frame in tables.items():
        frame.to_csv(folder / f"{name}.csv", index=False, lineterminator="\n")


def import_snapshots(
    store_root, paths: list[Path], name: str | None = None, progress: Progress = QUIET
) -> tuple[int, str]:
    """Each snapshot as its part of the store's fsstats table, every one read before any is
    written (a bad one changes nothing); name: the part's name of one snapshot (default: the
    name it was scanned with). Returns the rows written and where they went."""
    from iostudy.store import imports

    snaps = [load_snapshot(path) for path in paths]
    if name:
        if len(snaps) != 1:
            raise FsstatsError("--name names one SNAPSHOT")
        snaps[0]["name"] = name
    parts = [part_name(s["name"]) for s in snaps]
    clash = sorted({p for p in parts if parts.count(p) > 1})
    if clash:
        raise FsstatsError(
            f"snapshots with the same name would replace each other: "
            f"{', '.join(clash)} (scan with --name)"
        )
    data = [snapshot_rows(snap) for snap in snaps]
    where = imports.import_parts(store_root, TABLE, list(zip(parts, data, strict=True)), progress)
    return sum(len(d) for d in data), where
