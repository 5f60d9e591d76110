"""Publishing a report's version: the folder renamed onto ``v<N>`` without replacing anything
(RENAME_NOREPLACE), MANIFEST.json with the sha256 of every input and file, and the study's
index of versions, rewritten under a lock."""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import json
import math
import os
import re
import tempfile
from pathlib import Path

from iostudy.core import config, provenance
from iostudy.core.deferred import deferred
from iostudy.report import figures
from iostudy.report.sectiondata import ReportOptions
from iostudy.store import catalog
from iostudy.store import store as store_mod

jinja2 = deferred("jinja2")
np = deferred("numpy")
pd = deferred("pandas")

TEMPLATES = config.REPO_ROOT / "reports" / "templates"


VERSION_RE = re.compile(r"^v([1-9][0-9]*)$")


# Python packages whose versions a report records (the ones that shape its numbers and figures).
PACKAGES = ("duckdb", "pyarrow", "pandas", "numpy", "matplotlib", "Jinja2", "darshan")


def shown_path(path: Path) -> str:
    """A path as recorded in a manifest: relative to the working directory when inside it."""
    path = Path(path)
    if path.is_absolute():
        with contextlib.suppress(ValueError):
            return str(path.relative_to(Path.cwd()))
    return str(path)


def is_missing(value) -> bool:
    return value is None or (np.ndim(value) == 0 and bool(pd.isna(value)))


def templates_env() -> jinja2.Environment:
    env = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(TEMPLATES)),
        autoescape=jinja2.select_autoescape(["html", "j2"]),
        undefined=jinja2.StrictUndefined,
        trim_blocks=True,
        lstrip_blocks=True,
    )
    env.filters["num"] = figures.fmt
    return env


def versions(study_dir: Path) -> list[int]:
    """The published version numbers of a study, ascending."""
    return [n for n in taken_versions(study_dir) if (study_dir / f"v{n}").is_dir()]


def taken_versions(study_dir: Path) -> list[int]:
    """Every number whose name v<N> is in the study folder, whatever it is (a folder, a file,
    a dangling symlink): a new version takes none of them."""
    if not study_dir.is_dir():
        return []
    found = (VERSION_RE.match(p.name) for p in study_dir.iterdir())
    return sorted(int(m.group(1)) for m in found if m)


_RENAME_NOREPLACE = 1


_AT_FDCWD = -100


def rename_noreplace(src: Path, dst: Path) -> None:
    """Rename src onto dst, which must not exist (FileExistsError if it does), atomically.

    os.rename would silently replace an empty directory, so use renameat2(RENAME_NOREPLACE);
    where the kernel or file system lacks it, claim dst with mkdir (exclusive) and rename onto
    the empty claim."""
    libc = ctypes.CDLL(None, use_errno=True)
    renameat2 = getattr(libc, "renameat2", None)
    if renameat2 is not None:
        renameat2.argtypes = [
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_int,
            ctypes.c_char_p,
            ctypes.c_uint,
        ]
        if (
            renameat2(_AT_FDCWD, os.fsencode(src), _AT_FDCWD, os.fsencode(dst), _RENAME_NOREPLACE)
            == 0
        ):
            return
        err = ctypes.get_errno()
        if err == errno.EEXIST:
            raise FileExistsError(err, os.strerror(err), str(dst))
        if err not in (errno.ENOSYS, errno.EINVAL, errno.EOPNOTSUPP):
            raise OSError(err, os.strerror(err), str(dst))
    os.mkdir(dst)
    os.rename(src, dst)


def _parts(committed: catalog.Catalog, table: str):
    """(file, Part) of each committed part of the table."""
    return [
        (committed.part_path(table, name), part)
        for name, part in sorted(committed.parts(table).items())
    ]


def build_manifest(
    runs,
    all_run_ids,
    store: Path,
    study,
    version,
    title,
    now,
    rendered,
    out: Path,
    argv,
    options: ReportOptions | None = None,
):
    """A version's MANIFEST.json content: what it was made of (the store's parts and the runs'
    manifests, with sha256), how (git, tools, command line, options), its verdict and what it
    holds (``rendered``: iostudy.report.report.Rendered)."""
    options = options or ReportOptions()
    commit, dirty = provenance.git_state()
    return {
        "report": {
            "study": study,
            "version": version,
            "title": title,
            "created": now.isoformat(timespec="seconds").replace("+00:00", "Z"),
            "command_line": argv,
            "large_jobs": {"min_procs": options.large_procs, "min_mib": options.large_mib},
            "before_after": [list(pair) for pair in options.pairs],
            # Which key made the pseudonyms (an HMAC of a constant: the key stays secret).
            "anonymized": {"key_id": options.anonymizer.key_id()} if options.anonymizer else None,
            "kind": rendered.kind,  # of study: its layout (iostudy.report.layout)
            **rendered.verdict.as_dict(),
        },
        "git": {
            "commit": commit,
            "dirty": dirty,
        },
        "tool_versions": provenance.package_versions({p.lower(): p for p in PACKAGES}),
        "store": shown_path(Path(store)),
        "inputs": _store_inputs(store, {r["run_id"] for r in runs}, all_run_ids)
        + [_manifest_input(run) for run in runs],
        "runs": [_run_entry(run) for run in runs],
        "contents": [
            {
                "id": s["id"],
                "kind": s["kind"],
                "caption": s["caption"],
                "csv": s["csv"],
                "provenance": s["provenance"],
            }
            for s in rendered.items
        ],
        "files": [_file_entry(p, p.name) for p in sorted(out.iterdir()) if p.is_file()],
    }


