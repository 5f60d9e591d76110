"""The interference probe (seed 004): iostudy.benchmarks.probe's tables, and real samples on local,
quiet and while another process writes heavily to the same storage, through the whole pipeline
(campaign run --ingest, the store's probes table, the report in a real browser)."""

import json
import shutil
import subprocess
import time
from datetime import datetime, timedelta

import numpy as np
import pandas as pd
import pytest

from iostudy.benchmarks import probe
from iostudy.cli.cli import main
from iostudy.report import probe_report
from iostudy.store import store

from . import chromium

pytestmark = pytest.mark.campaign

MIB = 1 << 20


def writer_rows(run_id, start, times, size=64 * MIB, system="local", per_target=2):
    return [
        {
            "run_id": run_id,
            "log_sha256": f"{run_id}-log",
            "system": system,
            "start": start,
            "writers": len(times),
            "writers_per_target": per_target,
            "targets": 1,
            "target": "scratch",
            "writer": w,
            "bytes": size,
            "write_time": t,
        }
        for w, t in enumerate(times)
    ]


def test_samples_variability_and_sweep_by_hand():
    t0 = datetime(2026, 11, 1)
    rows = writer_rows("a", t0, [1.0, 2.0]) + writer_rows("b", t0 + timedelta(hours=1), [1.0, 1.0])
    rows += writer_rows("c", t0, [0.5, 0.5, 0.5, 0.5], size=MIB, per_target=4)
    rows += writer_rows("d", t0, [1.0, 1.0, 1.0])[:2]  # a writer missing from the log
    samples = probe_report.samples(pd.DataFrame(rows))
    a, b, c, d = (samples[samples["run_id"] == r].iloc[0] for r in "abcd")
    # a: 128 MiB over the slowest writer's 2 s; writers at 32 and 64 MiB/s; imbalance 2
    assert a["aggregate_mib_s"] == 64 and a["mean_writer_mib_s"] == 48 and a["imbalance"] == 2
    assert b["aggregate_mib_s"] == 128 and b["imbalance"] == 1
    assert c["aggregate_mib_s"] == 8 and c["mean_writer_mib_s"] == 2
    assert not d["complete"] and np.isnan(d["aggregate_mib_s"])
    table = probe_report.variability(samples)
    row = table[(table["writers"] == 2)].iloc[0]
    assert row["samples"] == 2 and row["mean_mib_s"] == 96
    assert row["std_mib_s"] == pytest.approx(np.std([64, 128], ddof=1))
    assert row["cov_pct"] == pytest.approx(100 * np.std([64, 128], ddof=1) / 96)
    assert row["mean_imbalance"] == 1.5 and row["max_imbalance"] == 2
    sweep = probe_report.sweep(samples)
    pairs = zip(sweep["writers_per_target"], sweep["samples"], strict=True)
    assert sorted(pairs) == [(2, 2), (4, 1)]
    assert sweep.set_index("writers_per_target").loc[2, "aggregate_min"] == 64
    # the histogram takes the most sampled shape: the two 2-writer samples, not the sweep's one
    assert sorted(probe_report.histogram_samples(samples)["run_id"]) == ["a", "b"]
    assert probe_report.samples(pd.DataFrame()).empty


def test_parse_and_sanity():
    line = {
        "benchmark": "ioprobe",
        "writers": 2,
        "bytes_per_writer": MIB,
        "write_s": [0.1, 0.2],
        "aggregate_mib_s": 10.0,
        "mean_writer_mib_s": 7.5,
        "imbalance": 2.0,
    }
    parsed = probe.parse("an MPI notice\n" + json.dumps(line) + "\n")
    assert probe.sanity(parsed, 2, MIB) == []
    assert probe.performance(parsed)["imbalance"] == (2.0, "x")
    assert probe.sanity(parsed, 4, 2 * MIB) == [
        "2 writers, expected 4",
        f"{MIB} bytes per writer, expected {2 * MIB}",
        "write times [0.1, 0.2]: expected 4 positive ones",
    ]
    with pytest.raises(ValueError, match="no ioprobe JSON line"):
        probe.parse('{"benchmark": "iomodel"}\n')


class Hog:
    """Other processes writing heavily to the same storage: two dd loops, each writing 2 GiB in
    1 MiB calls and syncing it, again and again. (Direct writes of 64 KiB were not enough on a
    virtual disk whose host caches: the probe's bandwidth did not always drop.)"""

    def __init__(self, folder, writers=2):
        self.files = [folder / f"hog{k}" for k in range(writers)]
        self.procs = [
            subprocess.Popen(
                [
                    "sh",
                    "-c",
                    f"while :; do dd if=/dev/zero of={folder}/hog{k} "
                    "bs=1M count=2048 conv=fsync status=none || exit 1; done",
                ]
            )
            for k in range(writers)
        ]

    def stop(self):
        assert all(p.poll() is None for p in self.procs), "a competing writer died"
        for p in self.procs:
            p.terminate()
            p.wait(timeout=30)
        for f in self.files:  # 2 GiB each
            f.unlink(missing_ok=True)


