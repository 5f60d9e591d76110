"""What a storage benchmark's time measures: the storage, or possibly memory.

A write the page cache absorbs returns at memory speed, and a read of pages still cached never
reaches the storage: on a machine whose RAM holds the benchmark's data (the local system's
24000 MiB against the quick campaign's 256 MiB) such a run reports memory as storage. The IOR
and I/O-model checks therefore take a ``sync`` parameter (:data:`SYNC_MODES`):

- ``direct``: O_DIRECT (IOR's -B, iomodel's --sync direct): no page cache at all;
- ``fsync``: the data reaches the storage inside the timed phase (IOR's -e, iomodel's
  --sync fsync), and the read phase reads after the cached pages are dropped;
- ``none``: nothing forces the data out (iomodel only; IOR always fsyncs);
- ``auto``: ``direct`` where the file system takes O_DIRECT and the transfers are aligned,
  else ``fsync``. On a memory file system (tmpfs, whether or not its kernel accepts O_DIRECT)
  ``fsync``: there is no storage to reach.

Each result then carries a ``measures`` label (:func:`measures`): "storage (O_DIRECT)",
"storage (fsync)", "memory (tmpfs)", or for ``none`` the size against the node's RAM ("page
cache possible: 256 MiB per node < RAM 23.4 GiB"). The checks put it in their logs' tags and
their ReFrame variables, from which the store's perf and iomodel tables (their ``measures``
column) and jobs' tags have it. Its leading words are its :func:`kind` (:data:`KINDS`): what
tells a value of memory from one of storage, whatever the RAM the label names.

The file system is probed where ReFrame runs (the local machine; on a cluster the login node,
which sees the nodes' shared file systems): a node-local folder of another kind is not seen.
"""

from __future__ import annotations

import contextlib
import mmap
import os
import tempfile
from pathlib import Path

from iostudy.core import numfmt

SYNC_MODES = ("auto", "direct", "fsync", "none")
#: file systems whose files live in memory: O_DIRECT or fsync there still measures memory
MEMORY_FILESYSTEMS = frozenset({"tmpfs", "ramfs"})
#: O_DIRECT's alignment of buffers, offsets and lengths (as iomodel.c's DIRECT_ALIGN)
DIRECT_ALIGN = 4096
MOUNTS = Path("/proc/self/mounts")
#: what a label says was measured, its leading words (:func:`kind`)
STORAGE, MEMORY, PAGE_CACHE = "storage", "memory", "page cache possible"
KINDS = (STORAGE, MEMORY, PAGE_CACHE)
#: the kind of a label that starts with none of KINDS (another iostudy's, a hand-made one)
UNKNOWN = "unknown"


def _existing(folder: Path) -> Path:
    """folder, or its nearest ancestor that exists (a job's folder is made when it runs)."""
    folder = Path(folder).absolute()
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    return folder.resolve()


def _unescape(field: str) -> str:
    r"""A path of /proc/self/mounts: space, tab, newline and backslash are octal (\040)."""
    for code, char in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        field = field.replace(code, char)
    return field


def filesystem_type(folder: Path, mounts: Path = MOUNTS) -> str:
    """The type of the file system that holds folder (its nearest existing ancestor): that of
    the longest mount point above it; "" when the mount table cannot be read."""
    path = _existing(folder)
    best, kind = None, ""
    with contextlib.suppress(OSError):
        for line in mounts.read_text().splitlines():
            fields = line.split()
            if len(fields) < 3:
                continue
            point = Path(_unescape(fields[1]))
            if (path == point or point in path.parents) and (
                best is None or len(point.parts) >= len(best.parts)
            ):
                best, kind = point, fields[2]
    return kind


def direct_io_works(folder: Path) -> bool:
    """Whether an aligned O_DIRECT write of one block succeeds in folder (its nearest existing
    ancestor): a file system may refuse the open (EINVAL) or only the write."""
    flag = getattr(os, "O_DIRECT", 0)
    if not flag:
        return False
    try:
        with tempfile.TemporaryDirectory(dir=_existing(folder), prefix=".direct-probe-") as tmp:
            fd = os.open(Path(tmp) / "probe", os.O_CREAT | os.O_WRONLY | flag, 0o600)
            try:
                with mmap.mmap(-1, DIRECT_ALIGN) as block:  # page-aligned memory
                    return os.write(fd, block) == DIRECT_ALIGN
            finally:
                os.close(fd)
    except OSError:
        return False


def resolve_sync(requested: str, folder: Path, aligned: bool = True) -> str:
    """The mode a run uses for the sync parameter ``requested`` in folder: ``auto`` becomes
    ``direct`` where O_DIRECT works there, the transfers are ``aligned`` and the file system is
    not memory, else ``fsync``. ValueError: ``direct`` asked where it cannot work."""
    if requested not in SYNC_MODES:
        raise ValueError(f"sync {requested!r}: not one of {', '.join(SYNC_MODES)}")
    if requested not in ("auto", "direct"):
        return requested
    works = aligned and direct_io_works(folder)
    if requested == "direct" and not works:
        why = "the transfers are not aligned to 4 KiB" if not aligned else "O_DIRECT is refused"
        raise ValueError(f"sync direct in {_existing(folder)}: {why} (sync auto falls back)")
    memory = filesystem_type(folder) in MEMORY_FILESYSTEMS
    return "direct" if works and (requested == "direct" or not memory) else "fsync"


def measures(sync: str, folder: Path, bytes_per_node: int, memory_mib: int | None) -> str:
    """What a run in folder with sync mode ``sync`` (resolved) measures, as a label."""
    fstype = filesystem_type(folder)
    if fstype in MEMORY_FILESYSTEMS:
        return f"{MEMORY} ({fstype})"
    if sync == "direct":
        return f"{STORAGE} (O_DIRECT)"
    if sync == "fsync":
        return f"{STORAGE} (fsync)"
    size = f"{numfmt.binary_bytes(bytes_per_node)} per node"
    if not memory_mib:
        return f"{PAGE_CACHE}: {size}, RAM unknown"
    ram = numfmt.binary_bytes(memory_mib * 2**20)
    if bytes_per_node > memory_mib * 2**20:
        return f"{STORAGE}: {size} > RAM {ram}"
    return f"{PAGE_CACHE}: {size} < RAM {ram}"


def kind(label) -> str | None:
    """What a ``measures`` label says was measured, without the sizes it names: one of
    :data:`KINDS` (its leading words), :data:`UNKNOWN` for other text, None when there is no
    label (a check that does not say, a run before the label)."""
    if not isinstance(label, str) or not label.strip():
        return None
    text = label.strip().lower()
    found = [k for k in KINDS if text == k or text.startswith((f"{k} ", f"{k}:", f"{k}("))]
    return found[0] if found else UNKNOWN


def node_memory_mib(system: dict) -> int | None:
    """A system description's memory per node (MiB), None when it does not say."""
    return (system.get("nodes") or {}).get("memory_mib")
