"""What a result measured (its ``measures`` label, iostudy.benchmarks.measures) in the store and
in ``iostudy compare``: a column of the perf and iomodel tables filled at ingest, never part of
the parameters; its kind (storage, page cache possible) in the fingerprint, its text (which
names the node's RAM) not; and a store ingested before the column (the label inside the
parameters JSON) compared as one ingested after it.

Run directories as a campaign leaves them (manifest.json, ReFrame's report.json, an I/O-model
case's iomodel.jsonl), ingested by `iostudy ingest`."""

import json

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iostudy.benchmarks import measures
from iostudy.cli.cli import main
from iostudy.metrics import compare, cross_site
from iostudy.store import catalog
from iostudy.store import store as store_mod

from .rundirs import manifest

# The labels as iomodel_check writes them: a node of the local system (24000 MiB of RAM) and of
# the test cluster (2048 MiB), the same 256 MiB per node under both, and O_DIRECT.
PAGE_LOCAL = "page cache possible: 256 MiB per node < RAM 23.4 GiB"
PAGE_CLUSTER = "page cache possible: 256 MiB per node < RAM 2 GiB"
DIRECT = "storage (O_DIRECT)"
# what every case's parameters are once stored: its display name's (ReFrame's text)
PARAMETERS = {"repetition": "0", "size": "256M"}
# one iomodel.jsonl line (iomodel.c's record) of the first repetition
IOMODEL = {
    "benchmark": "iomodel",
    "n": 1,
    "p": 2,
    "f": 1,
    "m": 1,
    "bytes": 256 << 20,
    "write_seconds": 0.25,
    "write_mib_s": 1024.0,
}


def _case(system: str, rep: int, label, value: float, outputdir=None) -> dict:
    """A ReFrame test case of iomodel_check, repetition ``rep``, that measured ``label``."""
    return {
        "name": f"iomodel_check_{rep}",
        "display_name": f"iomodel_check %size=256M %repetition={rep}",
        "system": system,
        "partition": "default",
        "environ": "openmpi",
        "result": "pass",
        "num_tasks": 2,
        "num_tasks_per_node": 2,
        "outputdir": outputdir,
        **({"measures": label} if label is not None else {}),
        "perfvalues": {
            f"{system}:default:ssf_write_mib_s": [value, 100.0, -0.5, None, "MiB/s", "pass"]
        },
    }


def _run(results, run_id: str, system: str, day: int, label, values) -> str:
    """results/<run_id>/: its manifest and a report of one case per repetition (values), the
    first with its output folder's iomodel.jsonl."""
    run = results / run_id
    out = run / "reframe" / "output" / system / "default" / "openmpi" / "iomodel_check_0"
    out.mkdir(parents=True)
    (out / "iomodel.jsonl").write_text(json.dumps(IOMODEL) + "\n")
    started = f"2026-03-{day:02d}T09:00:00Z"
    (run / "manifest.json").write_text(json.dumps(manifest(run_id, system=system, started=started)))
    cases = [
        _case(system, rep, label, v, str(out) if rep == 0 else None) for rep, v in enumerate(values)
    ]
    prefix = str(run / "reframe" / "output")
    report = {"session_info": {"prefix_output": prefix}, "runs": [{"testcases": cases}]}
    (run / "reframe" / "report.json").write_text(json.dumps(report))
    return run_id


def _ingest(tmp_path, *runs) -> object:
    """The store of the runs (run_id, system, day, label, values), each ingested."""
    results, store = tmp_path / "results", tmp_path / "store"
    for args in runs:
        run_id = _run(results, *args)
        assert main(["ingest", str(results / run_id), "--store", str(store)]) == 0
    return store


def _rows(store, sql: str) -> list[tuple]:
    return store_mod.connect(store).execute(sql).fetchall()


def test_ingest_puts_the_label_in_its_column_not_in_the_parameters(tmp_path):
    store = _ingest(
        tmp_path,
        ("r-page", "local", 2, PAGE_LOCAL, [900.0, 1000.0, 1100.0]),
        ("r-none", "local", 3, None, [1000.0]),
    )
    perf = _rows(store, "SELECT run_id, measures, parameters FROM perf ORDER BY run_id, value")
    assert [(r, m) for r, m, _ in perf] == [
        ("r-none", None),
        ("r-page", PAGE_LOCAL),
        ("r-page", PAGE_LOCAL),
        ("r-page", PAGE_LOCAL),
    ]
    assert [json.loads(p) for _, _, p in perf][:2] == [PARAMETERS, PARAMETERS]
    assert all("measures" not in json.loads(p) for _, _, p in perf)
    iomodel = _rows(store, "SELECT run_id, measures, parameters FROM iomodel ORDER BY run_id")
    assert [(r, m, json.loads(p)) for r, m, p in iomodel] == [
        ("r-none", None, PARAMETERS),
        ("r-page", PAGE_LOCAL, PARAMETERS),
    ]


def test_two_systems_whose_labels_differ_by_their_ram_share_a_fingerprint(tmp_path):
    store = _ingest(
        tmp_path,
        ("r-local", "local", 2, PAGE_LOCAL, [900.0, 1000.0, 1100.0]),
        ("r-cluster", "testcluster", 2, PAGE_CLUSTER, [400.0, 500.0, 600.0]),
    )
    table = compare.results(store)
    assert len(table) == 2 and table["fingerprint"].nunique() == 1
    by_system = {r["label"]: r for r in table.to_dict("records")}
    assert {s: (r["measures"], r["measured"], r["value"]) for s, r in by_system.items()} == {
        "local": (PAGE_LOCAL, "page cache possible", 1000.0),
        "testcluster": (PAGE_CLUSTER, "page cache possible", 500.0),
    }
    side, apart = cross_site.cross_site(table)
    assert sorted(side["system"]) == ["local", "testcluster"] and apart.empty


