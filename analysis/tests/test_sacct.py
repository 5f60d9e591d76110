"""iostudy sacct: real sacct output (captured on the Slurm test cluster, data/sacct/README.md)
into the sched table, bad lines reported with their numbers, the CLI's import round trip, and
coverage (seed 000 Table II) on a small store written by hand."""

import math
from datetime import datetime
from pathlib import Path

import duckdb
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iostudy.cli.cli import main
from iostudy.collect import sacct
from iostudy.store import catalog, imports, store

from . import filestate

DATA = Path(__file__).parent / "data" / "sacct"
REAL = DATA / "testcluster.txt"


@pytest.fixture(scope="module")
def real_text():
    return REAL.read_text()


def by_jobid(rows):
    return {r["jobid"]: r for r in rows}


def with_columns(text, keep):
    """The text with only the columns in keep, in keep's order (as sacct --format would print)."""
    lines = [line.split("|") for line in text.splitlines()]
    index = [lines[0].index(name) for name in keep]
    return "\n".join("|".join(fields[i] for i in index) for fields in lines) + "\n"


def run_cli(capsys, *args):
    status = main(["sacct", "import", *map(str, args)])
    out = capsys.readouterr()
    return status, out.out.strip().splitlines(), out.err


# -- parse ---------------------------------------------------------------------------------------


def test_parse_real_export(real_text):
    rows, problems, steps = sacct.parse(real_text, "testcluster.txt")
    assert problems == []
    # 16 data lines: 7 allocations, and the steps .batch and .0 of them.
    assert (len(rows), steps) == (7, 9)
    jobs = by_jobid(rows)
    # Array 1168_[0-2]: each task keeps its own id (JobIDRaw); task 2 has the array's id.
    assert sorted(jobs) == [1166, 1167, 1168, 1169, 1171, 1172, 1173]
    two_nodes = jobs[1167]
    assert two_nodes == {
        "cluster": "iostudytest",
        "jobid": 1167,
        "account": "root",
        "user": "root",
        "partition": "debug",
        "nodes": 2,
        "cores": 4,
        "elapsed_s": 1,
        "start": datetime(2026, 11, 22, 1, 1, 18),
        "end": datetime(2026, 11, 22, 1, 1, 19),
        "state": "COMPLETED",
        "source": "testcluster.txt",
    }
    assert (jobs[1169]["state"], jobs[1169]["cores"]) == ("FAILED", 2)
    # Captured while it ran: End is "Unknown".
    running = jobs[1173]
    assert (running["state"], running["end"], running["elapsed_s"]) == ("RUNNING", None, 6)
    assert running["start"] == datetime(2026, 11, 22, 1, 1, 41)
    assert {r["account"] for r in rows} == {"iostudy", "root"}


def test_parse_any_column_order_and_alternatives(real_text):
    rows, _, _ = sacct.parse(real_text, "x")
    header = real_text.splitlines()[0].split("|")
    shuffled = with_columns(real_text, list(reversed(header)))
    assert sacct.parse(shuffled, "x") == (rows, [], 9)
    # AllocCPUS for NCPUS, and an extra column sacct would print, are fine too.
    renamed = real_text.replace("|NCPUS|", "|AllocCPUS|", 1)
    extra = "\n".join(line + "|x" for line in renamed.splitlines())
    assert sacct.parse(extra, "x") == (rows, [], 9)


def test_parse_elapsed_in_clock_form(real_text):
    header = real_text.splitlines()[0].replace("|ElapsedRaw|", "|Elapsed|")
    line = "{}|{}|iostudytest|iostudy|root|debug|1|1|{}|2026-11-20T00:00:00|Unknown|RUNNING"
    text = "\n".join(
        [
            header,
            line.format(1, 1, "1-02:03:04"),
            line.format(2, 2, "00:01:05"),
            line.format(3, 3, "65"),
            line.format(4, 4, "1:2:3:4"),
        ]
    )
    rows, problems, _ = sacct.parse(text, "x.txt")
    assert [(r["jobid"], r["elapsed_s"]) for r in rows] == [
        (1, ((24 + 2) * 60 + 3) * 60 + 4),
        (2, 65),
    ]
    assert problems == [
        "x.txt:4: Elapsed is not [DD-]HH:MM:SS: '65'",
        "x.txt:5: Elapsed is not [DD-]HH:MM:SS: '1:2:3:4'",
    ]


