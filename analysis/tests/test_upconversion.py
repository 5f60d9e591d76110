"""A counter the writing module version did not have (issue 42): libdarshan-util up-converts an
older record and fills such a counter with -1.

The table (iostudy.logs.upconversion.ADDED, read off darshan-util 3.5.0's up-conversion code) is
checked against every real test log as PyDarshan reads it. The real older records are the
release logs' (POSIX 1 and 3, MPI-IO 1 and 2, STDIO 1).
"""

import warnings
from pathlib import Path

import darshan
import numpy as np
from darshan.backend import cffi_backend as backend

from iostudy.logs import modules, plausibility, upconversion
from tests.testdata import DARSHAN_LOGS

# the test data's and the PyDarshan wheel's sample logs (its examples and tests)
REAL_LOGS = sorted(DARSHAN_LOGS.rglob("*.darshan")) + sorted(
    Path(darshan.__file__).parent.rglob("*.darshan")
)
# What the real logs hold of older versions (more would be welcome; fewer: data missing)
OLDER = {("POSIX", 1), ("POSIX", 3), ("MPI-IO", 1), ("MPI-IO", 2), ("STDIO", 1)}


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
