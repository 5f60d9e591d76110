"""`iostudy report build`: versions, MANIFEST.json, self-containment, and the page in Chromium."""

import csv
import hashlib
import io
import json
import os
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iostudy.cli.cli import main
from iostudy.report import publish, report, runtables, sections
from iostudy.store import store as store_mod

from . import chromium, reportdata
from .testdata import RELEASE_350

pytestmark = pytest.mark.browser


def sha256(path: Path) -> str:
    return hashlib.sha256(Path(path).read_bytes()).hexdigest()


def tree_hashes(folder: Path) -> dict[str, str]:
    return {p.relative_to(folder).as_posix(): sha256(p) for p in sorted(folder.rglob("*"))}


@pytest.fixture(scope="module")
def study(tmp_path_factory):
    """A store with three runs of the quick study on two systems, and two published reports."""
    root = tmp_path_factory.mktemp("study")
    results, store = reportdata.make_study(root)
    reports = root / "reports"
    v1 = report.build(store, "quick", reports)
    v1_before = tree_hashes(v1.parent)
    v2 = report.build(store, "quick", reports, title="second build")
    return {
        "root": root,
        "results": results,
        "store": store,
        "reports": reports,
        "v1": v1,
        "v2": v2,
        "v1_before": v1_before,
    }


class Resources(HTMLParser):
    """Every element that would load something, and every link."""

    def __init__(self):
        super().__init__()
        self.tags, self.loads, self.links = [], [], []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        attrs = dict(attrs)
        for name in ("src", "srcset", "data", "poster", "action", "xlink:href", "background"):
            if attrs.get(name):
                self.loads.append((tag, name, attrs[name]))
        if tag == "a" and attrs.get("href"):
            self.links.append(attrs["href"])
        elif attrs.get("href"):  # <link href>, <image href>, <use href>, <base href>: loads
            self.loads.append((tag, "href", attrs["href"]))
        if "style" in attrs and "url(" in attrs["style"]:
            self.loads.append((tag, "style", attrs["style"]))

    handle_startendtag = handle_starttag


def parse(path: Path) -> Resources:
    parser = Resources()
    parser.feed(path.read_text())
    return parser


# -- versions ------------------------------------------------------------------------------------


def test_two_builds_make_v1_and_v2(study):
    assert study["v1"] == study["reports"] / "quick" / "v1" / "index.html"
    assert study["v2"] == study["reports"] / "quick" / "v2" / "index.html"
    assert publish.versions(study["reports"] / "quick") == [1, 2]
    # Nothing but the versions and the index: no temporary build folder left behind.
    assert sorted(p.name for p in (study["reports"] / "quick").iterdir()) == [
        "index.html",
        "v1",
        "v2",
    ]
    m1 = json.loads((study["v1"].parent / "MANIFEST.json").read_text())
    m2 = json.loads((study["v2"].parent / "MANIFEST.json").read_text())
    assert (m1["report"]["version"], m2["report"]["version"]) == (1, 2)
    assert m2["report"]["title"] == "second build"
    assert "v2" in study["v2"].read_text() and "second build" in study["v2"].read_text()


def test_second_build_leaves_v1_untouched(study):
    assert tree_hashes(study["v1"].parent) == study["v1_before"]


def test_build_into_existing_version_fails(study):
    v1 = study["v1"].parent
    before = tree_hashes(v1)
    with pytest.raises(report.VersionExistsError, match="never overwritten"):
        report.build(study["store"], "quick", study["reports"], as_version=1)
    assert tree_hashes(v1) == before
    assert not list((study["reports"] / "quick").glob(".build-*"))


def test_cli_refuses_existing_version(study, capsys):
    args = ["report", "build", "--store", str(study["store"]), "--study", "quick"]
    args += ["--reports", str(study["reports"]), "--as-version", "2"]
    assert main(args) == 2
    err = capsys.readouterr().err
    assert err.startswith("iostudy: error: ") and "v2 exists" in err
    assert publish.versions(study["reports"] / "quick") == [1, 2]


def test_cli_last_line_is_the_new_index(tmp_path, capsys):
    results, store = reportdata.make_study(tmp_path)
    args = ["report", "build", "--store", str(store), "--study", "quick"]
    args += ["--reports", str(tmp_path / "reports")]
    assert main(args) == 0
    last = capsys.readouterr().out.splitlines()[-1]
    assert last == str(tmp_path / "reports" / "quick" / "v1" / "index.html")
    assert Path(last).is_file()


def test_rename_noreplace_refuses_even_an_empty_directory(tmp_path):
    # os.rename would replace an empty directory silently; a published name must never be taken.
    (tmp_path / "new").mkdir()
    (tmp_path / "new" / "f").write_text("x")
    (tmp_path / "v1").mkdir()
    with pytest.raises(FileExistsError):
        publish.rename_noreplace(tmp_path / "new", tmp_path / "v1")
    assert (tmp_path / "new" / "f").is_file() and not any((tmp_path / "v1").iterdir())
    publish.rename_noreplace(tmp_path / "new", tmp_path / "v2")
    assert (tmp_path / "v2" / "f").read_text() == "x"


