"""The diagnoses Drishti cannot make (iostudy.metrics.diagnose_beyond): each rule fires on real
data that shows its problem, with the numbers of an independent reader, and not on real data
that does not. Every log goes the real path: a log tree, `iostudy ingest`, `iostudy diagnose
--json` (default thresholds, or a configs/diagnoses.json of the test's where it says why).

- DXT: Darshan 3.5.0's traces of runtime/tests/programs (io_timeline's five patterns, io_patterns
  small and indep, hdf5_file, pnetcdf_file: data/darshan-logs/darshan-built), mpi_io_test_with_dxt
  and ior_hdf5_example. The oracle: PyDarshan's DXT segments, each rule applied in plain Python.
- Lustre: the wheel's sample-badost (an OST slow for a whole IOR run) and sample-goodost, DLIO's
  three logs, mpi-io-test 3.5.0 and ior_hdf5_example (a shared file on one OST); and programs
  run under iostudy's runtime on a faked Lustre (runtime/tests/fakes: the file system's magic
  number and liblustreapi's layout, nothing else): many_files's small files on 8 stripes or on
  one, io_patterns indep's shared file on one stripe or on 4. The oracle: PyDarshan's LUSTRE and
  POSIX records, or the layout the test gave.
- Accounting: sample-badost and -goodost with Slurm accounting written by hand (as
  test_jobpages.py does): the elapsed time is the only value not from the log.
- The facility: io_patterns small and good run under the runtime as Slurm jobs of two projects.
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import subprocess
from pathlib import Path

import darshan
import pandas as pd
import pytest
from darshan.backend.cffi_backend import accumulate_records

from iostudy.cli.cli import main
from iostudy.collect.sacct import SACCT_FORMAT
from iostudy.metrics import diagnose, diagnose_beyond
from iostudy.store import store as store_mod

from .diagnosejson import diagnose_json
from .rundirs import RUNTIME, runtime_env
from .testdata import DARSHAN_LOGS, OWN_LOGS, RELEASE_350, REPO_ROOT

MIB = 1 << 20
WHEEL = Path(darshan.__file__).parent / "examples" / "example_logs"
WHEEL_TESTS = Path(darshan.__file__).parent / "tests" / "input"
BUILT = OWN_LOGS / "darshan-built"
PROGRAMS = REPO_ROOT / "build" / "runtime" / "tests"
FAKES = PROGRAMS / "fake-lustre"
DXT_LOGS = [
    *sorted(BUILT.glob("darshan-3.5.0-*-dxt*.darshan")),
    *sorted((DARSHAN_LOGS / "mpi_io_test_with_dxt").glob("*.darshan")),
    WHEEL / "ior_hdf5_example.darshan",
]
LUSTRE_LOGS = [
    WHEEL / "sample-badost.darshan",
    WHEEL_TESTS / "sample-goodost.darshan",
    *sorted((DARSHAN_LOGS / "dlio_logs").glob("*.darshan")),
    DARSHAN_LOGS / RELEASE_350,
    WHEEL / "ior_hdf5_example.darshan",
]
BEYOND = {rule.name for rule in diagnose_beyond.BEYOND_RULES}


def _diagnose(store: Path, out: Path, config: dict | None = None) -> pd.DataFrame:
    """`iostudy diagnose --json` (thresholds: the defaults, with ``config``'s rules changed):
    the findings of this module's rules, the log by its file name."""
    found = pd.DataFrame(diagnose_json(store, out, config))
    found = found[found["rule"].isin(BEYOND)].copy()
    found["name"] = found["log_path"].map(lambda p: Path(p).name if isinstance(p, str) else None)
    return found


def _tree(root: Path, logs) -> Path:
    tree = root / "tree"
    tree.mkdir()
    for log in logs:
        shutil.copyfile(log, tree / log.name)
    return tree


def _ingest(tree: Path, store: Path) -> None:
    assert main(["ingest", str(tree), "--store", str(store), "--study", "beyond"]) == 0


def _said(found: pd.DataFrame, rule: str) -> dict:
    """{log file name: the finding's row} of ``rule``."""
    return {r.name: r for r in found[found["rule"] == rule].itertuples()}


# --- DXT ----------------------------------------------------------------------------------


def _segments(path: Path) -> pd.DataFrame:
    """Every DXT segment of the log as PyDarshan reads it: module, file id, path, rank,
    operation, offset, length, start, end."""
    report = darshan.DarshanReport(str(path), read_all=True)
    rows = [
        rec[f"{op}_segments"].assign(module=module, id=rec["id"], rank=rec["rank"], op=op)
        for module in ("DXT_POSIX", "DXT_MPIIO")
        if module in report.records
        for rec in report.records[module].to_df()
        for op in ("write", "read")
        if len(rec[f"{op}_segments"])
    ]
    segs = pd.concat(rows, ignore_index=True).assign(
        path=lambda s: s["id"].map(report.name_records)
    )
    return segs.rename(columns={"start_time": "start", "end_time": "end"})


@pytest.fixture(scope="module")
def traced(tmp_path_factory) -> dict:
    """The DXT logs ingested as one tree, diagnosed with the default thresholds."""
    root = tmp_path_factory.mktemp("beyond-dxt")
    _ingest(_tree(root, DXT_LOGS), root / "store")
    return {"root": root, "found": _diagnose(root / "store", root / "found.json")}


@pytest.fixture(scope="module")
def segments() -> dict:
    return {log.name: _segments(log) for log in DXT_LOGS}


def _late(segs: pd.DataFrame, share: float, seconds: float):
    """The late ranks by the rule's definition: each rank's last end (any module) against the
    lower median of them, from the first traced start."""
    ends = segs.groupby("rank")["end"].max().sort_values()
    median = ends.iloc[(len(ends) - 1) // 2]
    span = median - segs["start"].min()
    return ends[ends - median > max(seconds, share * span)], median, len(ends)


def test_straggler_rank_fires_on_the_late_rank_only(traced, segments):
    found = _said(traced["found"], "straggler-rank")
    limits = diagnose.thresholds()["straggler-rank"]
    late = {n: _late(s, limits["share"], limits["min_seconds"]) for n, s in segments.items()}
    name = "darshan-3.5.0-io_timeline-straggler-dxt.darshan"
    assert set(found) == {n for n, (ranks, _, _) in late.items() if len(ranks)} == {name}
    ranks, median, traced_ranks = late[name]  # the program: the last of 2 ranks sleeps 2 s
    assert list(ranks.index) == [1] and 2.0 <= ranks.iloc[0] - median < 2.5
    assert found[name].found == (
        f"1 of {traced_ranks} traced ranks ended their I/O far after the others: the last, rank "
        f"1, at {ranks.iloc[0]:,.3f} s since the job started, {ranks.iloc[0] - median:,.3f} s "
        f"after the median rank's last access ({median:,.3f} s)"
    )
    assert found[name].ranks == "1 (1 of 2 processes)"
    assert found[name].files.startswith("/corpus/work/straggler/straggler1.dat (")
    assert pd.isna(found[name].drishti) and not pd.isna(found[name].jobid)


def _random_count(segs: pd.DataFrame) -> tuple[int, int]:
    """(random, all) traced POSIX accesses: neither where the previous one of the same rank,
    file and direction ended nor at the stride of the two before."""
    posix = segs[segs["module"] == "DXT_POSIX"]
    random = 0
    for _, seq in posix.groupby(["id", "rank", "op"]):
        seq = seq.sort_values(["start", "end", "offset", "length"], kind="stable")
        off, end = seq["offset"].tolist(), (seq["offset"] + seq["length"]).tolist()
        for k in range(2, len(off)):
            if off[k] != end[k - 1] and off[k] - off[k - 1] != off[k - 1] - off[k - 2]:
                random += 1
    return random, len(posix)


def test_random_offsets_fires_on_the_shuffled_writes_not_on_strided_or_sequential(traced, segments):
    found = _said(traced["found"], "random-offsets")
    counts = {n: _random_count(s) for n, s in segments.items()}
    fired = {n for n, (r, a) in counts.items() if r > 1000 and r > 0.2 * a}
    name = "darshan-3.5.0-io_timeline-random-dxt.darshan"
    assert set(found) == fired == {name}
    random, accesses = counts[name]
    # the program: 2 x 2,048 writes, every 4 KiB block once in a shuffled order
    assert accesses == 4096 and random > 4000
    assert found[name].found == (
        f"{random:,} of 4,096 traced POSIX accesses ({100 * random / 4096:.0f}%) neither start "
        "where the previous one of their rank, file and direction ended nor keep its stride"
    )
    # sequential (io_patterns small, io_timeline steady) and strided at a constant step
    # (io_patterns indep: each rank every other 64 KiB block): nothing random
    for other in ("io_patterns-small", "io_timeline-steady", "io_patterns-indep"):
        (log,) = [n for n in counts if other in n]
        assert counts[log][0] == 0, log


def _phases(segs: pd.DataFrame, gap: float) -> list[tuple[float, float, int]]:
    """(start, end, bytes) of each phase of the traced POSIX I/O: segments of every rank in
    start order, a new phase where one starts more than ``gap`` after all before ended."""
    posix = segs[segs["module"] == "DXT_POSIX"].sort_values(["start", "end"], kind="stable")
    phases: list[list] = []
    for s, e, n in zip(posix["start"], posix["end"], posix["length"], strict=True):
        if phases and s <= phases[-1][1] + gap:
            phases[-1][1] = max(phases[-1][1], e)
            phases[-1][2] += n
        else:
            phases.append([s, e, n])
    return [tuple(p) for p in phases]


def test_io_bursts_fires_on_the_phased_job_only(traced, segments):
    found = _said(traced["found"], "io-bursts")
    limits = diagnose.thresholds()["io-bursts"]
    bursty = set()
    for name, segs in segments.items():
        phases = _phases(segs, limits["gap_s"])
        busy = sum(e - s for s, e, _ in phases)
        span = phases[-1][1] - phases[0][0]
        if len(phases) >= limits["min_phases"] and busy <= limits["max_busy_share"] * span:
            bursty.add(name)
    name = "darshan-3.5.0-io_timeline-bursts-dxt.darshan"
    assert set(found) == bursty == {name}
    phases = _phases(segments[name], limits["gap_s"])
    # the program: 4 phases, 1.5 s apart, each of 2 ranks x 8 writes of 1 MiB
    assert [b for _, _, b in phases] == [16 * MIB] * 4
    assert all(1.4 < b[0] - a[0] < 2.0 for a, b in zip(phases, phases[1:], strict=False))
    busy = sum(e - s for s, e, _ in phases)
    span = phases[-1][1] - phases[0][0]
    largest = max(phases, key=lambda p: p[2])
    starts = ", ".join(f"{s:,.3f}" for s, _, _ in phases)
    assert found[name].found == (
        f"the traced I/O came in 4 phases more than 1 s apart (from {starts} s): I/O in flight "
        f"{busy:.3g} s of the {span:.3g} s from the first access to the last "
        f"({100 * busy / span:.0f}%); the largest phase moved 16 MiB in "
        f"{largest[1] - largest[0]:.3g} s"
    )
    assert found[name].ranks == "0-1 (2 of 2 processes)"


def _storm(segs: pd.DataFrame, max_bytes: int, window: float) -> tuple[int, float]:
    """(accesses, start) of the window of ``window`` s from a small access's start holding the
    most small traced POSIX accesses."""
    posix = segs[(segs["module"] == "DXT_POSIX") & (segs["length"] <= max_bytes)]
    starts = sorted(posix["start"])
    best = (0, 0.0)
    for i, s in enumerate(starts):
        n = bisect.bisect_right(starts, s + window) - i
        best = max(best, (n, -s))
    return best[0], -best[1]


def test_small_io_storm_fires_on_small_accesses_packed_in_time(traced, segments):
    found = _said(traced["found"], "small-io-storm")
    limits = diagnose.thresholds()["small-io-storm"]
    storms = {n: _storm(s, limits["max_bytes"], limits["window_s"]) for n, s in segments.items()}
    fired = {n for n, (count, _) in storms.items() if count >= limits["min_count"]}
    small = "darshan-3.5.0-io_patterns-small-dxt.darshan"
    shuffled = "darshan-3.5.0-io_timeline-random-dxt.darshan"
    assert set(found) == fired == {small, shuffled}
    # the programs: 2 x 2,000 writes of 100 bytes, 2 x 2,048 of 4 KiB, each in milliseconds
    assert storms[small][0] == 4000 and storms[shuffled][0] == 4096
    assert found[small].found == (
        "4,000 POSIX reads and writes of at most 4 KiB started within 1 s (from "
        f"{storms[small][1]:,.3f} s since the job started), by 2 ranks"
    )
    assert found[small].files == (
        "/corpus/work/small/small0.dat (2,000 small accesses in the window); "
        "/corpus/work/small/small1.dat (2,000 small accesses in the window)"
    )
    # io_timeline trickle: 1,200 writes of 100 bytes, but one every 5 ms per rank (at most
    # 2 x 201 in a second): Darshan's counters (small-writes) see them, the storm is not there
    trickle = "darshan-3.5.0-io_timeline-trickle-dxt.darshan"
    assert storms[trickle][0] <= 402
    everything = pd.DataFrame(json.loads((traced["root"] / "found.json").read_text()))
    rules = set(everything.loc[everything["log_path"].str.endswith(trickle), "rule"])
    assert "small-writes" in rules and "small-io-storm" not in rules


def test_the_storm_fires_from_its_count(traced, tmp_path):
    """min_count is "from": 4,000 small accesses fire at 4,000, not at 4,001."""
    store = traced["root"] / "store"
    at = _diagnose(store, tmp_path / "at.json", {"small-io-storm": {"min_count": 4000}})
    above = _diagnose(store, tmp_path / "above.json", {"small-io-storm": {"min_count": 4001}})
    assert "darshan-3.5.0-io_patterns-small-dxt.darshan" in _said(at, "small-io-storm")
    assert set(_said(above, "small-io-storm")) == {"darshan-3.5.0-io_timeline-random-dxt.darshan"}


def test_the_trace_rules_are_beyond_drishti_and_need_a_trace(traced, striped):
    """Every finding of these rules has no Drishti code and a history; the trees without DXT
    (the Lustre logs and programs) have no finding of a trace rule."""
    found = traced["found"]
    assert found["drishti"].isna().all() and found["history"].notna().all()
    dxt = {"straggler-rank", "random-offsets", "io-bursts", "small-io-storm"}
    assert set(found["rule"]) == dxt
    assert not dxt & set(striped["found"]["rule"])


# --- Lustre -------------------------------------------------------------------------------


def _layout(osts: list[int]) -> str:
    """A plain layout of 1 MiB stripes over ``osts`` (fakes/fake_lustreapi.c's form)."""
    return f"plain;{MIB},{len(osts)},0,0,0,-1,0,-,{' '.join(map(str, osts))}"


def _lustre_env(env: dict, work: Path, osts: list[int]) -> dict:
    return env | {
        "LD_PRELOAD": f"{FAKES / 'libfake_lustre_fs.so'} {RUNTIME}",
        "LD_LIBRARY_PATH": str(FAKES),
        "IOSTUDY_FAKE_LUSTRE_DIR": str(work),
        "IOSTUDY_FAKE_LUSTRE_LAYOUT": _layout(osts),
    }


def _run_many_files(log: Path, work: Path, osts: list[int], files: int) -> None:
    work.mkdir(parents=True)
    env = _lustre_env(runtime_env(log), work, osts)
    cmd = [str(PROGRAMS / "many_files"), str(work), str(files)]
    subprocess.run(cmd, env=env, check=True, stdout=subprocess.DEVNULL, timeout=120)
    assert log.is_file()


def _mpirun(prog: str, mode: str, log: Path, work: Path, extra: dict) -> None:
    """io_patterns-style MODE on 2 ranks of Open MPI under the runtime, with ``extra``'s
    variables (a faked Lustre, Slurm's job id) given to the ranks."""
    launcher = shutil.which("mpirun.openmpi")
    binary = PROGRAMS / f"{prog}-openmpi"
    if launcher is None or not binary.is_file():
        pytest.skip(f"needs mpirun.openmpi and {binary} (make setup builds it with Open MPI)")
    work.mkdir(parents=True)
    env = runtime_env(log, mpi=True) | extra
    cmd = [launcher, "--oversubscribe", "--allow-run-as-root", "-np", "2"]
    for key in ("LD_PRELOAD", "DARSHAN_LOGFILE", *extra):
        cmd += ["-x", f"{key}={env[key]}"]
    run_env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    run_env.pop("LD_PRELOAD", None)
    cmd += [str(binary), str(work), mode]
    out = subprocess.run(cmd, env=run_env, capture_output=True, text=True, timeout=300)
    assert out.returncode == 0 and f"done {mode}" in out.stdout, out.stdout + out.stderr
    assert log.is_file()


@pytest.fixture(scope="module")
def striped(tmp_path_factory) -> dict:
    """The Lustre logs and the programs on a faked Lustre, one tree, diagnosed."""
    if not (RUNTIME.is_file() and (FAKES / "libfake_lustre_fs.so").is_file()):
        pytest.fail(f"{RUNTIME} or {FAKES} not found: run `make setup` (it builds them)")
    root = tmp_path_factory.mktemp("beyond-lustre").resolve()  # the fake compares real paths
    tree = _tree(root, LUSTRE_LOGS)
    work = root / "work"
    _run_many_files(tree / "many-wide.darshan", work / "wide", list(range(8)), 12)
    _run_many_files(tree / "many-narrow.darshan", work / "narrow", [5], 12)
    for name, osts in (("indep-single", [3]), ("indep-striped", [0, 1, 2, 3])):
        extra = _lustre_env({}, work / name, osts)
        _mpirun("io_patterns", "indep", tree / f"{name}.darshan", work / name, extra)
    _ingest(tree, root / "store")
    return {"root": root, "found": _diagnose(root / "store", root / "found.json")}


def _pydarshan_files(path: Path) -> pd.DataFrame:
    """Per file with LUSTRE and POSIX records: its OSTs, size (the POSIX records' highest
    offset + 1), bytes, read and write seconds, writers (every rank: a rank -1 record wrote)
    and the ranks of its records (PyDarshan)."""
    report = darshan.DarshanReport(str(path), read_all=True)
    nprocs = report.metadata["job"]["nprocs"]
    both = report.records["POSIX"].to_df()
    posix = both["counters"].merge(both["fcounters"], on=["id", "rank"])
    posix["size"] = posix[["POSIX_MAX_BYTE_READ", "POSIX_MAX_BYTE_WRITTEN"]].max(axis=1) + 1
    posix["bytes"] = (posix["POSIX_BYTES_READ"] + posix["POSIX_BYTES_WRITTEN"]).astype(float)
    posix["seconds"] = posix["POSIX_F_READ_TIME"] + posix["POSIX_F_WRITE_TIME"]
    g = posix.groupby("id")
    files = g[["size"]].max().join(g[["bytes", "seconds"]].sum())
    files["ranks"] = g["rank"].agg(set)
    wrote = posix[posix["POSIX_BYTES_WRITTEN"] > 0].groupby("id")["rank"]
    files["writers"] = wrote.agg(lambda r: nprocs if (r == -1).any() else r.nunique())
    layouts = report.records["LUSTRE"].to_df()["components"].groupby("id")["LUSTRE_OST_IDS"]
    osts = layouts.agg(lambda ids: sorted({int(o) for i in ids for o in i})).rename("osts")
    files = files.join(osts, how="inner").rename_axis("id").reset_index()
    return files.assign(writers=files["writers"].fillna(0).astype(int))


def test_single_stripe_shared_fires_on_a_shared_file_on_one_ost(striped, tmp_path):
    """Thresholds lowered to the test's MiBs: 4 MiB and 2 writers (defaults: 1 GiB, 4)."""
    assert not _said(striped["found"], "single-stripe-shared")
    lowered = {"single-stripe-shared": {"min_mib": 4, "min_writers": 2}}
    found = _diagnose(striped["root"] / "store", tmp_path / "found.json", lowered)
    said = _said(found, "single-stripe-shared")
    expected = {}
    for log in LUSTRE_LOGS:
        files = _pydarshan_files(log)
        hit = files[
            (files["osts"].map(len) == 1) & (files["writers"] >= 2) & (files["size"] >= 4 * MIB)
        ]
        if len(hit):
            expected[log.name] = hit.sort_values("size").iloc[-1]
    # mpi-io-test 3.5.0 and IOR's HDF5 file: each a file of 4 ranks on one OST
    assert set(expected) == {Path(RELEASE_350).name, "ior_hdf5_example.darshan"}
    assert set(said) == {*expected, "indep-single.darshan"}
    for name, f in expected.items():
        assert said[name].found == (
            "1 of the job's files of at least 4 MiB, written by 2 ranks or more, lie on one "
            f"OST: the largest, {diagnose_beyond.binary_bytes(f['size'])} written by "
            f"{f['writers']} ranks, on OST {f['osts'][0]}"
        )
    # the program: 2 ranks, 600 writes of 64 KiB each, to one file the test put on OST 3 alone
    assert said["indep-single.darshan"].found == (
        "1 of the job's files of at least 4 MiB, written by 2 ranks or more, lie on one OST: "
        "the largest, 75 MiB written by 2 ranks, on OST 3"
    )


def test_small_file_striped_fires_on_small_files_over_many_osts(striped, tmp_path):
    said = _said(striped["found"], "small-file-striped")
    # many_files: 12 files of 10 bytes, the test's layout 8 stripes (wide) or 1 (narrow)
    assert set(said) == {"many-wide.darshan"}
    assert said["many-wide.darshan"].found == (
        "12 files of at most 1 MiB stripe over 4 OSTs or more (up to 8): each costs an object "
        "on every OST of its stripe"
    )
    raised = {"small-file-striped": {"min_files": 13}}
    more = _diagnose(striped["root"] / "store", tmp_path / "found.json", raised)
    assert not _said(more, "small-file-striped")


def _per_ost(files: pd.DataFrame) -> dict:
    """The job's bytes per OST, each file's split evenly over its OSTs."""
    per: dict = {}
    for f in files.itertuples():
        for ost in f.osts:
            per[ost] = per.get(ost, 0.0) + f.bytes / len(f.osts)
    return per


def test_ost_imbalance_fires_where_one_ost_holds_the_data(striped, tmp_path):
    """Thresholds: 100 MiB (DLIO's logs move 500 MiB at most; the default is 1 GiB)."""
    assert not _said(striped["found"], "ost-imbalance")
    found = _diagnose(
        striped["root"] / "store", tmp_path / "found.json", {"ost-imbalance": {"min_mib": 100}}
    )
    said = _said(found, "ost-imbalance")
    expected = {}
    for log in LUSTRE_LOGS:
        per = _per_ost(_pydarshan_files(log))
        total = sum(per.values())
        busiest = max(per, key=lambda o: (per[o], -o))
        if len(per) >= 2 and total >= 100 * MIB and per[busiest] >= 2 * total / len(per):
            expected[log.name] = (busiest, per[busiest], total, len(per))
    # DLIO's 2110365: a 476 MiB file on OST 5 of its 8; badost's 24 OSTs hold 85-86 files each
    dlio = "snyder_python3_id3116902-2110365_12-19-66957-188958432683465822_1.darshan"
    assert set(said) == set(expected) == {dlio}
    ((name, (ost, busiest, total, osts)),) = expected.items()
    assert ost == 5
    b = diagnose_beyond.binary_bytes
    assert said[name].found == (
        f"OST {ost} holds {b(busiest)} of the job's {b(total)} ({100 * busiest / total:.0f}%), "
        f"{busiest * osts / total:.1f} times the mean of the {osts} OSTs its files stripe over "
        "(a file's bytes split evenly over its OSTs)"
    )


def test_slow_ost_fires_on_the_bad_ost_run_only(striped):
    said = _said(striped["found"], "slow-ost")
    assert set(said) == {"sample-badost.darshan"}  # not sample-goodost, the same IOR's good run
    files = _pydarshan_files(WHEEL / "sample-badost.darshan")
    files = files[files["osts"].map(len) == 1].assign(ost=lambda f: f["osts"].str[0])
    per = files.groupby("ost")[["bytes", "seconds"]].sum()
    per["files"] = files.groupby("ost").size()
    per["rate"] = per["bytes"] / per["seconds"]
    median = per["rate"].median()
    slow = per[per["rate"] < 0.25 * median]
    assert list(slow.index) == [14]
    s = slow.loc[14]
    assert said["sample-badost.darshan"].found == (
        f"1 of the job's 24 OSTs moved its data far slower: the slowest, OST 14, "
        f"{s['bytes'] / MIB:,.1f} MiB of {s['files']:,.0f} files in {s['seconds']:,.1f} s "
        f"({s['rate'] / MIB:,.3g} MiB/s), {100 * s['rate'] / median:.0f}% of the median OST's "
        f"rate ({median / MIB:,.3g} MiB/s; files on one OST)"
    )
    ranks = {int(r) for f in files[files["ost"] == 14].itertuples() for r in f.ranks}
    assert said["sample-badost.darshan"].ranks.endswith(f"({len(ranks)} of 2,048 processes)")


# --- Slurm accounting ---------------------------------------------------------------------


def _sacct(path: Path, jobs: dict) -> Path:
    """A sacct file (iostudy.collect.sacct.SACCT_FORMAT) of jobid -> (account, elapsed s)."""
    lines = [SACCT_FORMAT.replace(",", "|")]
    for jobid, (account, elapsed) in jobs.items():
        lines.append(
            f"{jobid}|{jobid}|c1|{account}|alice|batch|1|2|{elapsed}|"
            "2026-01-01T00:00:00|2026-01-01T01:00:00|COMPLETED"
        )
    path.write_text("\n".join(lines) + "\n")
    return path


def _slowest_io(path: Path) -> float:
    """PyDarshan's agg_time_by_slowest of the log's POSIX and STDIO (the layers a job counts)."""
    report = darshan.DarshanReport(str(path), read_all=True)
    nprocs = report.metadata["job"]["nprocs"]
    return sum(
        accumulate_records(report.records[m].to_df(), m, nprocs).derived_metrics.agg_time_by_slowest
        for m in ("POSIX", "STDIO")
        if m in report.records and len(report.records[m])
    )


def test_io_bound_reads_slurms_wall_time_not_the_logs(tmp_path):
    """sample-badost's IOR: 779 s of I/O in its 780 s run. No accounting: no finding (the log's
    run time is not the allocation's); Slurm's 3,600 s: 22%, none; 900 s: 87%. goodost: 3.8 s."""
    logs = [WHEEL / "sample-badost.darshan", WHEEL_TESTS / "sample-goodost.darshan"]
    _ingest(_tree(tmp_path, logs), tmp_path / "store")
    bad, good = 6265799, 6909118  # the logs' job ids
    assert not _said(_diagnose(tmp_path / "store", tmp_path / "none.json"), "io-bound")
    shown = {}
    for elapsed in (3600, 900):
        jobs = {bad: ("ior", elapsed), good: ("ior", 60)}
        sacct = _sacct(tmp_path / f"sacct-{elapsed}.txt", jobs)
        assert main(["sacct", "import", str(sacct), "--store", str(tmp_path / "store")]) == 0
        found = _diagnose(tmp_path / "store", tmp_path / f"{elapsed}.json")
        shown[elapsed] = _said(found, "io-bound")
    assert not shown[3600]
    assert set(shown[900]) == {"sample-badost.darshan"}
    io = _slowest_io(logs[0])
    assert 770 < io < 780
    finding = shown[900]["sample-badost.darshan"]
    assert finding.found == (
        f"the slowest rank's I/O took {io:,.1f} s of the job's 900 s of wall time in Slurm's "
        f"accounting ({100 * io / 900:.0f}%)"
    )
    assert finding.account == "ior" and finding.files.count(" s of I/O)") == 3


# --- the facility -------------------------------------------------------------------------

PROJECTS = {8101: "climate", 8102: "climate", 8103: "climate", 8104: "physics", 8105: "physics"}
MODES = {8101: "small", 8102: "small", 8103: "small", 8104: "good", 8105: "small"}


@pytest.fixture(scope="module")
def facility(tmp_path_factory) -> dict:
    """io_patterns small on 4 jobs and good on one, Slurm jobs of projects climate (3 small)
    and physics (1 good, 1 small), diagnosed with the default thresholds."""
    if not RUNTIME.is_file():
        pytest.fail(f"{RUNTIME} not found: run `make setup` (it builds the runtime)")
    root = tmp_path_factory.mktemp("beyond-facility")
    tree = root / "tree"
    tree.mkdir()
    for jobid, mode in MODES.items():
        log, work = tree / f"{jobid}.darshan", root / "work" / str(jobid)
        _mpirun("io_patterns", mode, log, work, {"SLURM_JOB_ID": str(jobid)})
    _ingest(tree, root / "store")
    sacct = _sacct(root / "sacct.txt", {j: (p, 60) for j, p in PROJECTS.items()})
    assert main(["sacct", "import", str(sacct), "--store", str(root / "store")]) == 0
    out = root / "found.json"
    _diagnose(root / "store", out)
    return {"root": root, "all": pd.DataFrame(json.loads(out.read_text()))}


def test_project_and_code_wide_findings_count_the_per_job_ones(facility):
    found = facility["all"]
    wide = found[found["rule"].isin(["project-wide", "code-wide"])]
    facts = diagnose.job_facts(store_mod.connect(facility["root"] / "store"))
    facts = facts.sort_values(["start", "log_sha256"])  # the last of a group: its latest job
    climate, physics = ({j for j, p in PROJECTS.items() if p == n} for n in ("climate", "physics"))
    groups = [("project-wide", "project", climate), ("project-wide", "project", physics)]
    groups.append(("code-wide", "code", set(PROJECTS)))
    counts: dict = {}  # each group's per-job rules and their jobs, counted from the findings
    for rule, jobs in found.drop(wide.index).groupby("rule")["jobid"]:
        for wide_rule, what, mine in groups:
            n, of = len(set(jobs.astype(int)) & mine), len(mine)
            latest = int(facts.loc[facts["jobid"].isin(mine), "jobid"].iloc[-1])
            if n >= 3 and n >= 0.8 * of:
                counts.setdefault((wide_rule, what, latest, of), {}).setdefault(n, []).append(rule)
    expected = set()
    for (wide_rule, what, latest, of), by_n in counts.items():
        parts = [
            f"every job ({n} of {of}) of this job's {what} has {', '.join(sorted(rules))}"
            if n == of
            else f"{n} of the {of} jobs ({100 * n / of:.0f}%) of this job's {what} have "
            + ", ".join(sorted(rules))
            for n, rules in sorted(by_n.items(), reverse=True)
        ]
        expected.add((wide_rule, latest, "; ".join(parts) + "; this job is its latest"))
    said = zip(wide["rule"], wide["jobid"].astype(int), wide["found"], strict=True)
    assert set(said) == expected
    assert len(wide) == len(expected) and wide["drishti"].isna().all()
    # the group's names are in the columns a report anonymizes, never in the text
    for r in wide.itertuples():
        assert r.account == PROJECTS[int(r.jobid)] and "climate" not in r.found
    if "executable" in wide:
        assert set(wide.loc[wide["rule"] == "code-wide", "executable"]) <= {"io_patterns-openmpi"}
    # the programs: every small job writes 2 x 2,000 records of 100 bytes (small-writes), the
    # good one collective 8 MiB writes; physics has 2 jobs, fewer than 3
    rules = {(w, n, of): r for (w, _, _, of), by_n in counts.items() for n, r in by_n.items()}
    assert "small-writes" in rules[("project-wide", 3, 3)] and len(counts) == 2
    assert "small-writes" in rules[("code-wide", 4, 5)]
