"""The report's applications section (iostudy.report.apps): its tables on hand-made store rows with
numbers worked out by hand, and a report of a real HMMER campaign (Debian's or the Spack view's
hmmsearch) whose per-file table must hold the store's numbers."""

import csv
import io
import json
import subprocess
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.report import apps
from iostudy.report.studydata import StudyData
from iostudy.store import store
from tests import chromium, logcraft
from tests.rundirs import RUNTIME, runtime_env

pytestmark = pytest.mark.campaign

RUN1, RUN2 = "20260302T090000Z-apps-local", "20260303T090000Z-apps-local"
SCRATCH = "/scratch/hmmer_check_0"


def frame(table: str, rows: list[dict]) -> pd.DataFrame:
    """Rows in a store table's columns (missing columns null), as the store holds them."""
    names = store.TABLES[table].names
    return pd.DataFrame([{c: r.get(c) for c in names} for r in rows], columns=names)


def empty_tables() -> dict[str, pd.DataFrame]:
    return {name: frame(name, []) for name in store.TABLES}


def job(run_id, sha, check, tags, jobid, start="2026-03-02 09:00:00", nprocs=2, system="local"):
    tags = {
        "campaign": "apps",
        "check": check,
        "system": system,
        "environ": "openmpi",
        "partition": "default",
        "run_id": run_id,
        "repetition": "0",
        **tags,
    }
    return {
        "run_id": run_id,
        "log_sha256": sha,
        "check": check,
        "system": system,
        "environ": "openmpi",
        "repetition": 0,
        "jobid": jobid,
        "nprocs": nprocs,
        "start": pd.Timestamp(start),
        "tags": json.dumps(tags, sort_keys=True),
    }


def rec(run_id, sha, module, path, rank=-1, **counters):
    base = {
        "bytes_read": 0,
        "bytes_written": 0,
        "reads": 0,
        "writes": 0,
        "read_time": 0.0,
        "write_time": 0.0,
        "meta_time": 0.0,
        "seeks": 0,
        "max_byte": -1,
    }
    return {
        "run_id": run_id,
        "log_sha256": sha,
        "module": module,
        "path": path,
        "rank": rank,
        **base,
        **counters,
    }


def hmmer_rows(run_id=RUN1):
    """Two hmmer_check logs: configuration A (the database read by both ranks, a record each)
    and B (the -o file; an empty <STDOUT> record, which is not B's output), and a POSIX record
    that the STDIO table leaves out."""
    jobs = [
        job(run_id, "a", "hmmer_check", {"config": "A", "procs": "2"}, 11),
        job(run_id, "b", "hmmer_check", {"config": "B", "procs": "2"}, 12),
    ]
    files = [
        rec(
            run_id,
            "a",
            "stdio",
            f"{SCRATCH}/families.hmm",
            bytes_read=3000,
            reads=30,
            read_time=0.25,
            meta_time=0.05,
            max_byte=1499,
        ),
        rec(
            run_id,
            "a",
            "stdio",
            f"{SCRATCH}/db.fa",
            rank=0,
            bytes_read=4000,
            reads=40,
            read_time=1.0,
            meta_time=0.5,
            seeks=3,
            max_byte=999,
        ),
        rec(
            run_id,
            "a",
            "stdio",
            f"{SCRATCH}/db.fa",
            rank=1,
            bytes_read=2000,
            reads=20,
            read_time=0.5,
            seeks=2,
            max_byte=799,
        ),
        rec(
            run_id,
            "a",
            "stdio",
            "<STDOUT>",
            rank=0,
            bytes_written=600,
            writes=6,
            write_time=0.125,
            max_byte=599,
        ),
        rec(run_id, "a", "posix", f"{SCRATCH}/db.fa", rank=0, bytes_read=99999, reads=9),
        rec(
            run_id,
            "b",
            "stdio",
            f"{SCRATCH}/families.hmm",
            bytes_read=1500,
            reads=15,
            read_time=0.5,
            max_byte=1499,
        ),
        rec(
            run_id,
            "b",
            "stdio",
            f"{SCRATCH}/db.fasta",
            bytes_read=2000,
            reads=10,
            read_time=2.0,
            seeks=1,
            max_byte=999,
        ),
        rec(
            run_id,
            "b",
            "stdio",
            f"{SCRATCH}/hmmsearch.out",
            rank=0,
            bytes_written=700,
            writes=7,
            write_time=0.25,
            meta_time=0.25,
            max_byte=699,
        ),
        rec(run_id, "b", "stdio", "<STDOUT>", rank=0),
    ]
    return jobs, files


