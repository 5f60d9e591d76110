"""The I/O-model benchmark (reframe-checks/src/iomodel/iomodel.c) against seed 003.

The models are enumerated here from the seed's text, not from the C code: "a maximum number of
nodes and processors per node available", "f files per node which may be shared across m
nodes", every contributing process writes "an amount of I/O that evenly divides the full I/O
size" (so all counts are powers of two), and the axes are "the number of processors
participating in the I/O vs. the number of processors writing to each file". For 32 nodes of
16 cores that gives the seed's 315 models, at most 12 in any bin of its Figure 2.

Real runs use mpirun with every rank on this host: placement is by rank (rank r on node r / P),
so --max-procs 4 --procs-per-node 2 is a two-node run as far as the benchmark can tell.
"""

from __future__ import annotations

import itertools
import math
from collections import Counter
from pathlib import Path

import pytest
from benchmark_runs import FLAVOURS, check_usage_error, describe, json_lines, require, run

MIB = 1 << 20
COORDS = ("n", "p", "f", "m")
RUN_KEYS = [
    "benchmark",
    "n",
    "p",
    "f",
    "m",
    "io_procs",
    "procs_per_file",
    "files",
    "nodes",
    "bytes",
    "sync",
    "write_seconds",
    "write_mib_s",
    "read_seconds",
    "read_mib_s",
    "model",
]


def pow2_upto(limit: int) -> list[int]:
    return [2**k for k in range(int(math.log2(limit)) + 1)]