def test_version_taken_meanwhile_goes_to_the_next_number(tmp_path, monkeypatch):
    """Another build publishes v1 while this one renders: this one becomes v2, v1 stays theirs."""
    results, store = reportdata.make_study(tmp_path)
    reports = tmp_path / "reports"
    render = report.render
    calls = []

    def racing_render(tables, runs, study, version, title, out, now, **options):
        calls.append(version)
        if len(calls) == 1:
            other = reports / "quick" / "v1"
            other.mkdir()
            (other / "index.html").write_text("someone else's")
        return render(tables, runs, study, version, title, out, now, **options)

    monkeypatch.setattr(report, "render", racing_render)
    index = report.build(store, "quick", reports)
    assert calls == [1, 2]
    assert index == reports / "quick" / "v2" / "index.html"
    assert (reports / "quick" / "v1" / "index.html").read_text() == "someone else's"
    assert json.loads((index.parent / "MANIFEST.json").read_text())["report"]["version"] == 2


def test_unknown_study_fails_naming_the_known_ones(study):
    with pytest.raises(report.ReportError, match=r"no run of study 'nope'.*quick"):
        report.build(study["store"], "nope", study["reports"])
    assert not (study["reports"] / "nope").exists()


def test_index_of_versions(study):
    index = study["reports"] / "quick" / "index.html"
    links = parse(index).links
    assert links == ["v2/index.html", "v1/index.html"]
    assert "second build" in index.read_text()


# -- MANIFEST.json -------------------------------------------------------------------------------


def _resolve(path: str) -> Path:
    p = Path(path)
    return p if p.is_absolute() else Path.cwd() / p


def test_manifest_lists_inputs_with_their_sha256(study):
    m = json.loads((study["v2"].parent / "MANIFEST.json").read_text())
    parquet = [i for i in m["inputs"] if i["kind"] == "store-parquet"]
    expected = sorted(study["store"].rglob("*.parquet"))
    assert sorted(_resolve(i["path"]) for i in parquet) == expected
    manifests = [i for i in m["inputs"] if i["kind"] == "run-manifest"]
    assert [i["run_id"] for i in manifests] == [r[0] for r in sorted(reportdata.RUNS)]
    for entry in parquet + manifests:
        path = _resolve(entry["path"])
        assert entry["sha256"] == sha256(path), path
        assert entry["bytes"] == path.stat().st_size
    # The report's own files, each with its sha256 (MANIFEST.json itself aside).
    files = {f["path"]: f["sha256"] for f in m["files"]}
    on_disk = {p.name for p in study["v2"].parent.iterdir()} - {"MANIFEST.json"}
    assert set(files) == on_disk
    for name, digest in files.items():
        assert digest == sha256(study["v2"].parent / name)


def test_manifest_has_provenance(study):
    m = json.loads((study["v2"].parent / "MANIFEST.json").read_text())
    assert len(m["git"]["commit"]) == 40
    assert m["tool_versions"]["iostudy"] and m["tool_versions"]["matplotlib"]
    runs = {r["run_id"]: r for r in m["runs"]}
    assert set(runs) == {r[0] for r in reportdata.RUNS}
    local = runs["20260302T090000Z-quick-local"]
    assert local["effective_config"]["campaign"]["study"] == "quick"
    assert local["effective_config"]["system"]["name"] == "local"
    assert local["tool_versions"]["reframe"] == "4.10.0"
    assert local["git_commit"] == "0123456789abcdef0123456789abcdef01234567"


def test_other_studies_runs_are_left_out(tmp_path):
    results, store = reportdata.make_study(tmp_path)
    # A run of another study beside them: not in the report, nor in its inputs.
    other = "20260304T090000Z-other-local"
    for table in ("runs", "iomodel"):
        rows = pq.read_table(store / table / f"{reportdata.RUNS[0][0]}.parquet").to_pylist()
        for row in rows:
            row["run_id"] = other
            if table == "runs":
                row["study"] = row["campaign"] = "other"
        pq.write_table(
            pa.Table.from_pylist(rows, store_mod.TABLES[table]),
            store / table / f"{other}.parquet",
        )
    index = report.build(store, "quick", tmp_path / "reports")
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    assert other not in {r["run_id"] for r in m["runs"]}
    assert not [i for i in m["inputs"] if other in i["path"]]
    assert other not in index.read_text()


# -- content -------------------------------------------------------------------------------------


def test_html_references_no_external_resource(study):
    for page in (study["v2"], study["reports"] / "quick" / "index.html"):
        html = page.read_text()
        found = parse(page)
        assert "script" not in found.tags, "the report needs no JavaScript"
        assert "link" not in found.tags and "iframe" not in found.tags
        # Only inline data (matplotlib embeds the rasters of its figures as data: URLs) and
        # references within the page (SVG <use xlink:href="#marker">).
        for tag, attr, value in found.loads:
            assert value.startswith(("data:", "#")), (tag, attr, value[:80])
        # Links only within the report: anchors, its own files, the index of versions.
        for href in found.links:
            assert not href.startswith(("http:", "https:", "//", "file:", "/")), href
            if not href.startswith("#"):
                assert (page.parent / href).is_file(), href
        assert "@import" not in html and "url(http" not in html.replace(" ", "")


