"""iostudy.benchmarks.benchparse and iostudy.benchmarks.iortext on real IOR 4.0.0 and mdtest output
(reframe-checks/tests/data/).

The expected values come from the commands that produced the files (table IOR_RUNS, the
commands of data/README.md), from the raw text of the files read with simple regular
expressions independent of the parser, and from IOR's and mdtest's own formulas (bandwidth =
bytes / total time, summary statistics of the iterations). No measured number is copied from
the parser's output.

IOR 4.0.0 prints either its text or its JSON, never both from one run (``-O summaryFile``
redirects all the results; see test_summaryfile_run_prints_no_results), so each .json/.txt pair
comes from two runs with the same parameters: their structure is compared, not their numbers.
"""

import json
import math
import re
import statistics
from pathlib import Path

import pytest

from iostudy.benchmarks import benchparse, iortext

DATA = Path(__file__).resolve().parents[2] / "reframe-checks" / "tests" / "data"
IOR = DATA / "ior"
MDTEST = DATA / "mdtest"
MiB = 2**20
KiB = 2**10
TASKS = 2  # every capture ran with mpirun -np 2

# Per IOR capture: the command's flags, and what they ask for. "tests" lists, per TestID, the
# file-per-process flag (the multi-test script runs an N-N test, then an N-1 one).
IOR_RUNS = {
    "posix-fpp": dict(
        cmd="-a POSIX -F -w -r -b 1m -t 256k -i 3 -o testfile",
        api="POSIX",
        fpp=[True],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=3,
    ),
    "posix-shared": dict(
        cmd="-a POSIX -w -r -b 1m -t 256k -i 3 -o testfile",
        api="POSIX",
        fpp=[False],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=3,
    ),
    "mpiio-coll": dict(
        cmd="-a MPIIO -c -w -r -b 1m -t 256k -i 3 -o testfile",
        api="MPIIO",
        fpp=[False],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=3,
        collective=True,
    ),
    "hdf5": dict(
        cmd="-a HDF5 -w -r -b 1m -t 256k -i 3 -o testfile",
        api="HDF5",
        fpp=[False],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=3,
    ),
    "ncmpi": dict(
        cmd="-a NCMPI -w -r -b 1m -t 256k -i 3 -o testfile",
        api="NCMPI",
        fpp=[False],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=3,
    ),
    "posix-unaligned": dict(
        cmd="-a POSIX -w -r -b 4000000 -t 1000000 -i 3 -o testfile",
        api="POSIX",
        fpp=[False],
        block=4000000,
        xfer=1000000,
        segments=1,
        reps=3,
    ),
    "posix-segments": dict(
        cmd="-a POSIX -w -r -b 512k -t 128k -s 4 -i 3 -o testfile",
        api="POSIX",
        fpp=[False],
        block=512 * KiB,
        xfer=128 * KiB,
        segments=4,
        reps=3,
    ),
    # multi.script: blockSize=1m transferSize=256k repetitions=2; filePerProc=1, then 0.
    "multi-test": dict(
        cmd="-f multi.script",
        api="POSIX",
        fpp=[True, False],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=2,
    ),
    "posix-fpp-verbose": dict(
        cmd="-a POSIX -F -w -r -b 1m -t 256k -i 3 -o testfile -v",
        api="POSIX",
        fpp=[True],
        block=1 * MiB,
        xfer=256 * KiB,
        segments=1,
        reps=3,
    ),
}
# posix-fpp-verbose.json is the invalid JSON IOR 4.0.0 writes with -v (tested apart).
JSON_RUNS = sorted(n for n in IOR_RUNS if (IOR / f"{n}.json").exists() and "verbose" not in n)
TEXT_RUNS = sorted(n for n in IOR_RUNS if (IOR / f"{n}.txt").exists())
PAIRS = sorted(set(JSON_RUNS) & set(TEXT_RUNS))
CASES = [(n, "json") for n in JSON_RUNS] + [(n, "txt") for n in TEXT_RUNS]

MDTEST_OPS = {
    "Directory creation",
    "Directory stat",
    "Directory rename",
    "Directory removal",
    "File creation",
    "File stat",
    "File read",
    "File removal",
    "Tree creation",
    "Tree removal",
}
MDTEST_RUNS = ["mdtest-basic", "mdtest-unique", "mdtest-verbose", "mdtest-ranks"]


def raw(name, kind):
    return (IOR / f"{name}.{kind}").read_text()


