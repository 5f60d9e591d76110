"""LUSTRE records: the layout of every file the POSIX module opens on Lustre.

There is no Lustre here, so the two things only Lustre provides are faked, and nothing else:
fakes/fake_lustre_fs.c (preloaded) makes fstatfs() report Lustre's magic number for the test's
directory, and fakes/fake_lustreapi.c stands in for liblustreapi's layout API, returning the
layout the test writes into IOSTUDY_FAKE_LUSTRE_LAYOUT. The runtime's own path is real: the
file-system check, the query through dlopen'ed liblustreapi, the record encoding, the shared
reduction, and PyDarshan reading the log. How a facility checks the module on real Lustre is in
runtime/README.md.
"""

from __future__ import annotations

import os

import pytest
from rt_checks import records_named
from rt_run import real_tmp

from iostudy.logs.darshanlog import read_log

U64 = (1 << 64) - 1
INIT = 0x10  # LCME_FL_INIT: an instantiated component of a composite layout
MDT = 2  # LLAPI_LAYOUT_MDT: data on the metadata target, no OST stripes
MIB = 1 << 20

# stripe size, count, pattern, flags, extent start and end, mirror, pool ("-": none), OSTs
PFL = [
    (MIB, 2, 0, INIT, 0, 4 * MIB, 0, "flash", [3, 7]),
    (4 * MIB, 4, 0, INIT, 4 * MIB, -1, 0, "-", [0, 1, 2, 5]),
    (MIB, 1, 0, 0, 64 * MIB, -1, 1, "-", [9]),  # not instantiated: no record
]
DOM = [
    (64 * 1024, 1, MDT, INIT, 0, MIB, 0, "-", [4]),  # on the MDT: no stripes on OSTs
    (MIB, 2, 0, INIT, MIB, -1, 0, "-", [6, 8]),
]
PLAIN = [(MIB, 4, 0, 0, 0, -1, 0, "-", [1, 3, 5, 7])]


def layout_spec(kind: str, comps) -> str:
    parts = [kind]
    for size, count, pattern, flags, start, end, mirror, pool, osts in comps:
        fields = [size, count, pattern, flags, start, end, mirror, pool, " ".join(map(str, osts))]
        parts.append(",".join(map(str, fields)))
    return ";".join(parts)


def expected_components(kind: str, comps) -> list:
    """What the record must hold: instantiated components only (all of a plain layout), DoM
    components without stripes, a plain layout's extent as the whole file."""
    out = []
    for size, count, pattern, flags, start, end, mirror, pool, osts in comps:
        if kind == "composite" and not flags & INIT:
            continue
        stripes = 0 if pattern & MDT else count
        out.append(
            {
                "counters": {
                    "LUSTRE_COMP_STRIPE_SIZE": size,
                    "LUSTRE_COMP_STRIPE_COUNT": stripes,
                    "LUSTRE_COMP_STRIPE_PATTERN": pattern,
                    "LUSTRE_COMP_FLAGS": flags,
                    "LUSTRE_COMP_EXT_START": start,
                    "LUSTRE_COMP_EXT_END": end,
                    "LUSTRE_COMP_MIRROR_ID": mirror,
                },
                "pool_name": "" if pool == "-" else pool,
                "ost_ids": osts[:stripes],
            }
        )
    return out


def lustre_env(runner, d: str, spec: str | None, with_api: bool = True) -> dict:
    fakes = runner.tests_dir / "fake-lustre"
    env = {
        "LD_PRELOAD": f"{fakes / 'libfake_lustre_fs.so'} {runner.lib}",
        "IOSTUDY_FAKE_LUSTRE_DIR": d,
    }
    if spec is not None:
        env["IOSTUDY_FAKE_LUSTRE_LAYOUT"] = spec
    if with_api:
        env["LD_LIBRARY_PATH"] = str(fakes)
    return env


def layouts_by_name(log: dict) -> dict:
    names = log["name_records"]
    return {(names.get(r["id"], "?"), r["rank"]): r["components"] for r in log["lustre"]}


@pytest.mark.parametrize(
    ("kind", "comps"),
    [("composite", PFL), ("composite", DOM), ("plain", PLAIN)],
    ids=["pfl", "data-on-mdt", "plain"],
)
def test_layout_of_each_file_on_lustre(runner, tmp_path_factory, kind, comps):
    d = real_tmp(tmp_path_factory, f"lustre_{kind}")
    env = lustre_env(runner, d, layout_spec(kind, comps))
    res = runner.instrumented([runner.tests_dir / "posix_write", d], d, env_extra=env)
    assert res.returncode == 0, res.describe()
    assert res.stderr == "", res.describe()
    log = read_log(res.log)
    assert log["modules"]["LUSTRE"]["ver"] == 2
    name = os.path.join(d, "write.dat")
    # The record carries the POSIX record's id (and so its name), rank 0 in a non-MPI job.
    (posix,) = records_named(log, "POSIX", name)
    assert layouts_by_name(log) == {(name, 0): expected_components(kind, comps)}
    assert any(r["id"] == posix["id"] for r in log["lustre"])


def test_files_elsewhere_have_no_layout(runner, tmp_path_factory):
    d = real_tmp(tmp_path_factory, "lustre_elsewhere")
    env = lustre_env(runner, os.path.join(d, "not-here"), layout_spec("plain", PLAIN))
    res = runner.instrumented([runner.tests_dir / "posix_write", d], d, env_extra=env)
    assert res.returncode == 0, res.describe()
    log = read_log(res.log)
    assert "LUSTRE" not in log["modules"] and log["lustre"] == []


def test_without_liblustreapi_one_warning_and_no_records(runner, tmp_path_factory):
    d = real_tmp(tmp_path_factory, "lustre_noapi")
    env = lustre_env(runner, d, layout_spec("plain", PLAIN), with_api=False)
    plain = runner.plain([runner.tests_dir / "posix_write", d])
    res = runner.instrumented([runner.tests_dir / "posix_write", d], d, env_extra=env)
    assert res.returncode == plain.returncode == 0, res.describe()
    warnings = [line for line in res.stderr.splitlines() if line]
    assert len(warnings) == 1 and "no liblustreapi" in warnings[0], res.describe()
    log = read_log(res.log)
    assert "LUSTRE" not in log["modules"]
    assert records_named(log, "POSIX", os.path.join(d, "write.dat"))


@pytest.mark.parametrize("flavour", ["openmpi", "mpich"])
def test_shared_file_layout_once_as_rank_minus_one(runner, tmp_path_factory, flavour):
    """programs/mpi_io.c on 3 ranks: shared.dat (all ranks) once as rank -1, rank<r>.dat and
    some.dat (ranks 0 and 1) per rank."""
    prog = runner.mpi_program("mpi_io", flavour)
    d = real_tmp(tmp_path_factory, f"lustre_mpi_{flavour}")
    spec = layout_spec("composite", PFL)
    env = lustre_env(runner, d, spec)
    res = runner.mpirun(flavour, 3, [prog, d], d, env_extra=env)
    assert res.returncode == 0, res.describe()
    layouts = layouts_by_name(read_log(res.log))
    want = expected_components("composite", PFL)
    ours = {k: v for k, v in layouts.items() if k[0].startswith(d + "/")}
    expected_keys = {(f"{d}/shared.dat", -1)}
    expected_keys |= {(f"{d}/rank{r}.dat", r) for r in range(3)}
    expected_keys |= {(f"{d}/some.dat", r) for r in range(2)}
    assert set(ours) == expected_keys
    assert all(v == want for v in ours.values())
