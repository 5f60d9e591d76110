"""The ``offline`` command group (being moved here from ``iostudy.benchmarks.offline``)."""

from iostudy.benchmarks.offline import register

__all__ = ["register"]