def parse(name, kind):
    text = raw(name, kind)
    return benchparse.ior_json(text) if kind == "json" else iortext.ior_text(text)


def half_unit(token):
    """Half of the last printed digit of a number as IOR printed it ('5634' -> 0.5)."""
    decimals = len(token.split(".")[1]) if "." in token else 0
    return 0.5 * 10.0**-decimals


def test_data_is_there():
    assert len(JSON_RUNS) >= 7 and len(TEXT_RUNS) >= 9 and len(PAIRS) >= 7
    assert all((MDTEST / f"{n}.txt").exists() for n in MDTEST_RUNS)


# The machine's scratch, checkout and home directories (spelled so that this file names none).
ABSOLUTE = "|".join("/" + top for top in ("tmp", "work", "root", "home"))


def test_captures_hold_no_absolute_paths():
    for path in DATA.rglob("*"):
        if path.is_file():
            assert not re.search(ABSOLUTE, path.read_text()), path


# ---------------------------------------------------------------------------------- IOR


@pytest.mark.parametrize("name,kind", CASES)
def test_ior_header_and_command(name, kind):
    text = raw(name, kind)
    command = re.search(r'"?Command line"?\s*:\s*"?(ior [^"\n]*)', text)[1].strip()
    assert IOR_RUNS[name]["cmd"] in command
    got = parse(name, kind)
    assert got["command_line"] == command
    assert got["version"] == "4.0.0"
    assert got["format"] == ("json" if kind == "json" else "text")


@pytest.mark.parametrize("name,kind", CASES)
def test_ior_parameters_are_the_commands(name, kind):
    run, got = IOR_RUNS[name], parse(name, kind)
    assert [t["test_id"] for t in got["tests"]] == list(range(len(run["fpp"])))
    for test, fpp in zip(got["tests"], run["fpp"], strict=True):
        assert test["api"] == run["api"]
        assert test["file_per_proc"] is fpp
        assert test["access"] == ("file-per-process" if fpp else "single-shared-file")
        assert test["collective"] is run.get("collective", False)
        assert (test["block_size"], test["transfer_size"]) == (run["block"], run["xfer"])
        assert test["segments"] == run["segments"]
        assert test["tasks"] == TASKS and test["tasks_per_node"] == TASKS and test["nodes"] == 1
        assert test["repetitions"] == run["reps"]
        assert test["aggregate_bytes"] == run["block"] * run["segments"] * TASKS
        assert test["test_file"] == "testfile"


@pytest.mark.parametrize("name,kind", CASES)
def test_ior_every_iteration_of_every_test(name, kind):
    run, got = IOR_RUNS[name], parse(name, kind)
    assert all(set(r) == set(benchparse.RESULT_KEYS) for r in got["results"])
    for test, fpp in enumerate(run["fpp"]):
        for op in ("write", "read"):
            rows = [r for r in got["results"] if r["test_id"] == test and r["operation"] == op]
            assert [r["iteration"] for r in rows] == list(range(run["reps"]))  # -i
            for r in rows:
                assert r["api"] == run["api"] and r["tasks"] == TASKS
                assert (r["block_size"], r["transfer_size"]) == (run["block"], run["xfer"])
                assert r["segments"] == run["segments"] and r["file_per_proc"] is fpp
                assert r["aggregate_bytes"] == run["block"] * run["segments"] * TASKS
    assert len(got["results"]) == 2 * run["reps"] * len(run["fpp"])


# An IOR text Results row: access bw IOPS latency block xfer open wr/rd close total iter.
TEXT_ROW = re.compile(r"^(write|read)" + r" +([\d.]+)" * 9 + r" +(\d+) *$", re.MULTILINE)
TEXT_KEYS = ("bw_mib_s", "iops", "latency_s", None, None, "open_s", "wrrd_s", "close_s", "total_s")


@pytest.mark.parametrize("name", TEXT_RUNS)
def test_ior_text_rows_are_the_printed_lines(name):
    rows = TEXT_ROW.findall(raw(name, "txt"))
    got = parse(name, "txt")["results"]
    assert len(rows) == len(got)
    for row, result in zip(rows, got, strict=True):
        assert result["operation"] == row[0]
        assert result["iteration"] == int(row[10])
        for key, token in zip(TEXT_KEYS, row[1:10], strict=True):
            if key:
                assert result[key] == float(token), (key, row)
        # The row's block and xfer columns (KiB) round the exact sizes of the summary.
        assert abs(result["block_size"] / KiB - float(row[4])) <= half_unit(row[4])
        assert abs(result["transfer_size"] / KiB - float(row[5])) <= half_unit(row[5])


