"""Issue 42: a facility points `iostudy ingest` at a tree of other sites' Darshan logs.

Real logs with their real job ids: the 3.5.0 release log (job 3171794, 4 processes), the 3.4.7
one (4708475), the runtime's heatmap log (13734580: a job id of 8 digits, 40 processes) and
DLIO's three logs of one job (3116902). The tree lies apart from the store's folder, as a
facility's log directory does; nothing says on how many nodes those jobs ran.
"""

from __future__ import annotations

import io
import json
import re
import shutil
import tarfile

import pandas as pd
import pyarrow.parquet as pq
import pytest

from iostudy.cli.cli import main
from iostudy.core import provenance
from iostudy.metrics import comparejobs, jobstats
from iostudy.report import report
from iostudy.store import bundlecheck
from iostudy.store import store as store_mod
from tests import logcraft
from tests.testdata import DARSHAN_LOGS, RELEASE_350

RELEASE_347 = "release_logs/mpi-io-test-x86_64-3.4.7.darshan"
HEATMAP = "runtime_heatmap_inactive_ranks/treddy_runtime_heatmap_inactive_ranks.darshan"
JOBS = {3171794: RELEASE_350, 4708475: RELEASE_347, 13734580: HEATMAP}
DLIO = 3116902  # three logs, one job id
# a real log whose sha256 begins with 10 decimal digits: 03917981... is also a job id
DIGITS_SHA_LOG = "release_logs/mpi-io-test-x86_64-3.3.0.darshan"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> dict:
    """Another site's logs in <root>/facility/darshan-logs/2024/1/<d>/, ingested without
    accounting or system description into <root>/analysis/store."""
    root = tmp_path_factory.mktemp("issue42")
    tree = root / "facility" / "darshan-logs"
    dlio = sorted((DARSHAN_LOGS / "dlio_logs").iterdir())
    for day, log in enumerate([*(DARSHAN_LOGS / log for log in JOBS.values()), *dlio]):
        folder = tree / "2024" / "1" / str(1 + day % 2)
        folder.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(log, folder / log.name)
    store = root / "analysis" / "store"
    assert main(["ingest", str(tree), "--store", str(store)]) == 0
    return {"root": root, "tree": tree, "store": store}


def _jobs(store) -> pd.DataFrame:
    return jobstats.job_table(store_mod.connect(store))


def _log_of(site, jobid: int):
    return next(site["tree"].rglob(JOBS[jobid].split("/")[-1]))


# -- 1. nodes known or unknown, never assumed ------------------------------------------------


def test_a_tree_without_accounting_or_system_has_no_node_count_and_no_rate(site):
    jobs = _jobs(site["store"]).set_index("jobid")
    # 3.4.7's log says: APMPI's records of its 4 ranks name one node (test_log_nodes)
    assert (jobs.at[4708475, "nodes"], jobs.at[4708475, "nodes_source"]) == (1, "log")
    others = jobs.drop(index=4708475)
    assert others["nodes"].isna().all()  # not 1: 40 processes on "1 nodes" was an assumption
    assert set(others["nodes_source"]) == {"unknown"}
    assert others["mib_s_per_cn"].isna().all() and others["mib_s_per_cn_span"].isna().all()
    assert jobs.loc[13734580, "agg_perf_mib_s"] > 0  # the aggregate rate is still there


def test_accounting_and_the_system_description_give_the_count(site, tmp_path):
    sacct = tmp_path / "sacct.txt"
    sacct.write_text(
        "JobID|JobIDRaw|Cluster|Account|User|Partition|NNodes|NCPUS|ElapsedRaw|Start|End|State\n"
        "13734580|13734580|c1|climate|alice|batch|5|40|60|2024-01-01T00:00:00|"
        "2024-01-01T00:01:00|COMPLETED\n"
    )
    store = tmp_path / "store"
    assert (
        main(["ingest", str(site["tree"]), "--store", str(store), "--system", "testcluster"]) == 0
    )
    assert main(["sacct", "import", str(sacct), "--store", str(store)]) == 0
    jobs = _jobs(store).drop_duplicates("jobid").set_index("jobid")
    assert (jobs.at[13734580, "nodes"], jobs.at[13734580, "nodes_source"]) == (5, "slurm")
    # testcluster: 2 cores per node, 2 nodes: 4 processes take both
    assert (jobs.at[3171794, "nodes"], jobs.at[3171794, "nodes_source"]) == (2, "system")
    rate = jobs.at[13734580, "agg_perf_mib_s"] / 5
    assert jobs.at[13734580, "mib_s_per_cn"] == pytest.approx(rate)


