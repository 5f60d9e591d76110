"""What the storage benchmarks measure (iostudy.benchmarks.measures): the sync modes of iomodel
and IOR seen in the system calls of real runs (strace), the file system probe against
util-linux's findmnt and GNU dd, and the labels with hand-derived sizes.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from benchmark_runs import FLAVOURS, check_usage_error, launcher, require, run, run_env

from iostudy.benchmarks import checks, measures, spackenv

MIB = 1 << 20
SHM = Path("/dev/shm")


def findmnt_type(path: Path) -> str:
    """The file system type of path, as util-linux's findmnt says (an independent oracle): of
    mounts stacked on one point, the last, the one on top."""
    out = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", str(path)],
        capture_output=True,
        text=True,
        check=True,
    )
    return out.stdout.split()[-1]


def dd_direct_works(folder: Path) -> bool:
    """Whether GNU dd can write one 4 KiB block with O_DIRECT in folder (an independent oracle)."""
    target = folder / "dd-direct"
    done = subprocess.run(
        ["dd", "if=/dev/zero", f"of={target}", "bs=4096", "count=1", "oflag=direct"],
        capture_output=True,
        check=False,
    )
    target.unlink(missing_ok=True)
    return done.returncode == 0


def test_filesystem_type_is_findmnts(tmp_path):
    assert measures.filesystem_type(tmp_path) == findmnt_type(tmp_path)
    # a folder not made yet: its nearest existing ancestor's
    assert measures.filesystem_type(tmp_path / "a" / "b") == findmnt_type(tmp_path)
    if SHM.is_dir():
        assert measures.filesystem_type(SHM) == findmnt_type(SHM) == "tmpfs"


def test_mount_table_read_with_escapes(tmp_path):
    """A mount point with a space (\\040 in the table) and the longest mount point wins."""
    spaced = tmp_path / "my disk"
    (spaced / "sub").mkdir(parents=True)
    table = tmp_path / "mounts"
    table.write_text(
        "/dev/vda / ext4 rw 0 0\n"
        f"none {str(spaced).replace(' ', chr(92) + '040')} tmpfs rw 0 0\n"
        "bad line\n"
    )
    assert measures.filesystem_type(spaced / "sub", table) == "tmpfs"
    assert measures.filesystem_type(tmp_path, table) == "ext4"
    assert measures.filesystem_type(tmp_path, tmp_path / "missing") == ""


def test_auto_resolves_to_direct_on_disk_and_fsync_on_tmpfs(tmp_path):
    disk = findmnt_type(tmp_path) not in ("tmpfs", "ramfs") and dd_direct_works(tmp_path)
    assert measures.resolve_sync("auto", tmp_path) == ("direct" if disk else "fsync")
    assert measures.resolve_sync("auto", tmp_path, aligned=False) == "fsync"
    assert measures.resolve_sync("none", tmp_path) == "none"
    with pytest.raises(ValueError, match="not aligned"):
        measures.resolve_sync("direct", tmp_path, aligned=False)
    with pytest.raises(ValueError, match="sync 'sometimes'"):
        measures.resolve_sync("sometimes", tmp_path)
    if SHM.is_dir():
        # tmpfs: fsync has no storage to reach, and a kernel that takes O_DIRECT there (6.6 and
        # later) still writes memory
        assert measures.resolve_sync("auto", SHM) == "fsync"
        assert measures.measures("fsync", SHM, MIB, 2048) == "memory (tmpfs)"


def test_labels(tmp_path):
    if findmnt_type(tmp_path) in ("tmpfs", "ramfs"):
        pytest.skip(f"{tmp_path} is in memory: every label is 'memory'")
    assert measures.measures("direct", tmp_path, 1, 1) == "storage (O_DIRECT)"
    assert measures.measures("fsync", tmp_path, 1, 1) == "storage (fsync)"
    # local: 256 MiB against 24000 MiB (23.4375 GiB); testcluster: 4 GiB against 2048 MiB
    assert (
        measures.measures("none", tmp_path, 256 * MIB, 24000)
        == "page cache possible: 256 MiB per node < RAM 23.4 GiB"
    )
    assert (
        measures.measures("none", tmp_path, 4096 * MIB, 2048)
        == "storage: 4 GiB per node > RAM 2 GiB"
    )
    assert measures.measures("none", tmp_path, MIB, None) == (
        "page cache possible: 1 MiB per node, RAM unknown"
    )


def test_ior_arguments_carry_odirect():
    write = checks.ior_arguments("POSIX", "fpp", "1M", 4, 1, Path("f"), "write", direct=True)
    read = checks.ior_arguments("POSIX", "fpp", "1M", 4, 1, Path("f"), "read", direct=True)
    # IOR 4 reads a backend's options after -a names it
    assert write[:3] == read[:3] == ["-a", "POSIX", "--posix.odirect"]
    assert "-e" in write and "-C" in read
    assert "--posix.odirect" not in checks.ior_arguments(
        "POSIX", "fpp", "1M", 4, 1, Path("f"), "write"
    )
    with pytest.raises(ValueError, match="not MPIIO's"):
        checks.ior_arguments("MPIIO", "fpp", "1M", 4, 1, Path("f"), "write", direct=True)


# ---- the system calls of real runs ------------------------------------------------------------
TRACE = re.compile(r"^(openat|mknodat|mknod|fsync|fdatasync)\((.*)\)\s+=\s+(-?\d+)")


def traced(command: list[str], tmp_path: Path, env: dict) -> list[tuple[str, str, str]]:
    """(call, arguments, result) of command's openat/mknod/fsync/fdatasync calls in every
    process."""
    if shutil.which("strace") is None:
        pytest.fail("strace not found: ci/apt-packages.txt lists it", pytrace=False)
    out = tmp_path / "trace"
    # -ff: a file per process, so that no call is split by another process's
    traced_calls = "trace=openat,mknodat,mknod,fsync,fdatasync"
    cmd = ["strace", "-ff", "-o", str(out), "-e", traced_calls, *command]
    done = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 0, f"{cmd}\n{done.stdout}\n{done.stderr}"
    calls = []
    for trace in tmp_path.glob("trace.*"):
        for line in trace.read_text().splitlines():
            match = TRACE.match(line)
            if match:
                calls.append(match.group(1, 2, 3))
        trace.unlink()
    return calls


@pytest.mark.parametrize("flavour", FLAVOURS)
@pytest.mark.parametrize(
    ("sync", "direct_opens", "fsyncs"),
    # 2 ranks, 2 per node, the file-per-process models (1,1,1,1) and (1,2,2,1): 3 files made
    # empty before the timed phase (mknod, so that ranks of several nodes do not race to create a
    # shared file), written by one rank each, then read back: 6 opens, 3 fsyncs (writes only)
    [("direct", 6, 0), ("fsync", 0, 3), ("none", 0, 0)],
)
def test_iomodel_sync_in_system_calls(flavour, sync, direct_opens, fsyncs, tmp_path):
    require("iomodel", flavour)
    workdir = tmp_path / "io"
    workdir.mkdir()
    args = ["--size", "1M", "--max-procs", "2", "--procs-per-node", "2", "--dir", str(workdir)]
    args += ["--models", "fpp", "--read-back", "--sync", sync]
    binary = str(Path(checks.CHECKS_BUILD) / f"iomodel-{flavour}")
    calls = traced([*launcher(flavour, 2), binary, *args], tmp_path, run_env())
    made = [(a, r) for call, a, r in calls if call.startswith("mknod") and "/file" in a]
    assert len(made) == 3 and all("S_IFREG" in a and int(r) == 0 for a, r in made), made
    opens = [(a, r) for call, a, r in calls if call == "openat" and "/file" in a]
    assert len(opens) == 6 and all(int(r) >= 0 for _, r in opens), opens
    assert sum("O_DIRECT" in a for a, _ in opens) == direct_opens, opens
    assert sum(call in ("fsync", "fdatasync") for call, *_ in calls) == fsyncs, calls


def test_iomodel_refuses_unaligned_direct(tmp_path):
    flavour = require("iomodel", FLAVOURS[0])
    common = ["--max-procs", "2", "--procs-per-node", "2", "--dir", tmp_path]
    res = run("iomodel", flavour, 2, "--size", "6000", *common, "--sync", "direct")
    # 6000 / 2 = 3000 bytes per rank: not a 4 KiB multiple
    check_usage_error(res, "iomodel", "(3000) is not a multiple of 4096")
    res = run("iomodel", flavour, 2, "--size", "1M", *common, "--sync", "maybe")
    check_usage_error(res, "iomodel", "--sync 'maybe': expected none, fsync or direct")


def test_ior_odirect_in_system_calls(tmp_path):
    """IOR of the Spack view (make spack), when there is one: O_DIRECT in every open of its file
    by both phases; the write phase's fsync (-e)."""
    ior = spackenv.view_program("local", "ior")
    if ior is None:
        pytest.skip("IOR is not built: no Spack view of local (make spack SYSTEM=local)")
    env = run_env()
    path = tmp_path / "testfile"
    for phase, syncs in (("write", 2), ("read", 0)):
        args = checks.ior_arguments("POSIX", "fpp", "1M", 4, 1, path, phase, direct=True)
        calls = traced([*launcher("openmpi", 2), str(ior), *args], tmp_path, env)
        opens = [a for call, a, r in calls if call == "openat" and "testfile" in a]
        assert opens and all("O_DIRECT" in a for a in opens), opens
        assert sum(call == "fsync" for call, *_ in calls) >= syncs, calls
