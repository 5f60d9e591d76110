"""`iostudy report build` on inputs that once crashed or hung it: a store of a log tree without
a system beside an imported bundle, log tags holding "$", a build that fails, and files in the
place of the next version. Stores are made by `iostudy ingest` of real logs."""

import json
import os
import shutil
import subprocess
import sys
from html.parser import HTMLParser
from pathlib import Path

import jinja2
import pytest

from iostudy.cli.cli import main
from iostudy.report import publish, report

from . import chromium, rundirs

pytestmark = pytest.mark.browser

IOSTUDY = Path(sys.executable).with_name("iostudy")
LOGS = ("mpi-io-test-x86_64-3.5.0", "mpi-io-test-x86_64-3.4.0")


def log_tree(root: Path, logs: Path) -> Path:
    tree = root / "tree"
    tree.mkdir(parents=True)
    for name in LOGS:
        log = logs / "release_logs" / f"{name}.darshan"
        (tree / log.name).write_bytes(log.read_bytes())
    return tree


def strict_json(path: Path):
    """The JSON of path, refusing NaN and Infinity (not JSON, though Python writes them)."""

    def refuse(constant):
        raise ValueError(f"{path}: {constant} is not JSON")

    return json.loads(path.read_text(), parse_constant=refuse)


def build(store: Path, reports: Path, study="characterization", timeout=300):
    """`iostudy report build` as its own process: a hang fails the test, it does not stall it."""
    argv = [IOSTUDY, "report", "build", "--store", store, "--study", study, "--reports", reports]
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout)


@pytest.fixture(scope="module")
def tree_store(tmp_path_factory, darshan_logs):
    """A log tree ingested without --system, and another site's (its logs on system local)
    imported from its bundle."""
    root = tmp_path_factory.mktemp("tree-and-bundle")
    store = root / "store"
    argv = ["--study", "characterization"]
    assert (
        main(["ingest", str(log_tree(root / "here", darshan_logs)), "--store", str(store), *argv])
        == 0
    )
    other = root / "other-store"
    there = log_tree(root / "there", darshan_logs)
    assert main(["ingest", str(there), "--store", str(other), *argv, "--system", "local"]) == 0
    bundle = root / "other.tar"
    assert main(["export", "--store", str(other), "--out", str(bundle), "--site", "other"]) == 0
    assert main(["import", str(bundle), "--store", str(store), "--trust-on-first-use"]) == 0
    return store


@pytest.fixture(scope="module")
def plain_store(tmp_path_factory, darshan_logs):
    """A log tree of system local."""
    root = tmp_path_factory.mktemp("plain")
    store = root / "store"
    argv = ["--study", "characterization", "--system", "local"]
    assert main(["ingest", str(log_tree(root, darshan_logs)), "--store", str(store), *argv]) == 0
    return store


def test_log_tree_without_system_beside_an_imported_bundle(tree_store, tmp_path):
    reports = tmp_path / "reports"
    proc = build(tree_store, reports)
    assert proc.returncode == 0, proc.stderr
    study = reports / "characterization"
    manifest = strict_json(study / "v1" / "MANIFEST.json")
    assert sorted(str(r["system"]) for r in manifest["runs"]) == ["None", "other/local"]
    index = (study / "index.html").read_text()
    assert 'href="v1/index.html"' in index and "?, other/local" in index


def test_a_failed_build_publishes_nothing(plain_store, tmp_path, monkeypatch):
    """The index cannot be made (its template is broken): no version appears, and nothing of
    the build is left in the study folder."""
    templates = tmp_path / "templates"
    shutil.copytree(publish.TEMPLATES, templates)
    (templates / "versions.html.j2").write_text("{% for %}\n")
    monkeypatch.setattr(publish, "TEMPLATES", templates)
    reports = tmp_path / "reports"
    with pytest.raises(jinja2.TemplateSyntaxError):
        report.build(plain_store, "characterization", reports)
    assert list((reports / "characterization").iterdir()) == []


