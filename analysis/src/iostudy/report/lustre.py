"""Seed 002's Lustre view (section V-A, Fig. 4): the runtime's LUSTRE records say on which OSTs
each file lies; joined with the files' POSIX records they give, per OST, its occupancy (how many
processes' files it holds) and the distribution of those processes' I/O times, and, with the
system's map of OSTs to servers (`ost_servers` of a storage entry in its system.json), the
aggregate I/O time per server. Pure functions, and the report's section.
"""

from __future__ import annotations

from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB
from iostudy.core.plotting import count_ticks
from iostudy.metrics import scaling

pd = deferred("pandas")


def ost_records(lustre: pd.DataFrame, files: pd.DataFrame) -> pd.DataFrame:
    """One row per POSIX record (a process's file, or a shared file's one record) and OST its
    file lies on: log_sha256, record_id, rank, path, ost, io_time (read + write + metadata
    time of the record), bytes (read + written)."""
    columns = ["run_id", "log_sha256", "record_id", "rank", "path", "ost", "io_time", "bytes"]
    if lustre.empty or files.empty:
        return pd.DataFrame(columns=columns)
    layouts = lustre[["log_sha256", "record_id", "ost"]].drop_duplicates()
    posix = files[files["module"] == "posix"].copy()
    posix["io_time"] = posix[["read_time", "write_time", "meta_time"]].fillna(0).sum(axis=1)
    posix["bytes"] = posix["bytes_read"] + posix["bytes_written"]
    joined = posix.merge(layouts, on=["log_sha256", "record_id"])
    return joined[columns].sort_values(["ost", "log_sha256", "rank"], ignore_index=True)


def per_ost(records: pd.DataFrame) -> pd.DataFrame:
    """Per OST: occupancy (records on it), their I/O time (median, lowest, highest, total) and
    bytes (of the records whose file lies on it)."""
    if records.empty:
        return pd.DataFrame(
            columns=[
                "ost",
                "occupancy",
                "io_time_median_s",
                "io_time_min_s",
                "io_time_max_s",
                "io_time_total_s",
                "mib",
            ]
        )
    table = records.groupby("ost").agg(
        occupancy=("io_time", "size"),
        io_time_median_s=("io_time", "median"),
        io_time_min_s=("io_time", "min"),
        io_time_max_s=("io_time", "max"),
        io_time_total_s=("io_time", "sum"),
        mib=("bytes", lambda b: b.sum() / MIB),
    )
    return table.reset_index()


def per_server(ost_table: pd.DataFrame, servers: dict[str, list[int]]) -> pd.DataFrame:
    """Per server of the map {server: [OST, ...]}: its OSTs, their occupancy and aggregate I/O
    time (seed 002, Fig. 4b); OSTs the map does not name are counted under "unmapped"."""
    owner = {ost: name for name, osts in servers.items() for ost in osts}
    table = ost_table.assign(server=ost_table["ost"].map(owner).fillna("unmapped"))
    out = table.groupby("server").agg(
        osts=("ost", "size"),
        occupancy=("occupancy", "sum"),
        io_time_total_s=("io_time_total_s", "sum"),
    )
    out["io_time_per_ost_s"] = out["io_time_total_s"] / out["osts"]
    return out.reset_index()


def server_map(manifest: dict | None) -> dict[str, list[int]]:
    """The OST-to-server map of a run's system (its effective configuration), merged over its
    storage entries; empty when it declares none."""
    system = ((manifest or {}).get("effective_config") or {}).get("system") or {}
    found: dict[str, list[int]] = {}
    for entry in system.get("storage") or []:
        for name, osts in (entry.get("ost_servers") or {}).items():
            found.setdefault(name, []).extend(osts)
    return found


def ost_figure(records: pd.DataFrame, title: str):
    """Seed 002's Fig. 4a: occupancy per OST (top) and the I/O times of the processes on each
    OST (bottom, one box per OST)."""
    from matplotlib.figure import Figure

    osts = sorted(records["ost"].unique())
    fig = Figure(figsize=(max(6, 0.35 * len(osts) + 2), 5), layout="constrained")
    top, bottom = fig.subplots(2, 1, sharex=True)
    counts = records.groupby("ost").size().reindex(osts)
    top.bar(range(len(osts)), counts.values, color="C0")
    top.set_ylabel("occupancy (records)", fontsize=8)
    count_ticks(top.yaxis)
    bottom.boxplot(
        [records.loc[records["ost"] == o, "io_time"] for o in osts],
        positions=range(len(osts)),
        widths=0.6,
    )
    bottom.set_ylabel("I/O time per record (s)", fontsize=8)
    bottom.set_xticks(range(len(osts)), [str(o) for o in osts], fontsize=7)
    bottom.set_xlabel("OST index", fontsize=8)
    for ax in (top, bottom):
        ax.grid(alpha=0.3, axis="y")
        ax.tick_params(labelsize=7)
    fig.suptitle(title, fontsize=10)
    return fig


def add_section(add, data, runs: list[dict]) -> None:
    """The report's Lustre section through report.render's add(): per system with Lustre
    records in the study, the per-OST table and figure of its latest such run, and the
    per-server table when the system maps its OSTs to servers; nothing without Lustre records."""
    lustre = data.query("SELECT * FROM lustre")
    records = ost_records(lustre, data.files_of_logs(lustre["log_sha256"]))
    if records.empty:
        return
    by_run = {r["run_id"]: r for r in runs}
    for system, run_id in scaling.latest_with(records, data["runs"]).itertuples(index=False):
        run = {**by_run.get(run_id, {}), "run_id": run_id}
        mine = records[records["run_id"] == run["run_id"]]
        osts = per_ost(mine)
        ident = f"lustre-osts-{''.join(c if c.isalnum() else '-' for c in system)}"
        add(
            "lustre",
            "figure",
            ident,
            f"{system}, run {run['run_id']}: occupancy of each OST (the POSIX records, a "
            "process's file each, whose file lies on it, from the runtime's Lustre records) and "
            "the distribution of their I/O times (read + write + metadata) (seed 002, Fig. 4a).",
            osts,
            fig=ost_figure(mine, f"{system}: {run['run_id']}"),
            table=True,
        )
        servers = server_map(run.get("_manifest"))
        if servers:
            add(
                "lustre",
                "table",
                f"{ident}-servers",
                f"{system}, run {run['run_id']}: per object storage server (the system's "
                "ost_servers map), its OSTs, their occupancy and aggregate I/O time, total and "
                "per OST (seed 002, Fig. 4b: a server serving twice the OSTs after a failover "
                "shows twice the time).",
                per_server(osts, servers),
                table=True,
            )
