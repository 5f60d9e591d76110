"""The interference probe (reframe-checks/src/ioprobe/ioprobe.c) against seed 004, section II:
concurrent POSIX writers, "each process writes data to a separate file and to some fixed OST",
"writers are split evenly across the OSTs", open and close times omitted from the measurement,
and the imbalance factor, "the ratio of the slowest vs. fastest write times across all writers".

The oracles are outside the benchmark: the files on disk (size, every byte the writer's
pattern), the JSON fields recomputed from each other, the Darshan log that iostudy's runtime
writes when preloaded (read by PyDarshan), and for Lustre placement the calls a stand-in
liblustreapi receives. Runs use the flavour's own mpirun, oversubscribed on this host.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from benchmark_runs import (
    FLAVOURS,
    check_usage_error,
    describe,
    json_lines,
    require,
    run,
    runtime_env,
    the_log,
)

MIB = 1 << 20
KEYS = [
    "benchmark",
    "writers",
    "targets",
    "bytes_per_writer",
    "transfer",
    "files",
    "write_s",
    "open_s",
    "close_s",
    "slowest_write_s",
    "fastest_write_s",
    "imbalance",
    "aggregate_mib_s",
    "mean_writer_mib_s",
]
# 3 pieces of 64 KiB and a short one: SIZE need not be a multiple of TRANSFER.
SIZE = 3 * 64 * 1024 + 1000
TRANSFER = 64 * 1024


@pytest.fixture(params=FLAVOURS)
def flavour(request) -> str:
    return require("ioprobe", request.param)


def ioprobe(flavour: str, nprocs: int | None, *args, app_env: dict | None = None, timeout=120):
    """The benchmark under mpirun with nprocs ranks (app_env to the ranks only, so that mpirun
    itself is never instrumented), or alone as an MPI singleton when nprocs is None."""
    return run("ioprobe", flavour, nprocs, *args, app_env=app_env, timeout=timeout)


def pattern(rank: int) -> int:
    return 1 + rank % 255


def check_record(rec: dict, writers: int, targets: int, size: int, transfer: int):
    """Every field, and the derived ones recomputed here from the per-writer times."""
    assert list(rec) == KEYS, rec
    assert rec["benchmark"] == "ioprobe"
    assert (rec["writers"], rec["targets"]) == (writers, targets), rec
    assert (rec["bytes_per_writer"], rec["transfer"]) == (size, transfer), rec
    for key in ("write_s", "open_s", "close_s"):
        assert len(rec[key]) == writers, (key, rec)
        assert all(t >= 0 for t in rec[key]), (key, rec)
    write_s = rec["write_s"]
    assert all(t > 0 for t in write_s), rec  # a pwrite and an fsync take time
    slowest, fastest = max(write_s), min(write_s)
    # The derived fields come from the unrounded times; the lists carry 9 significant digits.
    assert rec["slowest_write_s"] == pytest.approx(slowest, rel=1e-8), rec
    assert rec["fastest_write_s"] == pytest.approx(fastest, rel=1e-8), rec
    assert rec["imbalance"] == pytest.approx(slowest / fastest, rel=1e-6), rec
    assert rec["imbalance"] >= 1, rec
    assert rec["aggregate_mib_s"] == pytest.approx(writers * size / MIB / slowest, rel=1e-6)
    mean = sum(size / MIB / t for t in write_s) / writers
    assert rec["mean_writer_mib_s"] == pytest.approx(mean, rel=1e-6), rec


# --- real runs ----------------------------------------------------------------------------


@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_keep_leaves_one_file_per_writer_with_its_pattern(flavour, nprocs, tmp_path):
    out = tmp_path / "a" / "b"  # neither exists: rank 0 creates both
    res = ioprobe(
        flavour, nprocs, "--dir", out, "--size", SIZE, "--transfer", "64K", "--targets", 2, "--keep"
    )
    recs = json_lines(res)
    assert len(recs) == 1, describe(res)
    check_record(recs[0], nprocs, 2, SIZE, TRANSFER)
    assert sorted(p.name for p in out.iterdir()) == sorted(f"writer.{r}" for r in range(nprocs))
    for r in range(nprocs):
        assert (out / f"writer.{r}").read_bytes() == bytes([pattern(r)]) * SIZE, r


@pytest.mark.parametrize("nprocs", [1, 2, 4])
def test_without_keep_nothing_is_left(flavour, nprocs, tmp_path):
    """Default transfer: 1 MiB, here the whole 3 MiB in three pwrites per writer."""
    recs = json_lines(ioprobe(flavour, nprocs, "--dir", tmp_path, "--size", "3M"))
    check_record(recs[0], nprocs, 1, 3 * MIB, MIB)
    assert list(tmp_path.iterdir()) == []


def test_default_transfer_is_at_most_size_and_keep_replaces_old_files(flavour, tmp_path):
    """SIZE below 1 MiB: one pwrite of SIZE. A longer file of an earlier --keep run is
    truncated (O_TRUNC), not overwritten in part."""
    (tmp_path / "writer.1").write_bytes(b"\0" * (2 * MIB))
    recs = json_lines(ioprobe(flavour, 2, "-d", tmp_path, "-s", "100K", "-k"))
    check_record(recs[0], 2, 1, 100 * 1024, 100 * 1024)
    assert (tmp_path / "writer.1").read_bytes() == bytes([pattern(1)]) * 100 * 1024


def test_failing_open_exits_1_naming_rank_and_file(flavour, tmp_path):
    """A directory where writer 1's file goes: its open fails (EISDIR, for root too); the job
    prints no JSON, every rank finishes, and writer 0's file is removed all the same."""
    (tmp_path / "writer.1").mkdir()
    res = ioprobe(flavour, 2, "--dir", tmp_path, "--size", "1M")
    assert res.returncode == 1, describe(res)
    assert res.stdout == "", describe(res)
    want = f"ioprobe: rank 1: open {tmp_path}/writer.1: Is a directory"
    assert want in res.stderr.splitlines(), describe(res)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["writer.1"]


