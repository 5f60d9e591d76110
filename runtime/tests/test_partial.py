"""Running out of record memory: the log stays readable, the module is flagged partial,
the records that were kept are correct, and the program is not affected."""

from __future__ import annotations

import os
import re

import pytest

from iostudy.logs.darshanlog import read_log

NFILES = 500


def run_many(runner, tmp_path, env_extra, *again):
    d = os.path.realpath(tmp_path)
    cmd = [runner.bin("many_files"), d, str(NFILES), *again]
    inst = runner.instrumented(cmd, d, env_extra=env_extra)
    plain = runner.plain(cmd)
    assert inst.returncode == plain.returncode == 0, inst.describe()
    assert inst.stdout == plain.stdout == f"done {NFILES}\n"
    assert inst.stderr == plain.stderr == "", inst.describe()
    return d, read_log(inst.log)


def check_kept_records(d, log, opens=1):
    """The number of POSIX records, each checked: a file of the program, opened opens times,
    each time written 10 bytes, the next 10."""
    pat = re.compile(re.escape(d) + r"/many_(\d{3})\.dat")
    recs = log["records"].get("POSIX", [])
    for r in recs:
        name = log["name_records"][r["id"]]
        assert pat.fullmatch(name), name
        c = r["counters"]
        assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (
            opens,
            opens,
            10 * opens,
        )
        assert c["POSIX_MAX_BYTE_WRITTEN"] == 10 * opens - 1
    # no record lost its name
    assert log["raw_record_counts"].get("POSIX", 0) == len(recs)
    return len(recs)


def test_default_memory_holds_all_records(runner, tmp_path):
    d, log = run_many(runner, tmp_path, None)
    assert check_kept_records(d, log) == NFILES
    assert log["modules"]["POSIX"]["partial_flag"] is False


@pytest.mark.parametrize(
    "env_extra",
    [{"DARSHAN_MODMEM": "0.05"}, {"DARSHAN_NAMEMEM": "0.01"}],
    ids=["modmem", "namemem"],
)
def test_memory_exhausted_is_partial(runner, tmp_path, env_extra):
    d, log = run_many(runner, tmp_path, env_extra)
    assert "POSIX" in log["modules"], log["modules"]
    assert log["modules"]["POSIX"]["partial_flag"] is True
    kept = check_kept_records(d, log)
    assert 0 < kept < NFILES
    # Darshan feeds the heatmap from tracked records only (10 bytes per kept file); accept
    # anything between that and all bytes the program wrote
    if "POSIX" in log["heatmaps"]:
        total = sum(sum(v) for v in log["heatmaps"]["POSIX"]["write"].values())
        assert 10 * kept <= total <= 10 * NFILES


def test_kept_files_count_after_memory_is_spent(runner, tmp_path):
    """Once no record can be made, a file that has one is still found, under another spelling
    of its path (a new name to the runtime: normalized, then looked up), and counts its second
    open and write; the files without one stay without."""
    d, log = run_many(runner, tmp_path, {"DARSHAN_MODMEM": "0.05"}, "again")
    assert log["modules"]["POSIX"]["partial_flag"] is True
    assert 0 < check_kept_records(d, log, opens=2) < NFILES
