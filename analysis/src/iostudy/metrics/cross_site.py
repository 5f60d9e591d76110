"""Systems side by side: the results of one fingerprint (iostudy.metrics.compare) that several
systems or sites share, and for the others why they cannot be compared (what differs from the
nearest fingerprint of another system)."""

from __future__ import annotations

import math

from iostudy.core.deferred import deferred
from iostudy.metrics.compare import FINGERPRINT_FIELDS, ceiling, metric_name

pd = deferred("pandas")


def _shown(value) -> str:
    """A fingerprint field as people read it: 4 not 4.0, unset for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unset"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _side_by_side(fp: str, g: pd.DataFrame, descriptions: dict) -> list[dict]:
    """The rows of one fingerprint that several systems share: one per system."""
    first = g.iloc[0]
    rows = []
    for label, s in g.groupby("label"):
        s = s.sort_values("started")
        top = ceiling(descriptions.get(label), first["unit"])
        rows.append(
            {
                "metric": metric_name(first),
                "unit": first["unit"],
                "fingerprint": fp,
                "system": label,
                "runs": len(s),
                "latest": s["value"].iloc[-1],
                "median": float(s["value"].median()),
                "ceiling": top[0] if top else math.nan,
                "ceiling_of": top[1] if top else "",
            }
        )
    return rows


def _apart(first, table: pd.DataFrame) -> dict:
    """Why a metric of one system (``first``: a row of its fingerprint) has no other system
    to be compared with: none ran it, or what differs from the nearest fingerprint of one."""
    mine = first["label"]
    same = table[
        (table["check"] == first["check"])
        & (table["variable"] == first["variable"])
        & (table["label"] != mine)
    ]
    if same.empty:
        others = [x for x in sorted(table["label"].unique()) if x != mine]
        reason = f"no other system ran {first['check']} {first['variable']}" + (
            f" ({', '.join(others)})" if others else ""
        )
    else:
        best = None
        for _, other in same.drop_duplicates("fingerprint").iterrows():
            diff = [
                f"{f} {_shown(first[f])} vs {_shown(other[f])} ({other['label']})"
                for f in FINGERPRINT_FIELDS
                if _shown(first[f]) != _shown(other[f])
            ]
            if best is None or len(diff) < len(best):
                best = diff
        reason = "differs: " + "; ".join(best)
    return {"system": mine, "metric": metric_name(first), "reason": reason}


def cross_site(table: pd.DataFrame, descriptions=None) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Systems side by side per fingerprint that two or more of them share: metric, unit,
    system, runs, latest, median, ceiling; and the metrics that could not be compared, with
    the reason (what differs from the nearest fingerprint of another system)."""
    descriptions = descriptions or {}
    columns = [
        "metric",
        "unit",
        "fingerprint",
        "system",
        "runs",
        "latest",
        "median",
        "ceiling",
        "ceiling_of",
    ]
    if table.empty:
        return pd.DataFrame(columns=columns), pd.DataFrame(columns=["system", "metric", "reason"])
    shared = table.groupby("fingerprint")["label"].nunique()
    rows = [
        row
        for fp, g in table.groupby("fingerprint", sort=False)
        if shared[fp] >= 2
        for row in _side_by_side(fp, g, descriptions)
    ]
    apart = [
        _apart(g.iloc[0], table)
        for fp, g in table.groupby("fingerprint", sort=False)
        if shared[fp] < 2
    ]
    side = pd.DataFrame(rows, columns=columns)
    return side, pd.DataFrame(apart, columns=["system", "metric", "reason"])
