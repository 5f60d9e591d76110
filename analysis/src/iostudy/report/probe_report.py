"""The interference probe's report section (seed 004): per sample figures from the store's
probes table (the sample and its figures: :mod:`iostudy.benchmarks.probe`), the variability,
imbalance and sweep tables, and the figures."""

from __future__ import annotations

import math

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB
from iostudy.core.plotting import count_ticks, legend_below
from iostudy.report.figures import date_axis, time_span

np = deferred("numpy")
pd = deferred("pandas")


def samples(probes: pd.DataFrame) -> pd.DataFrame:
    """One row per sample (a probe job's log) from the store's probes table: its time, system,
    shape and the figures of the module docstring. A sample whose writers are not all in the
    log (writers rows < writers) is left out of the figures: complete is False."""
    columns = [
        "run_id",
        "log_sha256",
        "system",
        "start",
        "writers",
        "writers_per_target",
        "targets",
        "target",
        "bytes_per_writer",
        "aggregate_mib_s",
        "mean_writer_mib_s",
        "imbalance",
        "slowest_s",
        "fastest_s",
        "complete",
    ]
    if probes is None or probes.empty:
        return pd.DataFrame(columns=columns)
    rows = []
    keys = ["run_id", "log_sha256"]
    for (run_id, sha), group in probes.groupby(keys, sort=False):
        first = group.iloc[0]
        times = group["write_time"].astype(float)
        complete = len(group) == int(first["writers"]) and bool((times > 0).all())
        slowest, fastest = (times.max(), times.min()) if complete else (np.nan, np.nan)
        rows.append(
            {
                "run_id": run_id,
                "log_sha256": sha,
                "system": first["system"],
                "start": first["start"],
                "writers": int(first["writers"]),
                "writers_per_target": first["writers_per_target"],
                "targets": first["targets"],
                # every target its writers were on (a probe placed on each brick spans them)
                "target": ", ".join(dict.fromkeys(group["target"].dropna())) or None,
                "bytes_per_writer": int(group["bytes"].max()),
                "aggregate_mib_s": group["bytes"].sum() / MIB / slowest if complete else np.nan,
                "mean_writer_mib_s": (group["bytes"] / times).mean() / MIB if complete else np.nan,
                "imbalance": slowest / fastest if complete else np.nan,
                "slowest_s": slowest,
                "fastest_s": fastest,
                "complete": complete,
            }
        )
    return pd.DataFrame(rows, columns=columns).sort_values(["system", "start"], ignore_index=True)


def complete(samples_df: pd.DataFrame) -> pd.DataFrame:
    """The samples whose writers are all in the log (a boolean mask even when empty)."""
    return samples_df[samples_df["complete"].astype(bool)]


