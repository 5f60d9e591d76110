"""The ``spack`` command group (being moved here from ``iostudy.benchmarks.spackenv``)."""

from iostudy.benchmarks.spackenv import register

__all__ = ["register"]
