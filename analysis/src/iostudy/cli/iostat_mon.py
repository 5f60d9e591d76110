"""The ``iostat-mon`` command group (being moved here from ``iostudy.collect.iostatmon``)."""

from iostudy.collect.iostatmon import register

__all__ = ["register"]
