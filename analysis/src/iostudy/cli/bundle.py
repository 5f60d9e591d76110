"""The ``export`` command group (being moved here from ``iostudy.store.bundle``)."""

from iostudy.store.bundle import register

__all__ = ["register"]
