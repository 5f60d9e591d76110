"""Metrics on hand-made tables whose results are computed by hand in the comments (a job's
MiB/s/CN: test_jobstats.py)."""

import json
import math

import pandas as pd
import pytest

from iostudy.metrics import metrics

MiB = 2**20


def frec(job, rank, path, module="posix", rid=None, **values):
    """One files-table row; unset bytes, times and timestamps are 0."""
    row = {
        "run_id": "r1",
        "log_sha256": job,
        "module": module,
        "record_id": rid if rid is not None else hash(path) & 0xFFFF,
        "rank": rank,
        "path": path,
        "shared": rank == -1,
    }
    for col in ("bytes_read", "bytes_written"):
        row[col] = values.pop(col, 0)
    for col in (
        "read_time",
        "write_time",
        "meta_time",
        "open_start",
        "read_end",
        "write_end",
        "read_start",
        "write_start",
        "close_end",
    ):
        value = values.pop(col, 0.0)
        row[col] = None if value is None else float(value)
    assert not values, values
    return row


def jobs_table(*rows):
    return pd.DataFrame(
        [
            {
                "run_id": "r1",
                "log_sha256": j,
                "nprocs": n,
                "nodes": nodes,
                "system": "local",
                "repetition": 0,
                "environ": "openmpi",
            }
            for j, n, nodes in rows
        ]
    )


def test_shared_file_from_per_rank_records():
    # No "shared" column: file T has records of ranks 0 and 1, so it is shared.
    #   T: first open 0.5 s (rank 0), last write end 2.5 s (rank 1) -> 2.0 s, 20 MiB
    #   U: rank 1 only (unique), meta 0.1 + write 0.4 = 0.5 s, 5 MiB
    #   a rank-0 record of T that only stat'ed it (open_start 0) does not move the first open.
    # 25 MiB / max(0.5, 2.0) s = 12.5 MiB/s.
    files = pd.DataFrame(
        [
            frec("J2", 0, "/d/T", rid=7, bytes_written=10 * MiB, open_start=0.5, write_end=2.0),
            frec("J2", 1, "/d/T", rid=7, bytes_written=10 * MiB, open_start=0.7, write_end=2.5),
            frec("J2", 2, "/d/T", rid=7, meta_time=0.01),
            frec("J2", 1, "/d/U", rid=8, bytes_written=5 * MiB, meta_time=0.1, write_time=0.4),
        ]
    ).drop(columns="shared")
    jobs = jobs_table(("J2", 3, 1))
    files = metrics.with_sharing(files, jobs)
    # T: ranks 0, 1, 2 of a 3-process job -> N:1; U: rank 1 alone -> N:N
    assert files["sharing"].tolist() == ["N:1", "N:1", "N:1", "N:N"]
    (row,) = metrics.io_time(files, jobs, ["run_id", "log_sha256"]).to_dict("records")
    assert (row["shared_files"], row["unique_files"]) == (1, 1)
    assert row["strategy"] == "N:1"  # 20 MiB to T, 5 MiB to U
    assert row["shared_time"] == pytest.approx(2.0)
    assert row["unique_time"] == pytest.approx(0.5)
    assert row["mib_s"] == pytest.approx(12.5)


# Job J3, 4 ranks, one node, the benchmark's files in its model directories:
#   n1-p4-f4-m1 (file per process): rank k writes 1 MiB, meta 0.01 s + write (0.05 + 0.01 k) s;
#     slowest rank 3: 0.09 s -> 4 MiB / 0.09 s = 44.44 MiB/s
#   n1-p4-f1-m1 (shared): 4 MiB, first open 1.00 s, last write end 1.08 s -> 50 MiB/s
#   /etc/hosts is in no model directory.
J3 = [
    frec(
        "J3",
        k,
        f"/s/n1-p4-f4-m1/file{k}.dat",
        bytes_written=MiB,
        meta_time=0.01,
        write_time=0.05 + 0.01 * k,
        open_start=0.1,
        write_end=0.2,
    )
    for k in range(4)
] + [
    frec(
        "J3", -1, "/s/n1-p4-f1-m1/file0.dat", bytes_written=4 * MiB, open_start=1.0, write_end=1.08
    ),
    frec("J3", 0, "/etc/hosts", bytes_read=100, read_time=0.5, open_start=0.01, read_end=0.6),
]


def bench(model, n, p, f, m, mib_s, environ="openmpi"):
    return {
        "run_id": "r1",
        "system": "local",
        "environ": environ,
        "repetition": 0,
        "model": model,
        "n": n,
        "p": p,
        "f": f,
        "m": m,
        "io_procs": n * p,
        "procs_per_file": p // f * m,
        "nodes": n,
        "bytes": 4 * MiB,
        "write_seconds": 4 / mib_s,
        "write_mib_s": mib_s,
    }


