"""The ``diagnose`` command group (being moved here from ``iostudy.metrics.diagnose``)."""

from iostudy.metrics.diagnose import register

__all__ = ["register"]