def run_probe(configs, tmp_path, name, store_dir, capsys):
    campaign = {
        "name": name,
        "description": "test",
        "study": "probetest",
        "environs": ["openmpi"],
        "checks": [
            {
                "check": "probe_check",
                "repetitions": 4,
                "parameters": {"writers_per_target": 2, "size": "64M"},
            }
        ],
    }
    (configs / "campaigns" / f"{name}.json").write_text(json.dumps(campaign))
    results = tmp_path / "results"
    argv = ["campaign", "run", name, "--system", "local", "--results", str(results)]
    status = main(argv + ["--ingest", str(store_dir)])
    out = capsys.readouterr().out
    assert status == 0, out[-3000:]
    return out.strip().splitlines()[-1].rsplit("/", 1)[-1]


@pytest.mark.exclusive
def test_interference_shows_in_the_samples_and_the_report(configs_copy, tmp_path, capsys):
    """Four quiet samples, then four while two dd write to the same disk: the noisy ones have
    the lower bandwidth on average, and every sample an imbalance factor of at least 1. Not
    which run is the more imbalanced: on one disk and two cores the dd slow both writers alike,
    and the mean imbalance went either way (a CI run measured 1.09 quiet against 1.03 noisy,
    others the opposite), where the bandwidth fell four-fold every time. The report shows both
    runs' samples."""
    if shutil.which("chromium") is None:
        pytest.fail("chromium is not installed: apt-get install chromium (ci/apt-packages.txt)")
    store_dir = tmp_path / "store"
    quiet = run_probe(configs_copy, tmp_path, "quietprobe", store_dir, capsys)
    hog = Hog(tmp_path)
    time.sleep(1)  # the competing writers under way
    try:
        noisy = run_probe(configs_copy, tmp_path, "noisyprobe", store_dir, capsys)
    finally:
        hog.stop()
    con = store.connect(store_dir)
    probes = con.execute("SELECT * FROM probes").df()
    samples = probe_report.samples(probes)
    assert samples["complete"].all() and (samples["writers"] == 2).all()
    by_run = samples.groupby("run_id")[["imbalance", "aggregate_mib_s"]].mean()
    assert len(samples[samples["run_id"] == quiet]) == 4
    shown = by_run.to_string()
    assert (samples["imbalance"] >= 1).all(), shown
    assert by_run.loc[noisy, "aggregate_mib_s"] < by_run.loc[quiet, "aggregate_mib_s"], shown

    reports = tmp_path / "reports"
    argv = ["report", "build", "--store", str(store_dir), "--study", "probetest"]
    assert main(argv + ["--reports", str(reports), "--results", str(tmp_path / "results")]) == 0
    page = reports / "probetest" / "v1" / "index.html"
    html = page.read_text()
    assert html.count('id="probe-') == 4  # over time, histogram, Table I, sweep
    csv = pd.read_csv(page.parent / "probe-over-time.csv")
    assert set(csv["run_id"]) == {quiet, noisy} and len(csv) == 8
    assert csv["imbalance"].round(6).tolist() == samples["imbalance"].round(6).tolist()
    load = chromium.load(page.as_uri())
    assert not load.errors(), load.errors()
    # an interference study: its layout within the page budget; two campaigns of four
    # repetitions ran and passed, and nothing could fail (no reference that can, one earlier
    # run): not judged, never a PASS
    report = chromium.verdict_at_top(page)
    assert report["kind"] == "interference" and report["verdict"] == "NOT JUDGED", report
    assert report["reasons"][0].startswith("8 test cases ran and passed, "), report
    chromium.assert_within_budget(page)


def test_a_probe_larger_than_the_system_is_refused(configs_copy, tmp_path, capsys):
    """writers_per_target x the system's storage targets processes must fit its nodes: 32
    writers on each of testcluster's 2 targets (its volume's bricks), 64, cannot run on its 2
    nodes of 2 cores (refused before anything runs)."""
    point = {"check": "probe_check", "parameters": {"writers_per_target": [1, 32], "size": "1M"}}
    campaign = {"name": "bigprobe", "description": "test", "study": "probetest", "checks": [point]}
    (configs_copy / "campaigns" / "bigprobe.json").write_text(json.dumps(campaign))
    argv = ["campaign", "run", "bigprobe", "--system", "testcluster", "--dry-run"]
    assert main(argv + ["--results", str(tmp_path / "results")]) == 2
    err = capsys.readouterr().err
    assert "checks[0].parameters: procs 64 at 2 per node needs 32 nodes" in err, err
    assert not (tmp_path / "results").exists()
