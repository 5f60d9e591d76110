"""Which results can be compared, and whether a run regressed: ``iostudy compare``.

A result is one ReFrame performance value of a run (the store's perf table; repetitions of one
run are one result: their median, and their values kept for the rank test). Its
**fingerprint** is the sha256 (12 hex digits) of what must be equal for two values to be
compared:

    check, variable, unit      what was measured (ior_check write_mib_s MiB/s)
    version                    the benchmark's version (runs.benchmark_versions; "unknown"
                               when the run did not record it)
    environ                    the programming environment (MPI flavour)
    parameters                 the check's parameters (size, layout, transfer ...), without
                               the repetition
    num_tasks, per node        the scale
    measured                   storage, memory or page cache possible: the leading words of
                               its measures label (iostudy.benchmarks.measures.kind; null: none)

The label itself (the ``measures`` column) names the node's RAM: as a key it would keep two
systems' same case apart.

A **series** is one fingerprint on one system of one site. Each point (run) of a series gets one
verdict of VERDICTS from its references:

- **its baseline**: the repetitions of the previous ``window`` (10) runs (at least 2 runs and 3
  repetitions), or with ``--baseline RUN`` those of the accepted run for the runs after it. The
  run's repetitions are tested against the baseline's with the Mann-Whitney rank test
  (two-sided p), and the change is the Hodges-Lehmann shift in % of the baseline's median with
  its 95 % interval, widened on the log of the ratio by the spread of the earlier runs' medians
  (1.96 x their CoV x sqrt(1/k + 1/l), k runs judged against l), since repetitions of one run
  share that run's conditions. When the run alone shows no change, it is judged with the run
  before it, then the two before (``TRAILING``: 3 runs in all, after the accepted run), against
  the baseline of the first of them, when each of them lies on the same side of that baseline's
  median: a shift of 10 % lost in one run's noise is seen over three. These two extra looks
  share a significance of 0.01 (Bonferroni: p < 0.005 each), so a run's false alarms stay
  under 2 % at worst (make bench-compare measures them).
  **regression**: p < 0.01 and the interval's near edge more than 5 % (``tolerance``) worse;
  **improvement**: the same, better; **too noisy**: neither, and the smallest detectable change
  (80 % power: the larger of 3.42 x the repetitions' standard error and 5 % + 2.80 x the
  standard error with the runs' spread) is over 50 %; **no change**: otherwise. **not judged**:
  fewer than 2 earlier runs, fewer than 3 baseline repetitions, or too few repetitions for the
  rank test ever to reach p < 0.01 (a run of 1 repetition against fewer than 199).
- **its system's ceiling** (a rate, when the system description has measured peaks): under 10 %
  of it (``ceiling_fraction``) is a regression;
- **its reference band** (ReFrame's reference x (1 + lower) .. x (1 + upper)): outside it is a
  regression. A band that cannot fail (no edge on the worse side, a floor at or under 0, or a
  floor under 10 % of the series' median: "100..inf" under values of 4,000) judges nothing.

The verdict is the first of regression, improvement, too noisy, no change found by a reference;
"not judged" when none judged. A reference that cannot fail never passes a value. Which side is
worse follows the unit (:func:`direction`): rates (``*/s``) are worse lower, times (``s``) and
factors (``x``, the imbalance) worse higher, anything else either way.

Change-points: E-divisive means over the series' run medians (iostudy.metrics.regression);
``change_point`` marks the run that starts a new segment (shown; the verdicts are the tests').

``iostudy compare`` judges the latest point of every series (``--all``: every point), prints a
table (``--json``: one object, every series with its verdict and evidence), and exits 1 when a
judged point is a regression, so that a scheduled campaign or a CI job can alert on it, 0
without one, 2 on bad input.
"""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

from iostudy.benchmarks import measures as measures_mod
from iostudy.core import config
from iostudy.core.deferred import deferred
from iostudy.logs.logrows import int_or_none
from iostudy.metrics import regression
from iostudy.store import store as store_mod
from iostudy.store.measured import moved as labels_moved

np = deferred("numpy")
pd = deferred("pandas")