def test_every_figure_and_table_has_a_caption_and_its_csv(study):
    v2 = study["v2"].parent
    m = json.loads((v2 / "MANIFEST.json").read_text())
    html = study["v2"].read_text()
    ids = [c["id"] for c in m["contents"]]
    for expected in (
        "histogram-local",
        "histogram-testcluster",
        "job-mib-s-per-cn",
        "metrics-over-runs",
        "systems-side-by-side",
        "table-i-crosscheck",
        "ior-scaling-local",
        "ior-scaling-testcluster",
        "metadata-scaling-local",
        "ior-crosscheck",
        "scaling-pass-fail",
        "reframe-performance",
        "counts",
        "quarantine",
        "runs-provenance",
    ):
        assert expected in ids
    for c in m["contents"]:
        assert c["caption"] and (v2 / c["csv"]).is_file()
        assert f'href="{c["csv"]}"' in html
        assert c["caption"].split(":")[0].replace("'", "&#39;") in html
    assert html.count("<svg") == sum(c["kind"] == "figure" for c in m["contents"])
    # each one's provenance in one line, beside its CSV: the latest run of local drawn alone,
    # the comparison across runs from all three
    of = {c["id"]: c["provenance"] for c in m["contents"]}
    assert of["histogram-local"] == "from run 20260303T090000Z-quick-local of local"
    assert of["metrics-over-runs"].startswith("from 3 runs of local, testcluster (")
    assert f"{of['metrics-over-runs']} · <a href" in html
    # a figure of a row of per-system figures names its run in its label, once
    assert html.count(of["histogram-local"]) == 0


def _csv(path: Path) -> list[dict]:
    return list(csv.DictReader(io.StringIO(path.read_text())))


def test_tables_behind_the_figures(study):
    v2 = study["v2"].parent
    # Histogram of local's latest run: 9 models of 4 ranks, 2 per node, in 6 bins.
    hist = _csv(v2 / "histogram-local.csv")
    assert {r["run_id"] for r in hist} == {"20260303T090000Z-quick-local"}
    assert len(hist) == 6 and sum(int(r["models"]) for r in hist) == 9
    # Table I: file per process and shared file of each of the three runs, all within 3%.
    cross = _csv(v2 / "table-i-crosscheck.csv")
    assert sorted({r["model"] for r in cross}) == ["file-per-process", "single-shared-file"]
    assert len(cross) == 6 and all(r["within_3pct"] == "True" for r in cross)
    assert all(abs(float(r["difference_pct"])) < 3 for r in cross)
    jobs = _csv(v2 / "job-mib-s-per-cn.csv")
    assert len(jobs) == 3 and all(float(r["mib_s_per_cn"]) > 0 for r in jobs)
    assert {r["nodes_source"] for r in jobs} == {"tag"}

    over = _csv(v2 / "metrics-over-runs.csv")
    fpp = [r for r in over if r["metric"] == "benchmark: file-per-process write (2,2,2,1)"]
    assert sorted((r["system"], r["run_id"]) for r in fpp) == sorted(
        (r[1], r[0]) for r in reportdata.RUNS
    )
    side = _csv(v2 / "systems-side-by-side.csv")
    fpp_side = {
        r["series"]: r for r in side if r["metric"] == "benchmark: file-per-process write (2,2,2,1)"
    }
    assert set(fpp_side) == {"local", "testcluster"} and fpp_side["local"]["runs"] == "2"
    # The scaling points have their section, not a metric each over runs.
    assert not any("ior_check" in r["metric"] or "mdtest_check" in r["metric"] for r in over)
    # Scaling: the latest local run's IOR curves, 2 layouts x 2 targets x 3 counts x 2 operations
    ior = _csv(v2 / "ior-scaling-local.csv")
    assert {r["run_id"] for r in ior} == {"20260303T090000Z-quick-local"} and len(ior) == 24
    point = next(
        r
        for r in ior
        if (r["layout"], r["target"], r["procs"], r["operation"])
        == ("fpp", "scratch", "4", "write")
    )
    assert float(point["mib_s"]) == pytest.approx(400 * 1.1)
    assert point["transfer"] == "4 MiB, aligned" and point["declared_aggregate_mib_s"] == ""
    verdicts = _csv(v2 / "scaling-pass-fail.csv")
    failed = [(r["run_id"], r["point"]) for r in verdicts if r["result"] == "fail"]
    assert sorted(failed) == sorted((r[0], "procs=4") for r in reportdata.RUNS)
    # No logs of these IOR runs: the cross-check judges none of them (neither passes nor
    # fails them), and the page says why.
    cross_ior = _csv(v2 / "ior-crosscheck.csv")
    assert len(cross_ior) == 3 * 24 and {r["within_3pct"] for r in cross_ior} == {""}
    html = study["v2"].read_text()
    assert "0 of 0 IOR runs and operations (72 without a log)" in html
    assert "<td>no log</td>" in html
    quarantine = _csv(v2 / "quarantine.csv")
    assert [r["reason"] for r in quarantine] == ["darshan-util could not read the log: truncated"]
    counts = {r["system"]: r for r in _csv(v2 / "counts.csv")}
    assert counts["all"]["runs"] == "3" and counts["all"]["quarantined inputs"] == "1"


