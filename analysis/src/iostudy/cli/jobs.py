"""The ``jobs`` command group (being moved here from ``iostudy.metrics.jobstats``)."""

from iostudy.metrics.jobstats import register

__all__ = ["register"]
