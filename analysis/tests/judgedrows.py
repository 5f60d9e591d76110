"""Hand-made rows of compare.judge's table in the columns of issue 46's contract (verdicts
regression, improvement, no change, too noisy, not judged; the change with its interval, the
noise, the change-points), so that the report's tests do not depend on how judge() finds them."""

import math

import pandas as pd

NAN = math.nan


def row(run_id="r1", day=1, **values) -> dict:
    """One judged run point of a series (local, iomodel_check ssf_write_mib_s): by default the
    latest run, not judged; ``values`` override any column."""
    return {
        "site": None,
        "system": "local",
        "label": "local",
        "run_id": run_id,
        "started": pd.Timestamp("2026-03-01") + pd.Timedelta(days=day),
        "fingerprint": "f1",
        "check": "iomodel_check",
        "variable": "ssf_write_mib_s",
        "unit": "MiB/s",
        "metric": "iomodel_check ssf_write_mib_s",
        "measures": "storage (O_DIRECT)",
        "measured": "storage",
        "direction": "higher",
        "value": 1000.0,
        "repetitions": [990.0, 1000.0, 1010.0],
        "verdict": "not judged",
        "change_pct": NAN,
        "change_low_pct": NAN,
        "change_high_pct": NAN,
        "p_value": NAN,
        "noise_cov": NAN,
        "min_detectable_pct": NAN,
        "baseline": "",
        "against": "",
        "basis": "no reference and not enough history",
        "change_point": False,
        "band_low": NAN,
        "band_high": NAN,
        "latest": True,
        **values,
    }


def judged(*rows: dict) -> pd.DataFrame:
    return pd.DataFrame(list(rows), columns=list(row()))