def test_array_task_without_jobidraw_is_reported(real_text):
    header = real_text.splitlines()[0].split("|")
    text = with_columns(real_text, [h for h in header if h != "JobIDRaw"])
    rows, problems, steps = sacct.parse(text, "nojobidraw.txt")
    assert sorted(by_jobid(rows)) == [1166, 1167, 1169, 1173]
    assert steps == 9
    # Lines 9, 11 and 13 are the tasks 1168_0, 1168_1 and 1168_2 (the file's line numbers).
    assert [p.split(": ")[0] for p in problems] == [
        "nojobidraw.txt:9",
        "nojobidraw.txt:11",
        "nojobidraw.txt:13",
    ]
    assert "JobID '1168_0'" in problems[0] and "own job id is unknown" in problems[0]


def test_bad_lines_reported_with_numbers(real_text):
    lines = real_text.splitlines()
    assert lines[6].startswith("1169|") and lines[7].startswith("1169.batch|")
    lines[1] = lines[1].replace("|1|1|2|", "|one|1|2|")  # 1166: NNodes
    lines[3] = lines[3] + "|surplus"  # 1167: a field too many
    lines[6] = lines[6].replace("2026-11-22T01:01:21|2026", "yesterday|2026", 1)  # 1169: Start
    lines[7] = "garbage"  # was 1169's batch step
    lines.insert(8, "")  # blank lines are no data: not reported
    rows, problems, steps = sacct.parse("\n".join(lines) + "\n", "bad.txt")
    assert problems == [
        "bad.txt:2: NNodes is not a count: 'one'",
        "bad.txt:4: 13 fields, the header has 12",
        "bad.txt:7: not a time: 'yesterday'",
        "bad.txt:8: 1 fields, the header has 12",
    ]
    assert sorted(by_jobid(rows)) == [1168, 1171, 1172, 1173]
    assert steps == 8


def test_repeated_job_keeps_the_later_line(real_text):
    later = "1166|1166|iostudytest|root|root|debug|1|1|9|2026-11-22T01:05:00|Unknown|RUNNING"
    rows, problems, _ = sacct.parse(real_text + later + "\n", "twice.txt")
    assert by_jobid(rows)[1166]["account"] == "root"
    assert len(rows) == 7
    assert problems == ["twice.txt:2: job 1166 appears again on line 18, which replaces this line"]


def test_noheader_refused(real_text):
    body = "\n".join(real_text.splitlines()[1:])  # what --noheader prints
    with pytest.raises(sacct.SacctError, match=r"^run\.txt: no header line .*--noheader"):
        sacct.parse(body, "run.txt")


def test_not_sacct_and_missing_columns(real_text):
    with pytest.raises(sacct.SacctError, match=r"^f: not `sacct --parsable2` output"):
        sacct.parse("JobID JobIDRaw Account\n1 1 x\n", "f")  # sacct's fixed-width form
    header = real_text.splitlines()[0].split("|")
    text = with_columns(real_text, [h for h in header if h not in ("Account", "ElapsedRaw")])
    with pytest.raises(
        sacct.SacctError,
        match=r"^f: the header lacks required columns: Account; ElapsedRaw or Elapsed$",
    ):
        sacct.parse(text, "f")
    with pytest.raises(sacct.SacctError, match="empty"):
        sacct.parse("\n", "f")


def test_times_with_offset_and_zone(real_text):
    from zoneinfo import ZoneInfo

    rows, _, _ = sacct.parse(real_text, "x", tz=ZoneInfo("Europe/Berlin"))
    # 22 November: Berlin is UTC+1.
    assert by_jobid(rows)[1166]["start"] == datetime(2026, 11, 22, 0, 1, 16)
    offset = real_text.replace("2026-11-22T01:01:16|", "2026-11-22T01:01:16-0230|", 1)
    rows, problems, _ = sacct.parse(offset, "x", tz=ZoneInfo("Europe/Berlin"))
    assert problems == []
    assert by_jobid(rows)[1166]["start"] == datetime(2026, 11, 22, 3, 31, 16)


# -- the command ---------------------------------------------------------------------------------