def test_a_storage_value_and_a_page_cache_value_of_one_case_are_two_series(tmp_path, capsys):
    store = _ingest(
        tmp_path,
        ("r-direct", "local", 2, DIRECT, [90.0, 100.0, 110.0]),
        ("r-page", "local", 3, PAGE_LOCAL, [900.0, 1000.0, 1100.0]),
    )
    table = compare.results(store)
    assert table["fingerprint"].nunique() == 2
    capsys.readouterr()  # ingest's
    assert main(["compare", "--store", str(store), "--json"]) == 0
    series = json.loads(capsys.readouterr().out)["series"]
    got = sorted((s["run_id"], s["measures"], s["measured"], s["value"]) for s in series)
    assert got == [
        ("r-direct", DIRECT, "storage", 100.0),
        ("r-page", PAGE_LOCAL, "page cache possible", 1000.0),
    ]
    assert len({s["fingerprint"] for s in series}) == 2
    # one name each, so that the report draws each in its own panel
    assert sorted(s["metric"] for s in series) == [
        "iomodel_check ssf_write_mib_s (size=256M, openmpi, 2 procs, page cache possible)",
        "iomodel_check ssf_write_mib_s (size=256M, openmpi, 2 procs, storage)",
    ]
    # Each is judged as its own series by its band, 100 x (1 - 0.5) = 50 MiB/s upwards, which
    # can fail a series whose median is 100 (50 >= 10 % of it: within, no change) but not one
    # of 1000 (50 < 100: not judged); one series of both (median 550) could fail neither.
    verdicts = {s["run_id"]: s["verdict"] for s in series}
    assert verdicts == {"r-direct": "no change", "r-page": "not judged"}


def _to_old_layout(store, run_id: str) -> None:
    """The run's perf part rewritten as ingest wrote it before the measures column: no column,
    the label (when the case said one) in the parameters JSON, its keys sorted."""
    path = catalog.load(store).part_path("perf", run_id)
    table = pq.read_table(path)
    labels, params = table.column("measures").to_pylist(), table.column("parameters").to_pylist()
    old = [
        json.dumps(json.loads(p) | ({"measures": m} if m else {}), sort_keys=True)
        for p, m in zip(params, labels, strict=True)
    ]
    table = table.drop_columns(["measures"]).set_column(
        table.schema.get_field_index("parameters"), "parameters", pa.array(old, pa.string())
    )
    pq.write_table(table, path)


def _records(frame) -> list[dict]:
    """The rows, a missing value (None, NaN) as None."""
    return [
        {k: None if not isinstance(v, list) and pd.isna(v) else v for k, v in r.items()}
        for r in frame.to_dict("records")
    ]


RUNS = (
    ("r1-page", "local", 2, PAGE_LOCAL, [900.0, 1000.0, 1100.0]),
    ("r2-direct", "local", 3, DIRECT, [90.0, 100.0, 110.0]),
    ("r3-page", "local", 4, PAGE_LOCAL, [950.0, 1050.0, 1150.0]),
    ("r4-none", "local", 5, None, [1000.0]),
)


@pytest.fixture
def old_and_new(tmp_path):
    """The results of RUNS' store as ingested, and the same store after its first two runs'
    and the unlabelled run's perf parts were rewritten in the old layout."""
    store = _ingest(tmp_path, *RUNS)
    new = compare.results(store)
    for run_id in ("r1-page", "r2-direct", "r4-none"):
        _to_old_layout(store, run_id)
    raw = _rows(store, "SELECT DISTINCT run_id, measures FROM perf ORDER BY run_id")
    # the views read the old parts' missing column as null, their labels still in parameters
    assert raw == [
        ("r1-page", None),
        ("r2-direct", None),
        ("r3-page", PAGE_LOCAL),
        ("r4-none", None),
    ]
    (first,) = _rows(store, "SELECT parameters FROM perf WHERE run_id = 'r1-page' AND value = 900")
    assert json.loads(first[0]) == PARAMETERS | {"measures": PAGE_LOCAL}
    return new, compare.results(store)


def test_an_old_layout_store_compares_as_a_new_one(old_and_new):
    new, old = old_and_new
    columns = ["run_id", "fingerprint", "parameters", "measures", "measured", "value"]
    assert _records(old[columns]) == _records(new[columns])
    series = old.groupby("fingerprint")["run_id"].apply(sorted).to_dict()
    # the old run r1 and the new run r3 (both page cache) are one series; storage and the
    # run that did not say are each apart
    assert sorted(series.values()) == [["r1-page", "r3-page"], ["r2-direct"], ["r4-none"]]
    assert {r["run_id"]: r["measures"] for r in _records(old)} == {
        "r1-page": PAGE_LOCAL,
        "r2-direct": DIRECT,
        "r3-page": PAGE_LOCAL,
        "r4-none": None,
    }


@pytest.mark.parametrize(
    ("label", "kind"),
    [
        ("storage (O_DIRECT)", "storage"),
        ("storage (fsync)", "storage"),
        ("storage: 4 GiB per node > RAM 2 GiB", "storage"),
        ("memory (tmpfs)", "memory"),
        (PAGE_LOCAL, "page cache possible"),
        ("page cache possible: 256 MiB per node, RAM unknown", "page cache possible"),
        ("storaged", "unknown"),
        ("memory-mapped", "unknown"),
        ("", None),
        (None, None),
    ],
)
def test_a_labels_kind_is_its_leading_words(label, kind):
    assert measures.kind(label) == kind
