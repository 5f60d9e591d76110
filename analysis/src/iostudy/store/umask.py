"""The umask of everything a store write creates, whatever the caller's: IOSTUDY_STORE_UMASK
(octal), by default 027. The store holds every user's paths and command lines, so owner and
group only, as the logs themselves are kept."""

import contextlib
import os
import re

from iostudy.core.errors import BadInput

DEFAULT_UMASK = "027"


class StoreUmaskError(BadInput):
    """IOSTUDY_STORE_UMASK is not a umask; the message names the value."""


def store_umask() -> int:
    text = os.environ.get("IOSTUDY_STORE_UMASK", DEFAULT_UMASK)
    if not re.fullmatch(r"0*[0-7]{1,3}", text):
        raise StoreUmaskError(f"IOSTUDY_STORE_UMASK={text!r}: not an octal umask such as 027")
    return int(text, 8)


@contextlib.contextmanager
def store_umask_applied():
    """The store's umask for what the block creates."""
    umask = os.umask(store_umask())
    try:
        yield
    finally:
        os.umask(umask)
