"""Hostile bundles: every one is refused with exit status 2 and a message naming the member or
field, before anything is written: the folder that holds the store (and the store, when it
exists) is the same before and after, down to every file's size and time.

Each bundle is made from a real one (reportdata's study exported by site-a) with one thing
changed, its SHA256SUMS recomputed and signed again by site-a's own key (so that the check
under test, not the checksum or the signature, is what must refuse it), unless the test is about
the signature."""

from __future__ import annotations

import base64
import hashlib
import io
import json
import tarfile
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from iostudy.cli import cli
from iostudy.store import bundlecheck, siteid, store

from .test_bundle import make_site, trust


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    """(site-a's store, its bundle)."""
    return make_site(tmp_path_factory.mktemp("hostile-site"), "site-a")


def members(path: Path) -> dict[str, bytes]:
    with tarfile.open(path) as tar:
        return {m.name: tar.extractfile(m).read() for m in tar.getmembers()}


def write_bundle(out: Path, content: dict[str, bytes], key=None, site="site-a") -> Path:
    """A plain tar of ``content`` (SHA256SUMS and SIGNATURE made anew unless given, signed by
    ``key``), laid out as export writes it."""
    content = dict(content)
    if key is not None:
        closing = (bundlecheck.SUMS, bundlecheck.SIGNATURE)
        body = {n: d for n, d in content.items() if n not in closing}
        sums = "".join(f"{hashlib.sha256(d).hexdigest()}  {n}\n" for n, d in sorted(body.items()))
        content[bundlecheck.SUMS] = sums.encode()
        raw = siteid.raw_public(key.public_key())
        content[bundlecheck.SIGNATURE] = json.dumps(
            {
                "site": site,
                "key": base64.b64encode(raw).decode(),
                "signature": base64.b64encode(key.sign(sums.encode())).decode(),
            }
        ).encode()
    with tarfile.open(out, "w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in content.items():
            info = tarfile.TarInfo(name)
            info.size, info.mode, info.mtime = len(data), 0o644, 0
            tar.addfile(info, io.BytesIO(data))
    return out


def site_key(store_dir: Path):
    return siteid.own_key(store_dir, create=False)


def changed(site, tmp_path, change, key=None) -> Path:
    """site-a's bundle with change(content) applied, re-summed and signed by key (default:
    site-a's own)."""
    store_dir, out = site
    content = members(out)
    change(content)
    return write_bundle(tmp_path / "hostile.tar", content, key or site_key(store_dir))


def state(folder: Path) -> dict:
    """Every path under folder, files with size and mtime, folders too."""
    return {
        p.relative_to(folder).as_posix(): (
            p.is_dir(),
            p.lstat().st_size if p.is_file() else 0,
            p.lstat().st_mtime_ns,
        )
        for p in sorted(folder.rglob("*"))
    }


def refused(bundle_path: Path, target: Path, capsys, *extra) -> str:
    """Imports into target (beside the bundle, in its own folder): exit 2, nothing changed in
    the folder holding the target; returns the error message."""
    before = state(target.parent)
    capsys.readouterr()
    status = cli.main(["import", str(bundle_path), "--store", str(target), *extra])
    err = capsys.readouterr().err
    assert status == 2, err
    assert "Traceback" not in err and err.startswith("iostudy: error: "), err
    assert state(target.parent) == before
    return err


def meta_of(content: dict) -> dict:
    return json.loads(content[bundlecheck.META])


def set_meta(content: dict, meta: dict) -> None:
    content[bundlecheck.META] = json.dumps(meta).encode()


def first_table(content: dict, table: str) -> str:
    return next(n for n in content if n.startswith(f"tables/{table}/"))


def with_meta(field, value):
    def change(content):
        meta = meta_of(content)
        meta[field] = value
        set_meta(content, meta)

    return change


def with_table_names(table, names):
    def change(content):
        meta = meta_of(content)
        meta["tables"][table] = names
        set_meta(content, meta)

    return change


def with_rows(table, edit):
    """Changes a table file's rows (edit: pa.Table -> pa.Table)."""

    def change(content):
        name = first_table(content, table)
        data = edit(pq.read_table(io.BytesIO(content[name])))
        sink = io.BytesIO()
        pq.write_table(data, sink)
        content[name] = sink.getvalue()

    return change


def _retyped(data: pa.Table) -> pa.Table:
    i = data.schema.get_field_index("value")
    return data.set_column(i, "value", pa.array([str(v) for v in data["value"].to_pylist()]))


def _negative_value(data: pa.Table) -> pa.Table:
    i = data.schema.get_field_index("value")
    values = data["value"].to_pylist()
    return data.set_column(i, "value", pa.array([float("inf")] + values[1:], pa.float64()))


def _foreign_run(data: pa.Table) -> pa.Table:
    i = data.schema.get_field_index("run_id")
    ids = data["run_id"].to_pylist()
    return data.set_column(i, "run_id", pa.array(["someone-else"] + ids[1:], pa.string()))


def _extra_column(data: pa.Table) -> pa.Table:
    return data.append_column("payload", pa.array(["x"] * data.num_rows))


def _move_listed(content):
    """A listed table file that the bundle does not hold."""
    del content[first_table(content, "perf")]


def _clash(content):
    content["tables/perf"] = b"a file where a folder of table files goes"


def _stray_member(content):
    content["run.sh"] = b"#!/bin/sh\n"


def _unlisted_manifest(content):
    content["manifests/nobody.json"] = b"{}"


CASES = {
    # bundle.json: names that would become paths
    "traversal in a table file name": (
        with_table_names("jobs", ["x/../../../P.parquet"]),
        "bundle.json.tables.jobs[0]",
    ),
    "absolute table file name": (
        with_table_names("perf", ["/etc/passwd.parquet"]),
        "bundle.json.tables.perf[0]",
    ),
    "dot-dot part name": (with_table_names("perf", ["..parquet"]), "part '.'"),
    # bundle.json: fields of the wrong type or absent
    "tables is a list": (with_meta("tables", ["perf"]), "bundle.json.tables"),
    "tables absent": (
        lambda c: set_meta(c, {k: v for k, v in meta_of(c).items() if k != "tables"}),
        "'tables' is a required",
    ),
    "unknown table": (with_table_names("secrets", []), "bundle.json.tables"),
    "run id with a slash": (with_meta("runs", [{"run_id": "a/b"}]), "bundle.json.runs[0].run_id"),
    "site not a site name": (with_meta("site", "Site A!"), "bundle.json.site"),
    "unknown field": (with_meta("extra", 1), "bundle.json"),
    # members
    "listed file missing": (_move_listed, "which the bundle does not hold"),
    "file where a folder goes": (_clash, "member 'tables/perf'"),
    "member of no known kind": (_stray_member, "member 'run.sh'"),
    "manifest of no listed run": (_unlisted_manifest, "manifests/nobody.json"),
    # tables
    "column of the wrong type": (with_rows("perf", _retyped), "column value is string"),
    "column the store does not have": (with_rows("perf", _extra_column), "column 'payload'"),
    "value out of bounds": (with_rows("perf", _negative_value), "value = inf in row 0"),
    "rows of another run": (with_rows("perf", _foreign_run), "rows of run 'someone-else'"),
}


@pytest.mark.parametrize("case", CASES)
def test_a_hostile_bundle_is_refused_before_anything_is_written(site, tmp_path, capsys, case):
    change, named = CASES[case]
    hostile = changed(site, tmp_path, change)
    target = tmp_path / "stores" / "third"
    target.parent.mkdir()
    err = refused(hostile, target, capsys, "--trust-on-first-use")
    assert "hostile.tar" in err and named in err, err
    assert not target.exists()


def test_a_bad_bundle_changes_nothing_in_a_store_that_holds_imports(site, tmp_path, capsys):
    store_dir, out = site
    target = tmp_path / "stores" / "third"
    trust(target, store_dir, "site-a")
    assert cli.main(["import", str(out), "--store", str(target)]) == 0
    hostile = changed(site, tmp_path, with_rows("perf", _retyped))
    refused(hostile, target, capsys)
    assert len(store.read_table(target, "perf")) == len(store.read_table(store_dir, "perf"))


def test_an_unknown_site_needs_trust(site, tmp_path, capsys):
    store_dir, out = site
    target = tmp_path / "stores" / "third"
    target.parent.mkdir()
    err = refused(out, target, capsys)
    fp = siteid.fingerprint(siteid.raw_public(site_key(store_dir).public_key()))
    assert "site site-a is not trusted" in err and fp in err and "trust add site-a" in err
    # on first use, the key is recorded and shown
    assert cli.main(["import", str(out), "--store", str(target), "--trust-on-first-use"]) == 0
    assert fp in capsys.readouterr().out
    assert siteid.trusted(target, "site-a") == siteid.raw_public(site_key(store_dir).public_key())


def test_a_bundle_signed_by_another_key_is_refused(site, tmp_path, capsys):
    store_dir, out = site
    target = tmp_path / "stores" / "third"
    trust(target, store_dir, "site-a")
    # site-a's bundle, whole, signed again by someone else's key claiming to be site-a
    resigned = changed(site, tmp_path, lambda c: None, Ed25519PrivateKey.generate())
    err = refused(resigned, target, capsys)
    assert "site site-a is trusted with key" in err and "refused" in err
    # --trust-on-first-use does not override a known key
    refused(resigned, target, capsys, "--trust-on-first-use")


def test_a_signature_over_other_sums_is_refused(site, tmp_path, capsys):
    store_dir, out = site
    content = members(out)
    name = first_table(content, "perf")
    content[name] = content[name][:-1] + bytes([content[name][-1] ^ 1])
    # the SUMS made anew for the changed table, the original SIGNATURE kept: it signs old SUMS
    sums = "".join(
        f"{hashlib.sha256(d).hexdigest()}  {n}\n"
        for n, d in sorted(content.items())
        if n not in (bundlecheck.SUMS, bundlecheck.SIGNATURE)
    ).encode()
    content[bundlecheck.SUMS] = sums
    hostile = write_bundle(tmp_path / "hostile.tar", content)
    target = tmp_path / "stores" / "third"
    trust(target, store_dir, "site-a")
    err = refused(hostile, target, capsys)
    assert "SIGNATURE: the signature of SHA256SUMS does not verify" in err


def test_an_unsigned_bundle_is_refused(site, tmp_path, capsys):
    _, out = site
    content = members(out)
    del content[bundlecheck.SIGNATURE]
    unsigned = write_bundle(tmp_path / "unsigned.tar", content)
    target = tmp_path / "stores" / "third"
    target.parent.mkdir()
    assert "no SIGNATURE: an unsigned bundle" in refused(
        unsigned, target, capsys, "--trust-on-first-use"
    )


def test_replacing_a_sites_data_needs_replace(site, tmp_path, capsys):
    """A later bundle of the site whose perf part differs from the one imported: refused, with
    what would change, unless --replace; then the new rows are those of the store."""
    store_dir, out = site
    target = tmp_path / "stores" / "third"
    trust(target, store_dir, "site-a")
    assert cli.main(["import", str(out), "--store", str(target)]) == 0
    before = len(store.read_table(target, "perf"))
    later = changed(site, tmp_path, with_rows("perf", lambda d: d.slice(0, 1)))
    err = refused(later, target, capsys)
    assert "would replace data of site site-a" in err and "rows -> 1" in err and "--replace" in err
    assert cli.main(["import", str(later), "--store", str(target), "--replace"]) == 0
    assert "import: replacing perf/site-a:" in capsys.readouterr().err
    after = len(store.read_table(target, "perf"))
    assert after < before


def _bundle_id(path: Path) -> str:
    return hashlib.sha256(members(path)[bundlecheck.SUMS]).hexdigest()


def _perf_cut_sorting_before(site, tmp_path: Path, bundle_id: str) -> Path:
    """A bundle of site-a with its perf part cut to its first rows, whose id sorts before
    bundle_id (the file-name order this test must not depend on)."""
    for rows in range(1, 64):
        folder = tmp_path / f"cut{rows}"
        folder.mkdir()
        bundle = changed(site, folder, with_rows("perf", lambda d, n=rows: d.slice(0, n)))
        if _bundle_id(bundle) < bundle_id:
            return bundle
    raise AssertionError("no cut of perf gave a bundle id sorting first")


def test_a_later_bundle_of_the_earlier_data_needs_replace_too(site, tmp_path, capsys):
    """Import A, then B with --replace (B's perf part differs), then A' (A's data re-exported
    with a new id): A' would bring A's rows back, so it needs --replace. Import records were
    merged in file-name order (their names are bundle ids): where A's id sorted after B's, A's
    digest looked like the latest and A' went in silently."""
    store_dir, first = site
    later = _perf_cut_sorting_before(site, tmp_path, _bundle_id(first))
    again = changed(site, tmp_path, with_meta("created", "2030-01-01T00:00:00+00:00"))
    assert _bundle_id(again) != _bundle_id(first)
    target = tmp_path / "stores" / "third"
    trust(target, store_dir, "site-a")
    assert cli.main(["import", str(first), "--store", str(target)]) == 0
    assert cli.main(["import", str(later), "--store", str(target), "--replace"]) == 0
    rows = len(store.read_table(target, "perf"))
    err = refused(again, target, capsys)
    assert "would replace data of site site-a" in err and "--replace" in err
    assert len(store.read_table(target, "perf")) == rows


def test_a_store_cannot_take_the_name_of_a_site_it_imported(site, tmp_path, capsys):
    store_dir, out = site
    target = tmp_path / "stores" / "third"
    trust(target, store_dir, "site-a")
    assert cli.main(["import", str(out), "--store", str(target)]) == 0
    capsys.readouterr()
    status = cli.main(
        ["export", "--store", str(target), "--out", str(tmp_path / "x.tar"), "--site", "site-a"]
    )
    assert status == 2 and "another site of that name" in capsys.readouterr().err
    assert not (target / siteid.SITE_FILE).exists()


def test_the_private_key_stays_home(site):
    store_dir, out = site
    key = (store_dir / siteid.KEY_FILE).read_bytes()
    assert (store_dir / siteid.KEY_FILE).stat().st_mode & 0o077 == 0
    assert all(key not in data for data in members(out).values())