def test_help_prints_usage_and_fields(flavour):
    res = ioprobe(flavour, None, "--help")
    assert res.returncode == 0, describe(res)
    assert res.stdout.startswith("usage: ioprobe --dir DIR --size SIZE")
    assert all(key in res.stdout for key in KEYS)


# --- under iostudy's runtime ----------------------------------------------------------------


def test_runtime_log_has_one_record_per_writer_within_its_write_time(flavour, tmp_path):
    """PyDarshan's view of the log: one POSIX record per writer file, written by that writer,
    with SIZE bytes in ceil(SIZE / TRANSFER) writes and one fsync. The runtime adds the time of
    each pwrite and of the fsync to POSIX_F_WRITE_TIME (runtime/src/posix_*.c; overlaps counted
    once), all of them inside the interval the benchmark reports as write_s, so the file's
    write time is positive and at most write_s (plus clock granularity: the runtime reads
    CLOCK_MONOTONIC, the benchmark MPI_Wtime)."""
    nprocs = 2
    tmp = Path(os.path.realpath(tmp_path))  # the runtime records paths without symlinks
    out, logs = tmp / "out", tmp / "logs"
    env = runtime_env(logs)
    res = ioprobe(flavour, nprocs, "--dir", out, "--size", SIZE, "--transfer", "64K", app_env=env)
    recs = json_lines(res)
    check_record(recs[0], nprocs, 1, SIZE, TRANSFER)
    assert list(out.iterdir()) == [], "the runtime changes nothing: files removed as without it"
    log = the_log(logs, res)
    assert log["job"]["nprocs"] == nprocs
    names = log["name_records"]
    files = {
        names[r["id"]]: r for r in log["records"]["POSIX"] if names[r["id"]].startswith(f"{out}/")
    }
    assert sorted(files) == sorted(f"{out}/writer.{r}" for r in range(nprocs))
    pieces = -(-SIZE // TRANSFER)
    for r in range(nprocs):
        rec = files[f"{out}/writer.{r}"]
        c, fc = rec["counters"], rec["fcounters"]
        assert rec["rank"] == r, rec["rank"]
        assert c["POSIX_BYTES_WRITTEN"] == SIZE, c
        assert (c["POSIX_WRITES"], c["POSIX_FSYNCS"], c["POSIX_OPENS"]) == (pieces, 1, 1), c
        write_time, own = fc["POSIX_F_WRITE_TIME"], recs[0]["write_s"][r]
        assert 0 < write_time <= own + 1e-4, (r, write_time, own)


# --- Lustre placement, with stand-ins --------------------------------------------------------
# No Lustre here: an LD_PRELOADed statfs reports Lustre's magic and a stand-in liblustreapi.so.1
# logs its llapi_file_create calls and creates the file, as the real one does (benchmark_runs).
# On a real Lustre `lfs getstripe -i DIR/writer.<r>` shows r mod K.


def llapi_calls(res: subprocess.CompletedProcess) -> list[tuple[str, ...]]:
    return sorted(
        tuple(x.split()[1:]) for x in res.stderr.splitlines() if x.startswith("llapi_file_create ")
    )


def test_lustre_one_stripe_per_writer_on_ost_r_mod_k(flavour, lustre_stand_ins, tmp_path):
    """4 writers on 3 targets: writer r's file is created with stripe size default (0), offset
    r mod 3, count 1, pattern 0. Run twice with --keep: the kept files of the first run are
    removed before they are created again (llapi_file_create refuses an existing file)."""
    shim, libdir = lustre_stand_ins
    env = {"LD_PRELOAD": shim, "LD_LIBRARY_PATH": libdir}
    for _ in range(2):
        res = ioprobe(
            flavour, 4, "--dir", tmp_path, "--size", "128K", "--targets", 3, "--keep", app_env=env
        )
        check_record(json_lines(res)[0], 4, 3, 128 * 1024, 128 * 1024)
        want = sorted((f"{tmp_path}/writer.{r}", "0", str(r % 3), "1", "0") for r in range(4))
        assert llapi_calls(res) == want, describe(res)
        said = [x for x in res.stderr.splitlines() if x.startswith("ioprobe: ")]
        assert said == [
            f"ioprobe: {tmp_path} is on Lustre: one stripe per file, writer r on OST r mod 3 "
            "(liblustreapi.so.1)"
        ], describe(res)
        for r in range(4):
            assert (tmp_path / f"writer.{r}").read_bytes() == bytes([pattern(r)]) * 128 * 1024


def test_lustre_without_liblustreapi_warns_once(flavour, lustre_stand_ins, tmp_path):
    shim, _ = lustre_stand_ins
    res = ioprobe(flavour, 2, "--dir", tmp_path, "--size", "64K", app_env={"LD_PRELOAD": shim})
    check_record(json_lines(res)[0], 2, 1, 64 * 1024, 64 * 1024)
    said = [x for x in res.stderr.splitlines() if x.startswith("ioprobe: ")]
    assert said == [
        f"ioprobe: warning: {tmp_path} is on Lustre but liblustreapi cannot be loaded: "
        "default striping"
    ], describe(res)
    assert llapi_calls(res) == []


def test_not_lustre_no_llapi_call_and_no_message(flavour, lustre_stand_ins, tmp_path):
    _, libdir = lustre_stand_ins
    res = ioprobe(
        flavour, 2, "--dir", tmp_path, "--size", "64K", app_env={"LD_LIBRARY_PATH": libdir}
    )
    check_record(json_lines(res)[0], 2, 1, 64 * 1024, 64 * 1024)
    assert res.stderr == "", describe(res)


# --- bad parameters: exit 2, one line naming the option ------------------------------------

BASE = {"--size": "1M", "--transfer": "256K", "--targets": "2"}
BAD = {
    "dir-missing": ({"--dir": None}, "--dir is required"),
    "size-missing": ({"--size": None}, "--size is required"),
    "size-zero": ({"--size": "0"}, "--size must be larger than 0"),
    "size-bad-suffix": ({"--size": "4X"}, "--size '4X' is not a size"),
    "size-negative": ({"--size": "-1"}, "--size '-1' is not a size"),
    "transfer-bad-suffix": ({"--transfer": "64KB"}, "--transfer '64KB' is not a size"),
    "transfer-zero": ({"--transfer": "0"}, "--transfer must be larger than 0"),
    "transfer-larger-than-size": (
        {"--size": "1M", "--transfer": "2M"},
        "--transfer 2097152 is larger than --size 1048576",
    ),
    "targets-zero": ({"--targets": "0"}, "--targets '0' is not a positive integer"),
    "targets-not-a-number": ({"--targets": "two"}, "--targets 'two' is not a positive integer"),
    "unknown-option": ({"--bogus": "1"}, "unknown option '--bogus'"),
}


def check_bad_parameters(res: subprocess.CompletedProcess, message: str):
    """The usage error of every benchmark, and ioprobe's usage line after it."""
    check_usage_error(res, "ioprobe", message)
    assert "usage: ioprobe" in res.stderr, describe(res)


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
def test_bad_parameters_exit_2(flavour, case, tmp_path):
    change, message = case
    opts = {**BASE, "--dir": str(tmp_path / "out"), **change}
    args = [x for k, v in opts.items() if v is not None for x in (k, v)]
    # Alone (one rank): every rank validates the same argv the same way; the exit status
    # through mpirun is covered below.
    check_bad_parameters(ioprobe(flavour, None, *args), message)
    assert not (tmp_path / "out").exists()


def test_bad_parameters_under_mpirun_exit_2_with_one_message(flavour, tmp_path):
    res = ioprobe(flavour, 2, "--dir", tmp_path / "out", "--size", "1M", "--targets", "0")
    check_bad_parameters(res, "--targets '0' is not a positive integer")
    assert not (tmp_path / "out").exists()


def test_dir_below_a_regular_file_exit_2(flavour, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    res = ioprobe(flavour, None, "--dir", a_file / "sub", "--size", "1M")
    check_bad_parameters(res, f"--dir {a_file / 'sub'}: cannot create {a_file / 'sub'}: Not a dir")