VERDICTS = ("regression", "improvement", "no change", "too noisy", "not judged")
WINDOW = 10  # earlier runs whose repetitions are the history's baseline
TRAILING = 3  # a run is judged alone and with up to this many runs in all (the latest ones)
MIN_RUNS = 2  # earlier runs a history needs
MIN_REPETITIONS = 3  # repetitions a baseline needs
ALPHA = 0.01  # the rank test's significance
LEVEL = 0.95  # the change's interval
TOLERANCE = 0.05  # a change smaller than this (of the baseline's median) is no change
NOISE_LIMIT = 0.5  # a series whose smallest detectable change is over this is too noisy
CEILING_FRACTION = 0.1  # a rate under this fraction of its system's ceiling regressed
FAR_EDGE = 0.1  # a reference floor under this fraction of the series' median cannot fail
#: the judged columns besides the identity columns (iostudy compare --json)
STAT_COLUMNS = [
    "change_pct",
    "change_low_pct",
    "change_high_pct",
    "p_value",
    "noise_cov",
    "min_detectable_pct",
    "judged_runs",
]
FINGERPRINT_FIELDS = (
    "check",
    "variable",
    "unit",
    "version",
    "environ",
    "parameters",
    "num_tasks",
    "num_tasks_per_node",
    "measured",
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
    fields, fingerprint, measures (the label), value (median of the repetitions), repetitions
    (their values), band_low, band_high, n (values)."""
    perf = labels_moved(perf[perf["value"].notna()])  # either layout (iostudy.store.measured)
    columns = [
        "site",
        "system",
        "label",
        "run_id",
        "started",
        *FINGERPRINT_FIELDS,
        "fingerprint",
        "measures",
        "value",
        "repetitions",
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
    """The results with their run's site, system, start and benchmark version, the kind of
    their measures label, the fingerprint of their FINGERPRINT_FIELDS and their band's edges."""
    perf = perf.drop(columns=["system"]).merge(
        runs[["run_id", "site", "system", "started", "benchmark_versions"]], on="run_id"
    )
    perf["version"] = [
        _version(v, c) for v, c in zip(perf["benchmark_versions"], perf["check"], strict=True)
    ]
    perf["parameters"] = perf["parameters"].map(_parameters)
    perf["measured"] = [measures_mod.kind(m) for m in perf["measures"]]
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
    """One row per run and fingerprint: its repetitions' values, their median and count."""
    rows = []
    keys = ["site", "system", "run_id", "started", "fingerprint"]
    for key, g in perf.groupby(keys, dropna=False, sort=False):
        first = g.iloc[0]
        rows.append(
            {
                **dict(zip(keys, key, strict=True)),
                **{f: first[f] for f in FINGERPRINT_FIELDS},
                "measures": first["measures"],
                "value": float(g["value"].median()),
                "repetitions": [float(v) for v in g["value"]],
                "band_low": first["band_low"],
                "band_high": first["band_high"],
                "n": len(g),
            }
        )
    return pd.DataFrame(rows)


def metric_name(row) -> str:
    """A series' name for people: check variable (parameters, environ, scale, measured)."""
    params = json.loads(row["parameters"]) if row["parameters"] else {}
    shown = [f"{k}={v}" for k, v in params.items()]
    shown += [str(row["environ"])] if row["environ"] else []
    if row["num_tasks"] is not None and not pd.isna(row["num_tasks"]):
        shown.append(f"{int(row['num_tasks'])} procs")
    shown += [row["measured"]] if isinstance(row.get("measured"), str) else []
    return f"{row['check']} {row['variable']}" + (f" ({', '.join(shown)})" if shown else "")


def judge(
    table: pd.DataFrame,
    window=WINDOW,
    tolerance=TOLERANCE,
    alpha=ALPHA,
    noise_limit=NOISE_LIMIT,
    baseline_run=None,
    descriptions=None,
    ceiling_fraction=CEILING_FRACTION,
) -> pd.DataFrame:
    """Every point of ``results`` with its verdict (one of VERDICTS) and evidence: change_pct,
    change_low_pct, change_high_pct, p_value, noise_cov, min_detectable_pct, baseline, basis,
    against (which reference decided: history, accepted run, ceiling, reference, or ""),
    change_point. ``baseline_run``: the accepted run whose repetitions are the baseline
    of the runs after it; ``descriptions``: label -> system description (their ceilings). See
    the module docstring."""
    rules = {"window": window, "tolerance": tolerance, "alpha": alpha, "noise": noise_limit}
    out = []
    for _, series in table.groupby(["label", "fingerprint"], sort=False):
        series = series.sort_values(["started", "run_id"])
        rows = series.to_dict("records")
        reps = [_repetitions(r) for r in rows]
        points = {**rules, "reps": reps, "runs": [r["run_id"] for r in rows]}
        points["typical"] = float(np.median(series["value"]))
        ids = points["runs"]
        points["accepted"] = ids.index(baseline_run) if baseline_run in ids else None
        top = ceiling((descriptions or {}).get(rows[0]["label"]), rows[0]["unit"])
        points["ceiling"] = (top[0], ceiling_fraction) if top and ceiling_fraction else None
        starts = set(regression.e_divisive(series["value"].to_numpy(float)))
        for i, row in enumerate(rows):
            out.append(
                {
                    **row,
                    "metric": metric_name(row),
                    "direction": direction(row["unit"]),
                    **_point(row, i, points),
                    "change_point": i in starts,
                    "latest": i == len(rows) - 1,
                }
            )
    return pd.DataFrame(out)


def _repetitions(row: dict) -> list[float]:
    reps = row.get("repetitions")
    if reps is None or (isinstance(reps, float) and math.isnan(reps)) or not len(reps):
        return [float(row["value"])]
    return [float(v) for v in reps]


def _point(row: dict, i: int, points: dict) -> dict:
    """One run's verdict from its references: its baseline (history or accepted run), the
    system's ceiling, its reference band."""
    way = direction(row["unit"])
    found = [
        _against_baseline(i, points, way),
        _against_ceiling(row, points["ceiling"], way),
        _against_band(row, points["typical"], way),
    ]
    found = [f for f in found if f]
    for verdict in VERDICTS:
        deciding = [f for f in found if f["verdict"] == verdict]
        if deciding:
            break
    first = deciding[0]
    stats = found[0].get("stats", {})
    return {
        **dict.fromkeys(STAT_COLUMNS, math.nan),
        **stats,
        "verdict": verdict,
        "baseline": first["baseline"] if verdict != "not judged" else "",
        "against": first["against"] if verdict != "not judged" else "",
        "basis": "; ".join(f["text"] for f in found),
    }


def _not_judged(why: str, cov=math.nan) -> dict:
    stats = {"noise_cov": cov}
    return {"verdict": "not judged", "text": why, "against": "", "baseline": "", "stats": stats}


def _against_baseline(i: int, points: dict, way: str) -> dict:
    """Run i against its baseline (the module docstring): alone, and when that finds no change,
    with the runs before it (2 .. TRAILING together) that all lie on one side of theirs."""
    alone = _window(i, i, points, way)
    if alone["verdict"] in ("regression", "improvement", "not judged"):
        return alone
    after = points["accepted"] if points["accepted"] is not None else 0
    for first in range(i - 1, max(after, i - TRAILING), -1):
        together = _window(first, i, points, way)
        if together and together["verdict"] in ("regression", "improvement"):
            return together
    return alone


def _window(first: int, i: int, points: dict, way: str) -> dict | None:
    """The rank test of runs first..i's repetitions against the baseline of run first; None
    for several runs that do not all lie on one side of the baseline's median."""
    reps, runs = points["reps"], points["runs"]
    earlier = list(range(max(0, first - points["window"]), first))
    if points["accepted"] is not None and i > points["accepted"]:
        base = reps[points["accepted"]]
        against, name = "accepted run", f"accepted run {runs[points['accepted']]}"
    else:
        base = [v for j in earlier for v in reps[j]]
        against, name = "history", f"runs {runs[earlier[0]]}..{runs[first - 1]}" if earlier else ""
        if len(earlier) < MIN_RUNS:
            why = f"history: {len(earlier)} earlier runs (at least {MIN_RUNS} needed)"
            return _not_judged(why, regression.pooled_cov([reps[i]]))
    current = list(range(first, i + 1))
    cov = regression.pooled_cov([reps[j] for j in earlier + current])
    cur = [v for j in current for v in reps[j]]
    # the run alone at alpha; each extra look (runs together) at alpha / (TRAILING - 1)
    alpha = points["alpha"] / (1 if first == i else TRAILING - 1)
    if len(base) < MIN_REPETITIONS:
        why = f"{name}: {len(base)} repetitions (at least {MIN_REPETITIONS} needed)"
        return _not_judged(why, cov)
    if regression.smallest_p(len(cur), len(base)) >= alpha:
        why = f"{name}: {len(cur)} against {len(base)} repetitions cannot reach p < {alpha:.2g}"
        return _not_judged(why, cov)
    med = float(np.median(base))
    if not med:
        return _not_judged(f"{name}: median 0", cov)
    sides = {np.sign(np.median(reps[j]) - med) for j in current}
    if len(current) > 1 and (len(sides) > 1 or 0 in sides):
        return None
    # the spread between quiet runs: the accepted run's own history, not the runs it judges
    quiet = [j for j in earlier if against == "history" or j <= points["accepted"]]
    spread = regression.runs_spread([float(np.median(reps[j])) for j in quiet])
    stats = regression.change(
        cur, base, spread, (len(current), len(quiet)), cov, alpha, points["tolerance"], LEVEL
    )
    stats["judged_runs"] = len(current)
    verdict = _decide(stats, way, {**points, "alpha": alpha})
    judged = f"runs {runs[first]}..{runs[i]} together: " if first < i else ""
    baseline = f"{name} ({len(base)} repetitions)"
    return {
        "verdict": verdict,
        "text": judged + _evidence(stats, baseline, spread, verdict, points),
        "against": against,
        "baseline": baseline,
        "stats": stats,
    }


def _evidence(stats: dict, baseline: str, spread: float, verdict: str, points: dict) -> str:
    low, high, p = stats["change_low_pct"], stats["change_high_pct"], stats["p_value"]
    return (
        f"{stats['change_pct']:+.1f}% ({low:+.1f}..{high:+.1f}%) against {baseline}, "
        f"p {p:.2g}; noise CoV {_num(stats['noise_cov'])}, runs' spread {spread:.2f}: smallest "
        f"detectable change {stats['min_detectable_pct']:.0f}%"
        + (f" (over {100 * points['noise']:.0f}%)" if verdict == "too noisy" else "")
    )


def _decide(stats: dict, way: str, points: dict) -> str:
    """regression or improvement: significant and the interval's near edge past the tolerance;
    too noisy: neither, and the smallest detectable change over the limit; else no change."""
    tol = 100 * points["tolerance"]
    low, high, p = stats["change_low_pct"], stats["change_high_pct"], stats["p_value"]
    below, above = high < -tol, low > tol
    worse = (way != "lower" and below) or (way != "higher" and above)
    better = (way == "higher" and above) or (way == "lower" and below)
    if p < points["alpha"] and worse:
        verdict = "regression"
    elif p < points["alpha"] and better:
        verdict = "improvement"
    elif stats["min_detectable_pct"] > 100 * points["noise"]:
        verdict = "too noisy"
    else:
        verdict = "no change"
    return verdict


def _against_ceiling(row: dict, top, way: str) -> dict | None:
    """A value under ``fraction`` of the system's measured component ceiling regressed."""
    if not top or way != "higher":
        return None
    limit = top[0] * top[1]
    name = f"ceiling {top[0]:,.0f} {row['unit']} x {100 * top[1]:.0f}%"
    low = row["value"] < limit
    text = f"{_num(row['value'])} {'under' if low else 'at or over'} {name}"
    verdict = "regression" if low else "no change"
    return {"verdict": verdict, "text": text, "against": "ceiling", "baseline": name}


def _against_band(row: dict, typical: float, way: str) -> dict | None:
    """ReFrame's reference band; one that cannot fail (no edge on the worse side, an edge at or
    below 0, or one FAR_EDGE away from the series' median) judges nothing."""
    lo, hi, value = row["band_low"], row["band_high"], row["value"]
    if pd.isna(lo) and pd.isna(hi):
        return None
    name = f"reference band {_num(lo)}..{_num(hi)}"
    floor = way != "lower" and _can_fail(lo, typical, low=True)
    ceil = way != "higher" and _can_fail(hi, typical, low=False)
    if not floor and not ceil:
        return _not_judged(f"{name} cannot fail (series median {_num(typical)})")
    if (floor and value < lo) or (ceil and value > hi):
        verdict, text = "regression", f"{_num(value)} outside {name}"
    else:
        verdict, text = "no change", f"within {name}"
    return {"verdict": verdict, "text": text, "against": "reference", "baseline": name}


def _can_fail(edge, typical: float, low: bool) -> bool:
    if pd.isna(edge) or math.isinf(edge) or (low and edge <= 0):
        return False
    if not typical or not math.isfinite(typical):
        return True
    return edge >= typical * FAR_EDGE if low else edge <= typical / FAR_EDGE


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
