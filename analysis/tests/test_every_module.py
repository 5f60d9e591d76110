"""Every module Darshan 3.0 to 3.5 writes (issue 42: "modules never stored"), read at every
module version as PyDarshan 3.5 reads it and stored: the record modules (HDF5's datasets,
PnetCDF's variables, DFS and DAOS too) as files rows of their own module, the job-level ones
(BG/Q, APXC, APMPI) as jobcounters rows; a job's bytes are those of the layer that moved them,
each byte once.

The logs: the test data's, the PyDarshan wheel's samples and the two kept here
(tests/data/darshan-logs: the only DFS, DAOS and APXC logs). PyDarshan is the oracle:
darshan.DarshanReport's records of each module, their counters named as Darshan names them
and summed here; AutoPerf's records read by PyDarshan in a process of their own per log
(libdarshan-util reads only the first AutoPerf log of a process right).
"""

import csv
import io
import json
import re
import subprocess
import sys
import warnings
from collections import Counter
from contextlib import redirect_stdout
from pathlib import Path

import darshan
import pandas as pd
import pytest
from darshan.backend import cffi_backend as backend

from iostudy.cli import cli
from iostudy.logs import logrows, storerule, summary
from iostudy.logs.darshanlog import DarshanLogError, read_log
from iostudy.metrics import jobdetail
from iostudy.store import ingest, store
from tests import chromium, logcraft
from tests.testdata import APXC_LOG, DARSHAN_LOGS, DFS_LOG, OWN_LOGS

WHEEL = Path(darshan.__file__).parent
LOGS = [*sorted(DARSHAN_LOGS.rglob("*.darshan")), *sorted(WHEEL.rglob("*.darshan"))]
LOGS += sorted(OWN_LOGS.rglob("*.darshan"))
# Each record module's bytes read and written, as Darshan names its counters (H5F: none)
BYTES = {
    "POSIX": ("POSIX_BYTES_READ", "POSIX_BYTES_WRITTEN"),
    "STDIO": ("STDIO_BYTES_READ", "STDIO_BYTES_WRITTEN"),
    "MPI-IO": ("MPIIO_BYTES_READ", "MPIIO_BYTES_WRITTEN"),
    "H5F": (None, None),
    "H5D": ("H5D_BYTES_READ", "H5D_BYTES_WRITTEN"),
    "PNETCDF_FILE": ("PNETCDF_FILE_BYTES_READ", "PNETCDF_FILE_BYTES_WRITTEN"),
    "PNETCDF_VAR": ("PNETCDF_VAR_BYTES_READ", "PNETCDF_VAR_BYTES_WRITTEN"),
    "DFS": ("DFS_BYTES_READ", "DFS_BYTES_WRITTEN"),
    "DAOS": ("DAOS_BYTES_READ", "DAOS_BYTES_WRITTEN"),
}
# The modules each version of which the logs must hold (more are welcome; fewer: data missing)
# (BG/Q 1, which no log holds, is crafted: test_a_bgq_record_of_version_1_reads_as_version_2)
VERSIONS = {
    ("H5F", 1),
    ("H5F", 2),
    ("H5F", 3),
    ("H5D", 1),
    ("H5D", 2),
    ("PNETCDF_FILE", 1),
    ("PNETCDF_FILE", 2),
    ("PNETCDF_FILE", 3),
    ("PNETCDF_VAR", 1),
    ("DFS", 1),
    ("DAOS", 1),
    ("BG/Q", 2),
    ("APXC", 1),
    ("APMPI", 1),
}


def _flat(path: Path) -> str:
    """Where a log came from, as one file name."""
    for base, tag in ((DARSHAN_LOGS, "data"), (WHEEL, "wheel"), (OWN_LOGS, "own")):
        if path.is_relative_to(base):
            return f"{tag}-" + path.relative_to(base).as_posix().replace("/", "-")
    raise AssertionError(path)


_FIRST: dict[bytes, str] = {}
for _path in LOGS:
    _FIRST.setdefault(_path.read_bytes(), _flat(_path))


def _name(path: Path) -> str:
    """The log's file name in the tree of every log: that of the first log of the same bytes
    (the wheel holds some twice)."""
    return _FIRST[path.read_bytes()]


