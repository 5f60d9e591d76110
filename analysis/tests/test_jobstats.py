"""iostudy jobs: the per-job figures against PyDarshan's own derived metrics (the oracle), on
every real log of the test data, and the columns' definitions on logs our runtime writes."""

import csv
import io
import math

import darshan
import pandas as pd
import pytest
from darshan.backend.cffi_backend import accumulate_records

from iostudy.cli import cli
from iostudy.metrics import jobstats
from iostudy.store import ingest, store
from tests import logcraft
from tests.testdata import DARSHAN_LOGS

ALL_LOGS = sorted(DARSHAN_LOGS.rglob("*.darshan"))
DLIO = "dlio_logs/snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1.darshan"


@pytest.fixture(scope="module")
def test_log_store(tmp_path_factory):
    """Every test log ingested as one log tree."""
    root = tmp_path_factory.mktemp("jobstats")
    counts = ingest.ingest([DARSHAN_LOGS], root / "store")
    assert (counts.logs_ingested, counts.quarantined) == (len(ALL_LOGS), 0)
    return root / "store"


def _jobs_csv(store_root, *args) -> list[dict]:
    out = io.StringIO()
    import contextlib

    with contextlib.redirect_stdout(out):
        assert cli.main(["jobs", "--store", str(store_root), "--csv", *args]) == 0
    return list(csv.DictReader(io.StringIO(out.getvalue())))


def _pydarshan_metrics(path, mod):
    """PyDarshan's derived metrics of one module (what `python -m darshan job_stats` prints)."""
    report = darshan.DarshanReport(str(path), read_all=False)
    if mod not in report.modules:
        return None
    report.mod_read_all_records(mod)
    if len(report.records[mod]) == 0:
        return None
    recs = report.records[mod].to_df()
    return accumulate_records(recs, mod, report.metadata["job"]["nprocs"]).derived_metrics


@pytest.mark.parametrize("mod", ["POSIX", "MPI-IO", "STDIO"])
def test_bytes_and_bandwidth_agree_with_pydarshan_on_every_test_log(test_log_store, mod):
    rows = {r["log_path"]: r for r in _jobs_csv(test_log_store, "--module", mod)}
    assert len(rows) == len(ALL_LOGS)
    compared = 0
    for path in ALL_LOGS:
        row = rows[f"{DARSHAN_LOGS.name}/{path.relative_to(DARSHAN_LOGS).as_posix()}"]
        assert row["module"] == mod
        metrics = _pydarshan_metrics(path, mod)
        total = int(row["bytes_read"]) + int(row["bytes_written"])
        if metrics is None:
            assert total == 0, path
            continue
        compared += 1
        assert total == pytest.approx(metrics.total_bytes, rel=0.01), path
        perf = float(row["agg_perf_mib_s"]) if row["agg_perf_mib_s"] else 0.0
        assert perf == pytest.approx(metrics.agg_perf_by_slowest, rel=0.01), path
        assert float(row["io_time_slowest_s"]) == pytest.approx(
            metrics.agg_time_by_slowest, rel=0.01
        ), path
    # every test log has POSIX or STDIO records; MPI-IO ones are the MPI jobs'
    assert compared >= {"POSIX": 40, "MPI-IO": 25, "STDIO": 25}[mod]


# Files per class in real logs, counted by hand from PyDarshan's records (the ranks holding
# each record id, over every module, and the job's nprocs):
#   mpi-io-test 3.5.0, 4 procs: the test file reduced to rank -1 (N:1), <STDOUT> rank 0 (N:N);
#   heatmap_inactive_ranks, 40 procs: one file with records of 20 ranks (N:M);
#   ior-HDF5, 4 procs: testFile reduced in POSIX, MPI-IO and H5F (N:1), its dataset reduced in
#     H5D (N:1: a files row of its own record id), <STDOUT> of rank 0 (N:N);
#   dlio 2110366, 1 process: 25 files, all N:N.
HAND_CLASSES = {
    "release_logs/mpi-io-test-x86_64-3.5.0.darshan": {"N:1": 1, "N:N": 1},
    "runtime_heatmap_inactive_ranks/treddy_runtime_heatmap_inactive_ranks.darshan": {"N:M": 1},
    "ior_pnetcdf_hdf5/shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan": {
        "N:1": 2,
        "N:N": 1,
    },
    "dlio_logs/snyder_python3_id3116902-2110366_12-19-66957-4077632997277538683_1.darshan": {
        "N:N": 25
    },
}


