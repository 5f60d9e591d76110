"""Job and project pages, and `iostudy compare-jobs`, on programs with known behaviour run under
iostudy's runtime (issue: from the facility to one job).

Three jobs, each with a Slurm job id and an account from a sacct file:
- 7001, project physics: `dd if=/dev/zero bs=4M count=4` (a POSIX run: 4 writes of 4 MiB);
- 7003, project climate: io_patterns small on 2 ranks of Open MPI (each rank 2,000 POSIX
  writes of 100 bytes to its own file), on 1 node;
- 7004, project climate: io_patterns good on 2 ranks (an MPI-IO run: one collective
  MPI_File_write_at_all of 8 MiB per rank to one shared file), on 2 nodes.
The expected values are worked out from those patterns, never from iostudy. The logs form a
log tree beside the store; a page draws everything from the store, the log moved or not.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.report import report

from . import chromium
from .rundirs import RUNTIME, runtime_env
from .test_diagnose_programs import run_mpi

pytestmark = pytest.mark.browser

MIB = 1 << 20
ACCOUNTS = {7001: ("physics", 1), 7003: ("climate", 1), 7004: ("climate", 2)}  # account, nodes


def _sacct(path: Path) -> None:
    lines = [
        "JobID|JobIDRaw|Cluster|Account|User|Partition|NNodes|NCPUS|ElapsedRaw|Start|End|State"
    ]
    for jobid, (account, nodes) in ACCOUNTS.items():
        lines.append(
            f"{jobid}|{jobid}|c1|{account}|alice|batch|{nodes}|{2 * nodes}|60|"
            "2026-01-01T00:00:00|2026-01-01T00:01:00|COMPLETED"
        )
    path.write_text("\n".join(lines) + "\n")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict:
    """The three jobs' logs ingested with their accounting; a report with a before/after pair
    (7003 before, 7004 after)."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    root = tmp_path_factory.mktemp("jobpages")
    tree, work = root / "tree", root / "work"
    tree.mkdir()
    work.mkdir()
    env = runtime_env(tree / "dd-good.darshan") | {"SLURM_JOB_ID": "7001"}
    subprocess.run(
        ["dd", "if=/dev/zero", f"of={work / 'good.dat'}", "bs=4M", "count=4", "status=none"],
        env=env,
        check=True,
        timeout=120,
    )
    run_mpi("small", tree, work, jobid=7003)
    run_mpi("good", tree, work, jobid=7004)
    store = root / "store"
    assert main(["ingest", str(tree), "--store", str(store), "--study", "jobs"]) == 0
    _sacct(root / "sacct.txt")
    assert main(["sacct", "import", str(root / "sacct.txt"), "--store", str(store)]) == 0
    index = report.build(store, "jobs", root / "reports", before_after=[("7003", "7004")])
    shas = {jobid: sha for jobid, sha in _jobs(store)}
    return {"root": root, "store": store, "index": index, "version": index.parent, "shas": shas}


def _jobs(store: Path) -> list[tuple[int, str]]:
    from iostudy.store import store as store_mod

    con = store_mod.connect(store)
    try:
        return con.execute("SELECT jobid, log_sha256 FROM jobs ORDER BY jobid").fetchall()
    finally:
        con.close()


def _page(built, jobid: int) -> Path:
    return built["version"] / f"job-{built['shas'][jobid]}.html"


def _csv(built, jobid: int, name: str) -> pd.DataFrame:
    return pd.read_csv(built["version"] / f"job-{built['shas'][jobid]}-{name}.csv")


def _hrefs(page: Path) -> set[str]:
    return set(re.findall(r'href="((?:job|project)-[0-9a-f]+\.html)"', page.read_text()))


def test_every_job_of_the_report_links_to_its_page_and_every_link_leads_to_a_page(built):
    version = built["version"]
    linked = _hrefs(built["index"])
    assert {f"job-{sha}.html" for sha in built["shas"].values()} <= linked
    pages = {p.name for p in version.glob("job-*.html")} | {
        p.name for p in version.glob("project-*.html")
    }
    seen, todo = set(), set(linked)
    while todo:  # every page reached from the report's page exists, and so do its links
        href = todo.pop()
        assert href in pages, href
        seen.add(href)
        todo |= _hrefs(version / href) - seen
    assert seen == pages  # and no page is there that no link leads to
    files = {f["path"] for f in json.loads((version / "MANIFEST.json").read_text())["files"]}
    assert pages <= files  # each page is one of the version's files, with its sha256


