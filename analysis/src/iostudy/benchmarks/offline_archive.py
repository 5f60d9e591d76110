"""The offline archive of `iostudy offline pack|unpack`: its layout, its manifest, its checks.

An archive is one tar file holding one folder, LAYOUT's entries in it:
  spack/            Spack at the pinned tag (spack-env/pins.yaml)
  spack-packages/   the recipe repository at the pinned release
  wheels/           clingo, analysis/requirements.lock and their build requirements
  mirror/           a Spack source mirror of exactly the locked specs (iostudy's own included)
  iostudy.bundle    the checkout's branch as a git bundle (every locked commit in it)
  MANIFEST.json     what it is (system, pins, Python, lock checksum), every file's sha256 and
                    size, every link's target
Beside it, <archive>.sig signs the archive's bytes (iostudy.benchmarks.offline_signature).
Unpack checks the signature first, then every entry against the manifest (listed, of its size
or target, no way out of the folder) before it writes one, into a folder of its own that goes
on any refusal; then every file's sha256. A file that differs, is missing or is not listed is
named and nothing is installed.
"""

import json
import os
import shutil
import tarfile
from pathlib import Path

from iostudy.core import provenance
from iostudy.core.errors import BadInput, Failed
from iostudy.core.processes import clear_dead, own_name, private_dir

ARCHIVE_FORMAT = 2
MAX_MANIFEST = 64 << 20  # the manifest is read into memory: ~23,000 entries of ~150 bytes
UNPACK_PREFIX = ".iostudy-unpack-"  # + pid-<random>: DIR's folder of an unpack under way
PARTIAL = ".iostudy-pack-"  # + pid-<archive name>: the archive being written, beside it
TOP = "iostudy-offline"
MANIFEST = "MANIFEST.json"
LAYOUT = ("spack", "spack-packages", "wheels", "mirror", "iostudy.bundle")
# An archive unpacks to ~300 MB in ~23,000 entries; far more is not an archive of ours.
MAX_MEMBERS = 400_000
MAX_BYTES = 16 << 30


class OfflineError(Failed):
    """A step of pack/unpack failed; the message names the step or the file."""


class BadArchive(BadInput):
    """The archive is not one pack made, or was changed since: nothing of it is used."""


def tree_files(root: Path) -> dict[str, dict]:
    """{path relative to root: {"sha256": hex, "size": bytes} or {"link": target}} of every
    file and symbolic link under root (folders are implied by their files)."""
    entries = {}
    for folder, dirs, files in os.walk(root):
        dirs.sort()
        for name in sorted(files) + [d for d in dirs if os.path.islink(os.path.join(folder, d))]:
            path = Path(folder) / name
            relative = str(path.relative_to(root))
            if path.is_symlink():
                entries[relative] = {"link": os.readlink(path)}
            else:
                size = path.stat().st_size
                entries[relative] = {"sha256": provenance.sha256_file(path), "size": size}
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
        return parse_manifest(path.read_text(), path)
    except OSError as exc:
        raise BadArchive(f"{path}: not an offline archive's manifest: {exc}") from None


def parse_manifest(text: str, where) -> dict:
    """The manifest in text, once it is one of this format: every entry a file's sha256 and
    size or a link's target."""
    try:
        manifest = json.loads(text)
    except ValueError as exc:
        raise BadArchive(f"{where}: not an offline archive's manifest: {exc}") from None
    if not isinstance(manifest, dict) or manifest.get("format") != ARCHIVE_FORMAT:
        raise BadArchive(
            f"{where}: format {manifest.get('format') if isinstance(manifest, dict) else None!r}"
            f", this iostudy reads format {ARCHIVE_FORMAT}"
        )
    files = manifest.get("files")
    if not isinstance(files, dict) or not all(map(_is_entry, files.values())):
        raise BadArchive(f"{where}: 'files' is not a list of files and links")
    return manifest


def _is_entry(entry) -> bool:
    if not isinstance(entry, dict):
        return False
    if entry.keys() == {"link"}:
        return isinstance(entry["link"], str)
    size = entry.get("size")
    sized = isinstance(size, int) and not isinstance(size, bool) and 0 <= size <= MAX_BYTES
    return entry.keys() == {"sha256", "size"} and isinstance(entry["sha256"], str) and sized


