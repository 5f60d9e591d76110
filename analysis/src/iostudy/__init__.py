"""iostudy: analysis side of the HPC I/O-study harness."""

from importlib.metadata import version

__version__ = version("iostudy")
