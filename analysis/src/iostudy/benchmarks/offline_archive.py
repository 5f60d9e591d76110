"""The offline archive of `iostudy offline pack|unpack`: its layout, its manifest, its checks.

An archive is one tar file holding one folder, LAYOUT's entries in it:
  spack/            Spack at the pinned tag (spack-env/pins.yaml)
  spack-packages/   the recipe repository at the pinned release
  wheels/           clingo, analysis/requirements.lock and their build requirements
  mirror/           a Spack source mirror of exactly the locked specs (iostudy's own included)
  iostudy.bundle    the checkout's branch as a git bundle (every locked commit in it)
  MANIFEST.json     what it is (system, pins, Python, lock checksum) and every file's sha256
The manifest is checked before anything of the archive is used: a file that differs, is missing
or is not listed is named and nothing is installed.
"""

import json
import os
import tarfile
from pathlib import Path

from iostudy.core import provenance

ARCHIVE_FORMAT = 1
TOP = "iostudy-offline"
MANIFEST = "MANIFEST.json"
LAYOUT = ("spack", "spack-packages", "wheels", "mirror", "iostudy.bundle")
# An archive unpacks to ~300 MB in ~23,000 entries; far more is not an archive of ours.
MAX_MEMBERS = 400_000
MAX_BYTES = 16 << 30


class OfflineError(Exception):
    """A step of pack/unpack failed; the message names the step or the file."""


class BadArchive(OfflineError):
    """The archive is not one pack made, or was changed since: nothing of it is used."""


def tree_files(root: Path) -> dict[str, str]:
    """{path relative to root: "sha256:<hex>" or "link:<target>"} of every file and symbolic
    link under root (folders are implied by their files)."""
    entries = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                entries[relative] = f"link:{os.readlink(path)}"
            else:
                entries[relative] = f"sha256:{provenance.sha256_file(path)}"
    return entries


def write_manifest(root: Path, facts: dict) -> Path:
    files = {
        name: digest
        for name, digest in tree_files(root).items()
        if name != MANIFEST and name.split("/")[0] in LAYOUT
    }
    path = root / MANIFEST
    path.write_text(json.dumps({"format": ARCHIVE_FORMAT, **facts, "files": files}, indent=1))
    return path


def read_manifest(root: Path) -> dict:
    path = root / MANIFEST
    try:
        manifest = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise BadArchive(f"{path}: not an offline archive's manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise BadArchive(
            f"{path}: format {manifest.get('format') if isinstance(manifest, dict) else None!r}"
            f", this iostudy reads format {ARCHIVE_FORMAT}"
        )
    if not isinstance(manifest.get("files"), dict):
        raise BadArchive(f"{path}: no 'files' list")
    return manifest


def verify(root: Path) -> dict:
    """The manifest of an unpacked archive, once every file under root matches it."""
    manifest = read_manifest(root)
    found = {n: d for n, d in tree_files(root).items() if n != MANIFEST}
    listed = manifest["files"]
    mismatch = provenance.digest_mismatch(listed, found)
    if mismatch:
        name, how = mismatch
        problem = {
            "missing": f"listed in {MANIFEST} but missing",
            "unlisted": f"not listed in {MANIFEST}",
            "differs": f"{found.get(name)}, {MANIFEST} says {listed.get(name)}",
        }[how]
        raise BadArchive(f"{root / name}: {problem}")
    return manifest


def write_archive(root: Path, out: Path) -> None:
    """root as out (gzip-compressed tar), written beside and renamed: never a half archive."""
    partial = out.with_name(out.name + ".partial")
    with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
        tar.add(root, arcname=TOP)
    os.replace(partial, out)


