"""Campaign and references files, and `iostudy campaign run` up to (and including) a ReFrame dry
run. The real runs of the check are in reframe-checks/tests/test_iomodel_check.py."""

import json
import re
from pathlib import Path

import pytest

from iostudy import __version__
from iostudy.benchmarks import checks
from iostudy.cli.cli import main
from iostudy.core import config
from iostudy.run import campaign
from iostudy.run.campaign_rules import resolve_storage_target
from iostudy.run.runsystem import resolve_system
from iostudy.store import store

pytestmark = pytest.mark.campaign

REPO_ROOT = Path(__file__).resolve().parents[2]


def edit(path: Path, change):
    data = json.loads(path.read_text())
    change(data)
    path.write_text(json.dumps(data))
    return path


def test_shipped_configs_are_valid(capsys):
    assert main(["campaign", "check"]) == 0
    out = capsys.readouterr().out
    assert "quick.json" in out and "local.json" in out and "testcluster.json" in out
    assert main(["config", "check"]) == 0


def test_quick_campaign_with_defaults():
    quick = config.load_campaign("quick")
    entry, *spack_points = quick["checks"]
    # 5 repetitions: the third run is judged by the two before it (the newcomer's three runs).
    # 5 against 10 with no overlap: exact p = 2 / C(15, 5) = 2 / 3003, under compare's 0.01 with
    # room for 4 swapped pairs (p = 2 x 12 / 3003 = 0.008); 3 against 6 never under 2 / 84 = 0.024
    assert entry["check"] == "iomodel_check" and entry["repetitions"] == 5
    assert entry["parameters"] == {
        "size": "256M",
        "max_procs": "system",
        "procs_per_node": "system",
        "read_back": False,
        "sync": "auto",  # O_DIRECT where the scratch takes it: local's RAM holds 256 MiB
    }
    assert not entry["optional"]
    # IOR and mdtest where the Spack view has them: optional elsewhere.
    assert {e["check"] for e in spack_points} == {"ior_check", "mdtest_check"}
    assert all(e["optional"] for e in spack_points)
    assert quick["environs"] == [] and quick["study"] == "quick"


def test_parameter_defaults_come_from_the_schema(configs_copy):
    path = edit(
        configs_copy / "campaigns" / "quick.json",
        lambda c: c["checks"][0].update(parameters={"size": "16M", "max_procs": 2}),
    )
    entry = config.load_campaign(str(path))["checks"][0]
    assert entry["parameters"]["procs_per_node"] == "system"
    assert entry["parameters"]["read_back"] is False


def bad_campaign(configs_copy, change):
    return edit(configs_copy / "campaigns" / "quick.json", change)


@pytest.mark.parametrize(
    ("change", "key", "problem"),
    [
        (lambda c: c.pop("study"), "(top level)", "'study' is a required property"),
        (lambda c: c.update(environs=["intelmpi"]), "environs[0]", "is not one of"),
        (lambda c: c["checks"][0].update(check="hacc_check"), "checks[0].check", "is not one of"),
        (
            lambda c: c["checks"][0]["parameters"].update(max_procs=3),
            "checks[0].parameters.max_procs",
            "3 is not valid",
        ),
        (
            lambda c: c["checks"][0]["parameters"].update(size="256MB"),
            "checks[0].parameters.size",
            "'256MB' is not valid",
        ),
        (
            lambda c: c["checks"][0]["parameters"].update(stripe=4),
            "checks[0].parameters",
            "'stripe' was unexpected",
        ),
        (lambda c: c["checks"][0].update(repetitions=0), "checks[0].repetitions", "minimum"),
        (lambda c: c["checks"].insert(1, c["checks"][0]), "checks[1].check", "more than once"),
        (lambda c: c.update(name="other"), "name", "differs from the file's name"),
    ],
)
def test_bad_campaign_names_file_and_key(configs_copy, change, key, problem):
    path = bad_campaign(configs_copy, change)
    with pytest.raises(config.ConfigError) as err:
        config.load_campaign("quick")
    message = str(err.value)
    assert message.startswith(f"{path}: {key}: "), message
    assert problem in message


def test_campaign_not_json(configs_copy):
    path = configs_copy / "campaigns" / "quick.json"
    path.write_text('{"name": "quick",\n  oops}')
    with pytest.raises(config.ConfigError, match=rf"^{re.escape(str(path))}: line 2 column 3"):
        config.load_campaign("quick")


def test_unknown_campaign_lists_the_known(configs_copy):
    names = "acceptance, adaptive, applications, components, interference, probe, quick"
    known = rf"\(known: {names}\)"
    with pytest.raises(config.ConfigError, match=rf"no such campaign 'nosuch' {known}"):
        config.load_campaign("nosuch")


