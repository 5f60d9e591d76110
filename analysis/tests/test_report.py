"""`iostudy report build`: versions, MANIFEST.json, self-containment, and the page in Chromium."""

import csv
import hashlib
import io
import json
import os
from html.parser import HTMLParser
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from PIL import Image

from iostudy import report
from iostudy import store as store_mod
from iostudy.cli import main

from . import chromium, reportdata


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
    assert report.versions(study["reports"] / "quick") == [1, 2]
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
    assert report.versions(study["reports"] / "quick") == [1, 2]


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
        report.rename_noreplace(tmp_path / "new", tmp_path / "v1")
    assert (tmp_path / "new" / "f").is_file() and not any((tmp_path / "v1").iterdir())
    report.rename_noreplace(tmp_path / "new", tmp_path / "v2")
    assert (tmp_path / "v2" / "f").read_text() == "x"


def test_version_taken_meanwhile_goes_to_the_next_number(tmp_path, monkeypatch):
    """Another build publishes v1 while this one renders: this one becomes v2, v1 stays theirs."""
    results, store = reportdata.make_study(tmp_path)
    reports = tmp_path / "reports"
    render = report.render
    calls = []

    def racing_render(tables, runs, study, version, title, out, now):
        calls.append(version)
        if len(calls) == 1:
            other = reports / "quick" / "v1"
            other.mkdir()
            (other / "index.html").write_text("someone else's")
        return render(tables, runs, study, version, title, out, now)

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
    point = next(r for r in ior if (r["layout"], r["target"], r["procs"], r["operation"])
                 == ("fpp", "scratch", "4", "write"))  # fmt: skip
    assert float(point["mib_s"]) == pytest.approx(400 * 1.1)
    assert point["transfer"] == "4 MiB, aligned" and point["declared_aggregate_mib_s"] == ""
    verdicts = _csv(v2 / "scaling-pass-fail.csv")
    failed = [(r["run_id"], r["point"]) for r in verdicts if r["result"] == "fail"]
    assert sorted(failed) == sorted((r[0], "procs=4") for r in reportdata.RUNS)
    # No logs of these IOR runs: the cross-check says so rather than passing.
    cross_ior = _csv(v2 / "ior-crosscheck.csv")
    assert len(cross_ior) == 3 * 24 and {r["within_3pct"] for r in cross_ior} == {"False"}
    quarantine = _csv(v2 / "quarantine.csv")
    assert [r["reason"] for r in quarantine] == ["darshan-util could not read the log: truncated"]
    counts = {r["system"]: r for r in _csv(v2 / "counts.csv")}
    assert counts["all"]["runs"] == "3" and counts["all"]["quarantined inputs"] == "1"


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


def assert_not_blank(png: bytes):
    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    non_white = (pixels < 245).any(axis=2).mean()
    assert len(colours) > 50, f"{len(colours)} distinct colours"
    assert non_white > 0.05, f"only {non_white:.1%} of the pixels are not white"


def test_report_loads_in_chromium_without_errors(study, browser, tmp_path):
    for page in (study["v2"], study["reports"] / "quick" / "index.html"):
        url = page.resolve().as_uri()
        load = chromium.load(url, chromium=browser)
        assert load.errors() == [], page
        # Nothing but the page itself and inline data: no network, no other file.
        assert [u for u in load.requests if not u.startswith("data:")] == [url]
        assert_not_blank(load.screenshot)
        (tmp_path / f"{page.parent.name}.png").write_bytes(load.screenshot)


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
        assert_not_blank(chromium.load(blank.as_uri(), chromium=browser).screenshot)


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
    assert "No data for this figure." in html and "Run manifests missing" in html
    m = json.loads((index.parent / "MANIFEST.json").read_text())
    missing = [i for i in m["inputs"] if i.get("missing")]
    assert [i["run_id"] for i in missing] == [reportdata.RUNS[0][0]]
    assert len(_csv(index.parent / "quarantine.csv")) == 1