def test_the_pages_say_why_there_is_no_rate(site, tmp_path):
    index = report.build(site["store"], store_mod.DEFAULT_STUDY, tmp_path / "reports")
    why = "nodes unknown: no accounting, no system description"
    page = index.read_text()
    assert why in page and "1 nodes" not in page
    sha = provenance.sha256_file(_log_of(site, 13734580))
    job = (index.parent / f"job-{sha}.html").read_text()
    assert f"no MiB/s/CN ({why}); 40 processes" in job
    record = pd.read_csv(index.parent / f"job-{sha}-record.csv").set_index("field")["value"]
    assert record["nodes from"] == why


# -- 2. a job page says where ingest read its log, and draws from the store -----------------


def test_a_job_page_says_where_the_tree_was_ingested_from(site, tmp_path):
    """The store is not beside the tree (its default --results is not the tree's parent)."""
    index = report.build(site["store"], store_mod.DEFAULT_STUDY, tmp_path / "reports")
    log = _log_of(site, 3171794)
    sha = provenance.sha256_file(log)
    page = (index.parent / f"job-{sha}.html").read_text()
    assert "no longer at" not in page
    assert "<svg" in page[page.index("-heatmap") :]  # the heatmap, from the store
    record = pd.read_csv(index.parent / f"job-{sha}-record.csv").set_index("field")["value"]
    assert record["ingested from"] == str(log)


def test_a_job_page_draws_from_the_store_when_another_log_lies_under_its_name(site, tmp_path):
    log = _log_of(site, 13734580)
    saved = log.read_bytes()
    sha = provenance.sha256_file(log)
    try:
        shutil.copyfile(DARSHAN_LOGS / RELEASE_350, log)  # another log under its name
        index = report.build(site["store"], store_mod.DEFAULT_STUDY, tmp_path / "reports")
    finally:
        log.write_bytes(saved)
    page = (index.parent / f"job-{sha}.html").read_text()
    assert "not shown" not in page and "<svg" in page[page.index("-heatmap") :]


def test_a_moved_tree_is_found_again_and_another_of_its_name_refused(site, tmp_path, capsys):
    moved = tmp_path / "moved" / "darshan-logs"
    shutil.copytree(site["tree"], moved, copy_function=shutil.copy2)  # mtimes kept
    store = tmp_path / "store"
    shutil.copytree(site["store"], store)
    # the same name, the first tree still there: two sites' "darshan-logs"
    assert main(["ingest", str(moved), "--store", str(store)]) == 2
    assert "is another tree" in capsys.readouterr().err
    shutil.rmtree(site["tree"])
    try:
        assert main(["ingest", str(moved), "--store", str(store)]) == 0
        # nothing read again; the tree's runs row follows it
        assert "runs 1 ingested, 0 skipped; logs 0 ingested, 6 skipped" in capsys.readouterr().out
        index = report.build(store, store_mod.DEFAULT_STUDY, tmp_path / "reports")
    finally:
        shutil.copytree(moved, site["tree"], copy_function=shutil.copy2)
    sha = provenance.sha256_file(moved / "2024" / "1" / "1" / RELEASE_350.split("/")[-1])
    page = (index.parent / f"job-{sha}.html").read_text()
    assert "no longer at" not in page and str(moved) in page


# -- 3. a job named by its id, its log or its sha256 -----------------------------------------


def test_compare_jobs_takes_job_ids_of_any_length_and_absolute_log_paths(site, capsys):
    log = _log_of(site, 3171794)
    argv = ["compare-jobs", "--store", str(site["store"]), "13734580", str(log)]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert "(job 13734580; named by its job id)" in out
    assert "(job 3171794; named by its log)" in out


def test_a_job_id_shared_by_several_logs_lists_them(site, capsys):
    assert main(["compare-jobs", "--store", str(site["store"]), str(DLIO), "3171794"]) == 2
    err = capsys.readouterr().err
    assert f"'{DLIO}' names several jobs: as a job id, 3 jobs:" in err


