"""Job metadata from Slurm accounting (sacct); Darshan coverage per project (seed 000 Table II).

``iostudy sacct import FILE... --store STORE`` reads ``sacct --parsable2`` output, header line
included, into the store's ``sched`` table: one row per job allocation (steps such as ``123.batch``
or ``123.0`` are left out), with the account, nodes, cores, elapsed time, start and end.
``iostudy sacct import --live`` runs sacct itself. Each import is one Parquet part,
``STORE/sched/sacct-<name>.parquet`` (name: the file's stem, or ``live-<UTC time>``); importing
the same file again replaces its part. The ``sacct-`` prefix keeps the parts apart from the empty
per-run parts that ingest writes for every table. When several parts hold the same job
(cluster, jobid), the one imported last counts: :func:`sched_view_sql`.

sacct prints times in the local time of the machine it runs on. The live import runs it with
TZ=UTC; a file is taken as UTC unless ``--timezone`` says otherwise (or its times carry an offset,
as with ``SLURM_TIME_FORMAT=%FT%T%z``).

:func:`coverage` is seed 000's Table II: per Slurm account, the jobs and core-hours that at least
one log covers, out of all, and which I/O interfaces those logs used.
"""

from __future__ import annotations

import os
import re
import subprocess
from datetime import datetime, timedelta, timezone
from pathlib import Path

from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.progress import QUIET, Progress
from iostudy.logs import modules
from iostudy.store import imports
from iostudy.store import store as store_mod

pd = deferred("pandas")
pa = deferred("pyarrow")

SCHEMA: pa.Schema = store_mod.TABLES["sched"]
TABLE = "sched"

# The columns iostudy asks sacct for (--format). JobIDRaw gives an array task its own id, the one
# its logs record (SLURM_JOB_ID); JobID tells steps apart.
SACCT_FORMAT = (
    "JobID,JobIDRaw,Cluster,Account,User,Partition,NNodes,NCPUS,ElapsedRaw,Start,End,State"
)
SACCT_TIMEOUT = 300.0

# Required columns: each tuple is the alternatives, the first one preferred.
REQUIRED = (
    ("JobIDRaw", "JobID"),
    ("Account",),
    ("NNodes",),
    ("NCPUS", "AllocCPUS"),
    ("ElapsedRaw", "Elapsed"),
    ("Start",),
)
# sacct's words for "no time": a job not started yet, or still running.
_NO_TIME = {"", "unknown", "none"}
_TIME = re.compile(
    r"^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}:\d{2})(?:\.\d+)?(?:(Z)|([+-])(\d{2}):?(\d{2}))?$"
)
_ELAPSED = re.compile(r"^(?:(\d+)-)?(?:(\d+):)?(\d+):(\d+)$")
_DIGITS = re.compile(r"^\d+$")
# A job id as a data line of --noheader output starts: 123, 123_4, 123.batch, 123+0, 123_[1-3].
_JOB_ID_LIKE = re.compile(r"^\d+([_+.].*)?$")

# Module tokens (store.TABLES["files"]) -> seed 000's API letters, in the seed's order: the
# high-level libraries first, POSIX last (e.g. "H,M,S,P").
ALL = "all"
NO_ACCOUNTING = "(no accounting)"
NO_ACCOUNT = "(no account)"
COVERAGE_COLUMNS = [
    "account",
    "jobs_instrumented",
    "jobs_total",
    "job_coverage_pct",
    "core_hours_instrumented",
    "core_hours_total",
    "core_hour_coverage_pct",
    "apis",
]


class SacctError(BadInput):
    """sacct output that cannot be read at all (no header, a required column missing), or a
    live sacct that is missing or fails; the message names the file or the command."""


# -- parsing -------------------------------------------------------------------------------------


