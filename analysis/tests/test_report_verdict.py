"""The verdict at the top of a report built from a real campaign run.

The quick campaign's shape, small: the I/O-model check runs (2 ranks of Open MPI, 16 MiB per
model); IOR and mdtest are optional and not built here (the Spack view is an empty stand-in), so
their cases are skipped with ReFrame's reason. The study is INCOMPLETE: the page's first lines
name each skipped check, how many of its cases did not run and the command that builds it; the
index of versions shows the verdict. The page loads in headless Chromium without errors.
"""

import json
import shutil

import pytest

from iostudy.cli.cli import main
from tests import chromium
from tests.sites import trust

# its fixture runs a real campaign held against the references
pytestmark = [pytest.mark.campaign, pytest.mark.exclusive]

CAMPAIGN = {
    "name": "smallquick",
    "description": "test: the quick campaign's checks, small",
    "study": "smallquick",
    "environs": ["openmpi"],
    "checks": [
        {
            "check": "iomodel_check",
            "parameters": {"size": "16M", "max_procs": 2, "procs_per_node": "system"},
        },
        {
            "check": "ior_check",
            "optional": True,
            "parameters": {
                "layout": ["shared", "fpp"],
                "transfer": "1M",
                "transfers": 4,
                "procs": 1,
            },
        },
        {
            "check": "mdtest_check",
            "optional": True,
            "parameters": {"files_per_proc": 10, "procs": 1},
        },
    ],
}


@pytest.fixture(scope="module")
def built(tmp_path_factory):
    """A real run of the campaign (no Spack view: IOR and mdtest skip), ingested, reported."""
    root = tmp_path_factory.mktemp("verdict")
    spack = root / "spack-build"
    spack.mkdir()
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("IOSTUDY_SPACK_BUILD", str(spack))
        campaign = root / "smallquick.json"
        campaign.write_text(json.dumps(CAMPAIGN))
        results, store, reports = root / "results", root / "store", root / "reports"
        argv = ["campaign", "run", str(campaign), "--system", "local", "--results", str(results)]
        assert main(argv) == 0  # optional checks that cannot run leave the run complete
        (run_dir,) = results.iterdir()
        assert main(["ingest", str(run_dir), "--store", str(store)]) == 0
        assert (
            main(
                [
                    "report",
                    "build",
                    "--store",
                    str(store),
                    "--results",
                    str(results),
                    "--study",
                    "smallquick",
                    "--reports",
                    str(reports),
                ]
            )
            == 0
        )
    return {"run_dir": run_dir, "study": reports / "smallquick", "spack": spack, "store": store}


def test_skipped_checks_make_the_report_incomplete_and_say_what_builds_them(built):
    manifest = json.loads((built["study"] / "v1" / "MANIFEST.json").read_text())
    view = built["spack"] / "local" / "view" / "bin"
    assert manifest["report"]["verdict"] == "INCOMPLETE"
    assert manifest["report"]["reasons"] == [
        # two layouts of IOR, one mdtest point, each with the one MPI flavour
        f"ior_check: 2 cases did not run: ior is not built: no {view / 'ior'} "
        "(run `make spack SYSTEM=local`)",
        f"mdtest_check: 1 case did not run: mdtest is not built: no {view / 'mdtest'} "
        "(run `make spack SYSTEM=local`)",
    ]
    page = (built["study"] / "v1" / "index.html").read_text()
    top = page[: page.index('<nav class="toc">')]
    assert '<p class="word">INCOMPLETE</p>' in top
    assert "make spack SYSTEM=local" in top
    # the acceptance headline: local's latest run against its baseline first (one run: not
    # judged), then as context the best write of the I/O models that ran (no peak declared)
    assert '<ul class="headline"><li>local, latest run ' in top
    assert "<li>context, best write ever measured: " in top and "no peak declared" in top
    index = (built["study"] / "index.html").read_text()
    assert ">INCOMPLETE</td>" in index


def test_the_incomplete_report_loads_in_chromium(built, tmp_path):
    binary = chromium.find_chromium()
    if not binary:
        pytest.fail(f"chromium is not installed (Debian's package '{chromium.PACKAGE}')")
    for page in (built["study"] / "v1" / "index.html", built["study"] / "index.html"):
        load = chromium.load(page.resolve().as_uri(), chromium=binary)
        assert load.errors() == [], page
        chromium.assert_not_blank(load.screenshot)
    chromium.assert_within_budget(built["study"] / "v1" / "index.html", binary)


def test_the_same_campaign_at_another_site_makes_a_cross_site_report(built, tmp_path):
    """The real run ingested again into a second store, exported as site-b's bundle and
    imported beside this site's: a cross-site report of real runs, whose verdict names each
    site's skipped checks, within the page budget, no section empty."""
    store_a, store_b, bundle = tmp_path / "store-a", tmp_path / "store-b", tmp_path / "b.tar"
    shutil.copytree(built["store"], store_a)  # the module's store stays as it was
    assert main(["ingest", str(built["run_dir"]), "--store", str(store_b)]) == 0
    results = str(built["run_dir"].parent)  # where the runs' manifests are
    assert (
        main(
            [
                "export",
                "--store",
                str(store_b),
                "--out",
                str(bundle),
                "--site",
                "site-b",
                "--results",
                results,
            ]
        )
        == 0
    )
    trust(store_a, store_b, "site-b")
    assert main(["import", str(bundle), "--store", str(store_a)]) == 0
    reports = tmp_path / "reports"
    assert (
        main(
            [
                "report",
                "build",
                "--store",
                str(store_a),
                "--study",
                "smallquick",
                "--reports",
                str(reports),
                "--results",
                results,
            ]
        )
        == 0
    )
    page = reports / "smallquick" / "v1" / "index.html"
    report = chromium.verdict_at_top(page)
    assert report["kind"] == "cross-site" and report["verdict"] == "INCOMPLETE", report
    # one line per check and reason: the two sites' runs skipped IOR for the same reason
    assert [r.split(":")[0] for r in report["reasons"]] == ["ior_check", "mdtest_check"]
    assert report["reasons"][0].startswith("ior_check: 4 cases did not run: ior is not built")
    chromium.assert_within_budget(page)
    sections = chromium.assert_no_empty_section(page)
    # the I/O models' values of both sites side by side
    assert sections[:3] == ["counts", "cross-site", "systems"], sections
