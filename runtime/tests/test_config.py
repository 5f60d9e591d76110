"""Darshan 3.5.0's runtime configuration (src/config.c): the file DARSHAN_CONFIG_PATH names and
the variables that override it decide which records and traces a log holds.

programs/many_files.c DIR 4 (no MPI): many_000.dat .. many_003.dat, one 10-byte write() each,
  in that order, then "done 4" on stdout (STDIO's <STDOUT>).
programs/mpi_io.c DIR on 4 ranks of Open MPI (rank r): shared.dat (every rank), rank<r>.dat,
  some.dat (ranks 0..2), stdio_shared.txt (every rank, STDIO), "np=4" on rank 0's stdout. A file
  every recorded rank opened... is one rank -1 record only when every rank of the job has it.
programs/dxt_many.c DIR N: N one-byte pwrites of one file.

Each case's expected records are derived by hand from the program and the rule (they run
without Darshan, in CI); with DARSHAN_PREFIX the same program runs under Darshan 3.5.0 with the
same file and variables, and the two logs must hold the same records (module, name, rank), the
same DXT traces and the same partial flags (skipped naming DARSHAN_PREFIX without it).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from rt_darshan import darshan_any_lib, darshan_lib
from rt_run import real_tmp
from test_dxt import read_dxt

from iostudy.logs.darshanlog import read_log

FILES = [f"many_{i:03d}.dat" for i in range(4)]
NPROCS = 4


def write_config(d: str, text: str) -> str:
    path = os.path.join(d, "darshan.conf")
    Path(path).write_text(text)
    return path


def inventory(log: Path, d: str) -> dict:
    """What a log holds, by module: sorted (name, rank) of its records (names in d relative to
    d, the program's only), DXT traces with their write counts, and the partial modules."""
    data, dxt = read_log(log), read_dxt(log)

    def short(name):
        return os.path.relpath(name, d) if name.startswith(d + "/") else name

    def ours(name):
        return name.startswith(d + "/") or name.startswith(("<", "heatmap:"))

    out = {"partial": sorted(m for m, v in data["modules"].items() if v["partial_flag"])}
    rows = [
        (m, data["name_records"][r["id"]], r["rank"])
        for m, rs in data["records"].items()
        for r in rs
    ]
    rows += [("HEATMAP", data["name_records"][r["id"]], r["rank"]) for r in data["heatmap_records"]]
    rows += [
        (m, t["name"], t["rank"], t["write_count"]) for m, ts in dxt["traces"].items() for t in ts
    ]
    for mod, name, *rest in rows:
        if ours(name):
            out.setdefault(mod, []).append((short(name), *rest))
    return {k: sorted(v) for k, v in out.items()}


def run_many(runner, d: str, config: str | None, env: dict | None = None, lib=None):
    # {d} in a value: the run's folder; None: the variable unset
    env = {k: v and v.replace("{d}", d) for k, v in (env or {}).items()}
    if config is not None:
        env["DARSHAN_CONFIG_PATH"] = write_config(d, config)
    if lib is not None:
        env["LD_PRELOAD"] = str(lib)
    res = runner.instrumented([runner.bin("many_files"), d, "4"], d, env_extra=env)
    assert res.returncode == 0 and res.stdout == "done 4\n", res.describe()
    return res


def posix(*indices):
    return [(FILES[i], 0) for i in indices]


STDOUT = [("<STDOUT>", 0)]
# case: (config file, variables, {module: expected (name, rank) or (name, rank, writes)})
CASES = {
    "name_exclude": ("NAME_EXCLUDE many_00[12] POSIX\n", {}, {"POSIX": posix(0, 3)}),
    "include_wins": (
        "NAME_EXCLUDE ^/ POSIX\nNAME_INCLUDE many_00[02]\\.dat$ POSIX\n",
        {},
        {"POSIX": posix(0, 2), "STDIO": STDOUT},
    ),
    "every_module": (
        "NAME_EXCLUDE many_001,STDOUT *\n",
        {},
        {"POSIX": posix(0, 2, 3), "STDIO": []},
    ),
    # DARSHAN_EXCLUDE_DIRS names the program's folder: NAME_INCLUDE brings a file back, in
    # the modules it lists only (Darshan 3.5.0's darshan_core_excluded_path).
    "include_under_excluded_dir": (
        "NAME_INCLUDE many_00[02]\\.dat$ POSIX\n",
        {"DARSHAN_EXCLUDE_DIRS": "{d}/"},
        {"POSIX": posix(0, 2), "STDIO": STDOUT},
    ),
    "include_of_another_module": (
        "NAME_INCLUDE many_000 STDIO\n",
        {"DARSHAN_EXCLUDE_DIRS": "{d}/"},
        {"POSIX": [], "STDIO": STDOUT},
    ),
    "other_module": ("NAME_EXCLUDE .* STDIO\n", {}, {"POSIX": posix(0, 1, 2, 3), "STDIO": []}),
    "mod_disable": ("MOD_DISABLE POSIX\n", {}, {"POSIX": [], "STDIO": STDOUT}),
    "variable_overrides": (
        "MOD_DISABLE POSIX\n",
        {"DARSHAN_MOD_DISABLE": "STDIO"},
        {"POSIX": posix(0, 1, 2, 3), "STDIO": []},
    ),
    "dxt_name_rule": (
        "MOD_ENABLE DXT_POSIX\nNAME_EXCLUDE many_001 DXT_POSIX\n",
        {},
        {
            "POSIX": posix(0, 1, 2, 3),
            "DXT_POSIX": [(f, 0, 1) for f in (FILES[0], FILES[2], FILES[3])],
        },
    ),
    "dxt_enable_variable": (
        "MOD_ENABLE DXT_POSIX\n",
        {"DARSHAN_MOD_ENABLE": "DXT_MPIIO"},  # replaces the file's enabling: no DXT_POSIX
        {"POSIX": posix(0, 1, 2, 3), "DXT_POSIX": []},
    ),
    "max_records": ("MAX_RECORDS 2 POSIX\n", {}, {"POSIX": posix(0, 1), "partial": ["POSIX"]}),
    "rank_include": ("RANK_EXCLUDE *\nRANK_INCLUDE 0\n", {}, {"POSIX": posix(0, 1, 2, 3)}),
    "rank_exclude": ("RANK_EXCLUDE 0\n", {}, {"POSIX": [], "STDIO": [], "HEATMAP": []}),
}


@pytest.mark.parametrize("case", CASES)
def test_rules_keep_the_records_derived_by_hand(runner, tmp_path, case):
    config, env, want = CASES[case]
    d = os.path.realpath(tmp_path)
    res = run_many(runner, d, config, env)
    assert res.stderr == "", res.describe()
    got = inventory(res.log, d)
    for module, records in want.items():
        assert got.get(module, []) == records, (module, got)


@pytest.mark.parametrize("case", CASES)
def test_rules_keep_darshans_records(runner, tmp_path, case):
    lib = darshan_any_lib()
    config, env, _ = CASES[case]
    logs = []
    for tag, preload in (("ours", None), ("darshan", lib)):
        d = os.path.realpath(tmp_path / tag)
        os.mkdir(d)
        logs.append(inventory(run_many(runner, d, config, env, lib=preload).log, d))
    assert logs[0] == logs[1]


# ---- the program itself: APP_EXCLUDE, APP_INCLUDE -----------------------------------------

APP_CASES = {
    "excluded": ("APP_EXCLUDE ^/nothing,many_files$\n", {}, False),
    "included_again": ("APP_EXCLUDE many\nAPP_INCLUDE files$\n", {}, True),
    "variable": ("", {"DARSHAN_APP_EXCLUDE": "many_fil"}, False),
    "variable_replaces_file": ("APP_EXCLUDE many_files\n", {"DARSHAN_APP_INCLUDE": "x"}, True),
}


@pytest.mark.parametrize("case", APP_CASES)
@pytest.mark.parametrize("runtime", ["ours", "darshan"])
def test_app_rules_decide_whether_a_log_is_written(runner, tmp_path, case, runtime):
    lib = darshan_any_lib() if runtime == "darshan" else None
    config, env, logged = APP_CASES[case]
    d = os.path.realpath(tmp_path)
    res = run_many(runner, d, config, env, lib=lib)
    assert res.log.exists() == logged
    if logged:
        assert inventory(res.log, d)["POSIX"] == posix(0, 1, 2, 3)


# ---- ranks of an MPI job --------------------------------------------------------------------


def mpi_records(ranks) -> dict:
    """mpi_io's records on NPROCS ranks when only ranks are recorded."""
    shared = [-1] if len(ranks) == NPROCS else sorted(ranks)
    return {
        "POSIX": sorted(
            [("shared.dat", r) for r in shared]
            + [(f"rank{r}.dat", r) for r in ranks]
            + [("some.dat", r) for r in ranks if r < NPROCS - 1]
        ),
        "STDIO": sorted([("stdio_shared.txt", r) for r in shared] + STDOUT * (0 in ranks)),
        "DXT_POSIX": sorted(
            [(n, r, w) for r in ranks for n, w in (("shared.dat", r + 1), (f"rank{r}.dat", r + 1))]
            + [("some.dat", r, 1) for r in ranks if r < NPROCS - 1]
        ),
    }


DXT = "MOD_ENABLE DXT_POSIX\n"
MPI_CASES = {
    "range": (DXT + "RANK_EXCLUDE 1:2\n", {}, [0, 3]),
    "open_start": (DXT + "RANK_EXCLUDE :1\n", {}, [2, 3]),
    "open_end": (DXT + "RANK_EXCLUDE 2:\n", {}, [0, 1]),
    "included_again": (DXT + "RANK_EXCLUDE 0:\nRANK_INCLUDE 3\nRANK_INCLUDE 0\n", {}, [0, 3]),
    "variable_replaces_file": (
        DXT + "RANK_EXCLUDE 1:2\n",
        {"DARSHAN_RANK_EXCLUDE": "0"},
        [1, 2, 3],
    ),
    "none": (DXT, {}, [0, 1, 2, 3]),
}


def run_mpi(runner, tmp_path, config, env, lib=None):
    prog = runner.mpi_program("mpi_io", "openmpi")
    d = os.path.realpath(tmp_path)
    env = dict(env, DARSHAN_CONFIG_PATH=write_config(d, config))
    if lib is not None:
        env["LD_PRELOAD"] = str(lib)
    res = runner.mpirun("openmpi", NPROCS, [prog, d], d, env_extra=env)
    assert res.returncode == 0 and res.stdout == f"np={NPROCS}\n", res.describe()
    return inventory(res.log, d)


@pytest.mark.parametrize("case", MPI_CASES)
def test_rank_rules_keep_the_ranks_derived_by_hand(runner, tmp_path, case):
    config, env, ranks = MPI_CASES[case]
    got = run_mpi(runner, tmp_path, config, env)
    for module, records in mpi_records(ranks).items():
        assert got.get(module, []) == records, (module, got)
    assert sorted({r for _, r in got.get("HEATMAP", [])}) == ranks


@pytest.mark.parametrize("case", MPI_CASES)
def test_rank_rules_keep_darshans_ranks(runner, tmp_path_factory, case):
    lib = darshan_lib("openmpi")
    config, env, _ = MPI_CASES[case]
    ours = run_mpi(runner, real_tmp(tmp_path_factory, f"ranks_{case}"), config, env)
    theirs = run_mpi(runner, real_tmp(tmp_path_factory, f"ranks_d_{case}"), config, env, lib)
    # <STDOUT> apart: Darshan makes an empty one on every rank at start, so that it is shared
    # (rank -1) when every rank is recorded, and drops the empty ones only after the reduction
    for log in (ours, theirs):
        log["STDIO"] = [(n, r) for n, r in log.get("STDIO", []) if n != "<STDOUT>"]
    assert ours == theirs


# ---- settings ignored with a warning, and the other settings of the file --------------------


def test_a_bad_line_is_one_warning_naming_file_line_and_key(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    config = "# comment\n\nNAME_EXCLUDE many_001 POSIX\nNO_SUCH_KEY 1\nMODMEM lots\n"
    config += "MOD_DISABLE POSIX,NOPE\nRANK_EXCLUDE 1:x\nNAME_EXCLUDE ( POSIX\n"
    res = run_many(runner, d, config)
    path = os.path.join(d, "darshan.conf")
    assert res.stderr.splitlines() == [
        f"iostudy: {path}:4: NO_SUCH_KEY: unknown setting, ignored",
        f'iostudy: {path}:5: MODMEM: "lots" is not a positive number of MiB, ignored',
        f'iostudy: {path}:6: MOD_DISABLE: unknown module "NOPE", ignored',
        f'iostudy: {path}:7: RANK_EXCLUDE: "1:x" is not a rank or a range of ranks, ignored',
        f'iostudy: {path}:8: NAME_EXCLUDE: cannot compile the regex "(", ignored',
    ]
    # the good settings hold: POSIX disabled, so many_001's exclusion is moot
    assert inventory(res.log, d).get("POSIX", []) == []


def test_a_missing_file_is_one_warning(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    missing = os.path.join(d, "absent.conf")
    res = run_many(runner, d, None, {"DARSHAN_CONFIG_PATH": missing})
    assert res.stderr.startswith(f"iostudy: cannot open the Darshan config file {missing} ")
    assert len(res.stderr.splitlines()) == 1
    assert inventory(res.log, d)["POSIX"] == posix(0, 1, 2, 3)


def test_logpath_of_the_file_and_the_variable_over_it(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    roots = [os.path.join(d, name) for name in ("file_root", "variable_root")]
    for root in roots:
        os.mkdir(root)
    env = {"DARSHAN_LOGFILE": None}
    run_many(runner, d, f"LOGPATH {roots[0]}\n", env)
    assert [len(files) for _, _, files in os.walk(roots[0]) if files] == [1]
    run_many(runner, d, f"LOGPATH {roots[0]}\n", dict(env, DARSHAN_LOGPATH=roots[1]))
    assert [len(files) for _, _, files in os.walk(roots[1]) if files] == [1]
    assert [len(files) for _, _, files in os.walk(roots[0]) if files] == [1]


TRIGGER_WRITES = 1000  # dxt_many's 1-byte pwrites at 0 .. 999: offset 0 the only aligned one


@pytest.mark.parametrize(
    "config,env,kept",
    [
        ("DXT_SMALL_IO_TRIGGER 1\n", {}, True),  # all 1,000 are under 10 KiB
        ("DXT_UNALIGNED_IO_TRIGGER 0.9995\n", {}, False),  # 999 / 1,000 unaligned
        ("DXT_UNALIGNED_IO_TRIGGER 0.9995\n", {"DARSHAN_DXT_UNALIGNED_IO_TRIGGER": "0.998"}, True),
    ],
)
def test_dxt_triggers_of_the_file(runner, build_dir, tmp_path, config, env, kept):
    d = os.path.realpath(tmp_path)
    assert os.statvfs(d).f_bsize > TRIGGER_WRITES
    env = dict(env, DARSHAN_CONFIG_PATH=write_config(d, "MOD_ENABLE DXT_POSIX\n" + config))
    res = runner.instrumented([build_dir / "tests" / "dxt_many", d, str(TRIGGER_WRITES)], d, env)
    assert res.returncode == 0 and res.stderr == "", res.describe()
    counts = [t["write_count"] for t in read_dxt(res.log)["traces"].get("DXT_POSIX", [])]
    assert counts == ([TRIGGER_WRITES] if kept else [])


def test_max_records_of_dxt_is_its_memory(runner, build_dir, tmp_path):
    """MAX_RECORDS n DXT_POSIX gives the module n KiB, as Darshan 3.5.0's 1 KiB DXT records: 64
    KiB keep (65,536 - 104-byte head) // 32-byte segments = 2,044 of 3,000 writes."""
    d = os.path.realpath(tmp_path)
    env = {
        "DARSHAN_CONFIG_PATH": write_config(d, "MOD_ENABLE DXT_POSIX\nMAX_RECORDS 64 DXT_POSIX\n")
    }
    res = runner.instrumented([build_dir / "tests" / "dxt_many", d, "3000"], d, env)
    assert res.returncode == 0 and res.stderr == "", res.describe()
    dxt = read_dxt(res.log)
    assert [t["write_count"] for t in dxt["traces"]["DXT_POSIX"]] == [(65536 - 104) // 32]
    assert dxt["modules"]["DXT_POSIX"], "partial"


def test_max_records_of_dxt_equals_darshans(runner, build_dir, tmp_path):
    lib = darshan_any_lib()
    config = "MOD_ENABLE DXT_POSIX\nMAX_RECORDS 64 DXT_POSIX\n"
    got = []
    for tag, preload in (("ours", None), ("darshan", lib)):
        d = os.path.realpath(tmp_path / tag)
        os.mkdir(d)
        env = {"DARSHAN_CONFIG_PATH": write_config(d, config)}
        if preload:
            env["LD_PRELOAD"] = str(preload)
        res = runner.instrumented([build_dir / "tests" / "dxt_many", d, "3000"], d, env)
        got.append(inventory(res.log, d))
    assert got[0] == got[1]


def test_dump_config_shows_the_files_settings(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    res = run_many(runner, d, "DUMP_CONFIG\nMODMEM 2.5\nNAME_EXCLUDE x$,y POSIX\nMOD_DISABLE H5D\n")
    lines = res.stderr.splitlines()
    assert "iostudy: config: MODMEM = 2.5 MiB, NAMEMEM = 1 MiB, MEM_ALIGNMENT = 8 bytes" in lines
    assert (
        "iostudy: config: POSIX ENABLED, MAX_RECORDS = 0, NAME_EXCLUDE = x$,y, NAME_INCLUDE = NONE"
        in lines
    )
    assert "iostudy: config: H5D DISABLED" in lines
    assert "iostudy: config: DXT_POSIX DISABLED" in lines