def test_hmmer_table_by_hand():
    jobs, files = hmmer_rows()
    t = apps.hmmer_files(frame("jobs", jobs), frame("files", files))
    got = {(r["role"], r["config"], r["file"]): r for r in t.to_dict("records")}
    columns = ["file_size_bytes", "io_volume_bytes", "io_time_s", "io_count", "seek_count"]
    expected = {
        # size: highest byte + 1 (the larger of the ranks'); the rest summed over ranks
        ("HMM (input)", "A", "families.hmm"): (1500, 3000, 0.30, 30, 0),
        ("sequence DB (input)", "A", "db.fa"): (1000, 6000, 2.0, 60, 5),
        ("output", "A", "<STDOUT>"): (600, 600, 0.125, 6, 0),
        ("totals", "A", "3 files"): (3100, 9600, 2.425, 96, 5),
        ("HMM (input)", "B", "families.hmm"): (1500, 1500, 0.5, 15, 0),
        ("sequence DB (input)", "B", "db.fasta"): (1000, 2000, 2.0, 10, 1),
        ("output", "B", "hmmsearch.out"): (700, 700, 0.5, 7, 0),
        ("other", "B", "<STDOUT>"): (0, 0, 0.0, 0, 0),
        ("totals", "B", "4 files"): (3200, 4200, 3.0, 32, 1),
    }
    assert set(got) == set(expected)
    for key, values in expected.items():
        assert [got[key][c] for c in columns] == pytest.approx(list(values)), key
    # the seed's order: a role's configurations together, the totals last
    assert (
        list(t["role"])
        == ["HMM (input)"] * 2
        + ["sequence DB (input)"] * 2
        + ["output"] * 2
        + ["other"]
        + ["totals"] * 2
    )
    assert list(t["config"][:2]) == ["A", "B"] and list(t["jobid"][:2]) == [11, 12]
    assert t.loc[t["file"] == "db.fa", "path"].item() == f"{SCRATCH}/db.fa"


def test_hmmer_roles():
    assert apps.hmmer_role("/x/Pfam-A.hmm", "C") == "HMM (input)"
    assert apps.hmmer_role("/dev/shm/x/uniprot_sprot.fasta", "C") == "sequence DB (input)"
    assert apps.hmmer_role("<STDOUT>", "A") == "output"
    assert apps.hmmer_role("<STDOUT>", "C") == "other"
    assert apps.hmmer_role("/x/hmmsearch.out", "C") == "output"
    assert apps.hmmer_role("<STDERR>", "A") == "other"


