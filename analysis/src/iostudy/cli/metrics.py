"""The ``metrics`` command group (being moved here from ``iostudy.metrics.metrics``)."""

from iostudy.metrics.metrics import register

__all__ = ["register"]