def test_sharing_class_is_the_stored_one_else_the_same_rule():
    # A 4-process job: V has records of ranks 0 and 1 (some: N:M); W a rank -1 record (all:
    # N:1); X rank 2 alone (N:N). Ingest's stored class wins where the row has one.
    files = pd.DataFrame(
        [
            frec("J4", 0, "/d/V", rid=1, bytes_written=MiB),
            frec("J4", 1, "/d/V", rid=1, bytes_written=MiB),
            frec("J4", -1, "/d/W", rid=2, bytes_written=MiB),
            frec("J4", 2, "/d/X", rid=3, bytes_written=MiB),
        ]
    )
    jobs = jobs_table(("J4", 4, 1))
    assert metrics.with_sharing(files, jobs)["sharing"].tolist() == ["N:M", "N:M", "N:1", "N:N"]
    files["sharing"] = [None, None, None, "N:1"]
    assert metrics.with_sharing(files, jobs)["sharing"].tolist() == ["N:M", "N:M", "N:1", "N:1"]
    # a one-process job's files are N:N, even a reduced record
    one = metrics.with_sharing(files.drop(columns="sharing"), jobs_table(("J4", 1, 1)))
    assert set(one["sharing"]) == {"N:N"}


def test_model_throughput_and_table1_crosscheck():
    files, jobs = pd.DataFrame(J3), jobs_table(("J3", 4, 1))
    models = metrics.model_throughput(files, jobs)
    by_model = {tuple(r[k] for k in "npfm"): r for r in models.to_dict("records")}
    assert set(by_model) == {(1, 4, 4, 1), (1, 4, 1, 1)}
    assert by_model[(1, 4, 4, 1)]["mib_s"] == pytest.approx(4 / 0.09)
    assert by_model[(1, 4, 4, 1)]["strategy"] == "N:N"
    assert by_model[(1, 4, 1, 1)]["strategy"] == "N:1"
    assert by_model[(1, 4, 1, 1)]["mib_s"] == pytest.approx(50.0)
    assert by_model[(1, 4, 1, 1)]["bytes"] == 4 * MiB

    iomodel = pd.DataFrame(
        [
            # 44.44 vs 45: -1.2%, within 3%
            bench("file-per-process", 1, 4, 4, 1, 45.0),
            # 50 vs 52: -3.8%, outside
            bench("single-shared-file", 1, 4, 1, 1, 52.0),
            # another MPI flavour's benchmark row: no log of that flavour, unmatched
            bench("single-shared-file", 1, 4, 1, 1, 51.0, environ="mpich"),
            # not a Table I model
            bench(None, 1, 2, 1, 1, 30.0),
        ]
    )
    check = metrics.table1_crosscheck(models, iomodel)
    assert len(check) == 3
    fpp, ssf, other = check.to_dict("records")
    assert fpp["derived_mib_s"] == pytest.approx(4 / 0.09)
    assert fpp["rel_diff"] == pytest.approx((4 / 0.09 - 45) / 45)
    assert fpp["within_tolerance"] and fpp["log_sha256"] == "J3"
    assert ssf["rel_diff"] == pytest.approx((50 - 52) / 52) and not ssf["within_tolerance"]
    assert other["environ"] == "mpich" and math.isnan(other["derived_mib_s"])
    assert not other["within_tolerance"]
    assert len(metrics.table1_crosscheck(models, iomodel, names=None)) == 4


