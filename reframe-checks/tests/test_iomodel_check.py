"""The ReFrame check of the I/O-model benchmark (reframe-checks/iomodel_check.py), run the way a
facility runs it: `iostudy campaign run` with configs/reframe_settings.py.

ReFrame is the oracle for the check (it loads, dry-runs and runs it), PyDarshan (through
iostudy.logs.darshanlog) for the logs the jobs leave. The check's logic (iostudy.benchmarks.checks)
is tested first on plain data. Campaigns come from a copy of configs/ (IOSTUDY_CONFIGS), so that the
tests choose small sizes and their own references.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import campaign_runs as runs
import pytest

from iostudy.benchmarks import checks, spackenv
from iostudy.cli.cli import main
from iostudy.core import config
from iostudy.logs.darshanlog import read_log
from iostudy.run import campaign as campaign_mod
from iostudy.store import store as store_mod

pytestmark = pytest.mark.campaign

REPO_ROOT = Path(__file__).resolve().parents[2]
FLAVOURS = ["openmpi", "mpich"]
MIB = 1 << 20


# ---- the check's logic, on plain data --------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "size"), [("16M", 16 * MIB), ("4K", 4096), ("1G", 1 << 30), ("1000", 1000), (64, 64)]
)
def test_parse_size(text, size):
    assert checks.parse_size(text) == size


@pytest.mark.parametrize("text", ["", "0", "16MB", "1.5G", "-4K", "M"])
def test_parse_size_refuses(text):
    with pytest.raises(ValueError, match="size"):
        checks.parse_size(text)


@pytest.mark.parametrize(
    ("procs", "per_node", "count"), [(1, 1, 1), (2, 2, 3), (4, 2, 9), (4, 4, 6), (512, 16, 315)]
)
def test_model_count_is_seed_003s(procs, per_node, count):
    """(log2 N + 1)(log2 N + 2)/2 * (log2 P + 1)(log2 P + 2)/2; 32 nodes of 16: the seed's 315."""
    models = checks.iomodel_models(procs, per_node)
    assert len(models) == len(set(models)) == count
    nodes = procs // per_node
    for n, p, f, m in models:
        assert n <= nodes and p <= per_node and f <= p and m <= n


@pytest.mark.parametrize(
    ("size", "procs", "per_node", "problem"),
    [
        (16 * MIB, 4, 2, None),
        (16 * MIB, 3, 1, "max_procs 3 is not a power of two"),
        (16 * MIB, 4, 3, "procs_per_node 3 is not a power of two"),
        (16 * MIB, 2, 4, "procs_per_node 4 exceeds max_procs 2"),
        (1000, 16, 2, "size 1000 is not a multiple of max_procs 16"),
    ],
)
def test_iomodel_problem(size, procs, per_node, problem):
    assert checks.iomodel_problem(size, procs, per_node) == problem


#: seed 003's models (n, p, f, m) written out by hand, in the benchmark's order: (max_procs,
#: procs_per_node) -> models. 2 ranks on 1 node: n = m = 1, p in 1, 2, f up to p; 4 ranks as 2
#: nodes of 2: the same for n = 1, and for n = 2 each of those with m = 1 and m = 2.
MODELS = {
    (2, 2): [(1, 1, 1, 1), (1, 2, 1, 1), (1, 2, 2, 1)],
    (4, 2): [
        (1, 1, 1, 1),
        (1, 2, 1, 1),
        (1, 2, 2, 1),
        (2, 1, 1, 1),
        (2, 1, 1, 2),
        (2, 2, 1, 1),
        (2, 2, 1, 2),
        (2, 2, 2, 1),
        (2, 2, 2, 2),
    ],
}


@pytest.mark.parametrize(("procs", "per_node"), sorted(MODELS))
def test_models_in_order(procs, per_node):
    assert checks.iomodel_models(procs, per_node) == MODELS[procs, per_node]


