"""The store's catalog: the one committed record that names the Parquet file of every part.

A store is a folder of immutable Parquet files, ``STORE/<table>/<file>``, and
``STORE/catalog.json``, which names the live ones. Readers (:func:`iostudy.store.store.connect`) see
the files the catalog names and nothing else. A part has a name (a run id, a log tree's
``<run id>.<NNNNNN>``, an import's name) and a file; putting a part under a name the catalog
holds replaces it. A writer, under the store's lock (:meth:`iostudy.store.store.Store.locked`):

1. writes each new part to a temporary file and flushes it to disk;
2. renames it to a fresh file name that no catalog has named (``<name>@<generation>.parquet``),
   so that a reader of the current catalog never sees it;
3. writes the new catalog to ``catalog.json.tmp``, flushes it, and renames it over
   ``catalog.json``. That rename is the commit: all of its parts, in every table, become
   visible at once; a writer killed before it leaves the store as it was;
4. removes the files of the parts it replaced or dropped.

Recovery (:func:`recover`, at the start of every write): files in the table folders that the
catalog does not name are removed: temporary files and the parts of a commit that did not
happen (rolled back), and replaced parts a killed writer left (step 4 rolled forward). So a
store holds the files its catalog names and nothing else, but while a write is under way. A
reader that loaded the catalog before a commit and reads a replaced file after it gets an
error, never a mixture.

A reader that must see one generation whole however long it reads (an export) takes a
:func:`snapshot`: hard links to the files of the generation it loaded, made under a shared lock
(``STORE/.readers``) that step 4 and recovery take exclusively before they remove a file, so
that no file of that generation goes before it is linked.

A store written before the catalog existed is read as it is, each ``*.parquet`` file a part
named by its stem, and recorded as such by its first write.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from iostudy.core.errors import BadInput
from iostudy.core.processes import private_dir

FILE = "catalog.json"
FORMAT = "iostudy-store-catalog/1"
# A part's name becomes a file name: no separators, no leading dot, nothing a shell quotes.
PART_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:+=-]{0,199}$")
_COMMITTED_NAME = re.compile(r"@\d+\.parquet$")
# STORE/.snapshot-<pid>-<random>/: a reader's snapshot (see snapshot)
SNAPSHOT = ".snapshot-"
READERS = ".readers"  # flock'd: shared while a snapshot links, exclusive while files go


class CatalogError(BadInput):
    """A catalog that cannot be read or a part name that cannot be a file name."""


def check_part_name(name: str) -> str:
    """name, when it can be a part's name (a file name of its own, see PART_NAME)."""
    if not isinstance(name, str) or not PART_NAME.match(name) or ".." in name:
        raise CatalogError(
            f"{name!r} cannot name a part of the store: letters, digits and . _ : + = - only, "
            "starting with a letter or digit, no '..', at most 200 characters"
        )
    return name


@dataclass(frozen=True)
class Part:
    """One committed part of a table: its file (in the table's folder), its run, its rows."""

    file: str
    run_id: str | None
    rows: int | None


@dataclass
class Catalog:
    root: Path
    generation: int = 0
    tables: dict[str, dict[str, Part]] = field(default_factory=dict)

    def parts(self, table: str) -> dict[str, Part]:
        return self.tables.get(table, {})

    def part_path(self, table: str, name: str) -> Path | None:
        part = self.parts(table).get(name)
        return self.root / table / part.file if part else None

    def files(self, table: str, run_id: str | None = None) -> list[Path]:
        """The table's committed files (of one run when run_id is given), by part name."""
        parts = sorted(self.parts(table).items())
        return [
            self.root / table / p.file for _, p in parts if run_id is None or p.run_id == run_id
        ]


def load(root) -> Catalog:
    """The store's committed catalog; a store without one is read from its *.parquet files."""
    root = Path(root)
    path = root / FILE
    try:
        data = json.loads(path.read_text())
    except FileNotFoundError:
        return _legacy(root)
    except (OSError, ValueError) as exc:
        raise CatalogError(f"{path}: cannot read the store's catalog: {exc}") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise CatalogError(f"{path}: not a catalog of format {FORMAT}")
    tables = {
        table: {name: Part(e["file"], e.get("run_id"), e.get("rows")) for name, e in parts.items()}
        for table, parts in data["tables"].items()
    }
    return Catalog(root, int(data["generation"]), tables)


def _legacy(root: Path) -> Catalog:
    """A store of before the catalog: every <table>/*.parquet file is a part named by its stem
    (a run id, or <run id>.<NNNNNN>: see :func:`part_run`)."""
    tables = {}
    if root.is_dir():
        for folder in sorted(p for p in root.iterdir() if p.is_dir() and p.name[0] != "."):
            # <name>@<generation>.parquet: a part of a catalog's time whose commit never came
            files = sorted(
                f for f in folder.glob("*.parquet") if not _COMMITTED_NAME.search(f.name)
            )
            if files:
                tables[folder.name] = {f.stem: Part(f.name, part_run(f.stem), None) for f in files}
    return Catalog(root, 0, tables)