# The wheel's samples that ingest quarantines whatever their modules: times below 0
# (iostudy.logs.plausibility), as libdarshan-util reads them
IMPLAUSIBLE = {
    "wheel-examples-example_logs-dxt.darshan": "POSIX_F_META_TIME = -2.86",
    "wheel-examples-example_logs-example.darshan": "STDIO_F_WRITE_TIME = -2662.7",
}


@pytest.fixture(scope="module")
def stored(tmp_path_factory) -> Path:
    """Every log, once each, ingested as one log tree."""
    root = tmp_path_factory.mktemp("every-module")
    tree = root / "logs"
    tree.mkdir()
    for data, name in _FIRST.items():
        (tree / name).write_bytes(data)
    counts = ingest.ingest([tree], root / "store")
    assert counts.logs_ingested == len(_FIRST) - len(IMPLAUSIBLE), counts.problems
    for problem in counts.problems:
        name = Path(problem.split(":")[0]).name
        assert IMPLAUSIBLE[name] in problem, problem
    return root / "store"


def _report(path: Path):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return darshan.DarshanReport(str(path), read_all=False)


def _pydarshan_bytes(path: Path) -> dict:
    """{module: (bytes read, bytes written, records)} of a log's record modules as PyDarshan
    reads them (named records); None where the module has no such counter, or where every
    record's is the reader's -1 (a version without it)."""
    report = _report(path)
    out = {}
    for mod in set(BYTES) & set(report.modules):
        report.mod_read_all_records(mod, warnings=False)
        counters = report.records[mod].to_df()["counters"]
        sums = []
        for name in BYTES[mod]:
            recorded = counters[name][counters[name] >= 0] if name else ()
            sums.append(int(recorded.sum()) if len(recorded) else None)
        if len(counters):
            out[mod] = (*sums, len(counters))
    return out


def _stored_bytes(st: Path, path: Path) -> dict:
    rows = (
        store.connect(st)
        .execute(
            "SELECT module, SUM(bytes_read), SUM(bytes_written), count(*) FROM files "
            "JOIN jobs USING (log_sha256) WHERE jobs.log_path LIKE ? GROUP BY module",
            [f"%/{_name(path)}"],
        )
        .fetchall()
    )
    names = {
        "posix": "POSIX",
        "stdio": "STDIO",
        "mpiio": "MPI-IO",
        "h5f": "H5F",
        "h5d": "H5D",
        "pnetcdf": "PNETCDF_FILE",
        "pnetcdf_var": "PNETCDF_VAR",
        "dfs": "DFS",
        "daos": "DAOS",
    }
    return {names[m]: (r, w, n) for m, r, w, n in rows}


@pytest.mark.parametrize("path", LOGS, ids=_flat)
def test_every_record_modules_bytes_are_pydarshans(stored, path):
    """The bytes per module of the files rows (of a quarantined log: of iostudy's reading of
    it, its log summary)."""
    expected = _pydarshan_bytes(path)
    if _name(path) in IMPLAUSIBLE:
        read = summary.summarize(read_log(path))["modules"]
        got = {m["name"]: (m["bytes_read"], m["bytes_written"], m["records"]) for m in read}
        assert got == expected
    else:
        assert _stored_bytes(stored, path) == expected


@pytest.mark.parametrize("path", LOGS, ids=_flat)
def test_the_log_summary_gives_pydarshans_bytes_and_none_where_a_module_counts_none(path):
    """`iostudy log summary`'s totals per module: PyDarshan's bytes, and no bytes (None, "-")
    where the module has no counter of them (H5F: HDF5's bytes are its datasets'), not 0."""
    read = summary.summarize(read_log(path))["modules"]
    got = {m["name"]: (m["bytes_read"], m["bytes_written"], m["records"]) for m in read}
    assert {m: v for m, v in got.items() if m in BYTES} == _pydarshan_bytes(path)
    for m in read:
        assert ("bytes_read" in m["not_counted"]) == (BYTES[m["name"]][0] is None)


