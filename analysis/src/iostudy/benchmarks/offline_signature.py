"""The signature of an offline archive: ``<archive>.sig`` beside it, written by `iostudy offline
pack` with the packing store's site key (iostudy.store.siteid), checked by `unpack` before it
reads a byte of the archive as a tar.

The signature file is one JSON object: the format, the signing site, its public key, the
archive's sha256 and size, and the Ed25519 signature of the other fields (as canonical JSON:
keys sorted, no spaces). Signing the archive's sha256 rather than its bytes keeps both sides
streaming (Ed25519 signs a message held whole in memory; the archive is hundreds of MB).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from pathlib import Path

from iostudy.benchmarks.offline_archive import BadArchive
from iostudy.core import safeio
from iostudy.store import siteid

FORMAT = "iostudy-offline-signature/1"
SUFFIX = ".sig"


def path_of(archive: Path) -> Path:
    return archive.with_name(archive.name + SUFFIX)


def _digest(archive: Path) -> tuple[str, int]:
    """(sha256, size) of the file, read in blocks."""
    h, size = hashlib.sha256(), 0
    with open(archive, "rb") as f:
        while block := f.read(1 << 20):
            h.update(block)
            size += len(block)
    return h.hexdigest(), size


def _signed_bytes(fields: dict) -> bytes:
    return json.dumps(fields, sort_keys=True, separators=(",", ":")).encode()


def sign(archive: Path, key, site: str) -> Path:
    """Writes <archive>.sig: the archive signed by ``key``, the site's."""
    sha, size = _digest(archive)
    raw = siteid.raw_public(key.public_key())
    fields = {
        "format": FORMAT,
        "site": site,
        "key": base64.b64encode(raw).decode(),
        "archive_sha256": sha,
        "size": size,
    }
    signature = base64.b64encode(key.sign(_signed_bytes(fields))).decode()
    out = path_of(archive)
    out.write_text(json.dumps({**fields, "signature": signature}, indent=1) + "\n")
    return out


def _record(archive: Path) -> tuple[dict, bytes, bytes]:
    """(the signed fields, the signer's raw key, the signature) of <archive>.sig."""
    sig = path_of(archive)
    try:
        record = json.loads(safeio.read_text(sig, 1 << 16))
        fields = {k: record[k] for k in ("format", "site", "key", "archive_sha256", "size")}
        raw = base64.b64decode(fields["key"], validate=True)
        signature = base64.b64decode(record["signature"], validate=True)
    except FileNotFoundError:
        raise BadArchive(
            f"{archive}: no signature ({sig.name} beside it): an archive is unpacked only "
            "when signed by a site you trust; carry the .sig that pack wrote with it"
        ) from None
    except (OSError, ValueError, KeyError, TypeError, binascii.Error) as exc:
        raise BadArchive(f"{sig}: not an offline archive's signature: {exc}") from None
    if fields["format"] != FORMAT or not isinstance(fields["site"], str):
        raise BadArchive(f"{sig}: not of format {FORMAT}")
    return fields, raw, signature


def verify(archive: Path, trusted_key) -> tuple[str, str]:
    """(site, key fingerprint) of the archive's signer, once <archive>.sig is a signature by
    the key ``trusted_key(site)`` returns (the raw key the caller trusts for that site, or
    None) of the archive's exact bytes. BadArchive otherwise, naming the signer's fingerprint.
    Nothing of the archive is read as a tar before."""
    fields, raw, signature = _record(archive)
    site, claimed = fields["site"], siteid.fingerprint(raw)
    trusted = trusted_key(site)
    if trusted is None:
        raise BadArchive(
            f"{archive}: signed by site {site!r} with key {claimed}, which is not trusted here: "
            f"give --key FILE, the line `iostudy trust own` prints at {site}"
        )
    if trusted != raw or not siteid.verifies(raw, signature, _signed_bytes(fields)):
        raise BadArchive(
            f"{archive}: the signature does not verify with the key trusted for site {site} "
            f"({siteid.fingerprint(trusted)}; the archive claims {claimed})"
        )
    if _digest(archive) != (fields["archive_sha256"], fields["size"]):
        raise BadArchive(f"{archive}: changed since site {site} signed it (sha256 differs)")
    return site, claimed