def test_access_table_by_hand():
    jobs = [
        job(RUN1, "w", "btio_check", {"problem_class": "S", "phase": "write"}, 21, nprocs=4),
        job(RUN1, "h", "haccio_check", {"layout": "fpp"}, 22, start="2026-03-02 09:05:00"),
        job(RUN1, "i", "ior_check", {"api": "POSIX"}, 23),  # not an application
    ]
    files = [
        # BTIO: 100 POSIX ops (25 unaligned, 80 small); MPI-IO 30 collective, 10 independent
        rec(
            RUN1,
            "w",
            "posix",
            "/s/btio.mpi",
            rank=0,
            reads=10,
            writes=50,
            unaligned=15,
            small_reads=10,
            small_writes=40,
            bytes_written=5000,
            bytes_read=1000,
        ),
        rec(
            RUN1,
            "w",
            "posix",
            "/s/btio.mpi",
            rank=1,
            writes=40,
            unaligned=10,
            small_writes=30,
            bytes_written=4000,
        ),
        rec(
            RUN1,
            "w",
            "mpiio",
            "/s/btio.mpi",
            rank=-1,
            coll_ops=30,
            indep_ops=10,
            bytes_written=9000,
            bytes_read=1000,
        ),
        rec(RUN1, "w", "stdio", "<STDOUT>", rank=0, bytes_written=123, writes=3),
        # HACC-IO: POSIX only, 8 ops all aligned and large
        rec(
            RUN1,
            "h",
            "posix",
            "/s/part0",
            rank=0,
            writes=8,
            unaligned=0,
            small_reads=0,
            small_writes=0,
            bytes_written=8 << 20,
        ),
        rec(RUN1, "i", "posix", "/s/ior", rank=0, writes=1, bytes_written=1),
    ]
    t = apps.access_table(frame("jobs", jobs), frame("files", files))
    assert list(t["check"]) == ["btio_check", "haccio_check"]
    btio, hacc = t.to_dict("records")
    assert btio["parameters"] == "phase=write, problem_class=S"
    assert (btio["jobid"], btio["nprocs"], btio["posix_ops"]) == (21, 4, 100)
    assert btio["unaligned_pct"] == pytest.approx(25.0)
    assert btio["small_pct"] == pytest.approx(80.0)
    assert (btio["mpiio_coll_ops"], btio["mpiio_indep_ops"]) == (30, 10)
    assert btio["collective_pct"] == pytest.approx(75.0)
    assert (btio["posix_bytes"], btio["mpiio_bytes"], btio["stdio_bytes"]) == (10000, 10000, 123)
    assert btio["pnetcdf_bytes"] == 0
    assert (hacc["posix_ops"], hacc["unaligned_pct"], hacc["small_pct"]) == (8, 0.0, 0.0)
    assert hacc["posix_bytes"] == 8 << 20
    assert pd.isna(hacc["collective_pct"])  # no MPI-IO operation: no share


def madbench_perf():
    """madbench_check: two parameter sets (iomethod), two repetitions of POSIX, one failing."""
    rows = []
    for iomethod, rep, write_mib_s, s_write_s, result in (
        ("POSIX", 0, 100.0, 2.0, "pass"),
        ("POSIX", 1, 300.0, 4.0, "fail"),
        ("MPI", 0, 50.0, 1.0, "pass"),
    ):
        params = {"iomethod": iomethod, "npix": 1000, "procs": 4, "repetition": rep}
        for variable, value, unit in (
            ("write_mib_s", write_mib_s, "MiB/s"),
            ("s_write_s", s_write_s, "s"),
            ("io_gib", 1.5, "GiB"),
        ):
            rows.append(
                {
                    "run_id": RUN1,
                    "system": "local",
                    "environ": "openmpi",
                    "check": "madbench_check",
                    "parameters": json.dumps(params),
                    "variable": variable,
                    "value": value,
                    "unit": unit,
                    "result": "fail" if result == "fail" and unit == "s" else "pass",
                }
            )
    return frame("perf", rows)


