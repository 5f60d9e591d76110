"""Seed 002's Lustre view (iostudy.report.lustre) on real logs with Lustre records: three DLIO logs
of ../shared/testdata (22-24 files over 8 OSTs each), ingested as a run of a system that maps its
OSTs to two servers. PyDarshan is the oracle of which file lies on which OST."""

import json
import shutil
from pathlib import Path

import darshan
import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.report import lustre
from iostudy.store import store

from . import rundirs

DLIO = Path(__file__).resolve().parents[3] / "shared" / "testdata" / "darshan-logs" / "dlio_logs"
SERVERS = {"oss0": [0, 1, 2, 3], "oss1": [4, 5, 6]}  # OST 7 unmapped


@pytest.fixture(scope="module")
def lustre_store(tmp_path_factory):
    root = tmp_path_factory.mktemp("lustre")
    run = root / "results" / "lustre-run"
    logs = run / "darshan"
    logs.mkdir(parents=True)
    for log in sorted(DLIO.glob("*.darshan")):
        shutil.copyfile(log, logs / log.name)
    doc = rundirs.manifest("lustre-run")
    doc["effective_config"]["system"]["storage"] = [
        {"name": "scratch", "path": "/lustre/scratch", "ost_servers": SERVERS}
    ]
    doc["effective_config"]["campaign"]["study"] = "lustretest"
    (run / "manifest.json").write_text(json.dumps(doc))
    assert main(["ingest", str(run), "--store", str(root / "store")]) == 0
    return root


def pydarshan_osts() -> dict:
    """{(log name, record id): [OST indices]} and {(log name, record id): [POSIX ranks]}."""
    osts, ranks = {}, {}
    for log in sorted(DLIO.glob("*.darshan")):
        report = darshan.DarshanReport(str(log), read_all=True)
        layouts = report.records["LUSTRE"].to_df()["components"]
        for row in layouts.itertuples():
            osts.setdefault((log.name, int(row.id)), []).extend(map(int, row.LUSTRE_OST_IDS))
        for rec in report.records["POSIX"]:
            ranks.setdefault((log.name, int(rec["id"])), []).append(rec["rank"])
    return osts, ranks


def test_lustre_table_and_occupancy_match_pydarshan(lustre_store):
    con = store.connect(lustre_store / "store")
    table = con.execute("SELECT * FROM lustre").df()
    jobs = con.execute("SELECT log_sha256, log_path FROM jobs").df()
    names = {row.log_sha256: Path(row.log_path).name for row in jobs.itertuples()}
    osts, ranks = pydarshan_osts()
    got = {}
    for row in table.itertuples():
        got.setdefault((names[row.log_sha256], int(row.record_id)), []).append(int(row.ost))
    assert {k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in osts.items()}

    records = lustre.ost_records(table, con.execute("SELECT * FROM files").df())
    per_ost = lustre.per_ost(records).set_index("ost")
    expected = {}
    for key, file_osts in osts.items():
        for ost in file_osts:
            expected[ost] = expected.get(ost, 0) + len(ranks.get(key, []))
    assert per_ost["occupancy"].to_dict() == expected
    assert (per_ost["io_time_min_s"] <= per_ost["io_time_median_s"]).all()


def test_per_server_sums_its_osts():
    osts = pd.DataFrame(
        {"ost": [0, 1, 4, 7], "occupancy": [2, 3, 4, 1], "io_time_total_s": [1.0, 2.0, 8.0, 0.5]}
    )
    table = lustre.per_server(osts, SERVERS).set_index("server")
    assert table.loc["oss0"].to_dict() == {
        "osts": 2,
        "occupancy": 5,
        "io_time_total_s": 3.0,
        "io_time_per_ost_s": 1.5,
    }
    assert table.loc["oss1", "io_time_total_s"] == 8.0
    assert table.loc["unmapped", "osts"] == 1
    assert lustre.server_map(None) == {}


def test_report_has_the_ost_figure_and_the_server_table(lustre_store):
    reports = lustre_store / "reports"
    argv = ["report", "build", "--store", str(lustre_store / "store"), "--study", "lustretest"]
    argv += ["--reports", str(reports), "--results", str(lustre_store / "results")]
    assert main(argv) == 0
    page = reports / "lustretest" / "v1"
    html = (page / "index.html").read_text()
    assert 'id="lustre-osts-local"' in html and 'id="lustre-osts-local-servers"' in html
    assert html.count("<svg") >= 1
    servers = pd.read_csv(page / "lustre-osts-local-servers.csv").set_index("server")
    osts = pd.read_csv(page / "lustre-osts-local.csv").set_index("ost")
    assert servers.loc["oss0", "occupancy"] == osts.loc[[0, 1, 2, 3], "occupancy"].sum()
    assert servers.loc["unmapped", "osts"] == 1