def test_the_logs_hold_every_module_version(stored):
    found = {(mod, info["ver"]) for path in LOGS for mod, info in _report(path).modules.items()}
    assert found >= VERSIONS


def _jobs(st: Path, *args) -> dict[str, dict]:
    out = io.StringIO()
    with redirect_stdout(out):
        assert cli.main(["jobs", "--store", str(st), "--csv", *args]) == 0
    return {r["log_path"].rsplit("/", 1)[1]: r for r in csv.DictReader(io.StringIO(out.getvalue()))}


@pytest.mark.parametrize(
    "module",
    ["h5d", "DFS", "daos", "pnetcdf_var", "PNETCDF_FILE", "mpi-io", "H5F", "stdio", "Posix"],
)
def test_jobs_takes_every_module_by_its_darshan_name(stored, module):
    rows = _jobs(stored, "--module", module)
    mod = next(m for m in BYTES if m.lower() == module.lower())
    compared = 0
    for path in LOGS:
        if _name(path) in IMPLAUSIBLE:
            continue
        expected = _pydarshan_bytes(path).get(mod)
        row = rows[_name(path)]
        assert row["module"] == mod
        total = int(row["bytes_read"]) + int(row["bytes_written"])
        assert total == sum(b or 0 for b in expected[:2]) if expected else total == 0, path
        compared += expected is not None
    assert compared > 0


def test_a_dfs_jobs_bytes_are_those_that_reached_daos_counted_once(stored):
    """IOR's DFS backend on Aurora: its 32 MiB went through DFS, which called DAOS; POSIX and
    STDIO saw its 2 KiB of output alone."""
    expected = _pydarshan_bytes(DFS_LOG)
    row = _jobs(stored)[_name(DFS_LOG)]
    moved = int(row["bytes_read"]) + int(row["bytes_written"])
    assert moved == sum(expected[m][0] + expected[m][1] for m in ("POSIX", "STDIO", "DAOS"))
    assert moved > 32 << 20
    assert row["interfaces"] == "POSIX+STDIO+DFS+DAOS"


def _pydarshan_ranks(path: Path) -> tuple[dict, float]:
    """({rank: bytes moved} of a log's records of one rank, the slowest rank's time summed over
    its shared records) in the layers a job's totals count, as PyDarshan reads them: POSIX,
    STDIO, DAOS, and DFS where DAOS kept no record of the object."""
    report = _report(path)
    frames = {}
    for mod in {"POSIX", "STDIO", "DFS", "DAOS"} & set(report.modules):
        report.mod_read_all_records(mod, warnings=False)
        frames[mod] = (
            report.records[mod].to_df()["counters"],
            report.records[mod].to_df()["fcounters"],
        )
    # (a Series: PyDarshan reads DFS's ids as int64, DAOS's as uint64, which a set tells apart)
    below = frames["DAOS"][0]["id"] if "DAOS" in frames else []
    per_rank, shared = Counter(), 0.0
    for mod, (counters, fcounters) in frames.items():
        kept = ~counters["id"].isin(below) if mod == "DFS" else counters["id"].notna()
        counters, fcounters = counters[kept], fcounters[kept]
        prefix = BYTES[mod][0].rsplit("_BYTES", 1)[0]
        moved = counters[f"{prefix}_BYTES_READ"] + counters[f"{prefix}_BYTES_WRITTEN"]
        for rank, total in zip(counters["rank"], moved, strict=True):
            if rank >= 0:
                per_rank[int(rank)] += int(total)
        shared += fcounters.loc[fcounters["rank"] < 0, f"{prefix}_F_SLOWEST_RANK_TIME"].sum()
    return dict(per_rank), shared


