"""Interference measured for real on the GlusterFS volume (seed 004): the per-target probe
(iostudy's ioprobe, its writers placed on the bricks as probe_check places them) on n1, in
samples alternating between a quiet volume and one that a job on n2 uses: it reads files of n1's
brick, heavily (two readers) or lightly (one, pausing).

The figures are the project's own: each sample's aggregate bandwidth and imbalance factor
(slowest over fastest writer) by :func:`iostudy.report.probe_report.samples`, their CoV over
samples by :func:`iostudy.report.probe_report.variability`, each brick's writers' MiB/s by the
report's per-target table (:func:`iostudy.report.probe_report.per_target`), from the probe's
own write times. It asserts seed 004's three signs against the quiet samples: the aggregate
bandwidth falls (and the writers to the loaded target, n2's brick, slow down), the imbalance
factor and the CoV rise.

Why the load varies: a constant load slows every sample alike, and the CoV, a ratio, rises only
by the contention's own randomness (1.14 times in a CI run whose quiet samples spread by 12 %).
The CoV that seed 004 reports rises because the load varies: other jobs come and go ("the
dynamic and potentially transient nature of external interference"). So do the loads here: of
four loaded samples, three see the heavy job, the fourth the light one.

Why the job reads: the quiet probe's imbalance is its topology's. Writers to n1's own brick are
bound by their fsync to this machine's one disk, which both bricks' loop devices sit on; those
to n2's brick, 4-5 times slower, by n1's 1 Gbit/s sending link. Reads of n1's brick from n2
take that link, as a job on some OSTs takes their servers' bandwidth on Lustre: they slow the
writers to n2's brick and hardly those to n1's, and the imbalance rises. A writer on n2 writes
to the one disk: it slowed the writers to n1's brick (0.64 of quiet) and not the link-bound
ones (0.97), and the imbalance fell (0.68); ci/cluster/README.md has the loads tried."""

from __future__ import annotations

import itertools
import os
import time
from pathlib import Path

import pytest
from slurmtest import REPO_ROOT, on, poll
from test_cluster_gluster import pathinfo

from iostudy.benchmarks import adaptive, probe
from iostudy.core import numfmt
from iostudy.report import probe_report

pd = pytest.importorskip("pandas")

PROBE = REPO_ROOT / "build" / "reframe-checks" / "ioprobe-openmpi"
PLACER = PROBE.with_name(adaptive.PLACER)
# Writers per brick, each writing SIZE: placed as probe_check places them on a GlusterFS volume
# (--brick), writer r on brick r mod 2, brick 0 the prober's.
WRITERS_PER_BRICK = 2
WRITERS = 2 * WRITERS_PER_BRICK
SIZE = "32M"
# Pairs of a quiet and a loaded sample in one look (a second look when the first misses a sign):
# two rounds of LOADS.
PAIRS = 8
# What the loaded samples must show against the quiet ones: seed 004's three signs, with margins
# from runs on this machine (ci/cluster/README.md quotes them). The loaded mean aggregate
# bandwidth, and the mean MiB/s of the writers to the loaded brick (n2's), at most this share of
# the quiet ones; the mean imbalance factor and the CoV of the aggregate over samples at least
# this multiple of the quiet ones.
BANDWIDTH_FALL = 0.75
IMBALANCE_RISE = 1.05
COV_RISE = 1.2
# The loads of the loaded samples, in turn (TURNS): three heavy ones, then a light one; each as
# LOAD's readers of files on the prober's brick, (KIND, how many): the heavy one two readers as
# fast as the link lets (two keep a request in flight while the other's data crosses), the light
# one a reader pausing 20 ms after each MiB.
HEAVY = (("r", 2),)
LIGHT = (("r0.02", 1),)
LOADS = {"heavy": HEAVY, "light": LIGHT}
TURNS = ("heavy", "heavy", "heavy", "light")
# The load job's script: its arguments are its folder, PLACER, then KIND:BRICK=N for each of a
# load's kinds of reader.
LOAD = Path(__file__).with_name("interference_load.py")