def fake_lines(procs, per_node, size, mib_s=lambda n, p, f, m: 100.0 * n * p):
    return [
        {
            "benchmark": "iomodel",
            "n": n,
            "p": p,
            "f": f,
            "m": m,
            "bytes": size,
            "write_mib_s": mib_s(n, p, f, m),
            "read_mib_s": None,
        }
        for n, p, f, m in MODELS[procs, per_node]
    ]


def test_lines_skip_other_output():
    text = "\n".join(
        ["some MPI notice", '{"benchmark":"other"}', "{not json"]
        + [json.dumps(r) for r in fake_lines(2, 2, 64)]
    )
    assert checks.iomodel_lines(text) == fake_lines(2, 2, 64)


def test_sanity_accepts_a_full_run():
    assert checks.iomodel_sanity(fake_lines(4, 2, 64), 64, 4, 2) == []


def test_sanity_names_what_is_wrong():
    lines = fake_lines(4, 2, 64)
    del lines[3]
    lines[0]["bytes"] = 32
    problems = checks.iomodel_sanity(lines, 64, 4, 2)
    assert problems[0] == "8 models reported, expected 9"
    assert "models missing (n, p, f, m): [(2, 1, 1, 1)]" in problems[1]
    assert "did not move 64 bytes: [((1, 1, 1, 1), 32)]" in problems[2]


def test_performance_picks_full_scale_models():
    # 4 ranks, 2 per node: file per process is (2, 2, 2, 1), single shared file (2, 2, 1, 2).
    lines = fake_lines(4, 2, 64, mib_s=lambda n, p, f, m: 1000 * n + 100 * p + 10 * f + m)
    perf = checks.iomodel_performance(lines, 4, 2, read_back=False)
    assert perf == {"fpp_write_mib_s": 2221.0, "ssf_write_mib_s": 2212.0, "max_write_mib_s": 2222.0}
    for r in lines:
        r["read_mib_s"] = r["write_mib_s"] / 2
    perf = checks.iomodel_performance(lines, 4, 2, read_back=True)
    assert perf["fpp_read_mib_s"] == 1110.5 and perf["max_read_mib_s"] == 1111.0


def test_log_tags():
    assert checks.log_tags({"campaign": "quick", "size": "16M", "max_procs": 4}) == (
        "campaign=quick;size=16M;max_procs=4"
    )
    for bad in ({"a": "x;y"}, {"a=b": "x"}, {"a": "x\ny"}):
        with pytest.raises(ValueError, match="log tag"):
            checks.log_tags(bad)


def test_reframe_references_from_configs(configs_copy):
    refs = {"value": 1500.0, "lower": -0.25, "upper": None, "unit": "MiB/s"}
    (configs_copy / "references" / "local.json").write_text(
        json.dumps(
            {
                "system": "local",
                "description": "a test's",
                "checks": {"iomodel_check": {"fpp_write_mib_s": refs}},
            }
        )
    )
    assert checks.reframe_references("iomodel_check", "local", "local:default") == {
        "local:default": {"fpp_write_mib_s": (1500.0, -0.25, None, "MiB/s")}
    }
    assert checks.reframe_references("iomodel_check", "nosuch", "nosuch:p") == {"nosuch:p": {}}


# ---- the check under ReFrame -----------------------------------------------------------------


def iomodel_campaign(configs: Path, name: str, parameters: dict, environs=(), repetitions=1):
    """A campaign of the check alone, on the given environs (none: every MPI flavour)."""
    entry = {"check": "iomodel_check", "parameters": parameters, "repetitions": repetitions}
    return runs.write_campaign(
        configs, name, [entry], description="a test campaign", environs=list(environs)
    )


def scripts_by_environ(run_dir: Path) -> dict[str, str]:
    """environ -> its first repetition's job script (ReFrame's dry run leaves them in the stage
    folders, one per repetition: iomodel_check_<hash>)."""
    return {
        p.parent.parent.name: p.read_text()
        for p in runs.job_scripts(run_dir, "iomodel_check*")
        if runs.log_tags(p.read_text()).get("repetition") == "0"
    }


