"""The report counts the flagged logs (stored, with values known to be wrong stored as null:
iostudy.logs.plausibility) beside the quarantined ones, through a real ingest of a log tree and a
real report build.

The tree: the ppc64 3.0.0 release log (big-endian, POSIX records v1: three fcounters left
unswapped by the reader), the 3.5.0 release log with its end time set to 0 (a killed job's
mmap log), the 3.5.0 release log as it is, and a truncated copy of it. The plausibility
module's docstring names the first two quirks: two logs flagged, one clean, one quarantined.
"""

import csv
import io
import json
from pathlib import Path

from iostudy.cli.cli import main
from tests import logcraft
from tests.test_apps import Tables
from tests.testdata import DARSHAN_LOGS, RELEASE_350

PPC64_300 = "release_logs/mpi-io-test-ppc64-3.0.0.darshan"
FLAGGED = "flagged logs (values known wrong, stored as null)"


def test_counts_show_flagged_and_quarantined_logs(tmp_path):
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "ppc64-300.darshan").write_bytes((DARSHAN_LOGS / PPC64_300).read_bytes())
    killed = logcraft.set_job(release, end_time_sec=0, end_time_nsec=0)
    (tree / "killed.darshan").write_bytes(killed)
    (tree / "release.darshan").write_bytes(release)
    (tree / "truncated.darshan").write_bytes(release[:700])
    st, reports = tmp_path / "store", tmp_path / "reports"
    assert main(["ingest", str(tree), "--store", str(st), "--study", "f", "--system", "local"]) == 0
    build = ["report", "build", "--store", str(st), "--study", "f", "--reports", str(reports)]
    assert main(build) == 0
    v = reports / "f" / "v1"

    (row,) = csv.DictReader(io.StringIO((v / "counts.csv").read_text()))
    counts = (row["jobs (logs ingested)"], row["quarantined inputs"], row[FLAGGED])
    assert (row["system"], *counts) == ("local", "3", "1", "2")
    # The page's counts table, at the top of the report, says so too.
    table = Tables("counts")
    table.feed((v / "index.html").read_text())
    header, *rows = table.rows
    assert [r[header.index(FLAGGED)] for r in rows] == ["2"]
    # and the summary above every section
    summary = (v / "index.html").read_text().split('<dl class="summary">')[1].split("</dl>")[0]
    assert f"<dt>{FLAGGED}</dt><dd>2</dd>" in summary
    # and each flagged log is listed with its reasons (the ppc64 log of 3.00 and the killed one)
    rows = csv.DictReader(io.StringIO((v / "flagged-logs.csv").read_text()))
    listed = {Path(r["log_path"]).name: json.loads(r["flags"]) for r in rows}
    assert set(listed) == {"ppc64-300.darshan", "killed.darshan"}
    assert all(reasons and all(isinstance(x, str) for x in reasons) for reasons in listed.values())
    assert 'id="flagged-logs"' in (v / "index.html").read_text()