@contextlib.contextmanager
def snapshot(root) -> Iterator[Catalog]:
    """The committed catalog as it is now, as a Catalog whose files stay readable until the
    block ends, whatever commits meanwhile: each is hard-linked (or, where the file system
    refuses a link to another user's file, copied) into a folder of this process, which goes at
    the end."""
    root = Path(root)
    folder = private_dir(SNAPSHOT, root)
    try:
        with readers_lock(root, exclusive=False):
            catalog = load(root)
            for table, parts in catalog.tables.items():
                (folder / table).mkdir(parents=True, exist_ok=True)
                for part in parts.values():
                    _hold(root / table / part.file, folder / table / part.file)
        yield Catalog(folder, catalog.generation, catalog.tables)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


@contextlib.contextmanager
def readers_lock(root: Path, exclusive: bool) -> Iterator[None]:
    """STORE/.readers: held shared by a snapshot while it links, exclusively by whoever removes
    a committed file."""
    fd = os.open(root / READERS, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o660)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if exclusive else fcntl.LOCK_SH)
        yield
    finally:
        os.close(fd)


def _hold(source: Path, target: Path) -> None:
    try:
        os.link(source, target)
    except PermissionError:  # fs.protected_hardlinks: another user's file, not writable by us
        with open(source, "rb") as src, open(target, "xb") as dst:
            shutil.copyfileobj(src, dst)


def part_run(name: str) -> str:
    """The run of a part named <run id> or <run id>.<NNNNNN> (a log tree's parts)."""
    m = re.match(r"^(.*)\.\d{6}$", name)
    return m.group(1) if m else name


def _fsync_path(path: Path, directory=False) -> None:
    fd = os.open(path, os.O_RDONLY | (os.O_DIRECTORY if directory else 0))
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


@dataclass
class Commit:
    """The parts one commit puts in place and drops; :meth:`apply` makes them the catalog."""

    root: Path
    puts: list[tuple[str, str, Path, str | None, int | None]] = field(default_factory=list)
    drops: list[tuple[str, str]] = field(default_factory=list)

    def put(self, table: str, name: str, tmp: Path, run_id: str | None, rows=None):
        """tmp: the part's complete temporary file; it replaces any part of that name."""
        self.puts.append((table, check_part_name(name), Path(tmp), run_id, rows))

    def drop(self, table: str, name: str):
        self.drops.append((table, name))

    def apply(self) -> Catalog:
        """Commit (the caller holds the store's lock): the new catalog, as now committed."""
        old = load(self.root)
        gen = old.generation + 1
        tables = {t: dict(parts) for t, parts in old.tables.items()}
        for table, name in self.drops:
            tables.get(table, {}).pop(name, None)
        folders = set()
        for table, name, tmp, run_id, rows in self.puts:
            _fsync_path(tmp)
            file = f"{name}@{gen}.parquet"
            os.replace(tmp, self.root / table / file)
            folders.add(self.root / table)
            tables.setdefault(table, {})[name] = Part(file, run_id, rows)
        for folder in folders:
            _fsync_path(folder, directory=True)
        new = Catalog(self.root, gen, tables)
        _write(new)
        with readers_lock(self.root, exclusive=True):
            for table, parts in old.tables.items():
                live = {p.file for p in new.parts(table).values()}
                for part in parts.values():
                    if part.file not in live:
                        with contextlib.suppress(FileNotFoundError):
                            os.unlink(self.root / table / part.file)
        return new


def _write(catalog: Catalog) -> None:
    data = {
        "format": FORMAT,
        "generation": catalog.generation,
        "tables": {
            table: {
                name: {"file": p.file, "run_id": p.run_id, "rows": p.rows}
                for name, p in sorted(parts.items())
            }
            for table, parts in sorted(catalog.tables.items())
            if parts
        },
    }
    path = catalog.root / FILE
    tmp = path.with_suffix(".json.tmp")
    with open(tmp, "w") as out:
        json.dump(data, out, indent=1, sort_keys=True)
        out.write("\n")
        out.flush()
        os.fsync(out.fileno())
    os.replace(tmp, path)  # the commit point
    _fsync_path(catalog.root, directory=True)


def recover(root, tables) -> list[Path]:
    """Removes what no committed catalog names from the folders of ``tables`` (the caller holds
    the store's lock): temporary files, parts of an interrupted commit, replaced parts. A store
    without a catalog gets one first, naming its files as they are. Returns what was removed."""
    root = Path(root)
    if not (root / FILE).is_file():
        legacy = _legacy(root)
        if legacy.tables:  # else a new store (or one whose first commit died): no catalog yet
            _write(legacy)
    with contextlib.suppress(FileNotFoundError):
        (root / FILE).with_suffix(".json.tmp").unlink()
    catalog = load(root)
    removed = []
    with readers_lock(root, exclusive=True):
        for table in tables:
            folder = root / table
            if not folder.is_dir():
                continue
            live = {p.file for p in catalog.parts(table).values()}
            for entry in os.scandir(folder):
                if entry.name not in live and entry.is_file(follow_symlinks=False):
                    os.unlink(entry.path)
                    removed.append(Path(entry.path))
    return removed
