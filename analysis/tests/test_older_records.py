"""Records of an older module version (one libdarshan-util 3.5.0 up-converts as it reads it) are
checked whole before it reads a log, at the size it reads them at: iostudy.logs.recordlayout's
table, read off darshan-util 3.5.0's darshan-*-logutils.c (the DARSHAN_*_FILE_SIZE_* macros).

PyDarshan is the oracle of those sizes: each region of an older version in a real log (the test
data's, among them the release logs of Darshan 3.0.0 to 3.1.6 in both byte orders, the
PyDarshan wheel's samples and those kept here) is exactly as many records of that size as
PyDarshan reads of the module, and the check passes it. A region of such a version that is not
whole records is refused: test_every_module's
test_a_region_that_is_not_whole_records_is_refused_before_the_reader.
"""

import functools
from pathlib import Path

import darshan
import pytest

from iostudy.logs import logregions
from iostudy.logs.modules import CURRENT_VERSIONS, GENERIC_MODULES
from iostudy.logs.recordlayout import record_size
from tests import logcraft
from tests.testdata import DARSHAN_LOGS, OWN_LOGS

WHEEL = Path(darshan.__file__).parent
REAL_LOGS = [
    *sorted(DARSHAN_LOGS.rglob("*.darshan")),
    *sorted(WHEEL.rglob("*.darshan")),
    *sorted(OWN_LOGS.rglob("*.darshan")),
]
# The older versions the real logs hold (more would be welcome; fewer: data missing) ...
HELD = {
    ("POSIX", 1),
    ("POSIX", 3),
    ("MPI-IO", 1),
    ("MPI-IO", 2),
    ("STDIO", 1),
    ("H5F", 1),
    ("H5F", 2),
    ("H5D", 1),
    ("PNETCDF_FILE", 1),
    ("PNETCDF_FILE", 2),
}
# ... and those none holds: POSIX 2 (no release wrote it), BG/Q 1 (Darshan 3.0 on Blue Gene/Q;
# crafted in test_every_module)
NOT_HELD = {("POSIX", 2), ("BG/Q", 1)}


def _id(path: Path) -> str:
    for base in (DARSHAN_LOGS, WHEEL, OWN_LOGS):
        if path.is_relative_to(base):
            return path.relative_to(base).as_posix()
    raise AssertionError(path)


@functools.cache
def _older(path: Path) -> tuple:
    """(module, version, records PyDarshan reads) of each module the log holds at an older
    version."""
    report = darshan.DarshanReport(str(path), read_all=False)
    found = []
    for mod, info in report.modules.items():
        if mod in GENERIC_MODULES and info["ver"] != CURRENT_VERSIONS[mod]:
            report.mod_read_all_records(mod, dtype="numpy")
            found.append((mod, info["ver"], len(report.records[mod])))
    return tuple(found)


def test_every_version_libdarshan_util_reads_has_a_record_size():
    """darshan_log_get_*: a module version from 1 to the current one is read (and up-converted),
    any other refused; each version read has a size, every older one a real log's or named."""
    for mod in GENERIC_MODULES:
        for version in range(1, CURRENT_VERSIONS[mod] + 1):
            assert record_size(mod, version), (mod, version)
            assert version == CURRENT_VERSIONS[mod] or (mod, version) in HELD | NOT_HELD
        assert record_size(mod, 0) is None
        assert record_size(mod, CURRENT_VERSIONS[mod] + 1) is None


@pytest.mark.parametrize("path", REAL_LOGS, ids=_id)
def test_an_older_versions_region_is_as_many_records_as_pydarshan_reads(path):
    data = path.read_bytes()
    order = logcraft.corpus.read_header(data).order
    for mod, version, count in _older(path):
        raw = logcraft.module_region(data, mod, stored=version)
        assert len(raw) == count * record_size(mod, version), (mod, version, len(raw), count)
        assert logregions.native_records(mod, raw, order, version) is None  # whole: passed


def test_the_real_logs_hold_every_older_version_held():
    held = {(mod, version) for path in REAL_LOGS for mod, version, _ in _older(path)}
    assert held == HELD
