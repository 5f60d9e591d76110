"""The ``ingest`` command group (being moved here from ``iostudy.store.ingest``)."""

from iostudy.store.ingest import register

__all__ = ["register"]