def test_the_report_and_iostudy_jobs_show_one_mib_s_per_cn(study, capsys):
    """MiB/s/CN has one definition: the report's job table, its large-jobs section's data and
    `iostudy jobs` give every job the same value and the same sharing strategy."""
    from iostudy.cli.cli import main

    assert main(["jobs", "--store", str(study["store"]), "--csv"]) == 0
    cli_rows = {r["log_path"]: r for r in csv.DictReader(io.StringIO(capsys.readouterr().out))}
    report_rows = _csv(study["v2"].parent / "job-mib-s-per-cn.csv")
    assert report_rows
    for r in report_rows:
        mine = cli_rows[r["log_path"]]
        for column in ("mib_s_per_cn", "mib_s_per_cn_span", "io_time_slowest_s", "nodes"):
            assert float(r[column]) == pytest.approx(float(mine[column]), rel=1e-9), column
        assert (r["strategy"], r["nodes_source"]) == (mine["strategy"], mine["nodes_source"])


# -- in a real browser ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def browser():
    binary = chromium.find_chromium()
    if not binary:
        pytest.fail(
            f"chromium is not installed: the report tests need Debian's package "
            f"'{chromium.PACKAGE}' (in ci/apt-packages.txt; `make setup` installs it)"
        )
    return binary


def test_report_loads_in_chromium_without_errors(study, browser, tmp_path):
    for page in (study["v2"], study["reports"] / "quick" / "index.html"):
        url = page.resolve().as_uri()
        load = chromium.load(url, chromium=browser)
        assert load.errors() == [], page
        # Nothing but the page itself and inline data: no network, no other file.
        assert [u for u in load.requests if not u.startswith("data:")] == [url]
        chromium.assert_not_blank(load.screenshot)
        (tmp_path / f"{page.parent.name}.png").write_bytes(load.screenshot)


def test_pages_of_each_kind_within_budget(study, tree_study, browser):
    """An acceptance study of three runs and a characterization of every test log: at most
    15,000 px tall at 1,400 px wide and 2 MB (the kind's layout, long tables cut, no empty
    section)."""
    acceptance = chromium.verdict_at_top(study["v2"])
    # reportdata's mdtest points at 4 processes are below their reference
    assert acceptance["kind"] == "acceptance" and acceptance["verdict"] == "FAIL"
    chromium.assert_within_budget(study["v2"], browser)
    plain = tree_study["plain"]
    characterization = chromium.verdict_at_top(plain)
    assert characterization["kind"] == "characterization"
    assert characterization["verdict"] == "DATA"  # logs only: nothing to pass or fail
    chromium.assert_within_budget(plain, browser)


def test_the_reframe_table_has_one_column_of_parameters_whatever_the_checks():
    """The components campaign's checks (fio, netbw, the I/O models) have 14 parameters between
    them: one column of "name=value" text each row, after the value and its verdict (the
    table was 21 columns wide, 1,827 px, its value column off-screen). What a case measured
    has its own column, also when a store of before that column has it in the parameters."""
    import pandas as pd

    fio = {
        "block": "4M",
        "iodepth": 1,
        "jobs": 2,
        "operation": "write",
        "size": "16M",
        "storage_target": "scratch",
    }
    netbw = {
        "max_size": "256K",
        "min_size": "1K",
        "perturb": 3,
        "procs": 2,
        "procs_per_node": 1,
        "seconds": 0.005,
    }
    iomodel = {"size": "32M", "procs_per_node": 2, "max_procs": 2, "read_back": "yes"}
    label = "page cache possible: 32 MiB per node < RAM 23.4 GiB"
    rows = [
        reportdata._perf("r1", "local", check, params, "mib_s", 100.0, "MiB/s", 10.0)
        | {"measures": measured}
        for check, params, measured in (
            ("fio_check", fio, None),
            ("netbw_check", netbw, None),
            ("iomodel_check", iomodel, label),
            # as ingest wrote it before the measures column (the views read it null)
            ("iomodel_check", {**iomodel, "measures": "storage (O_DIRECT)"}, None),
        )
    ]
    table = runtables.parameter_text(pd.DataFrame(rows)[runtables.PERF_COLUMNS])
    assert list(table.columns) == runtables.PERF_COLUMNS
    assert runtables.PERF_COLUMNS[-1] == "parameters"
    assert table["parameters"].tolist() == [
        "block=4M, iodepth=1, jobs=2, operation=write, size=16M, storage_target=scratch",
        "max_size=256K, min_size=1K, perturb=3, procs=2, procs_per_node=1, seconds=0.005",
        "size=32M, procs_per_node=2, max_procs=2, read_back=yes",
        # the old layout's keys sorted, as compare's
        "max_procs=2, procs_per_node=2, read_back=yes, size=32M",
    ]
    shown = [m if isinstance(m, str) else None for m in table["measures"]]
    assert shown == [None, None, label, "storage (O_DIRECT)"]


