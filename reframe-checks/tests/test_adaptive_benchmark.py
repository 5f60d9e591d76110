"""iostudy's adaptive benchmark (seed 004, section III-B: adaptive I/O against MPI-IO and a file
per process), run for real under both MPIs with 1 to 8 ranks (oversubscribed). The files are
read back here, in Python, with the benchmark's global index: every writer's words
((rank + 1) << 40 | word number) must be where the index says, each file tiled without a gap.
A slow target is made for real, an ext4 file system on a loop device whose writes the kernel's
block throttle holds to 20 MiB/s, and with the benchmark's documented test seam (--slow-target,
--slow-ms: a sleep after every block written into that target's folder)."""

from __future__ import annotations

import struct
from pathlib import Path

import benchmark_runs as bench
import pytest
from blockdev import loop_filesystem, write_throttle

SIZE = 256 * 1024
ENTRY = struct.Struct("<4q")  # writer, target, offset, bytes


def words(rank: int, size: int) -> bytes:
    """The data the benchmark writes for rank: 8-byte words ((rank + 1) << 40 | n)."""
    return b"".join(struct.pack("<Q", ((rank + 1) << 40) | n) for n in range(size // 8))


def global_index(folder: Path) -> list[tuple[int, int, int, int]]:
    data = (folder / "adaptive.gidx").read_bytes()
    assert len(data) % ENTRY.size == 0
    return [ENTRY.unpack_from(data, i) for i in range(0, len(data), ENTRY.size)]


def check_placed(folder: Path, nprocs: int, size: int, targets=None) -> dict[int, int]:
    """Every writer's data found through the global index (in folder), each file tiled from 0
    (in folder/target.<k>, or in targets[k]); returns the writers per target."""
    entries = global_index(folder)
    where = (lambda k: targets[k]) if targets else (lambda k: folder / f"target.{k}")
    assert sorted(e[0] for e in entries) == list(range(nprocs))
    per_target: dict[int, int] = {}
    for writer, target, offset, nbytes in entries:
        assert (nbytes, offset % size) == (size, 0)
        with open(where(target) / "adaptive.dat", "rb") as f:
            f.seek(offset)
            assert f.read(size) == words(writer, size), (writer, target, offset)
        per_target[target] = per_target.get(target, 0) + 1
    for target, count in per_target.items():
        file = where(target) / "adaptive.dat"
        offsets = sorted(e[2] for e in entries if e[1] == target)
        assert offsets == [k * size for k in range(count)] and file.stat().st_size == count * size
    return per_target


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
@pytest.mark.parametrize("nprocs, targets", [(1, 1), (2, 2), (3, 2), (5, 3), (8, 4)])
def test_every_byte_is_found_through_the_global_index(flavour, nprocs, targets, tmp_path):
    bench.require("adaptive", flavour)
    res = bench.run(
        "adaptive",
        flavour,
        nprocs,
        "--dir",
        tmp_path,
        "--size",
        SIZE,
        "--block",
        "64K",
        "--targets",
        targets,
        "--verify",
        "--keep",
    )
    (line,) = bench.json_lines(res)
    placed = check_placed(tmp_path, nprocs, SIZE)
    assert line["writers_per_target"] == [placed.get(k, 0) for k in range(targets)]
    assert (line["mode"], line["writers"], line["bytes"]) == ("adaptive", nprocs, nprocs * SIZE)
    assert line["verified"] is True and line["index_bytes"] == nprocs * ENTRY.size
    # each SC's own index: its file's entries, sorted by offset
    for target in range(targets):
        own = (tmp_path / f"target.{target}" / "adaptive.idx").read_bytes()
        mine = [ENTRY.unpack_from(own, i) for i in range(0, len(own), ENTRY.size)]
        assert mine == sorted(e for e in global_index(tmp_path) if e[1] == target)


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
@pytest.mark.parametrize("mode", ["mpiio", "posix-fpp"])
def test_the_baselines_write_where_they_say(flavour, mode, tmp_path):
    bench.require("adaptive", flavour)
    res = bench.run(
        "adaptive",
        flavour,
        4,
        "--dir",
        tmp_path,
        "--size",
        SIZE,
        "--targets",
        2,
        "--mode",
        mode,
        "--verify",
        "--keep",
    )
    (line,) = bench.json_lines(res)
    for rank in range(4):
        if mode == "mpiio":  # one shared file, rank r's data at r * SIZE
            file, offset = tmp_path / "target.0" / "shared.dat", rank * SIZE
        else:  # a file per rank, in its group's target (ranks 0-1: 0, 2-3: 1)
            file, offset = tmp_path / f"target.{rank * 2 // 4}" / f"fpp.{rank}", 0
        assert file.read_bytes()[offset : offset + SIZE] == words(rank, SIZE), (file, rank)
    assert line["moves"] == 0 and line["verified"] is True


@pytest.mark.exclusive  # one run's time against another's
@pytest.mark.parametrize("flavour", bench.FLAVOURS)
@pytest.mark.parametrize("slow", [0, 1])
def test_adaptive_moves_writers_off_a_slowed_target_and_finishes_sooner(flavour, slow, tmp_path):
    """8 writers in 2 groups, one target slowed (40 ms after each of a writer's 4 blocks): without
    adapting, its group's 4 writers take their turns there (~640 ms); adaptive I/O moves waiting
    writers to the fast target's file, which must end with more of them, sooner."""
    bench.require("adaptive", flavour)
    lines = {}
    for adapt in (True, False):
        folder = tmp_path / ("adapt" if adapt else "fixed")
        args = [
            "--dir",
            folder,
            "--size",
            "1M",
            "--block",
            "256K",
            "--targets",
            2,
            "--slow-target",
            slow,
            "--slow-ms",
            40,
            "--verify",
            "--keep",
        ]
        res = bench.run("adaptive", flavour, 8, *args, *([] if adapt else ["--no-adapt"]))
        (lines[adapt],) = bench.json_lines(res)
        placed = check_placed(folder, 8, 1 << 20)
        assert lines[adapt]["writers_per_target"] == [placed.get(0, 0), placed.get(1, 0)]
    fast = 1 - slow
    assert lines[False]["moves"] == 0 and lines[False]["writers_per_target"] == [4, 4]
    assert lines[True]["moves"] >= 1
    assert lines[True]["writers_per_target"][fast] == 4 + lines[True]["moves"]
    assert lines[True]["seconds"] < 0.8 * lines[False]["seconds"], lines


@pytest.mark.exclusive  # one run's time against another's
@pytest.mark.parametrize("flavour", bench.FLAVOURS)
def test_adaptive_moves_writers_off_a_throttled_device(flavour, tmp_path):
    """Two targets, each an ext4 file system on a loop device, the second's writes held to 20
    MiB/s by the kernel: 8 writers of 4 MiB. Without adapting, the slow target's 4 writers
    take their turns there (16 MiB: about 0.8 s); adaptive I/O moves waiting writers to the
    fast target and must end sooner, with more of them there."""
    bench.require("adaptive", flavour)
    with (
        loop_filesystem(tmp_path / "fast", 256) as fast,
        loop_filesystem(tmp_path / "slow", 256) as slow,
        write_throttle(slow, 20) as join,
    ):
        lines = {}
        for adapt in (True, False):
            index = tmp_path / ("adapt" if adapt else "fixed")
            args = [
                "--dir",
                index,
                "--size",
                "4M",
                "--target-dir",
                fast,
                "--target-dir",
                slow,
                "--verify",
                "--keep",
                *([] if adapt else ["--no-adapt"]),
            ]
            (lines[adapt],) = bench.json_lines(
                bench.run("adaptive", flavour, 8, *args, preexec_fn=join)
            )
            placed = check_placed(index, 8, 4 << 20, [fast, slow])
            assert lines[adapt]["writers_per_target"] == [placed.get(0, 0), placed.get(1, 0)]
            for folder in (fast, slow):
                for name in ("adaptive.dat", "adaptive.idx"):
                    (folder / name).unlink()
    assert lines[False]["writers_per_target"] == [4, 4] and lines[True]["moves"] >= 1
    assert lines[True]["writers_per_target"][0] == 4 + lines[True]["moves"]
    assert lines[True]["seconds"] < 0.75 * lines[False]["seconds"], lines


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
@pytest.mark.parametrize("mode", ["adaptive", "mpiio", "posix-fpp"])
def test_without_keep_nothing_is_left(flavour, mode, tmp_path):
    bench.require("adaptive", flavour)
    res = bench.run(
        "adaptive", flavour, 3, "--dir", tmp_path, "--size", SIZE, "--targets", 2, "--mode", mode
    )
    bench.json_lines(res)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "nprocs, args, message",
    [
        (2, ["--size", "1M", "--targets", "3"], "--targets 3 is more than the 2 ranks"),
        (2, ["--size", "12"], "--size and --block must be multiples of 8"),
        (2, ["--size", "1M", "--mode", "hdf5"], "--mode 'hdf5' is not adaptive, mpiio or"),
        (2, ["--size", "1M", "--slow-target", "1"], "--slow-target and --slow-ms go together"),
        (
            2,
            ["--size", "1M", "--slow-target", "2", "--slow-ms", "5"],
            "--slow-target 2 is not a target (0 to 0)",
        ),
        (2, ["--size", "64K", "--block", "1M"], "--block 1048576 is larger than --size 65536"),
    ],
)
def test_bad_parameters_exit_2(nprocs, args, message, tmp_path):
    bench.require("adaptive", "openmpi")
    res = bench.run("adaptive", "openmpi", nprocs, "--dir", tmp_path, *args)
    bench.check_usage_error(res, "adaptive", message)


def test_help_names_the_modes_and_the_test_seam():
    bench.require("adaptive", "mpich")
    res = bench.run("adaptive", "mpich", None, "--help")
    assert res.returncode == 0 and "posix-fpp" in res.stdout and "test seam" in res.stdout


def llapi_calls(res) -> list[tuple[str, ...]]:
    return sorted(
        tuple(x.split()[1:]) for x in res.stderr.splitlines() if x.startswith("llapi_file_create ")
    )


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
def test_lustre_a_groups_file_on_its_ost_and_the_shared_one_over_all(
    flavour, lustre_stand_ins, tmp_path
):
    """No Lustre here: an LD_PRELOADed statfs says Lustre and a stand-in liblustreapi logs its
    llapi_file_create calls (benchmark_runs). 4 ranks on 2 targets, twice with --keep (the kept
    files are removed first): adaptive, each group's file with one stripe on OST k; posix-fpp,
    each rank's file on its group's OST; mpiio, the shared file over 2 OSTs."""
    bench.require("adaptive", flavour)
    shim, libdir = lustre_stand_ins
    env = {"LD_PRELOAD": shim, "LD_LIBRARY_PATH": libdir}
    want = {
        "adaptive": [
            (f"{tmp_path}/target.{k}/adaptive.dat", "0", str(k), "1", "0") for k in range(2)
        ],
        "posix-fpp": [
            (f"{tmp_path}/target.{r // 2}/fpp.{r}", "0", str(r // 2), "1", "0") for r in range(4)
        ],
        "mpiio": [(f"{tmp_path}/target.0/shared.dat", "0", "-1", "2", "0")],
    }
    for mode, calls in want.items():
        for _ in range(2):
            res = bench.run(
                "adaptive",
                flavour,
                4,
                "--dir",
                tmp_path,
                "--size",
                "64K",
                "--targets",
                2,
                "--mode",
                mode,
                "--verify",
                "--keep",
                app_env=env,
            )
            (line,) = bench.json_lines(res)
            assert line["verified"] is True and llapi_calls(res) == calls, bench.describe(res)
            said = [x for x in res.stderr.splitlines() if x.startswith("adaptive: ")]
            assert said == [
                f"adaptive: {tmp_path}/target.0 is on Lustre: group k's files on OST "
                "k, one stripe each; the shared file over 2 OSTs "
                "(liblustreapi.so.1)"
            ], bench.describe(res)


@pytest.mark.parametrize("flavour", bench.FLAVOURS)
def test_a_kept_run_leaves_no_stale_bytes_under_the_next(flavour, tmp_path):
    bench.require("adaptive", flavour)
    for mode in ("adaptive", "mpiio"):
        for size in ("1M", "256K"):
            res = bench.run(
                "adaptive",
                flavour,
                3,
                "--dir",
                tmp_path,
                "--size",
                size,
                "--targets",
                2,
                "--mode",
                mode,
                "--keep",
            )
            bench.json_lines(res)
    check_placed(tmp_path, 3, 256 << 10)  # each file exactly its writers' data
    assert (tmp_path / "target.0" / "shared.dat").stat().st_size == 3 * (256 << 10)
