"""What a job page shows beyond the files rows, kept by ingest so that no page reads a log
again (issue 44): the most common access sizes per module (the accesssizes table) and the
heatmap (the heatmap table).

Darshan's release log of 3.5.0 is mpi-io-test with its defaults on 4 processes
(testdata/darshan-logs/release_logs/README.md): each process writes one block of 16 MiB to one
shared file through MPI-IO, then reads it back, within the first tenth of a second (the
runtime's heatmap: one bin of 0.1 s). So each of POSIX and MPI-IO made 8 accesses of 16 MiB,
and each rank moved 16 MiB each way in POSIX's and MPI-IO's one bin.
"""

from __future__ import annotations

import shutil

import pytest

from iostudy.cli.cli import main
from iostudy.report import report
from iostudy.store import catalog, store

from .testdata import DARSHAN_LOGS, RELEASE_350

MIB16 = 16 * 2**20


@pytest.fixture
def ingested(tmp_path, capsys):
    log = tmp_path / "mpi-io-test.darshan"
    shutil.copyfile(DARSHAN_LOGS / RELEASE_350, log)
    st = tmp_path / "store"
    assert main(["ingest", str(log), "--store", str(st), "--study", "t"]) == 0, (
        capsys.readouterr().err
    )
    return st, log


def test_ingest_keeps_the_most_common_access_sizes(ingested):
    st, _ = ingested
    rows = (
        store.connect(st)
        .execute("SELECT module, size, accesses FROM accesssizes ORDER BY module")
        .fetchall()
    )
    assert rows == [("MPI-IO", MIB16, 8), ("POSIX", MIB16, 8)]


def test_ingest_keeps_each_ranks_heatmap_bins(ingested):
    st, _ = ingested
    rows = (
        store.connect(st)
        .execute(
            "SELECT api, rank, bin, bin_width_s, read_bytes, write_bytes FROM heatmap "
            "WHERE api IN ('POSIX', 'MPIIO') ORDER BY api, rank"
        )
        .fetchall()
    )
    assert rows == [
        (api, rank, 0, 0.1, MIB16, MIB16) for api in ("MPIIO", "POSIX") for rank in range(4)
    ]


def test_the_job_page_draws_them_from_the_store_with_the_log_gone(ingested, tmp_path):
    st, log = ingested
    sha = store.connect(st).execute("SELECT log_sha256 FROM jobs").fetchone()[0]
    log.unlink()
    index = report.build(st, "t", tmp_path / "reports")
    page = (index.parent / f"job-{sha}.html").read_text()
    assert "not shown" not in page
    assert "<svg" in page[page.index("-heatmap") :]
    common = (index.parent / f"job-{sha}-common-sizes.csv").read_text().splitlines()
    assert common == ["module,size,accesses", f"POSIX,{MIB16},8", f"MPI-IO,{MIB16},8"]


def test_a_store_of_before_these_tables_is_read_without_them(ingested, tmp_path):
    st, _ = ingested
    commit = catalog.Commit(st)  # the store of an iostudy that kept neither table
    for table in ("accesssizes", "heatmap"):
        for name in catalog.load(st).parts(table):
            commit.drop(table, name)
    commit.apply()
    con = store.connect(st)
    assert con.execute("SELECT count(*) FROM accesssizes").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM heatmap").fetchone() == (0,)
    index = report.build(st, "t", tmp_path / "reports")
    assert index.is_file()
