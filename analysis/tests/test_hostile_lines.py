"""Hostile JSON at ingest (issue 41): a run's components.jsonl and adaptive.jsonl each hold good
lines around one hostile line, and its report.json a performance value that is no number the
store keeps. Ingest exits normally, keeps the good lines, leaves the bad one out and names it in
the quarantine (the field and value, or the limit); the store it made imports at another site.
The line limits (iostudy.core.jsonlimits) on their own at the end."""

import functools
import io
import json
import math

import pytest

from iostudy.benchmarks import adaptive, components
from iostudy.cli.cli import main
from iostudy.core import jsonlimits
from iostudy.store import store

from .rundirs import manifest

RUN = "20260302T090000Z-hostile-local"
FIO_TAGS = {"check": "fio_check", "system": "local", "environ": "openmpi", "repetition": 0}
ADAPTIVE_TAGS = {"check": "adaptive_check", "system": "local", "environ": "openmpi"}
LIMIT = f"longer than {jsonlimits.MAX_LINE} bytes"


def _fio(**fields) -> dict:
    """A components.jsonl record as fio_check writes it, with ``fields`` set."""
    report = {"jobs": [{"write": {"io_bytes": 2 << 26, "bw_bytes": 300 << 20}}]}
    (rec,) = components.fio_records(report, "write", 2, 4 << 20)
    return {"log_tags": FIO_TAGS, **rec, **fields}


def _adaptive(**fields) -> dict:
    """An adaptive.jsonl record as adaptive_check writes it, with ``fields`` set."""
    parsed = {
        "mode": "adaptive",
        "adapt": True,
        "writers": 8,
        "targets": 2,
        "bytes": 8 << 20,
        "bytes_per_writer": 1 << 20,
        "seconds": 0.5,
        "mib_s": 16.0,
        "moves": 2,
        "index_s": 0.01,
        "target_s": [0.3, 0.5],
        "writers_per_target": [6, 2],
    }
    return {"log_tags": ADAPTIVE_TAGS, **adaptive.record(parsed, True, 1), **fields}


def _raw(rec: dict, key: str, text: str) -> str:
    """rec's JSON line with the value of key written as ``text`` (what json.dumps never writes)."""
    return json.dumps({**rec, key: "@"}).replace('"@"', text)


# name -> (file, the hostile line (or what makes it, when large), what its quarantine reason says)
HOSTILE = {
    "deep-array": ("components.jsonl", "[" * 100_000 + "]" * 100_000, ["nested deeper than 32"]),
    "deep-object": ("adaptive.jsonl", '{"a":' * 100_000 + "1" + "}" * 100_000, ["nested deeper"]),
    "count-10e400": (
        "components.jsonl",
        json.dumps(_fio(jobs=10**400)),
        ["jobs = 1000000", "not in [0, 2^62)"],
    ),
    "bytes-10e400": (
        "adaptive.jsonl",
        json.dumps(_adaptive(bytes=10**400)),
        ["bytes = 1000000", "not in [0, 2^62)"],
    ),
    "target-number": ("components.jsonl", json.dumps(_fio(target=5)), ["target = 5: not a string"]),
    "operation-object": (
        "components.jsonl",
        json.dumps(_fio(operation={})),
        ["operation = {}: not a string"],
    ),
    "count-string": (
        "components.jsonl",
        json.dumps(_fio(block="4096")),
        ["block = '4096': not an integer"],
    ),
    "count-float": ("components.jsonl", json.dumps(_fio(jobs=2.0)), ["jobs = 2.0: not an integer"]),
    "count-bool": (
        "adaptive.jsonl",
        json.dumps(_adaptive(moves=True)),
        ["moves = True: not an integer"],
    ),
    "tag-system-number": (
        "components.jsonl",
        json.dumps(_fio(log_tags={"check": "fio_check", "system": 7})),
        ["system = 7: not a string"],
    ),
    "line-50mb": (
        "components.jsonl",
        lambda: json.dumps(_fio(operation="w" * 50_000_000)),
        [LIMIT],
    ),
    "rate-infinity": (
        "components.jsonl",
        json.dumps(_fio(mib_s=math.inf)),
        ["Infinity: not a finite number"],
    ),
    "rate-1e999": (
        "adaptive.jsonl",
        _raw(_adaptive(), "mib_s", "1e999"),
        ["1e999: not a finite number"],
    ),
    "rate-negative": (
        "components.jsonl",
        json.dumps(_fio(aggregate_mib_s=-1.5)),
        ["aggregate_mib_s = -1.5: not finite, >= 0"],
    ),
    "counts-negative": (
        "adaptive.jsonl",
        json.dumps(_adaptive(writers=-8, targets=-2)),
        ["writers = -8: not in [0, 2^62)", "targets = -2: not in [0, 2^62)"],
    ),
    "time-nan": (
        "adaptive.jsonl",
        json.dumps(_adaptive(index_s=math.nan)),
        ["NaN: not a finite number"],
    ),
    "lone-surrogate": (
        "components.jsonl",
        json.dumps(_fio(operation="\ud800")),
        ["operation = '\\ud800': not UTF-8 text"],
    ),
    "not-utf8": (
        "adaptive.jsonl",
        json.dumps(_adaptive()).replace("adaptive", "ad\udcffaptive", 1),
        ["not UTF-8"],
    ),
}
GOOD = {
    "components.jsonl": (_fio(), _fio(operation="read")),
    "adaptive.jsonl": (_adaptive(), _adaptive(mode="mpiio", adapt=False)),
}
TABLE = {"components.jsonl": "components", "adaptive.jsonl": "adaptive"}
# report.json: a test case with a performance value the store keeps and one it does not
PERF = {
    "local:default:write_mib_s": [300.0, 250.0, -0.2, None, "MiB/s", "pass"],
    "local:default:read_mib_s": [math.inf, 250.0, -0.2, None, "MiB/s", "pass"],
}


