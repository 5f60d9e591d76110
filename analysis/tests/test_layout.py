"""One layout per kind of study: the kind told from the runs, the sections a kind needs first,
the command that brings what is missing, and no section of notes alone."""

from iostudy.report import layout
from iostudy.store.store import TREE_STATUS


def run(campaign="quick", system="local", status="passed", site=None):
    return {"campaign": campaign, "system": system, "status": status, "site": site}


def test_the_kind_of_a_study():
    assert layout.kind_of([run(status=TREE_STATUS)], set()) == "characterization"
    assert layout.kind_of([run(), run(site="other")], {"ior_check"}) == "cross-site"
    assert layout.kind_of([run()], {"probe_check", "ior_check"}) == "interference"
    assert layout.kind_of([run()], {"hmmer_check"}) == "applications"
    assert layout.kind_of([run()] * 2, {"iomodel_check"}) == "acceptance"
    # a scheduled series: three runs of one campaign on one system
    assert layout.kind_of([run()] * 3, {"iomodel_check"}) == "regression"
    assert layout.kind_of([run(), run(), run(system="x")], {"iomodel_check"}) == "acceptance"


def item(section, ident, svg=None, table=None, kind="figure"):
    return {"section": section, "id": ident, "kind": kind, "svg": svg, "table": table}


def test_sections_in_the_kinds_order_and_only_with_data():
    items = [
        item("counts", "counts", table={"rows": [1]}, kind="table"),
        item("provenance", "runs-provenance", table={"rows": [1]}, kind="table"),
        item("fsstats", "fsstats-growth", kind="note"),  # notes alone, not needed: hidden
        item("systems", "systems-side-by-side", svg="<svg/>"),
        item("perf", "reframe-performance", table={"rows": [1]}, kind="table"),
        item("lustre", "lustre-osts", svg="<svg/>"),
    ]
    page = layout.sections("acceptance", items, ["local"])
    keys = [s["key"] for s in page]
    # counts first; the kind's scaling, histograms, Table I (missing: commands), perf and
    # systems; then the others with data; provenance last
    assert keys == ["counts", "scaling", "histograms", "crosscheck", "perf", "systems",
                    "lustre", "provenance"]  # fmt: skip
    missing = {s["key"]: s["missing"] for s in page if s["missing"]}
    assert missing == {
        "scaling": "make spack SYSTEM=local, then iostudy campaign run acceptance --system "
        "local (IOR, mdtest and metarates)",
        "histograms": "iostudy campaign run quick --system local --ingest STORE",
        "crosscheck": "iostudy campaign run quick --system local --ingest STORE",
    }


def test_a_needed_section_keeps_its_notes():
    note = item("jobs", "job-mib-s-per-cn", kind="note")
    page = layout.sections("characterization", [note], ["a", "b"])
    jobs = next(s for s in page if s["key"] == "jobs")
    assert jobs["entries"] == [note] and jobs["missing"] is None
    workload = next(s for s in page if s["key"] == "workload")
    # two systems: the command names none of them
    assert (
        workload["missing"] == "iostudy ingest LOGROOT --system SYSTEM (a facility's Darshan logs)"
    )