def test_no_table_is_wider_than_its_page(study, browser):
    """At 1,400 px every table fits its box: the ReFrame table (every check's parameters) has
    its values beside the check and its parameters in one column, not one column each."""
    assert chromium.overflowing_tables(study["v2"], browser) == []


def test_chromium_check_catches_errors(browser, tmp_path):
    """The check above could pass by seeing nothing: a broken page must fail it."""
    page = tmp_path / "broken.html"
    page.write_text(
        "<!DOCTYPE html><html><body><h1>broken</h1><img src='missing.png'>"
        "<script>console.error('boom'); notDefined();</script></body></html>"
    )
    load = chromium.load(page.as_uri(), chromium=browser)
    errors = "\n".join(load.errors())
    assert "console.error: boom" in errors
    assert "notDefined" in errors
    assert "ERR_FILE_NOT_FOUND" in errors
    assert (tmp_path / "missing.png").as_uri() in load.requests
    with pytest.raises(AssertionError):
        blank = tmp_path / "blank.html"
        blank.write_text("<!DOCTYPE html><html><body></body></html>")
        chromium.assert_not_blank(chromium.load(blank.as_uri(), chromium=browser).screenshot)


def test_report_folder_is_readable_by_others(study):
    # Published reports are served or copied by other users: folders 755, files 644.
    v2 = study["v2"].parent
    assert os.stat(v2).st_mode & 0o777 == 0o755
    assert all(os.stat(p).st_mode & 0o044 == 0o044 for p in v2.iterdir())


def test_a_run_with_nothing_readable_still_makes_a_report(tmp_path):
    """Every log quarantined, no ReFrame report, no benchmark output, manifest gone: the report
    says so instead of failing."""
    results, store = reportdata.make_study(tmp_path)
    for run_id, *_ in reportdata.RUNS:
        for table in ("jobs", "files", "perf", "iomodel"):
            path = store / table / f"{run_id}.parquet"
            pq.write_table(pq.read_table(path).slice(0, 0), path)
    (results / reportdata.RUNS[0][0] / "manifest.json").unlink()
    index = report.build(store, "quick", tmp_path / "reports")
    html = index.read_text()
    # an acceptance study: the sections it needs say which command brings their data
    assert "Run manifests missing" in html
    # histograms, Table I and ReFrame's values emptied, no component measured; the IOR points
    # are left (scaling)
    assert html.count("No data yet. It comes from:") == 4
    assert "iostudy campaign run components --system SYSTEM --ingest STORE" in html
    assert "iostudy campaign run quick --system SYSTEM --ingest STORE" in html
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    missing = [i for i in m["inputs"] if i.get("missing")]
    assert [i["run_id"] for i in missing] == [reportdata.RUNS[0][0]]
    assert len(_csv(index.parent / "quarantine.csv")) == 1


# -- seed 000's workload sections (iostudy.metrics.workload) on real logs
# ---------------------------------

HOSTILE_ACCOUNT = "<img src=x onerror=alert(1)>"
HOSTILE_ACCOUNT2 = "</script><script>alert(2)</script>"
HOSTILE_FOLDER = "<img src=y onerror=alert(3)>"
HOSTILE_LOG = '"><svg onload=alert(4)>.darshan'
# Names that an anonymized report must not show anywhere (pages and CSVs).
NAMES = (
    "alice",
    "climate",
    "physics",
    "treddy",
    "shane",
    "snyder",
    "laytonjb",
    "mpi-io-test",
    "onerror",
    "ml$ai$",
    "release_logs",
)


def _account(path: str) -> tuple[str, str] | None:
    """The Slurm account and user of a test log (by its folder), None: no accounting."""
    for part, account, user in (
        ("ppc64", "physics", "bob"),
        ("release_logs", "climate", "alice"),
        (HOSTILE_FOLDER, HOSTILE_ACCOUNT, "mallory"),  # the DXT test log's folder
        ("ior_pnetcdf", HOSTILE_ACCOUNT2, "eve<b>"),
        ("dlio", "ml$ai$", "carol"),
    ):
        if part in path:
            return account, user
    return None


