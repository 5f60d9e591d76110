"""Pseudonyms for the names a published report would otherwise show: user names, projects
(Slurm accounts), command lines and paths (executables, files, logs).

``iostudy report build --anonymize`` replaces each such name with a keyed HMAC-SHA256 of it:
the same name always gets the same pseudonym (in every table, figure and CSV of a report, and
in every version built from the same store), different names get different ones, and without
the key nobody can tell which name is behind a pseudonym, even by trying likely names (a plain
hash could be reversed that way). The key is 32 random bytes in ``STORE/anonymize.key``
(mode 600), made on first use; it is never copied into a report. Deleting it makes new
pseudonyms for everything.

======================  ====================================================================
user, uid               ``user-<10 hex>``; ``uid-<10 hex>``
node                    ``host-<10 hex>`` (a host name: a laptop's can name its owner)
project, account        ``project-<10 hex>``; "(unknown)" and the coverage table's
                        "(no account)", "(no accounting)", "all" stay
path                    each component is replaced (``/a/b/c.nc`` -> ``/<8 hex>/<8 hex>/<8
                        hex>.nc``): files of one folder keep a common prefix, and an extension
                        that names a format (:data:`FORMATS`: .nc, .h5, .dat, ...) stays;
                        Darshan's ``<STDOUT>``,
                        ``<STDERR>``, ``<STDIN>`` stay
command line            the program as a path; options (``-n``, ``--size``) and numbers stay,
                        any other argument becomes ``arg-<8 hex>`` (``--out=x`` keeps
                        ``--out=``)
free text (reason)      every absolute path in it, as a path
======================  ====================================================================

Numbers are never changed. :meth:`Anonymizer.frame` applies this to the columns of a table by
their names (:data:`COLUMNS`); a value it has already issued is left as it is, so a table can
go through it twice.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import re
import secrets
from pathlib import Path

from iostudy.core.deferred import deferred

pd = deferred("pandas")


KEY_FILE = "anonymize.key"
# Names that say nothing about a person or a project.
KEEP = {"(unknown)", "(no account)", "(no accounting)", "(other projects)", "all", ""}
DARSHAN_STREAMS = re.compile(r"^<[A-Z]+>$")
EXTENSION = re.compile(r"^(.+?)(\.[A-Za-z0-9]{1,8})$")
# Extensions that say a file's format and stay (any other is part of the name).
FORMATS = frozenset(
    "nc nc4 cdf h5 hdf5 he5 hdf bp sion silo vtk vtu vtp xdmf xmf fits grib grb grb2 root "
    "dat bin raw out err log txt csv json xml yaml yml ini cfg conf in "
    "gz bz2 xz zst tar zip tgz npy npz pkl pt ckpt chk rst restart "
    "png jpg jpeg svg pdf ppm mp4 "
    "so a o py sh exe x "
    "sam bam fa fasta fastq hmm sto "
    "db sqlite parquet darshan lock tmp".split()
)
OPTION = re.compile(r"^--?[A-Za-z][A-Za-z0-9_-]*$")
NUMBER = re.compile(r"^[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?[kKmMgGtT]?$")
ABSOLUTE_PATH = re.compile(r"(?<![\w.~-])/[^\s'\"`,;:()<>\[\]{}]+")

# Column name -> kind of name; any table's column of these names is anonymized.
COLUMNS = {
    "user": "user",
    "username": "user",
    "uid": "uid",
    "node": "host",
    "account": "project",
    "project": "project",
    "exe": "command",
    "executable": "command",  # a program's file name (iostudy diagnose's findings)
    "command_line": "command",
    "log_path": "path",
    "path": "path",
    "file": "path",
    "file_path": "path",  # an HDF5 dataset's or PnetCDF variable's file (jobdetail.files_of)
    "source_path": "path",
    "reason": "text",
}


class AnonymizeError(Exception):
    """The key cannot be read or made (the message names the file)."""


def load_key(store: Path) -> bytes:
    """The store's key, STORE/anonymize.key, made (32 random bytes, hex, mode 600) if missing."""
    path = Path(store) / KEY_FILE
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:
        pass
    except OSError as exc:
        raise AnonymizeError(f"{path}: cannot make the key: {exc.strerror or exc}") from None
    else:
        with os.fdopen(fd, "w") as fh:
            fh.write(secrets.token_hex(32) + "\n")
    try:
        text = path.read_text().strip()
        key = bytes.fromhex(text)
    except OSError as exc:
        raise AnonymizeError(f"{path}: cannot read the key: {exc.strerror or exc}") from None
    except ValueError:
        raise AnonymizeError(f"{path}: not a key (64 hex digits expected)") from None
    if len(key) < 16:
        raise AnonymizeError(f"{path}: key too short ({len(key)} bytes; 16 at least)")
    return key


