"""Seed 001's component analysis (section 4.2): what each component of a system can do, and the
aggregate ceiling they set at each scale (Fig. 4), against which IOR is held ("roughly 85% of
the peak rate for this hardware configuration").

The limits of a system, per operation (write, read), from its runs' measurements (the store's
components and ior tables; the latest run that has each), else from the peaks its description
declares (system.json ``peaks``; null: no limit known):

- storage: with the storage targets a system lists measured (fio_check's storage_target), the
  sum over them of the best aggregate MiB/s fio reached on each (any number of jobs: seed
  001's devices, each from its server); else the best fio reached on the scratch storage times
  the system's storage targets (``peaks.storage_targets``, 1 when not declared); declared:
  ``storage_target_mib_s`` times the targets. Small writes each followed by fsync (fio's
  syncwrite, seed 001's metadata updates) are shown, not a limit of large transfers.
- client: the best IOR MiB/s per node to memory (/dev/shm: seed 001's Fig. 2a, the client's
  path without the file system) times the nodes; declared: ``client_network_mib_s`` times the
  nodes.
- node link: the best one-pair MiB/s of netbw between two nodes times the nodes; network: its
  best all-pairs MiB/s (a floor of what the network carries, measured with the pairs of the
  check's nodes); declared: ``aggregate_mib_s``. Both from each run's largest messages (its
  largest size and that size's perturbations): the sustained rate, which a real network reaches
  at its largest messages anyway, while a rate-limited link (a token bucket, the test
  cluster's tc) passes a message that fits its burst faster than the link. On one node,
  netbw's pairs talk through shared memory: no network limit is measured.

ceiling(operation, nodes) is the smallest limit at that node count, and the one that sets it
is named. Each IOR point on scratch, each I/O model of seed 003's benchmark and each
application's write and read bandwidth (BTIO, MADbench2, FLASH-IO, HACC-IO) gets its
fraction of the ceiling at its nodes (a point above it was served by the page cache, and says
so); the verdict names IOR's best, as seed 001 does.
"""

from __future__ import annotations

import math

from iostudy.benchmarks import probe
from iostudy.core import checknames
from iostudy.core.deferred import deferred
from iostudy.core.nodecount import nodes_for

pd = deferred("pandas")

OPERATIONS = ("write", "read")
#: each limit's peak in a system description (system.json ``peaks``), how it scales, and how a
#: figure names it: the one reading of the declared peaks (iostudy.metrics.scaling draws them)
DECLARED = (
    ("network", "aggregate_mib_s", "system", "declared aggregate peak"),
    ("client", "client_network_mib_s", "per node", "client network peak x nodes"),
    ("storage", "storage_target_mib_s", "system", "storage target peak x targets"),
)
LIMIT_COLUMNS = [
    "system",
    "limit",
    "operation",
    "scales",
    "measured_mib_s",
    "declared_mib_s",
    "used_mib_s",
    "source",
]


def _best(values: pd.Series) -> float | None:
    values = values.dropna()
    return float(values.max()) if len(values) else None


def _row(system, limit, op, scales, measured, declared, source) -> dict:
    used = measured if measured is not None else declared
    if measured is None and declared is None:
        source = f"neither measured ({source}) nor declared"
    elif measured is None:
        source = "declared (system.json)"
    return {
        "system": system,
        "limit": limit,
        "operation": op,
        "scales": scales,
        "measured_mib_s": measured,
        "declared_mib_s": declared,
        "used_mib_s": used,
        "source": source,
    }


def declared(peaks: dict | None) -> dict[str, float | None]:
    """Each limit's declared MiB/s (None: not declared); storage's is a target's peak times the
    system's targets (probe.storage_targets: 1 when it declares none)."""
    peaks = peaks or {}
    targets = probe.storage_targets({"peaks": peaks})
    values = {limit: peaks.get(name) for limit, name, _, _ in DECLARED}
    if values["storage"]:
        values["storage"] *= targets
    return values


def storage_limit(fio: pd.DataFrame, targets: int) -> tuple[float | None, str]:
    """The storage limit of one operation's fio rows, and how it was made (module docstring)."""
    named = fio["target"].fillna("scratch")
    listed = fio[named != "scratch"]
    if len(listed):
        best = listed.groupby("target")["aggregate_mib_s"].max()
        return float(best.sum()), f"fio_check, sum of the best of each of {len(best)} target(s)"
    best = _best(fio["aggregate_mib_s"])
    return (best * targets if best else None), f"fio_check, best on scratch x {targets} target(s)"


