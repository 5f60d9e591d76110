"""A counter the writing module version did not have (issue 42): libdarshan-util up-converts an
older record and fills such a counter with -1; iostudy stores it as null, never sums it, shows
it as "not recorded (module version N)", and allows that -1 for that version only.

The table (iostudy.logs.upconversion.ADDED, read off darshan-util 3.5.0's up-conversion code) is
checked against every real test log as PyDarshan reads it. The real older records are the
release logs' (POSIX 1 and 3, MPI-IO 1 and 2, STDIO 1) and those Darshan 3.1.6, 3.1.8 and 3.3.1
wrote of iostudy's own programs (tests/data/darshan-logs/darshan-built: H5F 1 and 2,
PNETCDF_FILE 1 and 2; version 2 is the issue's, a 3.3.1 log of 512 processes). A version 2
PNETCDF_FILE record of chosen opens is crafted too: the 3.41 PnetCDF log with its record written
in version 2's layout (tests.logcraft), which libdarshan-util up-converts as it reads it.
"""

import json
import warnings
from pathlib import Path

import darshan
import numpy as np
import pandas as pd
import pytest
from darshan.backend import cffi_backend as backend

from iostudy.cli.cli import main
from iostudy.logs import modules, plausibility, upconversion
from iostudy.metrics import jobdetail
from iostudy.report import jobpage
from iostudy.store import store
from tests import logcraft
from tests.testdata import DARSHAN_LOGS, OWN_LOGS, RELEASE_350

PNETCDF = (
    "ior_pnetcdf_hdf5/shane_ior-PNETCDF_id438100-438100_11-9-41525-10280033558448664385_1.darshan"
)
# Its 4 ranks created the file and opened it again, collectively: version 2 counted both as
# collective opens (as the 3.3.1 log does: 0 independent, 512 collective opens of 512 ranks).
COLL_OPENS = 8
# the test data's, the PyDarshan wheel's sample logs (its examples and tests) and those kept here
REAL_LOGS = [
    *sorted(DARSHAN_LOGS.rglob("*.darshan")),
    *sorted(Path(darshan.__file__).parent.rglob("*.darshan")),
    *sorted(OWN_LOGS.rglob("*.darshan")),
]
# What the real logs hold of older versions (more would be welcome; fewer: data missing)
OLDER = {
    ("POSIX", 1),
    ("POSIX", 3),
    ("MPI-IO", 1),
    ("MPI-IO", 2),
    ("STDIO", 1),
    ("H5F", 1),
    ("H5F", 2),
    ("PNETCDF_FILE", 1),
    ("PNETCDF_FILE", 2),
}
# Darshan 3.1.6's and 3.1.8's logs of iostudy's own programs: H5F 1 and 2, PNETCDF_FILE 1 and 2
BUILT = OWN_LOGS / "darshan-built"
BUILT_OLDER = {
    "darshan-3.1.6-hdf5_file-h5f-v1": ("H5F", 1),
    "darshan-3.1.8-hdf5_file-h5f-v2": ("H5F", 2),
    "darshan-3.1.6-pnetcdf_file-v1": ("PNETCDF_FILE", 1),
    "darshan-3.1.8-pnetcdf_file-v2": ("PNETCDF_FILE", 2),
}
STDIO_V1_LOGS = [f"release_logs/mpi-io-test-x86_64-3.1.{v}.darshan" for v in range(7)]
NOT_RECORDED = "not recorded (module version 2)"