def run_probe(cluster, node: str, folder: str, on_bricks: list, *options: str) -> dict:
    """One run of the probe on node, writing to folder, its files on on_bricks ((brick's node,
    brick) in target order): its parsed output."""
    out = cluster.run(
        "srun",
        "-w",
        node,
        "-N1",
        f"-n{WRITERS}",
        "--overcommit",
        "--mpi=pmix",
        PROBE,
        *probe.arguments(folder, SIZE, "1M", len(on_bricks), on_bricks),
        *options,
        env=cluster.mpi_env("openmpi"),
        timeout=120,
    ).stdout
    parsed = probe.parse(out)
    assert not probe.sanity(parsed, WRITERS, 32 << 20), out
    return parsed


def probe_sample(cluster, node: str, folder: str, on_bricks: list) -> list[dict]:
    """The probes table's rows of one run of the probe, each writer's with its brick's node."""
    parsed = run_probe(cluster, node, folder, on_bricks)
    sample = f"sample-{time.monotonic_ns()}"
    return [
        {
            "run_id": sample,
            "log_sha256": sample,
            "system": "gluster",
            "start": time.time(),
            "writers": WRITERS,
            "writers_per_target": WRITERS_PER_BRICK,
            "targets": len(on_bricks),
            "target": on_bricks[rank % len(on_bricks)][0],
            "writer": rank,
            "bytes": parsed["bytes_per_writer"],
            "write_time": seconds,
        }
        for rank, seconds in enumerate(parsed["write_s"])
    ]


def check_placement(cluster, node, mount, folder, on_bricks) -> None:
    """A run of the probe that keeps its files: each on its writer's brick, as pathinfo names
    it."""
    files = run_probe(cluster, node, folder, on_bricks, "--keep")["files"]
    names = [f"{os.path.relpath(folder, mount)}/{name}" for name in files]
    found = pathinfo(cluster, node, mount, names)
    expected = [on_bricks[rank % len(on_bricks)] for rank in range(WRITERS)]
    assert [found[name] for name in names] == [(n, Path(b)) for n, b in expected], found


class Load:
    """The load while in a with block: a batch job on node running LOAD's processes (specs:
    KIND:BRICK=N each), cancelled at the block's end; name: its key in LOADS; out: the job's
    output file."""

    def __init__(self, cluster, node, folder, specs, out, name):
        self.cluster, self.node, self.folder, self.specs = cluster, node, folder, list(specs)
        self.name, self.out = name, out

    def __enter__(self):
        self.out.unlink(missing_ok=True)
        self.job = self.cluster.sbatch(
            "-w", self.node, "-N1", "-n1", "-o", self.out, LOAD, self.folder, PLACER, *self.specs
        )
        poll(lambda: "loading" in self.text(), 60, f"the {self.name} load job's processes")
        return self

    def text(self):
        return self.out.read_text() if self.out.exists() else ""

    def __exit__(self, *_):
        self.cluster.run("scancel", self.job, check=False)

        def gone():
            return not self.cluster.run("squeue", "-h", "-j", self.job, check=False).stdout

        poll(gone, 60, f"load job {self.job} to leave the queue")


def figures(rows: list[dict]) -> dict:
    """Mean aggregate bandwidth (MiB/s), mean imbalance factor and the CoV (%) of the aggregate
    bandwidth over the samples: seed 004's Table I of them (probe_report.variability)."""
    (table,) = probe_report.variability(probe_report.samples(pd.DataFrame(rows))).itertuples()
    return {"mib_s": table.mean_mib_s, "imbalance": table.mean_imbalance, "cov_pct": table.cov_pct}


def brick_figures(rows: list[dict]) -> dict:
    """{brick's node: its writers' mean, slowest and fastest MiB/s}: the report's per-target
    table of the samples (probe_report.per_target)."""
    return {
        row.target: {
            "writer_mib_s": row.mean_writer_mib_s,
            "slowest": row.slowest_writer_mib_s,
            "fastest": row.fastest_writer_mib_s,
        }
        for row in probe_report.per_target(pd.DataFrame(rows)).itertuples()
    }