@pytest.mark.parametrize("name", sorted(HAND_CLASSES))
def test_ingest_stores_each_files_class_over_all_modules(test_log_store, name):
    con = store.connect(test_log_store)
    rows = con.execute(
        "SELECT sharing, COUNT(DISTINCT record_id) FROM files JOIN jobs USING (log_sha256) "
        "WHERE jobs.log_path LIKE ? GROUP BY sharing",
        [f"%{name}"],
    ).fetchall()
    assert dict(rows) == HAND_CLASSES[name]
    # one class per file: no record id has two
    (split,) = con.execute(
        "SELECT COUNT(*) FROM (SELECT log_sha256, record_id FROM files "
        "GROUP BY ALL HAVING COUNT(DISTINCT sharing) > 1)"
    ).fetchone()
    assert split == 0


def test_every_format_version_and_byte_order_is_read(test_log_store):
    con = store.connect(test_log_store)
    versions = {v for (v,) in con.execute("SELECT DISTINCT log_ver FROM jobs").fetchall()}
    assert versions == {"3.00", "3.10", "3.20", "3.21", "3.41"}
    (big_endian,) = con.execute(
        "SELECT count(*) FROM jobs WHERE log_path LIKE '%ppc64%'"
    ).fetchone()
    assert big_endian == len([p for p in ALL_LOGS if "ppc64" in p.name]) > 0


def test_columns_and_scope(test_log_store):
    rows = _jobs_csv(test_log_store)
    for name in (
        "log_path",
        "jobid",
        "nprocs",
        "nodes",
        "bytes_read",
        "bytes_written",
        "io_time_slowest_s",
        "agg_perf_mib_s",
        "mib_s_per_cn",
        "md_cost_pct",
        "files_per_proc",
        "seq_pct",
        "aligned_pct",
        "mib_per_proc",
        "interfaces",
        "strategy",
        "io_procs",
        "procs_per_file",
    ):
        assert name in rows[0]
    by_name = {r["log_path"].rsplit("/", 1)[1]: r for r in rows}
    # The 3.5.0 release log: 4 ranks write and read one shared file through MPI-IO.
    r = by_name["mpi-io-test-x86_64-3.5.0.darshan"]
    assert r["interfaces"] == "POSIX+STDIO+MPI-IO" and r["strategy"] == "N:1"
    assert (r["module"], r["io_procs"], float(r["procs_per_file"])) == (
        "POSIX+STDIO+DFS+DAOS",
        "4",
        4.0,
    )
    # default scope = POSIX + STDIO records
    posix = {x["log_path"]: x for x in _jobs_csv(test_log_store, "--module", "POSIX")}
    stdio = {x["log_path"]: x for x in _jobs_csv(test_log_store, "--module", "STDIO")}
    for row in rows:
        for col in ("bytes_read", "bytes_written"):
            assert int(row[col]) == int(posix[row["log_path"]][col]) + int(
                stdio[row["log_path"]][col]
            )
    # STDIO-only log: no POSIX counters, so no sequential or aligned share
    r = by_name["laytonjb_test1_id28730_6-7-43012-2131301613401632697_1.darshan"]
    assert r["interfaces"] == "STDIO" and r["seq_pct"] == "" and r["aligned_pct"] == ""
    # HDF5 and PnetCDF logs show their library interface
    hdf5 = [r for r in rows if "HDF5" in r["interfaces"]]
    assert {r["log_path"].rsplit("/", 1)[1][:14] for r in hdf5} >= {"shane_ior-HDF5"}
    assert any("PnetCDF" in r["interfaces"] for r in rows)
    for r in rows:
        assert r["strategy"] in ("N:N", "N:1", "N:M", "rank-0", "none")
        if r["md_cost_pct"]:
            assert -1e-6 <= float(r["md_cost_pct"]) <= 100 + 1e-6 or "ppc64" in r["log_path"]
        per_proc = int(r["bytes_read"]) + int(r["bytes_written"])
        assert math.isclose(float(r["mib_per_proc"]), per_proc / 2**20 / int(r["nprocs"]))