@pytest.mark.parametrize("name", JSON_RUNS)
def test_ior_json_results_are_the_printed_values(name):
    text = raw(name, "json")
    got = parse(name, "json")["results"]
    for json_key, key in (("bwMiB", "bw_mib_s"), ("iops", "iops"), ("totalTime", "total_s")):
        printed = [float(v) for v in re.findall(rf'"{json_key}": ([\d.]+)', text)]
        assert printed == [r[key] for r in got], json_key
    accesses = re.findall(r'"access": "(write|read)"', text)
    assert accesses == [r["operation"] for r in got]
    run = IOR_RUNS[name]
    assert re.findall(r'"blockKiB": ([\d.]+)', text) == [f"{run['block'] / KiB:.4f}"] * len(got)
    assert re.findall(r'"xferKiB": ([\d.]+)', text) == [f"{run['xfer'] / KiB:.4f}"] * len(got)


def printed_times(name, kind):
    """(half unit of bw, half unit of total time, of wr/rd time) per result, as printed."""
    if kind == "json":  # "%.4f"
        return [(5e-5, 5e-5, 5e-5)] * len(parse(name, kind)["results"])
    rows = TEXT_ROW.findall(raw(name, kind))
    return [(half_unit(r[1]), half_unit(r[9]), half_unit(r[7])) for r in rows]


@pytest.mark.parametrize("name,kind", CASES)
def test_ior_bandwidth_is_bytes_over_total_time(name, kind):
    """IOR: bw = aggregate bytes / total time, IOPS = transfers / wr/rd time (ior.c)."""
    got = parse(name, kind)["results"]
    for r, (hb, ht, hw) in zip(got, printed_times(name, kind), strict=True):
        mib = r["aggregate_bytes"] / MiB
        assert mib / (r["total_s"] + ht) - hb <= r["bw_mib_s"], r
        if r["total_s"] - ht > 0:
            assert r["bw_mib_s"] <= mib / (r["total_s"] - ht) + hb, r
        xfers = r["aggregate_bytes"] / r["transfer_size"]
        assert xfers / (r["wrrd_s"] + hw) - 0.5 <= r["iops"], r
        if r["wrrd_s"] - hw > 0:
            assert r["iops"] <= xfers / (r["wrrd_s"] - hw) + 0.5, r


# A text summary row has 27 columns; its values in order.
SUMMARY_ROW = re.compile(r"^(write|read)((?: +\S+){26}) *$", re.MULTILINE)


@pytest.mark.parametrize("name", TEXT_RUNS)
def test_ior_text_summary_is_the_printed_table(name):
    rows = SUMMARY_ROW.findall(raw(name, "txt"))
    got = parse(name, "txt")["summary"]
    assert len(rows) == len(got) == 2 * len(IOR_RUNS[name]["fpp"])
    for (op, rest), s in zip(rows, got, strict=True):
        t = rest.split()
        assert s["operation"] == op
        assert [s["bw_max_mib_s"], s["bw_min_mib_s"], s["bw_mean_mib_s"], s["bw_std_mib_s"]] == [
            float(x) for x in t[0:4]
        ]
        assert [s["ops_max"], s["ops_min"], s["ops_mean"], s["ops_std"]] == [
            float(x) for x in t[4:8]
        ]
        assert s["mean_time_s"] == float(t[8])
        assert t[9] == t[10] == "NA" and s["stonewall_s"] is s["stonewall_bw_mib_s"] is None
        assert (s["test_id"], s["tasks"], s["repetitions"]) == (int(t[11]), int(t[12]), int(t[14]))
        assert (s["segments"], s["block_size"], s["transfer_size"]) == tuple(map(int, t[20:23]))
        assert s["api"] == t[24] and s["aggregate_mib"] == float(t[23])


@pytest.mark.parametrize("name", JSON_RUNS)
def test_ior_json_summary_is_the_printed_values(name):
    text = raw(name, "json")
    got = parse(name, "json")["summary"]
    for json_key, key in (
        ("bwMaxMIB", "bw_max_mib_s"),
        ("OPsMean", "ops_mean"),
        ("MeanTime", "mean_time_s"),
    ):
        assert [float(v) for v in re.findall(rf'"{json_key}": ([\d.]+)', text)] == [
            s[key] for s in got
        ]
    assert re.findall(r'"operation": "(\w+)"', text) == [s["operation"] for s in got]


