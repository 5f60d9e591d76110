"""iostudy export / import: a site's store as a bundle, imported into a third store beside
another site's, tampering rejected, a second import a no-op, and the cross-site report."""

import csv
import io
import json
import re
import tarfile
from pathlib import Path

import pyarrow.parquet as pq
import pytest

from iostudy.cli import cli
from iostudy.store import bundlecheck, siteid, store

from . import chromium
from .filestate import snapshot
from .sites import make_site, trust


@pytest.fixture(scope="module")
def site_a(tmp_path_factory):
    return make_site(tmp_path_factory.mktemp("site-a"), "site-a")


def test_export_holds_manifests_systems_and_checksums(site_a):
    store_dir, out = site_a
    with tarfile.open(out) as tar:
        names = tar.getnames()
        meta = json.load(tar.extractfile(bundlecheck.META))
        sums = tar.extractfile(bundlecheck.SUMS).read().decode().splitlines()
    runs = store.read_table(store_dir, "runs")
    assert {r["run_id"] for r in meta["runs"]} == set(runs["run_id"])
    assert meta["site"] == "site-a" and meta["missing_manifests"] == {}
    assert {f"manifests/{r}.json" for r in runs["run_id"]} <= set(names)
    assert {f"systems/{s}.json" for s in runs["system"]} <= set(names)
    # every member but SHA256SUMS and its SIGNATURE is listed once in it
    listed = sorted(line.split("  ", 1)[1] for line in sums)
    assert listed == sorted(set(names) - {bundlecheck.SUMS, bundlecheck.SIGNATURE})
    # the store remembers its site; another name is refused
    assert json.loads((store_dir / siteid.SITE_FILE).read_text()) == {"site": "site-a"}
    again = store_dir.parent / "other.tar"
    assert cli.main(["export", "--store", str(store_dir), "--out", str(again), "--site", "b"]) == 2
    assert not again.exists()
    # an existing bundle is never overwritten
    assert cli.main(["export", "--store", str(store_dir), "--out", str(out)]) == 2


def test_import_keeps_sites_apart_and_twice_is_a_no_op(site_a, tmp_path, capsys):
    store_dir, out = site_a
    third = tmp_path / "third"
    trust(third, store_dir, "site-a")
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
    meta, sums = members[bundlecheck.META], members[bundlecheck.SUMS]
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
    assert not target.exists()  # nothing imported, nothing created


def test_own_site_is_not_imported(site_a, capsys):
    store_dir, out = site_a
    before = snapshot(store_dir)
    assert cli.main(["import", str(out), "--store", str(store_dir)]) == 2
    assert "own site" in capsys.readouterr().err
    assert snapshot(store_dir) == before


@pytest.mark.slow
def test_cross_site_report_from_two_sites(site_a, tmp_path):
    """A second site's store (the same study data, as site-b) and site-a imported into a third
    store: the report puts site-a/<system> beside site-b/<system> per comparable result."""
    store_a, out_a = site_a
    store_b, out_b = make_site(tmp_path / "b", "site-b")
    third = tmp_path / "third"
    trust(third, store_a, "site-a")
    trust(third, store_b, "site-b")
    for out in (out_a, out_b):
        assert cli.main(["import", str(out), "--store", str(third)]) == 0
    reports = tmp_path / "reports"
    assert (
        cli.main(
            [
                "report",
                "build",
                "--store",
                str(third),
                "--study",
                "quick",
                "--reports",
                str(reports),
            ]
        )
        == 0
    )
    with open(reports / "quick" / "v1" / "cross-site.csv", newline="") as f:
        systems = {row["system"] for row in csv.DictReader(f)}
    assert {"site-a/local", "site-b/local", "site-a/testcluster", "site-b/testcluster"} <= systems
    page = reports / "quick" / "v1" / "index.html"
    html = page.read_text()
    assert '<section id="section-cross-site">' in html
    # The cross-site kind: its sections first; the verdict of both sites' runs at the top.
    # reportdata's mdtest points fail their reference at 4 processes on every system.
    report = chromium.verdict_at_top(page)
    assert report["kind"] == "cross-site" and report["verdict"] == "FAIL"
    assert any(
        r.startswith("mdtest_check file_create_ops_s on site-b/local: ") for r in report["reasons"]
    )
    chromium.assert_within_budget(page)
    sections = chromium.assert_no_empty_section(page)
    assert sections[:4] == ["counts", "cross-site", "systems", "perf"]


LOGS = ("mpi-io-test-x86_64-3.5.0", "mpi-io-test-x86_64-3.4.0", "mpi-io-test-ppc64-3.1.8")


