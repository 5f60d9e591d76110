"""Reading files that come from outside (manifests, reports, configs) without trusting them:
only regular files, never blocking (a FIFO or a device in a file's place is refused, not waited
on), and never more than a limit (a file that claims to be JSON may be any size)."""

from __future__ import annotations

import errno
import os
import stat

# Manifests, ReFrame reports and configs are kilobytes to a few megabytes.
DEFAULT_LIMIT = 64 << 20


def read_regular(path, limit: int = DEFAULT_LIMIT) -> bytes:
    """The content of path, which must be a regular file of at most limit bytes; OSError
    otherwise (EINVAL: not a regular file, EFBIG: over the limit), with the path."""
    fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise OSError(errno.EINVAL, "not a regular file", str(path))
        if st.st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        data = os.read(fd, limit + 1)
        while len(data) <= limit and (block := os.read(fd, limit + 1 - len(data))):
            data += block
        if len(data) > limit:  # grew while read
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return data
    finally:
        os.close(fd)


def read_text(path, limit: int = DEFAULT_LIMIT) -> str:
    """read_regular as UTF-8 text; UnicodeDecodeError (a ValueError) when it is not."""
    return read_regular(path, limit).decode("utf-8")
