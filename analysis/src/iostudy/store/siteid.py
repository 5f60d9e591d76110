"""A site's identity: its name and signing key, and the keys of the sites a store trusts.

A site's name (``STORE/site.json``, recorded at its first export) is its identity in other
stores: it never changes. A checksum proves that a bundle is whole, not who made it: each site
signs its bundles' SHA256SUMS with an Ed25519 key (the ``cryptography`` package, a maintained
binding of OpenSSL; Ed25519 has no parameters to get wrong, and its keys are short enough to
read out on a phone call):

- ``STORE/site-key.pem``: the store's private key, made at its first export, readable by its
  owner only, never exported;
- ``STORE/trust/<site>.pub``: the public key of each site whose bundles the store imports, one
  line ``iostudy-ed25519 <base64 key> <site>``, as ``iostudy trust own`` prints it at the other
  site (``iostudy trust add SITE FILE`` here).

A key is shown by its fingerprint, ``SHA256:`` and the base64 sha256 of the raw key, as ssh does.
"""

from __future__ import annotations

import base64
import binascii
import errno
import hashlib
import json
import os
import re
import stat
from pathlib import Path

from iostudy.core import safeio
from iostudy.core.deferred import deferred
from iostudy.core.errors import BadInput
from iostudy.core.processes import clear_dead
from iostudy.store.umask import store_umask_applied

crypto_errors = deferred("cryptography.exceptions")
serialization = deferred("cryptography.hazmat.primitives.serialization")
ed25519 = deferred("cryptography.hazmat.primitives.asymmetric.ed25519")

SITE_FILE = "site.json"
KEY_FILE = "site-key.pem"
PARTIAL_KEY = ".site-key.pem.partial-"  # + the pid of the process making the key
PARTIAL_SITE = ".site.json.partial-"  # + the pid of the process recording the site
TRUST_DIR = "trust"
KIND = "iostudy-ed25519"
SITE_NAME = re.compile(r"^[a-z0-9]+(-[a-z0-9]+)*$")
KEY_BYTES = 32


class SiteError(BadInput):
    """A site name or key that cannot be read, made or trusted; the message names the file and
    the problem."""


def own_site(store: Path, requested: str | None) -> str:
    """The store's site name: STORE/site.json, recorded from ``requested`` (--site) the first
    time; a later different request is refused."""
    path = store / SITE_FILE
    recorded = None
    if path.is_file():
        try:
            recorded = json.loads(safeio.read_text(path, 1 << 12))["site"]
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise SiteError(f"{path}: cannot read the site name: {exc}") from None
    if requested and recorded and requested != recorded:
        raise SiteError(
            f"--site {requested}: this store is site {recorded!r} ({path}); a site keeps its "
            "name, as other stores know its runs by it"
        )
    site = requested or recorded
    if not site:
        raise SiteError(f"name this store's site with --site NAME (kept in {path})")
    if not SITE_NAME.match(site):
        raise SiteError(f"--site {site!r}: lower-case letters, digits and '-' only")
    if not recorded and (
        (store / TRUST_DIR / f"{site}.pub").exists() or (store / "sites" / site).exists()
    ):
        raise SiteError(
            f"--site {site}: this store trusts or holds another site of that name (its bundles "
            "were imported here); a store's own site needs a name of its own"
        )
    if not recorded:
        return _record_site(path, site)
    return site


def _record_site(path: Path, site: str) -> str:
    """STORE/site.json written whole or not at all (as the key is, _make_key), with the store's
    umask; returns the site it holds (another process's, if it recorded one meanwhile)."""
    with store_umask_applied():
        path.parent.mkdir(parents=True, exist_ok=True)
        clear_dead(path.parent, PARTIAL_SITE)
        partial = path.with_name(f"{PARTIAL_SITE}{os.getpid()}")
        fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o666)
        try:
            with os.fdopen(fd, "w") as f:
                f.write(json.dumps({"site": site}) + "\n")
                f.flush()
                os.fsync(f.fileno())
            os.link(partial, path)
        except FileExistsError:
            return own_site(path.parent, site)
        finally:
            partial.unlink(missing_ok=True)
    return site


def recorded_site(store: Path) -> str | None:
    """The store's site name if it has one (it exported), else None."""
    path = store / SITE_FILE
    return own_site(store, None) if path.exists() else None


def fingerprint(raw: bytes) -> str:
    return "SHA256:" + base64.b64encode(hashlib.sha256(raw).digest()).decode().rstrip("=")


def raw_public(key: ed25519.Ed25519PublicKey) -> bytes:
    return key.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def public_line(raw: bytes, site: str) -> str:
    return f"{KIND} {base64.b64encode(raw).decode()} {site}"


def parse_public(text: str, where: str) -> tuple[str, bytes]:
    """(site, raw key) of a public key line; SiteError naming ``where`` when it is not one."""
    fields = text.strip().split()
    if len(fields) != 3 or fields[0] != KIND:
        raise SiteError(f"{where}: not an iostudy public key ('{KIND} <base64 key> <site>')")
    try:
        raw = base64.b64decode(fields[1], validate=True)
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != KEY_BYTES:
        raise SiteError(f"{where}: the key is not {KEY_BYTES} bytes of base64")
    if not SITE_NAME.match(fields[2]):
        raise SiteError(f"{where}: site {fields[2]!r} is not a site name")
    return fields[2], raw