@pytest.mark.parametrize("name,kind", CASES)
def test_ior_summary_is_the_statistics_of_the_iterations(name, kind):
    run, got = IOR_RUNS[name], parse(name, kind)
    # Tolerance: the rounding of the printed per-iteration bandwidth.
    bw_tol = 2e-4 if kind == "json" else 0.51
    time_tol = 1.5e-4 if kind == "json" else 1e-5
    assert len(got["summary"]) == 2 * len(run["fpp"])
    for s in got["summary"]:
        assert set(s) == set(benchparse.SUMMARY_KEYS)
        it = [
            r
            for r in got["results"]
            if (r["test_id"], r["operation"]) == (s["test_id"], s["operation"])
        ]
        bws = [r["bw_mib_s"] for r in it]
        assert len(bws) == s["repetitions"] == run["reps"]
        assert s["bw_max_mib_s"] == pytest.approx(max(bws), abs=bw_tol)
        assert s["bw_min_mib_s"] == pytest.approx(min(bws), abs=bw_tol)
        assert s["bw_mean_mib_s"] == pytest.approx(statistics.fmean(bws), abs=bw_tol)
        assert s["bw_std_mib_s"] == pytest.approx(statistics.pstdev(bws), abs=bw_tol)
        mean_time = statistics.fmean(r["total_s"] for r in it)
        assert s["mean_time_s"] == pytest.approx(mean_time, abs=time_tol)
        # IOR's summary OPs are transfers per second of the same iterations.
        per_mib = MiB / s["transfer_size"]
        ops_tol = 0.005 * per_mib + 0.006  # both printed with 2 (text) or 4 (JSON) decimals
        assert s["ops_max"] == pytest.approx(s["bw_max_mib_s"] * per_mib, abs=ops_tol)
        assert s["ops_min"] == pytest.approx(s["bw_min_mib_s"] * per_mib, abs=ops_tol)
        assert s["aggregate_mib"] == pytest.approx(it[0]["aggregate_bytes"] / MiB, abs=0.05)
        assert s["tasks"] == TASKS and s["api"] == run["api"]
        assert s["file_per_proc"] is run["fpp"][s["test_id"]]
        assert (s["segments"], s["block_size"], s["transfer_size"]) == (
            run["segments"],
            run["block"],
            run["xfer"],
        )


def structure(got):
    """What a run's parameters fix: everything but the measurements."""
    measured = {"bw_mib_s", "iops", "latency_s", "open_s", "wrrd_s", "close_s", "total_s"}
    results = [{k: v for k, v in r.items() if k not in measured} for r in got["results"]]
    summary = [
        {k: v for k, v in s.items() if not k.startswith(("bw_", "ops_", "mean_", "aggregate"))}
        for s in got["summary"]
    ]
    tests = [
        {k: v for k, v in t.items() if k not in ("start_time", "options")} for t in got["tests"]
    ]
    return results, summary, tests


@pytest.mark.parametrize("name", PAIRS)
def test_ior_json_and_text_agree(name):
    """The JSON and the text run of the same parameters give the same structure."""
    as_json, as_text = parse(name, "json"), parse(name, "txt")
    assert structure(as_json) == structure(as_text)
    for j, t in zip(as_json["summary"], as_text["summary"], strict=True):
        assert j["aggregate_mib"] == pytest.approx(t["aggregate_mib"], abs=0.05)
    for j, t in zip(as_json["tests"], as_text["tests"], strict=True):
        assert j["options"] == {k: type(j["options"][k])(v) for k, v in t["options"].items()}
    # The JSON run's command is the text run's plus its -O summary options.
    assert re.sub(r" -O summary\w+=\S+", "", as_json["command_line"]) == as_text["command_line"]


def test_summaryfile_run_prints_no_results():
    """With -O summaryFile, IOR 4.0.0's stdout has no results, only where they went."""
    stdout = (IOR / "posix-fpp.json.stdout").read_text()
    assert stdout.splitlines() == ["Writing output to posix-fpp.json"] * TASKS
    with pytest.raises(ValueError, match=r"Writing output to posix-fpp\.json.*summaryFile"):
        iortext.ior_text(stdout)


