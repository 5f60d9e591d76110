"""Seed 004's adaptive I/O on the test cluster, run as a facility runs it (`iostudy campaign run
adaptive --ingest STORE`, ReFrame submitting to Slurm): every core of both nodes a writer, one
group on each brick of the cluster's GlusterFS volume (the campaigns' scratch; each brick on an
ext4 file system on a loop device per node), its files named onto that brick, each mode with and
without a competing writer, whose file is named onto the first brick. The kernel's count of the
sectors each loop device wrote is the independent check that the data went through the volume
to the brick the runs name; getfattr's pathinfo, that the competing writer's file is on the
brick it was given."""

import json
import re

import pandas as pd
from analysis.tests import chromium
from slurmtest import SYSTEM, bytes_written, configs_copy, on, run_campaign, target_devices

from iostudy.benchmarks import adaptive, checks
from iostudy.report import report
from iostudy.store import store

SIZE = 2 << 20


def test_adaptive_campaign_runs_on_testcluster(cluster, volume, tmp_path, monkeypatch):
    configs = configs_copy(tmp_path)
    campaign = json.loads((configs / "campaigns" / "adaptive.json").read_text())
    campaign["checks"][0]["parameters"]["size"] = "2M"
    (configs / "campaigns" / "adaptive.json").write_text(json.dumps(campaign))
    devices = target_devices(cluster, monkeypatch)
    before = {name: bytes_written(device) for name, (_, device) in devices.items()}
    run_campaign(cluster, "adaptive", configs, tmp_path)
    rows = store.connect(tmp_path / "store").execute("SELECT * FROM adaptive").df()
    assert len(rows) == 6 and set(rows["mode"]) == {"adaptive", "mpiio", "posix-fpp"}
    cores = cluster.system["nodes"]["count"] * cluster.system["nodes"]["cores_per_node"]
    assert set(rows["writers"]) == {cores} and set(rows["nodes"]) == {2}
    assert set(rows["targets"]) == {len(devices)}
    # every run names its targets, the volume's bricks in the system's order
    assert {tuple(json.loads(t)) for t in rows["target_names"]} == {("n1-disk", "n2-disk")}
    # the competing writer's file was named onto the first brick, and the run says so
    loaded = rows["interference"].astype(bool)
    assert {tuple(json.loads(t)) for t in rows.loc[loaded, "interferer_targets"]} == {("n1-disk",)}
    assert rows.loc[~loaded, "interferer_targets"].isna().all()
    placed = [json.loads(w) for w in rows["writers_per_target"]]
    assert all(sum(p) == cores for p in placed)
    # each target's device wrote at least the data the runs put there
    for k, (name, (_, device)) in enumerate(devices.items()):
        wanted = sum(p[k] for p in placed) * SIZE
        assert bytes_written(device) - before[name] >= wanted, (name, wanted)
    index = report.build(
        tmp_path / "store", "probe", tmp_path / "reports", results=tmp_path / "results"
    )
    assert 'id="section-adaptive"' in index.read_text()
    # the report's per-target table: both bricks, each run's data on them, the competing writer
    (csv,) = index.parent.glob("adaptive-targets-*.csv")
    table = pd.read_csv(csv)
    assert set(table["target"]) == {"n1-disk", "n2-disk"} and len(table) == 12
    per_run = table.groupby(["mode", "interference"])["bytes"].sum()
    assert (per_run == cores * SIZE).all(), per_run
    competing = table[table["competing_writer"].astype(str) == "True"]
    assert set(competing["target"]) == {"n1-disk"} and competing["interference"].all()
    chromium.assert_within_budget(index)
    assert [t for t in chromium.overflowing_tables(index) if t[0] == "section-adaptive"] == []


def test_the_competing_writer_loads_the_brick_it_is_given(cluster, volume, tmp_path):
    """adaptive_check's competing writers, started on the volume as its job starts them: each
    file lies on the brick it was given, as getfattr's pathinfo says. The bricks are given in
    both orders (n2's first), so that names hashed at random would pass only 1 time in 4."""
    entry = next(s for s in cluster.system["storage"] if s.get("fs_type") == "glusterfs")
    names = {t["node"]: t["name"] for t in entry["targets"]}
    given = [(names[n], str(volume["bricks"][n])) for n in ("n2", "n1")]
    folder = f"{volume['mount']}/interferer-{tmp_path.name}"
    folders = [f"{folder}/target.{k}" for k in range(4)]
    placer = checks.tool_program(SYSTEM, adaptive.PLACER)
    # four targets, the first half loaded: n2's brick, then n1's
    start, stop = adaptive.interference_commands(folders, given * 2, placer)
    show = (
        'for f in "$IOSTUDY_INTERFERER_0" "$IOSTUDY_INTERFERER_1"; do echo "placed $f '
        '$(getfattr --only-values -n trusted.glusterfs.pathinfo "$f" | tr -d "\\000")"; done'
    )
    script = "\n".join(['mkdir -p "$1"/target.0 "$1"/target.1', *start, show, *stop])
    try:
        out = on(cluster, "n1", script, folder)
    finally:
        on(cluster, "n1", 'rm -rf "$1"', folder)
    placed = [line.split(" ", 2)[1:] for line in out.splitlines() if line.startswith("placed ")]
    assert len(placed) == 2, out
    for k, (path, info) in enumerate(placed):
        stem = f"{folders[k]}/{adaptive.INTERFERER_FILE}"
        assert path == stem or re.fullmatch(re.escape(stem) + r"\.\d+", path), path
        assert re.search(r"<POSIX\(([^)]*)\):", info).group(1) == given[k][1], (path, info)
    # the job's line saying where each competing writer is
    assert f"competing writer on {given[0][0]}: {placed[0][0]}" in out
