"""The runtime must never change what a program does: output, exit status, errno values;
it must cope with an unwritable log location and with threads."""

from __future__ import annotations

import errno
import os
import re
import shutil
import stat
import subprocess
import sys
import tempfile

import pytest
from rt_checks import (
    check_posix_record,
    common_slots,
    histogram,
    module_names,
    posix_expected,
    record,
    records_named,
)
from rt_run import clean_env, fs_block_size

from iostudy.logs.darshanlog import read_log


def same_behaviour(plain, inst):
    assert inst.returncode == plain.returncode, f"{inst.describe()}\n--- plain:\n{plain.describe()}"
    assert inst.stdout == plain.stdout, f"stdout differs\n{inst.describe()}"
    assert inst.stderr == plain.stderr, f"stderr differs\n{inst.describe()}"


def _fixed_dir(tmp_path):
    d = tmp_path / "fixed"
    d.mkdir()
    for n in ("a.txt", "b.dat", "c"):
        (d / n).write_text(n)
    return d


def _python3():
    # the interpreter running the tests: a real python3 binary (a "python3" found on PATH may
    # be a wrapper script, e.g. a pyenv shim, that runs several processes)
    return sys.executable


# What the library may bring into every process it is preloaded in: libc (with libdl and
# libpthread, apart before glibc 2.34), the log compressor, and the dynamic loader, which every
# dynamically linked process has anyway.
ALLOWED_DEPENDENCIES = {
    "libc.so.6",
    "libdl.so.2",
    "libpthread.so.0",
    "libdeflate.so.0",
    "libz.so.1",
}


def test_library_brings_only_libc_and_the_compressor(libiostudy):
    """Each library the runtime needs is mapped into every instrumented process, at a cost
    per process: readelf's list of what it needs holds libc and the compressor, no libm."""
    dynamic = subprocess.run(
        ["readelf", "-d", str(libiostudy)], capture_output=True, text=True, check=True
    ).stdout
    needed = set(re.findall(r"\(NEEDED\)\s+Shared library: \[([^\]]+)\]", dynamic))
    assert "libc.so.6" in needed, dynamic
    extra = {n for n in needed - ALLOWED_DEPENDENCIES if not n.startswith("ld-linux")}
    assert not extra, f"{libiostudy} needs {sorted(extra)}"


@pytest.mark.parametrize("which", ["true", "ls", "python3"])
def test_common_commands_unchanged(runner, tmp_path, which):
    if which == "true":
        cmd, out = [shutil.which("true") or "true"], ""
    elif which == "ls":
        cmd, out = ["ls", "-1a", str(_fixed_dir(tmp_path))], ".\n..\na.txt\nb.dat\nc\n"
    else:
        cmd, out = [_python3(), "-c", "print(1)"], "1\n"
    plain = runner.plain(cmd)
    inst = runner.instrumented(cmd, tmp_path)
    same_behaviour(plain, inst)
    assert inst.returncode == 0 and inst.stdout == out and inst.stderr == ""
    log = read_log(inst.log)  # a valid log was written
    assert log["job"]["nprocs"] == 1
    assert log["exe"].split(" ")[-1] == cmd[-1]


@pytest.mark.parametrize("how", ["return", "exit", "_exit"])
def test_exit_code_kept(runner, tmp_path, how):
    d = os.path.realpath(tmp_path)
    cmd = [runner.bin("exit_code"), d, how]
    plain = runner.plain(cmd)
    inst = runner.instrumented(cmd, d)
    same_behaviour(plain, inst)
    assert inst.returncode == 3
    assert inst.stdout == f"exiting with 3 via {how}\n"
    log = read_log(inst.log)
    rec = record(log, "POSIX", os.path.join(d, "exit.dat"))
    assert rec["counters"]["POSIX_WRITES"] == 1
    assert rec["counters"]["POSIX_BYTES_WRITTEN"] == 64


