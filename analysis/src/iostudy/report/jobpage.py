"""One job's page of a report (PyDarshan's ``darshan summary`` of its log, from the store): the
job and its provenance, its diagnoses first, then the I/O time per module, operations, access
sizes, files, rank balance, the job-level modules' counters (the store's jobcounters, when the
log has such modules), the heatmap and the DXT trace (the store's, when the log has one).
Everything is drawn from the store: no page reads a log again."""

from __future__ import annotations

from typing import NamedTuple

from iostudy.core import nodecount
from iostudy.core.deferred import deferred
from iostudy.logs import sharing, sizebins
from iostudy.metrics import jobdetail
from iostudy.report import dxtfigure, figures, headers, jobfigures

pd = deferred("pandas")


class JobRows(NamedTuple):
    """A job's rows of the store that its page draws: its files rows (every module), DXT
    segments and their files' paths (dxtfigure.trace_of, paths_of; None: the store has none),
    jobcounters rows (None or none: no such section), most common access sizes (module, size,
    accesses) and heatmap bins (jobdetail.heatmap_of's columns)."""

    files: pd.DataFrame
    trace: tuple[pd.DataFrame, pd.DataFrame] | None
    counters: pd.DataFrame | None
    common_sizes: pd.DataFrame
    heatmap: pd.DataFrame


#: the job's figures the record table shows, in order (jobstats.job_table's columns)
RECORD = [
    "log_path",
    "ingested_from",
    "jobid",
    "system",
    "run_id",
    "user",
    "account",
    "exe",
    "start",
    "elapsed_s",
    "nprocs",
    "nodes",
    "nodes_source",
    "interfaces",
    "strategy",
    "bytes_read",
    "bytes_written",
    "io_time_slowest_s",
    "agg_perf_mib_s",
    "mib_s_per_cn",
    "md_cost_pct",
    "key_access_size",
    "files",
    "dxt_segments",
    "flags",
    "log_sha256",
]
#: the record table's names of fields it words otherwise than every table (headers.HEADERS)
LABELS = {"log_path": "log", "nprocs": "processes (nprocs)"}


def record_table(job: pd.Series) -> pd.DataFrame:
    """The job as field/value rows, as the page shows them."""
    rows = []
    for field in RECORD:
        value = job.get(field)
        text = figures.cell_text(field, value)
        if field == "nodes_source" and value == nodecount.UNKNOWN:
            text = nodecount.WHY_UNKNOWN
        if figures.is_bytes(field) and pd.api.types.is_number(value) and pd.notna(value):
            # the exact count beside the binary prefix
            text += f" ({int(value):,} bytes)"
        label = LABELS.get(field) or headers.HEADERS.get(field, field)
        rows.append({"field": label, "value": text})
    return pd.DataFrame(rows)


def sections(job: pd.Series, rows: JobRows, findings: pd.DataFrame, prefix: str):
    """The page's sections as [(heading, [(item, frame)])]; ``rows``: the job's rows of the
    store, ``findings``: its diagnoses, ``prefix``: of the page's CSV names."""
    files, trace, counters = rows.files, rows.trace, rows.counters

    def item(kind, name, caption, df, **kw):
        return figures.item("job", kind, f"{prefix}-{name}", caption, df, **kw), df

    out = [
        (
            "Job",
            [
                item(
                    "table",
                    "record",
                    "The job as the store holds it (iostudy jobs); "
                    "MiB/s/CN and metadata % are seed 000's, as on every page.",
                    record_table(job),
                    table=True,
                    whole=True,
                )
            ],
        )
    ]
    out.append(("Diagnoses", _diagnoses(item, findings)))
    out.append(("I/O time and operations per module", _modules(item, files, job.get("flags"))))
    out.append(("Access sizes", _sizes(item, files, rows.common_sizes)))
    nprocs = int(job["nprocs"])
    out.append(("Files", _files(item, files, job.get("flags"), nprocs)))
    out.append(("Rank balance", _ranks(item, files, nprocs)))
    if counters is not None and not counters.empty:
        out.append(("Job-level modules", _job_modules(item, counters)))
    out.append(("Heatmap: bytes over time", _heatmap(item, rows.heatmap)))
    if trace is not None:
        out.append(("DXT trace: every read and write", _trace(item, *trace)))
    return out


def _diagnoses(item, findings):
    caption = (
        "The diagnosis rules that fired on this job (iostudy diagnose; thresholds in "
        "configs/diagnoses.json), with Drishti's code of the same problem (none: iostudy's "
        "own), the numbers that fired them, the files with the most of it and the ranks, "
        "whether this job's code had it before, and the advice."
    )
    if findings.empty:
        return [item("note", "diagnoses", f"{caption} None fired.", findings)]
    shown = ["rule", "drishti", "found", "files", "ranks", "history", "advice"]
    return [item("table", "diagnoses", caption, findings[shown], table=True)]


