"""The logic of the mdtest and metarates checks (iostudy.benchmarks.checks), on real output:
mdtest's captured in data/mdtest/ (see data/README.md), metarates' from a run of the CMake build."""

import re
import subprocess
from pathlib import Path

import pytest
from benchmark_runs import binary, launcher, require, run_env

from iostudy.benchmarks import benchparse, checks

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "mdtest"


def test_mdtest_arguments():
    assert checks.mdtest_arguments(100, 3, Path("d")) == ["-n", "100", "-i", "3", "-u", "-d", "d"]


@pytest.mark.exclusive
def test_mdtest_sanity_and_performance_of_a_real_run():
    text = (DATA / "mdtest-unique.txt").read_text()  # 2 tasks, -n 20, -i 2
    parsed = benchparse.mdtest_text(text)
    assert checks.mdtest_sanity(parsed, 2, 20, 2) == []
    problems = checks.mdtest_sanity(parsed, 4, 10, 3)
    assert "2 tasks, expected 4" in problems and "2 iterations, expected 3" in problems
    perf = checks.mdtest_performance(parsed)
    for op, name in checks.MDTEST_PERF.items():
        # the Mean column of the operation's SUMMARY rate line, read from the raw text
        line = re.search(rf"^\s+{op}\s+(\S+)\s+(\S+)\s+(\S+)", text, re.M)
        assert perf[name] == pytest.approx(float(line.group(3)))


@pytest.mark.exclusive
def test_metarates_sanity_and_performance_of_a_real_run(tmp_path):
    flavour = require("metarates", "openmpi")
    cmd = launcher(flavour, 2) + [str(binary("metarates", flavour))]
    cmd += checks.metarates_arguments(10, tmp_path / "md")
    out = subprocess.run(cmd, env=run_env(), capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    lines = checks.metarates_lines(out.stdout)
    assert checks.metarates_sanity(lines, 2, 10) == []
    assert checks.metarates_sanity(lines, 4, 10)  # 20 ops where 40 were expected
    perf = checks.metarates_performance(lines)
    assert set(perf) == {"create_ops_s", "stat_ops_s", "utime_ops_s", "remove_ops_s"}
    assert perf["create_ops_s"] == lines[0]["rate_ops_s"] > 0