@pytest.fixture(scope="module")
def tree_study(tmp_path_factory, darshan_logs):
    """The real test logs as a facility log tree (one folder named like markup, and a
    truncated log whose name is markup, quarantined), ingested with `iostudy ingest TREE`;
    Slurm accounting for most of their jobs (accounts named like markup among them) imported
    with `iostudy sacct import`; and the workload report built from it, plain and anonymized."""
    root = tmp_path_factory.mktemp("tree")
    tree = root / "darshan-logs"
    for log in sorted(darshan_logs.rglob("*.darshan")):
        folder = log.parent.name if "dxt" not in log.parent.name else HOSTILE_FOLDER
        (tree / folder).mkdir(parents=True, exist_ok=True)
        (tree / folder / log.name).write_bytes(log.read_bytes())
    release = darshan_logs / "release_logs" / "mpi-io-test-x86_64-3.4.0.darshan"
    (tree / HOSTILE_LOG).write_bytes(release.read_bytes()[:700])
    store = root / "store"
    assert main(["ingest", str(tree), "--store", str(store), "--study", "characterization"]) == 0
    con = store_mod.connect(store)
    logs = con.execute("SELECT jobid, nprocs, log_path FROM jobs ORDER BY jobid").fetchall()
    con.close()
    lines = [
        "JobID|JobIDRaw|Cluster|Account|User|Partition|NNodes|NCPUS|ElapsedRaw|Start|End|State"
    ]
    seen = set()
    for jobid, nprocs, path in logs:
        named = _account(path)
        if named and jobid not in seen:
            seen.add(jobid)
            lines.append(
                f"{jobid}|{jobid}|c1|{named[0]}|{named[1]}|batch|1|{max(nprocs, 4)}|3600|"
                "2026-01-01T00:00:00|2026-01-01T01:00:00|COMPLETED"
            )
    # Three jobs of climate without a log: its coverage is 25 of 28 jobs.
    for jobid in (1, 2, 3):
        lines.append(
            f"{jobid}|{jobid}|c1|climate|alice|batch|2|128|7200|2026-01-01T00:00:00|"
            "2026-01-01T02:00:00|COMPLETED"
        )
    (root / "sacct.txt").write_text("\n".join(lines) + "\n")
    assert main(["sacct", "import", str(root / "sacct.txt"), "--store", str(store)]) == 0
    reports = root / "reports"
    plain = report.build(store, "characterization", reports, large_procs=4, large_mib=100)
    anon = report.build(
        store, "characterization", reports, anonymize=True, large_procs=4, large_mib=100
    )
    again = report.build(store, "characterization", reports, anonymize=True)
    return {
        "root": root,
        "store": store,
        "reports": reports,
        "plain": plain,
        "anon": anon,
        "again": again,
    }


WORKLOAD_IDS = [
    "interfaces-by-size",
    "strategy-by-size",
    "top-projects",
    "coverage",
    "files-vs-procs",
    "mib-s-per-cn-by-project",
    "large-job-averages",
    "access-sizes-by-project",
]


def test_workload_sections_from_a_log_tree(tree_study):
    v = tree_study["plain"].parent
    m = json.loads((v / "MANIFEST.json").read_text())
    kinds = {c["id"]: c["kind"] for c in m["contents"]}
    assert [i for i in kinds if i in WORKLOAD_IDS] == WORKLOAD_IDS
    for ident in WORKLOAD_IDS:
        assert kinds[ident] != "note", ident
    assert m["report"]["large_jobs"] == {"min_procs": 4, "min_mib": 100}
    assert m["report"]["anonymized"] is None
    # The log tree is an input by its parts' sha256; it has no manifest and is not "missing".
    assert [i["kind"] for i in m["inputs"] if i.get("run_id")] == ["log-tree"]
    assert "Run manifests missing" not in tree_study["plain"].read_text()
    assert any("sched/sacct-sacct@" in i["path"] for i in m["inputs"])
    top = {r["project"]: r for r in _csv(v / "top-projects.csv")}
    # 25 x86 release logs of climate, 11 ppc64 of physics (Slurm accounting by job id).
    assert top["climate"]["jobs"] == "25" and top["physics"]["jobs"] == "11"
    assert HOSTILE_ACCOUNT in top and "(unknown)" in top
    coverage = {r["project"]: r for r in _csv(v / "coverage.csv")}
    assert (coverage["climate"]["jobs_instrumented"], coverage["climate"]["jobs_total"]) == (
        "25",
        "28",
    )
    assert coverage["all"]["jobs_total"] == "43"
    # Large jobs (>= 4 processes, >= 100 MiB): the release logs, 128 MiB each, and the DXT job.
    stats = {r["project"]: r for r in _csv(v / "mib-s-per-cn-by-project.csv")}
    assert (stats["climate"]["jobs"], stats["physics"]["jobs"]) == ("25", "11")
    html = tree_study["plain"].read_text()
    assert "jobs with at least 4 processes that moved at least 100 MiB" in html
    quarantine = _csv(v / "quarantine.csv")
    assert [Path(r["path"]).name for r in quarantine] == [HOSTILE_LOG]


def test_default_filter_and_no_accounting_say_so(tree_study, tmp_path, darshan_logs):
    # The seed's filter (1,024 processes, 500 MiB): no test job is that large.
    m = json.loads((tree_study["again"].parent / "MANIFEST.json").read_text())
    notes = {c["id"]: c["caption"] for c in m["contents"] if c["kind"] == "note"}
    assert set(notes) == {
        "mib-s-per-cn-by-project",
        "large-job-averages",
        "access-sizes-by-project",
    }
    for caption in notes.values():
        assert "at least 1,024 processes that moved at least 500 MiB" in caption
    # A store of logs without Slurm accounting: coverage says what it needs.
    tree, store = tmp_path / "tree", tmp_path / "store"
    tree.mkdir()
    shutil.copy(darshan_logs / RELEASE_350, tree)
    assert main(["ingest", str(tree), "--store", str(store)]) == 0
    index = report.build(store, "characterization", tmp_path / "reports")
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    coverage = next(c for c in m["contents"] if c["id"] == "coverage")
    assert coverage["kind"] == "note" and "iostudy sacct import" in coverage["caption"]