def test_ior_text_with_verbose():
    text = raw("posix-fpp-verbose", "txt")
    got = iortext.ior_text(text)
    removes = re.findall(r"^remove\s+(?:-\s+){8}([\d.]+)\s+(\d+)", text, re.MULTILINE)
    assert [(r["total_s"], r["iteration"]) for r in got["removes"]] == [
        (float(t), int(i)) for t, i in removes
    ]
    assert len(removes) == IOR_RUNS["posix-fpp-verbose"]["reps"]
    assert "Commencing write performance test" not in str(got["tests"][0])


def test_ior_json_with_verbose_is_rejected_clearly():
    with pytest.raises(ValueError, match=r"IOR JSON: not valid JSON .*-v"):
        benchparse.ior_json(raw("posix-fpp-verbose", "json"))


def test_ior_warnings_inside_results_are_skipped_and_kept():
    text = raw("ncmpi", "txt")
    assert text.count("WARNING: File write only not implemented in NCMPI") == 6
    got = iortext.ior_text(text)
    assert len(got["results"]) == 6
    assert got["warnings"] == ["File write only not implemented in NCMPI"] * 6


def test_ior_warnings_inside_the_json_on_stdout_are_taken_out():
    """ior_check reads IOR's JSON from stdout, where IOR's warnings land inside the document
    (ncmpi-stdout.json: 2 ranks, 2 iterations, a warning per rank and write phase)."""
    text = raw("ncmpi-stdout", "json")
    with pytest.raises(json.JSONDecodeError):
        json.loads(text)
    got = benchparse.ior_json(text)
    assert got["warnings"] == ["File write only not implemented in NCMPI"] * 4
    assert [(r["operation"], r["iteration"]) for r in got["results"]] == [
        ("write", 0),
        ("read", 0),
        ("write", 1),
        ("read", 1),
    ]
    assert {r["api"] for r in got["results"]} == {"NCMPI"}
    assert {r["aggregate_bytes"] for r in got["results"]} == {2 * 2 * 2**20}


def test_ior_unaligned_sizes_are_exact():
    text = raw("posix-unaligned", "txt")
    assert re.search(r"^write\s+\S+\s+\S+\s+\S+\s+3906\s+976\.56\s", text, re.MULTILINE)
    for kind in ("json", "txt"):
        test = parse("posix-unaligned", kind)["tests"][0]
        assert (test["block_size"], test["transfer_size"]) == (4000000, 1000000)
        assert test["aggregate_bytes"] == 8000000


# -------------------------------------------------------------------- IOR malformed input


def edited_json(edit):
    doc = json.loads(raw("posix-fpp", "json"))
    edit(doc)
    return json.dumps(doc)


def results_of_test0(doc):
    return doc["tests"][0]["Results"]


@pytest.mark.parametrize(
    "text,message",
    [
        ("", r"IOR JSON: not valid JSON"),
        ("[1, 2]", r"IOR JSON: the document is a list"),
        ("{}", r"IOR JSON: the document has no 'tests' key"),
        (edited_json(lambda d: d.pop("summary")), r"no 'summary' key"),
        (edited_json(lambda d: d["tests"][0].pop("Results")), r"test 0 has no 'Results' key"),
        (
            edited_json(lambda d: results_of_test0(d)[2].pop("bwMiB")),
            r"test 0 result 2 has no 'bwMiB'",
        ),
        (
            edited_json(lambda d: results_of_test0(d)[1].update(iops="fast")),
            r"result 1 iops is not a number",
        ),
        (
            edited_json(lambda d: d["tests"][0]["Parameters"].pop("blockSize")),
            r"no 'blockSize' key",
        ),
        (raw("posix-fpp", "txt"), r"IOR JSON: not valid JSON .*use ior_text"),
        (raw("posix-fpp", "json")[:2000], r"IOR JSON: not valid JSON"),
    ],
)
def test_ior_json_malformed(text, message):
    with pytest.raises(ValueError, match=message):
        benchparse.ior_json(text)


def cut_before(text, marker):
    return text[: text.index(marker)]


TXT = raw("posix-fpp", "txt")
FIRST_ROW = TEXT_ROW.search(TXT)[0]
NO_ITER = FIRST_ROW.rsplit(None, 1)[0]  # the row without its last field