class Anonymizer:
    """Consistent pseudonyms under one key."""

    def __init__(self, key: bytes):
        self._key = bytes(key)
        self._issued: set[str] = set()

    @classmethod
    def for_store(cls, store: Path) -> Anonymizer:
        return cls(load_key(store))

    def key_id(self) -> str:
        """Which key made the pseudonyms (safe to publish: an HMAC of a constant)."""
        return self._digest("key-id", "iostudy")[:16]

    def _digest(self, kind: str, name: str) -> str:
        message = f"{kind}\0{name}".encode("utf-8", "surrogatepass")
        return hmac.new(self._key, message, hashlib.sha256).hexdigest()

    def _issue(self, kind: str, name: str, prefix: str, digits: int) -> str:
        if name in self._issued:
            return name
        out = prefix + self._digest(kind, name)[:digits]
        self._issued.add(out)
        return out

    def user(self, name: str) -> str:
        return name if name in KEEP else self._issue("user", name, "user-", 10)

    def uid(self, uid) -> str:
        if isinstance(uid, float) and uid.is_integer():
            uid = int(uid)
        return self._issue("uid", str(uid), "uid-", 10)

    def host(self, name: str) -> str:
        return self._issue("host", name, "host-", 10)

    def project(self, name: str) -> str:
        return name if name in KEEP else self._issue("project", name, "project-", 10)

    def _component(self, part: str) -> str:
        if part in ("", ".", "..") or DARSHAN_STREAMS.match(part) or part in self._issued:
            return part
        m = EXTENSION.match(part)
        if m and m.group(2)[1:].lower() in FORMATS:
            stem, ext = m.group(1), m.group(2)
        else:
            stem, ext = part, ""
        if stem in self._issued:
            return part
        return self._issue("path", stem, "", 8) + ext

    def path(self, path: str) -> str:
        if path in KEEP or DARSHAN_STREAMS.match(path):
            return path
        return "/".join(self._component(p) for p in path.split("/"))

    def command(self, line: str) -> str:
        words = line.split()
        if not words:
            return line
        out = [self.path(words[0])]
        for word in words[1:]:
            option, eq, value = word.partition("=")
            if eq and OPTION.match(option):
                out.append(f"{option}={self._argument(value)}")
            else:
                out.append(self._argument(word))
        return " ".join(out)

    def _argument(self, word: str) -> str:
        if not word or OPTION.match(word) or NUMBER.match(word) or word in self._issued:
            return word
        if "/" in word:
            return self.path(word)
        return self._issue("arg", word, "arg-", 8)

    def text(self, text: str) -> str:
        return ABSOLUTE_PATH.sub(lambda m: self.path(m.group(0)), text)

    def value(self, kind: str, value):
        """value as a pseudonym of kind (see COLUMNS); missing values stay missing."""
        if value is None or (not isinstance(value, str) and pd.isna(value)):
            return value
        if kind == "uid":
            return self.uid(value)
        return getattr(self, kind)(str(value))

    def frame(self, df: pd.DataFrame | None) -> pd.DataFrame | None:
        """A copy of df with the names in its columns of :data:`COLUMNS` replaced."""
        if df is None:
            return None
        columns = [c for c in df.columns if c in COLUMNS]
        if not columns:
            return df
        out = df.copy()
        for c in columns:
            kind = COLUMNS[c]
            values = [self.value(kind, v) for v in out[c].astype("object")]
            out[c] = pd.Series(values, index=out.index, dtype="object")
        return out