def verify(root: Path) -> dict:
    """The manifest of an unpacked archive, once every file under root matches it."""
    manifest = read_manifest(root)
    found = {n: d for n, d in tree_files(root).items() if n != MANIFEST}
    listed = manifest["files"]
    mismatch = provenance.digest_mismatch(listed, found)
    if mismatch:
        name, how = mismatch
        if how == "differs":
            problem = f"{_shown(found[name])}, {MANIFEST} says {_shown(listed[name])}"
        else:
            problem = {
                "missing": f"listed in {MANIFEST} but missing",
                "unlisted": f"not listed in {MANIFEST}",
            }[how]
        raise BadArchive(f"{root / name}: {problem}")
    return manifest


def _shown(entry: dict) -> str:
    return f"link:{entry['link']}" if "link" in entry else f"sha256:{entry['sha256']}"


def write_archive(root: Path, out: Path) -> None:
    """root as out (gzip-compressed tar), written beside and renamed: never a half archive."""
    clear_dead(out.parent, PARTIAL)
    partial = out.with_name(own_name(PARTIAL) + out.name)
    try:
        with tarfile.open(partial, "w:gz", compresslevel=6) as tar:
            tar.add(root, arcname=TOP)
        os.replace(partial, out)
    finally:
        partial.unlink(missing_ok=True)


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


def _manifest_member(archive: Path, tar: tarfile.TarFile) -> dict:
    """The archive's manifest, read from the tar (not written anywhere), bounded."""
    name = f"{TOP}/{MANIFEST}"
    try:
        member = tar.getmember(name)
    except KeyError:
        raise BadArchive(f"{archive}: no {name}: not an offline archive's manifest") from None
    if not member.isfile() or member.size > MAX_MANIFEST:
        raise BadArchive(f"{archive}: {name} is not an offline archive's manifest")
    with tar.extractfile(member) as f:
        return parse_manifest(f.read().decode(errors="replace"), f"{archive}: {name}")


def _check_members(archive: Path, tar: tarfile.TarFile, listed: dict) -> None:
    """Every entry before any is written: its name and kind (_member_problem), listed in the
    manifest with its size or target (_listing_problem), and safe in the tree the whole archive
    makes (_chain_problem)."""
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
        problem = _member_problem(member) or _listing_problem(member, listed)
        if problem:
            raise BadArchive(f"{archive}: entry '{member.name}' {problem}")
        if member.issym():
            links[os.path.normpath(member.name)] = member.linkname
        members.append(member)
    for member in members:
        problem = _chain_problem(member, links)
        if problem:
            raise BadArchive(f"{archive}: entry '{member.name}' {problem}")


def _listing_problem(member: tarfile.TarInfo, listed: dict) -> str | None:
    """Why member is not what the manifest lists: a file or link it does not list, a size or
    a link target other than it says (a folder needs no listing: it holds what is listed)."""
    if member.isdir():
        return None
    name = os.path.normpath(member.name)[len(TOP) + 1 :]
    entry = listed.get(name)
    if name == MANIFEST:
        return None
    if entry is None:
        return f"is not listed in {MANIFEST}"
    if member.issym():
        if entry.get("link") != member.linkname:
            return f"links to {member.linkname}, {MANIFEST} says {_shown(entry)}"
    elif "link" in entry:
        return f"is not what {MANIFEST} lists ({_shown(entry)})"
    elif member.islnk():
        return None  # a hard link: a file of its target's bytes, checked once it is written
    elif member.size != entry["size"]:
        return f"is {member.size} bytes, {MANIFEST} says {entry['size']}"
    return None


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
    """The archive's folder extracted under dest, once every entry is checked (_check_members),
    into a folder of this process in dest (Python's "data" filter too where it has it), then
    moved into place; returns it. On any refusal or failure nothing of it stays in dest."""
    work = private_dir(UNPACK_PREFIX, dest)
    try:
        with tarfile.open(archive, "r:*") as tar:
            listed = _manifest_member(archive, tar)["files"]
            _check_members(archive, tar, listed)
            extract_all(tar, work)
        os.rename(work / TOP, dest / TOP)
    except (OSError, tarfile.TarError) as exc:
        raise BadArchive(f"{archive}: cannot unpack: {exc}") from None
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return dest / TOP