def test_import_round_trip(tmp_path, capsys, real_text):
    st = tmp_path / "store"
    status, out, err = run_cli(capsys, REAL, "--store", st)
    assert status == 0, err
    part = filestate.part(st, "sched", "sacct-testcluster")
    assert out == [f"sacct import: 7 jobs into {part}; 9 step lines left out, 0 lines skipped"]
    assert pq.read_schema(part).names == store.TABLES["sched"].names
    assert (st / "store.duckdb").is_file()
    con = store.connect(st)
    first = con.execute("SELECT jobid, account, imported FROM sched ORDER BY jobid").fetchall()
    assert [r[:2] for r in first][:2] == [(1166, "iostudy"), (1167, "root")]
    assert con.execute("SELECT DISTINCT source FROM sched").fetchall() == [("testcluster.txt",)]

    # The same file again: its own part is replaced, no row twice.
    status, _, err = run_cli(capsys, REAL, "--store", st)
    assert status == 0, err
    part = filestate.part(st, "sched", "sacct-testcluster")
    assert sorted(p.name for p in (st / "sched").iterdir()) == [part.name]
    again = store.connect(st).execute("SELECT jobid, imported FROM sched").fetchall()
    assert len(again) == 7
    assert min(r[1] for r in again) > max(r[2] for r in first)

    # Another export that holds job 1166 under another account: the later import counts.
    other = tmp_path / "later.txt"
    lines = real_text.splitlines()[:2]
    other.write_text("\n".join([lines[0], lines[1].replace("|iostudy|", "|root|", 1)]) + "\n")
    status, out, err = run_cli(capsys, other, "--store", st)
    assert status == 0, err
    con = store.connect(st)
    assert con.execute("SELECT count(*) FROM sched").fetchone() == (8,)
    dedup = con.execute(f"SELECT jobid, account, source FROM ({sacct.sched_view_sql()})").fetchall()
    assert len(dedup) == 7
    assert (1166, "root", "later.txt") in dedup
    # ...and importing the first file again makes it the latest.
    run_cli(capsys, REAL, "--store", st)
    dedup = store.connect(st).execute(f"SELECT jobid, account FROM ({sacct.sched_view_sql()})")
    assert (1166, "iostudy") in dedup.fetchall()


def test_import_reports_bad_lines_and_writes_the_rest(tmp_path, capsys, real_text):
    bad = tmp_path / "bad.txt"
    bad.write_text(real_text.replace("|debug|2|4|1|", "|debug|2|four|1|", 1))
    status, out, err = run_cli(capsys, bad, "--store", tmp_path / "store")
    assert status == 0
    assert f"skipped: {bad}:4: NCPUS is not a count: 'four'" in err
    part = filestate.part(tmp_path / "store", "sched", "sacct-bad")
    assert out[-1].endswith(f"6 jobs into {part}; 9 step lines left out, 1 lines skipped")


def test_import_noheader_refused_and_nothing_written(tmp_path, capsys, real_text):
    good = tmp_path / "good.txt"
    good.write_text(real_text)
    noheader = tmp_path / "noheader.txt"
    noheader.write_text("\n".join(real_text.splitlines()[1:]) + "\n")
    st = tmp_path / "store"
    status, out, err = run_cli(capsys, good, noheader, "--store", st)
    assert status == 2
    assert out == []
    assert err.strip().splitlines() == [
        f"iostudy: error: {noheader}: no header line (captured with --noheader?): the columns "
        "cannot be known; capture with `sacct --parsable2` and without --noheader"
    ]
    assert not (st / "sched").exists()  # the good file is not half-imported either


def test_import_usage_errors(tmp_path, capsys):
    for args in ([], [REAL, "--live"], [REAL, "--starttime", "2026-01-01"]):
        with pytest.raises(SystemExit) as exc:
            main(["sacct", "import", *map(str, args), "--store", str(tmp_path)])
        assert exc.value.code == 2
    assert "give FILE... or --live" in capsys.readouterr().err
    status, _, err = run_cli(capsys, tmp_path / "absent.txt", "--store", tmp_path / "s")
    assert status == 2 and "absent.txt: cannot read: No such file or directory" in err