def test_errno_values_unchanged(runner, tmp_path):
    d = os.path.realpath(tmp_path)
    with open(os.path.join(d, "exists.dat"), "w") as f:
        f.write("hello world\n")
    cmd = [runner.bin("errno_check"), d]
    plain = runner.plain(cmd)
    inst = runner.instrumented(cmd, d)
    same_behaviour(plain, inst)
    assert inst.returncode == 0
    lines = dict((ln[:28].strip(), ln[29:]) for ln in inst.stdout.splitlines() if len(ln) > 29)
    assert lines["open missing"].startswith("ret=-1 errno=2 ")  # ENOENT
    assert lines["write read-only fd"].startswith("ret=-1 errno=9 ")  # EBADF
    assert lines["lseek on pipe"].startswith("ret=-1 errno=29 ")  # ESPIPE
    assert lines["write ok"].startswith("ret=10 errno=4242 ")
    read_log(inst.log)


def _deterministic_cmd(runner, d):
    return [runner.bin("exit_code"), d, "return"]


@pytest.mark.parametrize("where", ["LOGPATH", "LOGFILE"])
def test_unwritable_log_location(runner, tmp_path, where):
    d = os.path.realpath(tmp_path)
    blocker = os.path.join(d, "regular_file")
    with open(blocker, "w") as f:
        f.write("not a directory\n")
    if where == "LOGPATH":
        extra = {"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": os.path.join(blocker, "logs")}
    else:
        extra = {"DARSHAN_LOGFILE": os.path.join(blocker, "x.darshan")}
    cmd = _deterministic_cmd(runner, d)
    plain = runner.plain(cmd)
    inst = runner.instrumented(cmd, d, env_extra=extra)
    assert inst.returncode == plain.returncode == 3, inst.describe()
    assert inst.stdout == plain.stdout, inst.describe()
    err = inst.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("iostudy:"), (
        f"expected exactly one warning line starting with 'iostudy:'\n{inst.describe()}"
    )
    mmap_logs = [f for f in os.listdir(d) if "_mmap-log-" in f]
    assert sorted(set(os.listdir(d)) - set(mmap_logs)) == ["exit.dat", "regular_file"]
    # Nothing is lost: the records stay in the memory-mapped log, which the warning names.
    assert len(mmap_logs) == 1 and mmap_logs[0] in err[0], inst.describe()
    log = read_log(os.path.join(d, mmap_logs[0]))
    (rec,) = records_named(log, "POSIX", os.path.join(d, "exit.dat"))
    assert rec["counters"]["POSIX_BYTES_WRITTEN"] == 64


@pytest.mark.parametrize("how", ["exit", "_exit"])
def test_unwritable_log_location_nothing_recorded(runner, tmp_path, how):
    """A process that records nothing has no memory-mapped log: the warning says that no log
    is left, and names no file (via _exit it said "(null)")."""
    d = os.path.realpath(tmp_path)
    blocker = os.path.join(d, "regular_file")
    with open(blocker, "w") as f:
        f.write("not a directory\n")
    extra = {"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": os.path.join(blocker, "logs")}
    cmd = [runner.bin("exit_code"), d, how, "silent"]
    plain = runner.plain(cmd)
    inst = runner.instrumented(cmd, d, env_extra=extra)
    assert inst.returncode == plain.returncode == 3, inst.describe()
    assert inst.stdout == plain.stdout, inst.describe()
    err = inst.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("iostudy: cannot write the log "), inst.describe()
    assert err[0].endswith("; this run leaves no log"), inst.describe()
    assert os.listdir(d) == ["regular_file"], inst.describe()