def _case_dir(name: str) -> str:
    return f"{TABLE[HOSTILE[name][0]]}_{name}"


def _write_run(results) -> None:
    """results/RUN: its manifest, a report.json and, per hostile line, a test case's folder
    with its file: a good line, the hostile one, another good line."""
    run = results / RUN
    output = run / "reframe" / "output" / "local" / "default" / "openmpi"
    output.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(manifest(RUN)))
    for name, (file, line, _) in HOSTILE.items():
        first, last = (json.dumps(rec) for rec in GOOD[file])
        (output / _case_dir(name)).mkdir()
        text = f"{first}\n{line() if callable(line) else line}\n{last}\n"
        (output / _case_dir(name) / file).write_bytes(text.encode(errors="surrogateescape"))
    case = {"name": "fio_check", "system": "local", "environ": "openmpi", "perfvalues": PERF}
    report = {"runs": [{"testcases": [case]}]}
    (run / "reframe" / "report.json").write_text(json.dumps(report))


@pytest.fixture(scope="module")
def ingested(tmp_path_factory):
    """The run ingested: (store, {source folder: rows}, {quarantined path: reason})."""
    root = tmp_path_factory.mktemp("hostile")
    _write_run(root / "results")
    st = root / "store"
    assert main(["ingest", str(root / "results" / RUN), "--store", str(st)]) == 0
    con = store.connect(st)
    rows = {}
    for table in set(TABLE.values()):
        for (path,) in con.execute(f"SELECT source_path FROM {table}").fetchall():
            folder = path.rsplit("/", 2)[1]
            rows[folder] = rows.get(folder, 0) + 1
    quarantined = dict(con.execute("SELECT path, reason FROM quarantine").fetchall())
    return st, rows, quarantined


@pytest.mark.parametrize("name", HOSTILE)
def test_hostile_line_left_out_named_and_the_others_kept(ingested, name):
    _, rows, quarantined = ingested
    file, _, said = HOSTILE[name]
    assert rows.get(_case_dir(name)) == 2  # the good lines, before and after it
    path = next(p for p in quarantined if p.endswith(f"/{_case_dir(name)}/{file}"))
    reason = quarantined[path]
    assert reason.startswith("benchmark output lines left out: line 2: "), reason
    assert "line 1:" not in reason and "line 3:" not in reason
    assert len(reason) < 1000  # a megabyte of value is not repeated
    for part in said:
        assert part in reason, reason


