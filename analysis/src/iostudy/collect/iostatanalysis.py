"""The numbers of seed 000 IV from the store's ``iostat`` table (rows of
:mod:`iostudy.collect.iostatimport`), as pure functions of it: :func:`throughput` (Fig. 6),
:func:`daily_totals`, :func:`peaks`, :func:`burstiness` and :func:`share_below` (Fig. 7),
:func:`gaps`, :func:`summary`. :mod:`iostudy.report.devices` puts them in the report.

Apart from the monitor and the import: it needs neither, only the table (and pandas)."""

from __future__ import annotations

from datetime import timedelta

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB

np = deferred("numpy")
pd = deferred("pandas")

THROUGHPUT_COLUMNS = ["time", "read_mib_s", "write_mib_s", "total_mib_s", "hosts", "bucket_s"]
GAP_COLUMNS = ["host", "start", "end", "seconds", "reason", "recorded"]


def io_rows(iostat: pd.DataFrame) -> pd.DataFrame:
    """The table's device intervals (kind io) with bytes and times usable."""
    io = iostat[iostat["kind"] == "io"].dropna(subset=["end", "seconds"])
    io = io[io["seconds"] > 0].copy()
    io["end"] = pd.to_datetime(io["end"])
    for c in ("read_bytes", "write_bytes"):
        io[c] = pd.to_numeric(io[c], errors="coerce").fillna(0).astype("float64")
    return io


def default_bucket(io: pd.DataFrame) -> int:
    """One minute, or the monitor's interval when it is longer (seed 000: 60 s)."""
    return int(max(60, round(float(io["seconds"].median())))) if len(io) else 60


def throughput(iostat: pd.DataFrame, bucket_s: int | None = None) -> pd.DataFrame:
    """Aggregate throughput over time (seed 000 Fig. 6): per bucket of bucket_s seconds
    (default :func:`default_bucket`) with at least one record, the read, write and total MiB/s
    of all hosts and devices. Each host's rate is its bytes over the seconds its intervals in
    the bucket cover (an interval belongs to the bucket of its middle), so a bucket that a host
    covers in part is not diluted; the hosts' rates add up. Only recorded buckets are rows."""
    io = io_rows(iostat)
    if io.empty:
        return pd.DataFrame(columns=THROUGHPUT_COLUMNS)
    bucket_s = bucket_s or default_bucket(io)
    mid = io["end"] - pd.to_timedelta(io["seconds"] / 2, unit="s")
    io["time"] = mid.dt.floor(f"{bucket_s}s")
    per_interval = io.groupby(["host", "time", "end"], as_index=False).agg(
        read_bytes=("read_bytes", "sum"),
        write_bytes=("write_bytes", "sum"),
        seconds=("seconds", "first"),
    )
    per_host = per_interval.groupby(["host", "time"], as_index=False)[
        ["read_bytes", "write_bytes", "seconds"]
    ].sum()
    per_host["read_mib_s"] = per_host["read_bytes"] / per_host["seconds"] / MIB
    per_host["write_mib_s"] = per_host["write_bytes"] / per_host["seconds"] / MIB
    series = per_host.groupby("time", as_index=False).agg(
        read_mib_s=("read_mib_s", "sum"),
        write_mib_s=("write_mib_s", "sum"),
        hosts=("host", "nunique"),
    )
    series["total_mib_s"] = series["read_mib_s"] + series["write_mib_s"]
    series["bucket_s"] = bucket_s
    return series[THROUGHPUT_COLUMNS].sort_values("time", ignore_index=True)


def daily_totals(iostat: pd.DataFrame) -> pd.DataFrame:
    """Bytes read and written per UTC day (an interval counts on the day it ends), in TiB too,
    the read share, and recorded_pct: the share of the day's host-seconds (every host of the
    table) that records cover."""
    cols = ["day", "read_bytes", "write_bytes", "read_tib", "write_tib", "read_pct", "recorded_pct"]
    io = io_rows(iostat)
    if io.empty:
        return pd.DataFrame(columns=cols)
    io["day"] = io["end"].dt.floor("D")
    hosts = io["host"].nunique()
    covered = io.drop_duplicates(["host", "end"]).groupby("day")["seconds"].sum()
    days = io.groupby("day")[["read_bytes", "write_bytes"]].sum()
    days["read_tib"] = days["read_bytes"] / 2**40
    days["write_tib"] = days["write_bytes"] / 2**40
    moved = days["read_bytes"] + days["write_bytes"]
    days["read_pct"] = (100 * days["read_bytes"] / moved).where(moved > 0)
    days["recorded_pct"] = 100 * covered / (hosts * 86400)
    for c in ("read_bytes", "write_bytes"):
        days[c] = days[c].round().astype("int64")
    days = days.reset_index()
    days["day"] = days["day"].dt.date.astype(str)
    return days[cols]