def seed_models(max_procs: int, ppn: int) -> dict[tuple, dict]:
    """(n, p, f, m) -> coordinates, from the seed's definition."""
    nodes = max_procs // ppn
    models = {}
    for n, p, f, m in itertools.product(
        pow2_upto(nodes), pow2_upto(ppn), pow2_upto(ppn), pow2_upto(nodes)
    ):
        if f > p or m > n:  # f files on each node (at most one per process), m nodes per file
            continue
        models[(n, p, f, m)] = {
            "io_procs": n * p,
            "procs_per_file": (p // f) * m,
            "files": n * f // m,
            "nodes": n,
        }
    return models


def seed_label(c: dict, max_procs: int) -> str | None:
    """The named models, in terms of the seed's two axes (serial wins over the others)."""
    if c["io_procs"] == 1:
        return "serial"
    if c["files"] == 1 and c["io_procs"] == max_procs:
        return "single-shared-file"
    if c["procs_per_file"] == 1:
        return "file-per-process"
    if c["f"] == 1 and c["m"] == 1:
        return "file-per-node"
    return None


# --- running the benchmark ---------------------------------------------------------------


@pytest.fixture(params=FLAVOURS)
def flavour(request) -> str:
    return require("iomodel", request.param)


def iomodel(flavour: str, nprocs: int | None, *args, app_env: dict | None = None):
    """Runs the benchmark under mpirun with nprocs ranks, or alone (an MPI singleton: one rank)
    when nprocs is None."""
    return run("iomodel", flavour, nprocs, *args, app_env=app_env, timeout=300)


def key(rec: dict) -> tuple:
    return tuple(rec[c] for c in COORDS)


# --- enumeration (--list, no I/O, one rank) ----------------------------------------------


def test_list_gives_the_seeds_315_models(flavour):
    """32 MiB, 32 nodes x 16 cores: the seed's 315 models, at most 12 per histogram bin."""
    recs = json_lines(
        iomodel(
            flavour, None, "--list", "--size", "32M", "--max-procs", 512, "--procs-per-node", 16
        )
    )
    assert len(recs) == 315
    assert {key(r) for r in recs} == set(seed_models(512, 16))
    bins = Counter((math.log2(r["io_procs"]), math.log2(r["procs_per_file"])) for r in recs)
    assert max(bins.values()) == 12
    assert all(r["bytes"] == 32 * MIB for r in recs)


@pytest.mark.parametrize(
    "max_procs,ppn", [(1, 1), (2, 1), (2, 2), (4, 2), (4, 4), (8, 2), (16, 4), (64, 8), (32, 1)]
)
def test_list_matches_the_seed_definition(flavour, max_procs, ppn):
    size = 3 * max_procs * 1024  # not a power of two: S only has to be divisible by M
    recs = json_lines(
        iomodel(
            flavour, 1, "--list", "--size", size, "--max-procs", max_procs, "--procs-per-node", ppn
        )
    )
    expected = seed_models(max_procs, ppn)
    assert [key(r) for r in recs] == sorted(expected), "every model once, in (n, p, f, m) order"
    levels_n, levels_p = math.log2(max_procs // ppn) + 1, math.log2(ppn) + 1
    assert len(recs) == levels_n * (levels_n + 1) / 2 * levels_p * (levels_p + 1) / 2
    for r in recs:
        c = expected[key(r)]
        assert {k: r[k] for k in c} == c, r
        assert r["bytes"] == size
        assert r["bytes_per_proc"] * r["io_procs"] == size
        assert r["file_bytes"] * r["files"] == size
        assert r["file_bytes"] == size * r["m"] // (r["n"] * r["f"])
        assert r["model"] == seed_label(r, max_procs), r


def test_models_selects_named_and_explicit_models(flavour):
    args = ["--list", "--size", "1M", "--max-procs", 8, "--procs-per-node", 2]
    every = {key(r): r for r in json_lines(iomodel(flavour, 1, *args))}
    picked = json_lines(iomodel(flavour, 1, *args, "--models", "ssf,2:2:1:2,serial,fpp"))
    want = {k for k, r in every.items() if r["f"] == r["p"] and r["m"] == 1}  # fpp: f = p, m = 1
    want |= {(1, 1, 1, 1), (4, 2, 1, 4), (2, 2, 1, 2)}
    assert [key(r) for r in picked] == sorted(want)
    assert [r["model"] for r in picked if key(r) == (4, 2, 1, 4)] == ["single-shared-file"]
    fpn = json_lines(iomodel(flavour, 1, *args, "--models", "file-per-node"))
    assert {key(r) for r in fpn} == {k for k in every if k[2] == 1 and k[3] == 1}


# --- real runs: exactly S bytes per model ------------------------------------------------


def expected_writer(model: tuple, ppn: int, file_index: int, slot: int) -> int:
    """The rank writing chunk `slot` of file `file_index`, from the contract's placement:
    rank = node * P + local; file (node // m) * f + local // q; slot (node % m) * q + local % q
    with q = p // f processes of a node per file."""
    n, p, f, m = model
    q = p // f
    for node, local in itertools.product(range(n), range(p)):
        if (node // m) * f + local // q == file_index and (node % m) * q + local % q == slot:
            return node * ppn + local
    raise AssertionError(f"no writer for file {file_index} slot {slot} of {model}")


def check_files_on_disk(out: Path, size: int, max_procs: int, ppn: int):
    models = seed_models(max_procs, ppn)
    assert sorted(p.name for p in out.iterdir()) == sorted(
        f"n{n}-p{p}-f{f}-m{m}" for n, p, f, m in models
    )
    for (n, p, f, m), c in models.items():
        mdir = out / f"n{n}-p{p}-f{f}-m{m}"
        names = sorted(x.name for x in mdir.iterdir())
        assert names == sorted(f"file{k}.dat" for k in range(c["files"])), mdir
        chunk = size // c["io_procs"]
        writers = []
        for k in range(c["files"]):
            data = (mdir / f"file{k}.dat").read_bytes()
            assert len(data) == size * m // (n * f), mdir / f"file{k}.dat"
            for slot in range(c["procs_per_file"]):
                rank = expected_writer((n, p, f, m), ppn, k, slot)
                piece = data[slot * chunk : (slot + 1) * chunk]
                assert piece == bytes([1 + rank % 255]) * chunk, (mdir, k, slot, rank)
                writers.append(rank)
        assert sum((mdir / name).stat().st_size for name in names) == size
        assert sorted(writers) == sorted(j * ppn + lo for j in range(n) for lo in range(p))


def check_rate(rec: dict, phase: str, size: int):
    seconds, rate = rec[f"{phase}_seconds"], rec[f"{phase}_mib_s"]
    assert seconds > 0, rec
    assert rate == pytest.approx(size / MIB / seconds, rel=1e-6), rec


def check_json(recs: list[dict], size: int, max_procs: int, ppn: int, read_back: bool):
    models = seed_models(max_procs, ppn)
    assert [key(r) for r in recs] == sorted(models)
    for r in recs:
        assert list(r) == RUN_KEYS, r
        assert r["benchmark"] == "iomodel"
        assert {k: r[k] for k in models[key(r)]} == models[key(r)]
        assert r["bytes"] == size
        assert r["model"] == seed_label(r, max_procs)
        check_rate(r, "write", size)
        if read_back:
            check_rate(r, "read", size)
        else:
            assert r["read_seconds"] is None and r["read_mib_s"] is None


# (max_procs, procs_per_node): one node of 1, 2 and 4 ranks, and two nodes of 2 ranks.
SHAPES = [(1, 1), (2, 2), (4, 4), (4, 2)]


@pytest.mark.parametrize("max_procs,ppn", SHAPES, ids=[f"M{m}-P{p}" for m, p in SHAPES])
def test_every_model_writes_exactly_s_bytes(flavour, max_procs, ppn, tmp_path):
    size = 3 * 64 * 1024  # 192 KiB: chunks of 48 KiB with 4 processes, not a power of two
    out = tmp_path / "out"  # does not exist yet: the benchmark creates it
    res = iomodel(
        flavour,
        max_procs,
        "--size",
        size,
        "--max-procs",
        max_procs,
        "--procs-per-node",
        ppn,
        "--dir",
        out,
        "--keep",
        "--read-back",
    )
    check_json(json_lines(res), size, max_procs, ppn, read_back=True)
    check_files_on_disk(out, size, max_procs, ppn)


def test_large_chunk_without_read_back_leaves_nothing(flavour, tmp_path):
    """One process writes 40 MiB (more than one 16 MiB pwrite); without --keep the model
    directory is removed and without --read-back the read fields are null."""
    size = 40 * MIB
    res = iomodel(
        flavour, 1, "--size", "40M", "--max-procs", 1, "--procs-per-node", 1, "--dir", tmp_path
    )
    recs = json_lines(res)
    check_json(recs, size, 1, 1, read_back=False)
    assert recs[0]["model"] == "serial"
    assert list(tmp_path.iterdir()) == []


def test_keep_replaces_files_of_an_earlier_run(flavour, tmp_path):
    args = ["--max-procs", 1, "--procs-per-node", 1, "--dir", tmp_path, "--keep"]
    json_lines(iomodel(flavour, 1, "--size", "2M", *args))
    json_lines(iomodel(flavour, 1, "--size", "1M", *args))
    assert (tmp_path / "n1-p1-f1-m1" / "file0.dat").stat().st_size == MIB


# --- bad parameters: exit 2, one line naming the parameter -------------------------------

BASE = {"--size": "1M", "--max-procs": "4", "--procs-per-node": "2"}
BAD = {
    "max-procs-not-power-of-two": ({"--max-procs": "6"}, "--max-procs 6 is not a power of two"),
    "ppn-not-power-of-two": ({"--procs-per-node": "3"}, "--procs-per-node 3 is not a power"),
    "ppn-larger-than-max": ({"--procs-per-node": "8"}, "--procs-per-node 8 is larger"),
    "max-not-multiple-of-ppn": (
        {"--max-procs": "12", "--procs-per-node": "8"},
        "(nor a multiple of --procs-per-node)",
    ),
    "size-not-divisible": ({"--size": "1001"}, "--size 1001 is not divisible by --max-procs 4"),
    "size-smaller-than-procs": ({"--size": "3"}, "--size 3 is smaller than --max-procs 4"),
    "size-not-a-size": ({"--size": "12X"}, "--size '12X' is not a size"),
    "size-zero": ({"--size": "0"}, "--size must be larger than 0"),
    "size-missing": ({"--size": None}, "--size is required"),
    "max-procs-not-a-number": ({"--max-procs": "four"}, "--max-procs 'four' is not a positive"),
    "unknown-model-name": ({"--models": "fpp,bogus"}, "--models: unknown model 'bogus'"),
    "model-not-in-space": ({"--models": "8:1:1:1"}, "--models: 8:1:1:1 is not a model"),
    "empty-models": ({"--models": ","}, "--models is empty"),
    "unknown-option": ({"--bogus": "1"}, "unknown option '--bogus'"),
    "dir-missing": ({"--dir": None}, "--dir is required"),
}


@pytest.mark.parametrize("case", BAD.values(), ids=BAD.keys())
def test_bad_parameters_exit_2(flavour, case, tmp_path):
    change, message = case
    opts = {**BASE, "--dir": str(tmp_path / "out"), **change}
    args = [x for k, v in opts.items() if v is not None for x in (k, v)]
    # Alone (one rank): every rank validates the same way; the exit status through mpirun is
    # covered below (and Open MPI's mpirun takes seconds to wind down a failed job).
    check_usage_error(iomodel(flavour, None, *args), "iomodel", message)
    assert not (tmp_path / "out").exists()


def test_wrong_rank_count_exit_2(flavour, tmp_path):
    res = iomodel(
        flavour,
        2,
        "--size",
        "1M",
        "--max-procs",
        4,
        "--procs-per-node",
        2,
        "--dir",
        tmp_path / "out",
    )
    check_usage_error(res, "iomodel", "--max-procs 4 needs exactly 4 MPI ranks, the job has 2")
    assert not (tmp_path / "out").exists()


# Paths no one can write, root included (CI runs as root, which ignores mode bits).
@pytest.mark.parametrize("case", ["regular-file", "beneath-a-file"])
def test_unwritable_dir_exit_2(flavour, case, tmp_path):
    a_file = tmp_path / "a-file"
    a_file.write_text("x")
    if case == "regular-file":
        target, why = a_file, "not a directory"
    else:
        target, why = a_file / "sub", f"cannot create {a_file / 'sub'}: Not a directory"
    res = iomodel(
        flavour, 1, "--size", "1M", "--max-procs", 1, "--procs-per-node", 1, "--dir", target
    )
    check_usage_error(res, "iomodel", f"--dir {target}: {why}")


# --- Lustre stripe alignment, with stand-ins ---------------------------------------------
# No Lustre here: an LD_PRELOADed statfs reports Lustre's magic and a stand-in liblustreapi.so.1
# logs its llapi_file_create calls (and creates the file, as the real one does). On a real Lustre
# the README's `lfs getstripe` recipe checks the same thing.


@pytest.mark.parametrize(
    "size,stripe", [("100K", 64 << 10), ("3M", 2 << 20), ("40M", 32 << 20)], ids=str
)
def test_lustre_stripe_size_is_the_largest_power_of_two_in_a_chunk(
    flavour, lustre_stand_ins, tmp_path, size, stripe
):
    shim, libdir = lustre_stand_ins
    env = {"LD_PRELOAD": str(shim), "LD_LIBRARY_PATH": str(libdir)}
    args = ["--size", size, "--max-procs", 1, "--procs-per-node", 1, "--dir", tmp_path]
    res = iomodel(flavour, None, *args, app_env=env)
    assert res.returncode == 0, describe(res)
    assert f"iomodel: {tmp_path} is on Lustre: stripe size aligned per model" in res.stderr
    calls = [x.split() for x in res.stderr.splitlines() if x.startswith("llapi_file_create ")]
    target = str(tmp_path / "n1-p1-f1-m1" / "file0.dat")
    assert calls == [["llapi_file_create", target, str(stripe), "-1", "0", "0"]], describe(res)


def test_lustre_untouched_elsewhere_and_without_liblustreapi(flavour, lustre_stand_ins, tmp_path):
    shim, libdir = lustre_stand_ins
    args = ["--size", "1M", "--max-procs", 1, "--procs-per-node", 1, "--dir", tmp_path]
    res = iomodel(flavour, None, *args, app_env={"LD_LIBRARY_PATH": libdir})  # not on Lustre
    assert res.returncode == 0 and res.stderr == "", describe(res)
    res = iomodel(flavour, None, *args, app_env={"LD_PRELOAD": shim})  # Lustre, no library
    assert res.returncode == 0, describe(res)
    assert "on Lustre but liblustreapi cannot be loaded: default striping" in res.stderr
    assert "llapi_file_create" not in res.stderr