def _timestamp(text: str, tz) -> datetime | None:
    """A UTC datetime without a time zone from sacct's time; None for Unknown/None/empty.
    Naive times are in tz (None: UTC). Raises ValueError when it is not a time."""
    text = text.strip()
    if text.lower() in _NO_TIME:
        return None
    m = _TIME.match(text)
    if not m:
        raise ValueError(f"not a time: {text!r}")
    ts = datetime.strptime(f"{m[1]}T{m[2]}", "%Y-%m-%dT%H:%M:%S")
    if m[3]:
        ts = ts.replace(tzinfo=timezone.utc)
    elif m[4]:
        offset = timedelta(hours=int(m[5]), minutes=int(m[6]))
        ts = ts.replace(tzinfo=timezone(offset if m[4] == "+" else -offset))
    elif tz is not None:
        ts = ts.replace(tzinfo=tz)
    if ts.tzinfo is not None:
        ts = ts.astimezone(timezone.utc).replace(tzinfo=None)
    return ts


def _elapsed(text: str) -> int:
    """Seconds of sacct's Elapsed, [DD-][HH:]MM:SS."""
    m = _ELAPSED.match(text.strip())
    if not m:
        raise ValueError(f"Elapsed is not [DD-]HH:MM:SS: {text!r}")
    days, hours, minutes, seconds = (int(g or 0) for g in m.groups())
    return ((days * 24 + hours) * 60 + minutes) * 60 + seconds


def _count(text: str, column: str) -> int:
    if not _DIGITS.match(text.strip()):
        raise ValueError(f"{column} is not a count: {text!r}")
    return int(text)


def _header(line: str, name: str) -> dict[str, int]:
    """Column (lower case) -> index, from sacct's header line; SacctError when it is none."""
    names = [n.strip().lower() for n in line.split("|")]
    columns = {}
    for i, n in enumerate(names):
        if n:  # --parsable (not 2) ends every line with "|": an empty last name
            columns.setdefault(n, i)
    if "jobid" not in columns and "jobidraw" not in columns:
        if _JOB_ID_LIKE.match(names[0]):
            raise SacctError(
                f"{name}: no header line (captured with --noheader?): the columns cannot be "
                "known; capture with `sacct --parsable2` and without --noheader"
            )
        raise SacctError(
            f"{name}: not `sacct --parsable2` output: the first line is not a header naming "
            "JobID or JobIDRaw"
        )
    missing = [
        " or ".join(alts) for alts in REQUIRED if not any(a.lower() in columns for a in alts)
    ]
    if missing:
        raise SacctError(f"{name}: the header lacks required columns: {'; '.join(missing)}")
    return columns


def parse(text: str, source: str, *, tz=None, name: str | None = None):
    """The ``sched`` rows of ``sacct --parsable2`` output (with its header line) and the
    problems of the lines that could not be used: ``(rows, problems, steps)``.

    Columns may come in any order, extra ones are ignored. Step lines (a JobID with a ".") are
    left out and counted in ``steps``. Each problem names the file, the line number and why,
    e.g. ``"x.txt:7: NNodes is not a count: 'n1'"``; such a line is skipped. A job that appears
    twice keeps its later line, and the earlier one is reported as a problem. ``source`` goes in
    the rows' source column; ``name`` is what the messages call the input (default source); tz:
    the time zone of times without an offset (default UTC). Raises SacctError when the header is
    missing (``--noheader``) or lacks a required column.
    """
    name = name or source
    lines = text.splitlines()
    first = next((i for i, line in enumerate(lines) if line.strip()), None)
    if first is None:
        raise SacctError(f"{name}: empty: no sacct header line")
    cols = _header(lines[first], name)
    width = len(lines[first].split("|"))
    rows: dict[tuple, tuple[int, dict]] = {}
    problems: list[str] = []
    steps = 0
    for number, line in enumerate(lines[first + 1 :], first + 2):
        if not line.strip():
            continue
        fields = line.split("|")
        if len(fields) != width:
            problems.append(f"{name}:{number}: {len(fields)} fields, the header has {width}")
            continue
        if _is_step(cols, fields):
            steps += 1
            continue
        try:
            row = _row(cols, fields, source, tz)
        except ValueError as exc:
            problems.append(f"{name}:{number}: {exc}")
            continue
        key = (row["cluster"], row["jobid"])
        if key in rows:
            earlier = rows[key][0]
            problems.append(
                f"{name}:{earlier}: job {row['jobid']} appears again on line {number}, "
                "which replaces this line"
            )
        rows[key] = (number, row)
    return [row for _, row in rows.values()], problems, steps


