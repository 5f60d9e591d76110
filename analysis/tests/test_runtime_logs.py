"""The logs iostudy's own runtime writes, in the store as every real log is (issue 45: "the
'Every real log' ingest stores what this runtime writes; job pages show our traces").

Programs of runtime/tests/programs, each on 2 ranks of Open MPI under build/runtime/libiostudy.so
with DXT_ENABLE_IO_TRACE=1 (their headers give the patterns):
- h5d_shared: one HDF5 dataset written collectively and read back (H5F 3, H5D 2);
- pnc_var_families vara: a PnetCDF file of three variables (PNETCDF_FILE 3, PNETCDF_VAR 1);
- dxt_io: pwrites and preads, MPI_File_write_at and read_at (DXT_POSIX 1, DXT_MPIIO 2);
each with POSIX, MPI-IO, STDIO and HEATMAP records, and traces of their POSIX and MPI-IO I/O.

The oracle is PyDarshan (every record's counters, fcounters and file_rec_id; every DXT segment)
and darshan-dxt-parser of Darshan 3.5.0 when DARSHAN_PREFIX names it (runtime/tests/rt_darshan:
skipped naming the variable without it), never iostudy's reading.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import warnings
from collections import Counter
from pathlib import Path

import darshan
import pandas as pd
import pytest
from darshan.backend import cffi_backend as backend

from iostudy.cli.cli import main
from iostudy.logs.darshanlog import read_log
from iostudy.store import store

from . import chromium
from .rundirs import RUNTIME, runtime_env
from .test_dxt import _as_stored, _pydarshan, _stored_segments
from .testdata import REPO_ROOT

PROGRAMS = REPO_ROOT / "build" / "runtime" / "tests"
# log name -> the program and its arguments after the folder it works in
RUNS = {
    "h5d_shared": ["h5d_shared"],
    "pnc_var_families": ["pnc_var_families", "vara"],
    "dxt_io": ["dxt_io"],
}
RECORD_MODULES = ("POSIX", "MPI-IO", "STDIO", "H5F", "H5D", "PNETCDF_FILE", "PNETCDF_VAR")
IN_FILES = ("H5D", "PNETCDF_VAR")  # a dataset's or variable's record names its file's
TOKENS = {"POSIX": "posix", "MPI-IO": "mpiio", "STDIO": "stdio", "H5F": "h5f", "H5D": "h5d"}
TOKENS |= {"PNETCDF_FILE": "pnetcdf", "PNETCDF_VAR": "pnetcdf_var"}


def _run(name: str, tree: Path, work: Path) -> Path:
    """RUNS[name] on 2 ranks of Open MPI under the runtime, traced; its log tree/<name>.darshan."""
    program, *args = RUNS[name]
    prog = PROGRAMS / f"{program}-openmpi"
    launcher = shutil.which("mpirun.openmpi")
    if launcher is None or not prog.is_file():
        pytest.skip(f"needs mpirun.openmpi and {prog} (make setup builds it with Open MPI)")
    log, folder = tree / f"{name}.darshan", work / name
    folder.mkdir()
    cmd = [launcher, "--oversubscribe", "--allow-run-as-root", "-np", "2"]
    ranks = runtime_env(log, mpi=True) | {"DXT_ENABLE_IO_TRACE": "1"}
    for key in ("LD_PRELOAD", "DARSHAN_LOGFILE", "DXT_ENABLE_IO_TRACE"):  # to the ranks only
        cmd += ["-x", f"{key}={ranks[key]}"]
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    env.pop("LD_PRELOAD", None)
    out = subprocess.run(
        [*cmd, str(prog), str(folder), *args], env=env, capture_output=True, text=True, timeout=300
    )
    assert out.returncode == 0 and out.stdout.startswith("np=2"), out.stdout + out.stderr
    assert log.is_file(), f"{name}: the runtime wrote no log"
    return log


@pytest.fixture(scope="module")
def logs(tmp_path_factory) -> dict[str, Path]:
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    root = tmp_path_factory.mktemp("runtime-logs")
    tree, work = root / "tree", Path(os.path.realpath(root)) / "work"
    tree.mkdir()
    work.mkdir()
    return {name: _run(name, tree, work) for name in RUNS}


@pytest.fixture(scope="module")
def stored(logs, tmp_path_factory) -> Path:
    """The runtime's logs ingested as one log tree (iostudy ingest)."""
    st = tmp_path_factory.mktemp("runtime-store") / "store"
    tree = next(iter(logs.values())).parent
    assert main(["ingest", str(tree), "--store", str(st), "--study", "runtime"]) == 0
    return st