def variability(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Seed 004's Table I per system and probe shape: samples, mean and standard deviation of
    the aggregate bandwidth, coefficient of variation (%), and the mean and largest imbalance."""
    good = complete(samples_df)
    shape = ["system", "writers", "bytes_per_writer"]
    rows = []
    for key, group in good.groupby(shape, sort=True):
        bw = group["aggregate_mib_s"]
        std = bw.std(ddof=1) if len(bw) > 1 else math.nan
        rows.append(
            {
                **dict(zip(shape, key, strict=True)),
                "samples": len(group),
                "mean_mib_s": bw.mean(),
                "std_mib_s": std,
                "cov_pct": 100 * std / bw.mean() if bw.mean() else math.nan,
                "mean_imbalance": group["imbalance"].mean(),
                "max_imbalance": group["imbalance"].max(),
            }
        )
    return pd.DataFrame(
        rows,
        columns=[
            *shape,
            "samples",
            "mean_mib_s",
            "std_mib_s",
            "cov_pct",
            "mean_imbalance",
            "max_imbalance",
        ],
    )


TARGET_COLUMNS = [
    "system",
    "target",
    "samples",
    "writers",
    "mean_writer_mib_s",
    "slowest_writer_mib_s",
    "fastest_writer_mib_s",
]


def per_target(probes: pd.DataFrame) -> pd.DataFrame:
    """Per system and storage target the writers were placed on (the probes rows' target: a
    GlusterFS brick's, a Lustre OST's): the samples and writer files on it, and the mean, the
    slowest and the fastest writer's MiB/s there (its bytes over its write time)."""
    if probes is None or probes.empty or probes["target"].isna().all():
        return pd.DataFrame(columns=TARGET_COLUMNS)
    rows = probes[probes["write_time"].astype(float) > 0]
    rows = rows.assign(mib_s=rows["bytes"] / MIB / rows["write_time"].astype(float))
    table = (
        rows.groupby(["system", "target"], sort=True)
        .agg(
            samples=("log_sha256", "nunique"),
            writers=("mib_s", "size"),
            mean_writer_mib_s=("mib_s", "mean"),
            slowest_writer_mib_s=("mib_s", "min"),
            fastest_writer_mib_s=("mib_s", "max"),
        )
        .reset_index()
    )
    return table[TARGET_COLUMNS]


def sweep(samples_df: pd.DataFrame) -> pd.DataFrame:
    """Seed 004's Fig. 1: per system, writers per target and data per writer, the mean, lowest
    and highest aggregate and per-writer bandwidth over the samples."""
    good = complete(samples_df)
    keys = ["system", "writers_per_target", "bytes_per_writer"]
    if good.empty:
        return pd.DataFrame(columns=[*keys, "samples"])
    table = good.groupby(keys).agg(
        samples=("aggregate_mib_s", "size"),
        writers=("writers", "first"),
        aggregate_mib_s=("aggregate_mib_s", "mean"),
        aggregate_min=("aggregate_mib_s", "min"),
        aggregate_max=("aggregate_mib_s", "max"),
        per_writer_mib_s=("mean_writer_mib_s", "mean"),
        per_writer_min=("mean_writer_mib_s", "min"),
        per_writer_max=("mean_writer_mib_s", "max"),
    )
    return table.reset_index()


# ---- figures (matplotlib, drawn only when the report needs them) ------------------------------
def over_time_figure(samples_df: pd.DataFrame):
    """Seed 004's view of the hourly probe: aggregate bandwidth (top) and imbalance factor
    (bottom) of every sample over time, one series per system and probe shape."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(9, 5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    good = complete(samples_df)
    for (system, writers, size), s in good.groupby(["system", "writers", "bytes_per_writer"]):
        label = f"{system}: {writers} writers x {size / MIB:g} MiB"
        times = pd.to_datetime(s["start"])
        top.plot(times, s["aggregate_mib_s"], marker="o", markersize=3, linewidth=1, label=label)
        bottom.plot(times, s["imbalance"], marker="o", markersize=3, linewidth=1, label=label)
    top.set_ylabel("aggregate MiB/s", fontsize=8)
    bottom.set_ylabel("imbalance (slowest/fastest)", fontsize=8)
    bottom.axhline(1, color="grey", linewidth=0.8)
    for ax in (top, bottom):
        ax.grid(alpha=0.3)
        ax.tick_params(labelsize=7)
    bottom.set_xlabel("sample time (UTC)", fontsize=8)
    if len(good):  # one sample: a point on an axis of minutes, not of years
        date_axis(bottom, time_span(pd.to_datetime(good["start"])))
    legend_below(fig)
    return fig


def histogram_samples(samples_df: pd.DataFrame) -> pd.DataFrame:
    """The samples of the histogram: per system, those of its most sampled probe shape (writers
    and bytes per writer: the hourly probe's, where a sweep ran too)."""
    good = complete(samples_df)
    shape = ["system", "writers", "bytes_per_writer"]
    counts = good.groupby(shape).size().reset_index(name="n")
    top = counts.sort_values("n", ascending=False).drop_duplicates("system")
    return good.merge(top[shape], on=shape)


def histogram_figure(chosen: pd.DataFrame):
    """Seed 004's Fig. 2: the histogram of the probe's aggregate bandwidth, per system."""
    from matplotlib.figure import Figure

    systems = sorted(chosen["system"].unique())
    fig = Figure(figsize=(4.2 * max(len(systems), 1), 3), layout="constrained")
    axes = fig.subplots(1, max(len(systems), 1), squeeze=False).ravel()
    for ax, system in zip(axes, systems, strict=False):
        mine = chosen[chosen["system"] == system]
        values = mine["aggregate_mib_s"]
        ax.hist(values, bins=min(20, max(len(values), 1)), color="C0", edgecolor="white")
        shape = mine.iloc[0]
        ax.set_title(
            f"{system}: {len(values)} samples, {shape['writers']} writers x "
            f"{shape['bytes_per_writer'] / MIB:g} MiB",
            fontsize=9,
        )
        ax.set_xlabel("aggregate MiB/s", fontsize=8)
        ax.set_ylabel("samples", fontsize=8)
        count_ticks(ax.yaxis)
        ax.tick_params(labelsize=7)
    return fig


def sweep_figure(sweep_df: pd.DataFrame):
    """Seed 004's Fig. 1: aggregate (left) and per-writer (right) bandwidth against writers per
    target, one curve per data size per writer (mean, bars min to max), per system."""
    from matplotlib.figure import Figure

    systems = sorted(sweep_df["system"].unique())
    fig = Figure(figsize=(9, 3.2 * len(systems)), layout="constrained")
    axes = fig.subplots(len(systems), 2, squeeze=False)
    for (left, right), system in zip(axes, systems, strict=True):
        of_system = sweep_df[sweep_df["system"] == system]
        for size, s in of_system.groupby("bytes_per_writer"):
            s = s.sort_values("writers_per_target")
            for ax, col in ((left, "aggregate"), (right, "per_writer")):
                mean = s[f"{col}_mib_s"]
                ax.errorbar(
                    s["writers_per_target"],
                    mean,
                    yerr=[mean - s[f"{col}_min"], s[f"{col}_max"] - mean],
                    marker="o",
                    markersize=3,
                    capsize=2,
                    linewidth=1.2,
                    label=f"{size / MIB:g} MiB per writer",
                )
        for ax, what in ((left, "aggregate"), (right, "per-writer")):
            ax.set_xscale("log", base=2)
            ax.set_title(f"{system}: {what} write bandwidth", fontsize=9)
            ax.set_xlabel("writers per storage target", fontsize=8)
            ax.set_ylabel("MiB/s", fontsize=8)
            ax.grid(alpha=0.3)
            ax.tick_params(labelsize=7)
    legend_below(fig)
    return fig


def add_section(add, probes: pd.DataFrame) -> None:
    """The report's interference section (seed 004) through report.render's add(); nothing
    when the study has no probe sample (the section then says so)."""
    samples_df = samples(probes)
    good = complete(samples_df)
    if samples_df.empty:
        return
    add(
        "probes",
        "figure",
        "probe-over-time",
        "Interference probe samples over time (seed 004): aggregate write bandwidth (all bytes "
        "over the slowest writer's write time, from the runtime's per-file records, without "
        "opens and closes) and imbalance factor (slowest over fastest writer's write time).",
        samples_df,
        fig=over_time_figure(samples_df) if len(good) else None,
        table=True,
        hide=["log_sha256"],
    )
    chosen = histogram_samples(samples_df)
    add(
        "probes",
        "figure",
        "probe-histogram",
        "Histogram of the probe's aggregate write bandwidth per system, over the samples of its "
        "most sampled probe shape (seed 004, Fig. 2).",
        chosen[["system", "writers", "bytes_per_writer", "start", "aggregate_mib_s"]],
        fig=histogram_figure(chosen) if len(chosen) else None,
    )
    add(
        "probes",
        "table",
        "probe-variability",
        "I/O performance variability per system and probe shape (seed 004, Table I): samples, "
        "mean and standard deviation of the aggregate bandwidth, coefficient of variation, "
        "mean and largest imbalance factor.",
        variability(samples_df),
        table=True,
    )
    targets = per_target(probes)
    if targets["target"].nunique() > 1:  # the writers were placed, target by target
        add(
            "probes",
            "table",
            "probe-targets",
            "The probe per storage target its writers' files were placed on (writer r on "
            "target r mod K; on GlusterFS the brick trusted.glusterfs.pathinfo names, on "
            "Lustre the OST): samples, writer files, and the mean, slowest and fastest "
            "writer's MiB/s there. A target slower than the others is where the imbalance "
            "comes from.",
            targets,
            table=True,
        )
    _add_sweep(add, sweep(samples_df))


def _add_sweep(add, sweep_df: pd.DataFrame) -> None:
    """Seed 004's Fig. 1 when the probes ran at several writers per target, else a note
    naming the campaign that does."""
    shapes = sweep_df.groupby("system")["writers_per_target"].nunique() if len(sweep_df) else []
    if len(shapes) and max(shapes) > 1:
        add(
            "probes",
            "figure",
            "probe-sweep",
            "Internal interference (seed 004, Fig. 1): aggregate and per-writer write bandwidth "
            "against writers per storage target, one curve per data size per writer (mean, bars "
            "min to max over the samples).",
            sweep_df,
            fig=sweep_figure(sweep_df),
        )
    else:  # the hourly probe is one shape: the sweep is a campaign of its own
        add(
            "probes",
            "note",
            "probe-sweep",
            "Internal interference (seed 004, Fig. 1) needs probes at several writers per "
            "target: iostudy campaign run interference --system SYSTEM.",
            sweep_df,
        )
