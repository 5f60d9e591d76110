"""Seed 001's component analysis: iostudy's netbw benchmark, what fio_check and netbw_check make
of their programs' output (iostudy.benchmarks.components), the device rate fio measures against
`dd oflag=direct` of the same size on the same target (an independent check), and the
components campaign run for real on local, ingested and reported with its ceiling model."""

from __future__ import annotations

import json
import re
import shutil
import statistics
import subprocess
from pathlib import Path

import benchmark_runs as bench
import campaign_runs as runs
import pandas as pd
import pytest
from blockdev import write_throttle

from iostudy.benchmarks import components
from iostudy.cli.cli import main
from iostudy.metrics import ceiling
from iostudy.store import store as store_mod

pytestmark = pytest.mark.campaign

MIB = 1 << 20


def fio_report(op="write", io_bytes=2 * 64 * MIB, bw=200 * MIB, error=0) -> dict:
    side = "read" if op == "read" else "write"
    return {
        "fio version": "fio-3.33",
        "jobs": [{"jobname": op, "error": error, side: {"io_bytes": io_bytes, "bw_bytes": bw}}],
    }


def test_fio_report_is_found_after_fio_notes_and_judged():
    text = "note: both iodepth >= 1 and synchronous I/O engine are selected\n" + json.dumps(
        fio_report()
    )
    report = components.fio_parse(text)
    assert components.fio_sanity(report, "write", 2, 64 * MIB) == []
    assert components.fio_performance(report, "write") == {"write_mib_s": (200.0, "MiB/s")}
    (record,) = components.fio_records(report, "write", 2, 4 * MIB)
    assert (record["aggregate_mib_s"], record["mib_s"], record["jobs"]) == (200.0, 100.0, 2)
    short = fio_report(io_bytes=64 * MIB, error=5)
    assert components.fio_sanity(short, "write", 2, 64 * MIB) == [
        "fio error 5",
        f"fio moved {64 * MIB} bytes, expected 2 x {64 * MIB}",
    ]
    with pytest.raises(ValueError, match="no fio JSON report"):
        components.fio_parse("fio: pid=1, err=2/file:filesetup.c")


def test_fio_arguments_ask_for_direct_io_and_a_sync_per_small_write(tmp_path):
    large = components.fio_arguments(tmp_path, "read", 2, "64M", "4M")
    assert {"--rw=read", "--bs=4M", "--direct=1", "--numjobs=2"} <= set(large)
    assert "--ioengine=psync" in large and not any(a.startswith("--iodepth") for a in large)
    small = components.fio_arguments(tmp_path, "syncwrite", 1, "4M", "64K")
    assert {"--rw=write", "--fsync=1", "--bs=64K"} <= set(small)
    queued = components.fio_arguments(tmp_path, "write", 1, "64M", "4M", iodepth=16)
    assert {"--ioengine=libaio", "--iodepth=16", "--fallocate=none"} <= set(queued)


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
def test_netbw_measures_every_size_and_its_perturbations(flavour):
    bench.require("netbw", flavour)
    res = bench.run("netbw", flavour, 2, "--min", "1K", "--max", "64K", "--seconds", "0.005")
    (line,) = bench.json_lines(res)
    # 1, 2, 4, ..., 64 KiB: 7 powers of two, each with 3 bytes less and more
    sizes = [p["bytes"] for p in line["points"]]
    assert sizes == [s + d for s in (1024 << k for k in range(7)) for d in (-3, 0, 3)]
    assert line["pairs"] == 1 and all(p["pair_mib_s"] > 0 for p in line["points"])
    # one pair: all pairs at once is that pair
    assert line["aggregate_mib_s"] == pytest.approx(
        max(p["aggregate_mib_s"] for p in line["points"])
    )
    assert components.netbw_sanity(line, 2) == []
    records = components.netbw_records(line, 2, 1)
    assert len(records) == 21 and {r["component"] for r in records} == {"network"}


@pytest.mark.parametrize(
    "nprocs, args, message",
    [
        (3, [], "3 ranks: netbw needs an even number of ranks"),
        (2, ["--min", "4M", "--max", "1M"], "--max 1048576 is smaller than --min 4194304"),
        (2, ["--perturb", "5000"], "--perturb 5000 is larger than 4096"),
        (2, ["--seconds", "0"], "--seconds '0' is not a number from 0.001 to 60"),
    ],
)
def test_netbw_refuses_bad_parameters(nprocs, args, message):
    bench.require("netbw", "openmpi")
    bench.check_usage_error(bench.run("netbw", "openmpi", nprocs, *args), "netbw", message)


THROTTLE_MIB_S = 100


def _run(argv: list[str], join) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, check=True, preexec_fn=join)


def _dd_seconds(dest, mib: int, *flags: str, join=None) -> float:
    argv = ["dd", "if=/dev/zero", f"of={dest}", "bs=4M", f"count={mib // 4}", *flags]
    return float(re.search(r"copied, ([0-9.e+-]+) s", _run(argv, join).stderr).group(1))


def _dd_direct_mib_s(target: Path, mib: int, join) -> float:
    """The device's rate as dd shows it writing mib MiB with O_DIRECT in 4 MiB blocks, then
    fsync: dd's own time, less the time it takes to read the zeros it writes (dd to
    /dev/null), which fio does not spend."""
    seconds = _dd_seconds(target / "dd.dat", mib, "oflag=direct", "conv=fsync", join=join)
    (target / "dd.dat").unlink()
    return mib / (seconds - _dd_seconds("/dev/null", mib))