def _pydarshan_records(path: Path) -> dict:
    """{module: {(record id, rank): {counters {name: int}, fcounters {name: float},
    file_rec_id (H5D, PNETCDF_VAR)}}} as PyDarshan's DarshanReport reads the log."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = darshan.DarshanReport(str(path), read_all=False)
    out = {}
    for mod in set(RECORD_MODULES) & set(report.modules):
        report.mod_read_all_records(mod, warnings=False)
        names = backend.counter_names(mod), backend.fcounter_names(mod)
        out[mod] = {}
        for rec in report.records[mod].to_list():
            found = {
                "counters": dict(zip(names[0], map(int, rec["counters"]), strict=True)),
                "fcounters": dict(zip(names[1], map(float, rec["fcounters"]), strict=True)),
            }
            if mod in IN_FILES:
                found["file_rec_id"] = int(rec["file_rec_id"])
            out[mod][(int(rec["id"]), int(rec["rank"]))] = found
    return out


def test_the_runs_wrote_every_module_of_the_issue(logs):
    """H5D 2, PNETCDF_VAR 1, DXT_POSIX 1 and DXT_MPIIO 2, as PyDarshan reads the headers."""
    found = set()
    for path in logs.values():
        report = darshan.DarshanReport(str(path), read_all=False)
        found |= {(mod, info["ver"]) for mod, info in report.modules.items()}
    assert found >= {("H5D", 2), ("PNETCDF_VAR", 1), ("DXT_POSIX", 1), ("DXT_MPIIO", 2)}


@pytest.mark.parametrize("name", RUNS)
def test_every_record_read_is_pydarshans_counter_by_counter(logs, name):
    """read_log's records: every counter and fcounter as PyDarshan names them, and H5D's and
    PNETCDF_VAR's file_rec_id."""
    want = _pydarshan_records(logs[name])
    read = read_log(logs[name])["records"]
    got = {
        mod: {
            (r["id"], r["rank"]): {k: v for k, v in r.items() if k not in ("id", "rank")}
            for r in read[mod]
        }
        for mod in want
    }
    assert got == want
    assert sum(map(len, want.values())) > 0


def _files_rows(st: Path) -> pd.DataFrame:
    con = store.connect(st)
    try:
        # the ids as text: pandas would take a column of 64-bit ids with nulls as floats
        return con.execute(
            "SELECT regexp_extract(log_path, '([^/]+)[.]darshan$', 1) AS log, module, "
            "record_id::VARCHAR AS record_id, rank, bytes_read, bytes_written, "
            "file_record_id::VARCHAR AS file_record_id, fastest_rank, fastest_rank_bytes, "
            "slowest_rank, slowest_rank_bytes FROM files JOIN jobs USING (run_id, log_sha256)"
        ).df()
    finally:
        con.close()


def test_the_files_rows_are_every_record_with_its_file(logs, stored):
    """A files row per record PyDarshan reads, its bytes; a dataset's and a variable's
    file_record_id is PyDarshan's file_rec_id, the record id of its file's H5F or PNETCDF_FILE
    row; the fastest and slowest ranks of a shared record and their bytes, PyDarshan's."""
    rows = _files_rows(stored)
    linked = 0
    for name, path in logs.items():
        mine = rows[rows["log"] == name]
        for mod, records in _pydarshan_records(path).items():
            of_mod = mine[mine["module"] == TOKENS[mod]].set_index(["record_id", "rank"])
            assert len(of_mod) == len(records), (name, mod)
            prefix = mod.replace("-", "")
            for (rid, rank), rec in records.items():
                row, c = of_mod.loc[(str(rid), rank)], rec["counters"]
                if f"{prefix}_BYTES_READ" in c:
                    assert row["bytes_read"] == c[f"{prefix}_BYTES_READ"], (name, mod)
                    assert row["bytes_written"] == c[f"{prefix}_BYTES_WRITTEN"], (name, mod)
                if f"{prefix}_FASTEST_RANK" in c:
                    for what in ("fastest_rank", "slowest_rank"):
                        assert row[what] == c[f"{prefix}_{what.upper()}"], (name, mod)
                        assert row[f"{what}_bytes"] == c[f"{prefix}_{what.upper()}_BYTES"]
                if mod not in IN_FILES:
                    assert pd.isna(row["file_record_id"])
                    continue
                assert row["file_record_id"] == str(rec["file_rec_id"])
                files = mine[mine["module"].isin(["h5f", "pnetcdf"])]
                assert str(rec["file_rec_id"]) in set(files["record_id"])
                linked += 1
    assert linked == 4  # the dataset, the three variables


