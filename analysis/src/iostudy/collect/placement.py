"""Where a file lives: the storage target of the system description that holds it, the
counterpart of a Lustre OST index. On GlusterFS the client answers the extended attribute
``trusted.glusterfs.pathinfo`` of a file with the brick(s) that hold it::

    (<DISTRIBUTE:iostudy-dht> <POSIX(/srv/b2):n2:/srv/b2/dir/f>)

a node and a brick path per copy (one on a distributed volume). A target of the system's
storage names its ``brick`` (and ``node``): that is the target the file is on.

Placing a file on a target is choosing its name (a distributed volume hashes the name), which
the benchmarks do in the job (reframe-checks/src/common/gluster.h); this module reads and maps
what pathinfo says, for checks and tests, and names the bricks the checks hand the benchmarks
(scratch_bricks). No getfattr: os.getxattr reads the attribute.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from iostudy.core import config

PATHINFO = "trusted.glusterfs.pathinfo"

#: one copy of the file: <POSIX(BRICK):NODE:BRICK/PATH>
_POSIX = re.compile(r"<POSIX\(([^)]+)\):([^:<>]+):")


def parse_pathinfo(text: str) -> list[tuple[str, str]]:
    """(node, brick path) of each copy pathinfo names, in its order; ValueError when it names
    none (not a GlusterFS answer)."""
    found = [(node, brick) for brick, node in _POSIX.findall(text)]
    if not found:
        raise ValueError(f"no brick in {PATHINFO} {text!r}")
    return found


def pathinfo(path: str | Path) -> str:
    """The file's pathinfo text; OSError when there is none (ENODATA or ENOTSUP: not on
    GlusterFS)."""
    return os.getxattr(path, PATHINFO).rstrip(b"\0").decode()


def bricks(system: dict, run_dir: Path = Path(".")) -> dict[str, dict]:
    """The system's targets that serve a brick, by the brick's absolute path (its $NAME
    resolved from the environment, relative paths from run_dir)."""
    return {
        str(config.storage_path(t["brick"], run_dir)): t
        for t in config.storage_targets(system)
        if t.get("brick")
    }


def scratch_bricks(system: dict, scratch_dir) -> list[tuple[str, str]]:
    """(target name, brick path) of each target of the system's scratch storage when it is a
    GlusterFS volume and a check writes to it (scratch_dir is its path), in the system's order;
    empty otherwise. The benchmarks then name writer r's file onto brick r mod K (--brick), so
    that each target is measured from its own writers: a distributed volume would otherwise put
    a file wherever its name hashes to."""
    entry = config.scratch_storage(system)
    if entry.get("fs_type") != "glusterfs" or not scratch_dir:
        return []
    if Path(scratch_dir) != config.storage_path(entry["path"], Path(".")):
        return []
    return [(t["name"], path) for path, t in bricks({"storage": [entry]}).items()]


def target_named(system: dict, text: str, run_dir: Path = Path(".")) -> str:
    """The name of the target holding the first copy pathinfo text names; ValueError when no
    target of the system serves that brick from that node."""
    node, brick = parse_pathinfo(text)[0]
    target = bricks(system, run_dir).get(brick)
    if target is None or target.get("node", node) != node:
        raise ValueError(f"{node}:{brick} is no brick of system {system.get('name')!r}")
    return target["name"]


def target_of(system: dict, path: str | Path, run_dir: Path = Path(".")) -> str:
    """The name of the system's storage target that holds the file at path (read on a node
    that mounts the volume)."""
    return target_named(system, pathinfo(path), run_dir)
