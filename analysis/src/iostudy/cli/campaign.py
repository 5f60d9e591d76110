"""The ``campaign`` command group (being moved here from ``iostudy.run.campaign``)."""

from iostudy.run.campaign import register

__all__ = ["register"]
