"""Darshan's access-size bins at every edge, from an access to the label a page shows.

runtime/tests/programs/size_edges.c, under iostudy's runtime, writes and then reads one access of
each edge size (every bin's upper edge and one byte more: 100 and 101 up to 1 GiB and 1 GiB + 1),
each size to a file of its own, so that each POSIX record holds one read and one write. The log
goes through `iostudy ingest`, Slurm accounting (a project) and a report. Each access must land
in the bin Darshan gives it (darshan-runtime/lib/darshan-common.h, DARSHAN_BUCKET_INC: a bin
holds the sizes over its lower edge up to and including its upper one) in the store's files
rows and in PyDarshan's reading of the same log, and show on the job page, the project page and
the report's Fig. 9 under the bin's exact label. The edges, the bins and the labels are written
here by hand, never taken from iostudy.
"""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import darshan
import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.metrics import jobdetail
from iostudy.report import report
from iostudy.store import store as store_mod

from .rundirs import RUNTIME, runtime_env
from .testdata import REPO_ROOT

PROGRAM = REPO_ROOT / "build" / "runtime" / "tests" / "size_edges"
JOBID, PROJECT = 8001, "edges"
# Darshan's bins, smallest first: the counters' suffix, the bin's upper edge in bytes (included;
# the last bin has none) and the label every page must show
BINS = [
    ("0_100", 100, "0-100 B"),
    ("100_1K", 1024, "over 100 B to 1 KiB"),
    ("1K_10K", 10240, "over 1 KiB to 10 KiB"),
    ("10K_100K", 102400, "over 10 KiB to 100 KiB"),
    ("100K_1M", 1048576, "over 100 KiB to 1 MiB"),
    ("1M_4M", 4194304, "over 1 MiB to 4 MiB"),
    ("4M_10M", 10485760, "over 4 MiB to 10 MiB"),
    ("10M_100M", 104857600, "over 10 MiB to 100 MiB"),
    ("100M_1G", 1073741824, "over 100 MiB to 1 GiB"),
    ("1G_PLUS", None, "over 1 GiB"),
]
SIZES = [s for _, upper, _ in BINS[:-1] for s in (upper, upper + 1)]
LABEL = {name: label for name, _, label in BINS}


def bin_of(size: int) -> str:
    """The bin Darshan counts an access of ``size`` bytes in: the first whose upper edge is at
    least ``size``."""
    return next(name for name, upper, _ in BINS if upper is None or size <= upper)


def expected_per_label() -> dict[str, int]:
    """Accesses per label, one way (reads or writes), of the SIZES."""
    out = dict.fromkeys(LABEL.values(), 0)
    for size in SIZES:
        out[LABEL[bin_of(size)]] += 1
    return out


def test_the_bins_at_their_edges():
    """The hand-written rule itself, at both sides of every edge."""
    assert [bin_of(s) for s in SIZES] == [
        "0_100",
        "100_1K",
        "100_1K",
        "1K_10K",
        "1K_10K",
        "10K_100K",
        "10K_100K",
        "100K_1M",
        "100K_1M",
        "1M_4M",
        "1M_4M",
        "4M_10M",
        "4M_10M",
        "10M_100M",
        "10M_100M",
        "100M_1G",
        "100M_1G",
        "1G_PLUS",
    ]
    ends = ("0_100", "1G_PLUS")  # one edge each; every other bin holds two
    assert expected_per_label() == {label: 1 if name in ends else 2 for name, _, label in BINS}


def test_each_counter_is_shown_under_its_label():
    """jobdetail.size_bins (the job page's and compare-jobs' table) names each counter by its
    label: a different count in every bin, so that no two labels can trade places unseen."""
    row = {"module": "posix"}
    for i, (name, _, _) in enumerate(BINS):
        row |= {f"read_{name.lower()}": i + 1, f"write_{name.lower()}": 10 * (i + 1)}
    files = pd.DataFrame([row])
    got = jobdetail.size_bins(files).set_index(["operation", "size"])["accesses"].to_dict()
    for i, (_, _, label) in enumerate(BINS):
        assert (got[("read", label)], got[("write", label)]) == (i + 1, 10 * (i + 1)), label
    assert len(got) == 2 * len(BINS)