def expected_sync(folder: Path) -> tuple[str, str]:
    """sync auto's mode and label in folder, by GNU dd and util-linux's findmnt (oracles)."""
    folder = next(p for p in [folder, *folder.parents] if p.exists())
    kind = subprocess.run(
        ["findmnt", "-n", "-o", "FSTYPE", "--target", str(folder)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()[-1]
    probe = folder / "dd-direct-probe"
    dd = ["dd", "if=/dev/zero", f"of={probe}", "bs=4096", "count=1", "oflag=direct"]
    works = subprocess.run(dd, capture_output=True, check=False).returncode == 0
    probe.unlink(missing_ok=True)
    if kind in ("tmpfs", "ramfs"):
        return "fsync", f"memory ({kind})"
    return ("direct", "storage (O_DIRECT)") if works else ("fsync", "storage (fsync)")


@pytest.mark.parametrize("system", ["local", "testcluster"])
def test_dry_run_writes_job_scripts(system, configs_copy, spack_build, tmp_path, capsys):
    """Without a Spack build (spack_build: an empty stand-in) the programs are `make setup`'s."""
    status, _, run_dir = runs.dry_run(capsys, "quick", system, tmp_path / "results")
    assert status == 0
    manifest = runs.manifest(run_dir)
    assert (manifest["status"], manifest["dry_run"], manifest["exit_code"]) == ("dry-run", True, 0)
    sysdesc = config.load_system(system)
    scripts = scripts_by_environ(run_dir)
    assert sorted(scripts) == sorted(sysdesc["mpi"])
    # quick's 5 repetitions, a job each
    assert len(runs.job_scripts(run_dir, "iomodel_check*")) == 5 * len(sysdesc["mpi"])
    for environ, script in scripts.items():
        mpi = sysdesc["mpi"][environ]
        lines = script.splitlines()
        (launch,) = [line for line in lines if f"iomodel-{environ} " in line]
        binary = REPO_ROOT / "build" / "reframe-checks" / f"iomodel-{environ}"
        # quick's max_procs "system": every core, 2 on local, 2 nodes x 2 on testcluster.
        procs = sysdesc["nodes"]["count"] * sysdesc["nodes"]["cores_per_node"]
        assert f"{binary} --size 256M --max-procs {procs} --procs-per-node 2 --dir" in launch
        # quick's sync auto: O_DIRECT where dd can write with it and the folder is no tmpfs
        sync, label = expected_sync(run_dir / "scratch")
        assert launch.endswith(f" --sync {sync}")
        if system == "local":
            # The flavour's own mpirun, with one rank per core of the one 2-core node.
            assert launch.startswith(f'"${{IOSTUDY_MPIRUN:-mpirun}}" -np {procs} ')
            assert runs.exported(script, "IOSTUDY_MPIRUN") == mpi["mpirun"]
            assert "#SBATCH" not in script
        else:
            # srun with the flavour's PMI plugin (srun reads SLURM_MPI_TYPE), 2 nodes of 2.
            assert launch.startswith("srun ")
            assert runs.exported(script, "SLURM_MPI_TYPE") == mpi["srun_mpi"]
            assert "#SBATCH --ntasks=4" in lines and "#SBATCH --ntasks-per-node=2" in lines
            assert "#SBATCH -p debug" in lines
        for name, value in mpi.get("env", {}).items():
            assert runs.exported(script, name) == value
        runtime = REPO_ROOT / "build" / "runtime" / "libiostudy.so"
        assert runs.exported(script, "LD_PRELOAD") == str(runtime)
        assert runs.exported(script, "DARSHAN_LOGPATH") == str(run_dir / "darshan")
        tags = runs.log_tags(script)
        assert tags == {
            "campaign": "quick",
            "check": "iomodel_check",
            "system": system,
            "partition": config.default_partition(sysdesc)["name"]
            if system != "local"
            else "default",
            "environ": environ,
            "size": "256M",
            "max_procs": str(procs),
            "procs_per_node": "2",
            "read_back": "false",
            "repetition": "0",
            "nodes": "1" if system == "local" else "2",
            "run_id": run_dir.name,
            "sync": sync,
            "measures": label,
        }
    # Nothing ran: no logs, no benchmark output.
    assert not runs.darshan_logs(run_dir)
    assert not list(run_dir.rglob("iomodel.jsonl"))


def require_built():
    needed = campaign_mod.needed_binaries(
        {"checks": [{"check": "iomodel_check"}]}, "local", FLAVOURS
    )
    missing = [p for p in needed if not p.is_file()]
    if missing:
        pytest.fail(f"not built: {', '.join(map(str, missing))}; run `make setup`")


@pytest.mark.exclusive
def test_real_run_with_1_2_and_4_ranks(configs_copy, tmp_path, capsys):
    """Both MPI flavours, 1, 2 and 4 ranks (2 per node), 16 MiB per model: every job passes,
    keeps the benchmark's lines and leaves one tagged log that PyDarshan reads."""
    require_built()
    size = 16 * MIB
    iomodel_campaign(
        configs_copy, "small", {"size": "16M", "max_procs": [1, 2, 4], "procs_per_node": "system"}
    )
    status, out, run_dir = runs.run_campaign(capsys, "small", "local", tmp_path / "results")
    assert status == 0, out
    assert run_dir.parent == tmp_path / "results" and run_dir.name.endswith("-small-local")

    manifest = runs.manifest(run_dir)
    assert (manifest["status"], manifest["exit_code"], manifest["dry_run"]) == ("passed", 0, False)
    assert manifest["run_id"] == run_dir.name
    assert (manifest["campaign"], manifest["system"], manifest["study"]) == (
        "small",
        "local",
        "tests",
    )
    assert manifest["started"] <= manifest["finished"]
    assert len(manifest["git_commit"]) == 40 and isinstance(manifest["git_dirty"], bool)
    for tool in ("iostudy", "reframe", "snakemake", "darshan", *FLAVOURS):
        assert manifest["tool_versions"][tool], tool
    assert manifest["effective_config"]["system"] == config.load_system("local")
    assert manifest["effective_config"]["campaign"]["checks"][0]["parameters"]["max_procs"] == [
        1,
        2,
        4,
    ]
    # The Spack build the binaries come from, when `make spack` made one (else None).
    assert manifest["spack_build"] == spackenv.manifest_entry("local", manifest["git_commit"])
    assert manifest["results"] == {"pass": 6}

    cases = runs.report_cases(run_dir)
    assert len(cases) == 6 and {c["result"] for c in cases} == {"pass"}
    expected_models = {1: 1, 2: 3, 4: 9}
    for case in cases:
        procs, environ = case["max_procs"], case["environ"]
        assert case["num_tasks"] == procs and case["procs_per_node"] == min(procs, 2)
        assert set(case["perfvalues"]) == {
            f"local:default:{v}" for v in ("fpp_write_mib_s", "ssf_write_mib_s", "max_write_mib_s")
        }
        for value, *_, unit, result in case["perfvalues"].values():
            assert value > 0 and unit == "MiB/s" and result == "pass"
        jsonl = Path(case["outputdir"], "iomodel.jsonl")
        lines = [json.loads(x) for x in jsonl.read_text().splitlines()]
        assert len(lines) == expected_models[procs]
        assert {r["bytes"] for r in lines} == {size}
        assert Path(case["outputdir"]).is_relative_to(run_dir / "reframe" / "output" / "local")

    logs = runs.darshan_logs(run_dir)
    assert len(logs) == 6, logs
    seen = set()
    for path in logs:
        log = read_log(path)
        tags = log["job"]["metadata"]
        procs, environ = int(tags["max_procs"]), tags["environ"]
        seen.add((procs, environ))
        assert log["job"]["nprocs"] == procs
        assert Path(log["exe"].split()[0]).name == f"iomodel-{environ}"
        assert tags["campaign"] == "small" and tags["check"] == "iomodel_check"
        assert (tags["system"], tags["size"], tags["repetition"]) == ("local", "16M", "0")
        assert tags["procs_per_node"] == str(min(procs, 2)) and tags["run_id"] == run_dir.name
        # Every model wrote S bytes to files under its own model folder.
        written = {}
        for record in log["records"]["POSIX"]:
            name = log["name_records"][record["id"]]
            if "/scratch/" in name:
                model = Path(name).parent.name
                written[model] = written.get(model, 0) + record["counters"]["POSIX_BYTES_WRITTEN"]
        assert len(written) == expected_models[procs]
        assert set(written.values()) == {size}
    assert seen == {(p, e) for p in (1, 2, 4) for e in FLAVOURS}


@pytest.mark.exclusive
def test_references_decide(configs_copy, tmp_path, capsys):
    """A reference the machine cannot reach fails the run (exit 1), and the report says why."""
    require_built()
    refs = configs_copy / "references" / "local.json"
    data = json.loads(refs.read_text())
    data["checks"]["iomodel_check"]["max_write_mib_s"] = {
        "value": 1e9,
        "lower": -0.1,
        "upper": None,
        "unit": "MiB/s",
    }
    refs.write_text(json.dumps(data))
    iomodel_campaign(configs_copy, "tiny", {"size": "1M", "max_procs": 1}, environs=["openmpi"])
    status, out, run_dir = runs.run_campaign(capsys, "tiny", "local", tmp_path / "results")
    assert status == 1, out
    manifest = runs.manifest(run_dir)
    assert (manifest["status"], manifest["exit_code"]) == ("failed", 1)
    (case,) = runs.report_cases(run_dir)
    assert (case["result"], case["fail_phase"]) == ("fail", "performance")
    assert case["perfvalues"]["local:default:max_write_mib_s"][5] == "fail"
    assert case["perfvalues"]["local:default:fpp_write_mib_s"][5] == "pass"
    # The job ran and left its log all the same.
    assert len(runs.darshan_logs(run_dir)) == 1


@pytest.mark.exclusive
def test_what_was_measured_reaches_the_store(configs_copy, tmp_path, capsys):
    """sync auto on a real run: the benchmark's lines say the mode, the log's tags and the
    store's perf and iomodel tables (their measures column) say what was measured (the label
    by dd and findmnt)."""
    require_built()
    iomodel_campaign(
        configs_copy,
        "synced",
        {"size": "4M", "max_procs": 2, "sync": "auto"},
        environs=["openmpi"],
    )
    status, out, run_dir = runs.run_campaign(capsys, "synced", "local", tmp_path / "results")
    assert status == 0, out
    sync, label = expected_sync(run_dir / "scratch")
    (case,) = runs.report_cases(run_dir)
    assert case["measures"] == label
    lines = checks.iomodel_lines(Path(case["outputdir"], "iomodel.jsonl").read_text())
    assert len(lines) == 3 and {r["sync"] for r in lines} == {sync}
    (log,) = runs.darshan_logs(run_dir)
    tags = read_log(log)["job"]["metadata"]
    assert (tags["sync"], tags["measures"]) == (sync, label)
    store = tmp_path / "store"
    assert main(["ingest", str(run_dir), "--store", str(store)]) == 0
    db = store_mod.connect(store)
    for table in ("perf", "iomodel"):
        rows = {
            (json.dumps(json.loads(p)), m)
            for (p, m) in db.execute(f"SELECT parameters, measures FROM {table}").fetchall()
        }
        (only,) = rows
        assert only[1] == label and json.loads(only[0])["sync"] == "auto"
        assert "measures" not in json.loads(only[0])  # its own column, not a parameter