def _pydarshan(path) -> dict:
    """{module: (its version, counters, fcounters: records x names, as PyDarshan reads them)}
    of a log's record modules."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        report = darshan.DarshanReport(str(path), read_all=False)
        found = {}
        for mod in set(modules.RECORD_MODULES) & set(report.modules):
            report.mod_read_all_records(mod, dtype="numpy")
            recs = report.records[mod]
            counters, fcounters = ([r[kind] for r in recs] for kind in ("counters", "fcounters"))
            found[mod] = (
                report.modules[mod]["ver"],
                np.array(counters).reshape(len(recs), -1),
                np.array(fcounters).reshape(len(recs), -1),
            )
    return found


def _pnetcdf_v2(indep_opens=0, coll_opens=COLL_OPENS) -> bytes:
    return logcraft.pnetcdf_file_v2((DARSHAN_LOGS / PNETCDF).read_bytes(), indep_opens, coll_opens)


def test_the_table_names_counters_of_older_versions():
    for mod, added in upconversion.ADDED.items():
        names = set(backend.counter_names(mod)) | set(backend.fcounter_names(mod))
        for version, counters in added.items():
            assert 1 < version <= modules.CURRENT_VERSIONS[mod]
            assert set(counters) <= names
        current = modules.CURRENT_VERSIONS[mod]
        assert upconversion.not_recorded(mod, current) == frozenset()
        assert upconversion.not_recorded(mod, 1) == upconversion.ever_not_recorded(mod)


def test_the_table_is_what_libdarshan_util_fills_in_every_real_log():
    """Every counter the table says a version lacked is -1 in every record of that version
    (POSIX_RENAMED_FROM, a record id: 0); every counter -1 in every record of an older
    version is in the table, or one the runtime sets when not monitored."""
    seen, always = set(), {}
    for path in REAL_LOGS:
        for mod, (version, counters, fcounters) in _pydarshan(path).items():
            if version == modules.CURRENT_VERSIONS[mod] or not len(counters):
                continue
            seen.add((mod, version))
            names = backend.counter_names(mod) + backend.fcounter_names(mod)
            values = np.hstack([counters, fcounters])
            missing = upconversion.not_recorded(mod, version)
            for k, name in enumerate(names):
                if name in missing:
                    filled = 0 if name == "POSIX_RENAMED_FROM" else -1
                    assert (values[:, k] == filled).all(), (path.name, mod, version, name)
            minus_one = {n for k, n in enumerate(names) if (values[:, k] == -1).all()}
            always[mod, version] = always.get((mod, version), minus_one) & minus_one
    assert seen >= OLDER
    for (mod, version), names in always.items():
        assert names <= upconversion.not_recorded(mod, version) | set(
            plausibility.NOT_MONITORED.get(mod, ())
        ), (mod, version)


# name -> (the crafted log, what its quarantine reason names, what it must not name)
MINUS_ONE_HAD = {
    # version 2 had the opens: PNETCDF_FILE_OPENS = -1 + 0, not a counter it lacked
    "pnetcdf-v2-opens": (
        lambda: _pnetcdf_v2(-1, 0),
        "PNETCDF_FILE_OPENS = -1 not in [0, 2^62)",
        "PNETCDF_FILE_CREATES",
    ),
    "pnetcdf-v3-creates": (
        lambda: logcraft.set_counter(
            (DARSHAN_LOGS / PNETCDF).read_bytes(), "PNETCDF_FILE", 0, "PNETCDF_FILE_CREATES", -1
        ),
        "PNETCDF_FILE_CREATES = -1 not in [0, 2^62)",
        None,
    ),
    "stdio-v2-fdopens": (
        lambda: logcraft.set_counter(
            (DARSHAN_LOGS / RELEASE_350).read_bytes(), "STDIO", 0, "STDIO_FDOPENS", -1
        ),
        "STDIO_FDOPENS = -1 not in [0, 2^62)",
        None,
    ),
    "posix-v4-filenos": (
        lambda: logcraft.set_counter(
            (DARSHAN_LOGS / RELEASE_350).read_bytes(), "POSIX", 0, "POSIX_FILENOS", -1
        ),
        "POSIX_FILENOS = -1 not in [0, 2^62)",
        None,
    ),
    "mpiio-v3-close-start": (
        lambda: logcraft.set_counter(
            (DARSHAN_LOGS / RELEASE_350).read_bytes(),
            "MPI-IO",
            0,
            "MPIIO_F_CLOSE_START_TIMESTAMP",
            -1.0,
        ),
        "MPIIO_F_CLOSE_START_TIMESTAMP = -1.0 s not in [0, 2^32 s)",
        None,
    ),
}


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """The crafted version 2 log, the logs with a -1 planted where the version had the counter,
    and the real STDIO v1 release logs, ingested: (store, quarantine reasons by log)."""
    root = tmp_path_factory.mktemp("upconversion")
    tree = root / "logs"
    tree.mkdir()
    (tree / "pnetcdf-v2.darshan").write_bytes(_pnetcdf_v2())
    for name, (craft, *_) in MINUS_ONE_HAD.items():
        (tree / f"{name}.darshan").write_bytes(craft())
    for name in STDIO_V1_LOGS:
        (tree / name.rsplit("/", 1)[1]).write_bytes((DARSHAN_LOGS / name).read_bytes())
    st = root / "store"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    con = store.connect(st)
    rows = con.execute("SELECT path, reason FROM quarantine").fetchall()
    return st, {p.rsplit("/", 1)[1][: -len(".darshan")]: r for p, r in rows}


def _job(st, name: str) -> tuple:
    con = store.connect(st)
    return con.execute(
        "SELECT log_sha256, flags FROM jobs WHERE log_path LIKE ?", [f"%/{name}.darshan"]
    ).fetchone()


def test_an_upconverted_pnetcdf_file_ingests_with_what_it_lacked_null(ingested, tmp_path):
    st, reasons = ingested
    assert "pnetcdf-v2" not in reasons, reasons.get("pnetcdf-v2")
    sha, flags = _job(st, "pnetcdf-v2")
    assert json.loads(flags) == [
        f"PNETCDF_FILE records of module version 2: bytes_read, bytes_written, meta_time "
        f"{NOT_RECORDED}, stored as null"
    ]
    con = store.connect(st)
    rows = con.execute(
        "SELECT module, bytes_read, bytes_written, opens, meta_time, open_start, "
        "close_end FROM files WHERE log_sha256 = ?",
        [sha],
    ).fetchall()
    by_module = {r[0]: r[1:] for r in rows}
    path = tmp_path / "v2.darshan"
    path.write_bytes(_pnetcdf_v2())
    read = _pydarshan(path)
    version, counters, fcounters = read["PNETCDF_FILE"]
    assert version == 2
    times = dict(zip(backend.fcounter_names("PNETCDF_FILE"), fcounters[0], strict=True))
    assert by_module["pnetcdf"] == (
        None,
        None,
        COLL_OPENS,
        None,
        times["PNETCDF_FILE_F_OPEN_START_TIMESTAMP"],
        times["PNETCDF_FILE_F_CLOSE_END_TIMESTAMP"],
    )
    for mod, prefix in (("POSIX", "POSIX"), ("MPI-IO", "MPIIO"), ("STDIO", "STDIO")):
        names = backend.counter_names(mod)
        c = read[mod][1]
        expected = tuple(
            int(c[:, names.index(f"{prefix}_BYTES_{d}")].sum()) for d in ("READ", "WRITTEN")
        )
        assert by_module[modules.TOKENS[mod]][:2] == expected, mod


@pytest.mark.parametrize("name", MINUS_ONE_HAD)
def test_a_minus_one_in_a_counter_the_version_had_is_quarantined(ingested, name):
    _, reasons = ingested
    _, named, not_named = MINUS_ONE_HAD[name]
    assert name in reasons
    assert named in reasons[name]
    if not_named:
        assert not_named not in reasons[name]


def test_real_stdio_v1_logs_stored_and_summarised_without_the_readers_minus_one(ingested, capsys):
    """STDIO_FDOPENS is -1 in the release logs' STDIO v1 records: their stored opens and the
    summary's are STDIO_OPENS alone, and they are stored without a flag."""
    st, reasons = ingested
    con = store.connect(st)
    for name in STDIO_V1_LOGS:
        short = name.rsplit("/", 1)[1][: -len(".darshan")]
        assert short not in reasons
        sha, flags = _job(st, short)
        assert flags is None
        version, counters, _ = _pydarshan(DARSHAN_LOGS / name)["STDIO"]
        assert version == 1
        opens = int(counters[:, backend.counter_names("STDIO").index("STDIO_OPENS")].sum())
        (stored,) = con.execute(
            "SELECT sum(opens) FROM files WHERE module = 'stdio' AND log_sha256 = ?", [sha]
        ).fetchone()
        assert stored == opens
        capsys.readouterr()
        assert main(["log", "summary", "--json", str(DARSHAN_LOGS / name)]) == 0
        summary = json.loads(capsys.readouterr().out)
        stdio = next(m for m in summary["modules"] if m["name"] == "STDIO")
        assert stdio["opens"] == opens
        assert stdio["version"] == 1