@pytest.fixture(scope="module")
def edges(tmp_path_factory) -> dict:
    """The program's log ingested with its accounting, and a report in which its one job is a
    large one (so that Fig. 9 shows it)."""
    for need in (RUNTIME, PROGRAM):
        if not need.is_file():
            pytest.fail(f"{need} not found: run `make setup` (it builds the runtime's tests)")
    root = tmp_path_factory.mktemp("size-bins")
    tree, work = root / "tree", root / "work"
    tree.mkdir()
    work.mkdir()
    log = tree / "edges.darshan"
    env = runtime_env(log) | {"SLURM_JOB_ID": str(JOBID)}
    cmd = [str(PROGRAM), str(work), *map(str, SIZES)]
    subprocess.run(cmd, env=env, check=True, timeout=600)
    assert log.is_file() and not any(work.iterdir())  # it removed its files
    store = root / "store"
    assert main(["ingest", str(tree), "--store", str(store), "--study", "edges"]) == 0
    (root / "sacct.txt").write_text(
        "JobID|JobIDRaw|Cluster|Account|User|Partition|NNodes|NCPUS|ElapsedRaw|Start|End|State\n"
        f"{JOBID}|{JOBID}|c1|{PROJECT}|alice|batch|1|1|60|2026-01-01T00:00:00|"
        "2026-01-01T00:01:00|COMPLETED\n"
    )
    assert main(["sacct", "import", str(root / "sacct.txt"), "--store", str(store)]) == 0
    index = report.build(store, "edges", root / "reports", large_procs=1, large_mib=0)
    con = store_mod.connect(store)
    try:
        (sha,) = con.execute("SELECT log_sha256 FROM jobs").fetchone()
        rows = con.execute("SELECT * FROM files WHERE module = 'posix'").df()
    finally:
        con.close()
    return {"log": log, "version": index.parent, "sha": sha, "rows": rows}


def _size_of(path: str) -> int | None:
    m = re.fullmatch(r"edge_(\d+)\.dat", Path(path).name)
    return int(m.group(1)) if m else None


def _bin_columns(op: str) -> list[str]:
    return [f"{op}_{name.lower()}" for name, _, _ in BINS]


@pytest.mark.slow
def test_each_access_lands_in_its_bin_in_the_files_rows(edges):
    rows = edges["rows"].assign(size=edges["rows"]["path"].map(_size_of)).dropna(subset="size")
    assert sorted(rows["size"].astype(int)) == SIZES  # a record per size, no other
    for row in rows.itertuples():
        for op in ("read", "write"):
            counts = {c: getattr(row, c) for c in _bin_columns(op) if getattr(row, c)}
            assert counts == {f"{op}_{bin_of(int(row.size)).lower()}": 1}, (row.size, op)


@pytest.mark.slow
def test_pydarshan_agrees_on_every_bin_counter(edges):
    log = darshan.DarshanReport(str(edges["log"]), read_all=True)
    counters = log.records["POSIX"].to_df()["counters"]
    names = [log.name_records[int(i)] for i in counters["id"].to_numpy()]
    theirs = counters.assign(size=[_size_of(n) for n in names]).dropna(subset="size")
    assert sorted(theirs["size"].astype(int)) == SIZES
    ours = edges["rows"].assign(size=edges["rows"]["path"].map(_size_of)).set_index("size")
    for _, rec in theirs.iterrows():
        size = int(rec["size"])
        for op in ("read", "write"):
            for name, _, _ in BINS:
                value = int(rec[f"POSIX_SIZE_{op.upper()}_{name}"])
                assert value == (1 if name == bin_of(size) else 0), (size, op, name)
                assert ours.loc[size, f"{op}_{name.lower()}"] == value, (size, op, name)


@pytest.mark.slow
def test_the_job_page_shows_each_bin_under_its_label(edges):
    version, sha = edges["version"], edges["sha"]
    sizes = pd.read_csv(version / f"job-{sha}-sizes.csv")
    posix = sizes[sizes["module"] == "POSIX"]
    for op in ("read", "write"):
        shown = posix[posix["operation"] == op].set_index("size")["accesses"].to_dict()
        assert shown == expected_per_label(), op
    page = (version / f"job-{sha}.html").read_text()
    figure = re.search(rf'<figure id="job-{sha}-sizes">(.*?)</figure>', page, re.S)
    assert figure is not None
    drawn = re.findall(r"<text[^>]*>([^<]*)</text>", figure.group(1))
    for label in LABEL.values():
        assert label in drawn, label  # each bin's tick, its label whole
    assert "102,401 to 1,048,576 bytes" in page  # the caption says a bin holds its upper edge


@pytest.mark.slow
def test_the_project_page_and_fig_9_use_the_same_labels(edges):
    version = edges["version"]
    (table_v,) = version.glob("project-*-jobs.csv")
    # every bin but the smallest and the largest holds 2 reads and 2 writes: the first of them
    assert list(pd.read_csv(table_v)["key_access_size"]) == ["over 100 B to 1 KiB (r+w)"]
    fig9 = pd.read_csv(version / "access-sizes-by-project.csv")
    assert set(fig9["project"]) == {PROJECT}
    for op in ("read", "write"):
        shown = fig9[fig9["operation"] == op].set_index("size")["accesses"].to_dict()
        assert shown == expected_per_label(), op
