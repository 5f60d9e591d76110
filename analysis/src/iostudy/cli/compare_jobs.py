"""The ``compare-jobs`` command group (being moved here from ``iostudy.metrics.comparejobs``)."""

from iostudy.metrics.comparejobs import register

__all__ = ["register"]