def _get(cols: dict[str, int], fields: list[str], *alternatives: str) -> str | None:
    """A line's field of the first of the columns (lower case) the header has; None when it has
    none of them."""
    for a in alternatives:
        if a in cols:
            return fields[cols[a]].strip()
    return None


def _is_step(cols: dict[str, int], fields: list[str]) -> bool:
    """Whether a line is a job step's (123.batch, 123.0), not an allocation's."""
    return "." in (_get(cols, fields, "jobid") or "") or "." in (
        _get(cols, fields, "jobidraw") or ""
    )


def _job_id(cols: dict[str, int], fields: list[str]) -> int:
    """The line's own job id: JobIDRaw, else JobID when it is a plain number."""
    raw = _get(cols, fields, "jobidraw")
    ident = raw if raw is not None else _get(cols, fields, "jobid")
    if not _DIGITS.match(ident):
        if raw is None and _JOB_ID_LIKE.match(ident):
            raise ValueError(
                f"JobID {ident!r} (an array task or a heterogeneous job component) and "
                "no JobIDRaw column: its own job id is unknown"
            )
        raise ValueError(f"not a job id: {ident!r}")
    return int(ident)


def _row(cols: dict[str, int], fields: list[str], source: str, tz) -> dict:
    """The ``sched`` row of a job's line; ValueError naming the first field that is not what
    sacct writes there."""

    def get(*alternatives):
        return _get(cols, fields, *alternatives)

    jobid = _job_id(cols, fields)
    cores_col = "ncpus" if "ncpus" in cols else "alloccpus"
    cores_name = "NCPUS" if cores_col == "ncpus" else "AllocCPUS"
    if "elapsedraw" in cols:
        elapsed = _count(get("elapsedraw"), "ElapsedRaw")
    else:
        elapsed = _elapsed(get("elapsed"))
    state = get("state")
    return {
        "cluster": get("cluster") or None,
        "jobid": jobid,
        "account": get("account") or None,
        "user": get("user") or None,
        "partition": get("partition") or None,
        "nodes": _count(get("nnodes"), "NNodes"),
        "cores": _count(get(cores_col), cores_name),
        "elapsed_s": elapsed,
        "start": _timestamp(get("start"), tz),
        "end": _timestamp(get("end") or "", tz),
        # "CANCELLED by 0" -> CANCELLED: the uid says nothing about the job's I/O.
        "state": state.split()[0] if state else None,
        "source": source,
    }


# -- the store -----------------------------------------------------------------------------------


def part_name(source: str) -> str:
    """The Parquet part's name (without .parquet) of an import from source (a file's stem or
    ``live-<time>``): ``sacct-`` and the name with anything but [A-Za-z0-9._-] made "_"."""
    return "sacct-" + re.sub(r"[^A-Za-z0-9._-]", "_", source)


def sched_view_sql(table: str = TABLE) -> str:
    """SQL of the sched table with one row per (cluster, jobid): the one imported last (ties:
    the greater source name)."""
    return (
        f'SELECT * FROM "{table}" QUALIFY row_number() OVER (PARTITION BY cluster, jobid '
        "ORDER BY imported DESC NULLS LAST, source DESC NULLS LAST) = 1"
    )


# Each log's job and the modules its header lists (PyDarshan names; '' for none): the interfaces
# a job used are those the jobs table shows (iostudy.logs.modules), records kept or not.
LOGGED = """
        SELECT j.jobid, coalesce(CAST(j.jobid AS VARCHAR), 'log ' || j.log_sha256) AS job,
               unnest(string_split(coalesce(j.modules, ''), '+')) AS module
        FROM jobs j
    """


def _pct(part, whole):
    return 100.0 * part / whole if whole else None


