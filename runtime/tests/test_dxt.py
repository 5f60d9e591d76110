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

The oracle is the real PyDarshan in a subprocess; DXT Explorer runs when dxt-explorer is on PATH;
darshan-dxt-parser and the differential run under Darshan 3.5.0 need DARSHAN_PREFIX (a Darshan
3.5.0 installation: bin/darshan-dxt-parser, lib/libdarshan.so) and are skipped without it.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from rt_darshan import darshan_any_lib, darshan_lib, darshan_tool
from rt_run import real_tmp

FLAVOURS = ["openmpi", "mpich"]
NPROCS = 2
DXT_MEM = 2 * 1024 * 1024  # Darshan 3.5.0's DXT_IO_TRACE_MEM_MAX, per module
HEAD, SEGMENT = 104, 32  # bytes of a DXT record's head and of a segment

READER = r"""
import json, sys
import darshan
r = darshan.DarshanReport(sys.argv[1], read_all=True)
out = {"modules": {k: bool(v.get("partial_flag")) for k, v in r.modules.items()}, "traces": {}}
for mod in ("DXT_POSIX", "DXT_MPIIO"):
    if mod not in r.records:
        continue
    recs = []
    for rec in r.records[mod].to_df():
        def segs(df):
            return [[int(o), int(n)] for o, n in zip(df.get("offset", []), df.get("length", []))]
        recs.append({"name": r.name_records[rec["id"]], "rank": int(rec["rank"]),
                     "hostname": rec["hostname"], "write_count": int(rec["write_count"]),
                     "read_count": int(rec["read_count"]),
                     "writes": segs(rec["write_segments"]), "reads": segs(rec["read_segments"])})
    out["traces"][mod] = recs
print(json.dumps(out))
"""


def read_dxt(log) -> dict:
    """PyDarshan's view of a log's DXT: modules (name -> partial flag) and traces (module -> list
    of records with name, rank, counts and [offset, length] segments)."""
    res = subprocess.run(
        [sys.executable, "-c", READER, str(log)], capture_output=True, text=True, timeout=300
    )
    assert res.returncode == 0, res.stderr[-3000:]
    return json.loads(res.stdout)


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


def traced(dxt: dict, names) -> dict:
    """The traces of the named files: (module, name, rank) -> (writes, reads)."""
    out = {}
    for mod, recs in dxt["traces"].items():
        for rec in recs:
            if rec["name"] in names:
                key = (mod, rec["name"], rec["rank"])
                assert key not in out, f"two records for {key}"
                assert rec["write_count"] == len(rec["writes"])
                assert rec["read_count"] == len(rec["reads"])
                out[key] = (rec["writes"], rec["reads"])
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


def test_dxt_explorer_makes_its_html(dxt_run, tmp_path):
    """DXT Explorer (dxt-explorer, in the test extra of analysis/pyproject.toml) makes its pages
    of our log. It runs its plots with `python3`: its own environment's comes first on PATH."""
    bin_dir = os.path.dirname(sys.executable)
    path = os.pathsep.join([bin_dir, os.environ.get("PATH", "")])
    explorer = shutil.which("dxt-explorer", path=path)
    assert explorer, f"dxt-explorer is not installed beside {sys.executable} (make venv)"
    _, d, _ = dxt_run
    res = subprocess.run(
        [explorer, "-p", tmp_path, Path(d) / "x.darshan"],
        capture_output=True,
        text=True,
        timeout=600,
        env=dict(os.environ, PATH=path),
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert "ERROR" not in res.stderr, res.stderr[-3000:]
    assert (tmp_path / "index.html").is_file()
    assert len(list(tmp_path.glob("*-operation.html"))) >= 2  # posix.dat, mpiio.dat


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