@pytest.mark.parametrize("repeat", range(3))
def test_threads(runner, tmp_path, repeat):
    d = os.path.realpath(tmp_path)
    res = runner.instrumented([runner.bin("threads"), d], d).check()
    log = read_log(res.log)
    block = fs_block_size(d)
    names = []
    for t in range(4):
        n = (t + 1) * 25
        name = os.path.join(d, f"thread{t}.dat")
        names.append(name)
        exp = posix_expected(
            block,
            OPENS=1,
            MODE=0o644,
            WRITES=n,
            BYTES_WRITTEN=1000 * n,
            MAX_BYTE_WRITTEN=1000 * n - 1,
            CONSEC_WRITES=n - 1,
            SEQ_WRITES=n - 1,
            FILE_NOT_ALIGNED=sum(1 for k in range(n) if (1000 * k) % block),
            **histogram("WRITE", [1000] * n),
            **common_slots("ACCESS", [(1000, n)]),
        )
        check_posix_record(record(log, "POSIX", name), exp, [1000], what=name)
        m = (t + 1) * 10
        sname = os.path.join(d, f"thread{t}.txt")
        sc = record(log, "STDIO", sname)["counters"]
        assert (sc["STDIO_OPENS"], sc["STDIO_WRITES"], sc["STDIO_BYTES_WRITTEN"]) == (
            1,
            m,
            100 * m,
        ), sname
        assert sc["STDIO_MAX_BYTE_WRITTEN"] == 100 * m - 1
    assert module_names(log, "POSIX") == sorted(names)
    hm = log["heatmaps"]
    assert sum(sum(v) for v in hm["POSIX"]["write"].values()) == 250000
    assert sum(sum(v) for v in hm["STDIO"]["write"].values()) == 10000


def test_warning_never_lands_in_program_data(runner, tmp_path):
    """A program that closed fd 2 and opened its data file there: the runtime's warning (its
    log cannot be written) goes nowhere, not into the data; the records stay in the
    memory-mapped log."""
    d = os.path.realpath(tmp_path)
    blocker = os.path.join(d, "regular_file")
    with open(blocker, "w") as f:
        f.write("not a directory\n")
    extra = {"DARSHAN_LOGFILE": os.path.join(blocker, "x.darshan")}
    inst = runner.instrumented([runner.bin("stderr_reuse"), d], d, env_extra=extra)
    assert inst.returncode == 0, inst.describe()
    with open(os.path.join(d, "data.txt"), "rb") as f:
        assert f.read() == b"payload\n"
    assert "iostudy" not in inst.stderr
    assert [f for f in os.listdir(d) if "_mmap-log-" in f], "the records are not kept"


def test_no_predictable_tmp_fallback(runner, tmp_path):
    """Neither DARSHAN_LOGPATH, DARSHAN_LOGFILE, XDG_STATE_HOME nor HOME: no log under a /tmp
    path another user could have prepared; one warning says why."""
    d = os.path.realpath(tmp_path)
    before = set(os.listdir(tempfile.gettempdir()))
    extra = {"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": None, "XDG_STATE_HOME": None, "HOME": None}
    cmd = _deterministic_cmd(runner, d)
    inst = runner.instrumented(cmd, d, env_extra=extra)
    assert inst.returncode == 3, inst.describe()
    err = inst.stderr.splitlines()
    assert len(err) == 1 and "HOME is unset" in err[0], inst.describe()
    # every file the runtime names for a run carries the program's name (logs, memory-mapped
    # logs); other tests running in parallel make folders of their own there meanwhile
    made = {f for f in set(os.listdir(tempfile.gettempdir())) - before if "exit_code" in f}
    assert not made