@pytest.mark.parametrize(
    "text,message",
    [
        ("", r"IOR text: no 'IOR-<version>"),
        (raw("posix-fpp", "json"), r"IOR text: no 'IOR-<version>"),
        (cut_before(TXT, "Results:"), r"IOR text: no 'Results:' table"),
        (cut_before(TXT, "Summary of all tests"), r"no 'Summary of all tests' table"),
        (TXT.replace(FIRST_ROW, NO_ITER), r"line \d+: a write row has 9 fields"),
        (TXT.replace(FIRST_ROW, FIRST_ROW.replace("1024.00", "lots", 1)), r"block_kib: 'lots'"),
        (TXT.replace("Max(OPs)", "Max(IOs)"), r"header lacks the columns \['Max\(OPs\)'\]"),
        (TXT.replace("Test# ", "Test ", 1), r"header lacks the columns"),
    ],
)
def test_ior_text_malformed(text, message):
    with pytest.raises(ValueError, match=message):
        iortext.ior_text(text)


# -------------------------------------------------------------------------------- mdtest


def md_raw(name):
    return (MDTEST / f"{name}.txt").read_text()


def md_table(text, kind):
    """{operation: [numbers]} of the first 'SUMMARY <kind>' table, by regex on the raw text."""
    block = text[text.index(f"SUMMARY {kind}:") :]
    rows = re.findall(r"^   ((?:Directory|File|Tree) \w+) +([\d. ]+?) *$", block, re.MULTILINE)
    table = {}
    for op, numbers in rows:
        if op in table:  # the next table starts
            break
        table[op] = [float(x) for x in numbers.split()]
    return table


@pytest.mark.parametrize("name", MDTEST_RUNS)
def test_mdtest_summary(name):
    text = md_raw(name)
    got = benchparse.mdtest_text(text)
    argv = got["argv"]
    assert argv[argv.index("-n") + 1] == "20" and argv[argv.index("-i") + 1] == "2"
    assert got["version"] == "4.0.0" and got["launched_tasks"] == got["tasks"] == TASKS
    assert got["nodes"] == 1 and got["path"] == "mdtest-dir"
    assert got["items"] == TASKS * 20  # -n 20 per task
    assert got["iterations"] == 2  # -i 2
    assert len(got["runs"]) == 1
    printed = md_table(text, "rate")
    assert set(got["rate"]) == set(printed) == MDTEST_OPS
    for op, row in got["rate"].items():
        assert row["unit"] == "ops/sec"
        values = [row[k] for k in ("max", "min", "mean", "stddev")]
        if "rank_max" in row:
            values = [row["rank_max"], row["rank_min"], row["rank_mean"], *values]
        assert values == printed[op]
        # mdtest, 2 iterations: mean = (max + min) / 2, sample std dev = (max - min) / sqrt 2.
        assert row["min"] <= row["mean"] <= row["max"]
        assert row["mean"] == pytest.approx((row["max"] + row["min"]) / 2, abs=0.0011)
        assert row["stddev"] == pytest.approx((row["max"] - row["min"]) / math.sqrt(2), abs=0.002)


def test_mdtest_unique_dir_is_in_the_command():
    assert "-u" in benchparse.mdtest_text(md_raw("mdtest-unique"))["argv"]
    assert "-u" not in benchparse.mdtest_text(md_raw("mdtest-basic"))["argv"]


def test_mdtest_rank_statistics_and_per_process_values():
    text = md_raw("mdtest-ranks")
    got = benchparse.mdtest_text(text)
    assert got["time"] is not None and set(got["time"]) == MDTEST_OPS
    for op, row in got["time"].items():
        assert row["unit"] == "sec"
        keys = ("rank_max", "rank_min", "rank_mean", "max", "min", "mean", "stddev")
        assert [row[k] for k in keys] == md_table(text, "time")[op]
    printed = re.findall(r"^Test ((?:Directory|File|Tree) \w+) (\S+)$", text, re.MULTILINE)
    # 2 kinds (rate, time) x 2 iterations x 11 operations (the per-process lists add Directory read)
    assert len(printed) == 2 * 2 * 11
    for kind in ("rate", "time"):
        iterations = got["per_process"][kind]
        assert len(iterations) == 2
        assert all(len(values) == TASKS for it in iterations for values in it.values())
        for op, row in got[kind].items():
            if op.startswith("Tree"):  # rank 0's own numbers, not in the per-process lists
                continue
            values = [v for it in iterations for v in it[op]]
            tol = 0.0005 if kind == "time" else 0.0005 + 1e-6 * max(values)
            assert row["rank_max"] == pytest.approx(max(values), abs=tol)
            assert row["rank_min"] == pytest.approx(min(values), abs=tol)
            assert row["rank_mean"] == pytest.approx(statistics.fmean(values), abs=tol)
    first = printed[0]
    assert got["per_process"]["rate"][0][first[0]] == [float(x) for x in first[1].split(",")]


