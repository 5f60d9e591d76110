"""STDIO module: counters of programs/stdio_ops.c compared exactly (derivation in the
program's header comment).  Offsets for MAX_BYTE_* are the stream offset tracked from the
open (0), advanced by every read/write and set by fseek/fseeko/rewind."""

from __future__ import annotations

import os

import pytest
from rt_checks import (
    STDIO_COUNTERS,
    STDIO_FCOUNTERS,
    check_nonshared_rank_fields,
    check_posix_record,
    check_timers,
    compare_counters,
    module_names,
    posix_expected,
    record,
    stdio_expected,
)
from rt_hash import darshan_hash
from rt_run import Scenario, _scenario

ALL = {"OPEN": True, "READ": True, "WRITE": True, "CLOSE": True}


def test_stdio_program_output(stdio_run: Scenario):
    assert stdio_run.result.stdout == "value=42\nline\nabc\n"
    assert stdio_run.result.stderr == "err 7\n"


def test_stream_record(stdio_run: Scenario):
    s = stdio_run
    name = os.path.join(s.dir, "s.txt")
    rec = record(s.log, "STDIO", name)
    assert rec["rank"] == 0
    exp = stdio_expected(
        OPENS=1,
        # fwrite 50, fprintf 10, fputs 5, fputc 1, putc 1, vfprintf 2, fwrite 3 @0, fwrite 1 @100
        WRITES=8,
        BYTES_WRITTEN=73,
        MAX_BYTE_WRITTEN=100,  # the 1-byte fwrite after fseeko(100)
        FLUSHES=1,
        SEEKS=3,  # fseek, rewind, fseeko
        # fread 20 @0, fgets 40 @20, fgetc @60, getc @61, fscanf 7 @62
        READS=5,
        BYTES_READ=69,
        MAX_BYTE_READ=68,
    )
    compare_counters(rec, exp, what=name)
    check_timers(rec, "STDIO", s.log["job"]["run_time"], ALL, name)
    check_nonshared_rank_fields(rec, "STDIO", name)
    f = rec["fcounters"]
    assert f["STDIO_F_OPEN_START_TIMESTAMP"] <= f["STDIO_F_WRITE_START_TIMESTAMP"]
    assert f["STDIO_F_WRITE_START_TIMESTAMP"] <= f["STDIO_F_READ_START_TIMESTAMP"]
    assert f["STDIO_F_READ_END_TIMESTAMP"] <= f["STDIO_F_CLOSE_END_TIMESTAMP"]
    assert f["STDIO_F_WRITE_END_TIMESTAMP"] <= f["STDIO_F_CLOSE_END_TIMESTAMP"]


def test_counter_names_are_darshan_3_5_layout(stdio_run: Scenario):
    rec = record(stdio_run.log, "STDIO", os.path.join(stdio_run.dir, "s.txt"))
    assert list(rec["counters"]) == STDIO_COUNTERS
    assert list(rec["fcounters"]) == STDIO_FCOUNTERS
    assert stdio_run.log["modules"]["STDIO"]["ver"] == 2


def test_freopen(stdio_run: Scenario):
    s = stdio_run
    for n in ("s2.txt", "s3.txt"):
        name = os.path.join(s.dir, n)
        rec = record(s.log, "STDIO", name)
        compare_counters(rec, stdio_expected(OPENS=1), what=name)
        check_timers(rec, "STDIO", s.log["job"]["run_time"], {"OPEN": True}, name)


def test_fdopen(stdio_run: Scenario):
    s = stdio_run
    name = os.path.join(s.dir, "s4.txt")
    rec = record(s.log, "STDIO", name)
    exp = stdio_expected(OPENS=1, FDOPENS=1, WRITES=1, BYTES_WRITTEN=8, MAX_BYTE_WRITTEN=7)
    compare_counters(rec, exp, what=name)
    check_timers(rec, "STDIO", s.log["job"]["run_time"], dict(ALL, READ=False), name)
    # the underlying open() is a POSIX open; fwrite/fclose go through libc internals
    prec = record(s.log, "POSIX", name)
    check_posix_record(prec, posix_expected(s.block, OPENS=1, MODE=0o644), what=name)


def test_stdout(stdio_run: Scenario):
    s = stdio_run
    rec = record(s.log, "STDIO", "<STDOUT>")
    # printf "value=42\n" 9 @0, puts "line" 5 @9 (with its newline), fputs "abc\n" 4 @14
    exp = stdio_expected(WRITES=3, BYTES_WRITTEN=18, MAX_BYTE_WRITTEN=17, FLUSHES=1)
    compare_counters(rec, exp, skip={"STDIO_OPENS"}, what="<STDOUT>")
    check_timers(rec, "STDIO", s.log["job"]["run_time"], {"READ": False, "WRITE": True}, "out")


def test_stderr(stdio_run: Scenario):
    s = stdio_run
    rec = record(s.log, "STDIO", "<STDERR>")
    exp = stdio_expected(WRITES=1, BYTES_WRITTEN=6, MAX_BYTE_WRITTEN=5)
    compare_counters(rec, exp, skip={"STDIO_OPENS"}, what="<STDERR>")
    check_timers(rec, "STDIO", s.log["job"]["run_time"], {"READ": False, "WRITE": True}, "err")


def test_stdin(stdio_run: Scenario):
    s = stdio_run
    rec = record(s.log, "STDIO", "<STDIN>")
    # fgets "first line\n" 11 @0; vfscanf "%s %d" consumes "second 99" (ftell 11 -> 20)
    exp = stdio_expected(READS=2, BYTES_READ=20, MAX_BYTE_READ=19)
    compare_counters(rec, exp, skip={"STDIO_OPENS"}, what="<STDIN>")
    check_timers(rec, "STDIO", s.log["job"]["run_time"], {"READ": True, "WRITE": False}, "in")


