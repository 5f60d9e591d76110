"""Heavy libraries imported at their first use, not when a module that uses them is imported.

``pd = deferred("pandas")`` at the top of a module stands for ``import pandas as pd``: the name
is a module object whose first attribute lookup imports the library (an ordinary, whole
import) and takes its names, so later lookups cost what a module's cost. A command's ``--help``,
shell completion and the workflow's parse then start without pandas, numpy, DuckDB, PyArrow,
matplotlib or PyDarshan (over a second); a command that computes imports each as it first
touches it. Modules that use one in annotations import ``annotations`` from ``__future__``, so
that a signature does not touch it."""

import importlib
import types


class _Deferred(types.ModuleType):
    def __getattr__(self, name: str):
        module = importlib.import_module(self.__name__)
        # the library's names become this object's: found without this method from now on
        self.__dict__.update(module.__dict__)
        return getattr(module, name)


def deferred(name: str) -> types.ModuleType:
    """The module ``name``, imported at its first attribute lookup."""
    return _Deferred(name)