def test_many_jobs_are_not_drawn_one_by_one(tree_study, tmp_path, monkeypatch):
    monkeypatch.setattr(sections, "JOBS_SHOWN", 10)
    index = report.build(tree_study["store"], "characterization", tmp_path / "reports")
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    (jobs,) = [c for c in m["contents"] if c["id"] == "job-mib-s-per-cn"]
    assert jobs["kind"] == "note" and "too many to draw one by one" in jobs["caption"]
    assert len(_csv(index.parent / "job-mib-s-per-cn.csv")) > 10  # every job still in the CSV


def test_workload_section_only_with_job_logs(tmp_path):
    results, store = reportdata.make_study(tmp_path)
    for run_id, *_ in reportdata.RUNS:
        for table in ("jobs", "files"):
            path = store / table / f"{run_id}.parquet"
            pq.write_table(pq.read_table(path).slice(0, 0), path)
    index = report.build(store, "quick", tmp_path / "reports")
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    assert not {c["id"] for c in m["contents"]} & set(WORKLOAD_IDS)
    assert 'id="section-workload"' not in index.read_text()
    assert "#section-large-jobs" not in index.read_text()


def test_cli_large_job_options(tree_study, capsys):
    args = [
        "report",
        "build",
        "--store",
        str(tree_study["store"]),
        "--study",
        "characterization",
        "--reports",
        str(tree_study["reports"]),
        "--large-procs",
        "32",
        "--large-mib",
        "1024",
    ]
    assert main(args) == 0
    index = Path(capsys.readouterr().out.splitlines()[-1])
    stats = _csv(index.parent / "mib-s-per-cn-by-project.csv")
    # Only the DXT job: 32 processes, 4 GiB.
    assert [(r["project"], r["jobs"]) for r in stats] == [(HOSTILE_ACCOUNT, "1")]
    assert "at least 32 processes that moved at least 1,024 MiB" in index.read_text()
    with pytest.raises(SystemExit):
        main([*args[:-4], "--large-procs", "0"])
    with pytest.raises(SystemExit):
        main([*args[:-4], "--large-mib", "-1"])


class Texts(HTMLParser):
    """Every element with its attributes, and the page's text."""

    def __init__(self):
        super().__init__()
        self.elements, self.text = [], []

    def handle_starttag(self, tag, attrs):
        self.elements.append((tag, dict(attrs)))

    handle_startendtag = handle_starttag

    def handle_data(self, data):
        self.text.append(data)


def dump_dom(url: str, binary: str) -> str:
    """The page's DOM after loading and running whatever it runs (chromium --dump-dom)."""
    import subprocess

    flags = [f for f in chromium.FLAGS if f != "--remote-debugging-pipe"]
    proc = subprocess.run(
        [binary, *flags, "--dump-dom", url], capture_output=True, text=True, timeout=120, check=True
    )
    return proc.stdout


def test_names_from_logs_stay_text_in_chromium(tree_study, browser):
    """Accounts, folders and log names written like markup are shown as text: the page the
    browser built has no element or handler they would inject, no console error, and their
    text is on the page (tables and the figures' SVG text)."""
    page = tree_study["plain"]
    load = chromium.load(page.resolve().as_uri(), chromium=browser)
    assert load.errors() == []
    assert [u for u in load.requests if not u.startswith("data:")] == [page.resolve().as_uri()]
    chromium.assert_not_blank(load.screenshot)
    dom = Texts()
    dom.feed(dump_dom(page.resolve().as_uri(), browser))
    tags = {tag for tag, _ in dom.elements}
    assert not tags & {"script", "img", "iframe", "object", "embed", "foreignobject"}, tags
    handlers = [(t, a) for t, a in dom.elements if any(k.lower().startswith("on") for k in a)]
    assert handlers == []
    text = "".join(dom.text)
    for name in (HOSTILE_ACCOUNT, HOSTILE_ACCOUNT2, HOSTILE_LOG, "ml$ai$"):
        assert name in text, name
    # the figures' texts are literal: workload's escape of "$" for mathtext is not shown
    assert r"ml\$ai" not in page.read_text()