def test_a_performance_value_out_of_bounds_is_left_out_and_named(ingested):
    st, _, quarantined = ingested
    con = store.connect(st)
    assert con.execute("SELECT variable, value FROM perf").fetchall() == [("write_mib_s", 300.0)]
    reason = quarantined[f"{RUN}/reframe/report.json"]
    assert "performance values left out: 'fio_check' local:default:read_mib_s" in reason
    assert "value = inf: not finite" in reason


def test_what_ingest_stored_imports_at_another_site(ingested, tmp_path):
    """What ingest accepts, another site's import accepts: the same bounds
    (iostudy.logs.plausibility) for both."""
    st, rows, _ = ingested
    bundle = tmp_path / "hostile.tar"
    assert main(["export", "--store", str(st), "--out", str(bundle), "--site", "hostile"]) == 0
    other = tmp_path / "other"
    assert main(["import", str(bundle), "--store", str(other), "--trust-on-first-use"]) == 0
    imported = sum(len(store.read_table(other, t)) for t in set(TABLE.values()))
    assert imported == sum(rows.values()) == 2 * len(HOSTILE)


def test_a_manifest_value_of_the_wrong_type_is_named(tmp_path, capsys):
    """The runs row is judged by the same rule: a manifest whose git_commit is a number stops
    the ingest with the field named (a run is not stored without its runs row)."""
    run = tmp_path / "results" / RUN
    run.mkdir(parents=True)
    (run / "manifest.json").write_text(json.dumps(manifest(RUN, git_commit=5)))
    assert main(["ingest", str(run), "--store", str(tmp_path / "store")]) == 2
    assert "manifest.json: git_commit = 5: not a string" in capsys.readouterr().err


# -- the limits on their own ----------------------------------------------------------------------


@pytest.mark.parametrize(
    "line, said",
    [
        ("[" * 33 + "]" * 33, "nested deeper than 32 levels"),
        ('{"a": ' * 33 + "1" + "}" * 33, "nested deeper than 32 levels"),
        ('"' + "a" * (jsonlimits.MAX_LINE - 1) + '"', LIMIT),
        ("[1e999]", "1e999: not a finite number"),
        ("[-Infinity]", "-Infinity: not a finite number"),
        ('{"x": NaN}', "NaN: not a finite number"),
        (b'{"x": "\xff"}', "not UTF-8"),
        ('["' + "[" * 40, "Unterminated string"),  # json.loads stops there: no deeper
        ("1" * 5000, "Exceeds the limit"),  # Python's integer digits
    ],
)
def test_a_line_out_of_the_limits_is_refused(line, said):
    with pytest.raises(ValueError, match=said):
        jsonlimits.parse_line(line)


@pytest.mark.parametrize(
    "line, value",
    [
        ("[" * 32 + "]" * 32, functools.reduce(lambda inner, _: [inner], range(31), [])),
        ('["' + "[" * 100 + '"]', ["[" * 100]),  # brackets in a string do not count
        ('["\\"' + "[" * 40 + '"]', ['"' + "[" * 40]),  # nor after an escaped quote
        ('"' + "a" * (jsonlimits.MAX_LINE - 2) + '"', "a" * (jsonlimits.MAX_LINE - 2)),
        (str(2**62), 2**62),  # the store's bounds are not the line's
    ],
)
def test_a_line_within_the_limits_is_parsed(line, value):
    assert jsonlimits.parse_line(line) == value


def test_documents_are_held_to_the_depth_only():
    assert jsonlimits.loads('{"x": NaN}')["x"] != 0  # NaN: its reader judges the values
    with pytest.raises(ValueError, match="nested deeper"):
        jsonlimits.loads("[" * 100_000 + "]" * 100_000)


def test_numbered_lines_cut_a_long_line_and_keep_counting():
    long = b"x" * (jsonlimits.MAX_LINE * 3)
    f = io.BytesIO(b"1\n\n" + long + b"\n2\r\n" + b"y" * jsonlimits.MAX_LINE + b"\n[3")
    got = [(n, len(line)) for n, line in jsonlimits.numbered_lines(f)]
    assert got == [(1, 1), (3, jsonlimits.MAX_LINE + 1), (4, 1), (5, jsonlimits.MAX_LINE), (6, 2)]