def _file_entry(path: Path, shown: str) -> dict:
    return {"path": shown, "sha256": provenance.sha256_file(path), "bytes": path.stat().st_size}


def _store_inputs(store: Path, ids: set, all_run_ids) -> list[dict]:
    """The store's committed files of the study's runs, and those that belong to no known run
    (Slurm accounting, the collectors); the other studies' runs have no part in this report."""
    committed = catalog.load(store)
    found = sorted(
        (p, part.run_id)
        for table in sorted(committed.tables)
        for p, part in _parts(committed, table)
    )
    return [
        {"kind": "store-parquet", **_file_entry(path, shown_path(path))}
        for path, run in found
        if run in ids or run not in all_run_ids
    ]


def _manifest_input(run: dict) -> dict:
    """A run's manifest as an input (a log tree has none: its logs are inputs by their sha256
    in the store's parts); a campaign run's missing manifest is said so."""
    path = run["_manifest_file"]
    entry = {
        "kind": "log-tree" if store_mod.is_tree(run) else "run-manifest",
        "run_id": run["run_id"],
        "path": shown_path(path) if path else None,
    }
    if run["_manifest"] is not None:
        entry |= {"sha256": provenance.sha256_file(path), "bytes": path.stat().st_size}
    elif not store_mod.is_tree(run):
        entry["missing"] = True
    return entry


def _run_entry(run: dict) -> dict:
    m = run["_manifest"] or {}
    return {
        "run_id": run["run_id"],
        "campaign": run.get("campaign"),
        "system": run.get("system"),
        "started": str(run.get("started")),
        "finished": str(run.get("finished")),
        "status": run.get("status"),
        "git_commit": m.get("git_commit") or run.get("git_commit"),
        "git_dirty": m.get("git_dirty"),
        "tool_versions": m.get("tool_versions"),
        "command_line": m.get("command_line"),
        "spack_build": m.get("spack_build"),
        "effective_config": m.get("effective_config"),
    }


def _strict_json(value):
    """value with NaN, NaT and infinities as None: MANIFEST.json is strict JSON, which any
    reader parses (NaN is not JSON)."""
    if isinstance(value, dict):
        return {k: _strict_json(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_strict_json(v) for v in value]
    if isinstance(value, str | bool | int) or value is None:
        return value
    if is_missing(value) or (isinstance(value, float) and math.isinf(value)):
        return None
    return value


def manifest_text(manifest: dict) -> str:
    return json.dumps(_strict_json(manifest), indent=2, default=str, allow_nan=False) + "\n"


@contextlib.contextmanager
def _locked(study_dir: Path):
    """The study folder's lock: of two builds finishing together, the second writes an index
    that has both versions."""
    fd = os.open(study_dir, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _text(value, default: str) -> str:
    return value if isinstance(value, str) and value else default


def _index_entry(n: int, m) -> dict:
    """The index's line of version n from its MANIFEST.json, whatever that holds (a version
    of an older iostudy, a damaged file: what cannot be read is left blank)."""
    m = m if isinstance(m, dict) else {}
    report = m.get("report") if isinstance(m.get("report"), dict) else {}
    git = m.get("git") if isinstance(m.get("git"), dict) else {}
    runs = m.get("runs") if isinstance(m.get("runs"), list) else []
    runs = [r for r in runs if isinstance(r, dict)]
    return {
        "version": n,
        "href": f"v{n}/index.html",
        "title": _text(report.get("title"), ""),
        "created": _text(report.get("created"), "?"),
        "runs": len(runs),
        "systems": ", ".join(sorted({_text(r.get("system"), "?") for r in runs})),
        "last_run": max((_text(r.get("run_id"), "") for r in runs), default=""),
        "commit": _text(git.get("commit"), "")[:12],
        # a version of before verdicts has none
        "verdict": _text(report.get("verdict"), ""),
        "reasons": [r for r in report.get("reasons") or [] if isinstance(r, str)][:3],
    }


def _read_json(path: Path):
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return None


def _index_file(study_dir: Path, study: str, new: dict | None = None) -> Path:
    """A temporary file beside the versions holding the index (REPORTS/<study>/index.html) of
    every published version, newest first, and of new ({number: manifest}: a version about to
    be published)."""
    manifests = {n: _read_json(study_dir / f"v{n}" / "MANIFEST.json") for n in versions(study_dir)}
    manifests |= new or {}
    entries = [_index_entry(n, manifests[n]) for n in sorted(manifests, reverse=True)]
    html = (
        templates_env()
        .get_template("versions.html.j2")
        .render(study=study, entries=entries, style=(TEMPLATES / "style.css").read_text())
    )
    fd, tmp = tempfile.mkstemp(dir=study_dir, prefix=".index-", suffix=".html")
    with os.fdopen(fd, "w") as fh:
        fh.write(html)
    os.chmod(tmp, 0o644)
    return Path(tmp)


def publish(tmp: Path, study_dir: Path, study: str, n: int, manifest: dict) -> None:
    """Renames the complete version tmp onto v<n> (FileExistsError if taken) and puts the index
    listing it in place. The index is made first: once the version appears, nothing is left
    that could fail and leave it unlisted."""
    with _locked(study_dir):
        index = _index_file(study_dir, study, {n: manifest})
        try:
            rename_noreplace(tmp, study_dir / f"v{n}")
        except BaseException:
            index.unlink()
            raise
        os.replace(index, study_dir / "index.html")
