"""Darshan record-id hash (Bob Jenkins' 64-bit lookup8 ``hash()``, byte-wise variant).

Written from the description in shared/reference/darshan-log-format.md §4.1; the test
vectors there are checked in test_job.py.  ``darshan_hash(name)`` is the record id of a
(normalized) record name.
"""

from __future__ import annotations

import os

_M = 0xFFFFFFFFFFFFFFFF


def _mix(a: int, b: int, c: int) -> tuple[int, int, int]:
    a = (a - b - c) & _M
    a ^= c >> 43
    b = (b - c - a) & _M
    b ^= (a << 9) & _M
    c = (c - a - b) & _M
    c ^= b >> 8
    a = (a - b - c) & _M
    a ^= c >> 38
    b = (b - c - a) & _M
    b ^= (a << 23) & _M
    c = (c - a - b) & _M
    c ^= b >> 5
    a = (a - b - c) & _M
    a ^= c >> 35
    b = (b - c - a) & _M
    b ^= (a << 49) & _M
    c = (c - a - b) & _M
    c ^= b >> 11
    a = (a - b - c) & _M
    a ^= c >> 12
    b = (b - c - a) & _M
    b ^= (a << 18) & _M
    c = (c - a - b) & _M
    c ^= b >> 22
    return a, b, c


def lookup8(data: bytes, seed: int = 0) -> int:
    a = b = seed & _M
    c = 0x9E3779B97F4A7C13
    n = len(data)
    pos = 0
    while n - pos >= 24:
        a = (a + int.from_bytes(data[pos : pos + 8], "little")) & _M
        b = (b + int.from_bytes(data[pos + 8 : pos + 16], "little")) & _M
        c = (c + int.from_bytes(data[pos + 16 : pos + 24], "little")) & _M
        a, b, c = _mix(a, b, c)
        pos += 24
    c = (c + n) & _M
    for k, byte in enumerate(data[pos:]):
        if k < 8:
            a = (a + (byte << (8 * k))) & _M
        elif k < 16:
            b = (b + (byte << (8 * (k - 8)))) & _M
        else:
            # the lowest byte of c is reserved for the length
            c = (c + (byte << (8 * (k - 15)))) & _M
    a, b, c = _mix(a, b, c)
    return c


def darshan_hash(name: str | bytes) -> int:
    if isinstance(name, str):
        name = os.fsencode(name)
    return lookup8(name, 0)


def normalize_path(path: str, cwd: str) -> str:
    """Darshan's record-name normalization: relative -> cwd + '/' + path, collapse '//'
    and '/./' repeatedly; no '..' or symlink resolution; '<...>' names verbatim."""
    if path.startswith("<"):
        return path
    if not path.startswith("/"):
        path = cwd + "/" + path
    while "//" in path:
        path = path.replace("//", "/", 1)
    while "/./" in path:
        path = path.replace("/./", "/", 1)
    return path
