"""`iostudy log summary` on real logs, and its error handling."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

from iostudy import __version__
from iostudy.cli.cli import main
from iostudy.logs.darshanlog import read_log
from iostudy.logs.summary import summarize


def test_summary_figures(release_log):
    s = summarize(read_log(release_log))
    assert (s["jobid"], s["nprocs"], s["log_ver"]) == (3171794, 4, "3.41")
    assert s["start"] == "2025-11-08T02:44:45+00:00"
    posix, stdio, mpiio = s["modules"]
    assert [m["name"] for m in s["modules"]] == ["POSIX", "STDIO", "MPI-IO"]
    assert (posix["records"], posix["bytes_read"], posix["bytes_written"]) == (1, 2**26, 2**26)
    assert (posix["reads"], posix["writes"], posix["opens"]) == (4, 4, 16)
    (top,) = posix["top_files"]
    assert top["name"] == "/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat"
    assert top["sharing"] == "N:1"
    assert (stdio["bytes_written"], stdio["top_files"][0]["nranks"]) == (322, 1)
    assert mpiio["opens"] == 8
    assert set(s["other_modules"]) == {"LUSTRE", "HEATMAP"}
    assert s["heatmaps"]["POSIX"] == {"nbins": 1, "bin_width": 0.1, "nranks": 4}


def test_summary_text(release_log, capsys):
    assert main(["log", "summary", str(release_log)]) == 0
    out = capsys.readouterr().out
    for expected in ("3171794", "nprocs", "lib_ver", "romio_no_indep_rw", "POSIX: 1 records"):
        assert expected in out
    assert "64 MiB" in out and "<STDOUT>" in out


def test_summary_text_flags_partial_module(darshan_logs, capsys):
    log = darshan_logs / "partial_data_stdio/partial_data_stdio.darshan"
    assert main(["log", "summary", "--top", "2", str(log)]) == 0
    out = capsys.readouterr().out
    assert "STDIO: 1022 records" in out and "PARTIAL" in out


def test_summary_json(release_log, capsys):
    assert main(["log", "summary", "--json", str(release_log)]) == 0
    s = json.loads(capsys.readouterr().out)
    assert s["jobid"] == 3171794 and s["metadata"]["lib_ver"] == "3.5.0"


def test_bad_log_is_one_error_line_and_exit_2(release_log, tmp_path, capsys):
    bad = tmp_path / "cut.darshan"
    bad.write_bytes(release_log.read_bytes()[:1500])
    assert main(["log", "summary", str(bad)]) == 2
    captured = capsys.readouterr()
    assert captured.out == ""
    (line,) = captured.err.splitlines()
    assert line.startswith("iostudy: error: cannot read log") and str(bad) in line


def test_several_logs_each_summarised_a_bad_one_named(release_log, darshan_logs, tmp_path, capsys):
    """`log summary A BAD B`: A and B summarised in order, BAD one error line, exit 2."""
    other = darshan_logs / "partial_data_stdio/partial_data_stdio.darshan"
    bad = tmp_path / "cut.darshan"
    bad.write_bytes(release_log.read_bytes()[:1500])
    assert main(["log", "summary", str(release_log), str(bad), str(other)]) == 2
    captured = capsys.readouterr()
    assert 0 <= captured.out.index("3171794") < captured.out.index("STDIO: 1022 records")
    (line,) = captured.err.splitlines()
    assert line.startswith("iostudy: error: cannot read log") and str(bad) in line
    assert main(["log", "summary", "--json", str(release_log), str(other)]) == 0
    first, second = json.loads(capsys.readouterr().out)
    assert first["jobid"] == 3171794 and second["path"] == str(other)


def test_console_script_exit_status(tmp_path):
    missing = tmp_path / "missing.darshan"
    # The `iostudy` entry point installed beside this interpreter (make setup installs it).
    cmd = [Path(sys.executable).with_name("iostudy"), "log", "summary", str(missing)]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    assert proc.returncode == 2
    assert proc.stderr == f"iostudy: error: cannot read log {missing}: no such file\n"


def test_version(capsys):
    with pytest.raises(SystemExit) as exit_:
        main(["--version"])
    assert exit_.value.code == 0
    assert capsys.readouterr().out.strip() == f"iostudy {__version__}"
