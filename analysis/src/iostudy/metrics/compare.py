"""Which results can be compared, and whether a run regressed: ``iostudy compare``.

A result is one ReFrame performance value of a run (the store's perf table; repetitions of one
run are one result, their median). Its **fingerprint** is the sha256 (12 hex digits) of what
must be equal for two values to be compared:

    check, variable, unit      what was measured (ior_check write_mib_s MiB/s)
    version                    the benchmark's version (runs.benchmark_versions; "unknown"
                               when the run did not record it)
    environ                    the programming environment (MPI flavour)
    parameters                 the check's parameters (size, layout, transfer ...), without
                               the repetition
    num_tasks, per node        the scale

A **series** is one fingerprint on one system of one site. Each point of a series is judged:

- against the system's reference band (ReFrame's reference x (1 + lower) .. x (1 + upper),
  recorded with the value) when it has one: worse than the band's edge is a regression;
- against the series' history: the median of the previous ``window`` points (at least
  ``min_history`` of them) ± max(k x 1.4826 x MAD, tolerance x median); MAD is the median
  absolute deviation, x 1.4826 the standard deviation it estimates for normal noise, and the
  tolerance keeps a history of near-equal values from flagging ordinary noise. Beyond the
  worse edge is a regression, beyond the better edge an improvement. A band that reaches zero
  (half-width at least the median) could never see a drop: the history is too noisy to judge,
  which the verdict says with the history's coefficient of variation, instead of a band.
  The change shown is against the history's median (none without a history).

Both are applied: the references of configs/references are acceptance floors, set far below
the usual value, which a run twice as slow never crosses; the history is what sees it. Which
side is worse follows the unit (:func:`direction`): rates (``*/s``) are worse lower, times
(``s``) and factors (``x``, the imbalance) worse higher, anything else either way.

``iostudy compare`` judges the latest point of every series (``--all``: every point), prints a
table, and exits 1 when a judged point is a regression, so that a scheduled campaign or a CI
job can alert on it.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.logs.logrows import int_or_none
from iostudy.store import store as store_mod

np = deferred("numpy")
pd = deferred("pandas")

MAD_TO_SIGMA = 1.4826
FINGERPRINT_FIELDS = (
    "check",
    "variable",
    "unit",
    "version",
    "environ",
    "parameters",
    "num_tasks",
    "num_tasks_per_node",
)
SERIES = ["site", "system", "fingerprint"]


def direction(unit) -> str:
    """'higher' (is better), 'lower', or 'either', from the value's unit."""
    unit = str(unit or "").strip()
    if unit.endswith("/s") or unit.endswith("/CN"):
        return "higher"
    if unit in ("s", "x"):
        return "lower"
    return "either"


def band(reference, lower, upper) -> tuple[float, float]:
    """ReFrame's accepted range of a value: reference x (1 + lower) .. reference x (1 + upper);
    a missing threshold is unbounded on that side; (nan, nan) without a reference."""
    try:
        ref = float(reference)
    except (TypeError, ValueError):
        return (math.nan, math.nan)
    if not math.isfinite(ref) or ref == 0:
        return (math.nan, math.nan)
    lo = ref * (1 + float(lower)) if pd.notna(lower) else -math.inf
    hi = ref * (1 + float(upper)) if pd.notna(upper) else math.inf
    return (lo, hi)


def system_label(site, system) -> str:
    """How a system is named beside others: "site/system" for another site's, else its name."""
    site = None if site is None or (isinstance(site, float) and math.isnan(site)) else site
    if not site or str(system).startswith(f"{site}/"):  # already named so (report tables)
        return str(system)
    return f"{site}/{system}"


def _parameters(text) -> str:
    try:
        params = json.loads(text) if isinstance(text, str) and text else {}
    except ValueError:
        params = {"parameters": text}
    if not isinstance(params, dict):
        params = {"parameters": params}
    # ReFrame's display name repeats a variable as ".name" (and each repetition is one): the
    # check's own parameters, once, without the repetition
    params = {k.lstrip("."): v for k, v in params.items()}
    params.pop("repetition", None)
    return json.dumps(params, sort_keys=True)


def _version(versions, check) -> str:
    try:
        found = json.loads(versions).get(check) if isinstance(versions, str) else None
    except (ValueError, AttributeError):
        found = None
    return found or "unknown"