def limits(system: str, components: pd.DataFrame, ior: pd.DataFrame, peaks: dict | None):
    """The system's limits (LIMIT_COLUMNS), one row per limit and operation; ``scales``:
    "per node" (times the nodes in use) or "system" (whatever the nodes)."""
    targets = probe.storage_targets({"peaks": peaks or {}})
    claimed = declared(peaks)
    storage = components[components["component"] == "storage"]
    netbw = components[components["component"] == "network"]
    network = largest_messages(netbw[netbw["nodes"] >= 2])
    link, pairs = _network_sources(netbw, network)
    memory = ior[ior["target"] == "memory"]
    rows = []
    for op in OPERATIONS:
        fio, source = storage_limit(storage[storage["operation"] == op], targets)
        rows.append(_row(system, "storage", op, "system", fio, claimed["storage"], source))
        per_node = memory[memory["operation"] == op]
        client = _best(per_node["mib_s"] / per_node["nodes"].clip(lower=1))
        rows.append(
            _row(
                system,
                "client",
                op,
                "per node",
                client,
                claimed["client"],
                "ior_check to memory, best MiB/s per node",
            )
        )
        rows.append(_row(system, "node link", op, "per node", _best(network["mib_s"]), None, link))
        rows.append(
            _row(
                system,
                "network",
                op,
                "system",
                _best(network["aggregate_mib_s"]),
                claimed["network"],
                pairs,
            )
        )
    return pd.DataFrame(rows, columns=LIMIT_COLUMNS)


def largest_messages(netbw: pd.DataFrame) -> pd.DataFrame:
    """The rows of each run's largest messages: its largest size, and the sizes within a few
    bytes of it (NetPIPE's perturbations; more than half of it)."""
    if netbw.empty:
        return netbw
    largest = netbw.groupby("run_id")["bytes"].transform("max")
    return netbw[netbw["bytes"] * 2 > largest]


def _network_sources(netbw: pd.DataFrame, network: pd.DataFrame) -> tuple[str, str]:
    """How the node link and the network are measured; when netbw ran on one node only, what
    it measured there instead (shared memory, not a network)."""
    best = _best(netbw["mib_s"])
    if len(network) or best is None:
        return "netbw_check between two nodes, one pair", "netbw_check, all pairs at once"
    within = f"netbw_check ran on one node only: {best:,.0f} MiB/s through shared memory"
    return within, within


def ceiling(table: pd.DataFrame, operation: str, nodes: int) -> tuple[float | None, str | None]:
    """The smallest limit of ``table`` (:func:`limits`) for operation at ``nodes`` nodes, and
    its name; (None, None) when no limit is known."""
    mine = table[(table["operation"] == operation) & table["used_mib_s"].notna()]
    best, name = math.inf, None
    for row in mine.itertuples():
        value = row.used_mib_s * (nodes if row.scales == "per node" else 1)
        if value < best:
            best, name = value, row.limit
    return (best, name) if name else (None, None)


#: what a point above the ceiling says: a component did more than its measurement, which a
#: cache (the I/O-model benchmark neither syncs nor drops its pages) or more requests in flight
#: than the component check made (the kernel's writeback and read-ahead) explain
ABOVE = (
    "above the ceiling: the page cache, or more requests in flight than fio_check made "
    "(scan its jobs and iodepth higher)"
)
POINT_COLUMNS = [
    "run_id",
    "system",
    "benchmark",
    "layout",
    "transfer",
    "procs",
    "nodes",
    "operation",
    "mib_s",
]


def points(curves: pd.DataFrame, iomodel: pd.DataFrame, apps=None) -> pd.DataFrame:
    """What is held against the ceiling: IOR's points on scratch (iostudy.metrics.scaling's
    ior_curves: the mean over iterations), every I/O model of seed 003's benchmark (its
    processes doing I/O and nodes), one row per operation, and the applications' points
    (:func:`application_points`, when given): POINT_COLUMNS."""
    ior = curves[curves["target"] != "memory"].assign(benchmark="IOR " + curves["api"])
    rows = [ior.reindex(columns=POINT_COLUMNS)]
    if apps is not None:
        rows.append(apps.reindex(columns=POINT_COLUMNS))
    for op in OPERATIONS:
        done = iomodel[iomodel[f"{op}_mib_s"].notna()] if len(iomodel) else iomodel
        if len(done):
            rows.append(
                pd.DataFrame(
                    {
                        "run_id": done["run_id"],
                        "system": done["system"],
                        "benchmark": "I/O model",
                        "layout": done["model"],
                        "transfer": None,
                        "procs": done["io_procs"],
                        "nodes": done["nodes"],
                        "operation": op,
                        "mib_s": done[f"{op}_mib_s"],
                    }
                )
            )
    rows = [r for r in rows if len(r)]
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=POINT_COLUMNS)


