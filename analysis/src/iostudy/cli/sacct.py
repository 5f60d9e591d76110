"""The ``sacct`` command group (being moved here from ``iostudy.collect.sacct``)."""

from iostudy.collect.sacct import register

__all__ = ["register"]