def test_help_explains(capsys):
    with pytest.raises(SystemExit):
        main(["sacct", "import", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert "--noheader" in text and "JobIDRaw" in text and sacct.SACCT_FORMAT in text


def test_live_without_sacct(tmp_path, capsys, monkeypatch):
    # A PATH without Slurm's commands: the real "not found" of exec.
    monkeypatch.setenv("PATH", str(tmp_path))
    status, out, err = run_cli(capsys, "--live", "--store", tmp_path / "store")
    assert status == 2 and out == []
    assert err.strip().splitlines() == [
        "iostudy: error: sacct not found: Slurm's client commands are not on PATH"
    ]


def test_live_sacct_fails(tmp_path, capsys, monkeypatch):
    # The real sacct (slurm-client, ci/apt-packages.txt) with an empty configuration file: it
    # exits 1 at once ("Unable to process configuration file").
    conf = tmp_path / "slurm.conf"
    conf.write_text("")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    status, out, err = run_cli(capsys, "--live", "--store", tmp_path / "store")
    assert status == 2 and out == []
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert lines[0].startswith("iostudy: error: sacct exited 1: sacct: fatal: Unable to process")
    assert f"--format={sacct.SACCT_FORMAT}" in lines[0]
    assert not (tmp_path / "store").exists()


# -- coverage ------------------------------------------------------------------------------------


def write_table(root: Path, table: str, name: str, rows: list[dict]):
    """Commits rows as the part ``name`` of the table, as ingest would."""
    schema = store.TABLES[table]
    (root / table).mkdir(parents=True, exist_ok=True)
    data = [{c: r.get(c) for c in schema.names} for r in rows]
    tmp = root / table / f"{name}.parquet.tmp"
    pq.write_table(pa.Table.from_pylist(data, schema), tmp)
    commit = catalog.Commit(root)
    commit.put(table, name, tmp, name, len(data))
    commit.apply()


def sched_row(jobid, account, cores, elapsed_s, started=True, cluster="c1"):
    start = datetime(2026, 1, 1) if started else None
    return {
        "cluster": cluster,
        "jobid": jobid,
        "account": account,
        "nodes": 1,
        "cores": cores,
        "elapsed_s": elapsed_s,
        "start": start,
        "state": "COMPLETED",
    }


@pytest.fixture
def small_store(tmp_path):
    """Accounts alpha, beta and none; logs of some of their jobs and of jobs sacct lacks."""
    root = tmp_path / "store"
    older = [
        sched_row(1, "alpha", 4, 3600),  # 4 core-hours, one log
        sched_row(2, "alpha", 2, 1800),  # 1, no log
        sched_row(3, "beta", 8, 900),  # 2, two logs
        sched_row(4, "beta", 16, 3600),  # 16, no log
        sched_row(5, "gamma", 1, 0, started=False),  # cancelled while pending: not a job
        sched_row(6, "beta", 2, 3600),  # imported again below, as alpha's
        sched_row(7, None, 1, 7200),  # 2, no account, no log
    ]
    imports.write_import(root, "sacct-older", older, datetime(2026, 1, 2), table=sacct.TABLE)
    imports.write_import(
        root,
        "sacct-newer",
        [sched_row(6, "alpha", 2, 3600)],
        datetime(2026, 1, 3),
        table=sacct.TABLE,
    )
    # (log, job id, the modules its header lists): the interfaces are those of the header, as the
    # jobs table shows them; L3's HDF5 is its dataset records alone (H5D, no files rows).
    jobs = [
        ("L1", 1, "POSIX+MPI-IO+HEATMAP"),
        ("L2", 3, "STDIO"),
        ("L3", 3, "H5D+POSIX"),
        ("L4", 6, "PNETCDF_FILE+LUSTRE"),
        ("L5", 99, "STDIO"),
        ("L6", 99, "STDIO"),
        ("L7", 100, None),
        ("L8", None, ""),
    ]
    write_table(
        root,
        "jobs",
        "run",
        [{"log_sha256": s, "jobid": j, "nprocs": 1, "nodes": 1, "modules": m} for s, j, m in jobs],
    )
    return root


def test_coverage_by_hand(small_store):
    table = sacct.coverage(store.connect(small_store))
    assert list(table.columns) == sacct.COVERAGE_COLUMNS
    rows = {r["account"]: r for r in table.to_dict("records")}
    # Rows by core-hours, then the logs without accounting, then the total.
    assert list(table["account"]) == ["beta", "alpha", "(no account)", "(no accounting)", "all"]

    def check(account, n_in, n_all, ch_in, ch_all, apis):
        r = rows[account]
        assert (r["jobs_instrumented"], r["jobs_total"], r["apis"]) == (n_in, n_all, apis)
        assert r["core_hours_instrumented"] == pytest.approx(ch_in)
        assert r["core_hours_total"] == pytest.approx(ch_all)
        assert r["job_coverage_pct"] == pytest.approx(100 * n_in / n_all)
        assert r["core_hour_coverage_pct"] == pytest.approx(100 * ch_in / ch_all)

    # alpha: jobs 1, 2 and 6 (the newer import's account); 1 (4 core-h) and 6 (2) have logs.
    check("alpha", 2, 3, 4 + 2, 4 + 1 + 2, "N,M,P")
    # beta: jobs 3 (two logs, counted once: 2 core-h) and 4 (16).
    check("beta", 1, 2, 2, 2 + 16, "H,S,P")
    check("(no account)", 0, 1, 0, 2, "")
    # gamma's job never started: no row.
    assert "gamma" not in rows
    # all: 3 of 6 jobs, 8 of 27 core-hours.
    check("all", 3, 6, 8, 27, "H,N,M,S,P")
    # Jobs 99 (two logs), 100 and the log without a job id: logs sacct knows nothing of.
    lost = rows["(no accounting)"]
    assert (lost["jobs_instrumented"], lost["apis"]) == (3, "S")
    assert pd.isna(lost["jobs_total"]) and pd.isna(lost["core_hours_total"])
    assert pd.isna(lost["job_coverage_pct"])


def test_coverage_cluster_filter_and_no_rows(small_store, tmp_path):
    # Another cluster's job 3 under account delta: matched by jobid alone, unless filtered.
    imports.write_import(
        small_store,
        "sacct-other",
        [sched_row(3, "delta", 1, 3600, cluster="c2")],
        datetime(2026, 1, 4),
        table=sacct.TABLE,
    )
    con = store.connect(small_store)
    both = sacct.coverage(con).set_index("account")
    assert both.loc["delta", "jobs_instrumented"] == 1
    assert both.loc["all", "jobs_total"] == 7
    one = sacct.coverage(con, cluster="c1").set_index("account")
    assert "delta" not in one.index
    assert one.loc["all", "jobs_total"] == 6

    # No sched rows and no logs: only the total row, with zeros and no percentages.
    empty = sacct.coverage(store.connect(tmp_path / "nothing"))
    assert empty["account"].tolist() == ["all"]
    assert (empty.loc[0, "jobs_total"], empty.loc[0, "core_hours_total"]) == (0, 0.0)
    assert empty["job_coverage_pct"].isna().all()


def test_coverage_of_the_real_export(tmp_path, capsys):
    """The real export imported by the CLI, with one log of job 1167 (root's 2-node job)."""
    st = tmp_path / "store"
    assert run_cli(capsys, REAL, "--store", st)[0] == 0
    write_table(
        st,
        "jobs",
        "run",
        [{"log_sha256": "a", "jobid": 1167, "nprocs": 4, "nodes": 2, "modules": "POSIX"}],
    )
    con = duckdb.connect()
    # Relations named as coverage wants them, over the store's Parquet files.
    for table in ("sched", "jobs"):
        con.execute(f"CREATE VIEW {table} AS SELECT * FROM read_parquet('{st / table}/*.parquet')")
    rows = {r["account"]: r for r in sacct.coverage(con).to_dict("records")}
    # root: 1167 (4 cores, 1 s) and the running 1173 (2 cores, 6 s so far).
    root = rows["root"]
    assert (root["jobs_instrumented"], root["jobs_total"], root["apis"]) == (1, 2, "P")
    assert root["core_hours_total"] == pytest.approx((4 * 1 + 2 * 6) / 3600)
    assert root["core_hour_coverage_pct"] == pytest.approx(25.0)
    # iostudy: 1166 (1 core, 2 s), 1169 (2, 0 s), the array's three tasks (1 core, 1 s each).
    assert rows["iostudy"]["core_hours_total"] == pytest.approx((2 + 0 + 3) / 3600)
    assert rows["iostudy"]["jobs_instrumented"] == 0
    assert rows["all"]["jobs_total"] == 7
    assert math.isclose(rows["all"]["job_coverage_pct"], 100 / 7)
