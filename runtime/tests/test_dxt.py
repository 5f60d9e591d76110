"""DXT_POSIX and DXT_MPIIO traces (Darshan 3.5.0's format: DXT_POSIX v1, DXT_MPIIO v2).

programs/dxt_io.c on 2 ranks of Open MPI and of MPICH, rank r:
  posix.dat  3 pwrites of 100 (r + 1) bytes at 1000 (3 r + k), k = 0..2; 2 preads of 50 bytes at
             1000 (3 r + k), k = 0..1
  mpiio.dat  2 MPI_File_write_at of 64 (r + 1) bytes at 4096 (2 r + k), k = 0..1; 1
             MPI_File_read_at of 32 bytes at 4096 (2 r)
The expected segments follow from that pattern. DXT_MPIIO's offsets: Darshan 3.5.0 asks the MPI
for the byte offset (MPI_File_get_byte_offset) except under Open MPI, where it writes -1, and so
does the runtime. Traces are per rank: never reduced to a rank -1 record.
programs/dxt_many.c: 70,000 one-byte pwrites, more than a DXT module's 2 MiB hold: Darshan's
growth (64 segments, then doubling, the last growth cut to what is left) keeps
(2 MiB - 104-byte record head) // 32-byte segments = 65,532, and sets DXT_POSIX's partial flag.

programs/dxt_killed.c: traced pwrites and preads of two files, interleaved, then a SIGKILL, an
_exit or an exec: its memory-mapped log (or the log written from it at _exit and exec) holds every
segment, a file's trace perhaps in several records (one per run of calls on it); `iostudy logs
merge` gathers them into one record per file and rank. Darshan 3.5.0 keeps no trace in its
memory-mapped logs: for these the oracle is the programs' own I/O, derived by hand from them.
dxt_io with "wait" is killed the same way on 2 ranks, and its merged log must hold each rank's
segments of the pattern above.

The oracle is the real PyDarshan in a subprocess; DXT Explorer runs when dxt-explorer is on PATH;
darshan-dxt-parser and the differential run under Darshan 3.5.0 need DARSHAN_PREFIX (a Darshan
3.5.0 installation: bin/darshan-dxt-parser, lib/libdarshan.so) and are skipped without it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from rt_darshan import darshan_any_lib, darshan_lib, darshan_tool
from rt_dxt import joined, read_dxt, traced
from rt_killed import kill_when_ready, merged, mmap_logs, wait_ready
from rt_run import clean_env, real_tmp

from iostudy.cli.cli import main as iostudy

FLAVOURS = ["openmpi", "mpich"]
NPROCS = 2
DXT_MEM = 2 * 1024 * 1024  # Darshan 3.5.0's DXT_IO_TRACE_MEM_MAX, per module
HEAD, SEGMENT = 104, 32  # bytes of a DXT record's head and of a segment


def expected(directory: str, flavour: str) -> dict:
    """(module, name, rank) -> (writes, reads), each [[offset, length], ...], from the pattern."""
    out = {}
    for r in range(NPROCS):
        out[("DXT_POSIX", os.path.join(directory, "posix.dat"), r)] = (
            [[1000 * (3 * r + k), 100 * (r + 1)] for k in range(3)],
            [[1000 * (3 * r + k), 50] for k in range(2)],
        )
        at = (lambda off: -1) if flavour == "openmpi" else (lambda off: off)
        out[("DXT_MPIIO", os.path.join(directory, "mpiio.dat"), r)] = (
            [[at(4096 * (2 * r + k)), 64 * (r + 1)] for k in range(2)],
            [[at(4096 * 2 * r), 32]],
        )
    return out


def run_dxt_io(runner, tmp_path_factory, flavour, lib=None, env=None, tag="ours"):
    """dxt_io on NPROCS ranks of flavour, under lib (None: this runtime), traced unless env says
    otherwise; (its directory, the run)."""
    prog = runner.mpi_program("dxt_io", flavour)
    d = real_tmp(tmp_path_factory, f"dxt_{tag}_{flavour}")
    env = dict(env if env is not None else {"DXT_ENABLE_IO_TRACE": "1"})
    if lib is not None:
        env["LD_PRELOAD"] = str(lib)
    res = runner.mpirun(flavour, NPROCS, [prog, d], d, env_extra=env)
    assert res.returncode == 0, res.describe()
    assert res.stdout == f"np={NPROCS}\n", res.describe()
    return d, res


@pytest.fixture(scope="module", params=FLAVOURS)
def dxt_run(request, runner, tmp_path_factory):
    d, res = run_dxt_io(runner, tmp_path_factory, request.param)
    return request.param, d, read_dxt(res.log)


def test_segments_are_the_programs_calls(dxt_run):
    flavour, d, dxt = dxt_run
    want = expected(d, flavour)
    names = {os.path.join(d, n) for n in ("posix.dat", "mpiio.dat")}
    got = traced(dxt, names)
    # mpiio.dat's POSIX traffic is the MPI library's own: only its MPI-IO trace is the program's
    got = {k: v for k, v in got.items() if k[0] == "DXT_MPIIO" or k[1].endswith("posix.dat")}
    assert got == want


def test_traces_are_per_rank_and_complete(dxt_run):
    _, _, dxt = dxt_run
    for mod in ("DXT_POSIX", "DXT_MPIIO"):
        assert mod in dxt["modules"], f"no {mod} region"
        assert not dxt["modules"][mod], f"{mod} marked partial"
        assert all(rec["rank"] in range(NPROCS) for rec in dxt["traces"][mod]), "a rank -1 trace"
        assert all(rec["hostname"] for rec in dxt["traces"][mod])


def test_untraced_run_has_no_dxt(runner, tmp_path_factory):
    prog = runner.mpi_program("dxt_io", "mpich")
    d = real_tmp(tmp_path_factory, "dxt_off")
    res = runner.mpirun("mpich", NPROCS, [prog, d], d)
    assert res.returncode == 0, res.describe()
    dxt = read_dxt(res.log)
    assert "POSIX" in dxt["modules"] and "MPI-IO" in dxt["modules"]
    assert not {"DXT_POSIX", "DXT_MPIIO"} & set(dxt["modules"])


def test_mod_enable_selects_one_module(runner, tmp_path_factory):
    d, res = run_dxt_io(
        runner,
        tmp_path_factory,
        "mpich",
        env={"DARSHAN_MOD_ENABLE": "DXT_MPIIO"},
        tag="mod_enable",
    )
    dxt = read_dxt(res.log)
    assert "DXT_MPIIO" in dxt["modules"] and "DXT_POSIX" not in dxt["modules"]


def test_memory_bound_cuts_traces_and_sets_partial(run_instrumented, build_dir, tmp_path):
    d = os.path.realpath(tmp_path)
    n = 70000
    res = run_instrumented(
        [build_dir / "tests" / "dxt_many", d, str(n)], {"DXT_ENABLE_IO_TRACE": "1"}, tmp_path
    )
    assert res.returncode == 0 and res.stdout == f"done {n}\n", res.describe()
    dxt = read_dxt(res.log)
    assert dxt["modules"]["DXT_POSIX"], "DXT_POSIX's partial flag"
    assert not dxt["modules"]["POSIX"], "the POSIX record itself is whole"
    (rec,) = dxt["traces"]["DXT_POSIX"]
    kept = (DXT_MEM - HEAD) // SEGMENT
    assert rec["write_count"] == kept and rec["read_count"] == 0
    assert rec["writes"] == [[i, 1] for i in range(kept)]


TRIGGER_WRITES = 1000  # dxt_many's 1-byte pwrites at 0 .. 999: one aligned (offset 0), all small


@pytest.mark.parametrize(
    "variable,fraction,kept",
    [
        ("DARSHAN_DXT_SMALL_IO_TRIGGER", "1", True),  # all 1,000 are under 10 KiB
        ("DARSHAN_DXT_UNALIGNED_IO_TRIGGER", "0.998", True),  # 999 / 1,000 unaligned
        ("DARSHAN_DXT_UNALIGNED_IO_TRIGGER", "0.9995", False),
    ],
)
def test_triggers_keep_or_drop_a_files_trace(
    run_instrumented, build_dir, tmp_path, variable, fraction, kept
):
    d = os.path.realpath(tmp_path)
    assert os.statvfs(d).f_bsize > TRIGGER_WRITES, "offset 0 the only aligned one"
    env = {"DXT_ENABLE_IO_TRACE": "1", variable: fraction}
    res = run_instrumented(
        [build_dir / "tests" / "dxt_many", d, str(TRIGGER_WRITES)], env, tmp_path
    )
    assert res.returncode == 0, res.describe()
    dxt = read_dxt(res.log)
    counts = [r["write_count"] for r in dxt["traces"].get("DXT_POSIX", [])]
    assert counts == ([TRIGGER_WRITES] if kept else [])


# ---- processes that end without a shutdown: the memory-mapped log ------------------------------

EXTRA = 3  # dxt_killed's 1-byte pwrites of b.dat after its pattern


def killed_expected(d: str, extra: int = EXTRA) -> dict:
    """dxt_killed's traces, from its pattern: (module, name, rank) -> (writes, reads)."""
    a, b = os.path.join(d, "a.dat"), os.path.join(d, "b.dat")
    return {
        ("DXT_POSIX", a, 0): ([[0, 100], [100, 100], [200, 100]], [[0, 50]]),
        ("DXT_POSIX", b, 0): ([[0, 200]] + [[1000 + i, 1] for i in range(extra)], [[5, 10]]),
    }