def test_a_job_on_the_same_bricks_slows_the_probe_and_spreads_its_writers(
    cluster,
    volume,
    tmp_path,
):
    for program in (PROBE, PLACER):
        if not program.is_file():
            pytest.skip(f"{program} is not built (make build-checks)")
    prober, loader = cluster.nodes[0], cluster.nodes[-1]
    assert prober != loader, "needs two nodes"
    base = f"{volume['mount']}/interference-{os.getpid()}-{tmp_path.name}"
    folder = f"{base}/probe"
    on(cluster, prober, 'mkdir -p "$1/load" "$1/probe"', base)
    jobs = {
        name: Load(cluster, loader, f"{base}/load", specs, tmp_path / "load.out", name)
        for name, specs in load_specs(volume["bricks"][prober]).items()
    }
    loads = (jobs[name] for name in itertools.cycle(TURNS))
    # each loaded sample's rows are in "loaded" and in its load's list, which are shown
    rows = {"quiet": [], "loaded": [], **{name: [] for name in LOADS}}
    on_bricks = [(node, volume["bricks"][node]) for node in (prober, loader)]
    try:
        # also a warm-up, not counted
        check_placement(cluster, prober, volume["mount"], folder, on_bricks)
        sample_pairs(cluster, prober, folder, on_bricks, loads, rows)
        shown, missing = judged(rows, loader)
        if missing:
            # One quiet sample slowed by other work on this 2-core machine lifts the quiet CoV
            # of PAIRS samples past a loaded one: a second look judges all pairs together.
            print(f"after {PAIRS} pairs, not shown: {missing}; {PAIRS} more pairs")
            sample_pairs(cluster, prober, folder, on_bricks, loads, rows)
            shown, missing = judged(rows, loader)
    finally:
        on(cluster, prober, 'rm -rf "$1"', base)
    print(f"interference on {volume['name']} ({numfmt.MIB_S}, x, %):")
    for (kind, scope), values in shown.items():
        print(f"  {kind}, {scope}: {values}")
    assert not missing, shown


def load_specs(brick) -> dict[str, list[str]]:
    """{name: LOAD's arguments after its folder} for each of LOADS, its files on brick."""
    return {name: [f"{kind}:{brick}={n}" for kind, n in readers] for name, readers in LOADS.items()}


def sample_pairs(cluster, prober, folder, on_bricks, loads, rows) -> None:
    """PAIRS quiet and loaded samples, alternating, so that a drift of the machine hits both;
    loads: the next load to run, in turn."""
    for _ in range(PAIRS):
        rows["quiet"] += probe_sample(cluster, prober, folder, on_bricks)
        with next(loads) as load:
            sample = probe_sample(cluster, prober, folder, on_bricks)
        rows["loaded"] += sample
        rows[load.name] += sample


def judged(rows: dict, loader: str) -> tuple[dict, list[str]]:
    """The figures (figures() of the whole probe, brick_figures() of each brick's writers by the
    brick's node, for each list of rows: quiet, loaded and each load's) and the signs of seed 004
    that loaded against quiet do not show (loader: the node of the loaded brick, whose writers
    send on the link the load's reads take)."""
    shown = {}
    for kind in rows:
        shown[kind, "probe"] = figures(rows[kind])
        shown.update({(kind, brick): f for brick, f in brick_figures(rows[kind]).items()})
    shown = {key: {n: round(v, 2) for n, v in f.items()} for key, f in shown.items()}
    quiet, loaded = shown["quiet", "probe"], shown["loaded", "probe"]
    signs = {
        "bandwidth falls": loaded["mib_s"] <= BANDWIDTH_FALL * quiet["mib_s"],
        "imbalance rises": loaded["imbalance"] >= IMBALANCE_RISE * quiet["imbalance"],
        "CoV rises": loaded["cov_pct"] >= COV_RISE * quiet["cov_pct"],
        "the loaded brick's writers slow down": (
            shown["loaded", loader]["writer_mib_s"]
            <= BANDWIDTH_FALL * shown["quiet", loader]["writer_mib_s"]
        ),
    }
    return shown, [sign for sign, held in signs.items() if not held]
