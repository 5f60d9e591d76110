"""How ReFrame writes a test case's parameters: in its display name and on its command line.
The checks and the campaign write them so. ReFrame's report keeps every variable's typed value
as a key of the case but does not say which are parameters: a campaign's run names them (its
effective config), and only a check run outside a campaign is known by its display name."""

from __future__ import annotations

import re

_DISPLAY_PARAMETER = re.compile(r"%\.?([\w.]+)=(\S+)")


def display_parameters(display_name: str) -> dict[str, str]:
    """The parameters a ReFrame test's display name shows, "%name=value" (a parameter) or
    "%.name=value" (a variable scanned with -P): {name: value}."""
    return dict(_DISPLAY_PARAMETER.findall(display_name))


def param_text(value) -> str:
    """A parameter value as ReFrame's command line and display names write it."""
    return str(value).lower() if isinstance(value, bool) else str(value)
