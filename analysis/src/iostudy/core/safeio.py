"""Reading files that come from outside (manifests, reports, configs) without trusting them:
only regular files, never blocking (a FIFO or a device in a file's place is refused, not waited
on), and never more than a limit (a file that claims to be JSON may be any size)."""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from iostudy.core.errors import Failed

# Manifests, ReFrame reports and configs are kilobytes to a few megabytes.
DEFAULT_LIMIT = 64 << 20


@contextlib.contextmanager
def open_regular(path, follow: bool = True):
    """A file descriptor of path while the context lasts, opened without blocking (a FIFO's
    open would wait for a writer) and, unless ``follow``, without following a symbolic link;
    OSError with the path unless it is a regular file (ELOOP: a link not followed, EINVAL: a
    FIFO, device, socket or folder)."""
    flags = os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC | (0 if follow else os.O_NOFOLLOW)
    fd = os.open(path, flags)
    try:
        mode = os.fstat(fd).st_mode
        if not stat.S_ISREG(mode):
            what = f"not a regular file (mode {stat.filemode(mode)})"
            raise OSError(errno.EINVAL, what, str(path))
        yield fd
    finally:
        os.close(fd)


def read_regular(path, limit: int = DEFAULT_LIMIT) -> bytes:
    """The content of path, which must be a regular file of at most limit bytes; OSError
    otherwise (EINVAL: not a regular file, EFBIG: over the limit), with the path."""
    with open_regular(path) as fd:
        if os.fstat(fd).st_size > limit:
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        data = os.read(fd, limit + 1)
        while len(data) <= limit and (block := os.read(fd, limit + 1 - len(data))):
            data += block
        if len(data) > limit:  # grew while read
            raise OSError(errno.EFBIG, f"larger than {limit} bytes", str(path))
        return data


def read_text(path, limit: int = DEFAULT_LIMIT) -> str:
    """read_regular as UTF-8 text; UnicodeDecodeError (a ValueError) when it is not."""
    return read_regular(path, limit).decode("utf-8")


class NoSpace(Failed):
    """A write found its file system full (or the user's quota used up); the message names the
    folder."""


# what a full device looks like from Python's writes and from PyArrow's (no errno in its errors)
_FULL = (errno.ENOSPC, errno.EDQUOT)


@contextlib.contextmanager
def space_in(folder):
    """Turns a write error of a full file system inside the block into NoSpace naming
    ``folder``, the folder the block writes into."""
    try:
        yield
    except OSError as exc:
        if exc.errno in _FULL or "No space left on device" in str(exc):
            raise NoSpace(f"no space left in {folder}: free some, or point it elsewhere") from None
        raise