def end_without_shutdown(runner, d: str, how: str, extra: int = EXTRA) -> Path:
    """dxt_killed, traced, ended by how (kill, _exit, exec of true): the log it left, the
    memory-mapped one of a killed process, else the one _exit and exec write from it."""
    env = {
        "LD_PRELOAD": runner.lib,
        "DARSHAN_ENABLE_NONMPI": "1",
        "DXT_ENABLE_IO_TRACE": "1",
        "DARSHAN_LOGFILE": os.path.join(d, "x.darshan"),
        "DARSHAN_MMAP_LOGPATH": d,
    }
    cmd = [runner.bin("dxt_killed"), d, how, str(extra), shutil.which("true")]
    proc = subprocess.Popen(cmd, env=clean_env(env), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        if how == "kill":
            assert wait_ready(proc, 1) == [f"ready {proc.pid}"]
            proc.send_signal(signal.SIGKILL)
            assert proc.wait(timeout=30) == -signal.SIGKILL
            (path,) = mmap_logs(d)
            return path
        assert proc.wait(timeout=60) == 0, proc.stderr.read()
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert mmap_logs(d) == []
    return Path(d) / "x.darshan"


@pytest.mark.parametrize("how", ["kill", "_exit", "exec"])
def test_a_process_without_shutdown_keeps_its_traces(runner, tmp_path_factory, how):
    d = real_tmp(tmp_path_factory, f"dxt_{how}")
    dxt = read_dxt(end_without_shutdown(runner, d, how))
    assert joined(dxt, {os.path.join(d, n) for n in ("a.dat", "b.dat")}) == killed_expected(d)
    assert not dxt["modules"]["DXT_POSIX"], "DXT_POSIX marked partial"


def test_merged_killed_process_has_one_trace_per_file(runner, tmp_path_factory, capsys):
    d = real_tmp(tmp_path_factory, "dxt_killed_merged")
    end_without_shutdown(runner, d, "kill")
    merged(d, capsys)
    dxt = read_dxt(Path(d) / "merged.darshan")
    assert traced(dxt, {os.path.join(d, n) for n in ("a.dat", "b.dat")}) == killed_expected(d)


HEADER_MOD_MAP = 48  # Darshan 3.41 header: mod_map[id] {off, len} (u64) at 48 + 16 id
DXT_POSIX_ID = 10


def test_a_segment_being_added_is_not_yet_seen(runner, tmp_path_factory, capsys):
    """A kill between a segment's growth of the region and its record's count leaves a tail of
    one segment after the last record: the readers take the region as ending before it, and the
    log is read as it was before that segment. Made here by growing the region's length in a
    killed process's log by one segment's bytes (the region's room beyond it is zeros)."""
    d = real_tmp(tmp_path_factory, "dxt_tail")
    path = end_without_shutdown(runner, d, "kill")
    at = HEADER_MOD_MAP + 16 * DXT_POSIX_ID + 8
    with open(path, "r+b") as f:
        f.seek(at)
        length = int.from_bytes(f.read(8), "little")
        f.seek(at)
        f.write((length + SEGMENT).to_bytes(8, "little"))
    names = {os.path.join(d, n) for n in ("a.dat", "b.dat")}
    assert joined(read_dxt(path), names) == killed_expected(d)
    merged(d, capsys)
    assert traced(read_dxt(Path(d) / "merged.darshan"), names) == killed_expected(d)


def test_a_killed_process_keeps_the_bounded_trace(runner, tmp_path_factory, capsys):
    """70,000 one-byte writes of b.dat after the pattern: the 2 MiB region holds the heads of
    the pattern's 6 runs (a, b, a, a, b, then b's writes after its read), 104 bytes each, and
    (2 MiB - 6 x 104) / 32 segments; b's first writes are kept, the rest dropped, and DXT_POSIX
    is marked partial. Read from the merged log: Darshan 3.5.0's reader reads only the first
    MiB of a region of an uncompressed log, which the memory-mapped one is."""
    d = real_tmp(tmp_path_factory, "dxt_killed_bound")
    end_without_shutdown(runner, d, "kill", extra=70000)
    merged(d, capsys)
    dxt = read_dxt(Path(d) / "merged.darshan")
    assert dxt["modules"]["DXT_POSIX"], "DXT_POSIX's partial flag"
    kept = (DXT_MEM - 6 * HEAD) // SEGMENT - 6  # the pattern's own 6 segments
    got = traced(dxt, {os.path.join(d, n) for n in ("a.dat", "b.dat")})
    assert got == killed_expected(d, kept)


# dxt_killed's extra writes for a trace over 40,000 segments: a region of 1.4 MiB, over the 1 MiB
# of a region that Darshan 3.5.0's reader reads of an uncompressed log
EXTRA_OVER_1MIB = 45000


@pytest.fixture(scope="module", params=["_exit", "exec"])
def large_trace(request, runner, tmp_path_factory):
    """dxt_killed with EXTRA_OVER_1MIB extra writes, ended by _exit or exec: (folder, its log)."""
    d = real_tmp(tmp_path_factory, f"dxt_large{request.param}")
    return d, end_without_shutdown(runner, d, request.param, extra=EXTRA_OVER_1MIB)


def test_pydarshan_reads_every_segment_of_a_large_trace_at_exit_or_exec(large_trace):
    d, log = large_trace
    dxt = read_dxt(log)
    names = {os.path.join(d, n) for n in ("a.dat", "b.dat")}
    assert joined(dxt, names) == killed_expected(d, EXTRA_OVER_1MIB)
    assert not dxt["modules"]["DXT_POSIX"], "DXT_POSIX marked partial"


def test_darshan_dxt_parser_reads_every_segment_of_a_large_trace_at_exit_or_exec(large_trace):
    d, log = large_trace
    res = subprocess.run(
        [darshan_tool("darshan-dxt-parser"), log], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert parsed_segments(res.stdout) == killed_expected(d, EXTRA_OVER_1MIB)


@pytest.fixture(scope="module", params=FLAVOURS)
def killed_mpi(request, runner, tmp_path_factory):
    """dxt_io on 2 ranks of a flavour, killed once its I/O is done, its memory-mapped logs merged
    by `iostudy logs merge`: (flavour, folder, merged log)."""
    flavour = request.param
    prog = runner.mpi_program("dxt_io", flavour)
    d = real_tmp(tmp_path_factory, f"dxt_killed_mpi_{flavour}")
    kill_when_ready(runner, [prog, d, "wait"], d, NPROCS, flavour, {"DXT_ENABLE_IO_TRACE": "1"})
    logs = mmap_logs(d)
    assert len(logs) == NPROCS
    out = Path(d) / "merged.darshan"
    assert iostudy(["logs", "merge", *map(str, logs), "--output", str(out)]) == 0
    return flavour, d, out


def test_killed_mpi_job_merges_every_ranks_traces(killed_mpi):
    flavour, d, log = killed_mpi
    dxt = read_dxt(log)
    got = traced(dxt, {os.path.join(d, n) for n in ("posix.dat", "mpiio.dat")})
    # mpiio.dat's POSIX traffic is the MPI library's own: only its MPI-IO trace is the program's
    got = {k: v for k, v in got.items() if k[0] == "DXT_MPIIO" or k[1].endswith("posix.dat")}
    assert got == expected(d, flavour)
    assert all(rec["rank"] in range(NPROCS) for recs in dxt["traces"].values() for rec in recs)


def test_dxt_explorer_reads_a_killed_jobs_merged_log(killed_mpi):
    _, d, log = killed_mpi
    explorer_pages(log, Path(d) / "explorer")


def parsed_segments(text: str) -> dict:
    """darshan-dxt-parser's output as (module, name, rank) -> (writes, reads), each
    [[offset, length], ...] in its order."""
    out, name = {}, None
    for line in text.splitlines():
        if line.startswith("# DXT, file_id:"):
            name = line.split("file_name: ", 1)[1]
        elif line.startswith(" X_"):
            mod, rank, op, _, offset, length = line.split()[:6]
            key = ("DXT_" + mod[2:], name, int(rank))
            writes, reads = out.setdefault(key, ([], []))
            (writes if op == "write" else reads).append([int(offset), int(length)])
    return out


def test_darshan_dxt_parser_reads_a_killed_jobs_merged_log(killed_mpi):
    flavour, d, log = killed_mpi
    res = subprocess.run(
        [darshan_tool("darshan-dxt-parser"), log], capture_output=True, text=True, timeout=120
    )
    assert res.returncode == 0, res.stderr
    got = parsed_segments(res.stdout)
    for key, want in expected(d, flavour).items():
        assert got[key] == want, key


# ---- with a Darshan 3.5.0 installation (DARSHAN_PREFIX) -----------------------------------------


def test_darshan_dxt_parser_reads_our_log(dxt_run):
    parser = darshan_tool("darshan-dxt-parser")
    flavour, d, _ = dxt_run
    log = Path(d) / "x.darshan"
    res = subprocess.run([parser, log], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0, res.stderr
    assert "DXT_POSIX module data" in res.stdout and "DXT_MPIIO module data" in res.stdout


def test_segments_equal_darshans(dxt_run, runner, tmp_path_factory):
    flavour, d, ours = dxt_run
    lib = darshan_lib(flavour)
    d2, res = run_dxt_io(runner, tmp_path_factory, flavour, lib=lib, tag="darshan")
    theirs = read_dxt(res.log)
    for name in ("posix.dat", "mpiio.dat"):
        mine = traced(ours, {os.path.join(d, name)})
        darshans = traced(theirs, {os.path.join(d2, name)})
        strip = lambda t: {(k[0], os.path.basename(k[1]), k[2]): v for k, v in t.items()}  # noqa: E731
        assert strip(mine) == strip(darshans), name


def explorer_pages(log: Path, out: Path) -> None:
    """DXT Explorer (dxt-explorer, in the test extra of analysis/pyproject.toml) makes its pages
    of log in out. It runs its plots with `python3`: its own environment's comes first on PATH."""
    bin_dir = os.path.dirname(sys.executable)
    path = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    explorer = shutil.which("dxt-explorer", path=path)
    assert explorer, f"dxt-explorer is not installed beside {sys.executable} (make venv)"
    out.mkdir(exist_ok=True)
    res = subprocess.run(
        [explorer, "-p", out, log],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PATH=path),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ERROR" not in res.stderr, res.stderr[-3000:]
    assert (out / "index.html").is_file()
    assert len(list(out.glob("*-operation.html"))) >= 2  # posix.dat, mpiio.dat


def test_dxt_explorer_makes_its_html(dxt_run, tmp_path):
    _, d, _ = dxt_run
    explorer_pages(Path(d) / "x.darshan", tmp_path)


@pytest.mark.parametrize(
    "variable,fraction",
    [
        ("DARSHAN_DXT_SMALL_IO_TRIGGER", "1"),
        ("DARSHAN_DXT_UNALIGNED_IO_TRIGGER", "0.998"),
        ("DARSHAN_DXT_UNALIGNED_IO_TRIGGER", "0.9995"),
    ],
)
def test_triggers_equal_darshans(run_instrumented, build_dir, tmp_path, variable, fraction):
    lib = darshan_any_lib()
    d = os.path.realpath(tmp_path)
    cmd = [build_dir / "tests" / "dxt_many", d, str(TRIGGER_WRITES)]
    env = {"DXT_ENABLE_IO_TRACE": "1", variable: fraction}
    ours = read_dxt(run_instrumented(cmd, env, tmp_path).log)
    theirs_dir = tmp_path / "darshan"
    theirs_dir.mkdir()
    theirs = read_dxt(run_instrumented(cmd, dict(env, LD_PRELOAD=str(lib)), theirs_dir).log)
    counts = [
        [r["write_count"] for r in log["traces"].get("DXT_POSIX", [])] for log in (ours, theirs)
    ]
    assert counts[0] == counts[1]


def test_memory_bound_equals_darshans(run_instrumented, build_dir, tmp_path):
    """dxt_many under Darshan 3.5.0 (any of DARSHAN_PREFIX's runtimes, the one without MPI
    first): the same segments kept, the same partial flag."""
    lib = darshan_any_lib()
    d = os.path.realpath(tmp_path)
    cmd = [build_dir / "tests" / "dxt_many", d, "70000"]
    env = {"DXT_ENABLE_IO_TRACE": "1"}
    ours = read_dxt(run_instrumented(cmd, env, tmp_path).log)
    theirs_dir = tmp_path / "darshan"
    theirs_dir.mkdir()
    res = run_instrumented(cmd, dict(env, LD_PRELOAD=str(lib)), theirs_dir)
    assert res.returncode == 0, res.describe()
    theirs = read_dxt(res.log)
    assert ours["modules"]["DXT_POSIX"] and theirs["modules"]["DXT_POSIX"]
    keep = ("name", "rank", "write_count", "read_count", "writes", "reads")
    assert [{k: r[k] for k in keep} for r in ours["traces"]["DXT_POSIX"]] == [
        {k: r[k] for k in keep} for r in theirs["traces"]["DXT_POSIX"]
    ]