def application_points(perf: pd.DataFrame, one_node=frozenset()) -> pd.DataFrame:
    """The application checks' write and read MiB/s (each check's ``bandwidth`` variables in
    iostudy.core.checknames) as points (POINT_COLUMNS): its processes, and its nodes from
    ReFrame's tasks per node, 1 in the runs of ``one_node`` (run ids of a system without a
    scheduler, where tasks per node says nothing of nodes)."""
    rows = []
    for name, check in checknames.CHECKS.items():
        for op, variable in check.bandwidth:
            done = perf[(perf["check"] == name) & (perf["variable"] == variable)]
            done = done[pd.to_numeric(done["value"], errors="coerce").notna()]
            if done.empty:
                continue
            procs = done["num_tasks"].astype(int)
            per_node = done["num_tasks_per_node"].fillna(procs).clip(lower=1).astype(int)
            nodes = nodes_for(procs, per_node).where(~done["run_id"].isin(one_node), 1)
            rows.append(
                pd.DataFrame(
                    {
                        "run_id": done["run_id"],
                        "system": done["system"],
                        "benchmark": check.title,
                        "layout": None,
                        "transfer": None,
                        "procs": procs,
                        "nodes": nodes,
                        "operation": op,
                        "mib_s": done["value"].astype(float),
                    }
                )
            )
    return pd.concat(rows, ignore_index=True) if rows else pd.DataFrame(columns=POINT_COLUMNS)


def fractions(held: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Each point of :func:`points` with the ceiling at its nodes, the limit that sets it, and
    its fraction of it in %."""
    held = held.copy()
    found = [ceiling(table, r.operation, int(r.nodes or 1)) for r in held.itertuples()]
    held["ceiling_mib_s"] = [c for c, _ in found]
    held["limited_by"] = [n for _, n in found]
    held["ceiling_pct"] = 100 * held["mib_s"] / held["ceiling_mib_s"].astype(float)
    held["note"] = held["ceiling_pct"].map(lambda pct: ABOVE if pct > 100 else "")
    cols = [*POINT_COLUMNS, "ceiling_mib_s", "ceiling_pct", "limited_by", "note"]
    return held[cols].sort_values(["system", "operation", "procs", "benchmark", "layout"])


def best_fractions(table: pd.DataFrame) -> dict[str, dict]:
    """Per operation, IOR's point of :func:`fractions` (any API) nearest its ceiling from
    below, its row as a dict: what seed 001 reports. A point above the ceiling measured a
    cache, not the hardware: it is the answer only when every point is above."""
    rated = table[table["ceiling_pct"].notna() & table["benchmark"].str.startswith("IOR")]
    best = {}
    for op in OPERATIONS:
        mine = rated[rated["operation"] == op]
        if mine.empty:
            continue
        within = mine[mine["ceiling_pct"] <= 100]
        best[op] = (within if len(within) else mine).nlargest(1, "ceiling_pct").iloc[0].to_dict()
    return best


def ceiling_curve(table: pd.DataFrame, procs: list[int], per_node: int) -> pd.DataFrame:
    """The ceiling per operation at each process count (nodes: procs over per_node, rounded
    up): operation, procs, nodes, ceiling_mib_s, limited_by."""
    rows = []
    for op in OPERATIONS:
        for p in procs:
            nodes = nodes_for(p, max(per_node, 1))
            value, name = ceiling(table, op, nodes)
            rows.append(
                {
                    "operation": op,
                    "procs": p,
                    "nodes": nodes,
                    "ceiling_mib_s": value,
                    "limited_by": name,
                }
            )
    return pd.DataFrame(
        rows, columns=["operation", "procs", "nodes", "ceiling_mib_s", "limited_by"]
    )
