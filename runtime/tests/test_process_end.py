"""How a process image ends, and the runtime's part in it: _exit and fork from a signal handler,
exec (the image's log written first; a failed exec goes on), the descriptor table made while
threads run. strace places a signal exactly where it hurts: at the statfs the runtime makes,
holding its lock, for the block size of a file's file system at the first open there."""

from __future__ import annotations

import errno
import glob
import os
import shutil
import subprocess

import pytest
from rt_checks import (
    MANY_FILES_COUNTERS,
    MANY_FILES_OVER_2MIB,
    check_many_files,
    module_names,
    pydarshan_records,
    record,
)
from rt_darshan import darshan_parser_records
from rt_run import clean_env, real_tmp

from iostudy.logs.darshanlog import read_log

needs_strace = pytest.mark.skipif(
    shutil.which("strace") is None, reason="needs strace (ci/apt-packages.txt)"
)
# the signal lands while the main thread holds the runtime's lock (see the module docstring)
SIGNAL_IN_THE_LOCK = ["-e", "trace=statfs", "-e", "inject=statfs:signal=SIGALRM:when=1"]


def _runtime_env(runner, d, logfile=True) -> dict:
    env = {
        "LD_PRELOAD": str(runner.lib),
        "DARSHAN_ENABLE_NONMPI": "1",
        "DARSHAN_MMAP_LOGPATH": d,
    }
    env.update(
        {"DARSHAN_LOGFILE": os.path.join(d, "x.darshan")} if logfile else {"DARSHAN_LOGPATH": d}
    )
    return env


def _under_strace(runner, d, cmd, env, timeout=60) -> subprocess.CompletedProcess:
    """cmd under strace with the runtime's variables for the program only (strace -E)."""
    full = [
        "strace",
        "-f",
        "-qq",
        "-o",
        os.devnull,
        *SIGNAL_IN_THE_LOCK,
        *(f"-E{k}={v}" for k, v in env.items()),
        *cmd,
    ]
    try:
        return subprocess.run(
            full, env=clean_env(), capture_output=True, text=True, timeout=timeout
        )
    except subprocess.TimeoutExpired:
        pytest.fail(f"{cmd[0]} hung: the signal handler waits for the lock its thread holds")


def _mmap_logs(d) -> list[str]:
    return [f for f in os.listdir(d) if "_mmap-log-" in f]


def _logs(d) -> list[str]:
    """The logs under the log root d (DARSHAN_LOGPATH's date folders)."""
    return sorted(glob.glob(os.path.join(d, "[0-9]*", "*", "*", "*.darshan")))


def _counters(log, name) -> dict:
    return record(log, "POSIX", name)["counters"]


# ---- _exit from a signal handler -------------------------------------------------------------


@needs_strace
def test_exit_from_a_handler_that_interrupted_the_runtime(runner, tmp_path):
    """The handler interrupts the main thread inside the runtime (its lock held, a record half
    made), does I/O of its own and calls _exit: the process ends at once with its status, and
    the records stay in the memory-mapped log, as a killed process's do (the runtime used to
    wait for its own lock for ever)."""
    d = os.path.realpath(tmp_path)
    proc = _under_strace(runner, d, [runner.bin("signal_exit"), d], _runtime_env(runner, d))
    assert proc.returncode == 3, proc.stderr
    assert proc.stdout == "0\n"  # no lseek yet: the signal came inside the open
    with open(os.path.join(d, "handler.dat")) as f:
        assert f.read() == "handler\n"
    assert not os.path.exists(os.path.join(d, "x.darshan"))
    (left,) = _mmap_logs(d)
    read_log(os.path.join(d, left))  # a log, readable as it is (iostudy logs merge takes it)


def test_exit_from_a_handler_writes_the_log(runner, tmp_path):
    """The handler's _exit comes while the main thread waits in pause(), after its lseeks: the
    log is written by what _exit may do in a handler (the memory-mapped records copied out, no
    allocation), with every lseek and the handler's own write; no memory-mapped log is left."""
    d = os.path.realpath(tmp_path)
    plain = runner.plain([runner.bin("signal_exit"), d])
    inst = runner.instrumented([runner.bin("signal_exit"), d], d)
    assert plain.returncode == inst.returncode == 3, inst.describe()
    assert plain.stdout == inst.stdout == "10000\n"
    log = read_log(inst.log)
    assert _counters(log, os.path.join(d, "main.dat"))["POSIX_SEEKS"] == 10000
    handler = _counters(log, os.path.join(d, "handler.dat"))
    assert (handler["POSIX_OPENS"], handler["POSIX_WRITES"], handler["POSIX_BYTES_WRITTEN"]) == (
        1,
        1,
        8,
    )
    assert log["job"]["nprocs"] == 1 and log["job"]["end_time_sec"] >= log["job"]["start_time_sec"]
    assert sum(sum(v) for v in log["heatmaps"]["POSIX"]["write"].values()) == 8
    assert _mmap_logs(d) == []