def test_totals_near_the_bound_over_several_jobs(tmp_path, capsys):
    """Two jobs whose POSIX records each moved just under 2^62 bytes (every value plausible):
    a job's total passes 2^63, which a SUM cast to BIGINT cannot hold; `iostudy jobs` gives
    them (as floats: an int64 cannot)."""
    near = 2**62 - 1
    data = (DARSHAN_LOGS / DLIO).read_bytes()  # 1 process, 27 POSIX records
    tree = tmp_path / "tree"
    tree.mkdir()
    for job in (1, 2):
        crafted = logcraft.set_job(data, jobid=job)
        for k in range(4):
            crafted = logcraft.set_counter(crafted, "POSIX", k, "POSIX_BYTES_WRITTEN", near)
            crafted = logcraft.set_counter(crafted, "POSIX", k, "POSIX_BYTES_READ", near)
        (tree / f"job{job}.darshan").write_bytes(crafted)
    st = tmp_path / "store"
    assert cli.main(["ingest", str(tree), "--store", str(st)]) == 0
    rows = _jobs_csv(st, "--module", "POSIX")
    assert [r["jobid"] for r in rows] == ["1", "2"]
    for r in rows:
        # 4 records of (2^62 - 1); the other records' bytes are below 2^40 (the log's own)
        for col in ("bytes_read", "bytes_written"):
            assert float(r[col]) == pytest.approx(4 * near, rel=1e-6), col
        assert float(r["unique_bytes"]) == pytest.approx(8 * near, rel=1e-6)  # read + written
        assert float(r["mib_per_proc"]) == pytest.approx(8 * near / 2**20, rel=1e-6)


def test_bad_module_and_missing_store_are_clear_errors(tmp_path, capsys):
    assert cli.main(["jobs", "--store", str(tmp_path), "--csv"]) == 2
    assert "no store here" in capsys.readouterr().err
    assert cli.main(["jobs", "--store", str(tmp_path), "--module", "HDF5"]) == 2
    assert "--module 'HDF5'" in capsys.readouterr().err


def test_strategy_rules_on_hand_made_records():
    """N:N, N:1, N:M, rank-0 from files rows whose classes are known by construction."""
    import duckdb
    import pandas as pd

    files = []

    def rec(log, rank, rid, nbytes):
        files.append(
            {
                **{c: None for c in store.TABLES["files"].names},
                "log_sha256": log,
                "module": "posix",
                "record_id": rid,
                "rank": rank,
                "bytes_read": 0,
                "bytes_written": nbytes,
                "reads": 0,
                "writes": 1,
                "meta_time": 0.1,
                "read_time": 0.0,
                "write_time": 1.0,
                "slowest_rank_time": 2.0,
                "seq_ops": 1,
                "unaligned": 0,
                "mode": 0,
            }
        )

    for r in range(4):
        rec("nn", r, 100 + r, 10)  # a file per process
    rec("n1", -1, 7, 40)  # one reduced shared file
    rec("nm", 0, 7, 20)  # ranks 0 and 1 of 4 share a file, 2 and 3 another
    rec("nm", 1, 7, 20)
    rec("nm", 2, 8, 20)
    rec("nm", 3, 8, 20)
    rec("r0", 0, 9, 40)  # only rank 0 moves data
    jobs = pd.DataFrame(
        [
            {
                **{c: None for c in store.TABLES["jobs"].names},
                "log_sha256": log,
                "log_path": log,
                "nprocs": 4,
                "nodes": 1,
                "modules": "POSIX",
            }
            for log in ("nn", "n1", "nm", "r0")
        ]
    )
    con = duckdb.connect()
    con.register("files", pd.DataFrame(files).astype({"record_id": "uint64"}))
    con.register("jobs", jobs)
    table = jobstats.job_table(con).set_index("log_path")
    assert table["strategy"].to_dict() == {"nn": "N:N", "n1": "N:1", "nm": "N:M", "r0": "rank-0"}
    assert table["io_procs"].to_dict() == {"nn": 4, "n1": 4, "nm": 4, "r0": 1}
    assert table["procs_per_file"].to_dict() == {"nn": 1, "n1": 4, "nm": 2, "r0": 1}
    # slowest rank: 1.1 s over its own records; the shared file: its slowest rank's 2 s
    assert table["io_time_slowest_s"].to_dict() == pytest.approx(
        {"nn": 1.1, "n1": 2.0, "nm": 1.1, "r0": 1.1}
    )
    assert table.loc["n1", "agg_perf_mib_s"] == pytest.approx(40 / 2**20 / 2.0)


# -- the one definition of MiB/s/CN, on hand-made tables whose values are worked out by hand ----

