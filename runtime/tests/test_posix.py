"""POSIX module: every counter determined by the programs' I/O patterns, compared exactly.

The expected values below are derived by hand from the call sequences documented at the top
of each program in programs/ (Darshan 3.5.0 semantics, see the brief in README.md):
offset = explicit offset for p* calls, else the tracked offset (0 at open, lseek result,
advanced by each access); last_byte = offset + bytes - 1 (0 after open/close);
SEQ: offset > last_byte; CONSEC: offset == last_byte + 1;
stride = offset - last_byte - 1 if offset > 0, offset > last_byte and last_byte != 0.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys

import pytest
from rt_checks import (
    POSIX_COUNTERS,
    POSIX_FCOUNTERS,
    U64,
    check_nonshared_rank_fields,
    check_posix_record,
    check_timers,
    common_slots,
    histogram,
    module_names,
    posix_expected,
    record,
)
from rt_hash import darshan_hash
from rt_run import Scenario, fs_block_size, real_tmp
from rt_strace import total, traced

from iostudy.logs.darshanlog import read_log

OC = {"OPEN": True, "READ": False, "WRITE": False, "CLOSE": True}  # open+close only


def not_aligned(offsets, block):
    return sum(1 for o in offsets if o % block)


def run_time(log):
    return log["job"]["run_time"]


# ---------------------------------------------------------------------------------------------
# posix_write: DIR/write.dat

WRITE_OFFSETS = [0, 100, 8192, 20000, 40960, 0, 100, 300, 500, 1048576, 4194304]
WRITE_SIZES = [100, 1000, 4096, 200, 4096, 100, 100, 100, 100, 2097152, 200000]


def write_expected(block):
    return posix_expected(
        block,
        OPENS=2,  # O_CREAT open + read-only reopen
        MODE=0o640,
        WRITES=11,  # the failing write/pwrite on the read-only fd are not counted
        SEEKS=3,
        FSYNCS=1,
        FDSYNCS=1,
        BYTES_WRITTEN=2307044,  # sum(WRITE_SIZES)
        MAX_BYTE_WRITTEN=4394303,  # 4194304 + 200000 - 1
        # consecutive: #3 (100 after 0..99) and #10 (100 after 0..99)
        CONSEC_WRITES=2,
        # all but #2 (offset 0 after open) and #9 (offset 0 after 45055)
        SEQ_WRITES=9,
        MEM_NOT_ALIGNED=1,  # buffer+1 in #10
        FILE_NOT_ALIGNED=not_aligned(WRITE_OFFSETS, block),
        **histogram("WRITE", WRITE_SIZES),
        # 100 (0..99) -> 100: stride 0; 8192: 7092; 20000: 7712; 40960: 20760; 0: -;
        # 100: 0; 300: 100; 500: 100; 1048576: 1047976; 4194304: 1048576
        **common_slots("STRIDE", [(100, 2), (1048576, 1), (1047976, 1), (20760, 1)]),
        # 100 x5, 4096 x2, then ties (count 1) ordered by value: 2097152, 200000
        **common_slots("ACCESS", [(100, 5), (4096, 2), (2097152, 1), (200000, 1)]),
    )


def test_write_record(posix_write_run: Scenario):
    s = posix_write_run
    name = os.path.join(s.dir, "write.dat")
    rec = record(s.log, "POSIX", name)
    assert rec["rank"] == 0
    check_posix_record(rec, write_expected(s.block), write_sizes=WRITE_SIZES, what=name)
    check_nonshared_rank_fields(rec, "POSIX", name)


def test_write_timers(posix_write_run: Scenario):
    s = posix_write_run
    rec = record(s.log, "POSIX", os.path.join(s.dir, "write.dat"))
    families = {"OPEN": True, "READ": False, "WRITE": True, "CLOSE": True}
    check_timers(rec, "POSIX", run_time(s.log), families, "write.dat")
    f = rec["fcounters"]
    # program order: first open < first write, last write < last close
    assert f["POSIX_F_OPEN_START_TIMESTAMP"] <= f["POSIX_F_WRITE_START_TIMESTAMP"]
    assert f["POSIX_F_WRITE_END_TIMESTAMP"] <= f["POSIX_F_CLOSE_END_TIMESTAMP"]
    assert f["POSIX_F_READ_TIME"] == 0
    assert 0 < f["POSIX_F_MAX_WRITE_TIME"] <= f["POSIX_F_WRITE_TIME"]
    assert f["POSIX_F_MAX_READ_TIME"] == 0


def test_write_only_expected_records(posix_write_run: Scenario):
    s = posix_write_run
    assert module_names(s.log, "POSIX") == [os.path.join(s.dir, "write.dat")]
    assert "STDIO" not in s.log["records"] or s.log["records"]["STDIO"] == []


def test_counter_names_are_darshan_3_5_layout(posix_write_run: Scenario):
    rec = record(posix_write_run.log, "POSIX", os.path.join(posix_write_run.dir, "write.dat"))
    assert list(rec["counters"]) == POSIX_COUNTERS
    assert list(rec["fcounters"]) == POSIX_FCOUNTERS
    mods = posix_write_run.log["modules"]
    assert mods["POSIX"]["ver"] == 4
    assert mods["POSIX"]["partial_flag"] is False


# ---------------------------------------------------------------------------------------------
# posix_read: DIR/read.dat (65536 bytes, created by the test)

READ_OFFSETS = [0, 1000, 8192, 16384, 20000, 65436, 65536, 101, 0]
READ_SIZES = [1000, 1000, 4096, 1024, 4097, 100, 0, 10, 65536]


def read_expected(block):
    return posix_expected(
        block,
        OPENS=2,
        READS=9,  # includes the read at EOF returning 0; not the failing pread
        SEEKS=3,
        BYTES_READ=76863,  # sum(READ_SIZES)
        MAX_BYTE_READ=65535,
        # consecutive: 1000 after 0..999, and the EOF read at 65536 after 65436..65535
        CONSEC_READS=2,
        # seq: 1000, 8192, 16384, 20000, 65436, 65536 (not 0, 101 after 65535, 0 after reopen)
        SEQ_READS=6,
        MEM_NOT_ALIGNED=1,  # buffer+1
        FILE_NOT_ALIGNED=not_aligned(READ_OFFSETS, block),
        **histogram("READ", READ_SIZES),  # 1024 -> 100_1K, 4097 -> 1K_10K, 0 -> 0_100
        # strides: 8192-1999-1=6192, 16384-12287-1=4096, 20000-17407-1=2592,
        # 65436-24096-1=41339; EOF read stride 0; all count 1 -> ordered by value
        **common_slots("STRIDE", [(41339, 1), (6192, 1), (4096, 1), (2592, 1)]),
        # 1000 x2; count-1 ties by value: 65536, 4097, 4096 (the 0-byte read is no access size)
        **common_slots("ACCESS", [(1000, 2), (65536, 1), (4097, 1), (4096, 1)]),
    )


def test_read_record(posix_read_run: Scenario):
    s = posix_read_run
    name = os.path.join(s.dir, "read.dat")
    rec = record(s.log, "POSIX", name)
    assert rec["rank"] == 0
    check_posix_record(rec, read_expected(s.block), read_sizes=READ_SIZES, what=name)
    check_nonshared_rank_fields(rec, "POSIX", name)


def test_read_timers(posix_read_run: Scenario):
    s = posix_read_run
    rec = record(s.log, "POSIX", os.path.join(s.dir, "read.dat"))
    families = {"OPEN": True, "READ": True, "WRITE": False, "CLOSE": True}
    check_timers(rec, "POSIX", run_time(s.log), families, "read.dat")
    f = rec["fcounters"]
    assert f["POSIX_F_OPEN_START_TIMESTAMP"] <= f["POSIX_F_READ_START_TIMESTAMP"]
    assert f["POSIX_F_READ_END_TIMESTAMP"] <= f["POSIX_F_CLOSE_END_TIMESTAMP"]
    assert 0 < f["POSIX_F_MAX_READ_TIME"] <= f["POSIX_F_READ_TIME"]
    assert f["POSIX_F_WRITE_TIME"] == 0


def test_read_only_expected_records(posix_read_run: Scenario):
    s = posix_read_run
    assert module_names(s.log, "POSIX") == [os.path.join(s.dir, "read.dat")]


# ---------------------------------------------------------------------------------------------
# posix_open: open variants, name normalization, exclusions


@pytest.fixture(scope="module")
def open_run(runner, tmp_path_factory) -> Scenario:
    d = real_tmp(tmp_path_factory, "posix_open")
    res = runner.instrumented([runner.bin("posix_open"), d], d).check()
    return Scenario(d, res, read_log(res.log), fs_block_size(d))


def open_expected_records(d):
    j = os.path.join
    return {
        j(d, "o_open.dat"): dict(OPENS=2, MODE=0o600),  # open + __open_2
        j(d, "o_open64.dat"): dict(OPENS=1, MODE=0o604),
        j(d, "o_creat.dat"): dict(OPENS=1, MODE=0o640),
        d: dict(OPENS=1, MODE=0),  # the directory opened for openat
        j(d, "o_openat.dat"): dict(OPENS=1, MODE=0o660),  # relative to the dirfd
        j(d, "o_abs_at.dat"): dict(OPENS=1, MODE=0o606),  # absolute path, dirfd ignored
        j(d, "rel_at.dat"): dict(OPENS=1, MODE=0o600),  # AT_FDCWD + relative
        d + "/sub/norm.dat": dict(OPENS=3, MODE=0o600),  # ./sub//, sub/./, DIR//sub/./
        d + "/sub/../dotdot.dat": dict(OPENS=1, MODE=0o600),  # '..' is not resolved
    }


def test_open_variants_records(open_run: Scenario):
    s = open_run
    expected = open_expected_records(s.dir)
    assert module_names(s.log, "POSIX") == sorted(expected)
    for name, counters in expected.items():
        rec = record(s.log, "POSIX", name)
        check_posix_record(rec, posix_expected(s.block, **counters), what=name)
        check_timers(rec, "POSIX", run_time(s.log), OC, name)


def test_open_excluded_and_failed_not_recorded(open_run: Scenario):
    names = list(open_run.log["name_records"].values())
    excluded = ("/etc/", "/dev/", "/usr/", "/bin/", "/boot/", "/lib/", "/opt/", "/sbin/")
    excluded += ("/sys/", "/proc/", "/var/")
    assert not [n for n in names if n.startswith(excluded)]
    assert os.path.join(open_run.dir, "missing/none.dat") not in names


# ---------------------------------------------------------------------------------------------
# posix_meta: stat family, dup family, fileno, rename, mmap, read/write switches


@pytest.fixture(scope="module")
def meta_run(runner, tmp_path_factory) -> Scenario:
    d = real_tmp(tmp_path_factory, "posix_meta")
    with open(os.path.join(d, "stat.dat"), "wb") as f:
        f.write(b"s" * 1234)
    with open(os.path.join(d, "untracked.dat"), "wb") as f:
        f.write(b"u")
    res = runner.instrumented([runner.bin("posix_meta"), d], d).check()
    return Scenario(d, res, read_log(res.log), fs_block_size(d))


def test_stat_family(meta_run: Scenario):
    s = meta_run
    name = os.path.join(s.dir, "stat.dat")
    rec = record(s.log, "POSIX", name)
    # stat, lstat, __xstat, __lxstat, fstatat, statx, fstat, __fxstat
    check_posix_record(rec, posix_expected(s.block, OPENS=1, STATS=8), what=name)
    check_timers(rec, "POSIX", run_time(s.log), OC, name)


def test_stat_of_missing_file_not_recorded(meta_run: Scenario):
    assert os.path.join(meta_run.dir, "missing.dat") not in meta_run.log["name_records"].values()


def test_stat_of_directory_not_recorded(meta_run: Scenario):
    # Darshan only counts stat calls on regular files (S_ISREG)
    assert meta_run.dir not in module_names(meta_run.log, "POSIX")


def test_dup_family(meta_run: Scenario):
    s = meta_run
    name = os.path.join(s.dir, "dup.dat")
    rec = record(s.log, "POSIX", name)
    exp = posix_expected(
        s.block,
        OPENS=4,  # open + dup + dup2 + dup3
        DUPS=3,
        MODE=0o644,
        WRITES=4,
        BYTES_WRITTEN=40,
        MAX_BYTE_WRITTEN=39,
        CONSEC_WRITES=3,  # offsets 10, 20, 30 (the descriptors share the offset)
        SEQ_WRITES=3,
        FILE_NOT_ALIGNED=not_aligned([0, 10, 20, 30], s.block),
        **histogram("WRITE", [10] * 4),
        **common_slots("ACCESS", [(10, 4)]),
    )
    check_posix_record(rec, exp, write_sizes=[10], what=name)
    check_timers(rec, "POSIX", run_time(s.log), dict(OC, WRITE=True), name)


def test_fileno(meta_run: Scenario):
    s = meta_run
    name = os.path.join(s.dir, "fileno.dat")
    rec = record(s.log, "POSIX", name)
    exp = posix_expected(
        s.block,
        OPENS=1,
        FILENOS=1,
        WRITES=1,
        BYTES_WRITTEN=3,
        MAX_BYTE_WRITTEN=2,
        **histogram("WRITE", [3]),
        **common_slots("ACCESS", [(3, 1)]),
    )
    check_posix_record(rec, exp, write_sizes=[3], what=name)
    # the fclose() closes the descriptor inside libc: no POSIX close is seen
    check_timers(rec, "POSIX", run_time(s.log), {"OPEN": True, "WRITE": True}, name)
    srec = record(s.log, "STDIO", name)
    assert srec["counters"]["STDIO_OPENS"] == 1
    assert srec["counters"]["STDIO_WRITES"] == 0


def test_rename(meta_run: Scenario):
    s = meta_run
    j = os.path.join
    a, b, c, a2 = (j(s.dir, n) for n in ("ren_a.dat", "ren_b.dat", "ren_c.dat", "ren_a2.dat"))
    expected = {
        a: posix_expected(
            s.block,
            OPENS=1,
            MODE=0o644,
            WRITES=1,
            BYTES_WRITTEN=7,
            MAX_BYTE_WRITTEN=6,
            RENAME_SOURCES=1,
            **histogram("WRITE", [7]),
            **common_slots("ACCESS", [(7, 1)]),
        ),
        b: posix_expected(
            s.block, RENAME_TARGETS=1, RENAME_SOURCES=1, RENAMED_FROM=darshan_hash(a)
        ),
        # renamed to twice (from ren_b, then from ren_a2): RENAMED_FROM keeps the first source
        c: posix_expected(s.block, RENAME_TARGETS=2, RENAMED_FROM=darshan_hash(b)),
        a2: posix_expected(s.block, OPENS=1, MODE=0o644, RENAME_SOURCES=1),
    }
    for name, exp in expected.items():
        rec = record(s.log, "POSIX", name)
        sizes = [7] if name == a else []
        check_posix_record(rec, exp, write_sizes=sizes, what=name)
    assert (record(s.log, "POSIX", b)["counters"]["POSIX_RENAMED_FROM"] & U64) == darshan_hash(a)


def test_rename_of_untracked_file_not_recorded(meta_run: Scenario):
    names = meta_run.log["name_records"].values()
    assert os.path.join(meta_run.dir, "untracked.dat") not in names
    # Darshan 3.5.0 returns early when the source has no record: no target record either
    assert os.path.join(meta_run.dir, "untracked_target.dat") not in names


def test_mmap(meta_run: Scenario):
    s = meta_run
    name = os.path.join(s.dir, "mmap.dat")
    rec = record(s.log, "POSIX", name)
    # two file mappings; the anonymous mapping has no file
    check_posix_record(rec, posix_expected(s.block, OPENS=1, MODE=0o600, MMAPS=2), what=name)


def test_read_write_switches(meta_run: Scenario):
    s = meta_run
    name = os.path.join(s.dir, "mix.dat")
    rec = record(s.log, "POSIX", name)
    exp = posix_expected(
        s.block,
        OPENS=2,
        MODE=0o600,
        WRITES=3,
        READS=2,
        SEEKS=2,  # the failing lseek(-10) is not counted
        STATS=1,  # fstat
        BYTES_WRITTEN=8292,
        BYTES_READ=8192,
        MAX_BYTE_WRITTEN=8191,
        MAX_BYTE_READ=8191,
        CONSEC_WRITES=1,  # write @4096 after 0..4095
        SEQ_WRITES=1,
        CONSEC_READS=1,  # read @4096 after 0..4095
        SEQ_READS=1,
        # W, R(1), W(2), R(3), close/reopen keeps the last type, W(4)
        RW_SWITCHES=4,
        FILE_NOT_ALIGNED=not_aligned([0, 4096, 0] + [0, 4096], s.block),
        **histogram("WRITE", [4096, 4096, 100]),
        **histogram("READ", [4096, 4096]),
        **common_slots("ACCESS", [(4096, 4), (100, 1)]),
    )
    check_posix_record(rec, exp, write_sizes=[4096, 100], read_sizes=[4096], what=name)
    check_timers(rec, "POSIX", run_time(s.log), dict(OC, READ=True, WRITE=True), name)


def test_close_resets_last_byte(meta_run: Scenario):
    s = meta_run
    name = os.path.join(s.dir, "closereset.dat")
    exp = posix_expected(
        s.block,
        OPENS=2,  # open + dup
        DUPS=1,
        MODE=0o644,
        WRITES=2,
        BYTES_WRITTEN=200,
        MAX_BYTE_WRITTEN=199,
        # write @0; close(dup) resets last_byte to 0; write @100: 100 > 0 is sequential,
        # 100 != 0 + 1 is not consecutive, and the stride is 0 after a reset
        SEQ_WRITES=1,
        CONSEC_WRITES=0,
        FILE_NOT_ALIGNED=not_aligned([0, 100], s.block),
        **histogram("WRITE", [100, 100]),
        **common_slots("ACCESS", [(100, 2)]),
    )
    check_posix_record(record(s.log, "POSIX", name), exp, write_sizes=[100], what=name)


def test_meta_only_expected_records(meta_run: Scenario):
    j = os.path.join
    d = meta_run.dir
    expected = [
        j(d, n)
        for n in (
            "stat.dat",
            "dup.dat",
            "fileno.dat",
            "ren_a.dat",
            "ren_b.dat",
            "ren_c.dat",
            "ren_a2.dat",
            "mmap.dat",
            "mix.dat",
            "closereset.dat",
        )
    ]
    assert module_names(meta_run.log, "POSIX") == sorted(expected)


# ---------------------------------------------------------------------------------------------
# posix_lfs: the *64 entry points (program built with _FILE_OFFSET_BITS=64)


@pytest.fixture(scope="module")
def lfs_run(runner, tmp_path_factory) -> Scenario:
    d = real_tmp(tmp_path_factory, "posix_lfs")
    res = runner.instrumented([runner.bin("posix_lfs"), d], d).check()
    return Scenario(d, res, read_log(res.log), fs_block_size(d))


def test_lfs_variants(lfs_run: Scenario):
    s = lfs_run
    name = os.path.join(s.dir, "lfs.dat")
    rec = record(s.log, "POSIX", name)
    exp = posix_expected(
        s.block,
        OPENS=1,  # open64
        MODE=0o644,
        WRITES=3,  # pwrite64 4096@0, pwritev64 2000@4096, write 100@6096
        READS=3,  # pread64 4096@0, preadv64 100@100, read 10@0
        SEEKS=2,  # lseek64
        STATS=3,  # stat64, lstat64, fstat64
        MMAPS=1,  # mmap64
        BYTES_WRITTEN=6196,
        BYTES_READ=4206,
        MAX_BYTE_WRITTEN=6195,
        MAX_BYTE_READ=4095,
        CONSEC_WRITES=2,
        SEQ_WRITES=2,
        RW_SWITCHES=1,
        FILE_NOT_ALIGNED=not_aligned([0, 4096, 6096, 0, 100, 0], s.block),
        **histogram("WRITE", [4096, 2000, 100]),
        **histogram("READ", [4096, 100, 10]),
        # 4096 x2 and 100 x2 (tie -> larger first), then 2000, 10
        **common_slots("ACCESS", [(4096, 2), (100, 2), (2000, 1), (10, 1)]),
    )
    check_posix_record(
        rec, exp, write_sizes=[4096, 2000, 100], read_sizes=[4096, 100, 10], what=name
    )
    for n, mode in (("lfs_creat.dat", 0o600), ("lfs_at.dat", 0o600)):
        name = os.path.join(s.dir, n)
        rec = record(s.log, "POSIX", name)
        check_posix_record(rec, posix_expected(s.block, OPENS=1, MODE=mode), what=name)


# ---------------------------------------------------------------------------------------------
# Darshan 3.5.0 detail: p* calls also move the offset Darshan tracks for read()/write()


def test_pwrite_moves_tracked_offset(runner, tmp_path_factory):
    d = real_tmp(tmp_path_factory, "posix_poffset")
    res = runner.instrumented([runner.bin("posix_poffset"), d], d).check()
    log = read_log(res.log)
    block = fs_block_size(d)
    name = os.path.join(d, "poff.dat")
    # write 100 @0; pwrite 100 @1000 (tracked offset becomes 1100); write 100 @1100
    exp = posix_expected(
        block,
        OPENS=1,
        MODE=0o644,
        WRITES=3,
        SEEKS=1,
        BYTES_WRITTEN=300,
        MAX_BYTE_WRITTEN=1199,
        SEQ_WRITES=2,
        CONSEC_WRITES=1,
        FILE_NOT_ALIGNED=not_aligned([0, 1000, 1100], block),
        **histogram("WRITE", [100] * 3),
        **common_slots("STRIDE", [(900, 1)]),
        **common_slots("ACCESS", [(100, 3)]),
    )
    check_posix_record(record(log, "POSIX", name), exp, write_sizes=[100], what=name)


# ---------------------------------------------------------------------------------------------
# _FORTIFY_SOURCE=2 builds (the default of several distributions) call checking variants


def test_fortified_open_2_and_read_chk(fortify_run: Scenario):
    s = fortify_run
    name = os.path.join(s.dir, "fort.dat")
    # __open_2(path, O_RDONLY); __read_chk 1000 @0
    exp = posix_expected(
        s.block,
        OPENS=1,
        READS=1,
        BYTES_READ=1000,
        MAX_BYTE_READ=999,
        **histogram("READ", [1000]),
        **common_slots("ACCESS", [(1000, 1)]),
    )
    check_posix_record(record(s.log, "POSIX", name), exp, read_sizes=[1000], what=name)


def test_fortified_pread_chk(fortify_run: Scenario):
    s = fortify_run
    name = os.path.join(s.dir, "fort_p.dat")
    # __open_2(path, O_RDONLY); __pread_chk 1000 @2000
    exp = posix_expected(
        s.block,
        OPENS=1,
        READS=1,
        BYTES_READ=1000,
        MAX_BYTE_READ=2999,
        SEQ_READS=1,
        FILE_NOT_ALIGNED=not_aligned([2000], s.block),
        **histogram("READ", [1000]),
        **common_slots("ACCESS", [(1000, 1)]),
    )
    check_posix_record(record(s.log, "POSIX", name), exp, read_sizes=[1000], what=name)


# ---------------------------------------------------------------------------------------------
# name records


@pytest.mark.parametrize(
    "scenario", ["posix_write_run", "posix_read_run", "stdio_run", "fortify_run"]
)
def test_name_record_ids_are_darshan_hashes(request, scenario):
    log = request.getfixturevalue(scenario).log
    bad = {rid: n for rid, n in log["name_records"].items() if darshan_hash(n) != rid}
    assert not bad, f"name record ids that are not the Darshan hash of the name: {bad}"
    for mod, recs in log["records"].items():
        for r in recs:
            assert r["id"] in log["name_records"], f"{mod} record {r['id']} has no name"
        assert log["raw_record_counts"].get(mod, 0) == len(recs), (
            f"{mod}: {log['raw_record_counts'].get(mod)} records in the log but only"
            f" {len(recs)} with a name"
        )
    for hm in log["heatmap_records"]:
        assert hm["id"] in (darshan_hash("heatmap:POSIX"), darshan_hash("heatmap:STDIO"))


# ---------------------------------------------------------------------------------------------
# posix_transfer: descriptors from fcntl and the mkstemp family, copies inside the kernel

SRC_BYTES = 8192
# what copy_file_range, sendfile and sendfile64 return in the program, in order
KERNEL_COPIES = [4096, 1000, 2000, 500, 50]
MKSTEMP_WRITES = {"ms-": 10, "mos-": 20, "mss-": 30, "moss-": 40, "ms64-": 50}


@pytest.fixture(scope="module")
def transfer_run(runner, tmp_path_factory) -> Scenario:
    d = real_tmp(tmp_path_factory, "posix_transfer")
    with open(os.path.join(d, "src.dat"), "wb") as f:
        f.write(os.urandom(SRC_BYTES))
    res = runner.instrumented([runner.bin("posix_transfer"), d], d).check()
    return Scenario(d, res, read_log(res.log), fs_block_size(d))


def counters(rec: dict, *names: str) -> dict:
    return {n: rec["counters"][f"POSIX_{n}"] for n in names}


def test_fcntl_dup_is_a_dup_and_its_fdopen_is_recorded(transfer_run: Scenario):
    """numpy.save's way: a descriptor dup'd by fcntl(F_DUPFD) and fdopen'd; its stdio writes
    are the file's (STDIO), and each fcntl dup is a POSIX dup; fcntl(F_GETFD) passes."""
    name = os.path.join(transfer_run.dir, "dupfd.dat")
    rec = record(transfer_run.log, "POSIX", name)
    assert counters(rec, "OPENS", "DUPS", "WRITES", "BYTES_WRITTEN") == {
        "OPENS": 4,
        "DUPS": 3,
        "WRITES": 1,
        "BYTES_WRITTEN": 100,
    }
    stdio = record(transfer_run.log, "STDIO", name)["counters"]
    assert (stdio["STDIO_FDOPENS"], stdio["STDIO_BYTES_WRITTEN"]) == (1, 5000)
    assert os.path.getsize(name) == 5100


