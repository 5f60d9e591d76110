"""An fsstats snapshot as rows of the store's ``fsstats`` table: what ``iostudy fsstats
import`` writes, and what the comparisons (:mod:`iostudy.collect.fsstats_diff`) read a snapshot
as. Apart from the snapshot's JSON format (:mod:`iostudy.collect.fsstats_snapshot`) as the
store's view of it.

The store table
---------------
``fsstats`` (store.TABLES) has one row per snapshot and histogram bin (kind ``histogram``: name,
bin, lo, hi, unit, and count, bytes, allocated or entries as the histogram has them; project set
for the per-project ``file_size`` bins), per count (kind ``count``: the counts of the snapshot,
for the whole scan with project null and per project), per error kind (kind ``error``) and per
statvfs figure (kind ``filesystem``), all in ``value``. Every row has the snapshot's name, root
and taken (its start, UTC). An import writes STORE/fsstats/<name>.parquet (anything but
[A-Za-z0-9._-] in the name made "_"); importing it again replaces it.
"""

from __future__ import annotations

import re
from datetime import datetime

from iostudy.collect.fsstats_snapshot import COUNTS, ERROR_KINDS, HISTOGRAMS

TABLE = "fsstats"


def _text(name: str | None) -> str | None:
    """A name as valid UTF-8 for the store: bytes that are not UTF-8 (lone surrogates after
    os.fsdecode) as backslash escapes."""
    if name is None:
        return None
    return name.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")


def _int64(v):
    return v if v is None or v < 1 << 63 else None


# histogram value columns -> the store's columns
_STORE_COLUMN = {
    "files": "count",
    "dirs": "count",
    "names": "count",
    "bytes": "bytes",
    "allocated": "allocated",
    "entries": "entries",
}


def _bin_rows(base: dict, name: str, hist: dict, project=None) -> list[dict]:
    cols = hist["columns"]
    unit = hist.get("unit", HISTOGRAMS[name][0])
    scale = hist.get("scale", HISTOGRAMS[name][1])
    rows = []
    for b in hist["bins"]:
        values = dict(zip(cols, b, strict=True))
        lo, hi = values.pop("lo"), values.pop("hi")
        k = lo // 8 if scale == "linear8" else (0 if lo == 0 else lo.bit_length())
        row = {
            **base,
            "kind": "histogram",
            "name": name,
            "project": project,
            "bin": k,
            "lo": _int64(lo),
            "hi": _int64(hi),
            "unit": unit,
        }
        for col, v in values.items():
            row[_STORE_COLUMN[col]] = v
        rows.append(row)
    return rows


def snapshot_rows(snap: dict) -> list[dict]:
    """The store's fsstats rows of a snapshot (see the module docstring)."""
    taken = datetime.strptime(snap["started"], "%Y-%m-%dT%H:%M:%SZ")
    base = {"snapshot": _text(snap["name"]), "root": _text(snap["root"]), "taken": taken}
    rows = []
    for name, hist in snap["histograms"].items():
        rows += _bin_rows(base, name, hist)
    for name, value in snap["counts"].items():
        rows.append({**base, "kind": "count", "name": name, "value": value})
    for kind in ERROR_KINDS:
        rows.append({**base, "kind": "error", "name": kind, "value": snap["errors"].get(kind, 0)})
    for name, value in (snap.get("filesystem") or {}).items():
        rows.append({**base, "kind": "filesystem", "name": name, "value": _int64(value)})
    for p in snap["projects"]:
        project = _text(p["name"])
        for name in COUNTS:
            rows.append(
                {**base, "kind": "count", "name": name, "project": project, "value": p.get(name, 0)}
            )
        rows += _bin_rows(base, "file_size", {**p["file_size"], "unit": "bytes"}, project)
    return rows


def snapshot_frame(snap):
    """A snapshot as a DataFrame of its store rows; a DataFrame (one snapshot's rows of the
    store's fsstats table) is returned as it is."""
    import pandas as pd

    if isinstance(snap, pd.DataFrame):
        return snap
    from iostudy.store import store as store_mod

    names = [n for n in store_mod.TABLES[TABLE].names if n != "imported"]
    return pd.DataFrame(snapshot_rows(snap), columns=names)


def part_name(snapshot_name: str) -> str:
    """The store part of a snapshot: its name with anything but [A-Za-z0-9._-] made "_"."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", snapshot_name)