def _member_problem(member: tarfile.TarInfo) -> str | None:
    """Why member cannot be unpacked (what Python's "data" filter refuses, checked here too:
    Debian 12's Python 3.11.2 predates the filter): a path out of TOP/, a link whose target
    leaves it, a device or a FIFO."""
    parts = Path(member.name).parts
    if member.name.startswith("/") or ".." in parts or not parts or parts[0] != TOP:
        return "is outside " + TOP + "/"
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return "is neither a file, a folder nor a link"
    if member.issym() or member.islnk():
        base = Path(member.name).parent if member.issym() else Path()
        target = Path(os.path.normpath(base / member.linkname))
        if member.linkname.startswith("/") or not target.parts or target.parts[0] != TOP:
            return f"links out of {TOP}/ ({member.linkname})"
    return None


def _check_members(archive: Path, tar: tarfile.TarFile) -> None:
    count = size = 0
    links = {}  # the archive's symbolic links: path -> target
    members = []
    for member in tar:
        count += 1
        size += member.size
        if count > MAX_MEMBERS or size > MAX_BYTES:
            raise BadArchive(
                f"{archive}: more than {MAX_MEMBERS} entries or {MAX_BYTES >> 30} GiB: "
                "not an offline archive of iostudy"
            )
        problem = _member_problem(member)
        if problem:
            raise BadArchive(f"{archive}: entry '{member.name}' {problem}")
        if member.issym():
            links[os.path.normpath(member.name)] = member.linkname
        members.append(member)
    for member in members:
        problem = _chain_problem(member, links)
        if problem:
            raise BadArchive(f"{archive}: entry '{member.name}' {problem}")


def _chain_problem(member: tarfile.TarInfo, links: dict[str, str]) -> str | None:
    """Why member is unsafe in the tree the whole archive makes (each entry alone may look
    safe, _member_problem): a path that goes through one of its links, a name given twice as
    a link, or a link that leaves TOP/ once every link on its way is followed."""
    name = os.path.normpath(member.name)
    parts = name.split("/")
    through = next(
        ("/".join(parts[:i]) for i in range(1, len(parts)) if "/".join(parts[:i]) in links), None
    )
    if through:
        return f"is written through the link {through}"
    if name in links and not member.issym():
        return "is also a link"
    if member.issym():
        target = os.path.join(os.path.dirname(name), member.linkname)
    elif member.islnk():
        target = member.linkname  # a hard link names its target from the archive's root
    else:
        return None
    if _resolved(target, links) is None:
        return f"links out of {TOP}/ through the archive's other links ({member.linkname})"
    return None


def _resolved(path: str, links: dict[str, str], depth: int = 0) -> str | None:
    """path (relative to the archive's root) as the file system will resolve it in the tree the
    archive makes, each of its links followed, "..", after a link, going up from its target;
    None when it leaves TOP/ or follows more than 40 links (as the kernel stops at ELOOP)."""
    parts: list[str] = []
    for part in path.split("/"):
        if part in ("", "."):
            continue
        if part == "..":
            if not parts:
                return None
            parts.pop()
            continue
        parts.append(part)
        here = "/".join(parts)
        if here in links:
            if depth >= 40 or links[here].startswith("/"):
                return None
            target = _resolved(os.path.join(os.path.dirname(here), links[here]), links, depth + 1)
            if target is None:
                return None
            parts = target.split("/")
    return "/".join(parts) if parts and parts[0] == TOP else None


def extract_all(tar: tarfile.TarFile, dest: Path) -> None:
    """tar under dest through Python's "data" filter where this Python has it (3.11.4 on);
    the archive's members are checked by _check_members either way."""
    if hasattr(tarfile, "data_filter"):
        tar.extractall(dest, filter="data")
    else:
        tar.extractall(dest)


def extract(archive: Path, dest: Path) -> Path:
    """The archive's folder extracted under dest (Python's "data" filter: no absolute path, no
    path out of dest, no device, no link out of the tree); returns it."""
    try:
        with tarfile.open(archive, "r:*") as tar:
            _check_members(archive, tar)
            extract_all(tar, dest)
    except (OSError, tarfile.TarError) as exc:
        raise BadArchive(f"{archive}: cannot unpack: {exc}") from None
    return dest / TOP
