"""Diagnoses Drishti cannot make: from what only iostudy's store holds beside Darshan's counters
(issue 43). Each rule's ``drishti`` is null; :func:`iostudy.metrics.diagnose.findings` runs them
after its own (:func:`findings`), with the thresholds of ``configs/diagnoses.json`` under each
name; the queries are :mod:`iostudy.metrics.diagnose_beyond_sql`'s.

DXT traces (the ``dxt`` table: a log has one where its job ran with DXT on), POSIX's segments
unless said:

- ``straggler-rank``: a rank whose traced I/O (any module) ends far after the others': more
  than ``min_seconds`` and more than ``share`` of the median rank's I/O span (from the job's
  first traced access to the median rank's last end; the median of an even count: the lower).
- ``random-offsets``: accesses that neither start where the previous one of the same rank, file
  and direction ended nor keep its stride (the step between the two before). A regular stride,
  forwards or backwards, is not random: Darshan's counters (and Drishti's P11, P13) cannot tell
  one from the other.
- ``io-bursts``: the job's traced I/O comes in phases (segments of every rank closer than
  ``gap_s`` merged), at least ``min_phases``, in flight at most ``max_busy_share`` of the time
  from its first access to its last.
- ``small-io-storm``: at least ``min_count`` accesses of at most ``max_bytes`` starting within
  one window of ``window_s`` seconds (sliding: every small access starts one).

Lustre layouts (the ``lustre`` table: a row per file and OST; a file's size, bytes and time are
its POSIX records'):

- ``single-stripe-shared``: a file of at least ``min_mib`` written by ``min_writers`` ranks or
  more (a record of rank -1: all of them) on one OST.
- ``small-file-striped``: at least ``min_files`` files of at most ``max_mib`` whose first
  component stripes over ``min_stripes`` OSTs or more.
- ``ost-imbalance``: the job's busiest OST holds at least ``factor`` times the mean bytes of the
  OSTs its files use (a file's bytes split evenly over its OSTs: Darshan keeps no bytes per OST).
- ``slow-ost``: the files of one OST (files on it alone: their time is that OST's) moved their
  bytes at less than ``share`` of the rate of the job's median OST.

Slurm accounting (the ``sched`` table): ``io-bound``: the slowest rank's I/O time (the jobs
table's io_time_slowest_s) more than ``share`` of the job's wall time in Slurm's accounting.

The facility: ``project-wide`` and ``code-wide``: one per-job finding (any rule's) on at least
``share`` of a project's (Slurm account's) or code's (executable's) jobs and on ``min_jobs`` of
them or more: "every job (12 of 12) of this job's project has small-writes; this job is its
latest". A finding of the group, attached to its latest job: that job's ``account`` and
``executable`` columns name the group, never the text, so that a report whose names are
replaced (``report build --anonymize``, which replaces columns, not words in a sentence) shows
none.

The defaults (the schema's) are iostudy's: Drishti's where it has the same measure (20% and
1,000 accesses, as P11/P13), else what a facility would call a problem worth a ticket (a second
late, a GiB on one OST, a minute of I/O).

Not here: HEATMAP's bins (the store's heatmap table, which a job page draws); DXT's phases
(``io-bursts``) show the bursts of the jobs traced.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from iostudy.collect import sacct
from iostudy.core.deferred import deferred
from iostudy.core.numfmt import MIB, binary_bytes
from iostudy.logs import modules
from iostudy.metrics import diagnose_beyond_sql as sql
from iostudy.metrics import diagnose_evidence as evidence
from iostudy.metrics import diagnose_facts

pd = deferred("pandas")

FILLED = ("log_path", "jobid", "run_id", "account", "nprocs")  # from the job's facts


@dataclass(frozen=True)
class Beyond:
    """A rule: ``find(con, facts, thresholds)`` gives a row per finding: log_sha256, found,
    files, ranks; none where the store has no relation ``table``."""

    name: str
    advice: str
    find: Callable
    table: str
    over_findings: bool = False  # reads the per-job findings (relations diagnosed, beyond_jobs)


def _has(con, table: str) -> bool:
    query = "SELECT count(*) FROM information_schema.tables WHERE table_name = $1"
    return bool(con.execute(query, [table]).fetchone()[0])


def _none() -> pd.DataFrame:
    return pd.DataFrame(columns=["log_sha256", "found", "files", "ranks"])


def _pct(x: float) -> str:
    return f"{100 * x:.0f}%"


def _said(frame: pd.DataFrame, text: Callable, index=None) -> pd.Series:
    """``text(row)`` of each row of ``frame`` (itertuples), indexed by ``index`` (the
    frame's)."""
    said = [text(r) for r in frame.itertuples()]
    return pd.Series(said, index=frame.index if index is None else index, dtype=object)


def _by_file(rows: pd.DataFrame, measure: str) -> pd.DataFrame:
    return rows.groupby(["log_sha256", "path"], as_index=False)[measure].sum()


def _ranks(con, rows: pd.DataFrame, facts: pd.DataFrame) -> pd.Series:
    """Per log (index): the ranks of ``rows`` (log_sha256, rank) in a finding's words."""
    nprocs = facts.drop_duplicates("log_sha256").set_index("log_sha256")["nprocs"]
    return evidence.rank_texts(con, rows[["log_sha256", "rank"]], nprocs)


def _rows(said: pd.Series, files=None, ranks=None) -> pd.DataFrame:
    """A rule's findings from its found text per log (index) and, per log, files and ranks."""
    out = pd.DataFrame({"log_sha256": said.index, "found": said.to_numpy()})
    for name, per_log in (("files", files), ("ranks", ranks)):
        values = None if per_log is None else out["log_sha256"].map(per_log)
        out[name] = None if values is None else values.astype(object).where(values.notna(), None)
    return out


def _fired_rows(con, query: str, logs) -> pd.DataFrame:
    """``query`` with the relation beyond_fired: the logs ``logs``."""
    con.register("beyond_fired", pd.DataFrame({"log_sha256": pd.unique(pd.Series(list(logs)))}))
    try:
        return con.execute(query).df()
    finally:
        con.unregister("beyond_fired")


# --- DXT ----------------------------------------------------------------------------------


def _stragglers(con, facts, t) -> pd.DataFrame:
    params = {"seconds": t["min_seconds"], "share": t["share"]}
    late = con.execute(sql.LATE, params).df()
    if late.empty:
        return _none()
    last = late.sort_values(["log_sha256", "last_end"]).drop_duplicates("log_sha256", keep="last")
    count = late.groupby("log_sha256").size()
    said = _said(
        last,
        lambda r: (
            f"{count[r.log_sha256]:,} of {r.traced:,} traced ranks ended their I/O far after the "
            f"others: the last, rank {r.rank}, at {r.last_end:,.3f} s since the job started, "
            f"{r.last_end - r.median_end:,.3f} s after the median rank's last access "
            f"({r.median_end:,.3f} s)"
        ),
        last["log_sha256"],
    )
    files = con.execute(sql.LATE_FILES, params).df()
    shown = evidence.top_files(
        files, "seconds", lambda v: f"{v:.3g} s of I/O after the median rank's end"
    )
    return _rows(said, shown, _ranks(con, late, facts))


def _random(con, facts, t) -> pd.DataFrame:
    rows = con.execute(sql.RANDOM).df()
    per_log = rows.groupby("log_sha256")[["accesses", "random"]].sum()
    share = per_log["random"] / per_log["accesses"]
    fired = per_log[(share > t["share"]) & (per_log["random"] > t["min_count"])]
    if fired.empty:
        return _none()
    said = _said(
        fired,
        lambda r: (
            f"{r.random:,} of {r.accesses:,} traced POSIX accesses ({_pct(r.random / r.accesses)})"
            " neither start where the previous one of their rank, file and direction ended nor "
            "keep its stride"
        ),
    )
    mine = rows[rows["log_sha256"].isin(fired.index)]
    files = evidence.top_files(
        _by_file(mine, "random"), "random", lambda v: f"{v:,.0f} random accesses"
    )
    return _rows(said, files, _ranks(con, mine[mine["random"] > 0], facts))


def _bursts(con, facts, t) -> pd.DataFrame:
    phases = con.execute(sql.PHASES, {"gap": t["gap_s"]}).df()
    phases["seconds"] = phases["end"] - phases["start"]
    g = phases.groupby("log_sha256")
    jobs = g.agg(n=("phase", "size"), busy=("seconds", "sum"), first=("start", "min"))
    jobs["span"] = g["end"].max() - jobs["first"]
    fired = (jobs["n"] >= t["min_phases"]) & (jobs["span"] > 0)
    jobs = jobs[fired & (jobs["busy"] <= t["max_busy_share"] * jobs["span"])]
    if jobs.empty:
        return _none()
    order = ["log_sha256", "bytes", "start"]  # the largest phase, the earliest of equals
    largest = phases.sort_values(order, ascending=[True, False, True]).drop_duplicates("log_sha256")
    jobs = jobs.join(largest.set_index("log_sha256")[["bytes", "seconds"]])
    starts = g["start"].agg(lambda s: ", ".join(f"{v:,.3f}" for v in s.head(4)))
    said = _said(
        jobs,
        lambda r: (
            f"the traced I/O came in {r.n:,} phases more than {t['gap_s']:g} s apart (from "
            f"{starts[r.Index]}{', ...' if r.n > 4 else ''} s): I/O in flight {r.busy:.3g} s of "
            f"the {r.span:.3g} s from the first access to the last ({_pct(r.busy / r.span)}); "
            f"the largest phase moved {binary_bytes(r.bytes)} in {r.seconds:.3g} s"
        ),
    )
    traced = _fired_rows(con, sql.TRACED, jobs.index)
    files = evidence.top_files(_by_file(traced, "bytes"), "bytes", binary_bytes)
    return _rows(said, files, _ranks(con, traced, facts))


def _storms(con, facts, t) -> pd.DataFrame:
    params = {"max_bytes": t["max_bytes"], "min_count": t["min_count"]}
    rows = con.execute(sql.storms(t["window_s"]), params).df()
    if rows.empty:
        return _none()
    peak = rows.drop_duplicates("log_sha256").set_index("log_sha256")
    ranks = rows.groupby("log_sha256")["rank"].nunique()
    said = _said(
        peak,
        lambda r: (
            f"{r.n:,} POSIX reads and writes of at most {binary_bytes(t['max_bytes'])} started "
            f"within {t['window_s']:g} s (from {r.window_start:,.3f} s since the job started), "
            f"by {ranks[r.Index]:,} ranks"
        ),
    )
    by_file = _by_file(rows, "accesses")
    files = evidence.top_files(
        by_file, "accesses", lambda v: f"{v:,.0f} small accesses in the window"
    )
    return _rows(said, files, _ranks(con, rows, facts))


# --- Lustre -------------------------------------------------------------------------------


def _layouts(con, facts) -> pd.DataFrame:
    """sql.LAYOUTS, a file's writers all the job's processes where a rank -1 record wrote."""
    files = con.execute(sql.LAYOUTS).df()
    nprocs = facts.drop_duplicates("log_sha256").set_index("log_sha256")["nprocs"]
    every = files["log_sha256"].map(nprocs)
    files["writers"] = files["writers"].where(~files["all_wrote"].astype(bool), every)
    return files


def _single_stripe(con, facts, t) -> pd.DataFrame:
    files = _layouts(con, facts)
    big = (files["size"] >= t["min_mib"] * MIB) & (files["writers"] >= t["min_writers"])
    hit = files[big & (files["osts"] == 1)]
    if hit.empty:
        return _none()
    hit = hit.sort_values(["log_sha256", "size", "path"], ascending=[True, False, True])
    first = hit.drop_duplicates("log_sha256").set_index("log_sha256")
    count = hit.groupby("log_sha256").size()
    said = _said(
        first,
        lambda r: (
            f"{count[r.Index]:,} of the job's files of at least {t['min_mib']:g} MiB, written "
            f"by {t['min_writers']:,} ranks or more, lie on one OST: the largest, "
            f"{binary_bytes(r.size)} written by {r.writers:,.0f} ranks, on OST {r.ost}"
        ),
    )
    where = " (OST " + hit["ost"].astype(str) + ", " + hit["writers"].map("{:,.0f}".format)
    shown = hit.assign(path=hit["path"] + where + " writers)", measure=hit["size"].astype(float))
    return _rows(said, evidence.top_files(shown, "measure", binary_bytes))


def _small_striped(con, facts, t) -> pd.DataFrame:
    files = _layouts(con, facts)
    small = (files["size"] <= t["max_mib"] * MIB) & (files["size"] >= 0)
    hit = files[small & (files["first_stripes"] >= t["min_stripes"])]
    hit = hit[hit.groupby("log_sha256")["path"].transform("size") >= t["min_files"]]
    if hit.empty:
        return _none()
    per_log = hit.groupby("log_sha256").agg(n=("path", "size"), widest=("first_stripes", "max"))
    said = _said(
        per_log,
        lambda r: (
            f"{r.n:,} files of at most {t['max_mib']:g} MiB stripe over {t['min_stripes']:,} "
            f"OSTs or more (up to {r.widest:,.0f}): each costs an object on every OST of its "
            "stripe"
        ),
    )
    named = hit["path"] + ", " + hit["size"].map(binary_bytes)
    shown = hit.assign(path=named, measure=hit["first_stripes"].astype(float))
    return _rows(said, evidence.top_files(shown, "measure", lambda v: f"{v:,.0f} stripes"))


def _ost_imbalance(con, facts, t) -> pd.DataFrame:
    params = {"min_osts": t["min_osts"], "min_bytes": t["min_mib"] * MIB, "factor": t["factor"]}
    rows = con.execute(sql.PER_OST, params).df()
    if rows.empty:
        return _none()
    job = rows.drop_duplicates("log_sha256").set_index("log_sha256")
    said = _said(
        job,
        lambda r: (
            f"OST {r.ost} holds {binary_bytes(r.busiest)} of the job's {binary_bytes(r.total)} "
            f"({_pct(r.busiest / r.total)}), {r.busiest * r.osts / r.total:.1f} times the mean "
            f"of the {r.osts:,} OSTs its files stripe over (a file's bytes split evenly over its "
            "OSTs)"
        ),
    )
    return _rows(said, evidence.top_files(rows, "bytes", lambda v: f"{binary_bytes(v)} on it"))


def _slow_ost(con, facts, t) -> pd.DataFrame:
    params = {k: t[k] for k in ("min_osts", "share", "min_seconds")}
    rows = con.execute(sql.SLOW_OST, params).df()
    if rows.empty:
        return _none()
    slowest = rows.sort_values(["log_sha256", "rate", "ost"]).drop_duplicates("log_sha256")
    count = rows.groupby("log_sha256")["ost"].nunique()
    said = _said(
        slowest,
        lambda r: (
            f"{count[r.log_sha256]:,} of the job's {r.osts:,} OSTs moved its data far slower: "
            f"the slowest, OST {r.ost}, {r.bytes / MIB:,.1f} MiB of {r.files:,} files in "
            f"{r.seconds:,.1f} s ({r.rate / MIB:,.3g} MiB/s), {_pct(r.rate / r.median_rate)} of "
            f"the median OST's rate ({r.median_rate / MIB:,.3g} MiB/s; files on one OST)"
        ),
        slowest["log_sha256"],
    )
    files = evidence.top_files(
        _by_file(rows, "file_seconds"), "file_seconds", lambda v: f"{v:,.1f} s of I/O"
    )
    return _rows(said, files, _ranks(con, rows, facts))


# --- Slurm accounting, the facility -------------------------------------------------------


def _io_bound(con, facts, t) -> pd.DataFrame:
    sched = con.execute(sql.elapsed(sacct.sched_view_sql())).df()
    jobs = facts.drop_duplicates("log_sha256")[["log_sha256", "jobid", "io_time_slowest_s"]]
    jobs = jobs.merge(sched, on="jobid")
    io, wall = jobs["io_time_slowest_s"].astype(float), jobs["elapsed_s"].astype(float)
    hit = jobs[(wall > 0) & (io > t["share"] * wall) & (io >= t["min_seconds"])]
    if hit.empty:
        return _none()
    hit = hit.set_index("log_sha256")
    said = _said(
        hit,
        lambda r: (
            f"the slowest rank's I/O took {r.io_time_slowest_s:,.1f} s of the job's "
            f"{r.elapsed_s:,.0f} s of wall time in Slurm's accounting "
            f"({_pct(r.io_time_slowest_s / r.elapsed_s)})"
        ),
    )
    query = sql.FILE_TIME.format(counted=modules.counted(modules.DEFAULT_SCOPE, "f"))
    time = _fired_rows(con, query, hit.index)
    return _rows(said, evidence.top_files(time, "seconds", lambda v: f"{v:,.3g} s of I/O"))


def _spread(key: str, what: str) -> Callable:
    """The facility's rule over the per-job findings, per ``key`` of beyond_jobs: one finding
    per group, attached to its latest job (so that the job's account, or its code, names the
    group where a report's names are replaced: never the text)."""

    def part(n: int, jobs: int, rules) -> str:
        names = ", ".join(rules)
        if n == jobs:
            return f"every job ({n:,} of {jobs:,}) of this job's {what} has {names}"
        return f"{n:,} of the {jobs:,} jobs ({_pct(n / jobs)}) of this job's {what} have {names}"

    def find(con, facts, t) -> pd.DataFrame:
        params = {"min_jobs": t["min_jobs"], "share": t["share"]}
        rows = con.execute(sql.SPREAD.format(key=key), params).df()
        by_n = rows.groupby(["log_sha256", "n", "jobs"], sort=False)["rule"].agg(list)
        parts = pd.Series([part(n, jobs, r) for (_, n, jobs), r in by_n.items()], dtype=object)
        said = parts.groupby(by_n.index.get_level_values(0), sort=False).agg("; ".join)
        return _rows(said + "; this job is its latest")

    return find


#: every rule of this module: the DXT, Lustre and accounting rules on each job, then the
#: facility's over every per-job finding
BEYOND_RULES: tuple[Beyond, ...] = (
    Beyond(
        "straggler-rank",
        "look at the late rank: its node (slow, or shared with other work), its share of the "
        "data, its file system client; every rank waits for it at the next barrier or at "
        "the end",
        _stragglers,
        "dxt",
    ),
    Beyond(
        "random-offsets",
        "access each file in offset order, or gather the scattered requests (MPI-IO "
        "collective I/O, sorting them in memory first, a library that aggregates): random "
        "offsets defeat read-ahead, write-behind and the file system's aggregation",
        _random,
        "dxt",
    ),
    Beyond(
        "io-bursts",
        "overlap the bursts with computation (asynchronous I/O: MPI_File_iwrite_all, HDF5's "
        "async VOL, a burst buffer or node-local staging drained in the background): the "
        "job waits for the file system at each burst and leaves it idle between",
        _bursts,
        "dxt",
    ),
    Beyond(
        "small-io-storm",
        "buffer the small requests into large ones (a larger buffer, MPI-IO collective I/O, "
        "HDF5 chunking and its metadata cache): a storm of small requests at once loads the "
        "file system's servers for every job on it",
        _storms,
        "dxt",
    ),
    Beyond(
        "single-stripe-shared",
        "stripe the shared file over more OSTs before it is written (lfs setstripe -c, or "
        "the MPI-IO hint striping_factor): every writer's data goes through one OST",
        _single_stripe,
        "lustre",
    ),
    Beyond(
        "small-file-striped",
        "keep small files on one stripe (lfs setstripe -c 1 on their directory, or a "
        "progressive layout whose first component has one): each extra stripe is an "
        "object to create, lock and stat on another OST",
        _small_striped,
        "lustre",
    ),
    Beyond(
        "ost-imbalance",
        "spread the data over the OSTs (stripe the large files wider, or let Lustre place "
        "the files instead of a fixed OST index): the busiest OST bounds the job's "
        "bandwidth",
        _ost_imbalance,
        "lustre",
    ),
    Beyond(
        "slow-ost",
        "tell the site: the OST (or its server, disks or network) is slow for every job; "
        "until it is fixed, keep the files off it (lfs setstripe -o, or a pool without it)",
        _slow_ost,
        "lustre",
    ),
    Beyond(
        "io-bound",
        "the job's I/O takes most of its allocation: fix its other findings first, then "
        "overlap I/O with computation or write less (compression, fewer checkpoints)",
        _io_bound,
        "sched",
    ),
    Beyond(
        "project-wide",
        "fix it once where the project's jobs share it (their job scripts, input decks, "
        "I/O library settings): one change mends every job; the rule's own advice says how",
        _spread("account", "project"),
        "jobs",
        over_findings=True,
    ),
    Beyond(
        "code-wide",
        "fix it once in the code (or in its I/O library's settings): every job of it has "
        "the problem; the rule's own advice says how",
        _spread("code", "code"),
        "jobs",
        over_findings=True,
    ),
)


def _run(rule: Beyond, con, facts: pd.DataFrame, limits: dict, jobs: pd.DataFrame):
    """A rule's findings with the job's facts (log_path, jobid, ...), its name and advice."""
    if not _has(con, rule.table):
        return None
    rows = rule.find(con, facts, limits[rule.name])
    rows = rows[rows["log_sha256"].isin(jobs.index)]
    if rows.empty:
        return None
    out = rows.assign(rule=rule.name, drishti=None, advice=rule.advice, history=None)
    known = jobs.reindex(out["log_sha256"])
    for col in FILLED:
        out[col] = known[col].to_numpy()
    return out.astype({"drishti": object, "history": object})


def findings(con, facts: pd.DataFrame, limits: dict, found: pd.DataFrame) -> pd.DataFrame:
    """Every finding of :data:`BEYOND_RULES` on the jobs of ``facts`` (the facility's over
    ``found``, the other rules' findings, and this module's own), with ``found``'s columns
    (diagnose.COLUMNS): files and ranks where the rule names them, history null."""
    jobs = facts.drop_duplicates("log_sha256").set_index("log_sha256")
    per_job = [r for r in BEYOND_RULES if not r.over_findings]
    mine = [m for r in per_job if (m := _run(r, con, facts, limits, jobs)) is not None]
    diagnosed = pd.concat([f[["log_sha256", "rule"]] for f in (found, *mine)], ignore_index=True)
    codes = (
        jobs[["account", "start"]]
        .reset_index()
        .assign(code=diagnose_facts.code_of(jobs["exe"]).to_numpy())
    )
    con.register("diagnosed", diagnosed.astype(str))
    con.register("beyond_jobs", codes)
    try:
        for rule in (r for r in BEYOND_RULES if r.over_findings):
            if (m := _run(rule, con, facts, limits, jobs)) is not None:
                mine.append(m)
    finally:
        con.unregister("diagnosed")
        con.unregister("beyond_jobs")
    if not mine:
        return found.iloc[:0]
    return pd.concat(mine, ignore_index=True).reindex(columns=found.columns)
