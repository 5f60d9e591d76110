"""`iostudy diagnose --json` as the diagnosis tests run it: through the command line, in the
test's process, its findings read back from the JSON it printed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from iostudy.cli.cli import main


def diagnose_json(store: Path, out: Path, limits: dict | None = None) -> list[dict]:
    """The findings of `iostudy diagnose --store STORE --json` (printed into ``out``), with the
    thresholds of ``limits`` (a diagnoses.json's rules; the others their defaults) when given."""
    args = ["diagnose", "--store", str(store), "--json"]
    if limits:
        config = out.with_suffix(".config.json")
        config.write_text(json.dumps({"rules": limits}))
        args += ["--config", str(config)]
    with open(out, "w") as f, pytest.MonkeyPatch.context() as mp:
        mp.setattr("sys.stdout", f)
        assert main(args) == 0
    return json.loads(out.read_text())
