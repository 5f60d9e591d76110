"""Job-level data (header, job record, exe, mounts, metadata), runtime settings given by
environment variables, log file naming, fork, and the record-id hash helper itself."""

from __future__ import annotations

import datetime
import glob
import os
import pwd
import re
import tempfile
import time

import pytest
from rt_checks import (
    EPS,
    check_nonshared_rank_fields,
    check_posix_record,
    common_slots,
    histogram,
    module_names,
    posix_expected,
    record,
)
from rt_hash import darshan_hash, normalize_path
from rt_run import fs_block_size

from iostudy.benchmarks import checks
from iostudy.logs.darshanlog import read_log

# ---------------------------------------------------------------------------------------------
# record-id hash (test vectors of shared/reference/darshan-log-format.md §4.1)

HASH_VECTORS = [
    ("", 10211412111675192767),
    ("a", 2110215103713784748),
    ("<STDIN>", 14734109647742566553),
    ("<STDOUT>", 15920181672442173319),
    ("<STDERR>", 7238257241479193519),
    ("heatmap:POSIX", 16592106915301738621),
    ("heatmap:STDIO", 3989511027826779520),
    ("heatmap:MPIIO", 3668870418325792824),
    ("heatmap:DFS", 1597927878319380788),
    ("heatmap:DAOS", 4131494093108637317),
    ("/tmp/test.dat", 6177579218230713141),
    ("abcdefghijklmnopqrstuvw", 15927770037946912996),
    ("abcdefghijklmnopqrstuvwx", 12207599811442368889),
    ("abcdefghijklmnopqrstuvwxy", 10295890364123953620),
    ("/home/wkliao/Darshan/TEST/mpi-io-test.tmp.dat", 9347516096890457488),
]


@pytest.mark.parametrize("name,expected", HASH_VECTORS)
def test_hash_vectors(name, expected):
    assert darshan_hash(name) == expected


def test_normalize_path_helper():
    assert normalize_path("./sub//x.dat", "/w") == "/w/sub/x.dat"
    assert normalize_path("/a//b/./c/../d", "/w") == "/a/b/c/../d"
    assert normalize_path("<STDOUT>", "/w") == "<STDOUT>"


# ---------------------------------------------------------------------------------------------
# job record


