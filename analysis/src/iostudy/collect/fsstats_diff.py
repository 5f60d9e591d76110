"""Seed 000's tables and figure of file-system snapshots, pure functions of one or two of them,
each given as the snapshot's JSON dict or as its rows of the store's fsstats table:
:func:`growth_table` (Table III), :func:`size_cdf` (Fig. 8, with and without the project
holding the most files), :func:`unmodified_shares` (IV-B: data not modified for 64 and 128
days). What ``iostudy fsstats diff`` prints and the report's section
(:mod:`iostudy.report.filesystems`) draws; apart from the scan, which they need none of.
"""

from __future__ import annotations

import math

from iostudy.collect.fsstats_snapshot import bin_edges
from iostudy.collect.fsstats_store import snapshot_frame

ALL_PROJECTS = "(all)"


def _counts(frame, name: str) -> dict:
    """{project (ALL_PROJECTS for the whole scan): value} of a count."""
    rows = frame[(frame["kind"] == "count") & (frame["name"] == name)]
    return {
        (ALL_PROJECTS if p is None or p != p else p): int(v)
        for p, v in zip(rows["project"], rows["value"], strict=True)
    }


def _pct(new, old):
    return 100.0 * (new - old) / old if old else math.nan


def _taken(frame):
    return frame["taken"].iloc[0] if len(frame) else None


def growth_table(a, b):
    """Seed 000's Table III between snapshots a and b (dicts or store rows): per project and for
    the whole scan ("(all)", first), usage (bytes, st_size) and files at a and at b, the change
    in %, and each project's share of the whole scan's growth in bytes and files (EarthScience:
    88% of the new files, 15% of the new data). Projects by usage at b, largest first; a project
    missing from one snapshot has 0 there (its change is NaN when it is new)."""
    import pandas as pd

    fa, fb = snapshot_frame(a), snapshot_frame(b)
    usage_a, usage_b = _counts(fa, "bytes"), _counts(fb, "bytes")
    files_a, files_b = _counts(fa, "files"), _counts(fb, "files")
    projects = sorted(
        (set(usage_a) | set(usage_b)) - {ALL_PROJECTS}, key=lambda p: (-usage_b.get(p, 0), p)
    )
    projects = [ALL_PROJECTS, *projects]
    grow_usage = usage_b.get(ALL_PROJECTS, 0) - usage_a.get(ALL_PROJECTS, 0)
    grow_files = files_b.get(ALL_PROJECTS, 0) - files_a.get(ALL_PROJECTS, 0)
    rows = []
    for p in projects:
        ua, ub = usage_a.get(p, 0), usage_b.get(p, 0)
        na, nb = files_a.get(p, 0), files_b.get(p, 0)
        rows.append(
            {
                "project": p,
                "usage_a": ua,
                "usage_b": ub,
                "usage_change_pct": _pct(ub, ua),
                "files_a": na,
                "files_b": nb,
                "files_change_pct": _pct(nb, na),
                "usage_growth_share_pct": 100.0 * (ub - ua) / grow_usage
                if grow_usage
                else math.nan,
                "files_growth_share_pct": 100.0 * (nb - na) / grow_files
                if grow_files
                else math.nan,
            }
        )
    table = pd.DataFrame(rows)
    table.attrs.update(taken_a=_taken(fa), taken_b=_taken(fb))
    return table


def largest_project(snapshot) -> str | None:
    """The project with the most files (ties: bytes, then name); None without projects."""
    frame = snapshot_frame(snapshot)
    files, usage = _counts(frame, "files"), _counts(frame, "bytes")
    projects = [p for p in files if p != ALL_PROJECTS]
    if not projects:
        return None
    return min(projects, key=lambda p: (-files[p], -usage.get(p, 0), p))


def size_cdf(snapshot, exclude_largest_project: bool = False):
    """Seed 000's Fig. 8: the cumulative distribution of file sizes over the file_size bins:
    lo, hi (bytes), files in the bin and cdf, the fraction of the files smaller than hi. With
    exclude_largest_project, without the files of the project that has the most files
    (largest_project; frame.attrs["excluded"] names it)."""
    import pandas as pd

    frame = snapshot_frame(snapshot)
    bins = frame[(frame["kind"] == "histogram") & (frame["name"] == "file_size")]
    whole = bins[bins["project"].isna()].set_index("bin")["count"]
    excluded = largest_project(frame) if exclude_largest_project else None
    if excluded is not None:
        mine = bins[bins["project"] == excluded].set_index("bin")["count"]
        whole = whole.sub(mine, fill_value=0)
    whole = whole[whole > 0].sort_index()
    lo = [bin_edges("log2", int(k))[0] for k in whole.index]
    hi = [bin_edges("log2", int(k))[1] for k in whole.index]
    total = whole.sum()
    out = pd.DataFrame({"lo": lo, "hi": hi, "files": whole.astype("int64").to_numpy()})
    out["cdf"] = out["files"].cumsum() / total if total else math.nan
    out.attrs["excluded"] = excluded
    return out


def unmodified_shares(snapshot, days=(64, 128)):
    """Seed 000 IV-B: for each d in days, the share of the data (bytes) and of the files not
    modified for d days or more (mtime histogram). Each d must be a bin edge of the log2 day
    bins (0 or a power of 2): ValueError otherwise."""
    import pandas as pd

    frame = snapshot_frame(snapshot)
    bins = frame[
        (frame["kind"] == "histogram") & (frame["name"] == "mtime") & frame["project"].isna()
    ]
    rows = []
    for d in days:
        if d < 0 or (d and d & (d - 1)):
            raise ValueError(f"{d} days is not an edge of the age bins (0 or a power of 2)")
        old = bins[bins["lo"] >= d]
        total_b, total_f = int(bins["bytes"].sum()), int(bins["count"].sum())
        ob, of = int(old["bytes"].sum()), int(old["count"].sum())
        rows.append(
            {
                "days": d,
                "bytes_unmodified": ob,
                "bytes_total": total_b,
                "bytes_share_pct": 100.0 * ob / total_b if total_b else math.nan,
                "files_unmodified": of,
                "files_total": total_f,
                "files_share_pct": 100.0 * of / total_f if total_f else math.nan,
            }
        )
    return pd.DataFrame(rows)