@pytest.mark.parametrize(
    ("change", "key", "problem"),
    [
        (
            lambda r: r["checks"]["iomodel_check"]["fpp_write_mib_s"].update(lower=0.5),
            "checks.iomodel_check.fpp_write_mib_s.lower",
            "0.5 is greater than the maximum of 0",
        ),
        (
            lambda r: r["checks"]["iomodel_check"]["fpp_write_mib_s"].pop("unit"),
            "checks.iomodel_check.fpp_write_mib_s",
            "'unit' is a required property",
        ),
        (
            lambda r: r["checks"]["iomodel_check"]["max_write_mib_s"].update(value=0),
            "checks.iomodel_check.max_write_mib_s.value",
            "less than or equal to the minimum of 0",
        ),
        (lambda r: r.update(system="testcluster"), "system", "differs from the file's name"),
    ],
)
def test_bad_references_name_file_and_key(configs_copy, change, key, problem):
    path = edit(configs_copy / "references" / "local.json", change)
    with pytest.raises(config.ConfigError) as err:
        config.load_references("local")
    assert str(err.value).startswith(f"{path}: {key}: "), err.value
    assert problem in str(err.value)


def test_system_without_references_is_never_failed(configs_copy):
    (configs_copy / "references" / "local.json").unlink()
    refs = config.load_references("local")
    assert refs["checks"] == {} and "missing" in refs["description"]


def test_bad_system_file_stops_the_run(configs_copy, tmp_path, capsys):
    path = edit(
        configs_copy / "systems" / "local" / "system.json",
        lambda s: s["mpi"]["openmpi"].update(launcher="aprun"),
    )
    results = tmp_path / "results"
    status = main(["campaign", "run", "quick", "--system", "local", "--results", str(results)])
    err = capsys.readouterr().err
    assert status == 2
    assert f"{path}: mpi.openmpi.launcher: 'aprun' is not one of" in err
    assert not results.exists(), "no run directory for a run that never started"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["nosuch", "--system", "local"], "no such campaign 'nosuch'"),
        (["quick", "--system", "nosuch"], "no such system 'nosuch' (known: local, testcluster)"),
    ],
)
def test_unknown_names(args, message, tmp_path, capsys):
    status = main(["campaign", "run", *args, "--results", str(tmp_path)])
    assert status == 2 and message in capsys.readouterr().err


@pytest.mark.parametrize(
    ("parameters", "message"),
    [
        ({"size": "256M", "max_procs": 8}, "max_procs 8 at 2 per node needs 4 nodes"),
        ({"size": "1000", "max_procs": 16}, "size 1000 is not a multiple of max_procs 16"),
        (
            {"size": "16M", "max_procs": 2, "procs_per_node": 4},
            "procs_per_node 4 exceeds max_procs 2",
        ),
    ],
)
def test_impossible_parameters_on_the_system(configs_copy, tmp_path, capsys, parameters, message):
    bad_campaign(configs_copy, lambda c: c["checks"][0].update(parameters=parameters))
    status = main(
        ["campaign", "run", "quick", "--system", "testcluster", "--results", str(tmp_path)]
    )
    err = capsys.readouterr().err
    assert status == 2
    assert f"campaign quick: checks[0].parameters: {message}" in err


@pytest.mark.parametrize(
    ("exclude", "message"),
    [
        ({"api": "POSIX"}, "api is not a scanned parameter of ior_check"),
        ({"layout": "shared", "api": "POSIX"}, "api is not a scanned parameter"),
        ({"layout": "nn"}, "layout=nn is not one of its values (shared, fpp)"),
    ],
)
def test_excluded_combinations_must_be_of_the_scan(
    configs_copy, tmp_path, capsys, exclude, message
):
    # quick's ior_check scans layout (shared, fpp); its api is one value.
    bad_campaign(
        configs_copy,
        lambda c: c["checks"][1].update(exclude=[{"parameters": exclude, "why": "test"}]),
    )
    status = main(["campaign", "run", "quick", "--system", "local", "--results", str(tmp_path)])
    assert status == 2
    assert f"campaign quick: checks[1].exclude[0]: {message}" in capsys.readouterr().err