def test_job_fields(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    prog = runner.bin("job_info")
    t0 = time.time()
    res = runner.instrumented(
        [prog, d, "alpha", "beta"],
        d,
        env_extra={
            "DARSHAN_JOBID": "MY_JOB_VAR",
            "MY_JOB_VAR": "4242",
            "SLURM_JOB_ID": "999",
            "IOSTUDY_LOG_TAGS": "campaign=quick;check=x;np=4",
        },
    ).check()
    t1 = time.time()
    log = read_log(res.log)
    job = log["job"]
    assert job["log_ver"] == "3.41"
    assert job["nprocs"] == 1
    assert job["jobid"] == 4242  # from the variable named by DARSHAN_JOBID
    assert job["uid"] == os.getuid()
    start = job["start_time_sec"] + job["start_time_nsec"] / 1e9
    end = job["end_time_sec"] + job["end_time_nsec"] / 1e9
    assert 0 <= job["start_time_nsec"] < 1e9 and 0 <= job["end_time_nsec"] < 1e9
    assert t0 - 1 <= start <= end <= t1 + 1
    assert job["run_time"] == pytest.approx(end - start, abs=1e-6)
    assert 0 <= job["run_time"] <= t1 - t0 + 0.01
    assert log["exe"] == f"{prog} {d} alpha beta"
    assert len(log["mounts"]) >= 1
    for mnt in log["mounts"]:
        assert mnt[0].startswith("/") and mnt[1], mnt
    meta = job["metadata"]
    assert meta.get("lib_ver"), meta
    assert meta.get("campaign") == "quick"
    assert meta.get("check") == "x"
    assert meta.get("np") == "4"
    mods = log["modules"]
    assert mods["POSIX"]["ver"] == 4 and mods["STDIO"]["ver"] == 2
    assert mods["HEATMAP"]["ver"] == 1
    assert set(mods) <= {"POSIX", "STDIO", "HEATMAP", "LUSTRE"}, mods
    # the program's own record
    rec = record(log, "POSIX", os.path.join(d, "job.dat"))
    assert rec["rank"] == 0
    assert rec["counters"]["POSIX_BYTES_WRITTEN"] == 100
    out = record(log, "STDIO", "<STDOUT>")
    assert out["counters"]["STDIO_BYTES_WRITTEN"] == len(res.stdout)


def test_jobid_from_slurm_job_id_by_default(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    res = runner.instrumented([runner.bin("job_info"), d], d, {"SLURM_JOB_ID": "777"}).check()
    assert read_log(res.log)["job"]["jobid"] == 777


def test_jobid_falls_back_to_pid(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    res = runner.instrumented([runner.bin("job_info"), d], d).check()
    pid = int(re.fullmatch(r"pid=(\d+)\n", res.stdout).group(1))
    log = read_log(res.log)
    assert log["job"]["jobid"] == pid
    assert set(log["job"]["metadata"]) == {"lib_ver"}


# ---------------------------------------------------------------------------------------------
# log file location


def test_logpath_naming(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    logdir = os.path.join(d, "logs")
    os.mkdir(logdir)
    res = runner.instrumented(
        [runner.bin("job_info"), d],
        d,
        env_extra={"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": logdir, "SLURM_JOB_ID": "31337"},
    ).check()
    pid = int(re.fullmatch(r"pid=(\d+)\n", res.stdout).group(1))
    found = [
        os.path.relpath(p, logdir)
        for p in glob.glob(os.path.join(logdir, "**", "*"), recursive=True)
        if os.path.isfile(p)
    ]
    assert len(found) == 1, f"expected exactly one file under DARSHAN_LOGPATH, found {found}"
    rel = found[0]
    today = datetime.date.today()
    days = {today, today - datetime.timedelta(days=1)}  # in case the run crossed midnight
    m = re.fullmatch(r"(\d{4})/(\d{1,2})/(\d{1,2})/([^/]+)", rel)
    assert m, f"log not in LOGPATH/YYYY/M/D/: {rel}"
    y, mo, dd, fname = m.groups()
    assert not mo.startswith("0") and not dd.startswith("0"), f"zero padded: {rel}"
    day = datetime.date(int(y), int(mo), int(dd))
    assert day in days
    users = {pwd.getpwuid(os.geteuid()).pw_name, str(os.geteuid())}
    if os.environ.get("LOGNAME"):
        users.add(os.environ["LOGNAME"])
    users_re = "|".join(re.escape(u) for u in users)
    pat = rf"(?:{users_re})_job_info_id31337-{pid}_{day.month}-{day.day}"
    pat += r"-(\d+)-(\d+)_(\d+)\.darshan"
    fm = re.fullmatch(pat, fname)
    assert fm, f"log file name {fname!r} does not match {pat!r}"
    assert 0 <= int(fm.group(1)) < 86400  # seconds since local midnight
    log = read_log(os.path.join(logdir, rel))
    assert log["job"]["jobid"] == 31337
    assert module_names(log, "POSIX") == [os.path.join(d, "job.dat")]


def test_disable_writes_no_log(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    logdir = os.path.join(d, "logs")
    os.mkdir(logdir)
    plain = runner.plain([runner.bin("exit_code"), d])
    for extra in (
        {"DARSHAN_DISABLE": "1"},
        {"DARSHAN_DISABLE": "1", "DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": logdir},
    ):
        res = runner.instrumented([runner.bin("exit_code"), d], d, env_extra=extra)
        assert (res.returncode, res.stdout, res.stderr) == (
            plain.returncode,
            plain.stdout,
            plain.stderr,
        )
        assert res.returncode == 3
    assert not os.path.exists(os.path.join(d, "x.darshan"))
    assert os.listdir(logdir) == []


def test_exclude_dirs(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    excl = os.path.join(d, "excl")
    os.mkdir(excl)
    res = runner.instrumented(
        [runner.bin("job_info"), excl],
        d,
        env_extra={"DARSHAN_EXCLUDE_DIRS": excl + "/", "DARSHAN_LOGFILE": f"{d}/excl.darshan"},
    ).check()
    log = read_log(res.log)
    assert os.path.join(excl, "job.dat") not in log["name_records"].values()
    # control: another exclusion list does not hide it
    res = runner.instrumented(
        [runner.bin("job_info"), excl],
        d,
        env_extra={"DARSHAN_EXCLUDE_DIRS": d + "/other/", "DARSHAN_LOGFILE": f"{d}/other.darshan"},
    ).check()
    assert module_names(read_log(res.log), "POSIX") == [os.path.join(excl, "job.dat")]


@pytest.mark.skipif(not os.access("/dev/shm", os.W_OK), reason="no writable /dev/shm")
def test_default_excludes_and_the_analysis_list(runner, tmp_path):
    """/dev/ is among the runtime's default exclusions, and the analysis's list of them without
    /dev/ (read from runtime/src/default_excludes.def, as the C build reads it) records a file in
    /dev/shm while still excluding the rest."""
    d = os.path.realpath(tmp_path)
    with tempfile.TemporaryDirectory(dir="/dev/shm") as shm:
        name = os.path.join(shm, "job.dat")
        default = runner.instrumented(
            [runner.bin("job_info"), shm], d, env_extra={"DARSHAN_LOGFILE": f"{d}/default.darshan"}
        ).check()
        assert name not in read_log(default.log)["name_records"].values()
        but_dev = ",".join(checks.RUNTIME_EXCLUDES_BUT_DEV)
        assert "/etc/" in but_dev.split(",") and "/dev/" not in but_dev.split(",")
        memory = runner.instrumented(
            [runner.bin("job_info"), shm],
            d,
            env_extra={"DARSHAN_EXCLUDE_DIRS": but_dev, "DARSHAN_LOGFILE": f"{d}/memory.darshan"},
        ).check()
        assert module_names(read_log(memory.log), "POSIX") == [name]


# ---------------------------------------------------------------------------------------------
# memory alignment (DARSHAN_MEMALIGN)

ALIGN_OFFSETS = [0, 100, 200, 300, 400, 500, 0, 0]


@pytest.mark.parametrize("memalign,not_aligned", [(None, 3), ("16", 5)])
def test_memalign(runner, tmp_path, memalign, not_aligned):
    d = os.path.realpath(tmp_path)
    extra = {"DARSHAN_MEMALIGN": memalign} if memalign else None
    res = runner.instrumented([runner.bin("memalign"), d], d, env_extra=extra).check()
    log = read_log(res.log)
    block = fs_block_size(d)
    name = os.path.join(d, "align.dat")
    exp = posix_expected(
        block,
        mem_alignment=int(memalign or 8),
        OPENS=1,
        MODE=0o644,
        WRITES=6,
        READS=2,
        BYTES_WRITTEN=600,
        BYTES_READ=200,
        MAX_BYTE_WRITTEN=599,
        MAX_BYTE_READ=99,
        CONSEC_WRITES=5,
        SEQ_WRITES=5,
        RW_SWITCHES=1,
        MEM_NOT_ALIGNED=not_aligned,
        FILE_NOT_ALIGNED=sum(1 for o in ALIGN_OFFSETS if o % block),
        **histogram("WRITE", [100] * 6),
        **histogram("READ", [100] * 2),
        **common_slots("ACCESS", [(100, 8)]),
    )
    check_posix_record(record(log, "POSIX", name), exp, [100], [100], what=name)


# ---------------------------------------------------------------------------------------------
# fork: the child leaves its own log


def test_fork_child_log(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    logdir = os.path.join(d, "logs")
    os.mkdir(logdir)
    res = runner.instrumented(
        [runner.bin("fork_child"), d],
        d,
        env_extra={"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": logdir},
    ).check()
    m = re.fullmatch(r"parent=(\d+) child=(\d+) status=0\n", res.stdout)
    assert m, res.describe()
    parent, child = m.groups()
    logs = [p for p in glob.glob(os.path.join(logdir, "**", "*"), recursive=True)]
    logs = [p for p in logs if os.path.isfile(p)]
    assert len(logs) == 2 and all(p.endswith(".darshan") for p in logs), logs
    by_pid = {}
    for p in logs:
        pm = re.search(r"_id\d+-(\d+)_", os.path.basename(p))
        assert pm, p
        by_pid[pm.group(1)] = read_log(p)
    assert set(by_pid) == {parent, child}

    clog = by_pid[child]
    assert clog["job"]["metadata"].get("fork_parent") == parent
    assert module_names(clog, "POSIX") == [os.path.join(d, "child.dat")]
    block = fs_block_size(d)
    exp = posix_expected(
        block,
        OPENS=1,
        MODE=0o644,
        WRITES=1,
        BYTES_WRITTEN=200,
        MAX_BYTE_WRITTEN=199,
        **histogram("WRITE", [200]),
        **common_slots("ACCESS", [(200, 1)]),
    )
    check_posix_record(record(clog, "POSIX", os.path.join(d, "child.dat")), exp, [200])

    plog = by_pid[parent]
    assert "fork_parent" not in plog["job"]["metadata"]
    assert module_names(plog, "POSIX") == sorted(
        os.path.join(d, n) for n in ("parent_before.dat", "parent_after.dat")
    )
    for n, size in (("parent_before.dat", 100), ("parent_after.dat", 300)):
        rec = record(plog, "POSIX", os.path.join(d, n))
        assert rec["counters"]["POSIX_BYTES_WRITTEN"] == size
        assert rec["counters"]["POSIX_OPENS"] == 1


# ---------------------------------------------------------------------------------------------
# properties of every record of the non-MPI logs


@pytest.mark.parametrize("scenario", ["posix_write_run", "posix_read_run", "stdio_run"])
def test_nonmpi_records_rank0_and_timers_in_range(request, scenario):
    log = request.getfixturevalue(scenario).log
    run_time = log["job"]["run_time"]
    assert log["job"]["nprocs"] == 1
    for mod, recs in log["records"].items():
        for r in recs:
            what = f"{mod} {log['name_records'][r['id']]}"
            assert r["rank"] == 0, what
            check_nonshared_rank_fields(r, mod, what)
            f = r["fcounters"]
            assert all(v >= 0 for v in f.values()), what
            for fam in ("OPEN", "READ", "WRITE", "CLOSE"):
                start = f[f"{mod}_F_{fam}_START_TIMESTAMP"]
                end = f[f"{mod}_F_{fam}_END_TIMESTAMP"]
                assert 0 <= start <= end <= run_time + EPS, (what, fam, start, end, run_time)
            for t in ("READ_TIME", "WRITE_TIME", "META_TIME"):
                assert f[f"{mod}_F_{t}"] <= run_time + EPS, (what, t)
    for hm in log["heatmap_records"]:
        assert hm["rank"] == 0