def peaks(series: pd.DataFrame) -> pd.DataFrame:
    """The peak read, write and total rate over one bucket (one minute by default) of the
    :func:`throughput` series, in MiB/s and GiB/s, and when (the bucket's start, UTC)."""
    cols = ["direction", "peak_mib_s", "peak_gib_s", "at", "bucket_s"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    out = []
    for d in ("read", "write", "total"):
        i = series[f"{d}_mib_s"].idxmax()
        v = float(series.at[i, f"{d}_mib_s"])
        out.append((d, v, v / 1024, series.at[i, "time"], int(series.at[i, "bucket_s"])))
    return pd.DataFrame(out, columns=cols)


def share_below(series: pd.DataFrame, fraction: float = 1 / 3) -> float | None:
    """The share (0..1) of recorded buckets whose total throughput is below fraction of the
    peak total (seed 000: 98% of the time below 33% of peak)."""
    if series.empty:
        return None
    total = series["total_mib_s"]
    return float((total < fraction * total.max()).mean())


def burstiness(series: pd.DataFrame, points: int = 1001) -> pd.DataFrame:
    """The CDF of total throughput over the recorded buckets (seed 000 Fig. 7) at points evenly
    spaced fractions: fraction of time, total MiB/s at or below which that fraction is, and
    that as % of the peak."""
    cols = ["fraction", "total_mib_s", "pct_of_peak"]
    if series.empty:
        return pd.DataFrame(columns=cols)
    total = np.sort(series["total_mib_s"].to_numpy(dtype=float))
    fraction = np.linspace(0, 1, points)
    values = np.quantile(total, fraction, method="inverted_cdf")
    peak = total[-1]
    pct = 100 * values / peak if peak > 0 else np.full_like(values, np.nan)
    return pd.DataFrame({"fraction": fraction, "total_mib_s": values, "pct_of_peak": pct})


def gaps(iostat: pd.DataFrame) -> pd.DataFrame:
    """The gaps in the record, per host: every span between two recorded intervals longer than
    the tolerance (half an interval, at least 2 s: iostat's timestamps have whole seconds),
    with the reason of the gap records of the monitor that fall in it, else "monitor stopped:
    <signal>" when a stop record does, else "no record (monitor not running)"; and the gap
    records that match no such span (e.g. a restart shorter than the tolerance, or one at the
    end). recorded: whether the monitor wrote a gap record for it."""
    if iostat.empty:
        return pd.DataFrame(columns=GAP_COLUMNS)
    t = iostat.copy()
    t["start"], t["end"] = pd.to_datetime(t["start"]), pd.to_datetime(t["end"])
    out = []
    for host, mine in t.groupby("host", dropna=False):
        io = mine[mine["kind"] == "io"].drop_duplicates("end").sort_values("end")
        marks = mine[mine["kind"] == "gap"]
        stops = mine[mine["kind"] == "stop"]
        used = set()
        ends, starts = io["end"].to_list(), io["start"].to_list()
        secs = io["seconds"].to_list()
        for i in range(1, len(ends)):
            tol = timedelta(seconds=max(2.0, 0.5 * secs[i]))
            a, b = ends[i - 1], starts[i]
            if b - a <= tol:
                continue
            hit = marks[(marks["end"] >= a - tol) & (marks["start"] <= b + tol)]
            if len(hit):
                used.update(hit.index)
                reason, recorded = "; ".join(hit["reason"].fillna("").astype(str)), True
            else:
                st = stops[(stops["end"] >= a - tol) & (stops["end"] <= b + tol)]
                reason = (
                    f"monitor stopped: {st['reason'].iloc[0]}"
                    if len(st)
                    else "no record (monitor not running)"
                )
                recorded = False
            out.append((host, a, b, (b - a).total_seconds(), reason, recorded))
        for idx, g in marks.iterrows():
            if idx not in used:
                out.append(
                    (
                        host,
                        g["start"],
                        g["end"],
                        (g["end"] - g["start"]).total_seconds(),
                        g["reason"],
                        True,
                    )
                )
    frame = pd.DataFrame(out, columns=GAP_COLUMNS)
    return frame.sort_values(["start", "host"], ignore_index=True)


def summary(iostat: pd.DataFrame, series: pd.DataFrame | None = None) -> pd.DataFrame:
    """Seed 000 IV's numbers: totals and means per day of bytes read and written, the read
    share, peak one-bucket read, write and total rates, the mean total rate, the share of time
    below a third of the peak, recorded buckets, hosts, devices, gaps and their time."""
    cols = ["metric", "value", "unit", "at"]
    io = io_rows(iostat)
    if io.empty:
        return pd.DataFrame(columns=cols)
    series = throughput(iostat) if series is None else series
    days = daily_totals(iostat)
    g = gaps(iostat)
    read, written = io["read_bytes"].sum(), io["write_bytes"].sum()
    bucket = int(series["bucket_s"].iloc[0])
    rows_ = [
        ("days with records", len(days), "days", None),
        ("hosts", io["host"].nunique(), "", None),
        ("devices", len(io.drop_duplicates(["host", "device"])), "", None),
        ("read in total", read / 2**40, "TiB", None),
        ("written in total", written / 2**40, "TiB", None),
        ("read per day (mean)", days["read_tib"].mean(), "TiB", None),
        ("written per day (mean)", days["write_tib"].mean(), "TiB", None),
        (
            "reads' share of bytes moved",
            100 * read / (read + written) if read + written else None,
            "%",
            None,
        ),
    ]
    for p in peaks(series).itertuples():
        rows_.append((f"peak {p.direction} over {bucket} s", p.peak_mib_s, "MiB/s", p.at))
    share = share_below(series)
    rows_ += [
        ("mean total throughput", series["total_mib_s"].mean(), "MiB/s", None),
        (f"{bucket}-s intervals recorded", len(series), "", None),
        ("time below a third of the peak total", 100 * share, "%", None),
        ("gaps in the record", len(g), "", None),
        ("time in gaps", g["seconds"].sum() / 3600 if len(g) else 0.0, "h", None),
    ]
    return pd.DataFrame(rows_, columns=cols)