def test_anonymized_report_shows_no_name(tree_study, browser):
    v = tree_study["anon"].parent
    for path in sorted(v.iterdir()):
        if path.name == "MANIFEST.json":
            continue
        content = path.read_text()
        for name in NAMES:
            assert name not in content, (path.name, name)
    # Pseudonyms, the same everywhere: tables, CSVs, figures.
    top = {r["project"]: r for r in _csv(v / "top-projects.csv")}
    plain = {r["project"]: r for r in _csv(tree_study["plain"].parent / "top-projects.csv")}
    assert sorted(r["bytes_moved"] for r in top.values()) == sorted(
        r["bytes_moved"] for r in plain.values()
    )
    climate = next(p for p, r in top.items() if r["jobs"] == "25")
    assert climate.startswith("project-") and "(unknown)" in top
    coverage = {r["project"] for r in _csv(v / "coverage.csv")}
    assert climate in coverage
    html = tree_study["anon"].read_text()
    assert html.count(climate) >= 4  # two tables, two figures at least
    assert "Anonymized" in html
    # Paths too, consistently between CSVs.
    points = {r["log_path"] for r in _csv(v / "files-vs-procs.csv")}
    jobs = {r["log_path"] for r in _csv(v / "job-mib-s-per-cn.csv")}
    assert points == jobs and not any("treddy" in p for p in points)
    # The key stays in the store, never in the report; the next build has the same pseudonyms.
    assert (tree_study["store"] / "anonymize.key").is_file()
    assert not list(tree_study["reports"].rglob("*.key"))
    key = (tree_study["store"] / "anonymize.key").read_text().strip()
    for path in tree_study["reports"].rglob("*"):
        if path.is_file():
            assert key not in path.read_text()
    again = {r["project"] for r in _csv(tree_study["again"].parent / "top-projects.csv")}
    assert again == set(top)
    m1 = json.loads((v / "MANIFEST.json").read_text())["report"]["anonymized"]
    m2 = json.loads((tree_study["again"].parent / "MANIFEST.json").read_text())
    assert m1 == m2["report"]["anonymized"] and len(m1["key_id"]) == 16
    load = chromium.load(tree_study["anon"].resolve().as_uri(), chromium=browser)
    assert load.errors() == []


def test_storage_device_section_from_a_real_monitor(tmp_path, browser):
    """iostat-mon runs for real (1 s intervals, stopped by SIGTERM), its records are imported
    into a study's store, and the report shows seed 000's device section (Fig. 6, 7, the
    numbers, the gaps) that loads in Chromium without errors."""
    import shutil
    import signal
    import subprocess
    import sys
    import time

    if not shutil.which("iostat"):
        pytest.skip("sysstat's iostat is not installed (make apt-packages)")
    out = tmp_path / "iostat"
    iostudy = Path(sys.executable).parent / "iostudy"
    mon = subprocess.Popen([iostudy, "iostat-mon", "--interval", "1", "--out", out])
    try:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            days = list(out.glob("*.jsonl"))
            if days and sum('"io"' in line for line in days[0].read_text().splitlines()) >= 3:
                break
            time.sleep(0.2)
    finally:
        mon.send_signal(signal.SIGTERM)
        assert mon.wait(15) == 0
    _, store = reportdata.make_study(tmp_path)
    assert main(["iostat-mon", "import", str(out), "--store", str(store)]) == 0
    index = report.build(store, "quick", tmp_path / "reports")
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    ids = [c["id"] for c in m["contents"]]
    for ident in ("iostat-throughput", "iostat-summary", "iostat-daily", "iostat-burstiness"):
        assert ident in ids, ident
    html = index.read_text()
    assert 'href="#section-iostat"' in html
    load = chromium.load(index.resolve().as_uri(), chromium=browser)
    assert load.errors() == []
    chromium.assert_not_blank(load.screenshot)


def test_file_system_section_from_two_real_scans(tmp_path, browser):
    """Two fsstats scans of a real tree, a project growing in between, imported into a study's
    store: the report shows Table III's growth, Fig. 8's size CDF and the unmodified shares,
    and loads in Chromium without errors."""
    root = tmp_path / "fs"
    for project, files in (("climate", 12), ("physics", 3)):
        (root / project).mkdir(parents=True)
        for i in range(files):
            (root / project / f"f{i}.nc").write_bytes(b"x" * (1024 << (i % 4)))
    snaps = tmp_path / "snaps"
    assert main(["fsstats", "scan", str(root), "--out", str(snaps / "january.json"), "-q"]) == 0
    for i in range(20):
        (root / "physics" / f"new{i}.h5").write_bytes(b"y" * 4096)
    assert main(["fsstats", "scan", str(root), "--out", str(snaps / "march.json"), "-q"]) == 0
    _, store = reportdata.make_study(tmp_path)
    assert (
        main(["fsstats", "import", *map(str, sorted(snaps.glob("*.json"))), "--store", str(store)])
        == 0
    )
    index = report.build(store, "quick", tmp_path / "reports")
    v = index.parent
    m = json.loads((v / "MANIFEST.json").read_text())
    ids = [c["id"] for c in m["contents"] if c["id"].startswith("fsstats-")]
    for kind in ("growth", "size-cdf", "unmodified"):
        assert any(i.startswith(f"fsstats-{kind}-") for i in ids), (kind, ids)
    (growth_csv,) = v.glob("fsstats-growth-*.csv")
    growth = {r["project"]: r for r in _csv(growth_csv)}
    assert (growth["physics"]["files_a"], growth["physics"]["files_b"]) == ("3", "23")
    assert (growth["climate"]["files_a"], growth["climate"]["files_b"]) == ("12", "12")
    assert 'href="#section-fsstats"' in index.read_text()
    load = chromium.load(index.resolve().as_uri(), chromium=browser)
    assert load.errors() == []
    chromium.assert_not_blank(load.screenshot)