def _modules(item, files, flags):
    per_module = jobdetail.per_module(files)
    if per_module.empty:
        return [item("note", "modules", "The job's log has no file record.", per_module)]
    return [
        item(
            "figure",
            "modules",
            "I/O time per module, split into read, write and metadata (seconds summed over "
            "the processes; MPI-IO's, HDF5's and PnetCDF's time includes the POSIX calls "
            "they made, DFS's the DAOS calls), with bytes and operations; metadata % of "
            "the module's I/O time.",
            jobfigures.not_recorded(per_module, flags),
            fig=jobfigures.time_split_figure(per_module),
            table=True,
        )
    ]


def _sizes(item, files, common):
    bins = jobdetail.size_bins(files)
    out = []
    if bins["accesses"].sum() > 0:
        moved = bins[bins.groupby("module")["accesses"].transform("sum") > 0]  # a panel each
        out.append(
            item(
                "figure",
                "sizes",
                "Accesses per size bin: POSIX's, DFS's and DAOS's are what reached "
                "storage; MPI-IO's, HDF5 datasets' and PnetCDF variables' the sizes the "
                f"application asked for ({sizebins.EDGES}).",
                bins,
                fig=jobfigures.sizes_figure(moved),
            )
        )
    caption = (
        "The most common access sizes per module (Darshan's ACCESS1..4 counters), as ingest "
        "stored them; none where the job's modules keep no such counters (STDIO)."
    )
    out.append(item("table", "common-sizes", caption, common, table=True))
    return out


def _files(item, files, flags, nprocs):
    table = jobdetail.file_table(files, nprocs)
    if table.empty:
        return [item("note", "files", "No file record.", table)]
    by_bytes = table.sort_values(["bytes", "path"], ascending=[False, True])
    by_time = table.sort_values(["io_time", "path"], ascending=[False, True])
    by_bytes, by_time = (jobfigures.not_recorded(t, flags) for t in (by_bytes, by_time))
    top = len(figures.page_rows(table))
    of_job = processes_text(nprocs)
    return _datasets(item, files, flags, nprocs) + [
        item(
            "table",
            "files-by-bytes",
            f"The {top} of {len(table):,} files (per module) that "
            "moved the most bytes, each with its sharing class and the processes that "
            f"accessed it (of the job's {of_job}); every file in the CSV.",
            by_bytes,
            table=True,
            hide=["read_time", "write_time", "meta_time"],
        ),
        item(
            "table",
            "files-by-time",
            f"The {top} files that took the most I/O time (summed "
            "over the processes); every file in the CSV.",
            by_time,
            table=True,
            hide=["bytes_read", "bytes_written", "opens"],
        ),
    ]


# What the records of a module of jobdetail.IN_FILES are, as a caption names them
_IN_FILES = {"H5D": "HDF5 datasets", "PNETCDF_VAR": "PnetCDF variables"}


def _datasets(item, files, flags, nprocs):
    """The HDF5 datasets' and PnetCDF variables' table, each with its file (none: no item)."""
    table = jobdetail.dataset_table(files, nprocs)
    if table.empty:
        return []
    top = len(figures.page_rows(table))
    kinds = " and ".join(
        kind for module, kind in _IN_FILES.items() if (table["module"] == module).any()
    )
    caption = (
        f"The {top} of {len(table):,} {kinds} that moved the most bytes, as the application "
        "asked the library for them, each with the file it is in (its record's file_rec_id: "
        "the file's H5F or PNETCDF_FILE record); every one in the CSV."
    )
    table = jobfigures.not_recorded(table, flags)
    hide = ["read_time", "write_time", "meta_time", "opens"]
    return [item("table", "datasets", caption, table, table=True, hide=hide)]


# The layers a job's totals count (iostudy.logs.modules.DEFAULT_SCOPE), as a caption names them
_MOVED = "POSIX, STDIO, and DFS or DAOS where the I/O bypassed POSIX"


def processes_moved(job: pd.Series, files: pd.DataFrame) -> str:
    """How many of the job's processes moved bytes in records of their own, when some did and
    some did not ("295 of 496 processes moved bytes in records of their own"), else "": a page
    says the job's processes (nprocs) as processes, and any other count of them of what."""
    nprocs = int(job["nprocs"])
    _, s = jobdetail.rank_balance(files, nprocs)
    if not 0 < s["moved"] < nprocs:
        return ""
    return f"{processes_text(s['moved'], nprocs)} moved bytes in records of their own"


def processes_text(n: int, nprocs: int | None = None) -> str:
    """n processes in words, of the job's nprocs when given (iostudy.logs.sharing's
    processes_text: "1 process", "all 4 processes", "295 of 496 processes")."""
    text = f"{n:,}" if nprocs is None else sharing.processes_text(n, nprocs)
    return f"{text} process{'' if n == 1 else 'es'}"


