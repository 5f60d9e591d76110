"""Seed 000's I/O time, file classes and strategy, one definition (iostudy.metrics.iotime): the
job table (jobstats.job_table, SQL over a store) and the I/O models' throughput (metrics.io_time,
on the files a metric table reads) give the same numbers on every shared test log, and on the
logs where they used to disagree, the values PyDarshan's records give by hand."""

import darshan
import pandas as pd
import pytest

from iostudy.logs import modules
from iostudy.metrics import jobstats, metrics
from iostudy.store import ingest, store
from tests.testdata import DARSHAN_LOGS

ALL_LOGS = sorted(DARSHAN_LOGS.rglob("*.darshan"))
ONE_PROCESS = "partial_data_stdio/partial_data_stdio.darshan"
STDOUT_SOME = "runtime_heatmap_inactive_ranks/treddy_runtime_heatmap_inactive_ranks.darshan"
STDOUT_ALL = (
    "mpi_io_test_with_dxt/treddy_mpi-io-test_id4373053_6-2-60198-9815401321915095332_1.darshan"
)


@pytest.fixture(scope="module")
def both_paths(tmp_path_factory):
    """Per log (its path under the test data): the job table's row and io_time's, each
    computed from the same store of every shared test log."""
    root = tmp_path_factory.mktemp("iotime") / "store"
    counts = ingest.ingest([DARSHAN_LOGS], root)
    assert (counts.logs_ingested, counts.quarantined) == (len(ALL_LOGS), 0)
    con = store.connect(root)
    table = jobstats.job_table(con).set_index("log_sha256")
    # the files compute_all gives the I/O models' throughput: the default scope's
    counted = modules.counted(modules.DEFAULT_SCOPE)
    files = con.execute(f"SELECT * FROM files WHERE {counted}").df()
    jobs = con.execute("SELECT * FROM jobs").df()
    grouped = metrics.io_time(files, jobs, ["log_sha256"]).set_index("log_sha256")
    prefix = f"{DARSHAN_LOGS.name}/"
    names = table["log_path"].str.removeprefix(prefix)
    return table.set_index(names), grouped.reindex(table.index).set_index(names)


def test_the_two_paths_agree_on_every_test_log(both_paths):
    table, grouped = both_paths
    assert len(table) == len(ALL_LOGS)
    moved = grouped["bytes"].notna()
    assert table.loc[~moved, "strategy"].eq("none").all()  # no counted record, no byte
    table, grouped = table[moved], grouped[moved]
    assert (table["bytes_read"] + table["bytes_written"]).tolist() == grouped["bytes"].tolist()
    for column in (
        "unique_bytes",
        "shared_bytes",
        "partial_bytes",
        "unique_files",
        "shared_files",
        "partial_files",
        "strategy",
    ):
        assert table[column].tolist() == grouped[column].tolist(), column
    assert table["io_time_span_s"].tolist() == pytest.approx(grouped["io_time"].tolist())


def _records(name: str, module: str) -> pd.DataFrame:
    """PyDarshan's records of one module of a test log: rank, file name, counters."""
    report = darshan.DarshanReport(str(DARSHAN_LOGS / name), read_all=False)
    report.mod_read_all_records(module)
    frames = report.records[module].to_df()
    out = frames["counters"].merge(frames["fcounters"], on=["rank", "id"])
    out["name"] = out["id"].map(report.name_records)
    return out


def _time(records: pd.DataFrame, module: str) -> pd.Series:
    return sum(records[f"{module}_F_{t}_TIME"] for t in ("META", "READ", "WRITE"))


def test_a_one_process_jobs_reduced_records_are_its_process_time(both_paths):
    # One process: every record is rank -1 (Darshan reduces a file all ranks opened), its one
    # process's (N:N): the unique form is the sum of its POSIX and STDIO time. The job table
    # said 0 s (it took rank -1 for no process).
    posix, stdio = _records(ONE_PROCESS, "POSIX"), _records(ONE_PROCESS, "STDIO")
    assert set(posix["rank"]) == set(stdio["rank"]) == {-1}
    expected = _time(posix, "POSIX").sum() + _time(stdio, "STDIO").sum()
    table, grouped = both_paths
    assert expected == pytest.approx(5.46033, abs=1e-5)
    assert table.loc[ONE_PROCESS, "io_time_span_s"] == pytest.approx(expected)
    assert grouped.loc[ONE_PROCESS, "io_time"] == pytest.approx(expected)