def test_iomodel_histogram_bins():
    # (io_procs, procs_per_file, nodes, write_seconds, write_mib_s) -> bin (x, y), MiB/s per
    # node-hour = write_mib_s / (nodes * write_seconds / 3600):
    #   (1, 1, 1, 2.0, 10) -> (0, 0), 10 / (2/3600)   = 18000
    #   (4, 1, 2, 1.0, 40) -> (2, 0), 40 / (2/3600)   = 72000
    #   (4, 1, 1, 0.5, 30) -> (2, 0), 30 / (0.5/3600) = 216000
    #   (4, 4, 2, 4.0, 50) -> (2, 2), 50 / (8/3600)   = 22500
    # Bin (2, 0): 2 models, max MiB/s 40 (one model), max per node-hour 216000 (the other).
    rows = [(1, 1, 1, 2.0, 10.0), (4, 1, 2, 1.0, 40.0), (4, 1, 1, 0.5, 30.0), (4, 4, 2, 4.0, 50.0)]
    iomodel = pd.DataFrame(
        [
            {
                "run_id": "r1",
                "system": "local",
                "environ": "openmpi",
                "bytes": 4 * MiB,
                "io_procs": a,
                "procs_per_file": b,
                "nodes": c,
                "write_seconds": d,
                "write_mib_s": e,
            }
            for a, b, c, d, e in rows
        ]
    )
    hist = metrics.iomodel_histogram(iomodel)
    bins = {(r["x_log2_io_procs"], r["y_log2_procs_per_file"]): r for r in hist.to_dict("records")}
    assert set(bins) == {(0, 0), (2, 0), (2, 2)}
    assert (bins[(2, 0)]["models"], bins[(2, 0)]["io_procs"]) == (2, 4)
    assert bins[(2, 0)]["max_write_mib_s"] == 40.0
    assert bins[(2, 0)]["max_mib_s_per_node_hour"] == pytest.approx(216000.0)
    assert bins[(0, 0)]["max_mib_s_per_node_hour"] == pytest.approx(18000.0)
    assert bins[(2, 2)]["max_mib_s_per_node_hour"] == pytest.approx(22500.0)
    assert bins[(2, 2)]["procs_per_file"] == 4
    assert set(hist["run_id"]) == {"r1"}


def test_metrics_command_on_empty_store(tmp_path, capsys):
    from iostudy.cli.cli import main

    store = tmp_path / "store"
    store.mkdir()
    assert main(["metrics", "--store", str(store), "--out", str(tmp_path / "m")]) == 0
    last = capsys.readouterr().out.strip().splitlines()[-1]
    assert last.startswith(f"metrics: 5 tables written to {tmp_path / 'm'}")
    names = ("jobs", "model_throughput", "table1_crosscheck", "ior_crosscheck")
    for name in (*names, "iomodel_histogram"):
        assert (tmp_path / "m" / f"{name}.csv").is_file()


# ior_check's runs (ior table: IOR's own results) and their logs (jobs + files). The derived
# time of an operation is the larger of busy (the slowest rank's write or read time) and span
# (first start to last end of that operation over the ranks).
#   run A: POSIX, shared file, 2 ranks, one iteration; IOR: write 2 MiB in 0.100 s, read 2 MiB
#     in 0.050 s. Its log, a record per rank of <dir>/testfile:
#       rank 0: wrote 1 MiB in 0.090 s (1.00 .. 1.07: its fsync came after), read 1 MiB in
#               0.040 s (2.00 .. 2.040) (+ 0.5 s of metadata: left out)
#       rank 1: wrote 1 MiB in 0.095 s (1.01 .. 1.08), read 1 MiB in 0.045 s (2.01 .. 2.070)
#     write: busy 0.095, span 0.08 -> 0.095 s: 2 MiB / 0.095 s = 21.05 MiB/s against IOR's 20:
#       +5.3 %, outside 3 %
#     read: busy 0.045, span 0.070 (the library's work between the reads) -> 0.070 s:
#       28.57 MiB/s against 40: -29 %, outside
#     Another file of rank 0 (/d/other, 8 MiB written in 9 s) is not IOR's test file.
#   run B: MPIIO, file per process, 2 ranks, two iterations; IOR: write 2 MiB in 0.2 s and in
#     0.2 s, read in 0.1 s and 0.1 s. Its log, in the MPI-IO module (POSIX records beneath):
#       testfile.00000000 rank 0: wrote 2 MiB in 0.390 s, read 2 MiB in 0.195 s
#       testfile.00000001 rank 1: wrote 2 MiB in 0.380 s, read 2 MiB in 0.190 s
#       (no start timestamps: a store ingested before they were kept; busy alone)
#     write: 4 MiB / 0.390 s = 10.256 MiB/s against 4 MiB / 0.4 s = 10: +2.6 %, within
#     read:  4 MiB / 0.195 s = 20.51 against 20: +2.6 %, within
#   run C: POSIX, fpp, its log's records reduced to rank -1: no slowest rank, NaN.
#   run D: no log at all.
def ior_row(tags, op, iteration, nbytes, seconds, api="POSIX", layout="shared"):
    return {
        "run_id": "r1",
        "log_tags": tags,
        "system": "local",
        "environ": "openmpi",
        "repetition": 0,
        "api": api,
        "layout": layout,
        "target": "scratch",
        "transfer_size": MiB,
        "block_size": MiB,
        "procs": 2,
        "nodes": 1,
        "operation": op,
        "iteration": iteration,
        "aggregate_bytes": nbytes,
        "total_s": seconds,
        "bw_mib_s": nbytes / MiB / seconds,
    }


