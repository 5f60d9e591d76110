"""The ``schedule`` command group (being moved here from ``iostudy.run.schedule``)."""

from iostudy.run.schedule import register

__all__ = ["register"]
