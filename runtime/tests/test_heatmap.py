"""HEATMAP module: per-rank records heatmap:POSIX / heatmap:STDIO whose bins hold bytes.

Sum of the write (read) bins == bytes written (read) through that API; every heatmap of a log
has the same nbins and bin width; bytes only land in bins overlapped by the operations."""

from __future__ import annotations

import math
import os

import pytest
from rt_checks import record
from rt_hash import darshan_hash
from rt_run import Scenario, fs_block_size, real_tmp

from iostudy.logs.darshanlog import read_log

HM_IDS = {"POSIX": darshan_hash("heatmap:POSIX"), "STDIO": darshan_hash("heatmap:STDIO")}


def bins_sum(log, api, kind):
    hm = log["heatmaps"][api]
    return sum(sum(v) for v in hm[kind].values())


def module_bytes(log, module, counter):
    return sum(r["counters"][f"{module}_{counter}"] for r in log["records"].get(module, []))


def check_heatmap_structure(log, apis):
    recs = log["heatmap_records"]
    widths = {r["bin_width"] for r in recs}
    nbins = {r["nbins"] for r in recs}
    assert len(widths) == 1 and len(nbins) == 1, (
        f"heatmaps of one log must share nbins/bin_width: {sorted(nbins)} / {sorted(widths)}"
    )
    for api in apis:
        mine = [r for r in recs if r["id"] == HM_IDS[api]]
        assert [r["rank"] for r in mine] == [0], f"heatmap:{api} records: {mine}"
        assert log["name_records"].get(HM_IDS[api]) == f"heatmap:{api}"
        assert api in log["heatmaps"]
    assert all(r["rank"] != -1 for r in recs)
    assert all(r["nbins"] >= 1 and r["bin_width"] > 0 for r in recs)


def test_posix_write_heatmap(posix_write_run: Scenario):
    log = posix_write_run.log
    check_heatmap_structure(log, ["POSIX"])
    assert bins_sum(log, "POSIX", "write") == 2307044
    assert bins_sum(log, "POSIX", "read") == 0
    assert module_bytes(log, "POSIX", "BYTES_WRITTEN") == 2307044


def test_posix_read_heatmap(posix_read_run: Scenario):
    log = posix_read_run.log
    check_heatmap_structure(log, ["POSIX"])
    assert bins_sum(log, "POSIX", "read") == 76863
    assert bins_sum(log, "POSIX", "write") == 0


def test_stdio_heatmap(stdio_run: Scenario):
    log = stdio_run.log
    check_heatmap_structure(log, ["STDIO"])
    # s.txt 73 + s4.txt 8 + <STDOUT> 18 + <STDERR> 6 written; s.txt 69 + <STDIN> 20 read
    assert bins_sum(log, "STDIO", "write") == 105
    assert bins_sum(log, "STDIO", "read") == 89
    assert module_bytes(log, "STDIO", "BYTES_WRITTEN") == 105
    assert module_bytes(log, "STDIO", "BYTES_READ") == 89
    if "POSIX" in log["heatmaps"]:  # no POSIX data moved in this program
        assert bins_sum(log, "POSIX", "write") == 0
        assert bins_sum(log, "POSIX", "read") == 0


@pytest.fixture(scope="module")
def sleep_run(runner, tmp_path_factory) -> Scenario:
    d = real_tmp(tmp_path_factory, "heatmap_sleep")
    res = runner.instrumented([runner.bin("heatmap_sleep"), d], d).check()
    return Scenario(d, res, read_log(res.log), fs_block_size(d))


def nonzero_bins(bins):
    return [i for i, v in enumerate(bins) if v]


def test_sleep_heatmap_sums(sleep_run: Scenario):
    log = sleep_run.log
    check_heatmap_structure(log, ["POSIX", "STDIO"])
    assert bins_sum(log, "POSIX", "write") == 3000
    assert bins_sum(log, "POSIX", "read") == 3000
    assert bins_sum(log, "STDIO", "write") == 1200
    assert bins_sum(log, "STDIO", "read") == 0


def test_sleep_heatmap_bin_geometry(sleep_run: Scenario):
    log = sleep_run.log
    hm = log["heatmaps"]["POSIX"]
    width, nbins = hm["bin_width"], hm["nbins"]
    # Darshan: 0.1 s bins (doubling only once 200 bins are exceeded, i.e. after 20 s)
    assert width == pytest.approx(0.1)
    assert nbins <= 200
    assert log["heatmaps"]["STDIO"]["nbins"] == nbins
    assert log["heatmaps"]["STDIO"]["bin_width"] == width

    rec = record(log, "POSIX", os.path.join(sleep_run.dir, "hm.dat"))
    f = rec["fcounters"]
    w0, w1 = f["POSIX_F_WRITE_START_TIMESTAMP"], f["POSIX_F_WRITE_END_TIMESTAMP"]
    r0, r1 = f["POSIX_F_READ_START_TIMESTAMP"], f["POSIX_F_READ_END_TIMESTAMP"]
    assert w1 - w0 >= 0.45  # the two writes are separated by the sleep
    # the heatmap covers the whole I/O period
    assert nbins * width >= max(w1, r1) - 1e-9

    writes = nonzero_bins(hm["write"][0])
    reads = nonzero_bins(hm["read"][0])
    # bytes land only in bins overlapped by the operations
    assert writes and min(writes) >= math.floor(w0 / width)
    assert max(writes) <= math.floor(w1 / width)
    assert reads and min(reads) >= math.floor(r0 / width)
    assert max(reads) <= math.floor(r1 / width)
    # two bursts more than 4 bins apart
    assert max(writes) - min(writes) >= 4

    srec = record(log, "STDIO", os.path.join(sleep_run.dir, "hm.txt"))
    sf = srec["fcounters"]
    s0, s1 = sf["STDIO_F_WRITE_START_TIMESTAMP"], sf["STDIO_F_WRITE_END_TIMESTAMP"]
    swrites = nonzero_bins(log["heatmaps"]["STDIO"]["write"][0])
    assert swrites and min(swrites) >= math.floor(s0 / width)
    assert max(swrites) <= math.floor(s1 / width)
    assert max(swrites) - min(swrites) >= 4
