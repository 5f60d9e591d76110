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
    # counts first; the kind's scaling, components, histograms, Table I (missing: commands),
    # perf and systems; then the others with data; provenance last
    assert keys == [
        "counts",
        "scaling",
        "components",
        "histograms",
        "crosscheck",
        "perf",
        "systems",
        "lustre",
        "provenance",
    ]
    missing = {s["key"]: s["missing"] for s in page if s["missing"]}
    assert missing == {
        "scaling": "make spack SYSTEM=local, then iostudy campaign run acceptance --system "
        "local (IOR, mdtest and metarates)",
        "components": "iostudy campaign run components --system local --ingest STORE (fio, "
        "netbw, IOR to memory)",
        "histograms": "iostudy campaign run quick --system local --ingest STORE",
        "crosscheck": "iostudy campaign run quick --system local --ingest STORE",
    }


def test_a_needed_section_of_notes_alone_and_no_command_is_not_shown():
    """A kind's section without data says which command brings it; when no command does (the
    jobs of a characterization come with its logs), it is not on the page at all."""
    note = item("jobs", "job-mib-s-per-cn", kind="note")
    page = layout.sections("characterization", [note], ["a", "b"])
    assert "jobs" not in [s["key"] for s in page]
    workload = next(s for s in page if s["key"] == "workload")
    # two systems: the command names none of them
    assert (
        workload["missing"] == "iostudy ingest LOGROOT --system SYSTEM (a facility's Darshan logs)"
    )


def test_headline_figures_against_the_declared_peak():
    import pandas as pd

    from iostudy.report import headline

    perf = pd.DataFrame(
        [
            ["r1", "ior_check", "write_mib_s", "MiB/s", 900.0, "local"],
            ["r2", "ior_check", "write_mib_s", "MiB/s", 1200.0, "local"],
            ["r2", "ior_check", "read_mib_s", "MiB/s", 3000.0, "other"],
            ["r2", "mdtest_check", "file_create_ops_s", "ops/s", 500.0, "local"],
        ],
        columns=["run_id", "check", "variable", "unit", "value", "system"],
    )
    systems = {"local": {"peaks": {"aggregate_mib_s": 4800, "metadata_ops_s": None}}}
    assert headline.best_lines(perf, systems) == [
        # 1200 / 4800 = 25 %
        "context, best write ever measured: 1200 MiB/s (ior_check write_mib_s on local, run "
        "r2; 25% of its declared 4800 MiB/s)",
        "context, best read ever measured: 3000 MiB/s (ior_check read_mib_s on other, run r2; "
        "no peak declared)",
        "context, best metadata rate ever measured: 500 ops/s (mdtest_check "
        "file_create_ops_s on local, run r2; no peak declared)",
    ]
    jobs = pd.DataFrame({"mib_s_per_cn": [1.0, 2.0, 3.0, 4.0, None], "nodes": [1] * 5})
    # of 1..4: median 2.5, 10th percentile 1.3, 90th 3.7 (linear interpolation)
    assert headline.job_lines(jobs) == [
        "5 jobs; MiB/s per compute node of the 4 that moved data: median 2.5 (10th to 90th "
        "percentile 1.3 to 3.7; iostudy jobs)"
    ]
    unknown = pd.DataFrame({"mib_s_per_cn": [None, None], "nodes": [None, None]})
    assert headline.job_lines(unknown) == [
        "2 jobs, no MiB/s per compute node: nodes unknown: no accounting, no system description"
    ]


def test_the_jobs_own_io_is_on_the_pages_of_the_kinds_that_study_it():
    items = [
        item("counts", "counts", table={"rows": [1]}, kind="table"),
        item("workload", "interfaces-by-size", svg="<svg/>"),
        item("diagnoses", "diagnoses-by-rule", table={"rows": [1]}, kind="table"),
    ]
    keys = {
        kind: [s["key"] for s in layout.sections(kind, items, ["local"])]
        for kind in ("acceptance", "characterization", "applications")
    }
    assert "workload" not in keys["acceptance"] and "diagnoses" not in keys["acceptance"]
    assert {"workload", "diagnoses"} <= set(keys["characterization"])
    assert {"workload", "diagnoses"} <= set(keys["applications"])


def test_each_kind_leads_with_its_sections_in_places_one_to_n():
    """The registry gives each section its place in the lead of every kind that needs it: one
    section a place, none left out (1, 2, ... n)."""
    from iostudy.report.sections import SECTIONS

    places: dict[str, list[int]] = {}
    for section in SECTIONS:
        for kind, place in section.kinds.items():
            places.setdefault(kind, []).append(place)
    assert sorted(places) == sorted(
        [
            "acceptance",
            "regression",
            "applications",
            "interference",
            "characterization",
            "cross-site",
        ]
    )
    for kind, taken in places.items():
        assert sorted(taken) == list(range(1, len(taken) + 1)), kind
    assert len({s.key for s in SECTIONS}) == len(SECTIONS)
