"""The ``report`` command group (being moved here from ``iostudy.report.report``)."""

from iostudy.report.report import register

__all__ = ["register"]
