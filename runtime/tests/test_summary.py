"""PyDarshan's own report renders an HTML summary from logs written by the runtime."""

from __future__ import annotations

import html
import os
import subprocess
import sys

import pytest
from rt_run import Scenario


@pytest.mark.parametrize("scenario", ["posix_write_run", "stdio_run"])
def test_darshan_summary_html(request, tmp_path, scenario):
    s: Scenario = request.getfixturevalue(scenario)
    out = tmp_path / "summary.html"
    env = {k: v for k, v in os.environ.items() if k != "LD_PRELOAD"}
    env["MPLBACKEND"] = "Agg"
    proc = subprocess.run(
        [sys.executable, "-m", "darshan", "summary", str(s.result.log), "--output", str(out)],
        capture_output=True,
        text=True,
        env=env,
        cwd=tmp_path,
        timeout=300,
    )
    assert proc.returncode == 0, f"darshan summary failed:\n{proc.stdout}\n{proc.stderr}"
    assert "Traceback" not in proc.stderr, proc.stderr
    assert out.is_file()
    assert out.stat().st_size > 10 * 1024
    text = out.read_text(errors="replace")
    exe = s.log["exe"]
    assert exe in text or html.escape(exe) in text, "the command line is not in the report"
