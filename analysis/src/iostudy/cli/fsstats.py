"""The ``fsstats`` command group (being moved here from ``iostudy.collect.fsstats``)."""

from iostudy.collect.fsstats import register

__all__ = ["register"]