def test_standard_stream_opens(stdio_run: Scenario):
    # Darshan 3.5.0 registers <STDIN>/<STDOUT>/<STDERR> at module initialisation as one open
    # each (with zero timestamps)
    for name in ("<STDIN>", "<STDOUT>", "<STDERR>"):
        rec = record(stdio_run.log, "STDIO", name)
        assert rec["counters"]["STDIO_OPENS"] == 1, name


def test_only_expected_records(stdio_run: Scenario):
    j = os.path.join
    d = stdio_run.dir
    stdio = [j(d, n) for n in ("s.txt", "s2.txt", "s3.txt", "s4.txt")]
    stdio += ["<STDIN>", "<STDOUT>", "<STDERR>"]
    assert module_names(stdio_run.log, "STDIO") == sorted(stdio)
    assert module_names(stdio_run.log, "POSIX") == [j(d, "s4.txt")]


def test_unused_standard_streams_dropped(posix_write_run: Scenario):
    # a program that never touches stdin/stdout/stderr has no records for them
    recs = posix_write_run.log["records"].get("STDIO", [])
    assert recs == []


# ---------------------------------------------------------------------------------------------
# _FORTIFY_SOURCE=2 builds call the checking variants (__printf_chk, __fread_chk, ...)


def test_fortified_printf_family(fortify_run: Scenario):
    s = fortify_run
    assert s.result.stdout == "fortified\nx=7\n"
    name = os.path.join(s.dir, "fort_out.txt")
    # __fprintf_chk "12345\n" 6 @0, __vfprintf_chk "ab" 2 @6
    exp = stdio_expected(OPENS=1, WRITES=2, BYTES_WRITTEN=8, MAX_BYTE_WRITTEN=7)
    compare_counters(record(s.log, "STDIO", name), exp, what=name)
    # __printf_chk "fortified\n" 10 @0, vprintf -> __vfprintf_chk(stdout) "x=7\n" 4 @10
    exp = stdio_expected(WRITES=2, BYTES_WRITTEN=14, MAX_BYTE_WRITTEN=13)
    compare_counters(record(s.log, "STDIO", "<STDOUT>"), exp, skip={"STDIO_OPENS"}, what="<STDOUT>")


def test_fortified_fread_fgets_chk(fortify_run: Scenario):
    s = fortify_run
    name = os.path.join(s.dir, "fort.txt")
    # __fread_chk 100 @0, __fgets_chk 50 @100
    exp = stdio_expected(OPENS=1, READS=2, BYTES_READ=150, MAX_BYTE_READ=149)
    compare_counters(record(s.log, "STDIO", name), exp, what=name)


def test_unlocked_forms(unlocked_run: Scenario):
    """glibc's _unlocked forms, which coreutils call (seq writes its output with
    fwrite_unlocked), and getline/getdelim (sed reads with them): counted like the other reads
    and writes (derivation in stdio_unlocked.c)."""
    s = unlocked_run
    assert s.result.stdout == "u\n"
    name = os.path.join(s.dir, "u.txt")
    exp = stdio_expected(
        OPENS=1,
        WRITES=4,
        BYTES_WRITTEN=17,
        MAX_BYTE_WRITTEN=16,
        READS=5,
        BYTES_READ=14,
        MAX_BYTE_READ=13,
        SEEKS=1,
    )
    compare_counters(record(s.log, "STDIO", name), exp, what=name)
    exp = stdio_expected(WRITES=2, BYTES_WRITTEN=2, MAX_BYTE_WRITTEN=1)
    compare_counters(record(s.log, "STDIO", "<STDOUT>"), exp, skip={"STDIO_OPENS"}, what="<STDOUT>")
    # getline "ab\n", getdelim "cd", __getdelim "\n", and getline at the end (not a read)
    name = os.path.join(s.dir, "l.txt")
    exp = stdio_expected(
        OPENS=1,
        WRITES=1,
        BYTES_WRITTEN=6,
        MAX_BYTE_WRITTEN=5,
        READS=3,
        BYTES_READ=6,
        MAX_BYTE_READ=5,
        SEEKS=1,
    )
    compare_counters(record(s.log, "STDIO", name), exp, what=name)


# ---------------------------------------------------------------------------------------------
# names: a log names its records and nothing else, whether they were kept in a memory-mapped
# log (finished in place at exit) or in the process's memory


@pytest.mark.parametrize("mmap_logs", ["1", "0"])
def test_idle_streams_leave_no_names(runner, tmp_path_factory, mmap_logs):
    def setup(d):
        open(os.path.join(d, "empty.dat"), "w").close()

    s = _scenario(
        runner,
        tmp_path_factory,
        f"idle-{mmap_logs}",
        "idle_streams",
        setup=setup,
        env_extra={"IOSTUDY_MMAP_LOGS": mmap_logs},
    )
    empty, written = (os.path.join(s.dir, n) for n in ("empty.dat", "w.dat"))
    assert module_names(s.log, "STDIO") == [empty]
    # fileno is a POSIX open of the stream's descriptor; fflush(stdout) moved nothing
    assert module_names(s.log, "POSIX") == sorted([empty, written, "<STDERR>"])
    # the 5 bytes written are the only bytes moved: one heatmap, POSIX's
    expected = {empty, written, "<STDERR>", "heatmap:POSIX"}
    assert sorted(s.log["name_records"].values()) == sorted(expected)
    assert set(s.log["name_records"]) == {darshan_hash(n) for n in expected}