def results(store) -> pd.DataFrame:
    """:func:`results_of` the store's perf and runs tables."""
    con = store_mod.connect(store)
    try:
        perf = con.execute("SELECT * FROM perf").df()
        runs = con.execute("SELECT * FROM runs").df()
    finally:
        con.close()
    return results_of(perf, runs)


def results_of(perf: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run and fingerprint: site, system, label, run_id, started, the fingerprint's
    fields, fingerprint, value (median of the repetitions), band_low, band_high, n (values)."""
    perf = perf[perf["value"].notna()]
    columns = [
        "site",
        "system",
        "label",
        "run_id",
        "started",
        *FINGERPRINT_FIELDS,
        "fingerprint",
        "value",
        "band_low",
        "band_high",
        "n",
    ]
    if perf.empty:
        return pd.DataFrame(columns=columns)
    for column in ("num_tasks", "num_tasks_per_node"):
        if column not in perf:
            perf[column] = None
    for column in ("site", "benchmark_versions"):
        if column not in runs:
            runs[column] = None
    out = _medians(_fingerprinted(perf, runs))
    out["label"] = [system_label(s, y) for s, y in zip(out["site"], out["system"], strict=True)]
    out["started"] = pd.to_datetime(out["started"])
    return out[columns].sort_values(["label", "check", "variable", "started"], ignore_index=True)


def _fingerprinted(perf: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The results with their run's site, system, start and benchmark version, the
    fingerprint of their FINGERPRINT_FIELDS and their reference band's edges."""
    perf = perf.drop(columns=["system"]).merge(
        runs[["run_id", "site", "system", "started", "benchmark_versions"]], on="run_id"
    )
    perf["version"] = [
        _version(v, c) for v, c in zip(perf["benchmark_versions"], perf["check"], strict=True)
    ]
    perf["parameters"] = perf["parameters"].map(_parameters)
    for column in ("num_tasks", "num_tasks_per_node"):
        perf[column] = [int_or_none(v) for v in perf[column]]
    perf["fingerprint"] = [
        hashlib.sha256(
            json.dumps(
                dict(zip(FINGERPRINT_FIELDS, key, strict=True)), sort_keys=True, default=str
            ).encode()
        ).hexdigest()[:12]
        for key in perf[list(FINGERPRINT_FIELDS)].itertuples(index=False, name=None)
    ]
    edges = [band(*r) for r in perf[["reference", "lower", "upper"]].itertuples(index=False)]
    perf["band_low"] = [e[0] for e in edges]
    perf["band_high"] = [e[1] for e in edges]
    return perf


def _medians(perf: pd.DataFrame) -> pd.DataFrame:
    """One row per run and fingerprint: the median of its repetitions' values, and how many."""
    rows = []
    keys = ["site", "system", "run_id", "started", "fingerprint"]
    for key, g in perf.groupby(keys, dropna=False, sort=False):
        first = g.iloc[0]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                **{f: first[f] for f in FINGERPRINT_FIELDS},
                "value": float(g["value"].median()),
                "band_low": first["band_low"],
                "band_high": first["band_high"],
                "n": len(g),
            }
        )
    return pd.DataFrame(rows)


def metric_name(row) -> str:
    """A series' name for people: check variable (parameters, environ, scale)."""
    params = json.loads(row["parameters"]) if row["parameters"] else {}
    shown = [f"{k}={v}" for k, v in params.items()]
    shown += [str(row["environ"])] if row["environ"] else []
    if row["num_tasks"] is not None and not pd.isna(row["num_tasks"]):
        shown.append(f"{int(row['num_tasks'])} procs")
    return f"{row['check']} {row['variable']}" + (f" ({', '.join(shown)})" if shown else "")


def judge(table: pd.DataFrame, k=3.0, window=10, min_history=3, tolerance=0.1) -> pd.DataFrame:
    """Every point of ``results`` with its verdict: basis, history_median, history_low,
    history_high, change_pct (against the history's median; none without a history),
    verdict: regression, improvement, ok, noisy history, or no baseline. See the module
    docstring."""
    out = []
    for _, series in table.groupby(["label", "fingerprint"], sort=False):
        series = series.sort_values(["started", "run_id"])
        values = series["value"].to_numpy(float)
        for i, row in enumerate(series.to_dict("records")):
            history = values[max(0, i - window) : i]
            hist = _history(history, min_history, k, tolerance)
            out.append(
                {
                    **row,
                    "metric": metric_name(row),
                    "direction": direction(row["unit"]),
                    **_verdict(row, hist),
                    "latest": i == len(series) - 1,
                }
            )
    return pd.DataFrame(out)