def test_real_h5f_and_pnetcdf_file_records_of_older_versions_stored_with_what_they_lacked_null(
    tmp_path,
):
    """The real H5F 1 and 2 and PNETCDF_FILE 1 and 2 records (Darshan 3.1.6 and 3.1.8): their
    opens (PnetCDF's: independent plus collective, a create counted as an open) and open and
    close times as PyDarshan reads them, what their version lacked null, the job flagged."""
    tree = tmp_path / "logs"
    tree.mkdir()
    for name in BUILT_OLDER:
        (tree / f"{name}.darshan").write_bytes((BUILT / f"{name}.darshan").read_bytes())
    st = tmp_path / "store"
    assert main(["ingest", str(tree), "--store", str(st)]) == 0
    con = store.connect(st)
    assert con.execute("SELECT count(*) FROM quarantine").fetchone() == (0,)
    for name, (mod, version) in BUILT_OLDER.items():
        found, counters, fcounters = _pydarshan(BUILT / f"{name}.darshan")[mod]
        assert found == version
        prefix = modules.FPREFIX[mod]
        times = dict(zip(backend.fcounter_names(mod), fcounters[0], strict=True))
        opens = int(counters[0, backend.counter_names(mod).index(f"{mod}_OPENS")])
        sha, flags = _job(st, name)
        columns = ("bytes_read, bytes_written, " if mod == "PNETCDF_FILE" else "") + "meta_time"
        assert json.loads(flags) == [
            f"{mod} records of module version {version}: {columns} not recorded (module "
            f"version {version}), stored as null"
        ]
        (row,) = con.execute(
            "SELECT bytes_read, bytes_written, meta_time, opens, open_start, close_end FROM files "
            "WHERE log_sha256 = ? AND module = ?",
            [sha, modules.TOKENS[mod]],
        ).fetchall()
        assert row == (
            None,
            None,
            None,
            opens,
            times[f"{prefix}OPEN_START_TIMESTAMP"],
            times[f"{prefix}CLOSE_END_TIMESTAMP"],
        ), name