@pytest.mark.parametrize("path", [DFS_LOG, *DARSHAN_LOGS.glob("dlio_logs/*.darshan")], ids=_flat)
def test_rank_balance_counts_the_layers_that_moved_the_bytes(stored, path):
    """The job page's rank balance: each rank's bytes in its own records of POSIX, STDIO and
    DFS or DAOS, and the slowest rank's time in the shared ones (a DFS job's 16 ranks moved
    their 32 MiB through DFS and DAOS, shared records all, not through POSIX)."""
    con = store.connect(stored)
    sha, nprocs = con.execute(
        "SELECT log_sha256, nprocs FROM jobs WHERE log_path LIKE ?", [f"%/{_name(path)}"]
    ).fetchone()
    per_rank, summary = jobdetail.rank_balance(jobdetail.files_of(con, [sha]), nprocs)
    moved = per_rank["bytes_read"] + per_rank["bytes_written"]
    got = {int(r): int(b) for r, b in zip(per_rank["rank"], moved, strict=True)}
    expected, shared = _pydarshan_ranks(path)
    assert got == expected
    assert summary["shared_slowest_s"] == pytest.approx(shared, rel=1e-9)
    assert expected or shared > 0


HDF5, PNETCDF = (
    DARSHAN_LOGS / "ior_pnetcdf_hdf5" / name
    for name in (
        "shane_ior-HDF5_id438090-438090_11-9-41522-17417065676046418211_1.darshan",
        "shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan",
    )
)
H5D_V1 = WHEEL / "examples" / "example_logs" / "ior_hdf5_example.darshan"
BGQ_LOG = DARSHAN_LOGS / "release_logs" / "mpi-io-test-ppc64-3.1.8.darshan"  # big-endian
BGQ_V2 = 112  # base record, 11 counters, 1 fcounter


def _bgq_v1(data: bytes) -> bytes:
    """The log with its BG/Q records written at module version 1, as Darshan 3.0's runtime
    wrote them (darshan-bgq-logutils.c's DARSHAN_BGQ_FILE_SIZE_1, 120 bytes: an int and its
    padding after the base record), which libdarshan-util up-converts as it reads them."""
    raw = logcraft.module_region(data, "BG/Q")
    records = [raw[at : at + BGQ_V2] for at in range(0, len(raw), BGQ_V2)]
    v1 = b"".join(r[:16] + bytes(8) + r[16:] for r in records)
    return logcraft.set_module_region(data, "BG/Q", v1, version=1)


def test_a_bgq_record_of_version_1_reads_as_version_2(tmp_path):
    v1 = tmp_path / "bgq-v1.darshan"
    v1.write_bytes(_bgq_v1(BGQ_LOG.read_bytes()))
    assert read_log(v1)["job_records"]["BG/Q"] == read_log(BGQ_LOG)["job_records"]["BG/Q"]
    assert read_log(v1)["job_records"]["BG/Q"] == _pydarshan_bgq(v1)


RELEASES = DARSHAN_LOGS / "release_logs"
BUILT = OWN_LOGS / "darshan-built"  # Darshan 3.1.6's and 3.1.8's: H5F and PNETCDF_FILE 1 and 2


def _release(name: str):
    """What reads the bytes of the mpi-io-test log of a release ("x86_64-3.1.6")."""
    return (RELEASES / f"mpi-io-test-{name}.darshan").read_bytes


# (log's bytes, module, the version its records are stored at, the record's size: its C struct
# of Darshan 3.5.0's include/darshan-*-log-format.h, and darshan-util's older sizes: the macro
# of darshan-*-logutils.c its get function reads such a record at; every older version a real
# log holds, tests/test_older_records.py)
FIXED = [
    (lambda: HDF5.read_bytes(), "H5D", 2, 912),  # base, file record id, 94 and 17 counters
    (lambda: H5D_V1.read_bytes(), "H5D", 1, 904),  # DARSHAN_H5D_DATASET_SIZE_1: no file id
    (lambda: PNETCDF.read_bytes(), "PNETCDF_VAR", 1, 1120),  # base, file id, 120 and 17
    (lambda: DFS_LOG.read_bytes(), "DFS", 1, 584),  # 52 and 15 counters, pool, container
    (lambda: DFS_LOG.read_bytes(), "DAOS", 1, 696),  # 64 and 15, pool, container, object id
    (lambda: BGQ_LOG.read_bytes(), "BG/Q", 2, BGQ_V2),
    (lambda: _bgq_v1(BGQ_LOG.read_bytes()), "BG/Q", 1, 120),
    (_release("ppc64-3.0.0"), "POSIX", 1, 680),  # DARSHAN_POSIX_FILE_SIZE_1 (big-endian)
    (_release("x86_64-3.1.6"), "POSIX", 3, 664),  # DARSHAN_POSIX_FILE_SIZE_3
    (_release("x86_64-3.0.0"), "MPI-IO", 1, 544),  # DARSHAN_MPIIO_FILE_SIZE_1
    (_release("ppc64-3.1.6"), "MPI-IO", 2, 544),  # DARSHAN_MPIIO_FILE_SIZE_1 too (big-endian)
    (_release("x86_64-3.1.0"), "STDIO", 1, 240),  # DARSHAN_STDIO_FILE_SIZE_1
    ((BUILT / "darshan-3.1.6-hdf5_file-h5f-v1.darshan").read_bytes, "H5F", 1, 40),
    ((BUILT / "darshan-3.1.8-hdf5_file-h5f-v2.darshan").read_bytes, "H5F", 2, 56),
    ((BUILT / "darshan-3.1.6-pnetcdf_file-v1.darshan").read_bytes, "PNETCDF_FILE", 1, 48),
    ((BUILT / "darshan-3.1.8-pnetcdf_file-v2.darshan").read_bytes, "PNETCDF_FILE", 2, 64),
]