def tree_store(root: Path, logs: Path, *system: str) -> Path:
    """Three real logs as a facility log tree, ingested (with --system SYSTEM when given)."""
    tree = root / "tree"
    tree.mkdir(parents=True)
    for name in LOGS:
        log = logs / "release_logs" / f"{name}.darshan"
        (tree / log.name).write_bytes(log.read_bytes())
    store_dir = root / "store"
    argv = ["ingest", str(tree), "--store", str(store_dir), "--study", "characterization"]
    assert cli.main(argv + (["--system", *system] if system else [])) == 0
    return store_dir


def test_export_of_a_log_tree_without_system(tmp_path, darshan_logs):
    """A log tree ingested without --system has runs of no system: exported, with no system
    description (it has none), and imported elsewhere."""
    store_dir = tree_store(tmp_path, darshan_logs)
    out = tmp_path / "tree.tar"
    assert cli.main(["export", "--store", str(store_dir), "--out", str(out), "--site", "s1"]) == 0
    with tarfile.open(out) as tar:
        meta = json.load(tar.extractfile(bundlecheck.META))
        names = tar.getnames()
    assert [r["system"] for r in meta["runs"]] == [None]
    assert meta["missing_manifests"] == {}  # a tree has no manifest to miss
    assert meta["systems"] == [] and not [n for n in names if n.startswith("systems/")]
    other = ["--store", str(tmp_path / "other"), "--trust-on-first-use"]
    assert cli.main(["import", str(out), *other]) == 0
    assert len(store.read_table(tmp_path / "other", "jobs")) == len(LOGS)


def test_anonymized_export_of_real_logs(tmp_path, darshan_logs):
    """The jobs of real logs hold numeric uids: an anonymized bundle holds their pseudonyms
    (strings) instead, the same uid the same pseudonym, and imports."""
    store_dir = tree_store(tmp_path, darshan_logs, "local")
    own = store.read_table(store_dir, "jobs")
    out = tmp_path / "anon.tar"
    argv = ["export", "--store", str(store_dir), "--out", str(out), "--site", "s2", "--anonymize"]
    assert cli.main(argv) == 0
    with tarfile.open(out) as tar:
        (member,) = [m for m in tar.getmembers() if m.name.startswith("tables/jobs/")]
        jobs = pq.read_table(io.BytesIO(tar.extractfile(member).read()))
    uids = jobs["uid"].to_pylist()
    assert all(re.fullmatch(r"uid-[0-9a-f]{10}", u) for u in uids)
    assert not {str(u) for u in own["uid"]} & set(uids)
    # equal uids, equal pseudonyms (the logs' uids from the store, by log)
    by_log = dict(zip(jobs["log_sha256"].to_pylist(), uids, strict=True))
    for uid in set(own["uid"]):
        assert len({by_log[s] for s in own.loc[own["uid"] == uid, "log_sha256"]}) == 1
    other = ["--store", str(tmp_path / "other"), "--trust-on-first-use"]
    assert cli.main(["import", str(out), *other]) == 0
    assert sorted(store.read_table(tmp_path / "other", "jobs")["uid"]) == sorted(uids)


def test_anonymized_export_of_a_store_holding_every_kind_of_data(site_a, tmp_path, darshan_logs):
    """A store with a log tree of its own and an imported anonymized bundle (uids as
    pseudonyms beside its own numeric ones): its anonymized export holds its own runs only,
    and imports elsewhere."""
    store_a, out_a = site_a
    mixed = tree_store(tmp_path / "mixed", darshan_logs, "local")
    anon_b = tmp_path / "anon-b.tar"
    other = tree_store(tmp_path / "b", darshan_logs, "local")
    assert (
        cli.main(
            [
                "export",
                "--store",
                str(other),
                "--out",
                str(anon_b),
                "--site",
                "site-b",
                "--anonymize",
            ]
        )
        == 0
    )
    for bundle_path in (out_a, anon_b):
        assert (
            cli.main(["import", str(bundle_path), "--store", str(mixed), "--trust-on-first-use"])
            == 0
        )
    assert cli.main(["jobs", "--store", str(mixed)]) == 0
    out = tmp_path / "mixed-anon.tar"
    argv = ["export", "--store", str(mixed), "--out", str(out), "--site", "site-m", "--anonymize"]
    assert cli.main(argv) == 0
    with tarfile.open(out) as tar:
        meta = json.load(tar.extractfile(bundlecheck.META))
    assert [r["run_id"] for r in meta["runs"]] == list(
        store.read_table(mixed, "runs").query("site.isna()")["run_id"]
    )
    target = ["--store", str(tmp_path / "fourth"), "--trust-on-first-use"]
    assert cli.main(["import", str(out), *target]) == 0
    assert len(store.read_table(tmp_path / "fourth", "jobs")) == len(LOGS)