def coverage(con, cluster: str | None = None) -> pd.DataFrame:
    """Seed 000's Table II: per project (Slurm account) the jobs and core-hours instrumented,
    of all, and the APIs the instrumented jobs' logs used (letters H, N, M, S, P: HDF5, PnetCDF,
    MPI-IO, STDIO, POSIX); then a row "(no accounting)" for the jobs of logs that have no sched
    row (only when there are such), and a total row "all" over the accounted jobs.

    con: a DuckDB connection with relations jobs (jobid, log_sha256, modules: the interfaces are
    those of the modules its logs' headers list, as the jobs table shows them) and sched (the
    store's columns, deduplicated here with :func:`sched_view_sql`). A job is an
    allocation that started (start not null: a job cancelled while pending used nothing); it is
    instrumented when at least one log's jobid is its jobid. Core-hours: cores * elapsed_s / 3600.
    Jobs are matched by jobid alone: give cluster when sched holds several clusters. The
    "(no accounting)" row counts jobs (distinct jobids; a log without one counts alone) and has
    no totals or core-hours: nothing about their allocation is known.
    """
    where, params = "start IS NOT NULL", []
    if cluster is not None:
        where += " AND cluster = ?"
        params.append(cluster)
    per_account = con.execute(_per_account_sql(where), params).fetchall()
    unaccounted, unaccounted_modules = con.execute(_unaccounted_sql(where), params).fetchone()
    records = _coverage_records(per_account, unaccounted, unaccounted_modules)
    frame = pd.DataFrame.from_records(records, columns=COVERAGE_COLUMNS)
    dtypes = dict.fromkeys(COVERAGE_COLUMNS[1:3], "Int64")
    dtypes |= dict.fromkeys(COVERAGE_COLUMNS[3:7], "Float64")
    return frame.astype(dtypes)


def _per_account_sql(where: str) -> str:
    """Per account of the allocations that match where: jobs and core-hours instrumented and
    all, and the modules of the instrumented jobs' logs (largest core-hours first)."""
    return f"""
    WITH alloc AS (
        SELECT coalesce(account, '{NO_ACCOUNT}') AS account, jobid,
               cores * elapsed_s / 3600.0 AS core_hours
        FROM ({sched_view_sql()}) WHERE {where}
    ),
    logged AS ({LOGGED}),
    instrumented AS (SELECT DISTINCT jobid FROM logged WHERE jobid IS NOT NULL),
    per_job AS (
        SELECT a.account, a.jobid, a.core_hours, i.jobid IS NOT NULL AS covered
        FROM alloc a LEFT JOIN instrumented i ON i.jobid = a.jobid
    ),
    modules AS (
        SELECT DISTINCT a.account, l.module
        FROM alloc a JOIN logged l ON l.jobid = a.jobid WHERE l.module <> ''
    )
    SELECT p.account,
           count(*) FILTER (WHERE p.covered) AS jobs_instrumented,
           count(*) AS jobs_total,
           coalesce(sum(p.core_hours) FILTER (WHERE p.covered), 0) AS core_hours_instrumented,
           coalesce(sum(p.core_hours), 0) AS core_hours_total,
           (SELECT list(m.module) FROM modules m WHERE m.account = p.account) AS modules
    FROM per_job p GROUP BY p.account
    ORDER BY core_hours_total DESC, p.account
    """


def _unaccounted_sql(where: str) -> str:
    """The jobs of logs that no allocation matching where accounts for, and their modules."""
    return f"""
    WITH alloc AS (SELECT jobid FROM ({sched_view_sql()}) WHERE {where}),
    logged AS ({LOGGED})
    SELECT count(DISTINCT job), list(DISTINCT module) FILTER (WHERE module <> '')
    FROM logged l WHERE NOT EXISTS (SELECT 1 FROM alloc a WHERE a.jobid = l.jobid)
    """