def test_every_trace_segment_is_stored_as_pydarshan_reads_it(logs, stored):
    """The dxt table: each file's writes and reads on each rank, segment by segment (offset,
    length, start, end), as PyDarshan reads them; DXT_MPIIO's offsets, which the runtime under
    Open MPI does not compute (as Darshan 3.5.0), null."""
    want = {}
    for path in logs.values():
        want |= _as_stored(_pydarshan(path)["segments"])
    assert _stored_segments(stored) == want
    assert {k[0] for k in want} == {"DXT_POSIX", "DXT_MPIIO"}


def _rt_darshan():
    """runtime/tests/rt_darshan: Darshan 3.5.0 as DARSHAN_PREFIX names it."""
    spec = importlib.util.spec_from_file_location(
        "rt_darshan", REPO_ROOT / "runtime" / "tests" / "rt_darshan.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# darshan-dxt-parser's lines: a record's file id, and a segment (module, rank, operation,
# its index, offset, length)
_FILE_ID = re.compile(r"^# DXT, file_id: (\d+),")
_SEGMENT = re.compile(r"^\s+X_(POSIX|MPIIO)\s+(\d+)\s+(write|read)\s+\d+\s+(-?\d+)\s+(\d+)\s")


def _dxt_parser(path: Path) -> Counter:
    """{(module, record id, rank, operation, offset, length): segments} as darshan-dxt-parser
    prints the log's traces (offset -1: not computed, as the store's null)."""
    tool = _rt_darshan().darshan_tool("darshan-dxt-parser")
    out = subprocess.run([tool, path], capture_output=True, text=True, check=True, timeout=120)
    found, rid = Counter(), None
    for line in out.stdout.splitlines():
        if m := _FILE_ID.match(line):
            rid = int(m[1])
        elif m := _SEGMENT.match(line):
            offset = None if m[4] == "-1" else int(m[4])
            found[(f"DXT_{m[1]}", rid, int(m[2]), m[3], offset, int(m[5]))] += 1
    return found


def test_the_stored_segments_are_darshan_dxt_parsers(logs, stored):
    want = Counter()
    for path in logs.values():
        want += _dxt_parser(path)
    got = Counter(
        (*key, offset, length)
        for key, segments in _stored_segments(stored).items()
        for offset, length, *_ in segments
    )
    assert got == want and sum(want.values()) > 0


@pytest.mark.browser
def test_the_job_pages_draw_the_traces_and_name_each_datasets_file(logs, stored, tmp_path):
    """Each job's page: its trace section, whose CSV counts each rank's segments per module
    and operation as PyDarshan reads them, and the table of datasets and variables, each with
    its file (PyDarshan's name of its file_rec_id); within the page budget in Chromium
    (IOSTUDY_SCREENSHOTS keeps the pictures)."""
    from iostudy.report import report

    if chromium.find_chromium() is None:
        pytest.skip(f"needs Chromium: install Debian's package {chromium.PACKAGE}")
    index = report.build(stored, "runtime", tmp_path / "reports")
    con = store.connect(stored)
    shas = dict(
        con.execute(
            "SELECT regexp_extract(log_path, '([^/]+)[.]darshan$', 1), log_sha256 FROM jobs"
        ).fetchall()
    )
    con.close()
    for name, path in logs.items():
        page = index.parent / f"job-{shas[name]}.html"
        assert "<h2>DXT trace: every read and write</h2>" in page.read_text()
        timeline = pd.read_csv(page.parent / f"{page.stem}-dxt-timeline.csv")
        got = timeline.groupby(["module", "rank", "operation"])["segments"].sum().to_dict()
        want = Counter()
        for (mod, _, rank, op), segments in _pydarshan(path)["segments"].items():
            if segments:
                want[({"DXT_POSIX": "POSIX", "DXT_MPIIO": "MPI-IO"}[mod], rank, op)] += len(
                    segments
                )
        assert got == dict(want), name
        names = darshan.DarshanReport(str(path), read_all=True).name_records
        objects = _pydarshan_records(path)
        expected = sorted(
            (names[r["file_rec_id"]], names[rid])
            for mod in IN_FILES
            for (rid, _), r in objects.get(mod, {}).items()
        )
        datasets = page.parent / f"{page.stem}-datasets.csv"
        if expected:
            table = pd.read_csv(datasets)
            assert (
                sorted(zip(table["file"], table["file"] + ":" + table["name"], strict=True))
                == expected
            )
        else:
            assert not datasets.exists()
        assert chromium.assert_within_budget(page) > 0