def ior_tags(api, layout):
    return f'{{"api": "{api}", "check": "ior_check", "layout": "{layout}"}}'


def test_ior_crosscheck_against_the_slowest_rank():
    kinds = [("POSIX", "shared"), ("MPIIO", "fpp"), ("POSIX", "fpp"), ("HDF5", "fpp")]
    ta, tb, tc, td = (ior_tags(*k) for k in kinds)
    ior = pd.DataFrame(
        [ior_row(ta, "write", 0, 2 * MiB, 0.1), ior_row(ta, "read", 0, 2 * MiB, 0.05)]
        + [
            ior_row(tb, op, i, 2 * MiB, t, "MPIIO", "fpp")
            for i in (0, 1)
            for op, t in (("write", 0.2), ("read", 0.1))
        ]
        + [ior_row(tc, "write", 0, 2 * MiB, 0.1, layout="fpp")]
        + [ior_row(td, "write", 0, 2 * MiB, 0.1, "HDF5", "fpp")]
    )
    files = pd.DataFrame(
        [
            frec(
                "A",
                0,
                "/s/testfile",
                bytes_written=MiB,
                write_time=0.09,
                bytes_read=MiB,
                read_time=0.04,
                meta_time=0.5,
                write_start=1.0,
                write_end=1.07,
                read_start=2.0,
                read_end=2.04,
            ),
            frec(
                "A",
                1,
                "/s/testfile",
                bytes_written=MiB,
                write_time=0.095,
                bytes_read=MiB,
                read_time=0.045,
                write_start=1.01,
                write_end=1.08,
                read_start=2.01,
                read_end=2.07,
            ),
            frec("A", 0, "/d/other", bytes_written=8 * MiB, write_time=9.0),
            *[
                frec(
                    "B",
                    r,
                    f"/s/testfile.0000000{r}",
                    module=m,
                    bytes_written=2 * MiB,
                    write_time=w,
                    bytes_read=2 * MiB,
                    read_time=rd,
                    read_start=None,
                    write_start=None,
                )
                for r, w, rd in ((0, 0.39, 0.195), (1, 0.38, 0.19))
                for m in ("mpiio", "posix")
            ],
            frec("C", -1, "/s/testfile.00000000", bytes_written=2 * MiB, write_time=0.2),
        ]
    )
    lib = '"lib_ver": "iostudy-0.1.0", '
    jobs = pd.DataFrame(
        [
            {"run_id": "r1", "log_sha256": sha, "check": "ior_check", "tags": "{" + lib + t[1:]}
            for sha, t in (("A", ta), ("B", tb), ("C", tc))
        ]
        + [{"run_id": "r1", "log_sha256": "X", "check": "iomodel_check", "tags": "{}"}]
    )
    out = metrics.ior_crosscheck(ior, files, jobs)
    got = {(r["api"], r["layout"], r["operation"]): r for r in out.to_dict("records")}
    assert len(out) == 6

    a_write, a_read = got["POSIX", "shared", "write"], got["POSIX", "shared", "read"]
    assert a_write["log_sha256"] == "A" and a_write["log_bytes"] == 2 * MiB
    assert a_write["log_mib_s"] == pytest.approx(2 / 0.095)
    assert a_write["span_seconds"] == pytest.approx(0.08)
    assert a_write["ior_mib_s"] == pytest.approx(20.0)
    assert a_write["rel_diff"] == pytest.approx((2 / 0.095 - 20) / 20)
    assert not a_write["within_tolerance"]
    assert a_read["busy_seconds"] == pytest.approx(0.045)
    assert a_read["log_mib_s"] == pytest.approx(2 / 0.07) and not a_read["within_tolerance"]

    b_write, b_read = got["MPIIO", "fpp", "write"], got["MPIIO", "fpp", "read"]
    assert b_write["iterations"] == 2 and b_write["ior_bytes"] == 4 * MiB
    assert b_write["log_bytes"] == 4 * MiB  # the MPI-IO records only, not the POSIX beneath
    assert b_write["log_mib_s"] == pytest.approx(4 / 0.39) and b_write["within_tolerance"]
    assert math.isnan(b_write["span_seconds"])
    assert b_read["log_mib_s"] == pytest.approx(4 / 0.195) and b_read["within_tolerance"]

    reduced, missing = got["POSIX", "fpp", "write"], got["HDF5", "fpp", "write"]
    assert reduced["log_sha256"] == "C" and math.isnan(reduced["log_mib_s"])
    assert not reduced["within_tolerance"]
    assert pd.isna(missing["log_sha256"]) and math.isnan(missing["log_mib_s"])
    assert not missing["within_tolerance"]


