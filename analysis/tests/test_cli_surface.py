"""The command line's surface: help without arguments, `iostudy list`, shell completion, and
one default for --store (`iostudy.core.paths`)."""

import argparse
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from iostudy.cli.cli import build_parser, group_names, main
from iostudy.core.config import REPO_ROOT

BIN = os.path.dirname(sys.executable)


def test_no_arguments_prints_the_groups(capsys):
    assert main([]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: iostudy") and "command groups" in out
    for group in ("list", "ingest", "report", "campaign"):
        assert group in out


def test_a_group_alone_prints_its_commands(capsys):
    assert main(["campaign"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("usage: iostudy campaign") and "run" in out and "check" in out


# What a command's help must not wait for: each takes a tenth of a second or more to import.
# (numpy comes with PyArrow, whose table schemas the store defines at import: 0.1 s in all.)
HEAVY = ("pandas", "matplotlib", "darshan", "duckdb", "jinja2", "cryptography")
LOADED = """
import io, contextlib, sys
from iostudy.cli.cli import main
with contextlib.redirect_stdout(io.StringIO()):
    try:
        main(sys.argv[1:])
    except SystemExit:
        pass
print(" ".join(sorted({m.split(".")[0] for m in sys.modules})))
"""


@pytest.mark.parametrize("group", ["", *group_names()])
def test_help_imports_no_heavy_library(group):
    """`iostudy --help` and `iostudy GROUP --help` build parsers only: pandas, matplotlib,
    PyDarshan, DuckDB and the rest load where a command uses them (iostudy.core.deferred)."""
    argv = [group, "--help"] if group else ["--help"]
    proc = subprocess.run(
        [sys.executable, "-c", LOADED, *argv], capture_output=True, text=True, check=True
    )
    loaded = set(proc.stdout.split())
    assert not loaded & set(HEAVY), sorted(loaded & set(HEAVY))


def test_parsing_the_workflow_imports_no_report_layer():
    """`snakemake -n` parses workflow/ (common.smk imports from iostudy): it must not import the
    report layer or a heavy library to learn a run's study."""
    code = (
        "import sys, runpy; sys.argv = ['snakemake', '-n', '-s', 'workflow/Snakefile', "
        "'--directory', sys.argv[1], '--quiet'];\n"
        "try:\n    runpy.run_module('snakemake', run_name='__main__')\n"
        "except SystemExit:\n    pass\n"
        "print('LOADED', ' '.join(sorted(m for m in sys.modules if m.startswith('iostudy') or "
        "m.split('.')[0] in ('matplotlib', 'darshan', 'duckdb'))))"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code, str(REPO_ROOT)], capture_output=True, text=True, cwd=REPO_ROOT
    )
    loaded = proc.stdout.split("LOADED", 1)[1].split()
    assert "iostudy.core.runmanifest" in loaded, proc.stdout + proc.stderr
    assert not [m for m in loaded if m.startswith("iostudy.report")], loaded
    assert not {"matplotlib", "darshan", "duckdb"} & {m.split(".")[0] for m in loaded}


def test_list_systems_campaigns_studies_checks(capsys):
    assert main(["list", "systems"]) == 0
    names = [line.split()[0] for line in capsys.readouterr().out.splitlines()]
    assert names == sorted(p.name for p in (REPO_ROOT / "configs/systems").iterdir() if p.is_dir())
    assert main(["list", "campaigns", "--json"]) == 0
    campaigns = json.loads(capsys.readouterr().out)
    files = sorted(p.stem for p in (REPO_ROOT / "configs/campaigns").glob("*.json"))
    assert [c["campaign"] for c in campaigns] == files
    quick = json.loads((REPO_ROOT / "configs/campaigns/quick.json").read_text())
    assert {"campaign": "quick", "study": quick["study"]} in campaigns
    assert main(["list", "studies", "--json"]) == 0
    studies = {s["study"]: s["campaigns"] for s in json.loads(capsys.readouterr().out)}
    assert "quick" in studies[quick["study"]]
    assert main(["list", "checks"]) == 0
    checks_out = capsys.readouterr().out
    assert "ior_check" in checks_out and "probe_check" in checks_out
    names = [line.split()[0] for line in checks_out.splitlines()]
    assert names == sorted(p.stem for p in (REPO_ROOT / "reframe-checks").glob("*_check.py"))
    assert "ior_check  title=IOR  package=ior  seed=001" in checks_out


def test_list_runs_of_a_store(tmp_path, capsys):
    assert main(["list", "runs", "--store", str(tmp_path / "none"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == []


def test_every_store_option_has_the_one_default():
    defaults = set()
    parser = build_parser([])

    def walk(p):
        for action in p._actions:
            if "--store" in action.option_strings:
                defaults.add(str(action.default))
            if isinstance(action, argparse._SubParsersAction):
                for sub in action.choices.values():
                    walk(sub)

    walk(parser)
    assert defaults == {os.path.join("results", "store")}


def completions(line: str, out: Path, cwd=None) -> set[str]:
    """What the shell gets when it asks iostudy (argcomplete) to complete ``line``."""
    env = dict(
        os.environ,
        COMP_LINE=line,
        COMP_POINT=str(len(line)),
        _ARGCOMPLETE="1",
        _ARGCOMPLETE_STDOUT_FILENAME=str(out),
        _ARGCOMPLETE_IFS=" ",
    )
    subprocess.run([os.path.join(BIN, "iostudy")], env=env, cwd=cwd, check=True, timeout=60)
    return set(out.read_text().split())


@pytest.mark.parametrize(
    "line, expected",
    [
        ("iostudy li", {"list"}),
        ("iostudy list s", {"studies", "systems"}),
        # names from configs/: every campaign, every system, the studies the campaigns name
        ("iostudy campaign run qu", {"quick"}),
        ("iostudy campaign run quick --system test", {"testcluster"}),
        ("iostudy config show lo", {"local"}),
        ("iostudy report build --study qui", {"quick"}),
        ("iostudy compare --check ior_", {"ior_check"}),
    ],
)
def test_shell_completion(tmp_path, line, expected):
    assert completions(line, tmp_path / "completions") == expected


def test_shell_completion_of_runs(tmp_path):
    """`iostudy ingest` offers the run directories of results/ (those with a manifest)."""
    for run in ("r1", "r2", "no-manifest"):
        (tmp_path / "results" / run).mkdir(parents=True)
    for run in ("r1", "r2"):
        (tmp_path / "results" / run / "manifest.json").write_text("{}")
    found = completions("iostudy ingest res", tmp_path / "completions", cwd=tmp_path)
    assert found == {"results/r1", "results/r2"}


def test_tables_as_json_agree_with_csv(tmp_path, capsys):
    """--json gives the rows --csv gives (jobs: the same MiB/s/CN to the last digit)."""
    from tests import reportdata

    _, store = reportdata.make_study(tmp_path)
    assert main(["jobs", "--store", str(store), "--csv"]) == 0
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert main(["jobs", "--store", str(store), "--json"]) == 0
    records = json.loads(capsys.readouterr().out)
    assert [r["log_path"] for r in records] == [r["log_path"] for r in rows] and len(rows) == 3
    for r, c in zip(records, rows, strict=True):
        assert r["mib_s_per_cn"] == float(c["mib_s_per_cn"])
        assert r["nodes_source"] == c["nodes_source"] == "tag"
    assert main(["compare", "--store", str(store), "--json"]) in (0, 1)  # 1: a regression
    judged = json.loads(capsys.readouterr().out)
    assert judged["exit_status"] in (0, 1) and sum(judged["verdicts"].values()) >= 1
    assert {"system", "metric", "value", "verdict"} <= set(judged["series"][0])
    with pytest.raises(SystemExit):
        main(["jobs", "--store", str(store), "--csv", "--json"])


def test_help_texts_carry_no_markup():
    """Every command's description and every option's help reads as plain text: no reST or
    Markdown literals (backticks), no rich tags, no bold."""
    markup = re.compile(r"`|\[/?(bold|b|i|red|green|yellow)\]|\*\*[A-Za-z][^*\n]*\*\*")
    found = []

    def walk(parser, path):
        texts = [("description", parser.description or "")]
        texts += [(a.dest, a.help or "") for a in parser._actions]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                texts += [(c.dest, c.help or "") for c in action._choices_actions]
                for name, sub in action.choices.items():
                    walk(sub, f"{path} {name}")
        found.extend(f"{path}: {where}" for where, text in texts if markup.search(text))

    walk(build_parser([]), "iostudy")
    assert found == []