def _as_user(uid: int, cmd: list, env: dict) -> subprocess.CompletedProcess:
    return subprocess.run(
        ["setpriv", f"--reuid={uid}", f"--regid={uid}", "--clear-groups", *cmd],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


NO_SETPRIV = "needs root and setpriv (util-linux) to run as two other users"


@pytest.mark.skipif(os.geteuid() != 0 or shutil.which("setpriv") is None, reason=NO_SETPRIV)
def test_two_users_share_a_log_root(runner):
    """A facility's log root of mode 1777: the first user of the day makes Y/M/D, with the
    root's mode whatever its umask (even 0777), and another user's log goes there too."""
    top = tempfile.mkdtemp(prefix="iostudy-shared-root-")
    try:
        os.chmod(top, 0o755)
        lib = os.path.join(top, "libiostudy.so")
        shutil.copy(runner.lib, lib)
        os.chmod(lib, 0o755)
        root = os.path.join(top, "logs")
        os.mkdir(root)
        os.chmod(root, 0o1777)
        users = (64001, 64002)
        for uid in users:
            env = clean_env(
                {
                    "LD_PRELOAD": lib,
                    "DARSHAN_ENABLE_NONMPI": "1",
                    "DARSHAN_LOGPATH": root,
                    "LOGNAME": f"user{uid}",
                    "DARSHAN_MMAP_LOGPATH": None,
                    "IOSTUDY_MMAP_LOGS": "0",
                }
            )
            proc = _as_user(uid, ["sh", "-c", "umask 0777; exec /bin/true"], env)
            assert proc.returncode == 0 and proc.stderr == "", proc.stderr
        logs = [os.path.join(p, f) for p, _, fs in os.walk(root) for f in fs]
        assert sorted(os.path.basename(f).split("_")[0] for f in logs) == [
            f"user{u}" for u in users
        ]
        day = os.path.dirname(logs[0])
        for folder in (day, os.path.dirname(day), os.path.dirname(os.path.dirname(day))):
            assert stat.S_IMODE(os.stat(folder).st_mode) == 0o1777, folder
        assert {os.stat(f).st_uid for f in logs} == set(users)
    finally:
        shutil.rmtree(top)


@pytest.mark.skipif(shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)")
def test_a_read_that_returns_after_shutdown(runner, tmp_path):
    """A thread blocked in a wrapped read while the process exits: strace holds its read's
    return 0.3 s and the main thread's exit_group 1.5 s, so the read returns after shutdown has
    unmapped the records (they live in the memory-mapped log). It must leave them alone: the
    process ends as it would without the runtime, with its log written."""
    d = os.path.realpath(tmp_path)
    # the runtime's variables for the program only (strace -E), not for strace itself
    env = {
        "LD_PRELOAD": runner.lib,
        "DARSHAN_ENABLE_NONMPI": "1",
        "DARSHAN_LOGFILE": os.path.join(d, "x.darshan"),
        "DARSHAN_MMAP_LOGPATH": d,
    }
    hold = [
        "-e",
        "inject=read:delay_exit=300000:when=3+",
        "-e",
        "inject=exit_group:delay_enter=1500000",
    ]
    proc = subprocess.run(
        [
            "strace",
            "-f",
            "-qq",
            "-o",
            os.devnull,
            "-e",
            "trace=read,exit_group",
            *hold,
            *(f"-E{k}={v}" for k, v in env.items()),
            runner.bin("exit_during_read"),
            d,
        ],
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    read_log(os.path.join(d, "x.darshan"))
    assert not [f for f in os.listdir(d) if "_mmap-log-" in f]


def test_a_missing_library_fails_the_call_not_the_program(runner, tmp_path):
    """MPI, HDF5 and PnetCDF calls reaching the runtime's wrappers in a program without those
    libraries: each call fails (-1, ENOSYS), one warning says which function is missing, and the
    program goes on to its exit status (the runtime used to abort it)."""
    d = os.path.realpath(tmp_path)
    plain = runner.plain([runner.bin("missing_library"), d])
    assert plain.stdout.split() == ["absent"] * 3  # without the runtime nothing answers
    inst = runner.instrumented([runner.bin("missing_library"), d], d)
    assert inst.returncode == 0, inst.describe()
    enosys = errno.ENOSYS
    assert inst.stdout.splitlines() == [
        f"{name} ret=-1 errno={enosys}" for name in ("MPI_File_open", "H5Fcreate", "ncmpi_open")
    ]
    err = inst.stderr.splitlines()
    assert len(err) == 1 and err[0].startswith("iostudy: PMPI_File_open is not in the MPI"), err
    read_log(os.path.join(d, "x.darshan"))