def test_the_posix_job_page_shows_the_hand_derived_counts(built):
    page = _page(built, 7001).read_text()
    assert "16 MiB (16,777,216 bytes)" in page  # bytes written, in the record table
    posix = _csv(built, 7001, "modules").set_index("module").loc["POSIX"]
    assert (posix["writes"], posix["bytes_written"]) == (4, 16 * MIB)
    sizes = _csv(built, 7001, "sizes").set_index(["module", "operation", "size"])["accesses"]
    # Darshan's bins hold their upper bound: 4 MiB is in 1M_4M (POSIX_SIZE_WRITE_1M_4M)
    assert (
        sizes[("POSIX", "write", "over 1 MiB to 4 MiB")] == 4
        and sizes.xs("write", level=1).sum() == 4
    )
    common = _csv(built, 7001, "common-sizes")
    assert (common.iloc[0]["module"], common.iloc[0]["size"]) == ("POSIX", 4 * MIB)
    files = _csv(built, 7001, "files-by-bytes")
    top = files.iloc[0]
    assert (Path(top["path"]).name, top["bytes_written"]) == ("good.dat", 16 * MIB)
    heat = _csv(built, 7001, "heatmap")
    assert heat.loc[heat["api"] == "POSIX", "write_bytes"].sum() == 16 * MIB
    assert 'id="job-' in page and "-heatmap" in page and "<svg" in page


def test_the_mpiio_job_page_shows_both_levels_and_both_ranks(built):
    modules = _csv(built, 7004, "modules").set_index("module")
    # one MPI_File_write_at_all of 8 MiB per rank: 2 MPI-IO writes, 16 MiB at both levels
    assert (modules.at["MPI-IO", "writes"], modules.at["MPI-IO", "bytes_written"]) == (2, 16 * MIB)
    files = _csv(built, 7004, "files-by-bytes").set_index(["module", "path"])["bytes_written"]
    shared = str(built["root"] / "work" / "good.dat")
    assert files[("POSIX", shared)] == files[("MPI-IO", shared)] == 16 * MIB
    sizes = _csv(built, 7004, "sizes").set_index(["module", "operation", "size"])["accesses"]
    assert sizes[("MPI-IO", "write", "over 4 MiB to 10 MiB")] == 2
    heat = _csv(built, 7004, "heatmap")
    # the HEATMAP records and the POSIX counters are two records of the same bytes (Open MPI's
    # shared-file-pointer file among them)
    posix = heat.loc[heat["api"] == "POSIX", "write_bytes"].sum()
    assert posix == modules.at["POSIX", "bytes_written"] >= 16 * MIB
    assert heat.loc[heat["api"] == "MPIIO", "write_bytes"].sum() == 16 * MIB
    assert set(heat.loc[heat["api"] == "MPIIO", "rank"]) == {0, 1}


def test_the_small_writes_job_page_says_what_is_wrong_first(built):
    page = _page(built, 7003).read_text()
    top = page[: page.index('<nav class="toc">')]
    assert '<p class="word">DIAGNOSED</p>' in top
    # 2 ranks x 2,000 writes of 100 bytes (the same line iostudy diagnose prints): small is at
    # most 1 MiB, Darshan's bins up to 100K_1M, which holds 1,048,576 bytes
    assert "small-writes: 4,000 of 4,000 POSIX writes (100%) at most 1 MiB" in top
    ranks = _csv(built, 7003, "ranks").set_index("rank")
    # each rank's 2,000 x 100 bytes through POSIX, and rank 0's "done small\n" (11 bytes)
    # through STDIO: the rank balance counts every layer that moved bytes
    assert list(ranks["bytes_written"]) == [200_000 + len("done small\n"), 200_000]
    good = _page(built, 7004).read_text()
    assert "small-writes" not in good[: good.index('<nav class="toc">')]


def test_the_project_page_lists_its_jobs_and_its_performance_by_size(built):
    version = built["version"]
    climate = next(p for p in version.glob("project-*.html") if "Project climate" in p.read_text())
    stem = climate.stem
    jobs = pd.read_csv(version / f"{stem}-jobs.csv")
    assert sorted(jobs["jobid"]) == [7003, 7004]
    assert set(jobs["key_access_size"]) == {
        "0-100 B (w)",
        "over 4 MiB to 10 MiB (w)",
    }  # from the patterns
    assert {f"job-{built['shas'][j]}.html" for j in (7003, 7004)} <= _hrefs(climate)
    by_size = pd.read_csv(version / f"{stem}-by-size.csv").set_index("nodes")["jobs"]
    assert by_size.to_dict() == {1: 1, 2: 1}  # the accounting's node counts
    rules = pd.read_csv(version / f"{stem}-diagnoses.csv").set_index("rule")["jobs"]
    assert rules["small-writes"] == 1