def test_a_check_without_exclusions_refuses_them(configs_copy, tmp_path, capsys):
    bad_campaign(
        configs_copy,
        lambda c: c["checks"][0].update(exclude=[{"parameters": {"max_procs": 2}, "why": "test"}]),
    )
    status = main(["campaign", "run", "quick", "--system", "local", "--results", str(tmp_path)])
    assert status == 2
    assert (
        "campaign quick: checks[0].exclude: iomodel_check has no exclusions (checks that have: "
        "adaptive_check, btio_check, fio_check, flashio_check, haccio_check, hmmer_check, "
        "ior_check, madbench_check, mdtest_check, metarates_check, netbw_check, probe_check)"
    ) in capsys.readouterr().err


def test_programs_and_versions_of_the_checks(spack_build):
    """Without a Spack build: iostudy's own benchmarks from `make setup`'s build, at iostudy's
    version; the view's programs unknown."""
    entries = [{"check": c} for c in ("iomodel_check", "probe_check", "ior_check", "hmmer_check")]
    build = REPO_ROOT / "build"
    assert campaign.needed_binaries({"checks": entries}, "local", ["mpich"]) == [
        build / "runtime" / "libiostudy.so",
        build / "reframe-checks" / "iomodel-mpich",
        build / "reframe-checks" / "ioprobe-mpich",
    ]
    versions = campaign.benchmark_versions({"checks": entries}, "local")
    own = f"iostudy@{__version__}"
    assert versions == {
        "iomodel_check": own,
        "probe_check": own,
        "ior_check": None,
        "hmmer_check": None,
    }


def test_excluded_by_needs_every_value():
    value_of = {"api": "NCMPI", "layout": "fpp", "procs": 2, "read_back": True}.get
    assert checks.excluded_by(["api=NCMPI&layout=fpp"], value_of) == "api=NCMPI&layout=fpp"
    assert checks.excluded_by(["api=NCMPI&layout=shared", "procs=2"], value_of) == "procs=2"
    assert checks.excluded_by(["read_back=true"], value_of) == "read_back=true"
    assert checks.excluded_by(["api=POSIX&layout=fpp"], value_of) is None
    assert checks.excluded_by([], value_of) is None
    assert (
        checks.exclusion_text({"api": "NCMPI", "read_back": False}) == "api=NCMPI&read_back=false"
    )


def test_memory_target_tree_goes_only_where_empty(tmp_path):
    root = tmp_path / "run"
    (root / "debug" / "openmpi" / "ior_check_1").mkdir(parents=True)
    (root / "debug" / "mpich" / "mdtest_check_2").mkdir(parents=True)
    left = root / "debug" / "mpich" / "metarates_check_3" / "file.0"
    left.parent.mkdir()
    left.write_text("a job's file")
    checks.remove_empty_dirs(root)
    assert left.read_text() == "a job's file"
    assert sorted(p.relative_to(root).as_posix() for p in root.rglob("*")) == [
        "debug",
        "debug/mpich",
        "debug/mpich/metarates_check_3",
        "debug/mpich/metarates_check_3/file.0",
    ]
    left.unlink()
    checks.remove_empty_dirs(root)
    assert not root.exists()
    checks.remove_empty_dirs(root)  # a run without memory-target jobs has none


def test_environ_the_system_lacks(configs_copy, tmp_path, capsys):
    edit(
        configs_copy / "systems" / "local" / "system.json",
        lambda s: s["mpi"].pop("mpich"),
    )
    bad_campaign(configs_copy, lambda c: c.update(environs=["mpich"]))
    assert main(["campaign", "run", "quick", "--system", "local", "--results", str(tmp_path)]) == 2
    assert "environs: mpich not on system local (it has openmpi)" in capsys.readouterr().err


def test_missing_build_says_make_setup(monkeypatch, tmp_path, capsys):
    monkeypatch.setattr(checks, "CHECKS_BUILD", config.REPO_ROOT / "build" / "nowhere")
    monkeypatch.setenv("IOSTUDY_SPACK_BUILD", str(tmp_path / "no-spack-build"))
    status = main(["campaign", "run", "quick", "--system", "local", "--results", str(tmp_path)])
    err = capsys.readouterr().err
    assert status == 2
    assert "not built: build/nowhere/iomodel-openmpi, build/nowhere/iomodel-mpich" in err
    assert "run `make setup`" in err
    assert not list(tmp_path.iterdir())


