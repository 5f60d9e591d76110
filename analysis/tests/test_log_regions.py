"""What the check before libdarshan-util takes from the regions it inflates (the name table, the
records of modules stored at their current version) against PyDarshan's own reading of the
same logs: every real test log, crafted name tables (duplicate ids, empty names, names that are
not UTF-8) and damaged regions. PyDarshan (libdarshan-util through its own functions) is the
oracle; the log-format reference, section 4, says how it resolves duplicate ids."""

from pathlib import Path

import darshan
import numpy as np
import pytest
from darshan.backend import cffi_backend as backend

from iostudy.logs import logregions
from iostudy.logs.darshanlog import DarshanLogError, read_log
from iostudy.logs.darshanlog_worker import open_log
from iostudy.logs.logregions import DEFAULT_LIMITS, LogRefused
from iostudy.logs.modules import CURRENT_VERSIONS, GENERIC_MODULES
from iostudy.logs.recordlayout import record_layout

from . import logcraft
from .testdata import DARSHAN_LOGS, OWN_LOGS, RELEASE_350

REAL_LOGS = sorted(p.relative_to(DARSHAN_LOGS).as_posix() for p in DARSHAN_LOGS.rglob("*.darshan"))
OWN = sorted(OWN_LOGS.rglob("*.darshan"))  # DFS, DAOS, APXC, APMPI


def _pydarshan_names(path) -> dict:
    log = backend.log_open(str(path))
    try:
        return backend.log_get_name_records(log)
    finally:
        backend.log_close(log)


def _pydarshan_records(path, module) -> list[tuple]:
    """(id, rank, counters, fcounters) of every record PyDarshan reads of a module, named or
    not (log_get_generic_record, one at a time)."""
    log = backend.log_open(str(path))
    try:
        out = []
        while (rec := backend.log_get_generic_record(log, module, dtype="numpy")) is not None:
            out.append((rec["id"], rec["rank"], list(rec["counters"]), list(rec["fcounters"])))
        return out
    finally:
        backend.log_close(log)


def _checked(path):
    with open_log(str(path), DEFAULT_LIMITS) as checked:
        return checked


def _as_tuples(module, stored: bytes) -> list[tuple]:
    records = np.frombuffer(stored, record_layout(module).dtype)
    return [
        (int(r["id"]), int(r["rank"]), r["counters"].tolist(), r["fcounters"].tolist())
        for r in records
    ]


@pytest.mark.parametrize("path", [DARSHAN_LOGS / n for n in REAL_LOGS] + OWN, ids=lambda p: p.name)
def test_the_checks_names_and_records_are_pydarshans(path):
    checked = _checked(path)
    version = path.read_bytes()[:4]
    if version == b"3.00":  # entries (id, length, bytes): left to libdarshan-util
        assert checked.names is None
    else:
        assert checked.names == _pydarshan_names(path)
    log = backend.log_open(str(path))
    modules = backend.log_get_modules(log)
    backend.log_close(log)
    generic = {m: info["ver"] for m, info in modules.items() if m in GENERIC_MODULES}
    current = {m for m, version in generic.items() if version == CURRENT_VERSIONS[m]}
    assert set(checked.records) == current
    for module, stored in checked.records.items():
        assert _as_tuples(module, stored) == _pydarshan_records(path, module), module


def test_big_endian_records_come_in_this_machines_order():
    name = "release_logs/mpi-io-test-ppc64-3.1.8.darshan"  # POSIX v4, MPI-IO v3, STDIO v2, BG/Q v2
    checked = _checked(DARSHAN_LOGS / name)
    assert set(checked.records) == {"POSIX", "MPI-IO", "STDIO", "BG/Q"}
    bgq = _as_tuples("BG/Q", checked.records["BG/Q"])
    assert bgq == _pydarshan_records(DARSHAN_LOGS / name, "BG/Q")
    posix = _as_tuples("POSIX", checked.records["POSIX"])
    assert posix == _pydarshan_records(DARSHAN_LOGS / name, "POSIX")
    assert all(rec[0] in checked.names for rec in posix)


def test_uncompressed_regions_are_parsed_as_stored(tmp_path):
    path = tmp_path / "raw.darshan"
    path.write_bytes(logcraft.uncompressed((DARSHAN_LOGS / RELEASE_350).read_bytes()))
    checked = _checked(path)
    assert checked.names == _pydarshan_names(path) and len(checked.names) == 7
    assert _as_tuples("POSIX", checked.records["POSIX"]) == _pydarshan_records(path, "POSIX")