@pytest.mark.parametrize("kind", ["file", "dangling symlink", "both"])
def test_a_file_at_the_next_version_is_passed_over(plain_store, tmp_path, kind):
    """v1 a regular file, v2 a symlink to nothing: they are no versions, and the build publishes
    the next free number instead of trying the taken one forever."""
    study = tmp_path / "reports" / "characterization"
    study.mkdir(parents=True)
    if kind in ("file", "both"):
        (study / "v1").write_text("not a version\n")
    if kind in ("dangling symlink", "both"):
        (study / "v2").symlink_to(tmp_path / "nowhere")
    expected = {"file": 2, "dangling symlink": 3, "both": 3}[kind]
    proc = build(plain_store, tmp_path / "reports", timeout=120)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout.splitlines()[-1] == str(study / f"v{expected}" / "index.html")
    assert publish.versions(study) == [expected]
    if kind != "dangling symlink":
        assert (study / "v1").read_text() == "not a version\n"
    if kind != "file":
        assert os.readlink(study / "v2") == str(tmp_path / "nowhere")


class SvgTexts(HTMLParser):
    """The text of every <text> element of the page's inline SVG figures."""

    def __init__(self):
        super().__init__()
        self.depth, self.texts = 0, []

    def handle_starttag(self, tag, attrs):
        self.depth += tag == "text"

    def handle_endtag(self, tag):
        self.depth -= tag == "text"

    def handle_data(self, data):
        if self.depth:
            self.texts.append(data)


DOLLARS = r"s$\x$"


def test_tags_with_dollars_are_text_in_the_figures(tmp_path, browser):
    """A run whose log is tagged with a system, MPI flavour and check holding "$\\x$" (not valid
    mathtext): the report is built and its figures show the names as they are."""
    results = tmp_path / "results"
    run = results / "run1"
    (run / "darshan").mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(rundirs.manifest("run1")))
    tags = rf"campaign=quick;check=c$\x$;system={DOLLARS};environ=e$\x$;repetition=0;nodes=1"
    rundirs.runtime_log(run / "darshan" / "dd_id1.darshan", tmp_path / "work", tags=tags)
    store = results / "store"
    assert main(["ingest", str(run), "--store", str(store)]) == 0
    reports = tmp_path / "reports"
    proc = build(store, reports, study="quick")
    assert proc.returncode == 0, proc.stderr
    page = reports / "quick" / "v1" / "index.html"
    svg = SvgTexts()
    svg.feed(page.read_text())
    assert any(t.startswith(f"{DOLLARS} · run1 · job") for t in svg.texts), svg.texts
    load = chromium.load(page.resolve().as_uri(), chromium=browser)
    assert load.errors() == []
    chromium.assert_not_blank(load.screenshot)


@pytest.fixture(scope="module")
def browser():
    binary = chromium.find_chromium()
    if not binary:
        pytest.fail(f"chromium is not installed: the report tests need Debian's {chromium.PACKAGE}")
    return binary


def test_log_axis_ticks_are_plain_text_not_mathtext_source(tmp_path, darshan_logs):
    """Figures are drawn with mathtext off (names from logs may hold "$"): matplotlib's own
    tick labels of a log axis ("$\\mathdefault{6\\times10^{-1}}$") must still read as numbers.
    The release logs give the files-vs-processes figure, whose axes are logarithmic."""
    tree = tmp_path / "logs"
    shutil.copytree(darshan_logs / "release_logs", tree)
    store = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(store)]) == 0
    proc = build(store, tmp_path / "reports")
    assert proc.returncode == 0, proc.stderr
    html = (tmp_path / "reports" / "characterization" / "v1" / "index.html").read_text()
    assert "mathdefault" not in html and "\\times" not in html
    # matplotlib's labels of a short log axis's minor ticks (0.4, 0.6), as a reader writes them
    # (the report's files figure no longer labels its minor ticks: drawn here on their own)
    from matplotlib.figure import Figure

    from iostudy.report import figures

    fig = Figure()
    ax = fig.subplots()
    ax.plot([0.3, 0.9], [0.3, 0.9])
    ax.set_yscale("log")
    drawn = figures.svg(fig, "log-axis")
    assert "mathdefault" not in drawn and "×10⁻¹" in drawn
