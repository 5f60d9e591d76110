"""The HMMER check (reframe-checks/hmmer_check.py) and iostudy.benchmarks.hmmer.

hmmsearch's output is real output (data/hmmer/, see data/README.md) of searches of generated
inputs, so the planted sequences are the oracle of the hits. The check runs for real in its
three configurations (the Spack view's hmmsearch with MPI when there is one, else Debian's), and
PyDarshan reads what the runtime recorded of each.
"""

import re
import subprocess
from pathlib import Path

import campaign_runs as runs
import darshan
import pytest

from iostudy.benchmarks import hmmer

pytestmark = pytest.mark.campaign

DATA = Path(__file__).parent / "data" / "hmmer"
# data/README.md: hmmer.write_inputs(folder, 3, 200, 300)
FAMILIES, SEQUENCES = 3, 200


@pytest.mark.parametrize("name", ["debian-3.3.2-A.out", "spack-3.4-mpi-B.out"])
def test_parse_finds_exactly_the_planted_sequences(name):
    text = (DATA / name).read_text()
    parsed = hmmer.parse(text)
    assert parsed["ok"] and parsed["version"] in ("3.3.2", "3.4")
    assert {q["name"]: set(q["hits"]) for q in parsed["queries"]} == hmmer.planted(
        FAMILIES, SEQUENCES
    )
    assert all(
        q["targets"] == SEQUENCES and q["residues"] == SEQUENCES * 300 for q in parsed["queries"]
    )
    assert hmmer.sanity(parsed, SEQUENCES, hmmer.planted(FAMILIES, SEQUENCES)) == []
    elapsed = re.findall(r"Elapsed: 00:00:(\d+\.\d+)", text)
    assert len(elapsed) == FAMILIES
    assert hmmer.performance(parsed)["elapsed_s"] == pytest.approx(sum(map(float, elapsed)))


def test_hits_below_the_inclusion_threshold_are_not_hits():
    text = (DATA / "debian-3.3.2-E100.out").read_text()
    below = {}  # query: the sequences listed under its inclusion threshold line
    for block in text.split("Query:")[1:]:
        if "inclusion threshold" in block:
            table = block.split("inclusion threshold", 1)[1].split("\n\n", 1)[0]
            names = {line.split()[8] for line in table.splitlines()[1:] if line.strip()}
            below[block.split()[0]] = names
    assert below, "the capture lists sequences below the inclusion threshold"
    parsed = hmmer.parse(text)
    hits = {q["name"]: set(q["hits"]) for q in parsed["queries"]}
    assert hits == hmmer.planted(FAMILIES, SEQUENCES)
    assert all(names and not names & hits[query] for query, names in below.items())


def test_bad_output_is_named():
    text = (DATA / "debian-3.3.2-A.out").read_text()
    with pytest.raises(ValueError, match="not hmmsearch output"):
        hmmer.parse("ior: cannot open\n")
    with pytest.raises(ValueError, match="no 'Elapsed' line"):
        hmmer.parse(text[: text.index("# CPU time")])
    with pytest.raises(ValueError, match="without any query"):
        hmmer.parse(text[: text.index("Query:")])
    unfinished = hmmer.parse(text.replace("[ok]", ""))
    assert hmmer.sanity(unfinished, SEQUENCES, None) == ["hmmsearch did not finish ([ok] missing)"]
    parsed = hmmer.parse(text)
    assert "fam0: 200 sequences searched, expected 300" in hmmer.sanity(parsed, 300, None)
    wrong = hmmer.planted(FAMILIES, SEQUENCES)
    wrong["fam0"] = {"s1"}
    (problem,) = hmmer.sanity(parsed, SEQUENCES, wrong)
    assert problem.startswith("fam0: planted sequences missed ['s1'], unplanted found ['s0'")


def test_arguments_of_the_three_configurations():
    a = hmmer.arguments("A", Path("f.hmm"), Path("db.fa"), Path("out"), False, 2)
    assert a == ["--cpu", "2", "--noali", "--notextw", "f.hmm", "db.fa"]
    b = hmmer.arguments("B", Path("f.hmm"), Path("db.fa"), Path("out"), True, 2)
    assert b == ["--mpi", "--noali", "--notextw", "-o", "out", "f.hmm", "db.fa"]
    with pytest.raises(ValueError, match="configuration 'D'"):
        hmmer.arguments("D", Path("f"), Path("d"), Path("o"), False, 1)
    with pytest.raises(ValueError, match="length >= 30"):
        hmmer.write_inputs(Path("unused"), 1, 1, 10)


def test_generated_inputs_are_found_by_hmmsearch(tmp_path):
    """Debian's hmmbuild and hmmsearch on write_inputs's files find every planted sequence and
    nothing else (tblout: a format of its own, not the parser's)."""
    alignment, fasta = hmmer.write_inputs(tmp_path, 2, 100, 200)
    run = lambda *cmd: subprocess.run(cmd, cwd=tmp_path, check=True, capture_output=True)  # noqa: E731
    run("hmmbuild", "-o", "/dev/null", "f.hmm", str(alignment))
    run("hmmsearch", "--cpu", "1", "--tblout", "hits.tbl", "-o", "/dev/null", "f.hmm", str(fasta))
    found = {}
    for line in (tmp_path / "hits.tbl").read_text().splitlines():
        if not line.startswith("#"):
            fields = line.split()
            found.setdefault(fields[2], set()).add(fields[0])
    assert found == hmmer.planted(2, 100)
    assert fasta.read_text().count(">") == 100


def test_three_configurations_run_and_are_recorded(configs_copy, tmp_path, capsys):
    """A real campaign of the check on local in configurations A, B and C; PyDarshan's view of
    each job's log: the database read once per family (hmmsearch re-reads it for each query),
    from the storage (A, B) or from /dev/shm (C), and the results written to <STDOUT> (A) or
    to the -o file (B, C)."""
    point = {
        "check": "hmmer_check",
        "parameters": {
            "config": ["A", "B", "C"],
            "procs": 2,
            "families": FAMILIES,
            "sequences": 2000,
        },
    }
    run_dir = runs.real_run(capsys, configs_copy, "hmmerrun", [point], tmp_path / "results")
    by_config = {}
    for log in runs.darshan_logs(run_dir):
        meta = darshan.DarshanReport(str(log), read_all=False).metadata
        # the search's log only: not one of the job's mkdir, cp or rm
        assert meta["exe"].split()[0].endswith("/hmmsearch"), meta["exe"]
        tags = meta["job"]["metadata"]
        by_config.setdefault(tags["config"], []).append((log, tags))
    assert sorted(by_config) == ["A", "B", "C"]
    for config, logs in by_config.items():
        for log, tags in logs:
            records = runs.records_by_name(darshan.DarshanReport(str(log), read_all=True), "STDIO")
            (db,) = [name for name in records if name.endswith("/db.fa")]
            assert db.startswith("/dev/shm/") == (config == "C"), db
            size = 2000 * (300 + 1) + sum(len(f">s{i}\n") for i in range(2000))
            assert records[db]["STDIO_BYTES_READ"] >= FAMILIES * size
            (hmm,) = [name for name in records if name.endswith("/families.hmm")]
            assert records[hmm]["STDIO_BYTES_READ"] > 0
            out = (
                "<STDOUT>"
                if config == "A"
                else next(name for name in records if name.endswith("/" + hmmer.RESULTS))
            )
            assert records[out]["STDIO_BYTES_WRITTEN"] > 0, (config, sorted(records))
            assert tags["mpi"] in ("yes", "no")