def test_mkstemp_family(transfer_run: Scenario):
    """Each file the mkstemp family made (found in the folder, not in the log) has one record:
    one open, mode 0600, the bytes written to it."""
    made = {p: f for f in os.listdir(transfer_run.dir) for p in MKSTEMP_WRITES if f.startswith(p)}
    assert sorted(made) == sorted(MKSTEMP_WRITES)
    for prefix, file in made.items():
        rec = record(transfer_run.log, "POSIX", os.path.join(transfer_run.dir, file))
        assert counters(rec, "OPENS", "MODE", "WRITES", "BYTES_WRITTEN") == {
            "OPENS": 1,
            "MODE": 0o600,
            "WRITES": 1,
            "BYTES_WRITTEN": MKSTEMP_WRITES[prefix],
        }, file


def test_kernel_copies(transfer_run: Scenario):
    """copy_file_range and sendfile: the bytes are reads of the source and writes of the
    destinations, at the offsets the calls give (Darshan's offset rules, as for pread)."""
    j = lambda n: os.path.join(transfer_run.dir, n)  # noqa: E731
    log = transfer_run.log
    src = counters(record(log, "POSIX", j("src.dat")), "READS", "BYTES_READ", "MAX_BYTE_READ")
    assert src == {"READS": 5, "BYTES_READ": sum(KERNEL_COPIES), "MAX_BYTE_READ": 5095}
    wanted = {"cfr.dat": (2, 5096, 9191), "sf.dat": (2, 2500, 2499), "sf64.dat": (1, 50, 49)}
    for name, (writes, written, max_byte) in wanted.items():
        got = counters(record(log, "POSIX", j(name)), "WRITES", "BYTES_WRITTEN", "MAX_BYTE_WRITTEN")
        assert tuple(got.values()) == (writes, written, max_byte), name
    # the program's output is what it is without the runtime
    with open(j("src.dat"), "rb") as f:
        data = f.read()
    with open(j("cfr.dat"), "rb") as f:
        copy = f.read()
    assert copy[:4096] == data[:4096] and copy[8192:9192] == data[4096:5096]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)")
