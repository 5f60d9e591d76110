"""How a job page counts and words a job's processes, on two real logs, PyDarshan the oracle.

- A one-process job (partial_data_stdio: 1 process, every record of rank -1, the runtime's
  reduction of a file all the job's processes opened): no file of it is shared; each was
  accessed by 1 process, and its records are that process's (rank 0's), not "records of all
  ranks" (issue: "a file of one process called shared").
- A job of 496 processes, 295 of which moved bytes in records of their own (imbalanced-io, of
  Darshan's example logs): the page says the job's processes (nprocs) as processes, and the
  295 as what they are, of the 496 (issue: "two rank counts on one page").
"""

from __future__ import annotations

import html
import json
import re
import shutil
from collections import defaultdict
from pathlib import Path

import darshan
import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.report import report
from iostudy.store import store as store_mod

from .testdata import DARSHAN_LOGS, IMBALANCED_LOG

ONE_PROCESS_LOG = DARSHAN_LOGS / "partial_data_stdio" / "partial_data_stdio.darshan"
# the modules of file records these logs have, and the prefix of their counters
PREFIX = {"POSIX": "POSIX", "STDIO": "STDIO", "MPI-IO": "MPIIO"}
MOVED = ("POSIX", "STDIO")  # the layers that moved the bytes here (no DFS, no DAOS)


def _pydarshan(path: Path) -> dict:
    """What PyDarshan reads of the log: nprocs, each (path, module)'s ranks with a record, and
    each rank's bytes in its own records of the layers that moved the bytes."""
    log = darshan.DarshanReport(str(path), read_all=True)
    ranks, own = defaultdict(set), defaultdict(int)
    for module, prefix in PREFIX.items():
        if module not in log.records:
            continue
        c = log.records[module].to_df()["counters"]
        moved = c[f"{prefix}_BYTES_READ"] + c[f"{prefix}_BYTES_WRITTEN"]
        for rec_id, rank, b in zip(c["id"], c["rank"], moved, strict=True):
            ranks[(log.name_records[rec_id], module)].add(int(rank))
            if module in MOVED:
                own[int(rank)] += int(b)
    return {"nprocs": log.metadata["job"]["nprocs"], "ranks": dict(ranks), "own": dict(own)}


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """Both logs ingested, and a report with their pages."""
    root = tmp_path_factory.mktemp("processes")
    tree = root / "tree"
    tree.mkdir()
    for log in (ONE_PROCESS_LOG, IMBALANCED_LOG):
        shutil.copy(log, tree / log.name)
    store = root / "store"
    assert main(["ingest", str(tree), "--store", str(store), "--study", "jobs"]) == 0
    index = report.build(store, "jobs", root / "reports")
    con = store_mod.connect(store)
    try:
        rows = con.execute("SELECT log_path, log_sha256 FROM jobs").fetchall()
    finally:
        con.close()
    pages = {Path(log).name: index.parent / f"job-{sha}" for log, sha in rows}
    return {log.name: pages[log.name] for log in (ONE_PROCESS_LOG, IMBALANCED_LOG)}


def _text(fragment: str) -> str:
    text = html.unescape(
        re.sub(r"<[^>]+>", " ", re.sub(r"<svg.*?</svg>", "", fragment, flags=re.S))
    )
    return " ".join(text.split())


def _section(stem: Path, heading: str) -> str:
    page = stem.with_suffix(".html").read_text()
    return _text(page[page.index(f"<h2>{heading}</h2>") :].split("<h2>", 2)[1])


def _top(stem: Path) -> str:
    page = stem.with_suffix(".html").read_text()
    return _text(page[: page.index('<nav class="toc">')])


def _csv(stem: Path, name: str) -> pd.DataFrame:
    return pd.read_csv(stem.parent / f"{stem.name}-{name}.csv")


def _processes_of_files(stem: Path) -> dict:
    files = _csv(stem, "files-by-bytes")
    return {
        (p, m): (s, n)
        for p, m, s, n in zip(
            files["path"], files["module"], files["sharing"], files["processes"], strict=True
        )
    }


def test_a_one_process_job_page_calls_no_file_shared(built):
    stem, oracle = built[ONE_PROCESS_LOG.name], _pydarshan(ONE_PROCESS_LOG)
    assert oracle["nprocs"] == 1
    assert {r for ranks in oracle["ranks"].values() for r in ranks} == {-1}  # all reduced
    # every file of the log: one process's, N:N
    assert _processes_of_files(stem) == {key: ("N:N", 1) for key in oracle["ranks"]}
    # its records are its one process's: rank 0 moved every byte, none is "shared"
    ranks = _csv(stem, "ranks")
    assert list(ranks["rank"]) == [0]
    assert int(ranks["bytes_read"].iloc[0] + ranks["bytes_written"].iloc[0]) == oracle["own"][-1]
    said = _section(stem, "Files") + _section(stem, "Rank balance")
    assert "The job's one process (rank 0) took" in said
    assert "(of the job's 1 process)" in said
    for wrong in ("shared", "records of all", "ranks all", "1 processes", "No rank", "N:1"):
        assert wrong not in said, wrong
    assert "; 1 process; strategy N:N;" in _top(stem)


def test_log_summary_of_a_one_process_job_says_one_process(capsys):
    assert main(["log", "summary", "--json", str(ONE_PROCESS_LOG)]) == 0
    summary = json.loads(capsys.readouterr().out)
    top = [f for m in summary["modules"] for f in m["top_files"]]
    assert summary["nprocs"] == _pydarshan(ONE_PROCESS_LOG)["nprocs"] == 1
    assert top and {(f["sharing"], f["processes"]) for f in top} == {("N:N", 1)}
    assert main(["log", "summary", str(ONE_PROCESS_LOG)]) == 0
    out = capsys.readouterr().out
    assert "N:N (1)" in out and "(all" not in out and "N:1" not in out


def test_a_job_page_names_each_count_of_processes(built):
    stem, oracle = built[IMBALANCED_LOG.name], _pydarshan(IMBALANCED_LOG)
    nprocs = oracle["nprocs"]
    own = {rank: b for rank, b in oracle["own"].items() if rank >= 0}
    moved = sum(1 for b in own.values() if b > 0)
    assert (nprocs, len(own), moved) == (496, 496, 295)  # the log the issue was seen on
    top = _top(stem)
    assert f"; {nprocs} processes; {moved} of {nprocs} processes moved bytes in records of " in top
    record = _csv(stem, "record").set_index("field")["value"]
    assert int(record["processes (nprocs)"]) == nprocs
    balance = _section(stem, "Rank balance")
    assert (
        f"all {nprocs} processes have records of their own, {moved} of {nprocs} processes "
        "moved bytes in them" in balance
    )
    assert f"records of all {nprocs} processes add their slowest rank's" in balance
    # no bare count of "ranks" beside the processes, in what the page itself words
    assert not re.search(r"\d ranks\b", balance + top.split("no MiB/s/CN")[-1])
    ranks = _csv(stem, "ranks")
    assert len(ranks) == len(own)
    assert int(((ranks["bytes_read"] + ranks["bytes_written"]) > 0).sum()) == moved
    # each file's processes: those with a record of it, all of them with a rank -1 one
    expected = {
        key: nprocs if -1 in ranks else len(ranks) for key, ranks in oracle["ranks"].items()
    }
    assert {key: n for key, (_, n) in _processes_of_files(stem).items()} == expected
    assert any(1 < n < nprocs for n in expected.values())  # a file of some, not all