def _ranks(item, files, nprocs):
    per_rank, s = jobdetail.rank_balance(files, nprocs)
    where = f"the layers that moved the bytes ({_MOVED})"
    everyone = f"records of {processes_text(nprocs, nprocs)}"
    if not s["records"]:
        return [item("note", "ranks", f"The job's log has no record of {where}.", per_rank)]
    if per_rank.empty:
        note = (
            f"No process has records of its own in {where}: only {everyone}, whose slowest "
            f"rank took {s['shared_slowest_s']:.3g} s."
        )
        return [item("note", "ranks", note, per_rank)]
    if nprocs == 1:  # its records are its one process's, whatever their rank
        note = (
            f"The job's one process (rank {s['slowest_rank']}) took {s['slowest_s']:.3g} s of "
            f"I/O time in {where}."
        )
        return [item("note", "ranks", note, per_rank)]
    caption = (
        f"Each process's I/O time in its own records of {where}: "
        f"{processes_text(s['ranks'], nprocs)} have records of their own, "
        f"{processes_text(s['moved'], nprocs)} moved bytes in them; the fastest rank "
        f"{s['fastest_rank']} ({s['fastest_s']:.3g} s), the slowest rank {s['slowest_rank']} "
        f"({s['slowest_s']:.3g} s), mean {s['mean_s']:.3g} s, variance {s['variance_s2']:.3g} "
        f"s²"
    )
    if s["shared_slowest_s"] > 0:
        caption += f"; {everyone} add their slowest rank's {s['shared_slowest_s']:.3g} s"
    if len(per_rank) < 2:  # one bar says no more than the caption
        return [item("note", "ranks", f"{caption}.", per_rank)]
    fig = jobfigures.ranks_figure(per_rank)
    return [item("figure", "ranks", f"{caption}.", per_rank, fig=fig)]


# What each table of the job-level modules' section shows (jobdetail.job_modules' names)
JOB_MODULES = {
    "BG/Q": "The Blue Gene/Q block the job ran on (its BG/Q record, as darshan-parser names the "
    "counters: nodes, ranks per node, memory per node in MiB, the torus' dimensions).",
    "APXC": "The Cray XC job (AutoPerf's APXC header): the groups, chassis and blades of its "
    "nodes, their memory and cluster modes (and 1 when every node had the same), the "
    "application id.",
    "APXC routers": "Each Aries router of the job's nodes (an APXC record): its rank and place, "
    "the flits that came in (its INCOMING_FLIT counters) and its stalls (its "
    "STALL counters), the most stalls first.",
    "APMPI operations": "Each MPI operation the ranks called (AutoPerf's APMPI): calls, bytes "
    "and time summed over the ranks, the longest call, and the time waiting "
    "to synchronize before it (when measured), the most time first.",
    "APMPI ranks": "Each rank's node (MPI_PROCESSOR_NAME) and its time in MPI, the most first: "
    "their spread is the job's imbalance.",
}


def _job_modules(item, counters):
    out = []
    for name, table in jobdetail.job_modules(counters).items():
        slug = name.lower().replace("/", "").replace(" ", "-")
        caption = f"{JOB_MODULES[name]} Every counter in the store's jobcounters table."
        out.append(item("table", slug, caption, table, table=True))
    return out


def _heatmap(item, hm):
    caption = (
        "Bytes each rank moved in each time bin, per API, from the log's HEATMAP "
        "records (as PyDarshan's job summary draws them)"
    )
    if hm.empty:
        return [item("note", "heatmap", f"{caption}: the log has none.", hm)]
    return [item("figure", "heatmap", f"{caption}.", hm, fig=jobfigures.heatmap_figure(hm))]


def _trace(item, seg: pd.DataFrame, paths: pd.DataFrame):
    table = dxtfigure.summary(seg, paths)
    what = f"{len(seg):,} segments the store holds (iostudy jobs' dxt_segments)"
    timeline = dxtfigure.timeline_figure(seg)
    out = [
        item(
            "figure",
            "dxt-timeline",
            f"Each rank's reads and writes over time, as DXT Explorer draws them: {what}; "
            "a pixel is coloured where an operation was under way. The trace per rank, file "
            "and operation in the CSV.",
            table,
            fig=timeline,
        )
    ]
    if files := dxtfigure.top_files(seg):
        out.append(
            item(
                "figure",
                "dxt-offsets",
                "The offset each access started at over time, in the "
                f"{_files_phrase(len(files))} that moved the most bytes in the trace.",
                table[table["record_id"].isin([rid for _, rid in files])],
                fig=dxtfigure.offsets_figure(
                    seg, files, dict(zip(paths["record_id"], paths["path"], strict=True))
                ),
            )
        )
    return out


def _files_phrase(n: int) -> str:
    return "file" if n == 1 else f"{n} files"