def own_key(store: Path, create: bool) -> ed25519.Ed25519PrivateKey | None:
    """The store's private key, guarded as ssh guards its keys (:func:`_key_bytes`); made when
    ``create`` and there is none yet (:func:`_make_key`)."""
    path = store / KEY_FILE
    clear_dead(store, PARTIAL_KEY)  # a killed maker's partial key
    if not os.path.lexists(path):
        return _make_key(path) if create else None
    try:
        key = serialization.load_pem_private_key(_key_bytes(path), None)
    except (ValueError, TypeError) as exc:
        raise SiteError(f"{path}: cannot read the site's key: {exc}") from None
    if not isinstance(key, ed25519.Ed25519PrivateKey):
        raise SiteError(f"{path}: not an Ed25519 key")
    return key


def _key_bytes(path: Path) -> bytes:
    """The key file's bytes: a regular file (never a link: a link to a key someone else holds
    would sign this site's exports), owned by this user, readable by no one else."""
    fix = "remove it and run `iostudy trust own` again, or make it a file only you can read"
    try:
        with safeio.open_regular(path, follow=False) as fd:
            st = os.fstat(fd)
            if st.st_uid != os.geteuid():
                raise SiteError(f"{path}: owned by uid {st.st_uid}, not this user: {fix}")
            if st.st_mode & 0o077:
                raise SiteError(
                    f"{path}: mode {stat.filemode(st.st_mode)}, others may read "
                    f"the site's key: chmod 600 {path}"
                )
            return os.read(fd, 1 << 16)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise SiteError(f"{path}: a symbolic link, not the site's key: {fix}") from None
        raise SiteError(f"{path}: cannot read the site's key: {exc.strerror}") from None


def _make_key(path: Path) -> ed25519.Ed25519PrivateKey:
    """A new key, written whole or not at all: to a file of this process (owner-only, synced),
    then linked to its name, which fails if another process made one meanwhile (its key is
    then the site's). A process killed on the way leaves only its partial file, which the next
    call clears."""
    key = ed25519.Ed25519PrivateKey.generate()
    pem = key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
    )
    partial = path.with_name(f"{PARTIAL_KEY}{os.getpid()}")
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(pem)
            f.flush()
            os.fsync(f.fileno())
        os.link(partial, path)
    except FileExistsError:
        return own_key(path.parent, create=False)
    finally:
        partial.unlink(missing_ok=True)
    return key


def verifies(raw: bytes, signature: bytes, data: bytes) -> bool:
    try:
        ed25519.Ed25519PublicKey.from_public_bytes(raw).verify(signature, data)
    except (crypto_errors.InvalidSignature, ValueError):
        return False
    return True


def trusted(store: Path, site: str) -> bytes | None:
    """The raw key the store trusts for ``site``, or None."""
    path = store / TRUST_DIR / f"{site}.pub"
    if not path.exists():
        return None
    try:
        named, raw = parse_public(safeio.read_text(path, 1 << 12), str(path))
    except (OSError, ValueError) as exc:
        raise SiteError(f"{path}: cannot read a trusted key: {exc}") from None
    if named != site:
        raise SiteError(f"{path}: holds the key of site {named!r}, not {site!r}")
    return raw


def trust(store: Path, site: str, raw: bytes) -> Path:
    """Record ``raw`` as the key of ``site``; refused if the store trusts another key for it."""
    known = trusted(store, site)
    if known is not None and known != raw:
        raise SiteError(
            f"site {site} is trusted with key {fingerprint(known)}, not {fingerprint(raw)}: "
            f"remove {store / TRUST_DIR / (site + '.pub')} first if the site changed its key"
        )
    folder = store / TRUST_DIR
    path = folder / f"{site}.pub"
    with store_umask_applied():
        folder.mkdir(parents=True, exist_ok=True)
        tmp = folder / f".{site}.pub.tmp"
        tmp.write_text(public_line(raw, site) + "\n")
        os.replace(tmp, path)
    return path


def read_public(path) -> tuple[str, bytes]:
    """(site, raw key) of a key file, the line ``iostudy trust own`` prints."""
    try:
        return parse_public(safeio.read_text(path, 1 << 12), str(path))
    except (OSError, ValueError) as exc:
        raise SiteError(str(exc)) from exc


def trust_file(store: Path, site: str, path) -> tuple[bytes, Path]:
    """Trusts the key of ``site`` that the key file ``path`` holds (:func:`trust`); returns the
    raw key and where the store keeps it."""
    named, raw = read_public(path)
    if named != site:
        raise SiteError(f"{path}: the key of site {named!r}, not {site!r}")
    try:
        return raw, trust(store, site, raw)
    except OSError as exc:
        raise SiteError(str(exc)) from exc