def _coverage_records(per_account, unaccounted: int, unaccounted_modules) -> list[tuple]:
    """Table II's rows (COVERAGE_COLUMNS) from the two queries' answers: the accounts, then
    "(no accounting)" when there are such jobs, then the total "all" of the accounted ones."""
    records = []
    all_modules: set[str] = set()
    for account, n_in, n_all, ch_in, ch_all, names in per_account:
        all_modules |= set(names or ())
        records.append(
            (
                account,
                n_in,
                n_all,
                _pct(n_in, n_all),
                ch_in,
                ch_all,
                _pct(ch_in, ch_all),
                modules.letters(names or ()),
            )
        )
    totals = [sum(r[i] for r in records) for i in (1, 2, 4, 5)]
    if unaccounted:
        records.append(
            (
                NO_ACCOUNTING,
                unaccounted,
                None,
                None,
                None,
                None,
                None,
                modules.letters(unaccounted_modules or ()),
            )
        )
    n_in, n_all, ch_in, ch_all = totals
    records.append(
        (
            ALL,
            n_in,
            n_all,
            _pct(n_in, n_all),
            float(ch_in),
            float(ch_all),
            _pct(ch_in, ch_all),
            modules.letters(all_modules),
        )
    )
    return records


# -- reading sacct and importing -------------------------------------------------------------------


def run_sacct(starttime=None, endtime=None, clusters=None, timeout=SACCT_TIMEOUT) -> str:
    """The output of ``sacct --allusers --allocations --parsable2 --format=SACCT_FORMAT`` (with
    -S/-E/--clusters when given), run with TZ=UTC so that its times are UTC."""
    cmd = ["sacct", "--allusers", "--allocations", "--parsable2", f"--format={SACCT_FORMAT}"]
    if starttime:
        cmd += ["--starttime", starttime]
    if endtime:
        cmd += ["--endtime", endtime]
    if clusters:
        cmd += ["--clusters", clusters]
    # SLURM_TIME_FORMAT=standard: a user's own format would not parse.
    env = dict(os.environ, TZ="UTC", SLURM_TIME_FORMAT="standard")
    try:
        proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    except FileNotFoundError:
        raise SacctError("sacct not found: Slurm's client commands are not on PATH") from None
    except subprocess.TimeoutExpired:
        raise SacctError(f"sacct did not finish in {timeout:g} s: {' '.join(cmd)}") from None
    if proc.returncode != 0:
        why = (proc.stderr.strip() or proc.stdout.strip() or "no output").splitlines()[-1]
        raise SacctError(f"sacct exited {proc.returncode}: {why} ({' '.join(cmd)})")
    return proc.stdout


def _zone(name: str | None):
    if not name:
        return None
    from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

    try:
        return ZoneInfo(name)
    except (ZoneInfoNotFoundError, ValueError):
        raise SacctError(f"--timezone {name}: no such time zone") from None


def read_inputs(files, name=None, zone=None) -> list[tuple]:
    """(part name, rows, problems, step lines) of each sacct output file (:func:`parse`), all
    read before any is written, so that a bad one changes nothing; ``name``: the part's name of
    one file (default: the file's stem); ``zone``: the time zone of times without an offset."""
    tz = _zone(zone)
    inputs = []
    for path in files:
        try:
            text = Path(path).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SacctError(f"{path}: cannot read: {exc.strerror or exc}") from None
        rows, problems, steps = parse(text, Path(path).name, tz=tz, name=str(path))
        inputs.append((part_name(name or Path(path).stem), rows, problems, steps))
    return inputs


def read_live(starttime=None, endtime=None, clusters=None) -> list[tuple]:
    """The inputs (as :func:`read_inputs`) of sacct run here, in a part named after now."""
    now = datetime.now(timezone.utc)
    rows, problems, steps = parse(
        run_sacct(starttime, endtime, clusters), "live", name="sacct (live)"
    )
    return [(part_name(f"live-{now:%Y%m%dT%H%M%SZ}"), rows, problems, steps)]


def import_inputs(store_root, inputs: list[tuple], progress: Progress = QUIET) -> str:
    """Writes each input's rows as its part of the sched table (:func:`imports.import_parts`);
    returns where they went. Two inputs of one part name are refused."""
    names = [name for name, *_ in inputs]
    if len(set(names)) < len(names):
        raise SacctError(
            f"files with the same stem would replace each other's part: "
            f"{', '.join(sorted({n for n in names if names.count(n) > 1}))}"
        )
    parts = [(name, rows) for name, rows, _, _ in inputs]
    return imports.import_parts(store_root, TABLE, parts, progress)