def test_ior_phase_logs_take_seed_000s_shared_file_time_from_the_open():
    """ior_check launches each IOR phase apart, its log tagged with the phase: the time then
    runs from the phase's first open (seed 000's form for shared files). A collective MPI-IO
    open of 0.1 s before writes from 1.1 to 1.5 s on both ranks: 0.5 s, against IOR's 0.5 s
    (the first I/O alone would give 0.4 s, +25 %). The write log has no read row."""
    tags = {"api": "MPIIO", "check": "ior_check", "layout": "shared"}
    phase = {op: json.dumps({**tags, "phase": op}) for op in ("write", "read")}
    ior = pd.DataFrame(
        [
            ior_row(phase["write"], "write", 0, 2 * MiB, 0.5, "MPIIO"),
            ior_row(phase["read"], "read", 0, 2 * MiB, 0.25, "MPIIO"),
        ]
    )
    files = pd.DataFrame(
        [
            frec(
                "W",
                r,
                "/s/testfile",
                module="mpiio",
                bytes_written=MiB,
                write_time=0.39,
                open_start=1.0,
                write_start=1.1,
                write_end=1.5,
            )
            for r in (0, 1)
        ]
        + [
            frec(
                "R",
                r,
                "/s/testfile",
                module="mpiio",
                bytes_read=MiB,
                read_time=0.1,
                open_start=0.2,
                read_start=0.3,
                read_end=0.44 + 0.01 * r,
            )
            for r in (0, 1)
        ]
    )
    jobs = pd.DataFrame(
        [
            {"run_id": "r1", "log_sha256": sha, "check": "ior_check", "tags": phase[op]}
            for sha, op in (("W", "write"), ("R", "read"))
        ]
    )
    derived = metrics.ior_log_bandwidth(files, jobs)
    assert sorted(zip(derived["log_sha256"], derived["operation"], strict=True)) == [
        ("R", "read"),
        ("W", "write"),
    ]
    out = {r["operation"]: r for r in metrics.ior_crosscheck(ior, files, jobs).to_dict("records")}
    assert out["write"]["log_sha256"] == "W" and out["read"]["log_sha256"] == "R"
    assert out["write"]["span_seconds"] == pytest.approx(0.5)
    assert out["write"]["log_mib_s"] == pytest.approx(4.0) and out["write"]["within_tolerance"]
    assert out["read"]["span_seconds"] == pytest.approx(0.25)
    assert out["read"]["rel_diff"] == pytest.approx(0.0) and out["read"]["within_tolerance"]


def test_ior_hdf5_phase_time_is_the_librarys_open_to_close():
    """HDF5 (and PnetCDF) work outside any MPI-IO call: its H5Fopen starts before
    MPI_File_open, its H5Fclose ends after MPI_File_close. With the log's H5F records the time
    runs from the first H5Fopen (0.95 s) to the last H5Fclose's end (1.6 s): 0.65 s as IOR
    timed it, where the MPI-IO records alone give 0.5 s (+30 %)."""
    tags = json.dumps({"api": "HDF5", "check": "ior_check", "layout": "shared", "phase": "write"})
    ior = pd.DataFrame([ior_row(tags, "write", 0, 2 * MiB, 0.65, "HDF5")])
    files = pd.DataFrame(
        [
            frec(
                "W",
                r,
                "/s/testfile",
                module="mpiio",
                bytes_written=MiB,
                write_time=0.39,
                open_start=1.0,
                write_start=1.1,
                write_end=1.5,
            )
            for r in (0, 1)
        ]
        + [
            frec(
                "W",
                r,
                "/s/testfile",
                module="h5f",
                open_start=0.95 + 0.01 * r,
                close_end=1.6 - 0.01 * r,
            )
            for r in (0, 1)
        ]
    )
    jobs = pd.DataFrame([{"run_id": "r1", "log_sha256": "W", "check": "ior_check", "tags": tags}])
    (row,) = metrics.ior_crosscheck(ior, files, jobs).to_dict("records")
    assert row["log_bytes"] == 2 * MiB  # bytes from MPI-IO: the H5F record has none
    assert row["span_seconds"] == pytest.approx(0.65) and row["within_tolerance"]
    no_h5f = metrics.ior_crosscheck(ior, files[files["module"] == "mpiio"], jobs)
    assert no_h5f["span_seconds"].iloc[0] == pytest.approx(0.5)
    assert not no_h5f["within_tolerance"].iloc[0]