def test_reframe_command_line(tmp_path, monkeypatch):
    monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", "/state")
    system = resolve_system("testcluster")
    quick = config.load_campaign("quick")
    quick["checks"][0]["parameters"]["max_procs"] = [2, 4]
    quick["checks"][0]["repetitions"] = 3
    cmd = campaign.reframe_command(quick, system, tmp_path, "RID", ["mpich"], dry_run=False)
    joined = " ".join(cmd)
    assert f"-C {REPO_ROOT / 'configs' / 'reframe_settings.py'} --system testcluster" in joined
    assert f"--prefix {tmp_path / 'reframe'}" in joined
    assert f"--report-file {tmp_path / 'reframe' / 'report.json'}" in joined
    assert "--exec-policy=serial" in cmd and "-p ^(mpich)$" in joined
    assert f"-c {REPO_ROOT / 'reframe-checks' / 'iomodel_check.py'}" in joined
    for setting in (
        "-S campaign=quick",
        "-S run_id=RID",
        f"-S run_dir={tmp_path}",
        # the storage entry marked scratch: testcluster's GlusterFS volume
        "-S scratch_dir=/state/gluster/scratch",
        "-S iomodel_check.size=256M",
        "-P iomodel_check.max_procs=2,4",
        # "system": the check takes 0 as the partition's cores per node, at most max_procs
        "-S iomodel_check.procs_per_node=0",
        "-S iomodel_check.read_back=false",
        "-P iomodel_check.repetition=0,1,2",
    ):
        assert setting in joined, setting
    assert cmd[-1] == "--run"


def test_system_in_a_scanned_process_count_list():
    local, cluster = config.load_system("local"), config.load_system("testcluster")
    # every core: 2 here, 2 nodes of 2 there; a count named twice is one test case
    assert campaign.resolve_max_procs([1, "system"], local) == [1, 2]
    assert campaign.resolve_max_procs([1, "system"], cluster) == [1, 4]
    assert campaign.resolve_max_procs([2, "system"], local) == [2]


def test_run_id_format():
    import datetime as dt

    when = dt.datetime(2025, 3, 4, 5, 6, 7, tzinfo=dt.timezone.utc)
    assert campaign.run_id("quick", "local", when) == "20250304T050607Z-quick-local"


def test_dry_run_manifest(tmp_path, capsys, monkeypatch):
    callers_tmp = tmp_path / "callers-tmp"
    callers_tmp.mkdir()
    monkeypatch.setenv("TMPDIR", str(callers_tmp))
    status = main(
        ["campaign", "run", "quick", "--system", "local", "--dry-run", "--results", str(tmp_path)]
    )
    out = capsys.readouterr().out
    assert status == 0, out
    run_dir = Path(out.splitlines()[-1])
    assert run_dir.parent == tmp_path
    assert re.fullmatch(r"\d{8}T\d{6}Z-quick-local", run_dir.name)
    assert "[ DRY      ] iomodel_check" in out, "ReFrame's progress is shown"
    manifest = json.loads((run_dir / "manifest.json").read_text())
    assert set(manifest) >= {
        "run_id",
        "campaign",
        "system",
        "started",
        "finished",
        "status",
        "git_commit",
        "git_dirty",
        "tool_versions",
        "command_line",
        "effective_config",
        "spack_build",
    }
    assert manifest["run_id"] == run_dir.name
    assert manifest["status"] == "dry-run" and manifest["exit_code"] == 0
    assert re.fullmatch(r"[0-9a-f]{40}", manifest["git_commit"])
    assert manifest["command_line"][:4] == ["iostudy", "campaign", "run", "quick"]
    assert manifest["effective_config"]["campaign"] == config.load_campaign("quick")
    assert manifest["effective_config"]["references"] == config.load_references("local")
    assert set(manifest["tool_versions"]) >= {"iostudy", "reframe", "snakemake", "darshan"}
    assert (run_dir / "reframe" / "reframe.out").read_text().count("iomodel_check") >= 2
    assert "iomodel_check" in (run_dir / "reframe" / "debug.log").read_text()
    # ReFrame's log of loading its configuration, which it names nowhere, is kept with the run,
    # and ReFrame leaves nothing in the caller's temporary folder
    assert "Loading user configuration" in (run_dir / "reframe" / "startup.log").read_text()
    assert not (run_dir / "reframe" / "tmp").exists()
    assert list(callers_tmp.iterdir()) == []
    # quick's 5 repetitions on each of local's 2 MPI flavours
    assert len(list((run_dir / "reframe" / "stage").rglob("iomodel_check_*/rfm_job.sh"))) == 10
    # nothing ran: ingest leaves it out, says so, and the store has no run
    store_dir = tmp_path / "store"
    assert main(["ingest", str(run_dir), "--store", str(store_dir)]) == 0
    captured = capsys.readouterr()
    assert f"not ingested: {run_dir}: a dry run (nothing ran)" in captured.err
    assert "runs 0 ingested, 0 skipped, 1 dry runs left out" in captured.out
    assert store.connect(store_dir).execute("SELECT count(*) FROM runs").fetchone() == (0,)
    assert (run_dir / "darshan").is_dir()