def test_perf_table_and_bars_by_hand():
    perf = madbench_perf()
    t = apps.perf_table(perf, "madbench_check")
    assert list(t.columns) == [
        "run_id",
        "system",
        "environ",
        "iomethod",
        "npix",
        "procs",
        "repetition",
        "write_mib_s",
        "s_write_s",
        "io_gib",
        "result",
    ]
    # numbers before text, repetitions apart
    assert [(r.iomethod, r.repetition) for r in t.itertuples()] == [
        ("MPI", 0),
        ("POSIX", 0),
        ("POSIX", 1),
    ]
    assert list(t["write_mib_s"]) == [50.0, 100.0, 300.0]
    assert list(t["result"]) == ["pass", "pass", "fail"]
    bars = apps.perf_bars(perf, "madbench_check")
    assert set(bars["unit"]) == {"MiB/s", "s"}  # io_gib is neither bandwidth nor time
    got = {(r.group, r.variable): (r.mean, r.min, r.max, r.values) for r in bars.itertuples()}
    assert got == {
        ("iomethod=MPI", "write_mib_s"): (50.0, 50.0, 50.0, 1),
        ("iomethod=MPI", "s_write_s"): (1.0, 1.0, 1.0, 1),
        ("iomethod=POSIX", "write_mib_s"): (200.0, 100.0, 300.0, 2),
        ("iomethod=POSIX", "s_write_s"): (3.0, 2.0, 4.0, 2),
    }
    # a second system: its name in each group
    other = perf.assign(system="testcluster", run_id=RUN2)
    bars = apps.perf_bars(pd.concat([perf, other], ignore_index=True), "madbench_check")
    assert list(dict.fromkeys(bars["group"])) == [
        "local: iomethod=MPI",
        "local: iomethod=POSIX",
        "testcluster: iomethod=MPI",
        "testcluster: iomethod=POSIX",
    ]
    fig = apps.perf_figure(bars, "MADbench2")
    assert len([ax for ax in fig.axes if ax.get_visible()]) == 2


def collect(tables):
    items = []

    def add(section, kind, ident, caption, df, fig=None, table=False, hide=()):
        items.append(
            {
                "section": section,
                "kind": kind,
                "id": ident,
                "caption": caption,
                "df": df,
                "fig": fig,
                "table": table,
                "hide": list(hide),
            }
        )

    data = StudyData.of_frames(tables)
    try:
        apps.add_section(add, data)
    finally:
        data.close()
    return items


def test_no_application_data_adds_nothing():
    assert collect(empty_tables()) == []
    tables = empty_tables()
    tables["jobs"] = frame("jobs", [job(RUN1, "i", "ior_check", {}, 1)])
    tables["perf"] = frame(
        "perf",
        [{"run_id": RUN1, "check": "ior_check", "variable": "x", "value": 1.0, "unit": "MiB/s"}],
    )
    assert collect(tables) == []


def test_section_items():
    """Two runs of a system with HMMER jobs: the per-file table is of the later one; a table of
    access patterns per run; madbench's performance values with their figure."""
    tables = empty_tables()
    jobs1, files1 = hmmer_rows(RUN1)
    jobs2, files2 = hmmer_rows(RUN2)
    tables["jobs"] = frame("jobs", jobs1 + jobs2)
    tables["files"] = frame("files", files1 + files2)
    tables["perf"] = madbench_perf()
    tables["runs"] = frame(
        "runs",
        [
            {"run_id": RUN2, "system": "local", "started": pd.Timestamp("2026-03-03 09:00")},
            {"run_id": RUN1, "system": "local", "started": pd.Timestamp("2026-03-02 09:00")},
        ],
    )
    items = collect(tables)
    assert [i["id"] for i in items] == [
        "app-perf-madbench_check",
        "app-perf-madbench_check-bars",
        "hmmer-files-local",
        f"app-access-{RUN1}",
        f"app-access-{RUN2}",
    ]
    assert all(i["section"] == "applications" and i["caption"] for i in items)
    assert items[1]["fig"] is not None and items[1]["kind"] == "figure"
    assert set(items[2]["df"]["run_id"]) == {RUN2}
    assert set(items[3]["df"]["run_id"]) == {RUN1} and len(items[3]["df"]) == 2


# -- a real report ------------------------------------------------------------------------------


class Tables(HTMLParser):
    """The text of each row of the table that follows an element with a given id."""

    def __init__(self, ident):
        super().__init__()
        self.ident, self.seen, self.rows, self.cell, self.depth = ident, False, [], None, 0

    def handle_starttag(self, tag, attrs):
        if dict(attrs).get("id") == self.ident:
            self.seen = True
        elif self.seen and tag == "table":
            self.depth += 1
        elif self.depth and tag == "tr":
            self.rows.append([])
        elif self.depth and tag in ("td", "th"):
            self.cell = ""

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data

    def handle_endtag(self, tag):
        if self.depth and tag in ("td", "th"):
            self.rows[-1].append(self.cell)
            self.cell = None
        elif self.depth and tag == "table":
            self.depth, self.seen = 0, False