# ---- fork from a signal handler --------------------------------------------------------------


@needs_strace
def test_fork_from_a_handler_that_interrupted_the_runtime(runner, tmp_path):
    """The handler forks while the main thread holds the runtime's lock: the fork does not wait
    for that lock (the runtime used to wait for ever), the child, which resumes the interrupted
    update, records nothing and writes no log, and the parent's log counts every lseek."""
    d = os.path.realpath(tmp_path)
    env = _runtime_env(runner, d, logfile=False)
    proc = _under_strace(runner, d, [runner.bin("signal_fork"), d, "0"], env)
    assert proc.returncode == 0, proc.stderr
    with open(os.path.join(d, "child0.dat")) as f:
        assert f.read() == "child data"
    (parent,) = _logs(d)
    log = read_log(parent)
    assert module_names(log, "POSIX") == [os.path.join(d, "main.dat")]
    assert _counters(log, os.path.join(d, "main.dat"))["POSIX_SEEKS"] == int(proc.stdout)
    assert _mmap_logs(d) == []


def test_fork_from_a_handler(runner, tmp_path):
    """20 children forked by a timer's handler while the parent loops on lseek: the parent's
    log counts every lseek; each child forked outside the runtime writes its own log (at _exit)
    with its one file, exactly; one forked inside it writes none; nothing is left behind."""
    d = os.path.realpath(tmp_path)
    env = clean_env(_runtime_env(runner, d, logfile=False))
    proc = subprocess.run(
        [runner.bin("signal_fork"), d, "20"], env=env, capture_output=True, text=True, timeout=120
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    logs = {path: read_log(path) for path in _logs(d)}
    (parent,) = [log for log in logs.values() if "fork_parent" not in log["job"]["metadata"]]
    assert _counters(parent, os.path.join(d, "main.dat"))["POSIX_SEEKS"] == int(proc.stdout)
    children = [log for log in logs.values() if log is not parent]
    assert 0 < len(children) <= 20
    seen = set()
    for child in children:
        (name,) = module_names(child, "POSIX")
        seen.add(name)
        c = _counters(child, name)
        assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (1, 1, 10)
    assert len(seen) == len(children)  # each child its own file, once
    assert _mmap_logs(d) == []


# ---- threads making the descriptor table -----------------------------------------------------


@pytest.mark.parametrize("repeat", range(10))
def test_threads_while_the_descriptor_table_is_made(runner, tmp_path, repeat):
    """16 threads start together; half look the descriptor table up (writes to /dev/null) while
    the others' first opens make it; then each opens, writes and closes its file 500 times, and
    its stream 500 times, so a number (an address) one thread's close frees is at once another's
    open. No crash, and every file's
    counters are exact (a close used to clear the number's entry after the kernel freed it,
    dropping the next owner's writes: about one run in seven)."""
    d = os.path.realpath(tmp_path)
    res = runner.instrumented([runner.bin("threads_open"), d], d).check()
    log = read_log(res.log)
    names = [os.path.join(d, f"t{t}.dat") for t in range(16)]
    assert module_names(log, "POSIX") == sorted(names)
    for name in names:
        c = _counters(log, name)
        assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (500, 500, 50000)
    for t in range(16):
        c = record(log, "STDIO", os.path.join(d, f"t{t}.txt"))["counters"]
        assert (c["STDIO_OPENS"], c["STDIO_WRITES"], c["STDIO_BYTES_WRITTEN"]) == (500, 500, 5000)


# ---- exec -------------------------------------------------------------------------------------


def test_exec_keeps_the_images_io(runner, tmp_path):
    """A program writes 100 bytes, execs itself, and the new image writes 200: each image has
    its log with its own I/O (the first image's used to be lost), and no memory-mapped log is
    left (one used to stay for every exec)."""
    d = os.path.realpath(tmp_path)
    env = clean_env(_runtime_env(runner, d, logfile=False))
    proc = subprocess.run(
        [runner.bin("exec_image"), d, "chain"], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    logs = [read_log(path) for path in _logs(d)]
    assert len(logs) == 2
    written = {module_names(log, "POSIX")[0]: log for log in logs}
    assert sorted(written) == [os.path.join(d, "after.dat"), os.path.join(d, "before.dat")]
    for name, size in (("before.dat", 100), ("after.dat", 200)):
        log = written[os.path.join(d, name)]
        assert module_names(log, "POSIX") == [os.path.join(d, name)]
        c = _counters(log, os.path.join(d, name))
        assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (1, 1, size)
    assert _mmap_logs(d) == []


def test_failed_exec_goes_on_recording(runner, tmp_path):
    """exec of a missing program fails with ENOENT: the image goes on, its memory-mapped log is
    there again (a kill now would keep the first 100 bytes), and it ends with one log of all its
    I/O: 150 bytes in two writes, nothing counted twice."""
    d = os.path.realpath(tmp_path)
    env = clean_env(_runtime_env(runner, d, logfile=False))
    proc = subprocess.Popen(
        [runner.bin("exec_image"), d, "fail"],
        env=env,
        text=True,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
    )
    try:
        assert proc.stdout.readline() == f"errno={errno.ENOENT}\n"
        assert proc.stdout.readline() == "waiting\n"
        (live,) = _mmap_logs(d)
        c = _counters(read_log(os.path.join(d, live)), os.path.join(d, "fail.dat"))
        assert c["POSIX_BYTES_WRITTEN"] in (100, 150)
        assert _logs(d) == []  # the log written before the exec is gone again
        proc.stdin.write("x")
        proc.stdin.close()
        assert proc.wait(timeout=60) == 0
    finally:
        proc.kill()
        proc.wait()
    (only,) = _logs(d)
    c = _counters(read_log(only), os.path.join(d, "fail.dat"))
    assert (c["POSIX_OPENS"], c["POSIX_WRITES"], c["POSIX_BYTES_WRITTEN"]) == (1, 2, 150)
    assert _mmap_logs(d) == []


def test_an_exec_chain_prints_nothing(runner, tmp_path):
    """sh execs env, which execs env, which execs true: no image warns (each used to find the
    memory-mapped log of the one before, same process, same name), the images that recorded
    nothing leave no log, and nothing is left in the memory-mapped folder."""
    d = os.path.realpath(tmp_path)
    cmd = ["sh", "-c", "exec env A=1 env B=2 true"]
    res = runner.instrumented(cmd, d, env_extra={"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": d})
    assert res.returncode == 0 and res.stderr == "" and res.stdout == "", res.describe()
    (log,) = _logs(d)
    assert read_log(log)["exe"].split()[0].endswith("true")
    assert _mmap_logs(d) == []


def test_a_shell_loop_leaves_no_files(runner, tmp_path):
    """bash runs /bin/true 50 times (fork, then exec in the child): 51 logs (bash and each
    true), and no memory-mapped log left (there used to be one per child, 26 MB apparent each)."""
    d = os.path.realpath(tmp_path)
    true = shutil.which("true")
    cmd = ["bash", "-c", f"for ((i = 0; i < 50; i++)); do {true}; done"]
    res = runner.instrumented(cmd, d, env_extra={"DARSHAN_LOGFILE": None, "DARSHAN_LOGPATH": d})
    assert res.returncode == 0 and res.stderr == "", res.describe()
    assert len(_logs(d)) == 51
    assert _mmap_logs(d) == []


# ---- logs with regions over 1 MiB at _exit and exec --------------------------------------------


@pytest.fixture(scope="module", params=["_exit", "exec"])
def large_log(request, runner, tmp_path_factory):
    """many_files making MANY_FILES_OVER_2MIB files, ended by _exit or by an exec of true (which
    records nothing; its log is empty): (folder, the log many_files' image wrote)."""
    d = real_tmp(tmp_path_factory, f"large{request.param}")
    cmd = [runner.bin("many_files"), d, str(MANY_FILES_OVER_2MIB), request.param]
    proc = subprocess.run(
        [*cmd, shutil.which("true")],
        env=clean_env(_runtime_env(runner, d, logfile=False)),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0 and proc.stderr == "", proc.stderr
    assert _mmap_logs(d) == []
    (log,) = [path for path in _logs(d) if "_many_files_id" in os.path.basename(path)]
    return d, log


def test_pydarshan_reads_a_large_log_of_exit_or_exec_whole(large_log):
    """A POSIX region of 2.2 MiB: every file's record, named (Darshan 3.5.0's reader used to
    read the first MiB of the log's uncompressed region and then lose its place)."""
    d, log = large_log
    check_many_files(pydarshan_records(log, "POSIX", MANY_FILES_COUNTERS), d, MANY_FILES_OVER_2MIB)


def test_darshan_parser_reads_a_large_log_of_exit_or_exec_whole(large_log):
    d, log = large_log
    check_many_files(
        darshan_parser_records(log, "POSIX", MANY_FILES_COUNTERS), d, MANY_FILES_OVER_2MIB
    )
