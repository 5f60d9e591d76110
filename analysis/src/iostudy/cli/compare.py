"""The ``compare`` command group (being moved here from ``iostudy.metrics.compare``)."""

from iostudy.metrics.compare import register

__all__ = ["register"]
