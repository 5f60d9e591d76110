"""A bundle as a file: its members written as a plain ustar file with zeroed headers, the sums
and the signature that close it, and the file read back with every byte checked.

Apart from the export (:mod:`iostudy.store.bundle_export`) and the import
(:mod:`iostudy.store.bundle`), which decide what goes in and what is done with it: this module
holds the format's bytes, in both directions. What a bundle's names, fields and tables must be
is :mod:`iostudy.store.bundlecheck`.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import io
import json
import re
import tarfile
from pathlib import Path
from typing import NamedTuple

from iostudy.core import safeio
from iostudy.core.errors import BadInput
from iostudy.store import bundlecheck, siteid
from iostudy.store import store as store_mod
from iostudy.store.bundlecheck import META, SIGNATURE, SUMS, BundleInvalid

BLOCK = 512
# The closing members are read into memory: SHA256SUMS lists at most MAX_PARTS tables and as
# many manifests, each line under 300 bytes; a signature record is a few hundred bytes.
MAX_SUMS = 2 * bundlecheck.MAX_PARTS * 300
MAX_SIGNATURE = 1 << 16
# Tables without a run id: they travel in the bundle but are not imported (iostudy.store.bundle).
NOT_IMPORTED = store_mod.IMPORTED_TABLES


class BundleError(BadInput):
    """A bundle that cannot be written or read; the message names the file and the problem."""


# -- writing a bundle ---------------------------------------------------------------------------


def add_member(tar: tarfile.TarFile, name: str, data: bytes, sums: dict | None):
    """Adds a member with a zeroed header (mode 644, time 0, no owner) and, unless sums is
    None, its sha256 to sums."""
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime = len(data), 0o644, 0
    tar.addfile(info, io.BytesIO(data))
    if sums is not None:
        sums[name] = hashlib.sha256(data).hexdigest()


def signature_member(key, site: str, sums: bytes) -> bytes:
    """The SIGNATURE member: the site, its public key and its signature of SHA256SUMS."""
    raw = siteid.raw_public(key.public_key())
    return (
        json.dumps(
            {
                "site": site,
                "key": base64.b64encode(raw).decode(),
                "signature": base64.b64encode(key.sign(sums)).decode(),
            },
            indent=2,
        )
        + "\n"
    ).encode()


# -- reading a bundle ---------------------------------------------------------------------------


def _check_layout(path: Path, members: list[tarfile.TarInfo]) -> None:
    """Every byte outside the members' headers and contents is a zero: padding and the end of
    the archive (tarfile ignores them, so a change there would go unseen)."""
    size = path.stat().st_size
    with open(path, "rb") as f:
        expected = 0
        for m in members:
            if m.offset != expected or m.offset_data != m.offset + BLOCK:
                raise BundleError(f"{path}: {m.name}: not where a plain tar puts it")
            end = m.offset_data + m.size
            f.seek(end)
            padding = f.read(-end % BLOCK)
            if padding.strip(b"\0"):
                raise BundleError(f"{path}: {m.name}: non-zero bytes in its padding")
            expected = end + len(padding)
        f.seek(expected)
        while block := f.read(1 << 20):
            if block.strip(b"\0"):
                raise BundleError(f"{path}: non-zero bytes after the last member")
        if size - expected < 2 * BLOCK:
            raise BundleError(f"{path}: truncated (no end-of-archive blocks)")


class Opened(NamedTuple):
    """A bundle extracted and checked: bundle.json, the id (sha256 of SHA256SUMS), the signer's
    raw public key, the member digests and the imported tables' rows."""

    meta: dict
    id: str
    signer: bytes
    digests: dict
    tables: dict


def open_bundle(path, dest: Path) -> Opened:
    """Check the bundle at ``path`` and extract it into ``dest`` (bundlecheck): its members'
    names and headers, SHA256SUMS against the signature, before anything is written; then
    every member against SHA256SUMS as it is written, bundle.json, the listing and the tables.
    Raises BundleError naming the bundle and the member or field."""
    path = Path(path)
    try:
        with _open_tar(path) as tar:
            members = _checked_members(path, tar)
            sums = _read_member(tar, members.get(SUMS), SUMS, MAX_SUMS)
            record = _read_member(tar, members.get(SIGNATURE), SIGNATURE, MAX_SIGNATURE)
            signed_for, signer = _signer(record, sums)
            listed = _listed(sums, members)
            digests = _extract(tar, members, listed, dest)
        meta = _read_meta(dest)
        if meta["site"] != signed_for:
            raise BundleInvalid(f"{SIGNATURE}: signed for another site than {META}'s")
        bundlecheck.check_listing(meta, list(digests))
        tables = bundlecheck.check_tables(meta, dest)
    except BundleInvalid as exc:
        raise BundleError(f"{path}: {exc}") from None
    return Opened(meta, hashlib.sha256(sums).hexdigest(), signer, digests, tables)