def test_log_summary_says_not_recorded(tmp_path, capsys):
    path = tmp_path / "v2.darshan"
    path.write_bytes(_pnetcdf_v2())
    assert main(["log", "summary", "--json", str(path)]) == 0
    summary = json.loads(capsys.readouterr().out)
    pnetcdf = next(m for m in summary["modules"] if m["name"] == "PNETCDF_FILE")
    assert (pnetcdf["bytes_read"], pnetcdf["bytes_written"], pnetcdf["opens"]) == (
        None,
        None,
        COLL_OPENS,
    )
    assert pnetcdf["version"] == 2
    assert pnetcdf["top_files"][0]["bytes_read"] is None
    assert main(["log", "summary", str(path)]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        # PnetCDF's file records count no operations: none is said (not "in 0 ops")
        f"PNETCDF_FILE: 1 records, 1 files read {NOT_RECORDED}, wrote {NOT_RECORDED}, "
        f"{COLL_OPENS} opens" in out
    )


def test_the_job_page_says_not_recorded(ingested):
    st, _ = ingested
    sha, _ = _job(st, "pnetcdf-v2")
    con = store.connect(st)
    job = con.execute("SELECT * FROM jobs WHERE log_sha256 = ?", [sha]).df().iloc[0]
    stored = jobdetail.page_rows_of(con, [sha])
    files = stored["files"]
    rows = jobpage.JobRows(files, None, None, stored["accesssizes"], stored["heatmap"])
    findings = pd.DataFrame(columns=["rule", "found", "advice"])
    tables = {
        item["id"]: (item, df)
        for _, items in jobpage.sections(job, rows, findings, "j")
        for item, df in items
    }
    modules_item, per_module = tables["j-modules"]
    row = per_module.set_index("module").loc["PNETCDF_FILE"]
    assert (row["bytes_read"], row["bytes_written"], row["meta_time"], row["meta_pct"]) == (
        NOT_RECORDED,
        NOT_RECORDED,
        NOT_RECORDED,
        NOT_RECORDED,
    )
    assert row["opens"] == COLL_OPENS
    assert NOT_RECORDED in json.dumps(modules_item["table"])
    assert per_module.set_index("module").loc["POSIX", "bytes_read"] > 0  # numbers elsewhere
    _, by_bytes = tables["j-files-by-bytes"]
    row = by_bytes.set_index("module").loc["PNETCDF_FILE"]
    assert (row["bytes_read"], row["bytes"]) == (NOT_RECORDED, NOT_RECORDED)
