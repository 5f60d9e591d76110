"""iostudy export / import: a site's store as a bundle, imported into a third store beside
another site's, tampering rejected, a second import a no-op, and the cross-site report."""

import csv
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iostudy import bundle, cli, store
from iostudy.provenance import sha256_file

from . import reportdata
from .filestate import snapshot


def make_site(root: Path, site: str) -> tuple[Path, Path]:
    """reportdata's store of runs on local and testcluster, its runs rows given their manifests'
    real sha256 (reportdata writes the tables without ingesting), exported as ``site``."""
    results, store_dir = reportdata.make_study(root)
    for path in (store_dir / "runs").glob("*.parquet"):
        runs = pq.read_table(path).to_pylist()
        for run in runs:
            run["manifest_sha256"] = sha256_file(results / run["manifest_path"])
        pq.write_table(pa.Table.from_pylist(runs, pq.read_schema(path)), path)
    out = root / f"{site}.tar"
    assert cli.main(["export", "--store", str(store_dir), "--out", str(out), "--site", site]) == 0
    return store_dir, out


@pytest.fixture(scope="module")
def site_a(tmp_path_factory):
    return make_site(tmp_path_factory.mktemp("site-a"), "site-a")


def test_export_holds_manifests_systems_and_checksums(site_a):
    store_dir, out = site_a
    with tarfile.open(out) as tar:
        names = tar.getnames()
        meta = json.load(tar.extractfile(bundle.META))
        sums = tar.extractfile(bundle.SUMS).read().decode().splitlines()
    runs = store.read_table(store_dir, "runs")
    assert {r["run_id"] for r in meta["runs"]} == set(runs["run_id"])
    assert meta["site"] == "site-a" and meta["missing_manifests"] == {}
    assert {f"manifests/{r}.json" for r in runs["run_id"]} <= set(names)
    assert {f"systems/{s}.json" for s in runs["system"]} <= set(names)
    # every member but SHA256SUMS is listed once in it
    assert sorted(line.split("  ", 1)[1] for line in sums) == sorted(set(names) - {bundle.SUMS})
    # the store remembers its site; another name is refused
    assert json.loads((store_dir / bundle.SITE_FILE).read_text()) == {"site": "site-a"}
    again = store_dir.parent / "other.tar"
    assert cli.main(["export", "--store", str(store_dir), "--out", str(again), "--site", "b"]) == 2
    assert not again.exists()
    # an existing bundle is never overwritten
    assert cli.main(["export", "--store", str(store_dir), "--out", str(out)]) == 2


def test_import_keeps_sites_apart_and_twice_is_a_no_op(site_a, tmp_path, capsys):
    store_dir, out = site_a
    third = tmp_path / "third"
    assert cli.main(["import", str(out), "--store", str(third)]) == 0
    own = store.read_table(store_dir, "runs")
    runs = store.read_table(third, "runs")
    assert sorted(runs["run_id"]) == sorted(f"site-a:{r}" for r in own["run_id"])
    assert set(runs["site"]) == {"site-a"}
    assert sorted(runs["system"]) == sorted(own["system"])  # names kept
    perf = store.read_table(third, "perf")
    assert len(perf) == len(store.read_table(store_dir, "perf"))
    assert set(perf["run_id"]) <= set(runs["run_id"])
    before = snapshot(third)
    capsys.readouterr()
    assert cli.main(["import", str(out), "--store", str(third)]) == 0
    assert "nothing changed" in capsys.readouterr().out
    assert snapshot(third) == before


@pytest.mark.parametrize("where", ["header", "meta", "table", "padding", "sums", "end"])
def test_a_changed_byte_is_rejected(site_a, tmp_path, where, capsys):
    _, out = site_a
    data = bytearray(out.read_bytes())
    with tarfile.open(out) as tar:
        members = {m.name: m for m in tar.getmembers()}
    meta, sums = members[bundle.META], members[bundle.SUMS]
    table = next(m for n, m in members.items() if n.startswith("tables/perf/"))
    offset = {
        "header": meta.offset + 10,  # a name byte of the first header
        "meta": meta.offset_data + 5,
        "table": table.offset_data + table.size // 2,
        "padding": meta.offset_data + meta.size + 1,
        "sums": sums.offset_data + 3,
        "end": len(data) - 100,
    }[where]
    data[offset] ^= 0x01
    tampered = tmp_path / "tampered.tar"
    tampered.write_bytes(bytes(data))
    target = tmp_path / "store"
    capsys.readouterr()
    assert cli.main(["import", str(tampered), "--store", str(target)]) == 2
    assert "tampered.tar" in capsys.readouterr().err
    assert not list(target.glob("*/*.parquet"))  # nothing imported


def test_own_site_is_not_imported(site_a, capsys):
    store_dir, out = site_a
    before = snapshot(store_dir)
    assert cli.main(["import", str(out), "--store", str(store_dir)]) == 2
    assert "own site" in capsys.readouterr().err
    assert snapshot(store_dir) == before


def test_cross_site_report_from_two_sites(site_a, tmp_path):
    """A second site's store (the same study data, as site-b) and site-a imported into a third
    store: the report puts site-a/<system> beside site-b/<system> per comparable result."""
    _, out_a = site_a
    _, out_b = make_site(tmp_path / "b", "site-b")
    third = tmp_path / "third"
    for out in (out_a, out_b):
        assert cli.main(["import", str(out), "--store", str(third)]) == 0
    reports = tmp_path / "reports"
    assert cli.main(["report", "build", "--store", str(third), "--study", "quick",
                     "--reports", str(reports)]) == 0  # fmt: skip
    with open(reports / "quick" / "v1" / "cross-site.csv", newline="") as f:
        systems = {row["system"] for row in csv.DictReader(f)}
    assert {"site-a/local", "site-b/local", "site-a/testcluster", "site-b/testcluster"} <= systems
    html = (reports / "quick" / "v1" / "index.html").read_text()
    assert 'id="cross-site"' in html or "cross-site" in html