def _open_tar(path: Path) -> tarfile.TarFile:
    try:
        return tarfile.open(path, "r:")
    except (OSError, tarfile.TarError) as exc:
        raise BundleInvalid(f"not a bundle (a tar file): {exc}") from None


def _checked_members(path: Path, tar: tarfile.TarFile) -> dict[str, tarfile.TarInfo]:
    """{name: member} once every member's name and header is one export writes
    (bundlecheck.member_kind: fixed shapes, so no file and folder can clash) and the bytes
    between them are zeros."""
    try:
        members = tar.getmembers()
    except tarfile.TarError as exc:
        raise BundleInvalid(f"damaged: {exc}") from None
    _check_layout(path, members)
    named = {}
    for m in members:
        if not m.isfile() or m.name.startswith("/") or ".." in Path(m.name).parts:
            raise BundleInvalid(f"member {m.name!r}: not a plain file of the bundle")
        if m.mode != 0o644 or m.mtime != 0 or m.uid or m.gid or m.uname or m.gname:
            raise BundleInvalid(f"member {m.name}: its header was changed")
        bundlecheck.member_kind(m.name)
        if m.name in named:
            raise BundleInvalid(f"member {m.name}: twice in the bundle")
        named[m.name] = m
    return named


def _read_member(tar: tarfile.TarFile, member, name: str, limit: int) -> bytes:
    """A closing member (SHA256SUMS, SIGNATURE), read into memory: its size is bounded."""
    if member is None:
        if name == SIGNATURE:
            why = "an unsigned bundle (or of an older iostudy: export it again)"
            raise BundleInvalid(f"no {SIGNATURE}: {why}")
        raise BundleInvalid(f"no {name}: not an iostudy bundle, or damaged")
    if member.size > limit:
        raise BundleInvalid(f"{name}: {member.size} bytes, more than {limit} of a bundle's")
    with tar.extractfile(member) as src:
        return src.read()


def _listed(sums: bytes, members: dict) -> dict[str, str]:
    """{member: sha256} of SHA256SUMS, once it lists exactly the members but itself and
    SIGNATURE."""
    listed = {}
    for number, line in enumerate(sums.decode(errors="replace").splitlines(), 1):
        match = re.fullmatch(r"([0-9a-f]{64})  (\S.*)", line)
        if not match:
            raise BundleInvalid(f"{SUMS} line {number}: not '<sha256>  <name>'")
        listed[match.group(2)] = match.group(1)
    present = {n for n in members if n not in (SUMS, SIGNATURE)}
    for name in sorted(listed.keys() - present):
        raise BundleInvalid(f"{name}: listed in {SUMS} but not in the bundle")
    for name in sorted(present - listed.keys()):
        raise BundleInvalid(f"{name}: in the bundle but not in {SUMS}")
    return listed


def _extract(tar, members: dict, listed: dict, dest: Path) -> dict[str, str]:
    """{member: sha256} of the bundle's members, each extracted into dest and checked against
    SHA256SUMS as it is written."""
    digests = {}
    for name, member in members.items():
        if name in (SUMS, SIGNATURE):
            continue
        target = dest / name
        target.parent.mkdir(parents=True, exist_ok=True)
        h = hashlib.sha256()
        with tar.extractfile(member) as src, open(target, "xb") as dst:
            while block := src.read(1 << 20):
                h.update(block)
                dst.write(block)
        if h.hexdigest() != listed[name]:
            raise BundleInvalid(f"{name}: sha256 differs from {SUMS} (changed)")
        digests[name] = h.hexdigest()
    return digests


def _signer(record: bytes, sums: bytes) -> tuple[str, bytes]:
    """(site, raw public key) of the SIGNATURE member, once its signature of SHA256SUMS
    verifies."""
    try:
        sig = json.loads(record)
        raw = base64.b64decode(sig["key"], validate=True)
        signature = base64.b64decode(sig["signature"], validate=True)
        if not isinstance(sig["site"], str):
            raise TypeError("site is not a string")
    except (ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise BundleInvalid(f"{SIGNATURE}: not a signature record: {exc}") from None
    if len(raw) != siteid.KEY_BYTES or not siteid.verifies(raw, signature, sums):
        raise BundleInvalid(f"{SIGNATURE}: the signature of {SUMS} does not verify")
    return sig["site"], raw


def _read_meta(dest: Path) -> dict:
    try:
        meta = json.loads(safeio.read_text(dest / META))
    except FileNotFoundError:
        raise BundleInvalid(f"no {META}") from None
    except (OSError, ValueError) as exc:
        raise BundleInvalid(f"{META}: {exc}") from None
    return bundlecheck.check_meta(meta)