MiB = 2**20


def _files_row(job, rank, path, module="posix", **values):
    """A files-table row: every column of the store's schema, numbers 0 unless given."""
    row = {name: 0 for name in store.TABLES["files"].names}
    row |= {
        "run_id": "r1",
        "log_sha256": job,
        "module": module,
        "path": path,
        "rank": rank,
        "record_id": sum(map(ord, path)),
        "shared": rank == -1,
        "sharing": None,
    }
    return row | values


def _jobs_row(job, nprocs, nodes, source):
    row = dict.fromkeys(store.TABLES["jobs"].names)
    return row | {
        "run_id": "r1",
        "log_sha256": job,
        "log_path": f"{job}.darshan",
        "jobid": 7,
        "nprocs": nprocs,
        "nodes": nodes,
        "nodes_source": source,
        "modules": "POSIX+STDIO",
    }


# Job J1: 2 ranks on 2 compute nodes (the harness's tag).
#   rank 0, unique A: wrote 100 MiB, meta 0.5 s + write 1.5 s = 2.0 s, open 0.1 s, last write 2.0 s
#   rank 0, unique B: read 20 MiB, meta 0.5 s + read 1.0 s = 1.5 s        -> rank 0: 3.5 s (POSIX)
#   rank 1, unique C: wrote 60 MiB, meta 0.25 s + write 2.0 s = 2.25 s    -> rank 1: 2.25 s
#   shared S (rank -1): wrote 120 MiB, its slowest rank 3.0 s; first open 1.0 s, last write 5.0 s
#   STDIO <STDOUT> of rank 0: 1 MiB in 10 s of writes
J1 = [
    _files_row(
        "J1",
        0,
        "/d/A",
        bytes_written=100 * MiB,
        meta_time=0.5,
        write_time=1.5,
        open_start=0.1,
        write_end=2.0,
    ),
    _files_row(
        "J1",
        0,
        "/d/B",
        bytes_read=20 * MiB,
        meta_time=0.5,
        read_time=1.0,
        open_start=2.1,
        read_end=3.4,
    ),
    _files_row(
        "J1",
        1,
        "/d/C",
        bytes_written=60 * MiB,
        meta_time=0.25,
        write_time=2.0,
        open_start=0.1,
        write_end=2.3,
    ),
    _files_row(
        "J1",
        -1,
        "/d/S",
        bytes_written=120 * MiB,
        meta_time=1.0,
        write_time=6.0,
        slowest_rank_time=3.0,
        open_start=1.0,
        write_end=5.0,
    ),
    _files_row("J1", 0, "<STDOUT>", module="stdio", bytes_written=MiB, write_time=10.0),
]


def _job_table(files, jobs, sched=None, module=None):
    import duckdb
    import pandas as pd

    con = duckdb.connect()
    con.register("files", pd.DataFrame(files))
    con.register("jobs", pd.DataFrame(jobs))
    if sched is not None:
        con.register("sched", pd.DataFrame(sched))
    return jobstats.job_table(con, module=module).to_dict("records")


def test_both_time_forms_worked_out_by_hand_posix():
    (row,) = _job_table(J1, [_jobs_row("J1", 2, 2, "tag")], module="POSIX")
    assert row["bytes_read"] + row["bytes_written"] == 300 * MiB
    # PyDarshan's form: slowest rank 3.5 s + S's slowest rank 3.0 s = 6.5 s: 300 / 6.5 / 2 nodes
    assert row["io_time_slowest_s"] == pytest.approx(6.5)
    assert row["mib_s_per_cn"] == pytest.approx(300 / 6.5 / 2)
    # seed 000's form: max(slowest rank on its N:N files 3.5 s, S's span 5.0 - 1.0 = 4.0 s)
    assert row["io_time_span_s"] == pytest.approx(4.0)
    assert row["mib_s_per_cn_span"] == pytest.approx(37.5)
    assert (row["nodes"], row["nodes_source"], row["strategy"]) == (2, "tag", "N:N")


def test_the_default_scope_is_the_layers_that_moved_the_bytes():
    (row,) = _job_table(J1, [_jobs_row("J1", 2, 2, "tag")])
    assert row["module"] == "POSIX+STDIO+DFS+DAOS"
    assert row["bytes_read"] + row["bytes_written"] == 301 * MiB
    # rank 0: 3.5 s of POSIX and 10 s of STDIO; + S's 3.0 s
    assert row["io_time_slowest_s"] == pytest.approx(16.5)
    assert row["mib_s_per_cn"] == pytest.approx(301 / 16.5 / 2)
    assert row["io_time_span_s"] == pytest.approx(13.5)  # rank 0's N:N files outlast S's span
    assert row["mib_s_per_cn_span"] == pytest.approx(301 / 13.5 / 2)