def test_mdtest_verbose_per_iteration_lines():
    text = md_raw("mdtest-verbose")
    got = benchparse.mdtest_text(text)
    assert len(got["rank0_iterations"]) == 2  # -i 2
    for it in got["rank0_iterations"]:
        assert set(it) == MDTEST_OPS
    lines = re.findall(r"Tree creation\s*:\s+([\d.]+) sec,\s+([\d.]+) ops/sec", text)
    rates = [it["Tree creation"]["rate"] for it in got["rank0_iterations"]]
    assert rates == [float(rate) for _, rate in lines]
    # Tree creation/removal are rank 0's alone: its lines are the iterations of the summary.
    for op in ("Tree creation", "Tree removal"):
        rates = [it[op]["rate"] for it in got["rank0_iterations"]]
        assert (max(rates), min(rates)) == (got["rate"][op]["max"], got["rate"][op]["min"])


def test_mdtest_one_run_per_task_count():
    text = md_raw("mdtest-taskrange")
    got = benchparse.mdtest_text(text)
    # -f 1 -l 2 -s 1: 1 task, then 2 tasks, of -n 20 items each; -i 2.
    runs = [(r["tasks"], r["items"], r["iterations"]) for r in got["runs"]]
    assert runs == [(1, 20, 2), (2, 40, 2)]
    assert got["tasks"] == 1 and got["rate"] is got["runs"][0]["rate"]
    second = text[text.index("2 tasks, 40 files") :]
    assert [got["runs"][1]["rate"][op]["max"] for op in sorted(MDTEST_OPS)] == [
        md_table(second, "rate")[op][0] for op in sorted(MDTEST_OPS)
    ]


MD = md_raw("mdtest-basic")
# The SUMMARY rate table's title, header and dashes, without any row.
NO_ROWS = cut_before(MD, "   Directory creation") + "-- finished at some time --\n"


@pytest.mark.parametrize(
    "text,message",
    [
        ("", r"mdtest: no 'mdtest-<version> was launched with' header"),
        (TXT, r"mdtest: no 'mdtest-<version>"),
        (cut_before(MD, "SUMMARY rate"), r"mdtest: no 'SUMMARY rate' table"),
        (cut_before(MD, "2 tasks, 40"), r"mdtest: no '<N> tasks, <M> files/directories' line"),
        (re.sub(r"(File stat +\S+ +\S+ +\S+) +\S+", r"\1", MD), r"File stat has 3 numbers"),
        (MD.replace("   File read  ", "   File read  x"), r"File read: 'x' is not a number"),
        (NO_ROWS, r"'SUMMARY rate' table at line \d+ has no rows"),
    ],
)
def test_mdtest_malformed(text, message):
    with pytest.raises(ValueError, match=message):
        benchparse.mdtest_text(text)


@pytest.mark.parametrize(
    "path,parser",
    [
        (IOR / "posix-fpp.json", benchparse.ior_json),
        (IOR / "multi-test.txt", iortext.ior_text),
        (IOR / "posix-fpp-verbose.txt", iortext.ior_text),
        (MDTEST / "mdtest-ranks.txt", benchparse.mdtest_text),
        (MDTEST / "mdtest-taskrange.txt", benchparse.mdtest_text),
    ],
)
def test_truncated_output_gives_value_error(path, parser):
    """Output cut anywhere (a run killed mid-way) parses or raises ValueError, nothing else."""
    lines = path.read_text().splitlines(keepends=True)
    for n in range(len(lines)):
        for cut in ("".join(lines[:n]), "".join(lines[:n]) + lines[n][: len(lines[n]) // 2]):
            try:
                parser(cut)
            except ValueError:
                pass
    # Cut before its summary table, the output is rejected.
    marker = "Summary of all tests" if path.suffix == ".txt" else '"summary"'
    marker = "SUMMARY rate" if path.parent == MDTEST else marker
    with pytest.raises(ValueError):
        parser(cut_before(path.read_text(), marker))
