"""Help texts as a terminal shows them: a module docstring written in reST becomes a command's
description without its markup (``literal``, `name`, :mod:`x`, **strong**)."""

import re


def plain(text: str) -> str:
    text = re.sub(r":\w+:`([^`]+)`", r"\1", text)
    text = re.sub(r"``([^`]+)``", r"\1", text)
    text = re.sub(r"`([^`]+)`", r"\1", text)
    return re.sub(r"\*\*([A-Za-z][^*\n]*)\*\*", r"\1", text)