@pytest.mark.parametrize(
    "log, module, version, size", FIXED, ids=[f"{m}-{v}" for _, m, v, _ in FIXED]
)
def test_a_region_that_is_not_whole_records_is_refused_before_the_reader(
    tmp_path, log, module, version, size
):
    """libdarshan-util reads a module's records until one is short, and drops the rest
    without a word: the check refuses the region first, at its version's record size."""
    data = log()
    raw = logcraft.module_region(data, module, stored=version)
    assert raw and len(raw) % size == 0
    cut = tmp_path / "cut.darshan"
    cut.write_bytes(logcraft.set_module_region(data, module, raw + bytes(8), stored=version))
    says = f"{module} region: {len(raw) + 8} bytes, not a whole number of {size}-byte records"
    with pytest.raises(DarshanLogError, match=re.escape(says)) as err:
        read_log(cut)
    assert not err.value.stderr  # never handed to libdarshan-util


def _magic_zeroed(raw: bytes) -> bytes:
    return raw[:16] + bytes(8) + raw[24:]  # the header's magic, after its base record


# (module, damage to its inflated region, what the refusal says)
AUTOPERF_DAMAGE = [
    ("APMPI", lambda raw: raw[:-8], "not a 48-byte header and whole 5232-byte records"),
    ("APXC", lambda raw: raw + bytes(8), "not a 72-byte header and whole 3184-byte records"),
    ("APMPI", _magic_zeroed, "its header's magic number is 0, not APMPI's"),
    ("APXC", _magic_zeroed, "its header's magic number is 0, not APXC's"),
]


@pytest.mark.parametrize("module, damage, says", AUTOPERF_DAMAGE)
def test_a_damaged_autoperf_region_is_refused(tmp_path, module, damage, says):
    data = APXC_LOG.read_bytes()
    bad = tmp_path / "bad.darshan"
    bad.write_bytes(
        logcraft.set_module_region(data, module, damage(logcraft.module_region(data, module)))
    )
    with pytest.raises(DarshanLogError, match=f"{module} region: .*{re.escape(says)}"):
        read_log(bad)


def test_an_autoperf_version_iostudy_does_not_know_is_refused(tmp_path):
    data = APXC_LOG.read_bytes()
    raw = logcraft.module_region(data, "APMPI")
    bad = tmp_path / "v2.darshan"
    bad.write_bytes(logcraft.set_module_region(data, "APMPI", raw, version=2))
    with pytest.raises(DarshanLogError, match="APMPI region: module version 2, not 1"):
        read_log(bad)


# PyDarshan's AutoPerf records, read in a process of their own, as JSON
_AUTOPERF_SCRIPT = """
import json, sys, darshan
report = darshan.DarshanReport(sys.argv[1], read_all=False)
out = {}
for mod in ("APMPI", "APXC"):
    if mod in report.modules:
        getattr(report, f"mod_read_all_{mod.lower()}_records")()
        out[mod] = report.records[mod].to_numpy()
print(json.dumps(out, default=lambda v: v.item()))
"""