def test_the_same_number_is_the_same_on_every_page(built, capsys):
    """A job's MiB/s/CN as `iostudy jobs` prints it, on its page, its project's page and in
    compare-jobs."""
    assert main(["jobs", "--store", str(built["store"]), "--json"]) == 0
    table = {r["jobid"]: r for r in json.loads(capsys.readouterr().out)}
    assert main(["compare-jobs", "--store", str(built["store"]), "7003", "7004", "--json"]) == 0
    pair = pd.DataFrame(json.loads(capsys.readouterr().out))
    rate = pair[(pair["table"] == "summary") & (pair["metric"] == "MiB/s/CN")].iloc[0]
    assert rate["a"] == pytest.approx(table[7003]["mib_s_per_cn"], rel=1e-12)
    assert rate["b"] == pytest.approx(table[7004]["mib_s_per_cn"], rel=1e-12)
    record = _csv(built, 7004, "record").set_index("field")["value"]
    assert float(record["MiB/s/CN"].replace(",", "")) == pytest.approx(
        table[7004]["mib_s_per_cn"], rel=2e-3
    )


def test_compare_jobs_sets_the_levels_side_by_side(built, capsys):
    assert main(["compare-jobs", "--store", str(built["store"]), "7003", "7004", "--json"]) == 0
    rows = pd.DataFrame(json.loads(capsys.readouterr().out))
    levels = rows[rows["table"] == "levels"].set_index(["module", "figure"])
    assert (levels.at[("POSIX", "writes"), "a"], levels.at[("POSIX", "bytes_written"), "a"]) == (
        4000,
        400_000,
    )
    assert levels.at[("MPI-IO", "writes"), "b"] == 2 and levels.at[("MPI-IO", "writes"), "a"] == 0
    sizes = rows[rows["table"] == "sizes"].set_index(["module", "operation", "size"])
    assert sizes.at[("POSIX", "write", "0-100 B"), "a"] == 4000
    assert sizes.at[("MPI-IO", "write", "over 4 MiB to 10 MiB"), "b"] == 2
    page = built["index"].read_text()
    assert 'id="section-before-after"' in page and "A = job 7003" in page


@pytest.mark.parametrize(
    "names, said",
    [
        (["7003", "999"], "'999': no job has this log sha256, job id or log"),
        (["7003", "0000000000"], "'0000000000': no job has"),
        (["7003", "../etc/passwd"], "'../etc/passwd': no job has"),
    ],
)
def test_compare_jobs_names_a_job_that_is_not_there(built, capsys, names, said):
    assert main(["compare-jobs", "--store", str(built["store"]), *names]) == 2
    assert said in capsys.readouterr().err


def test_a_pair_that_names_no_job_stops_the_build_before_anything_is_published(built):
    reports = built["root"] / "reports"
    before = sorted(p.name for p in (reports / "jobs").iterdir())
    with pytest.raises(report.ReportError, match="--before-after: '4242': no job"):
        report.build(built["store"], "jobs", reports, before_after=[("7003", "4242")])
    assert sorted(p.name for p in (reports / "jobs").iterdir()) == before


def test_a_job_page_draws_its_heatmap_from_the_store_when_its_log_moved(built, tmp_path):
    moved = built["root"] / "tree-moved"
    os.rename(built["root"] / "tree", moved)
    try:
        index = report.build(built["store"], "jobs", tmp_path / "reports")
    finally:
        os.rename(moved, built["root"] / "tree")
    page = (index.parent / f"job-{built['shas'][7001]}.html").read_text()
    assert "not shown" not in page and "<svg" in page[page.index("-heatmap") :]
    assert "16 MiB (16,777,216 bytes)" in page  # the store's figures are all there


def test_job_and_project_pages_in_chromium(built):
    """The pages of an MPI-IO run, a POSIX run and a project, within the report's budget,
    without a console error or an empty section (IOSTUDY_SCREENSHOTS keeps the pictures)."""
    if chromium.find_chromium() is None:
        pytest.skip(f"needs Chromium: install Debian's package {chromium.PACKAGE}")
    version = built["version"]
    for page in [_page(built, 7004), _page(built, 7001), *version.glob("project-*.html")]:
        assert chromium.assert_within_budget(page) > 0
