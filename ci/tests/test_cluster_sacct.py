"""`iostudy sacct import --live` on the test cluster: the real sacct's record of a job we ran
becomes its sched row (account, nodes, cores, elapsed time), and coverage counts it."""

import os
import pwd
from datetime import datetime, timedelta, timezone

import pyarrow as pa
import pyarrow.parquet as pq
from slurmtest import VENV_BIN

from iostudy.collect import sacct
from iostudy.store import catalog, store


def test_live_import(cluster, tmp_path):
    # sacct reads -S in the time zone it runs in: iostudy runs it with TZ=UTC.
    since = (datetime.now(timezone.utc) - timedelta(minutes=2)).strftime("%Y-%m-%dT%H:%M:%S")
    # Two nodes, all four cores, a step, and long enough for a non-zero ElapsedRaw.
    jobid = cluster.sbatch(
        "--account=root",
        "-N2",
        "-n4",
        "--time=2",
        "--output=/dev/null",
        "--wrap=srun true; sleep 2",
    )
    assert cluster.wait_job(jobid)["state"] == "COMPLETED"
    cluster.wait_listed([jobid], since)

    st = tmp_path / "store"
    # The window starts an hour before: sacct selects by the job's times (eligible, start,
    # end), and a job must not fall out of it whichever it uses.
    window = (datetime.fromisoformat(since) - timedelta(hours=1)).strftime("%Y-%m-%dT%H:%M:%S")
    iostudy = [VENV_BIN / "iostudy", "sacct", "import", "--live", "--starttime", window]
    out = cluster.run(*iostudy, "--store", st).stdout.splitlines()
    parts = sorted((st / "sched").glob("sacct-live-*.parquet"))
    assert len(parts) == 1
    assert out[-1].startswith("sacct import: ") and f" jobs into {parts[0]}; " in out[-1]
    assert out[-1].endswith(" 0 step lines left out, 0 lines skipped")  # --allocations

    con = store.connect(st)
    rows = con.execute("SELECT * FROM sched WHERE jobid = ?", [int(jobid)]).df()
    seen = con.execute("SELECT jobid, start, state FROM sched ORDER BY jobid").fetchall()
    assert len(rows) == 1, (out, seen)  # the allocation only, not its steps
    row = rows.iloc[0]
    name = cluster.system["testbed"]["cluster_name"]
    assert (row["cluster"], row["account"], row["partition"]) == (name, "root", "debug")
    assert row["user"] == pwd.getpwuid(os.getuid()).pw_name
    assert (row["nodes"], row["cores"], row["state"]) == (2, 4, "COMPLETED")
    assert row["elapsed_s"] >= 2
    assert row["source"] == "live"
    # UTC times, without a time zone, that bracket the run.
    assert (row["end"] - row["start"]).total_seconds() == row["elapsed_s"]
    now = datetime.now(timezone.utc).replace(tzinfo=None)
    assert datetime.fromisoformat(since) <= row["start"] <= now

    # A second live import holds the job too: queries see it once, from the later import.
    cluster.run(*iostudy, "--store", st)
    assert len(list((st / "sched").glob("sacct-live-*.parquet"))) in (1, 2)
    con = store.connect(st)
    dedup = con.execute(
        f"SELECT count(*) FROM ({sacct.sched_view_sql()}) WHERE jobid = ?", [int(jobid)]
    ).fetchone()
    assert dedup == (1,)

    # A log of the job: root's jobs are covered by one log, the job's core-hours by it.
    schema = store.TABLES["jobs"]
    (st / "jobs").mkdir()
    log = {"log_sha256": "x", "jobid": int(jobid), "nprocs": 4, "nodes": 2}
    tmp = st / "jobs" / "run.parquet.tmp"
    pq.write_table(pa.Table.from_pylist([{c: log.get(c) for c in schema.names}], schema), tmp)
    commit = catalog.Commit(st)  # a part of the store as ingest commits one
    commit.put("jobs", "run", tmp, "run", 1)
    commit.apply()
    table = sacct.coverage(store.connect(st), cluster=name).set_index("account")
    assert table.loc["root", "jobs_instrumented"] == 1
    assert table.loc["root", "core_hours_instrumented"] == row["cores"] * row["elapsed_s"] / 3600