# APXC's memory and cluster modes by their code (darshan-apxc-log-format.h; PyDarshan's
# apxc.py names them so)
MODES = {
    "memory_mode": ("unknown", "flat", "equal", "split", "cache"),
    "cluster_mode": ("unknown", "all2all", "quad", "hemi", "snc4", "snc2"),
}


def _pydarshan_autoperf(path: Path) -> dict:
    """{module: [{rank, node, values}]} of a log's AutoPerf modules as PyDarshan reads them (in
    a process of its own), the values named as darshan-parser prints them, those not 0 (APXC's
    modes by their code); node: APMPI's MPI_PROCESSOR_NAME of a rank."""
    run = subprocess.run(
        [sys.executable, "-c", _AUTOPERF_SCRIPT, str(path)],
        capture_output=True,
        text=True,
        timeout=300,
        check=True,
    )
    found = json.loads(run.stdout)
    out = {}
    for mod, (header, *ranks) in found.items():
        if mod == "APMPI":
            head = {"MPI_TOTAL_COMM_TIME_VARIANCE": header["variance_total_mpitime"]}
            if header["sync_flag"]:
                head["MPI_TOTAL_COMM_SYNC_TIME_VARIANCE"] = header["variance_total_mpisynctime"]
            per_rank = [(r["node_name"], r["all_counters"]) for r in ranks]
        else:
            head = {
                "APXC_GROUPS": header["ngroups"],
                "APXC_CHASSIS": header["nchassis"],
                "APXC_BLADES": header["nblades"],
                "APXC_APPLICATION_ID": header["appid"],
                **{f"APXC_{m.upper()}": MODES[m].index(header[m]) for m in MODES},
            }
            per_rank = [
                (
                    None,
                    {
                        "APXC_GROUP": r["group"],
                        "APXC_CHASSIS": r["chassis"],
                        "APXC_BLADE": r["blade"],
                        "APXC_NODE": r["node"],
                        **r["counters"],
                    },
                )
                for r in ranks
            ]
        records = [(header["rank"], None, head)] + [
            (r["rank"], node, v) for r, (node, v) in zip(ranks, per_rank, strict=True)
        ]
        out[mod] = [
            {"rank": rank, "node": node, "values": {k: v for k, v in values.items() if v}}
            for rank, node, values in records
        ]
    return out


def _without_consistency(found: dict) -> dict:
    """AutoPerf's records without APXC's flags of modes the same on every node (PyDarshan
    drops them)."""
    return {
        mod: [
            {
                **r,
                "values": {
                    k: v for k, v in r["values"].items() if not k.endswith("_MODE_CONSISTENT")
                },
            }
            for r in records
        ]
        for mod, records in found.items()
    }


AUTOPERF_LOGS = [p for p in LOGS if {"APMPI", "APXC"} & set(_report(p).modules)]


@pytest.mark.parametrize("path", AUTOPERF_LOGS, ids=_flat)
def test_autoperf_records_are_pydarshans_whatever_the_reader_read_before(path):
    """One reader reads them right, whatever AutoPerf log it read before (libdarshan-util
    reads a process's first one only), as PyDarshan reads them in a process of its own."""
    first = read_log(path)["job_records"]
    read_log(APXC_LOG)
    assert read_log(path)["job_records"] == first
    assert _without_consistency(first) == _pydarshan_autoperf(path)


def _stored_counters(st: Path, path: Path) -> Counter:
    """(module, record, rank, node, counter, value) of each of a log's jobcounters rows."""
    con = store.connect(st)
    rows = con.execute(
        "SELECT module, record, rank, node, counter, value, fvalue FROM jobcounters "
        "JOIN jobs USING (log_sha256) WHERE jobs.log_path LIKE ?",
        [f"%/{_name(path)}"],
    ).fetchall()
    found = Counter()
    for *key, value, fvalue in rows:
        assert (value is None) != (fvalue is None)  # in one column
        found[(*key, fvalue if value is None else value)] += 1
    return found


