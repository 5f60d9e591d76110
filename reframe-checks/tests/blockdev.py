"""Block devices for tests that need a target of their own or a slow one, for real (root): the
shared ci/kernel_limits.py (an ext4 file system on a loop device, the kernel's block throttle),
which make bench-compare uses too, importable from the tests beside this file."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "ci"))

from kernel_limits import MIB, LimitError, loop_filesystem, write_throttle  # noqa: E402

__all__ = ["MIB", "LimitError", "loop_filesystem", "write_throttle"]
