"""iostudy ingest: real logs into the store, a corrupt log quarantined with its reason, re-ingest
a no-op; ReFrame's run report (from a real ReFrame run) into perf, benchmark output into
iomodel."""

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from iostudy.cli.cli import main
from iostudy.core import nodecount
from iostudy.core.provenance import sha256_file
from iostudy.logs import logrows
from iostudy.logs.darshanlog_worker import open_log
from iostudy.logs.logregions import DEFAULT_LIMITS
from iostudy.store import catalog, store

from . import filestate
from .rundirs import RUNTIME_MIB, make_run_dir, manifest

RUN = "20260302T090000Z-quick-local"
RELEASE_BYTES = 2**26  # the release log's shared file: 64 MiB written (and read) by 4 ranks


def ingest(capsys, *args):
    status = main(["ingest", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out.strip().splitlines(), out.err


@pytest.fixture
def run_dir(tmp_path, release_log):
    return make_run_dir(tmp_path / "results", RUN, release_log, tmp_path / "work")


def test_ingest_real_logs_and_quarantine(run_dir, tmp_path, capsys):
    st = tmp_path / "store"
    status, out, err = ingest(capsys, run_dir, "--store", st)
    assert status == 0, err
    assert out[-1] == (
        f"ingest: store {st} (store.duckdb): runs 1 ingested, 0 skipped; "
        "logs 2 ingested, 0 skipped, 1 quarantined"
    )
    for table in store.RUN_TABLES:
        assert filestate.part(st, table, RUN).is_file(), table
    assert (st / "store.duckdb").is_file()

    con = store.connect(st)
    jobs = con.execute("SELECT * FROM jobs ORDER BY nprocs").df()
    assert list(jobs["log_path"]) == [
        f"{RUN}/darshan/2026/3/2/dd_id1.darshan",
        f"{RUN}/darshan/2026/3/2/mpi-io-test_id3171794.darshan",
    ]
    dd, mpi = jobs.to_dict("records")
    # The runtime's log: tags from IOSTUDY_LOG_TAGS, nodes from the nodes tag.
    assert (dd["nprocs"], dd["nodes"], dd["campaign"], dd["check"], dd["system"]) == (
        1,
        1,
        "quick",
        "iomodel_check",
        "local",
    )
    assert (dd["repetition"], dd["environ"]) == (0, "openmpi")
    assert json.loads(dd["tags"])["check"] == "iomodel_check"
    assert dd["exe"].startswith("dd ")
    # The release log has no tags: campaign and system come from the manifest; 4 ranks on a
    # system of 2 cores per node and 1 node -> 1 node.
    assert (mpi["jobid"], mpi["nprocs"], mpi["nodes"], mpi["campaign"], mpi["system"]) == (
        3171794,
        4,
        1,
        "quick",
        "local",
    )
    assert mpi["check"] is None or mpi["check"] != mpi["check"]  # NULL
    assert str(mpi["start"]) == "2025-11-08 02:44:45.209444"
    assert mpi["log_sha256"] == sha256_file(run_dir / mpi["log_path"].split("/", 1)[1])

    files = con.execute(
        "SELECT f.* FROM files f JOIN jobs j USING (log_sha256) WHERE f.module = 'posix'"
    ).df()
    data = files[files["path"].str.endswith("n1-p1-f1-m1/file0.dat")].iloc[0]
    assert (data["bytes_written"], data["writes"], data["rank"], data["shared"]) == (
        RUNTIME_MIB * 2**20,
        RUNTIME_MIB,
        0,
        False,
    )
    assert 0 < data["open_start"] <= data["write_end"] <= data["close_end"]
    shared = files[files["path"].str.endswith("mpi-io-test.tmp.dat")].iloc[0]
    assert (shared["rank"], shared["shared"]) == (-1, True)
    assert (shared["bytes_written"], shared["bytes_read"]) == (RELEASE_BYTES, RELEASE_BYTES)
    assert set(con.execute("SELECT DISTINCT module FROM files").fetchall()) == {
        ("posix",),
        ("stdio",),
        ("mpiio",),
    }

    (q,) = con.execute("SELECT * FROM quarantine").df().to_dict("records")
    assert q["run_id"] == RUN
    assert q["path"] == f"{RUN}/darshan/2026/3/2/truncated_id2.darshan"
    assert q["sha256"] == sha256_file(run_dir / "darshan/2026/3/2/truncated_id2.darshan")
    assert "header" in q["reason"], q["reason"]
    assert "truncated_id2.darshan" in err  # the reason is shown too

    (r,) = con.execute("SELECT * FROM runs").df().to_dict("records")
    assert (r["run_id"], r["campaign"], r["system"], r["status"], r["study"]) == (
        RUN,
        "quick",
        "local",
        "finished",
        "quick",
    )
    assert r["manifest_path"] == f"{RUN}/manifest.json"
    assert str(r["started"]) == "2026-03-02 09:00:00"
    # No ReFrame report in this run: perf and iomodel are empty but exist.
    assert con.execute("SELECT count(*) FROM perf").fetchone() == (0,)
    assert con.execute("SELECT count(*) FROM iomodel").fetchone() == (0,)


def test_reingest_is_a_noop(run_dir, tmp_path, capsys):
    st = tmp_path / "store"
    assert ingest(capsys, run_dir, "--store", st)[0] == 0
    stamps = {p: p.stat().st_mtime_ns for p in st.rglob("*.parquet")}
    status, out, _ = ingest(capsys, run_dir, "--store", st)
    assert status == 0
    assert out[-1].endswith("runs 0 ingested, 1 skipped; logs 0 ingested, 0 skipped, 0 quarantined")
    assert {p: p.stat().st_mtime_ns for p in st.rglob("*.parquet")} == stamps


def ingest_after_its_manifest_changed(capsys, run_dir, st) -> list[str]:
    """The run's manifest changes (e.g. its final status) and it is ingested again: the
    output lines of that ingest."""
    (run_dir / "manifest.json").write_text(json.dumps(manifest(RUN, status="failed")))
    status, out, _ = ingest(capsys, run_dir, "--store", st)
    assert status == 0
    return out


def test_changed_run_reads_only_new_logs(run_dir, tmp_path, capsys, darshan_logs):
    st = tmp_path / "store"
    ingest(capsys, run_dir, "--store", st)
    # The run went on: a new log, and the manifest changed (e.g. its final status).
    new = darshan_logs / "release_logs" / "mpi-io-test-x86_64-3.4.0.darshan"
    shutil.copyfile(new, run_dir / "darshan" / "2026" / "3" / "2" / "late_id3.darshan")
    out = ingest_after_its_manifest_changed(capsys, run_dir, st)
    # The two ingested logs and the quarantined one are carried over, not read again.
    assert out[-1].endswith("runs 1 ingested, 0 skipped; logs 1 ingested, 3 skipped, 0 quarantined")
    con = store.connect(st)
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (3,)
    assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (1,)
    assert con.execute("SELECT status FROM runs").fetchone() == ("failed",)
    assert con.execute("SELECT count(DISTINCT log_sha256) FROM files").fetchone() == (3,)


def test_run_of_an_older_store_is_read_again_when_it_changes(run_dir, tmp_path, capsys):
    """A run ingested by an older iostudy (its files table without today's columns, no lustre
    table) that changes is read again whole, not carried over with columns missing."""
    import pyarrow.parquet as pq

    st = tmp_path / "store"
    ingest(capsys, run_dir, "--store", st)
    files = filestate.part(st, "files", RUN)
    pq.write_table(pq.read_table(files).drop_columns(["seeks", "max_byte"]), files)
    commit = catalog.Commit(st)  # a store of an iostudy that had no lustre table
    commit.drop("lustre", RUN)
    commit.apply()
    out = ingest_after_its_manifest_changed(capsys, run_dir, st)
    assert out[-1].endswith("runs 1 ingested, 0 skipped; logs 2 ingested, 0 skipped, 1 quarantined")
    con = store.connect(st)
    assert con.execute("SELECT count(*) FROM jobs").fetchone() == (2,)
    posix = con.execute("SELECT seeks, max_byte FROM files WHERE module = 'posix'").fetchall()
    assert posix and all(seeks is not None and top is not None for seeks, top in posix)
    assert filestate.part(st, "lustre", RUN).is_file()


def test_same_log_in_another_run_is_skipped(run_dir, tmp_path, capsys, release_log):
    st = tmp_path / "store"
    ingest(capsys, run_dir, "--store", st)
    other = tmp_path / "results" / "other-run"
    (other / "darshan").mkdir(parents=True)
    (other / "manifest.json").write_text(json.dumps(manifest("other-run")))
    shutil.copyfile(release_log, other / "darshan" / "copy.darshan")
    status, out, _ = ingest(capsys, other, "--store", st)
    assert status == 0
    assert out[-1].endswith("runs 1 ingested, 0 skipped; logs 0 ingested, 1 skipped, 0 quarantined")
    con = store.connect(st)
    assert con.execute("SELECT run_id, count(*) FROM runs GROUP BY ALL ORDER BY 1").fetchall() == [
        (RUN, 1),
        ("other-run", 1),
    ]
    assert con.execute("SELECT count(*) FROM jobs WHERE run_id = 'other-run'").fetchone() == (0,)


def test_not_a_run_dir(tmp_path, capsys):
    status = main(["ingest", str(tmp_path), "--store", str(tmp_path / "store")])
    assert status == 2
    assert "no manifest.json" in capsys.readouterr().err
    assert not (tmp_path / "store").exists()


def test_connect_without_store_gives_empty_tables(tmp_path):
    con = store.connect(tmp_path / "nothing")
    for table, schema in store.TABLES.items():
        rel = con.execute(f'SELECT * FROM "{table}"')
        assert [d[0] for d in rel.description] == schema.names
        assert rel.fetchall() == []


@pytest.mark.parametrize(
    ("tags", "system", "expected"),
    [
        ({"nodes": "3"}, None, (3, "tag")),
        ({"procs_per_node": "2"}, {"nodes": {"count": 8, "cores_per_node": 4}}, (2, "tag")),
        ({}, {"nodes": {"count": 8, "cores_per_node": 4}}, (1, "system")),
        ({}, {"nodes": {"count": 1, "cores_per_node": 2}}, (1, "system")),  # oversubscribed box
        ({}, None, (None, "unknown")),  # issue 42: never 1 assumed
        ({"h": "romio_no_indep_rw=true;cb_nodes=4"}, None, (None, "unknown")),  # ROMIO's
    ],
)
def test_job_nodes(tags, system, expected):
    assert nodecount.job_nodes(4, tags, system) == expected


# -- ReFrame's run report and the benchmark's JSON lines -----------------------------------------

CHECK = textwrap.dedent(
    """
    import reframe as rfm
    import reframe.utility.sanity as sn
    from reframe.core.builtins import parameter, performance_function, sanity_function


    @rfm.simple_test
    class fake_iomodel_check(rfm.RunOnlyRegressionTest):
        valid_systems = ["*"]
        valid_prog_environs = ["*"]
        size = parameter(["4M"])
        repetition = parameter([0, 1])
        executable = "cp"
        executable_opts = ["lines.jsonl", "iomodel.jsonl"]
        sourcesdir = "src"
        keep_files = ["iomodel.jsonl"]
        reference = {"*": {"fpp_write": (100.0, -0.5, None, "MiB/s")}}

        @sanity_function
        def ok(self):
            return sn.assert_found("iomodel", "iomodel.jsonl")

        @performance_function("MiB/s")
        def fpp_write(self):
            return sn.extractsingle(r'"write_mib_s": (\\S+),', "iomodel.jsonl", 1, float)
    """
)
SETTINGS = textwrap.dedent(
    """
    site_configuration = {
        "systems": [{
            "name": "fakesys", "descr": "test", "hostnames": [".*"],
            "partitions": [{"name": "part", "scheduler": "local", "launcher": "local",
                            "environs": ["openmpi"]}],
        }],
        "environments": [{"name": "openmpi", "cc": "cc"}],
        "logging": [{"handlers": [{"type": "file", "name": "LOGFILE", "level": "debug"}],
                     "handlers_perflog": []}],
    }
    """
)
LINES = [
    {
        "benchmark": "iomodel",
        "n": 1,
        "p": 2,
        "f": 2,
        "m": 1,
        "io_procs": 2,
        "procs_per_file": 1,
        "files": 2,
        "nodes": 1,
        "bytes": 4194304,
        "write_seconds": 0.02,
        "write_mib_s": 200.0,
        "read_seconds": None,
        "read_mib_s": None,
        "model": "file-per-process",
    },
    {
        "benchmark": "iomodel",
        "n": 1,
        "p": 2,
        "f": 1,
        "m": 1,
        "io_procs": 2,
        "procs_per_file": 2,
        "files": 1,
        "nodes": 1,
        "bytes": 4194304,
        "write_seconds": 0.04,
        "write_mib_s": 100.0,
        "read_seconds": None,
        "read_mib_s": None,
        "model": "single-shared-file",
    },
]


@pytest.fixture(scope="module")
def reframe_run(tmp_path_factory):
    """A run directory whose reframe/ is a real ReFrame run (report.json, output/) of a check
    that copies benchmark-like JSON lines (plus one broken line) to iomodel.jsonl."""
    work = tmp_path_factory.mktemp("reframe")
    (work / "src").mkdir()
    lines = [json.dumps(x) for x in LINES] + ["{broken"]
    (work / "src" / "lines.jsonl").write_text("\n".join(lines) + "\n")
    (work / "check.py").write_text(CHECK)
    (work / "settings.py").write_text(SETTINGS)
    run = work / "results" / "rf-run"
    prefix = run / "reframe"
    env = {k: v for k, v in os.environ.items() if not k.startswith("RFM_")}
    env["TMPDIR"] = str(work / "tmp")  # ReFrame leaves its logs in its temporary folder
    (work / "tmp").mkdir()
    proc = subprocess.run(
        [
            Path(sys.executable).with_name("reframe"),
            "-C",
            "settings.py",
            "-c",
            "check.py",
            "--prefix",
            prefix,
            "--report-file",
            prefix / "report.json",
            "--nocolor",
            "-r",
        ],
        cwd=work,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr
    (run / "manifest.json").write_text(json.dumps(manifest("rf-run", system="fakesys")))
    # The store must find the cases again after the run directory moved.
    moved = work / "moved" / "rf-run"
    moved.parent.mkdir()
    shutil.move(run, moved)
    return moved


def test_perf_and_iomodel_from_reframe(reframe_run, tmp_path, capsys):
    st = tmp_path / "store"
    status, out, err = ingest(capsys, reframe_run, "--store", st)
    assert status == 0, err
    # No logs; the broken benchmark line of each of the two cases is quarantined.
    assert out[-1].endswith("logs 0 ingested, 0 skipped, 2 quarantined")
    con = store.connect(st)
    perf = con.execute("SELECT * FROM perf ORDER BY parameters").df()
    assert len(perf) == 2
    for rep, row in enumerate(perf.to_dict("records")):
        assert (row["run_id"], row["system"], row["partition"], row["environ"]) == (
            "rf-run",
            "fakesys",
            "part",
            "openmpi",
        )
        assert (row["check"], row["variable"], row["value"], row["unit"]) == (
            "fake_iomodel_check",
            "fpp_write",
            200.0,
            "MiB/s",
        )
        assert (row["reference"], row["lower"], row["result"]) == (100.0, -0.5, "pass")
        assert row["upper"] != row["upper"]  # None in ReFrame: NULL
        assert json.loads(row["parameters"]) == {"size": "4M", "repetition": rep}
    iomodel = con.execute("SELECT * FROM iomodel ORDER BY repetition, procs_per_file").df()
    assert list(iomodel["repetition"]) == [0, 0, 1, 1]
    assert list(iomodel["model"]) == ["file-per-process", "single-shared-file"] * 2
    first = iomodel.iloc[0]
    assert (first["system"], first["environ"], first["check"]) == (
        "fakesys",
        "openmpi",
        "fake_iomodel_check",
    )
    assert (first["n"], first["p"], first["f"], first["m"], first["bytes"]) == (1, 2, 2, 1, 2**22)
    assert first["write_mib_s"] == 200.0 and first["read_mib_s"] != first["read_mib_s"]
    assert first["source_path"].startswith("rf-run/reframe/output/fakesys/part/openmpi/")
    reasons = con.execute("SELECT reason FROM quarantine").fetchall()
    assert len(reasons) == 2 and all("line 3" in r for (r,) in reasons)


def test_ior_results_from_the_check(run_dir, tmp_path, capsys):
    """ior.jsonl as ior_check writes it (checks.save_json_lines of real IOR output, captured in
    reframe-checks/tests/data/ior/posix-fpp.json: 2 tasks, 3 iterations) becomes the ior table;
    a line that is not IOR's is left out and quarantined."""
    from iostudy.benchmarks import checks

    data = Path(__file__).parents[2] / "reframe-checks" / "tests" / "data" / "ior"
    raw = (data / "posix-fpp.json").read_text()
    out = run_dir / "reframe" / "output" / "local" / "default" / "openmpi" / "ior_check_1"
    out.mkdir(parents=True)
    tags = {"check": "ior_check", "system": "local", "environ": "openmpi", "layout": "fpp"}
    tags |= {"procs": 2, "procs_per_node": 2, "nodes": 1, "target": "scratch", "repetition": 0}
    checks.save_json_lines(checks.ior_results(raw)["results"], out / "ior.jsonl", tags)
    with open(out / "ior.jsonl", "a") as f:
        f.write('{"benchmark": "something else"}\n')
    st = tmp_path / "store"
    status, _, err = ingest(capsys, run_dir, "--store", st)
    assert status == 0, err
    con = store.connect(st)
    ior = con.execute("SELECT * FROM ior ORDER BY operation, iteration").df()
    expected = {"read": [], "write": []}
    for result in json.loads(raw)["tests"][0]["Results"]:
        for entry in result if isinstance(result, list) else [result]:
            expected[entry["access"]].append(float(entry["bwMiB"]))
    assert list(ior["operation"]) == ["read"] * 3 + ["write"] * 3
    assert list(ior["bw_mib_s"]) == pytest.approx(expected["read"] + expected["write"])
    assert set(ior["layout"]) == {"fpp"} and set(ior["api"]) == {"POSIX"}
    assert set(ior["aggregate_bytes"]) == {2 * 2**20} and set(ior["run_id"]) == {RUN}
    (reason,) = con.execute("SELECT reason FROM quarantine WHERE path LIKE '%ior.jsonl'").fetchone()
    assert "not an ior_check record" in reason


def test_library_file_records_become_rows(darshan_logs):
    """HDF5's and PnetCDF's file-level records (upstream Darshan's IOR logs) are files rows of
    modules h5f and pnetcdf, with the library's first open and last close."""
    run = {"run_id": RUN, "log_path": "x.darshan", "log_sha256": "s"}
    logs = darshan_logs / "ior_pnetcdf_hdf5"
    # H5F has no bytes: null, never 0
    for pattern, token, opens, written in (
        ("HDF5", "h5f", 8, None),
        ("PNETCDF", "pnetcdf", 8, 4194476),
    ):
        (path,) = logs.glob(f"shane_ior-{pattern}_*.darshan")
        with open_log(str(path), DEFAULT_LIMITS) as checked:
            log = logrows.read_for_ingest(checked, None)
        rows = [r for c in logrows.files_columns([(run, log)]) for r in c.rows()]
        (row,) = [r for r in rows if r["module"] == token]
        assert (row["rank"], row["shared"], row["opens"]) == (-1, True, opens)
        assert row.get("bytes_written") == written  # left out: null
        assert 0 < row["open_start"] < row["close_end"]
        assert row["path"].endswith("/testFile")


def test_ingest_as_a_command_says_nothing_after_its_summary(tmp_path, darshan_logs):
    """The ingest command's last words are its summary: no complaint at interpreter exit (the
    pool's frozen objects are given back to the collector: DuckDB's bindings print "leaked"
    lines when the last collection misses them)."""
    iostudy = Path(sys.executable).with_name("iostudy")
    argv = [iostudy, "ingest", darshan_logs / "release_logs", "--store", tmp_path / "store"]
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1].startswith("ingest: store ")
    assert "leaked" not in proc.stderr and "nanobind" not in proc.stderr, proc.stderr[-2000:]


def test_component_records_from_the_checks(run_dir, tmp_path, capsys):
    """components.jsonl as fio_check writes it (iostudy.benchmarks.components on a fio report)
    becomes the components table; lines that are no component record, or carry no rate, are
    left out and the file quarantined with each reason."""
    from iostudy.benchmarks import checks, components

    out = run_dir / "reframe" / "output" / "local" / "default" / "openmpi" / "fio_check_1"
    out.mkdir(parents=True)
    report = {"jobs": [{"write": {"io_bytes": 2 << 26, "bw_bytes": 300 << 20}}]}
    records = components.fio_records(report, "write", 2, 4 << 20)
    tags = {"check": "fio_check", "system": "local", "environ": "openmpi", "repetition": 0}
    checks.save_json_lines(records, out / "components.jsonl", tags)
    bad = [
        {"log_tags": {"check": "ior_check"}, "component": "storage"},
        {"log_tags": tags, "component": "disk", "operation": "write"},
        {
            "log_tags": tags,
            "component": "storage",
            "operation": "write",
            "mib_s": -1,
            "aggregate_mib_s": 1,
        },
    ]
    with open(out / "components.jsonl", "a") as f:
        f.write("".join(json.dumps(b) + "\n" for b in bad) + "not json\n")
    st = tmp_path / "store"
    status, _, err = ingest(capsys, run_dir, "--store", st)
    assert status == 0, err
    con = store.connect(st)
    (row,) = con.execute("SELECT * FROM components").df().to_dict("records")
    assert (row["component"], row["operation"], row["jobs"], row["block"]) == (
        "storage",
        "write",
        2,
        4 << 20,
    )
    assert (row["aggregate_mib_s"], row["mib_s"], row["check"]) == (300.0, 150.0, "fio_check")
    (reason,) = con.execute(
        "SELECT reason FROM quarantine WHERE path LIKE '%components.jsonl'"
    ).fetchone()
    for said in (
        "line 2: not a fio_check or netbw_check record",
        "line 3: component 'disk': not storage or network",
        "line 4: mib_s = -1: not finite, >= 0",
        "line 5: ",
    ):
        assert said in reason, reason


def test_adaptive_records_from_the_check(run_dir, tmp_path, capsys):
    """adaptive.jsonl as adaptive_check writes it becomes the adaptive table; a line of another
    check, an unknown mode or a time that is no positive number is left out and the file
    quarantined with each reason."""
    from iostudy.benchmarks import adaptive, checks

    out = run_dir / "reframe" / "output" / "local" / "default" / "openmpi" / "adaptive_check_1"
    out.mkdir(parents=True)
    parsed = {
        "mode": "adaptive",
        "adapt": True,
        "writers": 8,
        "targets": 2,
        "bytes": 8 << 20,
        "bytes_per_writer": 1 << 20,
        "seconds": 0.5,
        "mib_s": 16.0,
        "moves": 2,
        "index_s": 0.01,
        "target_s": [0.3, 0.5],
        "writers_per_target": [6, 2],
    }
    tags = {"check": "adaptive_check", "system": "local", "environ": "openmpi"}
    # on a GlusterFS volume of two bricks: the competing writer's file on the first half
    on_bricks = [("n1-disk", "/t/n1/brick"), ("n2-disk", "/t/n2/brick")]
    row = adaptive.record(parsed, True, 1, on_bricks)
    checks.save_json_lines([row], out / "adaptive.jsonl", tags)
    bad = [
        {"log_tags": {"check": "fio_check"}, "mode": "adaptive"},
        {"log_tags": tags, "mode": "hdf5", "writers": 1, "seconds": 1, "mib_s": 1},
        {"log_tags": tags, "mode": "mpiio", "writers": 1, "seconds": 0, "mib_s": 1},
    ]
    with open(out / "adaptive.jsonl", "a") as f:
        f.write("".join(json.dumps(b) + "\n" for b in bad))
    st = tmp_path / "store"
    status, _, err = ingest(capsys, run_dir, "--store", st)
    assert status == 0, err
    con = store.connect(st)
    (row,) = con.execute("SELECT * FROM adaptive").df().to_dict("records")
    assert (row["mode"], row["writers"], row["moves"], row["interference"]) == (
        "adaptive",
        8,
        2,
        True,
    )
    assert json.loads(row["writers_per_target"]) == [6, 2] and row["mib_s"] == 16.0
    assert json.loads(row["target_names"]) == ["n1-disk", "n2-disk"]
    assert json.loads(row["interferer_targets"]) == ["n1-disk"]
    quiet = adaptive.record(parsed, False, 1, on_bricks)
    assert (
        quiet["interferer_targets"] is None
        and adaptive.record(parsed, True, 1)["interferer_targets"] is None
    )
    (reason,) = con.execute(
        "SELECT reason FROM quarantine WHERE path LIKE '%adaptive.jsonl'"
    ).fetchone()
    for said in (
        "line 2: not an adaptive_check record",
        "line 3: mode 'hdf5': not adaptive, mpiio or posix-fpp",
        "line 4: seconds 0: not a positive number",
    ):
        assert said in reason, reason