def _fio_mib_s(target: Path, mib: int, join) -> float:
    args = components.fio_arguments(target / "fio", "write", 1, f"{mib}M", "4M")
    (target / "fio").mkdir(exist_ok=True)
    out = _run(["fio", *args], join)
    shutil.rmtree(target / "fio")
    return components.fio_mib_s(components.fio_parse(out.stdout), "write")


@pytest.mark.exclusive
def test_fio_device_rate_agrees_with_dd_oflag_direct(tmp_path):
    """The same 256 MiB written with O_DIRECT in 4 MiB requests to the same folder by fio and by
    dd, side by side five times (in turn first), the folder's device held to 100 MiB/s of writes:
    the median of the five fio/dd ratios within 15% (issue: component analysis), and fio's rate
    within 15% of the throttle's. Throttled because this machine's virtual disk drifts by a
    third within a second: unthrottled pairs measured from 0.79 to 1.45, medians of seven up to
    1.19 (a CI run failed so)."""
    if shutil.which("fio") is None:
        pytest.fail("fio not found: `make setup` installs Debian's fio (ci/apt-packages.txt)")
    ratios, fio_rates = [], []
    with write_throttle(tmp_path, THROTTLE_MIB_S) as join:
        for turn in range(5):
            if turn % 2:  # dd first every other time: a drift favours neither
                dd = _dd_direct_mib_s(tmp_path, 256, join)
                fio = _fio_mib_s(tmp_path, 256, join)
            else:
                fio = _fio_mib_s(tmp_path, 256, join)
                dd = _dd_direct_mib_s(tmp_path, 256, join)
            ratios.append(fio / dd)
            fio_rates.append(fio)
    assert 0.85 <= statistics.median(ratios) <= 1.15, ratios
    assert statistics.median(fio_rates) == pytest.approx(THROTTLE_MIB_S, rel=0.15), fio_rates


COMPONENTS = [
    {
        "check": "fio_check",
        "parameters": {
            "operation": ["write", "read", "syncwrite"],
            "jobs": [1, 2],
            "size": "16M",
            "block": ["4M", "64K"],
        },
        "exclude": [
            {"parameters": {"operation": "syncwrite", "block": "4M"}, "why": "small"},
            {"parameters": {"operation": "write", "block": "64K"}, "why": "large"},
            {"parameters": {"operation": "read", "block": "64K"}, "why": "large"},
            {"parameters": {"operation": "syncwrite", "jobs": 2}, "why": "one"},
        ],
    },
    {
        "check": "netbw_check",
        "parameters": {"procs": 2, "procs_per_node": 1, "max_size": "256K", "seconds": 0.005},
    },
    {
        "check": "iomodel_check",
        "parameters": {
            "size": "32M",
            "max_procs": 2,
            "procs_per_node": "system",
            "read_back": True,
        },
    },
]


@pytest.mark.exclusive
def test_components_campaign_runs_is_stored_and_sets_the_ceiling(configs_copy, tmp_path, capsys):
    """fio (write and read by 1 and 2 jobs, synced small writes), netbw and the I/O-model
    benchmark on local, for real; ingested; the report's components section and its verdict
    line (no IOR here: the view's; tests/test_ior_check.py runs it where there is one)."""
    if shutil.which("fio") is None:
        pytest.fail("fio not found: `make setup` installs Debian's fio (ci/apt-packages.txt)")
    bench.require("netbw", "openmpi")
    runs.write_campaign(configs_copy, "parts", COMPONENTS, environs=["openmpi"])
    status, out, run_dir = runs.run_campaign(capsys, "parts", "local", tmp_path / "results")
    assert status == 0, out[-3000:]
    store = tmp_path / "results" / "store"
    assert main(["ingest", str(run_dir), "--store", str(store)]) == 0
    rows = store_mod.connect(store).execute("SELECT * FROM components").df()
    storage = rows[rows["component"] == "storage"]
    assert sorted(zip(storage["operation"], storage["jobs"], strict=True)) == [
        ("read", 1),
        ("read", 2),
        ("syncwrite", 1),
        ("write", 1),
        ("write", 2),
    ]
    network = rows[rows["component"] == "network"]
    assert len(network) == 9 * 3  # 1 KiB to 256 KiB, each with +-3 bytes
    # the synced 64 KiB writes are slower than the large direct ones (seed 001: 5-8 against 600)
    rate = storage.set_index(["operation", "jobs"])["aggregate_mib_s"]
    assert rate[("syncwrite", 1)] < rate[("write", 1)]
    from iostudy.report import report

    index = report.build(store, "tests", tmp_path / "reports", results=tmp_path / "results")
    page = index.read_text()
    assert 'id="section-components"' in page
    for ident in ("network-local", "storage-local", "ceiling-local", "component-limits-local"):
        assert f'id="{ident}"' in page, ident
    verdict = json.loads((index.parent / "MANIFEST.json").read_text())["report"]["reasons"]
    # without the view's IOR there is no point to hold against the ceiling, and it says so;
    # the I/O models are in the table, those above the ceiling marked as the page cache's
    assert "local: not held against the ceiling: no IOR point on scratch" in " ".join(verdict)
    points = pd.read_csv(index.parent / "ceiling-fractions-local.csv")
    assert set(points["benchmark"]) == {"I/O model"} and (points["limited_by"] == "storage").all()
    limits = pd.read_csv(index.parent / "component-limits-local.csv")
    link = limits[limits["limit"] == "node link"]["source"]
    assert link.str.contains("netbw_check ran on one node only").all(), link
    above = points["ceiling_pct"] > 100
    assert (points.loc[above, "note"] == ceiling.ABOVE).all()
