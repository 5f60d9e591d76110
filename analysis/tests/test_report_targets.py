"""The report's per-target tables of seed 004 on a GlusterFS volume: the probe's (each brick's
writers) and adaptive I/O's (what each brick got, and whether the competing writer's file was
named onto it), from hand-made store rows beside the quick study of reportdata, rendered and
loaded in Chromium, where each table fits its box (IOSTUDY_SCREENSHOTS keeps the sections'
pictures). The rows of a real run on the volume: ci/tests/test_cluster_adaptive.py and
test_cluster_probe.py."""

from __future__ import annotations

import io
import json
import os
from pathlib import Path

import pandas as pd
import pytest

from iostudy.report import adaptive_report, report

from . import chromium, reportdata

MIB = 1 << 20
RUN = reportdata.RUNS[1][0]  # the testcluster run
BRICKS = ["n1-disk", "n2-disk"]


def adaptive_run(mode, interference, writers, times, size=2 * MIB, loaded=("n1-disk",)):
    """One adaptive.jsonl row of 8 writers on the two bricks (writers: per brick)."""
    return {
        "run_id": RUN,
        "system": "testcluster",
        "mode": mode,
        "adapt": mode == "adaptive",
        "interference": interference,
        "writers": 8,
        "targets": 2,
        "nodes": 2,
        "bytes_per_writer": size,
        "bytes": 8 * size,
        "seconds": max(times),
        "mib_s": 8 * size / MIB / max(times),
        "moves": 1 if mode == "adaptive" else 0,
        "target_s": json.dumps(times),
        "writers_per_target": json.dumps(writers),
        "target_names": json.dumps(BRICKS),
        "interferer_targets": json.dumps(list(loaded)) if interference else None,
    }


ADAPTIVE = [
    adaptive_run("adaptive", False, [4, 4], [0.5, 0.25]),
    adaptive_run("adaptive", True, [3, 5], [1.0, 0.5]),
    adaptive_run("mpiio", False, [8, 0], [1.0, 0.0]),
    adaptive_run("mpiio", True, [8, 0], [2.0, 0.0]),
    adaptive_run("posix-fpp", False, [4, 4], [0.5, 0.5]),
    adaptive_run("posix-fpp", True, [4, 4], [2.0, 0.5]),
]


def probe_rows(logs: list[tuple[str, str]]) -> list[dict]:
    """Two samples (logs: their jobs' run_id and log_sha256) of 4 writers, writer r on brick
    r mod 2, 64 MiB each."""
    rows = []
    for sample, (fast, slow) in enumerate(((0.5, 2.0), (1.0, 4.0))):
        for writer in range(4):
            rows.append(
                {
                    "run_id": logs[sample][0],
                    "log_sha256": logs[sample][1],
                    "system": "testcluster",
                    "campaign": "probe",
                    "environ": "openmpi",
                    "jobid": 10 + sample,
                    "start": reportdata.T0 + pd.Timedelta(minutes=31 + sample),
                    "nodes": 2,
                    "writers": 4,
                    "writers_per_target": 2,
                    "targets": 2,
                    "target": BRICKS[writer % 2],
                    "writer": writer,
                    "rank": writer,
                    "bytes": 64 * MIB,
                    "write_time": fast if writer % 2 == 0 else slow,
                }
            )
    return rows


def test_each_brick_shows_what_the_adaptive_writers_and_the_competing_writer_put_there():
    table = adaptive_report.per_target(pd.DataFrame(ADAPTIVE))
    assert len(table) == 12 and set(table["target"]) == set(BRICKS)
    at = table.set_index(["mode", "interference", "target"])
    # adaptive with the competing writer on n1-disk: 3 writers' 2 MiB there in 1 s
    row = at.loc[("adaptive", True, "n1-disk")]
    assert (row["writers"], row["bytes"], row["seconds"]) == (3, 6 * MIB, 1.0)
    assert row["mib_s"] == pytest.approx(6.0) and bool(row["competing_writer"])
    assert not bool(at.loc[("adaptive", True, "n2-disk"), "competing_writer"])
    assert not at.loc[(slice(None), False, slice(None)), "competing_writer"].astype(bool).any()
    # MPI-IO's shared file is on the first brick: nothing went to the second
    empty = at.loc[("mpiio", False, "n2-disk")]
    assert empty["bytes"] == 0 and pd.isna(empty["mib_s"])
    # a run that named no targets (not on the volume) has no per-target row
    assert adaptive_report.per_target(pd.DataFrame(ADAPTIVE).assign(target_names=None)).empty
    # an interfered run whose competing writer was not placed: unknown, not "no"
    unplaced = adaptive_report.per_target(pd.DataFrame(ADAPTIVE).assign(interferer_targets=None))
    loaded = unplaced[unplaced["interference"].astype(bool)]
    assert loaded["competing_writer"].isna().all()


@pytest.fixture(scope="module")
def page(tmp_path_factory):
    root = tmp_path_factory.mktemp("targets")
    results, store_dir = reportdata.make_study(root)
    reportdata._write("adaptive", ADAPTIVE, store_dir, RUN)
    # the samples are two of the study's jobs (a sample links to its job's page)
    jobs = pd.read_parquet(store_dir / "jobs")[["run_id", "log_sha256"]].drop_duplicates()
    rows = probe_rows(list(jobs.itertuples(index=False, name=None))[:2])
    for run_id in {r["run_id"] for r in rows}:
        reportdata._write("probes", [r for r in rows if r["run_id"] == run_id], store_dir, run_id)
    return report.build(store_dir, "quick", root / "reports", results=results)


def test_the_per_target_tables_are_on_the_page(page):
    html = page.read_text()
    assert 'id="section-probes"' in html and 'id="section-adaptive"' in html
    probe = pd.read_csv(page.parent / "probe-targets.csv").set_index("target")
    # n1-disk's writers: 128 and 64 MiB/s; n2-disk's: 32 and 16
    assert probe.loc["n1-disk", "mean_writer_mib_s"] == pytest.approx(96.0)
    assert probe.loc["n2-disk", "slowest_writer_mib_s"] == pytest.approx(16.0)
    adaptive = pd.read_csv(page.parent / "adaptive-targets-testcluster-8w-2t.csv")
    assert len(adaptive) == 12 and set(adaptive["target"]) == set(BRICKS)
    loaded = adaptive[adaptive["competing_writer"].astype(str) == "True"]
    assert set(loaded["target"]) == {"n1-disk"} and loaded["interference"].all()


SECTION_BOXES = """['section-probes', 'section-adaptive'].map(id => {
  const r = document.getElementById(id).getBoundingClientRect();
  return [id, r.top + window.scrollY, r.height];
})"""


def test_the_per_target_tables_fit_their_boxes(page):
    binary = chromium.find_chromium()
    if not binary:
        pytest.fail(f"chromium is not installed: Debian's package {chromium.PACKAGE}")
    if shots := os.environ.get(chromium.SCREENSHOTS):
        from PIL import Image

        load = chromium.load(
            page.resolve().as_uri(),
            width=chromium.PAGE_WIDTH,
            full_page=True,
            chromium=binary,
            evaluate=SECTION_BOXES,
        )
        whole = Image.open(io.BytesIO(load.screenshot))
        for ident, top, height in load.value:
            box = (0, int(top), whole.size[0], int(top + height))
            whole.crop(box).save(Path(shots) / f"{ident}.png")
    wide = chromium.overflowing_tables(page, binary)
    assert [t for t in wide if t[0] in ("section-probes", "section-adaptive")] == [], wide