def test_a_name_that_is_a_job_id_and_a_sha256_prefix_is_refused_naming_both(tmp_path):
    """03917981 is the start of a real log's sha256 and, here, another log's job id."""
    digits = provenance.sha256_file(DARSHAN_LOGS / DIGITS_SHA_LOG)[:8]
    assert digits.isdigit()
    tree = tmp_path / "tree"
    tree.mkdir()
    shutil.copyfile(DARSHAN_LOGS / DIGITS_SHA_LOG, tree / "a.darshan")
    crafted = logcraft.set_job((DARSHAN_LOGS / RELEASE_350).read_bytes(), jobid=int(digits))
    (tree / "b.darshan").write_bytes(crafted)
    assert main(["ingest", str(tree), "--store", str(tmp_path / "store")]) == 0
    jobs = _jobs(tmp_path / "store")
    with pytest.raises(comparejobs.JobNotFound) as caught:
        comparejobs.resolve(jobs, digits)
    said = str(caught.value)
    assert said.startswith(f"'{digits}' is ambiguous: as a job id, 1 job: job {int(digits)}")
    assert "as a sha256 prefix, 1 job: job 487573 tree/a.darshan" in said
    one = comparejobs.resolve(jobs, provenance.sha256_file(DARSHAN_LOGS / DIGITS_SHA_LOG)[:12])
    assert (one["jobid"], one["named_by"]) == (487573, "sha256 prefix")
    with pytest.raises(report.ReportError, match="--before-after: '0391798.' is ambiguous"):
        pair = [(digits, "b.darshan")]
        report.build(
            tmp_path / "store", store_mod.DEFAULT_STUDY, tmp_path / "out", before_after=pair
        )


# -- 4. one log file ---------------------------------------------------------------------------


def test_ingest_takes_a_log_file_as_a_tree_of_one_log(site, tmp_path, capsys):
    log = _log_of(site, 13734580)
    store = tmp_path / "store"
    assert main(["ingest", str(log), "--store", str(store)]) == 0, capsys.readouterr().err
    runs = store_mod.read_table(store, "runs").set_index("run_id")
    run_id = "logs-" + log.name.removesuffix(".darshan")
    assert runs.at[run_id, "source_root"] == str(log.parent)
    jobs = _jobs(store)
    assert list(jobs["jobid"]) == [13734580] and list(jobs["log_path"]) == [log.name]
    assert main(["ingest", str(log), "--store", str(store)]) == 0  # again: nothing new
    assert "logs 0 ingested, 1 skipped" in capsys.readouterr().out


@pytest.mark.parametrize("kind", ["link", "not a log"])
def test_ingest_refuses_a_file_that_is_no_log(tmp_path, capsys, kind):
    path = tmp_path / ("link.darshan" if kind == "link" else "notes.txt")
    if kind == "link":
        path.symlink_to(DARSHAN_LOGS / RELEASE_350)
    else:
        path.write_text("not a log\n")
    assert main(["ingest", str(path), "--store", str(tmp_path / "store")]) == 2
    err = capsys.readouterr().err
    assert ("not a regular file" if kind == "link" else "not a run directory, a tree") in err
    assert not (tmp_path / "store").exists()


# -- where a tree was ingested from stays at this site ----------------------------------------


def test_an_export_leaves_the_trees_folder_out_and_an_import_refuses_it(site, tmp_path):
    store = tmp_path / "store"
    shutil.copytree(site["store"], store)
    bundle = tmp_path / "b.tar"
    assert main(["export", "--store", str(store), "--out", str(bundle), "--site", "s1"]) == 0
    with tarfile.open(bundle) as tar:
        runs = [m for m in tar.getnames() if m.startswith("tables/runs/")]
        table = pq.read_table(io.BytesIO(tar.extractfile(runs[0]).read()))
        meta = json.load(tar.extractfile("bundle.json"))
    assert "source_root" not in table.column_names and meta["runs"]
    with pytest.raises(bundlecheck.BundleInvalid, match="source_root names folders"):
        bundlecheck._check_columns("tables/runs/x", "runs", store_mod.TABLES["runs"], False)
    assert not re.search(str(tmp_path), bundle.read_bytes().decode("latin-1"))