def test_report_of_a_real_hmmer_campaign(configs_copy, tmp_path, capsys):
    point = {
        "check": "hmmer_check",
        "parameters": {"config": ["A", "B", "C"], "procs": 2, "families": 2, "sequences": 500},
    }
    # one MPI flavour: without a Spack view Debian's hmmsearch (no MPI) would run once per flavour
    doc = {
        "name": "hmmerapps",
        "description": "test",
        "study": "tests",
        "checks": [point],
        "environs": ["openmpi"],
    }
    (configs_copy / "campaigns" / "hmmerapps.json").write_text(json.dumps(doc))
    results, store_dir, reports = tmp_path / "results", tmp_path / "store", tmp_path / "reports"
    status = main(["campaign", "run", "hmmerapps", "--system", "local", "--results", str(results)])
    assert status == 0, capsys.readouterr().out[-3000:]
    (run_dir,) = [p for p in results.iterdir() if p.is_dir()]
    assert main(["ingest", str(run_dir), "--store", str(store_dir)]) == 0
    assert (
        main(
            [
                "report",
                "build",
                "--store",
                str(store_dir),
                "--study",
                "tests",
                "--reports",
                str(reports),
                "--results",
                str(results),
            ]
        )
        == 0
    )
    v1 = reports / "tests" / "v1"
    html = (v1 / "index.html").read_text()
    # an applications study: its layout within the page budget, no console error; the three
    # configurations ran and passed, and with one run and no reference that can fail nothing
    # could fail: not judged, never a PASS
    report = chromium.verdict_at_top(v1 / "index.html")
    assert report["kind"] == "applications" and report["verdict"] == "NOT JUDGED", report
    assert report["reasons"][0].startswith("3 test cases ran and passed, "), report
    chromium.assert_within_budget(v1 / "index.html")
    parser = Tables("hmmer-files-local")
    parser.feed(html)
    header, *rows = parser.rows
    assert "run_id" not in header and "path" not in header  # hidden in the page, in the CSV
    at = {name: header.index(name) for name in ("config", "role", "file", "io_volume_bytes")}
    shown = {(r[at["role"]], r[at["config"]]): r[at["file"]] for r in rows}
    for config in "ABC":
        assert shown[("HMM (input)", config)] == "families.hmm"
        assert shown[("sequence DB (input)", config)] == "db.fa"
        assert shown[("output", config)] == ("<STDOUT>" if config == "A" else "hmmsearch.out")
        assert shown[("totals", config)].endswith(" files")
    # The CSV's numbers of configuration C's database, read from node memory, worked out by
    # hand from hmmer.write_inputs and the point above (2 families, 500 sequences of
    # hmmer_check's default 300 residues):
    # - its size: sequence i is ">s<i>\n", 300 residues and "\n", 304 bytes and the digits of
    #   i; i in 0..499 has 10 * 1 + 90 * 2 + 400 * 3 = 1390 digits: 500 * 304 + 1390 = 153390;
    # - hmmsearch reads the whole database once per query HMM (2 families) and rewinds it
    #   between the two: 2 * 153390 = 306780 bytes, 1 seek;
    # - Easel reads it in 4096-byte freads: ceil(153390 / 4096) = 38 a pass, 76 in all.
    table = list(csv.DictReader(io.StringIO((v1 / "hmmer-files-local.csv").read_text())))
    (db,) = [r for r in table if r["config"] == "C" and r["role"] == "sequence DB (input)"]
    assert db["path"].startswith("/dev/shm/")
    counts = ("file_size_bytes", "io_volume_bytes", "io_count", "seek_count")
    assert [int(db[c]) for c in counts] == [153390, 306780, 76, 1]
    assert float(db["io_time_s"]) > 0  # a measured time: no value to expect
    m = json.loads((v1 / "MANIFEST.json").read_text())
    ids = {c["id"] for c in m["contents"]}
    assert {"app-perf-hmmer_check", "app-perf-hmmer_check-bars", "hmmer-files-local"} <= ids
    assert f"app-access-{run_dir.name}" in ids
    perf = list(csv.DictReader(io.StringIO((v1 / "app-perf-hmmer_check.csv").read_text())))
    assert sorted(r["config"] for r in perf) == ["A", "B", "C"]
    assert all(float(r["elapsed_s"]) >= 0 for r in perf)