def _history(history: np.ndarray, min_history: int, k: float, tolerance: float) -> dict:
    """A series' history band: median ± max(k x 1.4826 x MAD, tolerance x |median|); a band
    that reaches zero cannot see a drop to nothing: too noisy to judge (its CoV said)."""
    if len(history) < min_history:
        return {"median": math.nan, "low": math.nan, "high": math.nan, "noisy": None}
    med = float(np.median(history))
    mad = float(np.median(np.abs(history - med))) * MAD_TO_SIGMA
    half = max(k * mad, tolerance * abs(med))
    mean = float(np.mean(history))
    cov = float(np.std(history)) / abs(mean) if mean else math.inf
    noisy = f"history too noisy to judge (CoV {cov:.2f}, {len(history)} runs)"
    return {
        "median": med,
        "low": med - half,
        "high": med + half,
        "half": half,
        "n": len(history),
        "noisy": noisy if half >= abs(med) else None,
    }


def _verdict(row: dict, hist: dict) -> dict:
    way = direction(row["unit"])
    lo, hi, value = row["band_low"], row["band_high"], row["value"]
    has_band = not (pd.isna(lo) and pd.isna(hi))
    worse_band = has_band and (
        (way != "lower" and value_below(value, lo)) or (way != "higher" and value_above(value, hi))
    )
    basis, worse_hist, better_hist = [], False, False
    if has_band:
        basis.append(f"band {_num(lo)}..{_num(hi)}")
    if hist["noisy"]:
        basis.append(hist["noisy"])
    elif not math.isnan(hist["median"]):
        basis.append(
            f"history median {_num(hist['median'])} ± {_num(hist['half'])} ({hist['n']} runs)"
        )
        below, above = value < hist["low"], value > hist["high"]
        worse_hist = (way != "lower" and below) or (way != "higher" and above)
        better_hist = (way == "higher" and above) or (way == "lower" and below)
    if worse_band or worse_hist:
        verdict = "regression"
    elif better_hist:
        verdict = "improvement"
    elif hist["noisy"]:
        verdict = "noisy history"
    else:
        verdict = "ok" if basis else "no baseline"
    med = hist["median"]
    change = 100 * (value - med) / abs(med) if med and np.isfinite(med) else math.nan
    return {
        "history_median": med,
        "history_low": hist["low"],
        "history_high": hist["high"],
        "change_pct": change,
        "basis": "; ".join(basis) or "-",
        "verdict": verdict,
    }


def value_below(value, edge) -> bool:
    return not pd.isna(edge) and value < edge


def value_above(value, edge) -> bool:
    return not pd.isna(edge) and value > edge


def _shown(value) -> str:
    """A fingerprint field as people read it: 4 not 4.0, unset for a missing value."""
    if value is None or (isinstance(value, float) and math.isnan(value)):
        return "unset"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _num(x) -> str:
    if x is None or pd.isna(x):
        return "-"
    if math.isinf(x):
        return "inf" if x > 0 else "-inf"
    return f"{x:.4g}"


# -- across systems and sites -------------------------------------------------------------------


def system_descriptions(store, table: pd.DataFrame) -> dict[str, dict]:
    """label -> system description of the table's systems: another site's from its bundle
    (STORE/sites/<site>/systems/), this site's from configs/systems/."""
    out = {}
    for site, system in table[["site", "system"]].drop_duplicates().itertuples(index=False):
        if not isinstance(system, str):  # a log tree's runs may name none
            continue
        label = system_label(site, system)
        if label != system:
            path = Path(store) / "sites" / site / "systems" / f"{system}.json"
            if path.is_file():
                out[label] = json.loads(path.read_text())
        else:
            try:
                out[label] = config.load_system(system)
            except config.ConfigError:
                pass
    return out


def ceiling(description: dict | None, unit) -> tuple[float, str] | None:
    """The system's component ceiling for a value of this unit (its peaks): the aggregate
    storage bandwidth for MiB/s, the metadata rate for ops/s."""
    peaks = (description or {}).get("peaks") or {}
    key = {"MiB/s": "aggregate_mib_s", "ops/s": "metadata_ops_s"}.get(str(unit))
    if key and peaks.get(key):
        return float(peaks[key]), key
    return None


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