# Job J2, IOR's DFS backend in small (cf. tests/data/darshan-logs: DFS over DAOS), 4 ranks:
#   the file /f written through DFS: 8 MiB, its slowest rank 2.0 s (DFS); DFS called DAOS,
#     whose record of the same object (record id 1) has the 8 MiB, its slowest rank 1.9 s;
#   DFS's namespace: DAOS's object "/" (record id 3): 100 bytes read, its slowest rank 0.1 s;
#   the file /g read through DFS, 1 MiB in 1.0 s, whose object DAOS kept no record of.
J2 = [
    _files_row(
        "J2",
        -1,
        "/f",
        module="dfs",
        record_id=1,
        bytes_written=8 * MiB,
        write_time=6.0,
        slowest_rank_time=2.0,
    ),
    _files_row(
        "J2",
        -1,
        "",
        module="daos",
        record_id=1,
        bytes_written=8 * MiB,
        write_time=5.9,
        slowest_rank_time=1.9,
    ),
    _files_row(
        "J2",
        -1,
        "/",
        module="daos",
        record_id=3,
        bytes_read=100,
        read_time=0.2,
        slowest_rank_time=0.1,
    ),
    _files_row(
        "J2",
        -1,
        "/g",
        module="dfs",
        record_id=2,
        bytes_read=MiB,
        read_time=3.0,
        slowest_rank_time=1.0,
    ),
]


def test_dfs_over_daos_counts_each_byte_once():
    (row,) = _job_table(J2, [_jobs_row("J2", 4, 1, "tag")])
    # DAOS's 8 MiB and 100 bytes, DFS's 1 MiB of the object DAOS has no record of
    assert (row["bytes_written"], row["bytes_read"]) == (8 * MiB, MiB + 100)
    assert row["io_time_slowest_s"] == pytest.approx(1.9 + 0.1 + 1.0)
    assert row["files"] == 3
    (dfs,) = _job_table(J2, [_jobs_row("J2", 4, 1, "tag")], module="DFS")
    assert (dfs["bytes_written"], dfs["bytes_read"]) == (8 * MiB, MiB)  # every DFS record


def test_slurm_nodes_override_and_a_source_is_always_named():
    sched = [
        {
            "cluster": "c1",
            "jobid": 7,
            "account": "a",
            "user": "u",
            "nodes": 4,
            "cores": 8,
            "elapsed_s": 60.0,
            "imported": None,
            "source": "s",
        }
    ]
    (row,) = _job_table(J1, [_jobs_row("J1", 2, 2, "tag")], sched=sched, module="POSIX")
    assert (row["nodes"], row["nodes_source"]) == (4, "slurm")
    assert row["mib_s_per_cn"] == pytest.approx(300 / 6.5 / 4)
    (old,) = _job_table(J1, [_jobs_row("J1", 2, 1, None)], module="POSIX")
    assert old["nodes_source"] == "unrecorded"  # a store made before sources were kept


def test_a_job_without_records_has_no_rate():
    (row,) = _job_table(
        J1[:0] + [_files_row("J0", 0, "/d/A", module="mpiio")], [_jobs_row("J0", 1, 1, "tag")]
    )
    assert row["bytes_read"] + row["bytes_written"] == 0
    assert math.isnan(row["mib_s_per_cn"]) and math.isnan(row["mib_s_per_cn_span"])
    assert (row["nodes"], row["nodes_source"]) == (1, "tag")


def test_nodes_unknown_give_no_rate_also_the_1_an_older_ingest_assumed():
    """Issue 42: a node count is known or unknown, never assumed."""
    for nodes, source in ((None, "unknown"), (1, "assumed")):
        (row,) = _job_table(J1, [_jobs_row("J1", 2, nodes, source)], module="POSIX")
        assert pd.isna(row["nodes"]) and row["nodes_source"] == "unknown"
        assert math.isnan(row["mib_s_per_cn"]) and math.isnan(row["mib_s_per_cn_span"])
        assert row["agg_perf_mib_s"] == pytest.approx(300 / 6.5)