def test_stdout_is_open_from_the_jobs_start(both_paths):
    # Darshan's runtime opens <STDOUT> at 0 (darshan-stdio.c: STDIO_RECORD_OPEN(stdout,
    # "<STDOUT>", 0, 0)): its span runs from the job's start to its last write. The job table
    # left such a file out (no open after 0); io_time counted it.
    table, grouped = both_paths
    stdout = _records(STDOUT_SOME, "STDIO")
    assert set(stdout["name"]) == {"<STDOUT>"} and len(stdout) == 20  # 20 ranks of 40: N:M
    assert (stdout["STDIO_F_OPEN_START_TIMESTAMP"] == 0).all()
    expected = stdout["STDIO_F_WRITE_END_TIMESTAMP"].max()
    assert expected == pytest.approx(0.119694, abs=1e-6)
    assert table.loc[STDOUT_SOME, "io_time_span_s"] == pytest.approx(expected)
    assert grouped.loc[STDOUT_SOME, "io_time"] == pytest.approx(expected)
    # its bytes are partially shared (N:M), not shared (N:1): 5 ranks wrote 24 bytes, 15 wrote 25
    assert stdout["STDIO_BYTES_WRITTEN"].sum() == 5 * 24 + 15 * 25
    for row in (table.loc[STDOUT_SOME], grouped.loc[STDOUT_SOME]):
        assert (row["shared_bytes"], row["partial_bytes"]) == (0, 495)
        assert row["strategy"] == "N:M"


def test_the_longest_shared_file_span_counts_stdout_too(both_paths):
    # 32 processes; test.out (POSIX records of every rank: N:1) from its first open to its last
    # read, and <STDOUT> (STDIO records of every rank: N:1) from 0 to its last write, longer.
    posix, stdio = _records(STDOUT_ALL, "POSIX"), _records(STDOUT_ALL, "STDIO")
    test_out = posix[posix["name"].str.endswith("/test.out")]
    ends = test_out[["POSIX_F_READ_END_TIMESTAMP", "POSIX_F_WRITE_END_TIMESTAMP"]].max().max()
    test_out_span = ends - test_out["POSIX_F_OPEN_START_TIMESTAMP"].min()
    stdout = stdio[stdio["name"] == "<STDOUT>"]
    assert len(test_out) == len(stdout) == 32
    stdout_span = stdout["STDIO_F_WRITE_END_TIMESTAMP"].max()
    assert test_out_span == pytest.approx(13.600501, abs=1e-6)
    assert stdout_span == pytest.approx(13.642051, abs=1e-6)
    table, grouped = both_paths
    assert table.loc[STDOUT_ALL, "io_time_span_s"] == pytest.approx(stdout_span)
    assert grouped.loc[STDOUT_ALL, "io_time"] == pytest.approx(stdout_span)


def test_rank_0_alone_is_one_strategy_for_both():
    """A 4-process job whose rank 0 alone moved bytes is "rank-0" in the job table and in the
    I/O models' throughput (which said N:N); one whose rank 2 alone did is N:N in both."""
    import duckdb

    files = pd.DataFrame(
        [
            {
                **{c: 0 for c in store.TABLES["files"].names},
                "run_id": "r1",
                "log_sha256": log,
                "module": "posix",
                "record_id": 9,
                "rank": rank,
                "path": "/s/n1-p1-f1-m1/file0.dat",
                "sharing": None,
                "bytes_written": 40,
                "write_time": 1.0,
            }
            for log, rank in (("r0", 0), ("r2", 2))
        ]
    ).astype({"record_id": "uint64"})
    jobs = pd.DataFrame(
        [
            {**dict.fromkeys(store.TABLES["jobs"].names), "run_id": "r1", "log_sha256": log}
            | {"log_path": log, "nprocs": 4, "nodes": 1, "modules": "POSIX"}
            for log in ("r0", "r2")
        ]
    )
    con = duckdb.connect()
    con.register("files", files)
    con.register("jobs", jobs)
    expected = {"r0": "rank-0", "r2": "N:N"}
    assert jobstats.job_table(con).set_index("log_path")["strategy"].to_dict() == expected
    models = metrics.model_throughput(files, jobs)
    assert models.set_index("log_sha256")["strategy"].to_dict() == expected
