"""Sites for the cross-site tests: a store exported as a named site's bundle, and the key
exchange that lets another store import it."""

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from iostudy.cli import cli
from iostudy.core.provenance import sha256_file

from . import reportdata


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


def trust(target: Path, site_store: Path, site: str) -> None:
    """The key exchange: the site prints its public key (`trust own`), the target store adds
    it (`trust add`)."""
    key = target.parent / f"{site}-{target.name}.pub"
    key.parent.mkdir(parents=True, exist_ok=True)
    assert cli.main(["trust", "own", "--store", str(site_store), "--out", str(key)]) == 0
    assert cli.main(["trust", "add", site, str(key), "--store", str(target)]) == 0
