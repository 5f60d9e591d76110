"""`make lint`'s structure checks catch what they are for: a fault planted in a small package
(a long function, a long module, a skipped formatter on code, a print or an argument parser
outside the command layer) makes them fail, naming the place; the same package without it
passes."""

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# the formatter's skip comment, written in parts so that this file holds none itself
SKIP = "# fmt: " + "skip"


def run_check(script: str, package: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(ROOT / "ci" / script), str(package)],
        capture_output=True,
        text=True,
        check=False,
    )


@pytest.fixture
def package(tmp_path):
    """A tiny package with a command layer and a library layer, both as the rules want."""
    (tmp_path / "cli").mkdir()
    (tmp_path / "core").mkdir()
    (tmp_path / "cli" / "show.py").write_text('def cmd_show(args):\n    print("ok")\n')
    (tmp_path / "core" / "units.py").write_text(
        'SIZES = {"KiB": 1024, "MiB": 1048576}  ' + SKIP + "\n\n\ndef twice(x):\n    return 2 * x\n"
    )
    return tmp_path


def test_a_clean_package_passes(package):
    for script in ("check_sizes.py", "check_commands.py"):
        result = run_check(script, package)
        assert result.returncode == 0, result.stderr
        assert " 0 " in result.stdout


def test_a_long_function_and_module_are_found(package):
    body = "".join(f"    x{i} = {i}\n" for i in range(61))
    (package / "core" / "long.py").write_text(
        "def long():\n" + body + "\n" * 540
    )  # 1 + 61 + 540 lines
    result = run_check("check_sizes.py", package)
    assert result.returncode == 1
    assert "function core/long.py:long: 62 lines (limit 60)" in result.stderr
    assert "module core/long.py: 602 lines (limit 600)" in result.stderr


def test_a_formatter_skip_on_code_is_found(package):
    (package / "core" / "packed.py").write_text(f"def f(a, b):\n    return (a,\n  b)  {SKIP}\n")
    result = run_check("check_sizes.py", package)
    assert result.returncode == 1
    assert f"{SKIP} on code, not a data table: core/packed.py:3" in result.stderr


def test_more_than_25_skips_on_data_are_found(package):
    tables = "".join(f"T{i} = [{i}]  {SKIP}\n" for i in range(25))
    (package / "core" / "tables.py").write_text(tables)  # 25 here and 1 in units.py
    result = run_check("check_sizes.py", package)
    assert result.returncode == 1
    assert f"26 '{SKIP}' in the package (limit 25)" in result.stderr


@pytest.mark.parametrize(
    "code, what",
    [
        ('print("done")\n', "print()"),
        ("import argparse\n", "argparse"),
        ("import sys\nsys.exit(2)\n", "sys.exit"),
        ('import sys\nsys.stderr.write("x")\n', "sys.stderr"),
        ('MESSAGE = "iostudy: error: bad"\n', '"iostudy: error"'),
    ],
)
def test_command_work_outside_the_cli_is_found(package, code, what):
    (package / "core" / "noisy.py").write_text(code)
    result = run_check("check_commands.py", package)
    assert result.returncode == 1
    assert f"core/noisy.py:{code.count(chr(10))}: {what} outside iostudy/cli" in result.stderr


def test_flushing_stderr_is_not_output(package):
    (package / "core" / "reader.py").write_text("import sys\nsys.stderr.flush()\n")
    assert run_check("check_commands.py", package).returncode == 0