def _pydarshan_bgq(path: Path) -> list[dict]:
    """A log's BG/Q records as PyDarshan's generic reader reads them (every one: a job's record
    has no name, and its DarshanReport keeps named ones only), as _pydarshan_autoperf gives
    AutoPerf's; their counters named by libdarshan-util's bgq_* tables (PyDarshan looks for
    bg/q_* ones, and finds none)."""
    names = backend.counter_names("BGQ") + backend.fcounter_names("BGQ")
    log, records = backend.log_open(str(path)), []
    try:
        while (rec := backend.log_get_generic_record(log, "BG/Q", dtype="numpy")) is not None:
            values = zip(names, [*rec["counters"], *rec["fcounters"]], strict=True)
            values = {n: v.item() for n, v in values if v}
            records.append({"rank": int(rec["rank"]), "node": None, "values": values})
    finally:
        backend.log_close(log)
    return records


JOB_LEVEL_LOGS = [p for p in LOGS if {"APMPI", "APXC", "BG/Q"} & set(_report(p).modules)]


@pytest.mark.parametrize("path", JOB_LEVEL_LOGS, ids=_flat)
def test_job_level_modules_are_stored_as_pydarshan_reads_them(stored, path):
    expected = {**_pydarshan_autoperf(path), "BG/Q": _pydarshan_bgq(path)}
    assert sum(map(len, expected.values())) > 0
    rows = Counter(
        (mod, k, record["rank"], record["node"], counter, value)
        for mod, records in expected.items()
        for k, record in enumerate(records)
        for counter, value in record["values"].items()
    )
    got = Counter(
        row
        for row in _stored_counters(stored, path).elements()
        if not row[4].endswith("_MODE_CONSISTENT")
    )
    assert got == rows


@pytest.mark.browser
def test_the_job_pages_show_the_layers_bytes_and_the_job_level_modules(tmp_path):
    """The job pages of the DFS job (its DAOS bytes), the AutoPerf job and a BG/Q job (their
    job-level modules' counters, with the CSV of every counter), within the page budget in
    Chromium (IOSTUDY_SCREENSHOTS keeps the pictures)."""
    from iostudy.report import report

    if chromium.find_chromium() is None:
        pytest.skip(f"needs Chromium: install Debian's package {chromium.PACKAGE}")
    tree = tmp_path / "logs"
    tree.mkdir()
    for path in (DFS_LOG, APXC_LOG, BGQ_LOG, HDF5):
        (tree / _name(path)).write_bytes(path.read_bytes())
    st = tmp_path / "store"
    assert cli.main(["ingest", str(tree), "--store", str(st), "--study", "modules"]) == 0
    index = report.build(st, "modules", tmp_path / "reports")
    pages = {
        name: index.parent / f"job-{sha}.html"
        for name, sha in store.connect(st)
        .execute("SELECT regexp_extract(log_path, '[^/]+$'), log_sha256 FROM jobs")
        .fetchall()
    }
    dfs = pages[_name(DFS_LOG)].read_text()
    layers = [b for m, b in _pydarshan_bytes(DFS_LOG).items() if m in ("POSIX", "STDIO", "DAOS")]
    for k in (0, 1):  # read, written
        assert f"({sum(b[k] for b in layers):,} bytes)" in dfs
    assert "Job-level modules" not in dfs
    # the tables worked out from PyDarshan's records (the largest MPI time, the BG/Q's nodes)
    apmpi = _pydarshan_autoperf(APXC_LOG)["APMPI"][1:]
    (bgq,) = _pydarshan_bgq(BGQ_LOG)
    calls = Counter()  # per MPI operation, over the ranks
    for rank in apmpi:
        calls.update({k: v for k, v in rank["values"].items() if k.endswith("_CALL_COUNT")})
    for path, table, column, expected in (
        (
            APXC_LOG,
            "apmpi-ranks",
            "mpi_time_s",
            max(r["values"]["MPI_TOTAL_COMM_TIME"] for r in apmpi),
        ),
        (APXC_LOG, "apmpi-operations", "calls", max(calls.values())),
        (APXC_LOG, "apxc-routers", "stalls", None),
        (APXC_LOG, "apxc", "value", None),
        (BGQ_LOG, "bgq", "value", bgq["values"]["BGQ_NNODES"]),
    ):
        page = pages[_name(path)]
        assert "<h2>Job-level modules</h2>" in page.read_text()
        frame = pd.read_csv(page.parent / f"{page.stem}-{table}.csv")
        assert len(frame) and (expected is None or expected in set(frame[column])), table
    for name in (DFS_LOG, APXC_LOG, BGQ_LOG):
        assert chromium.assert_within_budget(pages[_name(name)]) > 0


