"""Seed 000's workload figures and tables (iostudy.metrics.workload) on a small hand-made job table
whose expected values are worked out by hand below."""

import csv
import io
import xml.etree.ElementTree as ET
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from matplotlib.figure import Figure

from iostudy.cli import cli
from iostudy.core import numfmt
from iostudy.logs import modules
from iostudy.metrics import jobstats, workload, workload_figures, workload_tables
from iostudy.report import figures
from iostudy.store import store
from tests import logcraft
from tests.testdata import DARSHAN_LOGS, RELEASE_350

MIB = 2**20
SIZES = list(workload_tables.SIZE_BINS)


def job(log, account, nprocs, read_mib, written_mib, interfaces, strategy, **extra):
    """One row of jobstats.job_table: the columns the contract promises, zero unless given."""
    row = {
        "log_path": f"logs/{log}.darshan",
        "run_id": "tree",
        "log_sha256": log * 8,
        "jobid": len(log),
        "system": "test",
        "uid": 1000,
        "user": "alice",
        "account": account,
        "exe": f"/home/alice/{log} -n {nprocs}",
        "start": pd.Timestamp("2026-01-01"),
        "nprocs": nprocs,
        "nodes": max(nprocs // 64, 1),
        "cores": nprocs,
        "elapsed_s": 60.0,
        "module": "POSIX+STDIO",
        "bytes_read": read_mib * MIB,
        "bytes_written": written_mib * MIB,
        "io_time_slowest_s": 1.0,
        "agg_perf_mib_s": 1.0,
        "mib_s_per_cn": np.nan,
        "md_cost_pct": 0.0,
        "files": 0,
        "files_per_proc": 0.0,
        "creates_per_proc": 0.0,
        "seq_pct": 0.0,
        "aligned_pct": 0.0,
        "mib_per_proc": (read_mib + written_mib) / nprocs,
        "interfaces": interfaces,
        "strategy": strategy,
        "unique_bytes": 0,
        "shared_bytes": 0,
        "partial_bytes": 0,
        "unique_files": 0,
        "shared_files": 0,
        "partial_files": 0,
        "io_procs": nprocs,
        "procs_per_file": 1,
    }
    row |= {f"{op}_{b}": 0 for op in ("read", "write") for b in SIZES}
    return row | extra


# Seven jobs of three projects (and one without an account). Large (>= 1,024 processes and
# >= 500 MiB moved): C, D and G, all of physics; E moved 400 MiB, F nothing.
JOBS = [
    job("a", "climate", 1, 100, 0, "POSIX", "N:N", unique_bytes=100 * MIB, files=1),
    job("b", "climate", 3, 0, 50, "POSIX+STDIO", "rank-0", unique_bytes=50 * MIB, files=2),
    job(
        "c",
        "physics",
        2048,
        1024,
        512,
        "POSIX+MPI-IO",
        "N:1",
        shared_bytes=1536 * MIB,
        files=1,
        mib_s_per_cn=2.0,
        md_cost_pct=10.0,
        files_per_proc=0.5,
        creates_per_proc=0.25,
        seq_pct=90.0,
        aligned_pct=10.0,
        read_0_100=50,
        read_1m_4m=100,
        write_1m_4m=50,
    ),
    job(
        "d",
        "physics",
        4096,
        600,
        0,
        "POSIX+MPI-IO",
        "N:M",
        partial_bytes=600 * MIB,
        files=512,
        mib_s_per_cn=4.0,
        md_cost_pct=20.0,
        files_per_proc=0.125,
        creates_per_proc=0.0,
        seq_pct=60.0,
        aligned_pct=40.0,
        read_4m_10m=150,
    ),
    job(
        "e",
        None,
        1024,
        400,
        0,
        "STDIO",
        "N:N",
        unique_bytes=400 * MIB,
        files=1024,
        mib_s_per_cn=9.0,
    ),
    job("f", "physics", 1024, 0, 0, "", "none"),
    job(
        "g",
        "physics",
        2048,
        0,
        1024,
        "POSIX",
        "N:1",
        shared_bytes=1024 * MIB,
        files=1,
        mib_s_per_cn=1.0,
        md_cost_pct=30.0,
        files_per_proc=0.25,
        creates_per_proc=0.5,
        seq_pct=30.0,
        aligned_pct=70.0,
        write_1m_4m=250,
    ),
]


@pytest.fixture
def jobs():
    return pd.DataFrame(JOBS)


def module_bytes():
    """Bytes per job through each module: C through POSIX and MPI-IO, G through POSIX."""
    rows = [
        ("cccccccc", "POSIX", 1024 * MIB, 512 * MIB),
        ("cccccccc", "MPI-IO", 1024 * MIB, 512 * MIB),
        ("gggggggg", "POSIX", 0, 1024 * MIB),
        ("aaaaaaaa", "POSIX", 100 * MIB, 0),
    ]
    return pd.DataFrame(rows, columns=["log_sha256", "interface", "bytes_read", "bytes_written"])


def pick(frame, **where):
    mask = pd.Series(True, index=frame.index)
    for column, value in where.items():
        mask &= frame[column] == value
    assert mask.sum() == 1, (where, mask.sum())
    return frame[mask].iloc[0]


def test_size_bins_are_powers_of_two():
    bins = workload_tables.size_bins(pd.Series([1, 2, 3, 4, 1023, 1024, 2047, 2048, 0, None]))
    assert bins["procs_min"].tolist() == [1, 2, 2, 4, 512, 1024, 1024, 2048, 1, 1]
    assert bins["procs_range"].tolist() == [
        "1",
        "2-3",
        "2-3",
        "4-7",
        "512-1023",
        "1024-2047",
        "1024-2047",
        "2048-4095",
        "1",
        "1",
    ]


def test_interfaces_by_size(jobs):
    t = workload_tables.interfaces_by_size(jobs, module_bytes())
    assert list(t.columns) == workload_tables.SHARE_COLUMNS
    # Bins: 1 (a), 2-3 (b), 1024-2047 (e, f), 2048-4095 (c, g), 4096-8191 (d).
    assert sorted(t["procs_range"].unique()) == ["1", "1024-2047", "2-3", "2048-4095", "4096-8191"]
    # 1024: e used STDIO, f nothing -> STDIO 1 of 2 jobs, POSIX none.
    assert pick(t, procs_min=1024, measure="jobs", category="STDIO")[["value", "pct"]].tolist() == [
        1,
        50.0,
    ]
    assert pick(t, procs_min=1024, measure="jobs", category="POSIX")["pct"] == 0
    # 2048: c and g used POSIX, c MPI-IO.
    assert pick(t, procs_min=2048, measure="jobs", category="POSIX")["pct"] == 100
    assert pick(t, procs_min=2048, measure="jobs", category="MPI-IO")["pct"] == 50
    assert pick(t, procs_min=2048, measure="jobs", category="MPI-IO")["jobs"] == 2
    # 2048 bytes: read 1024 MiB (c), written 512 + 1024 MiB. MPI-IO: c's 1024 read, 512 written.
    r = pick(t, procs_min=2048, measure="bytes read", category="MPI-IO")
    assert (r["value"], r["pct"]) == (1024 * MIB, 100.0)
    w = pick(t, procs_min=2048, measure="bytes written", category="MPI-IO")
    assert w["value"] == 512 * MIB and w["pct"] == pytest.approx(100 * 512 / 1536)
    assert pick(t, procs_min=2048, measure="bytes written", category="POSIX")["pct"] == 100
    # Bin 1 wrote nothing: a share of nothing is no number.
    assert np.isnan(pick(t, procs_min=1, measure="bytes written", category="POSIX")["pct"])
    # Interfaces the module table does not have (STDIO, HDF5, PnetCDF here) have no byte rows.
    assert set(t.loc[t["measure"] != "jobs", "category"]) == {"POSIX", "MPI-IO"}
    # Without per-module bytes: the job shares alone.
    assert set(workload_tables.interfaces_by_size(jobs)["measure"]) == {"jobs"}


def test_strategy_by_size(jobs):
    t = workload_tables.strategy_by_size(jobs)
    assert pick(t, procs_min=1024, measure="jobs", category="N:N")["pct"] == 50
    assert pick(t, procs_min=1024, measure="jobs", category="none")["pct"] == 50
    assert pick(t, procs_min=2, measure="jobs", category="rank-0")["value"] == 1
    assert pick(t, procs_min=2048, measure="jobs", category="N:1")["pct"] == 100
    # Bytes: 2048 bin all shared (c 1536 + g 1024 MiB); 4096 all partially shared (d).
    b = pick(t, procs_min=2048, measure="bytes", category="N:1")
    assert (b["value"], b["pct"]) == (2560 * MIB, 100.0)
    assert pick(t, procs_min=4096, measure="bytes", category="N:M")["pct"] == 100
    assert pick(t, procs_min=4096, measure="bytes", category="N:N")["pct"] == 0
    # Every bin: the strategies' job shares sum to 100%.
    sums = t[t["measure"] == "jobs"].groupby("procs_min")["pct"].sum()
    assert np.allclose(sums, 100)


def test_top_projects(jobs):
    top = workload_tables.top_projects(jobs)
    # physics 1536 + 600 + 0 + 1024 MiB, (unknown) 400 (e has no account), climate 150.
    assert top["project"].tolist() == ["physics", "(unknown)", "climate"]
    assert top["bytes_moved"].tolist() == [3160 * MIB, 400 * MIB, 150 * MIB]
    assert top["bytes_read"].tolist() == [1624 * MIB, 400 * MIB, 100 * MIB]
    assert top["jobs"].tolist() == [4, 1, 2]
    assert workload_tables.top_projects(jobs, n=2)["project"].tolist() == ["physics", "(unknown)"]
    # An empty account is no account either.
    blank = jobs.assign(account=jobs["account"].replace({"climate": "  "}))
    assert set(workload_tables.top_projects(blank)["project"]) == {"physics", "(unknown)"}


def test_files_vs_procs(jobs):
    points = workload_tables.files_vs_procs(jobs, ["physics", "(unknown)"])
    assert points["project"].tolist() == ["physics"] * 4 + ["(unknown)"] + ["(other projects)"] * 2
    assert points[points["project"] == "physics"]["nprocs"].tolist() == [1024, 2048, 2048, 4096]
    e = pick(points, project="(unknown)")
    assert (e["nprocs"], e["files"], e["log_path"]) == (1024, 1024, "logs/e.darshan")


def test_large_jobs_filter(jobs):
    assert sorted(workload_tables.large_jobs(jobs)["log_sha256"].str[0]) == ["c", "d", "g"]
    # At least, not more than: e's 1,024 processes and 400 MiB pass a 400 MiB filter.
    passed = workload_tables.large_jobs(jobs, 1024, 400)
    assert sorted(passed["log_sha256"].str[0]) == ["c", "d", "e", "g"]
    assert sorted(workload_tables.large_jobs(jobs, 4096, 500)["log_sha256"].str[0]) == ["d"]


def test_box_stats(jobs):
    large = workload_tables.large_jobs(jobs)
    stats = workload_tables.box_stats(large, ["physics", "(unknown)"])
    # physics: 2.0, 4.0, 1.0 MiB/s/CN -> min 1, Q1 1.5, median 2, Q3 3, max 4 (linear).
    assert stats.to_dict("records") == [
        {
            "project": "physics",
            "jobs": 3,
            "min": 1.0,
            "q1": 1.5,
            "median": 2.0,
            "q3": 3.0,
            "max": 4.0,
        }
    ]
    assert workload_tables.box_stats(large.iloc[0:0], ["physics"]).empty


def test_project_averages(jobs):
    t = workload_tables.project_averages(workload_tables.large_jobs(jobs), ["climate", "physics"])
    assert t["project"].tolist() == ["physics"]
    row = t.iloc[0]
    assert row["jobs"] == 3
    assert row["mib_s_per_cn"] == pytest.approx(7 / 3)
    assert row["md_cost_pct"] == pytest.approx(20)
    assert row["files_per_proc"] == pytest.approx(0.875 / 3)
    assert row["creates_per_proc"] == pytest.approx(0.25)
    assert row["seq_pct"] == pytest.approx(60)
    assert row["aligned_pct"] == pytest.approx(40)
    # MiB per process: c 1536/2048, d 600/4096, g 1024/2048.
    assert row["mib_per_proc"] == pytest.approx((0.75 + 600 / 4096 + 0.5) / 3)


def test_access_sizes(jobs):
    t = workload_tables.access_sizes(workload_tables.large_jobs(jobs), ["physics"])
    assert len(t) == 2 * len(SIZES)
    # 50 reads 0_100, 100 reads 1M_4M, 150 reads 4M_10M, 50 + 250 writes 1M_4M: 600 accesses.
    assert pick(t, operation="read", size="0-100 B")["pct"] == pytest.approx(100 * 50 / 600)
    assert pick(t, operation="read", size="over 1 MiB to 4 MiB")["accesses"] == 100
    assert pick(t, operation="read", size="over 4 MiB to 10 MiB")["pct"] == pytest.approx(25)
    assert pick(t, operation="write", size="over 1 MiB to 4 MiB")["pct"] == pytest.approx(50)
    assert t["pct"].sum() == pytest.approx(100)


def test_coverage_table():
    coverage = pd.DataFrame(
        {
            "account": ["climate", "physics", "(no accounting)", "all"],
            "jobs_instrumented": [2, 4, 1, 6],
            "jobs_total": [4, 4, None, 8],
            "apis": ["S,P", "M,P", "S", "M,S,P"],
        }
    )
    t = workload_tables.coverage_table(coverage, ["physics", "(unknown)", "bio"])
    assert t["project"].tolist() == ["physics", "(no accounting)", "all"]
    assert t["apis"].tolist() == ["M,P", "S", "M,S,P"]


def test_empty_job_table_gives_empty_frames(jobs):
    empty = jobs.iloc[0:0]
    assert workload_tables.interfaces_by_size(empty).empty
    assert workload_tables.strategy_by_size(empty).empty
    assert workload_tables.top_projects(empty).empty
    assert workload_tables.files_vs_procs(empty, []).empty
    assert workload_tables.project_averages(empty, ["physics"]).empty
    assert workload_tables.access_sizes(empty, ["physics"]).empty


def test_module_bytes_is_the_job_table_of_each_module(tmp_path):
    """module_bytes' one query gives every job, per interface, the bytes
    jobstats.job_table(con, module=...) counts through its module: on the real test logs (some
    without STDIO or MPI-IO records) and two logs near the store's bound (sums past 2^53: float64,
    as numfmt.integral makes them)."""
    tree = tmp_path / "tree"
    tree.mkdir()
    for job in (1, 2):
        (tree / f"job{job}.darshan").write_bytes(_near_bound_log(job, 4, NEAR))
    st = tmp_path / "store"
    assert cli.main(["ingest", str(DARSHAN_LOGS), str(tree), "--store", str(st)]) == 0
    con = store.connect(st)
    got = workload.module_bytes(con)
    assert list(got.columns) == ["log_sha256", "bytes_read", "bytes_written", "interface"]
    for name in workload.BYTES_MODULES:
        mine = got[got["interface"] == modules.BY_NAME[name].interface]
        want = jobstats.job_table(con, module=name)[["log_sha256", "bytes_read", "bytes_written"]]
        pd.testing.assert_frame_equal(
            mine.drop(columns="interface").reset_index(drop=True),
            want.reset_index(drop=True),
            check_dtype=False,
        )
        assert (mine["bytes_read"] == 0).any() or name == "POSIX"
    assert got["bytes_read"].max() > 2**53 and got["bytes_read"].dtype == float


class Collect:
    """report.render's add(), recording what a section adds."""

    def __init__(self):
        self.items = []

    def __call__(self, section, kind, ident, caption, df, fig=None, table=False, hide=()):
        svg = figures.svg(fig, ident) if fig is not None else None
        self.items.append(
            {
                "section": section,
                "kind": kind,
                "id": ident,
                "caption": caption,
                "df": df,
                "svg": svg,
                "table": table,
            }
        )

    def by_id(self):
        return {i["id"]: i for i in self.items}


def test_add_figures_adds_every_figure_and_table(jobs):
    add = Collect()
    workload.add_figures(add, jobs, module_bytes(), None)
    items = add.by_id()
    assert list(items) == [
        "interfaces-by-size",
        "strategy-by-size",
        "top-projects",
        "coverage",
        "files-vs-procs",
        "mib-s-per-cn-by-project",
        "large-job-averages",
        "access-sizes-by-project",
    ]
    for ident in (
        "interfaces-by-size",
        "strategy-by-size",
        "top-projects",
        "files-vs-procs",
        "mib-s-per-cn-by-project",
        "access-sizes-by-project",
    ):
        assert items[ident]["kind"] == "figure" and items[ident]["svg"].startswith("<svg")
    assert items["large-job-averages"]["kind"] == "table"
    # No Slurm accounting: the coverage says what it needs.
    assert items["coverage"]["kind"] == "note"
    assert "iostudy sacct import" in items["coverage"]["caption"]
    # The filter is in the captions of the large-job figures.
    for ident in ("mib-s-per-cn-by-project", "large-job-averages", "access-sizes-by-project"):
        assert "at least 1,024 processes that moved at least 500 MiB" in items[ident]["caption"]
    # Each caption is one sentence saying what it shows, naming the seed's figure or table.
    for item in add.items:
        assert "seed 000" in item["caption"] and item["caption"].endswith(".")


def test_add_figures_says_when_no_job_is_large(jobs):
    add = Collect()
    workload.add_figures(add, jobs, module_bytes(), None, large_procs=8192, large_mib=1)
    items = add.by_id()
    for ident in ("mib-s-per-cn-by-project", "large-job-averages", "access-sizes-by-project"):
        assert items[ident]["kind"] == "note" and items[ident]["svg"] is None
        assert (
            "no job of the top 10 projects has at least 8,192 processes" in items[ident]["caption"]
        )
        assert "--large-procs" in items[ident]["caption"]


def test_add_figures_with_coverage(jobs):
    coverage = pd.DataFrame(
        {"account": ["physics", "all"], "jobs_instrumented": [4, 4], "jobs_total": [8, 9]}
    )
    add = Collect()
    workload.add_figures(add, jobs, module_bytes(), coverage)
    item = add.by_id()["coverage"]
    assert item["kind"] == "table" and item["df"]["project"].tolist() == ["physics", "all"]


@pytest.mark.parametrize(
    "name",
    [
        "<img src=x onerror=alert(1)>",
        "</script><script>alert(2)</script>",
        "cost$1$2 and $",
        "_hidden",
        "a-->b--!>c & 'q' \"dq\"",
    ],
)
def test_names_from_logs_are_text_in_the_figures(jobs, name):
    """A project named like markup is drawn as text: escaped in the SVG, "$" not taken for
    mathtext (which would fail), a leading "_" not dropped from the legend."""
    hostile = jobs.assign(account=jobs["account"].replace({"physics": name}))
    add = Collect()
    workload.add_figures(add, hostile, module_bytes(), None)
    for item in add.items:
        svg = item["svg"]
        if svg is None:
            continue
        # Well-formed XML of matplotlib's elements, with no script, embedded HTML or handler.
        root = ET.fromstring(svg)
        for element in root.iter():
            tag = element.tag.rsplit("}", 1)[-1]
            assert tag not in ("script", "foreignObject", "img", "a", "iframe"), tag
            assert not [a for a in element.attrib if a.lower().startswith("on")], element.attrib
    top = add.by_id()["top-projects"]["svg"]
    shown = workload_figures._text(name).replace("\\$", "$").strip()
    escaped = shown.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
    assert escaped in top


def test_text_escapes_dollars_and_shortens():
    assert workload_figures._text("a$b$") == r"a\$b\$"
    assert workload_figures._text("x" * 40, 10) == "x" * 9 + "…"
    assert workload_figures._text("_x") == " _x"


def test_figures_on_one_bin_and_one_project(jobs):
    one = jobs[jobs["log_sha256"] == "cccccccc"]
    figures = [
        workload_figures.interfaces_figure(workload_tables.interfaces_by_size(one, module_bytes())),
        workload_figures.strategy_figure(workload_tables.strategy_by_size(one)),
        workload_figures.projects_figure(workload_tables.top_projects(one)),
        workload_figures.files_figure(
            workload_tables.files_vs_procs(one, ["physics"]), ["physics"]
        ),
        workload_figures.box_figure(workload_tables.box_stats(one, ["physics"])),
        workload_figures.access_sizes_figure(workload_tables.access_sizes(one, ["physics"])),
    ]
    for fig in figures:
        assert isinstance(fig, Figure)
        fig.savefig(io.StringIO(), format="svg")


def test_binary_bytes():
    assert numfmt.binary_bytes(0) == "0 B"
    assert numfmt.binary_bytes(512) == "512 B"
    assert numfmt.binary_bytes(1536) == "1.5 KiB"
    assert numfmt.binary_bytes(3 * 2**40) == "3 TiB"
    # by hand: 1,000 KiB has 4 digits before the point, never an exponent ("1e+03 KiB")
    assert numfmt.binary_bytes(1000 * 1024) == "1000 KiB"
    assert numfmt.binary_bytes(1023 * 1024 + 1023) == "1024 KiB"  # 1023.999 KiB
    assert numfmt.binary_bytes(1536 * 2**20, digits=4) == "1.5 GiB"
    assert numfmt.binary_bytes(1234567, digits=4) == "1.177 MiB"  # 1,234,567 / 2^20
    assert numfmt.binary_bytes(5 * 2**60) == "5 EiB"


def test_every_size_is_written_by_one_formatter(release_log, capsys, tmp_path):
    """The log summary, the fsstats scan and the report's ticks used three formatters that
    wrote 64 MiB as "64.0 MiB", "64 MiB" and "64 MiB": now each says what numfmt says."""
    from iostudy.cli import fsstats
    from iostudy.cli.cli import main

    assert main(["log", "summary", str(release_log)]) == 0
    assert numfmt.binary_bytes(64 * 2**20) in capsys.readouterr().out  # the MPI-IO file
    assert fsstats._human(64 * 2**20) == numfmt.binary_bytes(64 * 2**20, digits=4) == "64 MiB"


# Near the store's bound (iostudy.logs.plausibility: values below 2^62) and multiples of 2^14, so
# that float64 holds every sum below 2^67 exactly: totals past 2^53 are float64 (as
# numfmt.integral makes them), and these must still equal the sums of the values written.
UNIT = 2**14
NEAR = 2**62 - 64 * UNIT


def _near_bound_log(job: int, nprocs: int, base: int) -> bytes:
    """The 3.5.0 release log (a shared POSIX and MPI-IO record, rank -1; rank 0's <STDOUT>
    STDIO record) as job ``job`` of nprocs processes with bytes of _near_bound_bytes."""
    data = logcraft.set_job((DARSHAN_LOGS / RELEASE_350).read_bytes(), jobid=job, nprocs=nprocs)
    if nprocs < 4:  # the release log's heatmaps are of ranks 0-3: none for fewer processes
        data = logcraft.set_module_region(data, "HEATMAP", b"")
    for (module, counter), value in _near_bound_bytes(job, base).items():
        data = logcraft.set_counter(data, module, 0, counter, value)
    return data


def _near_bound_bytes(job: int, base: int) -> dict:
    """(module, counter) -> the bytes job ``job`` moved: base (NEAR or 0) and a few units
    through POSIX and MPI-IO; a few units through STDIO."""
    return {
        ("POSIX", "POSIX_BYTES_READ"): base + job * UNIT,
        ("POSIX", "POSIX_BYTES_WRITTEN"): base + (job + 10) * UNIT,
        ("MPI-IO", "MPIIO_BYTES_READ"): base + (job + 20) * UNIT,
        ("MPI-IO", "MPIIO_BYTES_WRITTEN"): base + (job + 30) * UNIT,
        ("STDIO", "STDIO_BYTES_READ"): job * UNIT,
        ("STDIO", "STDIO_BYTES_WRITTEN"): (job + 1) * UNIT,
    }


def _report_csv(v: Path, name: str) -> list[dict]:
    return list(csv.DictReader(io.StringIO((v / f"{name}.csv").read_text())))


def _row(rows, **where) -> int:
    (row,) = [r for r in rows if all(r[k] == v for k, v in where.items())]
    return int(float(row["value"]))


def test_report_totals_near_the_bound_do_not_wrap_around(tmp_path):
    """Jobs 1-3 (4 processes) each moved just under 2^62 bytes through POSIX and MPI-IO, every
    value plausible, job 4 (1 process) a few KiB: the bin and project totals pass 2^63, which
    int64 sums wrap around and int64 casts turn into -2^63. Through a real ingest and report
    build, each total is the sum of the values written."""
    tree = tmp_path / "tree"
    tree.mkdir()
    bases = {1: (4, NEAR), 2: (4, NEAR), 3: (4, NEAR), 4: (1, 0)}
    for job, (nprocs, base) in bases.items():
        (tree / f"job{job}.darshan").write_bytes(_near_bound_log(job, nprocs, base))
    st, reports = tmp_path / "store", tmp_path / "reports"
    assert cli.main(["ingest", str(tree), "--store", str(st), "--study", "near"]) == 0
    build = ["report", "build", "--store", str(st), "--study", "near", "--reports", str(reports)]
    assert cli.main(build) == 0
    v = reports / "near" / "v1"
    wrote = {job: _near_bound_bytes(job, base) for job, (_, base) in bases.items()}

    def total(jobs, *keys):
        return sum(wrote[j][k] for j in jobs for k in keys)

    posix_r, posix_w = ("POSIX", "POSIX_BYTES_READ"), ("POSIX", "POSIX_BYTES_WRITTEN")
    mpiio_r, mpiio_w = ("MPI-IO", "MPIIO_BYTES_READ"), ("MPI-IO", "MPIIO_BYTES_WRITTEN")
    stdio_r, stdio_w = ("STDIO", "STDIO_BYTES_READ"), ("STDIO", "STDIO_BYTES_WRITTEN")
    big = (1, 2, 3)
    assert total(big, posix_r) > 2**63 and total(big, posix_r, posix_w) > 2**64

    # No account (no Slurm accounting): one project; bytes of the POSIX and STDIO records.
    (top,) = _report_csv(v, "top-projects")
    assert top["project"] == "(unknown)" and top["jobs"] == "4"
    every = tuple(bases)
    assert int(float(top["bytes_read"])) == total(every, posix_r, stdio_r)
    assert int(float(top["bytes_written"])) == total(every, posix_w, stdio_w)
    assert int(float(top["bytes_moved"])) == total(every, posix_r, stdio_r, posix_w, stdio_w)

    shares = _report_csv(v, "interfaces-by-size")
    for measure, keys in (
        ("bytes read", (posix_r, mpiio_r, stdio_r)),
        ("bytes written", (posix_w, mpiio_w, stdio_w)),
    ):
        for interface, key in zip(("POSIX", "MPI-IO", "STDIO"), keys, strict=True):
            for procs_min, jobs in (("4", big), ("1", (4,))):
                got = _row(shares, procs_min=procs_min, measure=measure, category=interface)
                assert got == total(jobs, key), (measure, interface, procs_min)
    assert _row(shares, procs_min="4", measure="jobs", category="POSIX") == 3

    # The POSIX file is shared by every process (N:1); rank 0's <STDOUT> is one process's (N:N).
    strategy = _report_csv(v, "strategy-by-size")
    for procs_min, jobs in (("4", big), ("1", (4,))):
        n1 = _row(strategy, procs_min=procs_min, measure="bytes", category="N:1")
        nn = _row(strategy, procs_min=procs_min, measure="bytes", category="N:N")
        if procs_min == "4":
            assert (n1, nn) == (total(jobs, posix_r, posix_w), total(jobs, stdio_r, stdio_w))
        else:  # one process: every file is N:N
            assert (n1, nn) == (0, total(jobs, posix_r, posix_w, stdio_r, stdio_w))
