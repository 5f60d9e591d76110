"""A job's compute nodes, defined once: known or unknown, never assumed.

Where a count comes from, the first that says (``nodes_source``):

- "slurm": the job's row of Slurm's accounting (the store's ``sched`` table, ``iostudy sacct
  import``); iostudy.metrics.jobstats puts it over the others;
- "tag": the log says: the harness's ``nodes`` tag, or its ranks over the ``procs_per_node``
  tag (the runtime writes the harness's tags, IOSTUDY_LOG_TAGS, into the log's metadata);
- "log": the log's job-level modules say (:func:`iostudy.logs.jobmodules.nodes`): BG/Q's
  block (its ranks over BGQ_RANKSPERNODE, at most BGQ_NNODES), or the distinct nodes of
  APMPI's records when it has one of every rank (each names its MPI_PROCESSOR_NAME);
- "system": the ranks over the cores per node of the system description
  (configs/systems/<system>/system.json) the log's run names (a run's manifest, a tree
  ingested with ``--system``), at most the system's nodes;
- "unknown": none of them. The count is null, and MiB/s/CN with it: a tree of another site's
  logs ingested without accounting would otherwise divide by one node it never had.

What else a log holds says nothing of nodes: Darshan's metadata is ``lib_ver`` and the MPI-IO
hints (``h``), whose ``cb_nodes`` is ROMIO's collective-buffering aggregators, not the job's
nodes; the job record has the process count, not their placement; DXT's host names are
those of the ranks that did traced I/O only.

No pandas here: the checks' side (ReFrame's process) imports this module.
"""

from __future__ import annotations

SLURM, TAG, LOG, SYSTEM, UNKNOWN = "slurm", "tag", "log", "system", "unknown"
#: what a page says of a job whose count is unknown
WHY_UNKNOWN = "nodes unknown: no accounting, no system description"


def nodes_for(procs, per_node, most=None):
    """The nodes ``procs`` processes take at ``per_node`` a node: procs / per_node rounded up
    (ints, or pandas Series alike), and at most ``most`` when given (an int: the nodes there
    are, a system's or a Blue Gene/Q block's)."""
    nodes = -(-procs // per_node)
    return nodes if most is None else min(nodes, most)


def _count(value) -> int | None:
    """A positive count from a tag's text or a description's number; None for anything else."""
    try:
        count = int(value)
    except (TypeError, ValueError):
        return None
    return count if count > 0 else None


def job_nodes(nprocs, tags: dict, system: dict | None, logged=None) -> tuple[int | None, str]:
    """A job's nodes as its log (its tags, then ``logged``: the count its job-level modules
    give) and its run's system description give them, and the source (see the module
    docstring; Slurm's count is jobstats'): (None, "unknown") when none says."""
    if nodes := _count(tags.get("nodes")):
        return nodes, TAG
    described = (system or {}).get("nodes") or {}
    per_node = _count(tags.get("procs_per_node"))
    if not per_node and (nodes := _count(logged)):
        return nodes, LOG
    source = TAG if per_node else SYSTEM
    per_node = per_node or _count(described.get("cores_per_node"))
    procs = _count(nprocs)
    if not per_node or not procs:
        return None, UNKNOWN
    return nodes_for(procs, per_node, _count(described.get("count"))), source