# Near the store's bound (iostudy.logs.plausibility: values below 2^62) and multiples of 2^14, so
# that float64 holds every sum below 2^67 exactly: totals past 2^53 are float64 (as
# numfmt.integral makes them), and these must still equal the sums of the values written.
UNIT = 2**14
NEAR = 2**62 - 64 * UNIT


def runtime_log(log: Path, cwd: Path, tags: str, *command: str) -> bytes:
    """The log of a command run non-MPI under iostudy's runtime, tagged like a campaign job."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    env = runtime_env(log, tags)
    with open(cwd / "input.txt", "rb") as stdin:
        subprocess.run(
            command,
            cwd=cwd,
            env=env,
            stdin=stdin,
            stdout=subprocess.DEVNULL,
            check=True,
            timeout=60,
        )
    return log.read_bytes()


def near_bound(data: bytes, module: str, counters: list[str]) -> bytes:
    """The log with the counters of each record of module set near the bound, distinct per
    record and counter: record k's i-th counter is NEAR + (10 k + i) UNIT. Over n records,
    counter i sums to n NEAR + (10 n (n - 1) / 2 + n i) UNIT: 2 NEAR + (10 + 2 i) UNIT for
    2 records, 3 NEAR + (30 + 3 i) UNIT for 3, 5 NEAR + (100 + 5 i) UNIT for 5."""
    for k in range(len(logcraft.records(data, module))):
        for i, counter in enumerate(counters):
            data = logcraft.set_counter(data, module, k, counter, NEAR + (10 * k + i) * UNIT)
    return data


def test_report_totals_near_the_bound_do_not_wrap_around(tmp_path):
    """Two logs of application checks whose records each hold values just under 2^62, every
    value plausible: `sed` reading an HMM file and a database through STDIO (hmmer_check,
    configuration A) and `tee` writing two files through POSIX (btio_check). Their sums over
    records pass 2^63, where int64 sums wrap around. Through a real ingest and report build,
    each total is the sum of the values written."""
    work = tmp_path / "work"
    work.mkdir()
    (work / "families.hmm").write_text("HMMER3/f\n")
    (work / "db.fa").write_text(">seq1\nACGT\n")
    (work / "input.txt").write_text("x" * 1000)
    tags = "campaign=apps;system=local;environ=gnu;repetition=0;check="
    tree = tmp_path / "tree"
    tree.mkdir()
    sed = runtime_log(
        tmp_path / "sed.darshan",
        work,
        tags + "hmmer_check;config=A",
        "sed",
        "-n",
        "",
        "families.hmm",
        "db.fa",
    )
    assert len(logcraft.records(sed, "STDIO")) == 2  # the two files sed read
    stdio = [
        "STDIO_BYTES_READ",
        "STDIO_BYTES_WRITTEN",
        "STDIO_READS",
        "STDIO_WRITES",
        "STDIO_SEEKS",
    ]
    sed = near_bound(sed, "STDIO", stdio)
    sizes = [NEAR + k * UNIT for k in (1, 2)]  # a file's size: its highest byte + 1
    for k, size in enumerate(sizes):
        sed = logcraft.set_counter(sed, "STDIO", k, "STDIO_MAX_BYTE_READ", size - 1)
    (tree / "sed.darshan").write_bytes(sed)
    tee = runtime_log(
        tmp_path / "tee.darshan", work, tags + "btio_check;problem_class=S", "tee", "a.dat", "b.dat"
    )
    posix = [
        "POSIX_READS",
        "POSIX_WRITES",
        "POSIX_BYTES_READ",
        "POSIX_BYTES_WRITTEN",
        "POSIX_FILE_NOT_ALIGNED",
    ]
    # POSIX: a.dat, b.dat and <STDIN>, <STDOUT>, <STDERR>; STDIO: a.dat, b.dat and <STDOUT>
    # (tee writes all three with fwrite_unlocked).
    assert len(logcraft.records(tee, "POSIX")) == 5 and len(logcraft.records(tee, "STDIO")) == 3
    tee = near_bound(tee, "POSIX", posix)
    tee = near_bound(tee, "STDIO", stdio[:2])
    (tree / "tee.darshan").write_bytes(tee)
    st, reports = tmp_path / "store", tmp_path / "reports"
    ingest = ["ingest", str(tree), "--store", str(st), "--study", "apps", "--system", "local"]
    assert main(ingest) == 0
    build = ["report", "build", "--store", str(st), "--study", "apps", "--reports", str(reports)]
    assert main(build) == 0
    v = reports / "apps" / "v1"

    def whole(text):
        return int(float(text))

    # Expected sums by hand, from near_bound's values (N = NEAR, U = UNIT; counter i of the
    # lists above). sed's 2 STDIO records: bytes read and written (i = 0, 1) (2N + 10U) +
    # (2N + 12U); reads and writes (i = 2, 3) (2N + 14U) + (2N + 16U); seeks (i = 4) 2N + 18U.
    sed_bytes, sed_ops, sed_seeks = 4 * NEAR + 22 * UNIT, 4 * NEAR + 30 * UNIT, 2 * NEAR + 18 * UNIT
    # tee's 5 POSIX records: reads and writes (i = 0, 1) (5N + 100U) + (5N + 105U); bytes read
    # and written (i = 2, 3) (5N + 110U) + (5N + 115U); not aligned (i = 4) 5N + 120U. Its 3
    # STDIO records: bytes read and written (3N + 30U) + (3N + 33U).
    tee_ops, tee_bytes = 10 * NEAR + 205 * UNIT, 10 * NEAR + 225 * UNIT
    tee_unaligned, tee_stdio_bytes = 5 * NEAR + 120 * UNIT, 6 * NEAR + 63 * UNIT

    # HMMER's table: the totals row sums the two files (a file's size: its highest byte + 1).
    rows = _csv_rows(v / "hmmer-files-local.csv")
    assert sorted(r["role"] for r in rows) == ["HMM (input)", "sequence DB (input)", "totals"]
    (totals,) = [r for r in rows if r["role"] == "totals"]
    assert whole(totals["file_size_bytes"]) == 2 * NEAR + 3 * UNIT  # sizes N + U and N + 2U
    assert whole(totals["io_volume_bytes"]) == sed_bytes > 2**63
    assert whole(totals["io_count"]) == sed_ops
    assert whole(totals["seek_count"]) == sed_seeks

    # The access patterns: a row per log, its sums over the log's records of a module.
    (access,) = list(v.glob("app-access-*.csv"))
    by_check = {r["check"]: r for r in _csv_rows(access)}
    hmmer, btio = by_check["hmmer_check"], by_check["btio_check"]
    assert whole(hmmer["stdio_bytes"]) == sed_bytes
    assert whole(hmmer["posix_ops"]) == 0
    assert whole(btio["posix_ops"]) == tee_ops > 2**64
    assert whole(btio["posix_bytes"]) == tee_bytes
    assert whole(btio["stdio_bytes"]) == tee_stdio_bytes
    expected_pct = 100 * tee_unaligned / tee_ops  # (5N + 120U) / (10N + 205U): just over 50 %
    assert float(btio["unaligned_pct"]) == pytest.approx(expected_pct, rel=1e-12)


def _csv_rows(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text())))
