"""Where a file lives on the test cluster's GlusterFS volume: ioprobe names each writer's file
onto the brick it is given (--brick), and iostudy.collect.placement, run in a job on a node,
names the same target as getfattr does. The expected bricks come from the system description
(the volume fixture); getfattr is the independent reader of pathinfo. The probe campaign's
per-brick rows: test_cluster_probe.py."""

from __future__ import annotations

import json

from slurmtest import REPO_ROOT, SYSTEM, VENV_BIN, on

from iostudy.benchmarks import checks


def brick_named(cluster, node: str, path: str) -> str:
    """The brick path getfattr's pathinfo of path names (one copy: a distributed volume)."""
    text = on(
        cluster,
        node,
        'getfattr --only-values -n trusted.glusterfs.pathinfo "$1" | tr -d "\\000"',
        path,
    )
    start = text.index("<POSIX(") + len("<POSIX(")
    return text[start : text.index(")", start)]


def test_ioprobe_puts_writer_r_on_brick_r_mod_k(cluster, volume, tmp_path):
    bricks = [str(volume["bricks"][node]) for node in ("n1", "n2")]
    folder = f"{volume['mount']}/placement-{tmp_path.name}"
    program = checks.benchmark_program(SYSTEM, "ioprobe", "openmpi")
    args = ["--dir", folder, "--size", "1M", "--keep", "--brick", bricks[0], "--brick", bricks[1]]
    out = cluster.run("srun", "--mpi=pmix", "-N2", "-n4", program, *args, timeout=120).stdout
    line = json.loads(next(t for t in out.splitlines() if t.startswith("{")))
    assert line["targets"] == 2 and len(line["files"]) == 4
    try:
        for rank, name in enumerate(line["files"]):
            assert name == f"writer.{rank}" or name.startswith(f"writer.{rank}."), name
            # read on the other node than the writer's: the placement is the volume's
            assert brick_named(cluster, "n2", f"{folder}/{name}") == bricks[rank % 2], name
        # iostudy's own reader agrees with getfattr, named by the system's targets
        script = (
            "import sys; from iostudy.collect import placement; from iostudy.core import config; "
            f"s = config.load_system({SYSTEM!r}); "
            "print(*(placement.target_of(s, p) for p in sys.argv[1:]))"
        )
        paths = [f"{folder}/{name}" for name in line["files"]]
        said = cluster.run(
            "srun",
            "-w",
            "n1",
            "-N1",
            "-n1",
            VENV_BIN / "python",
            "-c",
            script,
            *paths,
            env={"PYTHONPATH": str(REPO_ROOT / "analysis" / "src")},
        ).stdout.split()
        assert said == ["n1-disk", "n2-disk", "n1-disk", "n2-disk"]
    finally:
        on(cluster, "n1", 'rm -rf "$1"', folder)