def test_each_storage_target_is_a_test_case_where_the_system_lists_targets(tmp_path, monkeypatch):
    monkeypatch.setenv("IOSTUDY_CLUSTER_STATE", "/state")
    local, cluster = resolve_system("local"), resolve_system("testcluster")
    assert resolve_storage_target("each", cluster) == ["n1-disk", "n2-disk"]
    assert resolve_storage_target("each", local) == "scratch"  # lists none
    assert resolve_storage_target("n2-disk", cluster) == "n2-disk"
    components = config.load_campaign("components")
    cmd = campaign.reframe_command(components, cluster, tmp_path, "RID", ["openmpi"], False)
    assert "fio_check.storage_target=n1-disk,n2-disk" in cmd


def test_more_ranks_a_node_than_cores_is_refused_not_left_pending(configs_copy, tmp_path, capsys):
    edit(
        configs_copy / "campaigns" / "adaptive.json",
        lambda c: c["checks"][0]["parameters"].update(procs=8, procs_per_node=4),
    )
    status = main(
        ["campaign", "run", "adaptive", "--system", "testcluster", "--results", str(tmp_path)]
    )
    assert status == 2
    assert (
        "campaign adaptive: checks[0].parameters: procs_per_node 4 exceeds the 2 cores per node "
        "of system testcluster (the scheduler would keep the job pending for ever)"
    ) in capsys.readouterr().err


def test_a_storage_target_the_system_does_not_list_is_refused(configs_copy, tmp_path, capsys):
    edit(
        configs_copy / "campaigns" / "components.json",
        lambda c: c["checks"][0]["parameters"].update(storage_target=["n1-disk", "n9"]),
    )
    status = main(
        ["campaign", "run", "components", "--system", "testcluster", "--results", str(tmp_path)]
    )
    assert status == 2
    assert (
        "campaign components: checks[0].parameters.storage_target: 'n9' is not a storage target "
        "of system testcluster (its targets: n1-disk, n2-disk; or scratch, or each)"
    ) in capsys.readouterr().err


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        ("$TARGETS/n1", "/srv/t/n1"),
        ("${TARGETS}/n1", "/srv/t/n1"),
        ("scratch", "RUN/scratch"),  # relative: from the run directory
        ("/abs/$TARGETS", "/abs/$TARGETS"),  # only a leading variable is one
    ],
)
def test_a_storage_path_may_begin_with_an_environment_variable(monkeypatch, path, expected):
    monkeypatch.setenv("TARGETS", "/srv/t")
    assert str(config.storage_path(path, Path("RUN"))) == expected


def test_an_unset_variable_in_a_storage_path_is_named(monkeypatch):
    monkeypatch.delenv("NO_SUCH_ROOT", raising=False)
    with pytest.raises(config.ConfigError, match="the environment variable NO_SUCH_ROOT is not"):
        config.storage_path("$NO_SUCH_ROOT/x", Path("run"))


@pytest.mark.parametrize(
    ("targets", "problem"),
    [
        (
            [{"name": "a", "path": "x"}, {"name": "a", "path": "y"}],
            "storage[0].targets[1].name: 'a' names another target too",
        ),
        (
            [{"name": "a", "path": "x", "node": "n7"}],
            "storage[0].targets[0].node: 'n7' is not one of the system's nodes (n1, n2)",
        ),
        ([{"name": "a b", "path": "x"}], "storage[0].targets[0].name: 'a b' does not match"),
    ],
)
def test_bad_storage_targets_name_the_entry(configs_copy, targets, problem):
    path = edit(
        configs_copy / "systems" / "testcluster" / "system.json",
        lambda s: s["storage"][0].update(targets=targets),
    )
    with pytest.raises(config.ConfigError) as err:
        config.load_system("testcluster")
    assert str(err.value).startswith(f"{path}: {problem}")


def test_campaigns_write_to_the_storage_marked_scratch(tmp_path):
    marked = {
        "storage": [{"name": "scratch", "path": "s"}, {"name": "v", "path": "/v", "scratch": True}]
    }
    assert campaign.scratch_dir(marked, tmp_path) == Path("/v")
    named = {"storage": [{"name": "a", "path": "/a"}, {"name": "scratch", "path": "s"}]}
    assert campaign.scratch_dir(named, tmp_path) == tmp_path / "s"
    assert campaign.scratch_dir({"storage": [{"name": "a", "path": "/a"}]}, tmp_path) == Path("/a")
    assert campaign.scratch_dir({}, tmp_path) == tmp_path / "scratch"