def _counter_row(value=None, fvalue=None) -> dict:
    where = {"run_id": "r", "log_sha256": "0" * 64, "module": "APMPI", "record": 1, "rank": 3}
    return {
        **where,
        "node": "n1",
        "counter": "MPI_SEND_CALL_COUNT",
        "value": value,
        "fvalue": fvalue,
    }


@pytest.mark.parametrize(
    ("bad", "named"),
    [
        (_counter_row(value=-5), "value = -5"),
        (_counter_row(fvalue=float("nan")), "fvalue = nan"),
        (_counter_row(value=2**70), "value = 1180591620717411303424"),  # past int64: untyped
    ],
)
def test_a_batch_of_counters_is_judged_at_once_and_a_bad_one_still_named(bad, named):
    """A batch's jobcounters rows are judged as one table (row by row took a millisecond a
    log); one out of the store's bounds sends the batch to the row-by-row judgement, which
    names it (the pool then quarantines its log)."""
    good = [_counter_row(value=7), _counter_row(fvalue=0.5)] * 1000

    def columns(rows):
        return logrows.Columns(len(rows), {name: [row[name] for row in rows] for name in rows[0]})

    assert logrows._plausible_at_once("jobcounters", columns(good))
    assert not logrows._plausible_at_once("jobcounters", columns([*good, bad]))
    assert any(named in p for p in storerule.row_problems("jobcounters", bad))


IN_FILES = {"H5D": "h5d", "PNETCDF_VAR": "pnetcdf_var"}  # records naming their file's record


def _pydarshan_file_ids(path: Path) -> dict:
    """{(module token, record id, rank): file_rec_id, None for an H5D version 1 record (which
    had none: the reader's 0)} of a log's datasets and variables, as PyDarshan reads them."""
    report, out = _report(path), {}
    for mod in set(IN_FILES) & set(report.modules):
        report.mod_read_all_records(mod, warnings=False)
        old = mod == "H5D" and report.modules[mod]["ver"] == 1
        for rec in report.records[mod].to_list():
            key = (IN_FILES[mod], int(rec["id"]), int(rec["rank"]))
            out[key] = None if old else int(rec["file_rec_id"])
    return out


def test_every_dataset_and_variable_is_stored_with_its_files_record_id(stored):
    """files.file_record_id of every H5D and PNETCDF_VAR record of every log: PyDarshan's
    file_rec_id (null for H5D version 1), the record id of a record of the same log (its
    file's); null in every other module's rows."""
    con = store.connect(stored)
    compared = 0
    for path in LOGS:
        want = _pydarshan_file_ids(path)
        if not want or _name(path) in IMPLAUSIBLE:
            continue
        rows = con.execute(
            "SELECT module, record_id::VARCHAR, rank, file_record_id::VARCHAR, file_record_id IN "
            "(SELECT record_id FROM files o WHERE o.log_sha256 = f.log_sha256) FROM files f "
            "JOIN jobs USING (log_sha256) WHERE jobs.log_path LIKE ? AND module IN (?, ?)",
            [f"%/{_name(path)}", *IN_FILES.values()],
        ).fetchall()
        got = {(m, int(r), k): None if f is None else int(f) for m, r, k, f, _ in rows}
        assert got == want, path
        assert all(linked for *_, f, linked in rows if f is not None), path
        compared += sum(v is not None for v in want.values())
    assert compared > 0
    others = con.execute(
        "SELECT count(*) FROM files WHERE module NOT IN ('h5d', 'pnetcdf_var') "
        "AND file_record_id IS NOT NULL"
    ).fetchone()
    assert others == (0,)