def test_kernel_copies_match_strace(runner, tmp_path):
    """The kernel's own count: the same program under strace, without the runtime; the bytes
    its copy_file_range and sendfile calls returned are the source's BYTES_READ above."""
    d = os.path.realpath(tmp_path)
    with open(os.path.join(d, "src.dat"), "wb") as f:
        f.write(os.urandom(SRC_BYTES))
    trace = os.path.join(d, "trace")
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            trace,
            "-e",
            "trace=copy_file_range,sendfile",
            runner.bin("posix_transfer"),
            d,
        ],
        check=True,
        timeout=60,
    )
    with open(trace) as f:
        returned = [int(line.rsplit("=", 1)[1]) for line in f if "= " in line]
    assert returned == KERNEL_COPIES


# ---------------------------------------------------------------------------------------------
# aio_ops: POSIX AIO, counted when the program collects each request (aio_return)

AIO_WRITES = [(0, 4096), (8192, 1000), (20000, 500), (30000, 64)]  # (offset, bytes)
AIO_READS = [(100, 2000), (0, 300)]


def test_aio(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    res = runner.instrumented([runner.bin("aio_ops"), d], d).check()
    log = read_log(res.log)
    rec = record(log, "POSIX", os.path.join(d, "aio.dat"))
    got = counters(
        rec,
        "OPENS",
        "WRITES",
        "BYTES_WRITTEN",
        "MAX_BYTE_WRITTEN",
        "READS",
        "BYTES_READ",
        "MAX_BYTE_READ",
    )
    assert got == {
        "OPENS": 1,
        "WRITES": len(AIO_WRITES),
        "BYTES_WRITTEN": sum(n for _, n in AIO_WRITES),
        "MAX_BYTE_WRITTEN": max(at + n - 1 for at, n in AIO_WRITES),
        "READS": len(AIO_READS),
        "BYTES_READ": sum(n for _, n in AIO_READS),
        "MAX_BYTE_READ": max(at + n - 1 for at, n in AIO_READS),
    }
    assert not log["modules"]["POSIX"]["partial_flag"]


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)")
def test_aio_matches_strace(runner, tmp_path):
    """The kernel's view: glibc's AIO threads do each request as one pread64/pwrite64 on the
    file (strace -y names it), at the offsets and sizes the test above expects."""
    d = os.path.realpath(tmp_path)
    trace = os.path.join(d, "trace")
    subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-y",
            "-o",
            trace,
            "-e",
            "trace=pread64,pwrite64",
            runner.bin("aio_ops"),
            d,
        ],
        check=True,
        timeout=60,
    )
    calls = {"pread64": [], "pwrite64": []}
    with open(trace) as f:
        for line in f:
            if "aio.dat>" in line and " = " in line:
                name = line.split()[1].split("(")[0]
                at = int(line.rsplit(", ", 1)[1].split(")")[0])
                calls[name].append((at, int(line.rsplit("= ", 1)[1])))
    assert sorted(calls["pwrite64"]) == sorted(AIO_WRITES)
    assert sorted(calls["pread64"]) == sorted(AIO_READS)


