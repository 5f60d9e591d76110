"""The ``trust`` command group (being moved here from ``iostudy.store.siteid``)."""

from iostudy.store.siteid import register

__all__ = ["register"]