def _with_names(tmp_path, entries) -> str:
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    path = tmp_path / "names.darshan"
    path.write_bytes(logcraft.set_name_region(release, logcraft.name_region(entries)))
    return str(path)


def test_duplicate_ids_and_empty_names_resolve_as_libdarshan_utils(tmp_path):
    posix_id = logcraft.records((DARSHAN_LOGS / RELEASE_350).read_bytes(), "POSIX")[0][0]
    entries = [
        (posix_id, b"/first"),
        (posix_id, b"/second"),
        (7, b""),
        (7, b"/later"),
        (8, b""),
        (9, b"/nine"),
        (9, b""),
    ]
    path = _with_names(tmp_path, entries)
    expected = _pydarshan_names(path)
    # what the reference says of libdarshan-util, so that the oracle is seen to disagree with
    # a plain first-wins or last-wins table
    assert expected == {posix_id: "/first", 7: "/later", 8: "", 9: "/nine"}
    assert _checked(path).names == expected


def test_a_name_that_is_not_utf8_keeps_its_bytes_as_escapes(tmp_path):
    path = _with_names(tmp_path, [(1, b"/data/caf\xe9-\xff"), (2, b"/data/ok")])
    assert _checked(path).names == {1: "/data/caf\\xe9-\\xff", 2: "/data/ok"}


@pytest.mark.parametrize("tail", [b"\x01\x02\x03", b"\x01" * 8 + b"/no/terminator", b"\x00" * 8])
def test_a_name_region_that_does_not_end_on_a_whole_entry_is_refused(tmp_path, tail):
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    entries = logcraft.name_entries(release)
    path = tmp_path / "cut-names.darshan"
    path.write_bytes(logcraft.set_name_region(release, logcraft.name_region(entries) + tail))
    with pytest.raises(LogRefused, match=f"name region: {len(tail)} bytes after its last whole"):
        _checked(path)
    # libdarshan-util would abort (the reference, section 4); read_log says why instead
    with pytest.raises(DarshanLogError, match="name region"):
        read_log(path)


def test_a_module_region_that_is_not_whole_records_is_refused(tmp_path):
    release = (DARSHAN_LOGS / RELEASE_350).read_bytes()
    posix = logcraft.module_region(release, "POSIX")
    path = tmp_path / "cut-posix.darshan"
    path.write_bytes(logcraft.set_module_region(release, "POSIX", posix + b"\0" * 100))
    size = record_layout("POSIX").size
    with pytest.raises(LogRefused, match=f"POSIX region: {size + 100} bytes, not a whole"):
        _checked(path)


# The wheel's sample logs: LUSTRE records of version 1 (one OST id per stripe after 7 values).
WHEEL_LOGS = sorted((Path(darshan.__file__).parent / "examples").rglob("*.darshan"))


def pydarshan_lustre_count(path) -> int:
    """How many LUSTRE records PyDarshan reads of a log (it stops at the first it cannot)."""
    log = backend.log_open(str(path))
    try:
        count = 0
        while backend.log_get_record(log, "LUSTRE") is not None:
            count += 1
        return count
    finally:
        backend.log_close(log)


@pytest.mark.parametrize(
    "path", [DARSHAN_LOGS / n for n in REAL_LOGS] + WHEEL_LOGS, ids=lambda p: p.name
)
def test_the_walked_records_are_pydarshans(path):
    """Every real log's LUSTRE region walks whole, into as many records as PyDarshan reads; its
    HEATMAP region into the records libdarshan-util reads (read_log's)."""
    data = path.read_bytes()
    header = logregions._header(data[:1328])
    regions = {r.name: r for r in header.regions}
    checked = _checked(path)
    if "LUSTRE" in regions:
        lustre = regions["LUSTRE"]
        stored = data[lustre.offset : lustre.offset + lustre.length]
        raw = logcraft._inflate(logcraft.corpus.read_header(data), stored)
        starts = logregions.walk_records("LUSTRE", lustre.version, raw, header.order)
        assert len(starts) == pydarshan_lustre_count(path)
    assert (checked.heatmaps is not None) == ("HEATMAP" in regions)
    if "HEATMAP" in regions:
        assert checked.heatmaps == read_log(path)["heatmap_records"]
