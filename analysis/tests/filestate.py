"""What a command that must change nothing could change: every file under a folder."""

from __future__ import annotations

from pathlib import Path

from iostudy.store import catalog


def snapshot(root: Path, ignore=()) -> dict[str, tuple[int, int]]:
    """{path under root: (size, mtime in ns)} of every file, but those named in ``ignore``."""
    return {
        p.relative_to(root).as_posix(): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in sorted(Path(root).rglob("*"))
        if p.is_file() and p.name not in ignore
    }


def part(store: Path, table: str, name: str) -> Path | None:
    """The committed file of a store's part (iostudy.store.catalog), or None."""
    return catalog.load(store).part_path(table, name)


def parts(store: Path, table: str) -> list[str]:
    """The names of a table's committed parts."""
    return sorted(catalog.load(store).parts(table))
