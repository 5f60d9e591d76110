"""The checks (iostudy.core.checknames) and their parameters (iostudy.benchmarks.registry)
against what they describe: the campaign schema made from them, the ReFrame checks of
reframe-checks/ (their variables and defaults), the Spack environment's specs and the
campaigns' studies."""

import importlib.util
import json
import re
import sys
from pathlib import Path

import pytest
import reframe.utility.typecheck as typ
import yaml

from iostudy.benchmarks import (
    btio,
    checks,
    components,
    flashio,
    haccio,
    hmmer,
    madbench,
    probe,
    registry,
)
from iostudy.benchmarks.benchcheck import BenchmarkCheck, RuntimeCheck
from iostudy.benchmarks.campaignschema import SCHEMA_PATH, schema_text
from iostudy.benchmarks.params import NO_DEFAULT
from iostudy.cli.cli import main
from iostudy.core import checknames, config

REPO_ROOT = Path(__file__).resolve().parents[2]
CHECKS_DIR = REPO_ROOT / "reframe-checks"
REFRAME_TYPES = {str: str, int: int, float: float, bool: typ.Bool}


def check_class(name: str):
    """The ReFrame class of reframe-checks/<name>.py, imported as ReFrame's loader does."""
    module_name = f"_registry_test_{name}"
    spec = importlib.util.spec_from_file_location(module_name, CHECKS_DIR / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[module_name] = module  # ReFrame finds a check's file through its module
    try:
        spec.loader.exec_module(module)
    finally:
        del sys.modules[module_name]
    return getattr(module, name)


def test_schema_in_the_repo_is_the_registrys(capsys):
    assert SCHEMA_PATH == REPO_ROOT / "configs" / "schemas" / "campaign.schema.json"
    assert SCHEMA_PATH.read_text() == schema_text(), (
        "run `.venv/bin/iostudy campaign schema --write`"
    )
    assert main(["campaign", "schema"]) == 0
    assert capsys.readouterr().out == f"ok: {SCHEMA_PATH}\n"


def test_schema_check_says_when_the_file_differs(tmp_path, capsys):
    stale = tmp_path / "campaign.schema.json"
    schema = json.loads(SCHEMA_PATH.read_text())
    del schema["$defs"]["ior_check_parameters"]["properties"]["iterations"]
    stale.write_text(json.dumps(schema))
    assert main(["campaign", "schema", "--schema", str(stale)]) == 1
    assert capsys.readouterr().err == (
        f"iostudy: error: {stale}: not what the registry makes: run with --write\n"
    )
    assert main(["campaign", "schema", "--schema", str(stale), "--write"]) == 0
    assert stale.read_text() == SCHEMA_PATH.read_text()


def test_every_check_file_is_registered():
    files = sorted(p.stem for p in CHECKS_DIR.glob("*_check.py"))
    assert files == sorted(checknames.CHECKS) == sorted(registry.PARAMETERS)
    assert len(files) == 13


@pytest.mark.parametrize("name", sorted(registry.PARAMETERS))
def test_check_variables_agree_with_the_registry(name):
    """Each parameter is a ReFrame variable of the check with the registry's type and default
    (none where the registry has none), and the check has no parameter of its own beside."""
    cls = check_class(name)
    variables = cls._rfm_var_space
    for param in registry.PARAMETERS[name].parameters:
        var = variables[param.name]
        assert var.field._types == (REFRAME_TYPES[param.type],), param.name
        if param.default is NO_DEFAULT:
            assert not var.is_defined(), param.name
        else:
            assert var.default_value == param.reframe_default(), param.name
    base = BenchmarkCheck if issubclass(cls, BenchmarkCheck) else RuntimeCheck
    own = set(variables.vars) - set(base._rfm_var_space.vars)
    assert own <= {p.name for p in registry.PARAMETERS[name].parameters}


def test_defaults_the_checks_take():
    """Fixed values: IOR's iterations are the schema's documented 3 (the seeds name none),
    "system" per node reaches a check as 0, a float parameter as a float."""
    assert registry.reframe_defaults("ior_check") == {
        "procs": 1,
        "procs_per_node": 0,
        "target": "scratch",
        "api": "POSIX",
        "layout": "shared",
        "transfer": "4M",
        "transfers": 16,
        "iterations": 3,
        "sync": "fsync",  # -e and the read after the pages are dropped, as before sync existed
    }
    assert registry.reframe_defaults("iomodel_check") == {
        "procs_per_node": 0,
        "read_back": False,
        "sync": "none",  # the page cache may hold the data, as before sync existed
    }
    assert registry.reframe_defaults("madbench_check")["bwexp"] == 1.0


def test_spack_packages_are_in_the_environment():
    specs = yaml.safe_load((REPO_ROOT / "spack-env" / "spack.yaml").read_text())["spack"]["specs"]
    names = {re.split(r"[@+~ ]", spec, maxsplit=1)[0] for spec in specs}
    assert {c.package for c in checknames.CHECKS.values()} <= names


def test_campaigns_run_checks_for_their_studies():
    for name in config.campaign_names():
        campaign = config.load_campaign(name)
        for entry in campaign["checks"]:
            assert campaign["study"] in checknames.CHECKS[entry["check"]].studies, (name, entry)


def test_what_campaign_run_takes_from_the_registry():
    assert checknames.APP_CHECKS == {
        "btio_check": "BTIO",
        "madbench_check": "MADbench2",
        "flashio_check": "FLASH-IO",
        "haccio_check": "HACC-IO",
        "hmmer_check": "HMMER hmmsearch",
    }
    benchmarks = {n: c.benchmark for n, c in checknames.CHECKS.items() if c.benchmark}
    assert benchmarks == {
        "iomodel_check": "iomodel",
        "metarates_check": "metarates",
        "probe_check": "ioprobe",
        "netbw_check": "netbw",
        "adaptive_check": "adaptive",
    }
    assert {n for n, c in checknames.CHECKS.items() if not c.excludable} == {"iomodel_check"}
    assert {n for n, c in checknames.CHECKS.items() if c.spack_view} == {
        "ior_check",
        "mdtest_check",
        *checknames.APP_CHECKS,
    }


def perf_names(check: str) -> set[str]:
    return {s.name for s in checknames.CHECKS[check].perf}


def stored(check: str) -> dict[str, str]:
    return {s.name: s.unit for s in checknames.CHECKS[check].perf}


def unit_of(values: dict) -> dict[str, str]:
    """{name: unit} of a performance function's {name: (value, unit)}."""
    return {name: unit for name, (_, unit) in values.items()}


def test_stored_performance_variables_are_the_checks():
    """The names the checks' performance functions give, on hand-made results."""
    assert set(checks.MDTEST_PERF.values()) == perf_names("mdtest_check")
    lines = [{"phase": p, "rate_ops_s": 1.0} for p in ("create", "stat", "utime", "remove")]
    assert set(checks.metarates_performance(lines)) == perf_names("metarates_check")
    ior = {"results": [{"operation": op, "bw_mib_s": 1.0} for op in ("write", "read")]}
    assert set(checks.ior_performance(ior)) == perf_names("ior_check")
    model = {
        "benchmark": "iomodel",
        "n": 1,
        "p": 1,
        "f": 1,
        "m": 1,
        "bytes": 8,
        "write_mib_s": 1.0,
        "read_mib_s": 2.0,
    }
    assert set(checks.iomodel_performance([model], 1, 1, read_back=True)) == perf_names(
        "iomodel_check"
    )
    figures = {"aggregate_mib_s": 1.0, "mean_writer_mib_s": 1.0, "imbalance": 1.0}
    assert unit_of(probe.performance(figures)) == stored("probe_check")
    assert set(hmmer.performance({"queries": [{"elapsed_s": 1.0}]})) == perf_names("hmmer_check")
    fio = {"jobs": [{"write": {"bw_bytes": 1 << 20}, "read": {"bw_bytes": 1 << 20}}]}
    fio_units = {}
    for op in components.FIO_OPERATIONS:
        fio_units |= unit_of(components.fio_performance(fio, op))
    assert fio_units == stored("fio_check")
    net = {"pair_mib_s": 1.0, "aggregate_mib_s": 2.0, "unaligned_mib_s": 0.5}
    assert unit_of(components.netbw_performance(net)) == stored("netbw_check")


def test_stored_performance_variables_of_the_applications():
    """Names and units of the application checks' performance functions, on hand-made results."""
    phase = {"grid": [12, 12, 12], "iterations": 12, "bandwidth_mib_s": 100.0}
    assert unit_of(btio.performance({"write": phase, "read": phase})) == stored("btio_check")
    timing = {"max": 1.0}
    parsed = {
        "npix": 64,
        "nbin": 2,
        "phases": {
            "S": {"w": timing, "total": {"mean": 2.0}},
            "W": {"r": timing, "w": timing, "total": {"mean": 2.0}},
            "C": {"r": timing, "total": {"mean": 2.0}},
        },
    }
    assert unit_of(madbench.performance(parsed)) == stored("madbench_check")
    files = {name: {"seconds": 1.0, "mib": 1.0} for name in flashio.FILES}
    parsed = {"files": files, "total_seconds": 3.0, "total_mib_s": 1.0}
    assert unit_of(flashio.performance(parsed)) == stored("flashio_check")
    phases = {p: {"seconds": 1.0, "bytes": 1 << 20} for p in ("write", "read")}
    assert unit_of(haccio.performance({"phases": phases})) == stored("haccio_check")