# ---------------------------------------------------------------------------------------------
# numpy.save and numpy.load: Python's own calls and a dup'd, fdopen'd stream

NUMPY_PROGRAM = """import sys, numpy
a = numpy.arange(1_000_000, dtype="f8")
numpy.save(sys.argv[1], a)
assert (numpy.load(sys.argv[1]) == a).all()
"""
NPY_HEADER, NPY_DATA = 128, 8_000_000  # numpy's format 1.0: a 128-byte header, then the array


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)")
def test_numpy_save_and_load_match_strace(runner, tmp_path):
    """numpy.save writes the header with Python's own write on the descriptor it opened (POSIX)
    and the array through a descriptor dup'd with fcntl(F_DUPFD_CLOEXEC) and fdopen'd (STDIO);
    numpy.load reads so too. The oracle is strace of the same program without the runtime: the
    POSIX counters are what the program's own calls on the descriptors it opened returned, the
    opens and dups are the openat and fcntl calls, and the array's bytes are the dup'd
    descriptors' writes (before the fcntl wrapper, numpy's 8 MB were missing)."""
    pytest.importorskip("numpy", reason="numpy is in analysis/requirements.lock")
    d = os.path.realpath(tmp_path)
    script, npy = os.path.join(d, "np_io.py"), os.path.join(d, "a.npy")
    with open(script, "w") as f:
        f.write(NUMPY_PROGRAM)
    res = runner.instrumented([sys.executable, script, npy], d).check()
    log = read_log(res.log)
    os.unlink(npy)
    calls = traced([sys.executable, script, npy], npy, "read,write")

    posix = record(log, "POSIX", npy)["counters"]
    writes, written = total(calls, ("write",), "open")
    reads, read = total(calls, ("read",), "open")
    assert (posix["POSIX_WRITES"], posix["POSIX_BYTES_WRITTEN"]) == (writes, written) == (1, 128)
    assert (posix["POSIX_READS"], posix["POSIX_BYTES_READ"]) == (reads, read)
    opens, dups = total(calls, ("openat",))[0], total(calls, ("fcntl",))[0]
    assert (posix["POSIX_OPENS"], posix["POSIX_DUPS"]) == (opens + dups, dups) == (4, 2)

    stdio = record(log, "STDIO", npy)["counters"]
    assert stdio["STDIO_FDOPENS"] == dups
    assert stdio["STDIO_BYTES_WRITTEN"] == total(calls, ("write",), "dup")[1] == NPY_DATA
    # stdio reads ahead of what fread returns: the kernel moved at least the array
    assert stdio["STDIO_BYTES_READ"] == NPY_DATA <= total(calls, ("read",), "dup")[1]
    assert os.path.getsize(npy) == NPY_HEADER + NPY_DATA
