"""What the runtime costs an application, beside Darshan 3.5.0: `make bench-runtime`.

1. Instructions added per intercepted call (64-byte pwrite, pread, read, write, fwrite, fread;
   lseek, fstat, open+close, stat), counted by valgrind's callgrind, which counts instructions
   repeatably: ((I(lib, N) - I(lib, 0)) - (I(none, N) - I(none, 0))) / N; the fixed instructions
   per process (a run with no calls, against the same run without a runtime); what a DXT trace
   (DXT_ENABLE_IO_TRACE) adds to a pwrite and a pread; and a workload of N create+stat+unlink
   iterations on distinct names: instructions per iteration the same way, and wall-time
   overhead (see 4). iostudy and, given its library (--darshan, or DARSHAN_LIB= for make),
   Darshan 3.5.0 are measured side by side in the same run; each instrumented run must leave a
   log, else the bench stops (an unfair measurement).
2. Instructions added per 64-byte MPI_File_write_at (one process, MPI_COMM_SELF), per MPI
   flavour built, the same way; it includes the POSIX write beneath, which is recorded too.
   Compared with the instructions the MPI library itself spends on the call.
3. The memory-mapped logs (the default) against IOSTUDY_MMAP_LOGS=0: instructions per 64-byte
   pwrite and fwrite, and the fixed instructions per process.
4. Wall-time overheads. Every wall time is measured in rounds that alternate the runs (each round
   starts one further on) and reported as the mean of each round's difference to its run
   without a runtime, over the mean without, with the 95 % confidence interval of that mean.
   Both runtimes are told to record every path (DARSHAN_EXCLUDE_DIRS; both exclude /dev/ by
   default), and each instrumented workload run must leave POSIX records.
   - The create+stat+unlink workload in a folder of /dev/shm (tmpfs), where the file system's
     time is the shortest and so the runtime's share the largest: iostudy's overhead against
     Darshan's in the same rounds (their paired difference, with its interval).
   - The same workload on ext4 on a loop device (made, mounted and removed by the bench, as
     root; the test cluster's storage targets are such file systems): iostudy's overhead
     against a target.
   - The same workload (GLUSTER_ITERATIONS) on the GlusterFS volume of the test cluster whose env
     file IOSTUDY_CLUSTER_ENV names, through a node's FUSE client (gluster_node).
   - 4 processes each writing 256 MiB in 1 MiB writes, in the tmpfs folder.

Standard library only, so it runs with any Python 3.
"""

import argparse
import contextlib
import functools
import math
import os
import re
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import time

import gluster_node

# (row, the call under iostudy, under Darshan, target in instructions per call or None).
# Darshan 3.5.0 wraps only glibc's __xstat/__fxstat, which glibc >= 2.33 no longer calls:
# stat() and fstat() bypass it, so its stat and fstat are measured through those entries.
CALLS = (
    ("pwrite", "pwrite", "pwrite", 150),
    ("pread", "pread", "pread", 150),
    ("read", "read", "read", 150),
    ("write", "write", "write", 150),
    ("fwrite", "fwrite", "fwrite", 120),
    ("fread", "fread", "fread", 120),
    ("lseek", "lseek", "lseek", None),
    ("fstat", "fstat", "fxstat", None),
    ("open+close", "open", "open", 350),
    ("stat", "stat", "xstat", 200),
)
FIXED_TARGET = 150_000
# A traced read or write (DXT_ENABLE_IO_TRACE) may add this many instructions to an untraced one.
TRACED_EXTRA_TARGET = 60
TRACED_CALLS = ("pwrite", "pread")
# The workload on a disk file system: ext4 on a loop device, as the test cluster's targets are.
DISK_WALL_TARGET_PCT = 5.0
DISK_IMAGE_MIB = 256
# An iteration takes 1.5-1.9 ms through the volume's FUSE client, 60-80 times one on ext4.
GLUSTER_ITERATIONS = 1000
# Darshan keeps at most 1,024 records per module by default; iostudy keeps what DARSHAN_MODMEM
# holds (5,953 of the workload's files with 4 MiB). The workload's wall time is also measured
# with iostudy's memory cut to 1,024 POSIX records' worth: the cost of the records kept, apart
# from the rest.
DARSHANS_COUNT = "iostudy, 1,024 records' memory"
POSIX_RECORD_BYTES = 16 + 69 * 8 + 17 * 8  # id and rank, counters, fcounters (Darshan 3.5)
DARSHANS_RECORDS_MIB = 1024 * POSIX_RECORD_BYTES / 1048576
WALL_TARGET_PCT = 1.0
NOT_MEASURED = "not measured"
SHM = "/dev/shm"
# Timed runs record every path but these, so that a workload in SHM is recorded by both runtimes.
RECORD_ALL_BUT = "/proc/,/sys/"
Z95 = statistics.NormalDist().inv_cdf(0.975)  # the runs are many: the normal approximation holds
POSIX_MODULE = 1
HEADER_MOD_MAP = 48  # Darshan 3.41 header: mod_map[i] {off, len} (u64) at 48 + 16 i
UNDECIDED = "undecided"
VERDICTS = {True: "ok", False: "MISSED", UNDECIDED: "undecided: the 95 % interval spans it"}
ROW = "  {:22} {:>10} {:>14} {:>6} {:>10} {}"


def environment(lib, mmap=True, trace=False):
    """The environment of a run with lib preloaded (None: no runtime); iostudy's
    memory-mapped logs where they go by default, unless mmap is false; DXT traces with trace."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LD_PRELOAD", "DARSHAN", "IOSTUDY_MMAP", "DXT_"))
    }
    if lib:
        env.update(LD_PRELOAD=lib, DARSHAN_ENABLE_NONMPI="1")
    if not mmap:
        env["IOSTUDY_MMAP_LOGS"] = "0"
    if trace:
        env["DXT_ENABLE_IO_TRACE"] = "1"
    return env


@contextlib.contextmanager
def logging_to(env):
    """(env writing its logs to logs, logs): logs a new folder with today's Y/M/D folders made (a
    Darshan whose log path is date-formatted writes only into existing ones); the memory-mapped
    logs of both runtimes in a new folder of SHM (iostudy's default, Darshan's is /tmp), so that
    they pay the same for them. Both folders are removed afterwards, with what execs left there."""
    shm = SHM if os.access(SHM, os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(prefix="iostudy-bench-logs-") as logs,
        tempfile.TemporaryDirectory(prefix="iostudy-bench-mmap-", dir=shm) as mmap_logs,
    ):
        now = time.localtime()
        os.makedirs(os.path.join(logs, str(now.tm_year), str(now.tm_mon), str(now.tm_mday)))
        yield dict(env, DARSHAN_LOGPATH=logs, DARSHAN_MMAP_LOGPATH=mmap_logs), logs


def logs_left(logs):
    """The paths of the complete logs a run left in logs (its dated subfolders)."""
    return [
        os.path.join(d, n) for d, _, files in os.walk(logs) for n in files if n.endswith(".darshan")
    ]


def check_log(logs, cmd, env, processes=1):
    """Stop the bench unless the run of cmd under env (processes of it) left that many complete
    logs in logs."""
    written = len(logs_left(logs))
    if written < processes:
        sys.exit(f"bench: {env['LD_PRELOAD']} wrote no log for {' '.join(cmd)}: not a fair run")


def instructions(cmd, env):
    """Total instructions callgrind counts for one run of cmd (whose log, if a runtime is
    preloaded, must be written)."""
    with tempfile.TemporaryDirectory() as d, logging_to(env) as (run_env, logs):
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/callgrind.out", *cmd],
            env=run_env,
            capture_output=True,
            text=True,
        )
        found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
        if out.returncode != 0 or not found:
            sys.exit(f"bench: callgrind run failed ({' '.join(cmd)}):\n{out.stderr[-2000:]}")
        if "LD_PRELOAD" in env:
            check_log(logs, cmd, env)
    return int(found.group(1).replace(",", ""))


@functools.cache
def count(build, lib, op, n, workdir, mmap=True, trace=False):
    """Instructions of `bench_calls op n` under lib (None: no runtime); each run once."""
    cmd = [os.path.join(build, "bench_calls"), op, str(n), workdir]
    return instructions(cmd, environment(lib, mmap, trace))


def per_call(build, lib, op, calls, workdir, mmap=True, trace=False):
    """Instructions lib adds to one call of op."""
    runs = (count(build, lib, op, n, workdir, mmap, trace) for n in (calls, 0))
    added = next(runs) - next(runs)
    own = count(build, None, op, calls, workdir) - count(build, None, op, 0, workdir)
    return (added - own) / calls


def fixed_cost(build, lib, workdir, mmap=True):
    """Instructions lib adds to a process that makes no call (start and shutdown)."""
    return count(build, lib, "none", 0, workdir, mmap) - count(build, None, "none", 0, workdir)


def per_mpiio_call(build, lib, flavour, calls, workdir):
    """(instructions the runtime adds to one MPI_File_write_at, the call's own)."""
    prog = os.path.join(build, f"bench_mpiio-{flavour}")
    root = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    envs = (dict(environment(None), **root), dict(environment(lib), **root))
    # An MPI program: the runtime starts at MPI_Init, not by DARSHAN_ENABLE_NONMPI.
    envs[1].pop("DARSHAN_ENABLE_NONMPI")
    plain, ours = ([instructions([prog, str(n), workdir], env) for n in (0, calls)] for env in envs)
    own = plain[1] - plain[0]
    return ((ours[1] - ours[0]) - own) / calls, own / calls


def alternate(labels, runs, measure):
    """{label: [measure(label) of each run]}: one untimed warm-up round first (file system and
    page cache settle), then runs rounds, each starting one label further on."""
    results = {label: [] for label in labels}
    for run in range(-1, runs):
        shift = run % len(labels)
        for label in labels[shift:] + labels[:shift]:
            value = measure(label)
            if run >= 0:
                results[label].append(value)
    return results


def posix_region_bytes(logs):
    """The compressed bytes of the POSIX regions of the logs in logs (their headers' mod_map)."""
    total = 0
    for path in logs_left(logs):
        with open(path, "rb") as log:
            header = log.read(HEADER_MOD_MAP + 16 * (POSIX_MODULE + 1))
        total += struct.unpack_from("<QQ", header, HEADER_MOD_MAP + 16 * POSIX_MODULE)[1]
    return total


def started(cmd, env, enter=()):
    """cmd started under env; after enter (a command prefix: nsenter) when given, with the
    runtime preloaded by env(1) into cmd only, not into enter's command."""
    if enter:
        preload = [f"LD_PRELOAD={env['LD_PRELOAD']}"] if "LD_PRELOAD" in env else []
        cmd = [*enter, "env", *preload, *cmd]
        env = {k: v for k, v in env.items() if k != "LD_PRELOAD"}
    return subprocess.Popen(cmd, env=env)


def timed(cmds, env, records=False, enter=()):
    """(wall seconds, CPU seconds of the children) of cmds run concurrently under env (whose
    logs, if a runtime is preloaded, are checked: with records, for POSIX records too), after
    the command prefix enter."""
    with logging_to(env) as (run_env, logs):
        subprocess.run(["sync"], check=True)  # keep earlier runs' writeback out of this one
        start = time.perf_counter()
        children = [started(cmd, run_env, enter) for cmd in cmds]
        used = 0.0
        for child in children:
            _, status, usage = os.wait4(child.pid, 0)
            if os.waitstatus_to_exitcode(status) != 0:
                sys.exit(f"bench: {' '.join(child.args)} failed")
            used += usage.ru_utime + usage.ru_stime
        elapsed = time.perf_counter() - start
        if "LD_PRELOAD" in env:
            check_log(logs, cmds[0], env, len(cmds))
            if records and posix_region_bytes(logs) == 0:
                cmd = " ".join(cmds[0])
                sys.exit(f"bench: {env['LD_PRELOAD']} recorded no file of {cmd}: not fair")
    return elapsed, used


def timed_environment(lib):
    """The environment of a timed run: lib preloaded (None: no runtime), every path recorded."""
    return dict(environment(lib), DARSHAN_EXCLUDE_DIRS=RECORD_ALL_BUT)


def paired_difference(times, others, base):
    """(difference %, half-width % of its 95 % confidence interval) of times against the same
    rounds' others: the mean of the rounds' differences over the mean of base. A round's runs
    share the machine's state of the moment, so their difference strays far less than either
    time."""
    differences = [t - o for t, o in zip(times, others, strict=True)]
    mean_base = statistics.fmean(base)
    half_width = Z95 * statistics.stdev(differences) / math.sqrt(len(differences))
    return statistics.fmean(differences) / mean_base * 100, half_width / mean_base * 100


def paired_overhead(with_lib, without):
    """paired_difference of runs with a runtime against the same rounds' runs without."""
    return paired_difference(with_lib, without, without)


def shown_overhead(with_lib, without):
    """'+x.x % ± y.y' of paired_overhead."""
    overhead, half_width = paired_overhead(with_lib, without)
    return f"{overhead:+.1f} % ± {half_width:.1f}"


def wall_time(build, lib, procs, mib, runs, workdir):
    """{label: [(wall, CPU seconds) of each round]} of procs concurrent writers, without ('none')
    and with ('lib') the runtime. CPU time (user + system of the writers) is kept beside wall time:
    it strays less on a shared 2-core machine."""
    prog = os.path.join(build, "bench_write")
    files = [os.path.join(workdir, f"w{i}.dat") for i in range(procs)]
    envs = {"none": timed_environment(None), "lib": timed_environment(lib)}

    def measure(label):
        result = timed([[prog, f, str(mib)] for f in files], envs[label])
        for f in files:
            os.unlink(f)
        return result

    return alternate(["none", "lib"], runs, measure)


def workload_wall(build, envs, iterations, runs, workdir, enter=()):
    """{label: [wall seconds of `bench_calls create iterations`, one per round]} for each of
    envs ({label: environment}), runs alternating, after the command prefix enter; each
    instrumented run must record files."""
    cmd = [os.path.abspath(os.path.join(build, "bench_calls")), "create", str(iterations), workdir]
    return alternate(list(envs), runs, lambda label: timed([cmd], envs[label], True, enter)[0])


def cell(value, fmt):
    """value formatted by fmt, or NOT_MEASURED for None."""
    return NOT_MEASURED if value is None else format(value, fmt)


def verdict(value, limit, half_width=None):
    """Whether value meets limit (None: no limit): True or False; for a measured mean with the
    half_width of its 95 % interval, UNDECIDED while the interval spans the limit."""
    if limit is None:
        return None
    if half_width is None:
        return value <= limit
    if value + half_width <= limit:
        return True
    return False if value - half_width > limit else UNDECIDED


def row(name, ours, darshan, target, fmt=".0f", half_width=None):
    """Print one table row; whether it meets target: a number, 'darshan' (<= Darshan's figure)
    or None (no target). Returns verdict(), None also when Darshan is not measured."""
    limit = darshan if target == "darshan" else target
    met = verdict(ours, limit, half_width)
    shown_verdict = VERDICTS.get(met, "unchecked" if target else "")
    ratio = "" if darshan is None or darshan == 0 else f"{ours / darshan:.2f}"
    shown = "-" if target is None else "<= Darshan" if target == "darshan" else f"<= {target:{fmt}}"
    print(
        ROW.format(name, cell(ours, fmt), cell(darshan, fmt), ratio, shown, shown_verdict).rstrip()
    )
    return met


def call_rows(args, ours, theirs, workdir):
    """Print the rows of the calls, the fixed cost and the workload's instructions; their
    verdicts."""
    n = args.calls
    verdicts = []
    for name, op, darshan_op, target in CALLS:
        mine = per_call(args.build, ours, op, n, workdir)
        other = theirs and per_call(args.build, theirs, darshan_op, n, workdir)
        verdicts.append(row(name, mine, other, target))
    mine, other = (lib and fixed_cost(args.build, lib, workdir) for lib in (ours, theirs))
    verdicts.append(row("fixed per process", mine, other, FIXED_TARGET, ",.0f"))
    mine, other = (
        lib and per_call(args.build, lib, "create", n, workdir) for lib in (ours, theirs)
    )
    verdicts.append(row("create+stat+unlink/iter", mine, other, "darshan"))
    return verdicts + traced_rows(args, ours, theirs, workdir)


def traced_rows(args, ours, theirs, workdir):
    """Print what tracing (DXT_ENABLE_IO_TRACE) adds to a read or write; their verdicts."""
    verdicts = []
    for op in TRACED_CALLS:
        mine, other = (
            lib
            and per_call(args.build, lib, op, args.calls, workdir, trace=True)
            - per_call(args.build, lib, op, args.calls, workdir)
            for lib in (ours, theirs)
        )
        verdicts.append(row(f"{op}, traced: added", mine, other, TRACED_EXTRA_TARGET))
    return verdicts


def workload_envs(ours, theirs, records_kept=False):
    """{label: environment} of the workload's timed runs: without a runtime, iostudy, with
    records_kept iostudy with 1,024 records' memory, and Darshan when given."""
    envs = {"none": timed_environment(None), "iostudy": timed_environment(ours)}
    if records_kept:
        envs[DARSHANS_COUNT] = dict(envs["iostudy"], DARSHAN_MODMEM=str(DARSHANS_RECORDS_MIB))
    if theirs:
        envs["darshan"] = timed_environment(theirs)
    return envs


def print_workload_runs(args, runs, workdir, iterations=None):
    """Print where the workload ran, its time without a runtime and every overhead."""
    print(
        f"  (wall: {args.runs} alternating rounds of {iterations or args.calls} iterations in "
        f"{workdir}; "
        f"without a runtime {statistics.fmean(runs['none']):.3f} s on average)"
    )
    shown = ", ".join(f"{k} {shown_overhead(runs[k], runs['none'])}" for k in runs if k != "none")
    print(f"  (overhead with its 95 % interval: {shown})")


def tmpfs_workload_row(args, ours, theirs, workdir):
    """Print the workload's wall-time row on tmpfs, where the runtime's share is the largest:
    met when the 95 % interval of the rounds' paired difference, iostudy's time minus Darshan's,
    does not lie above 0 (iostudy at or below Darshan). Its verdict (None without Darshan)."""
    runs = workload_wall(
        args.build, workload_envs(ours, theirs, True), args.calls, args.runs, workdir
    )
    mine = paired_overhead(runs["iostudy"], runs["none"])[0]
    if not theirs:
        row("create+stat+unlink wall% tmpfs", mine, None, "darshan", "+.1f")
        print_workload_runs(args, runs, workdir)
        return None
    other = paired_overhead(runs["darshan"], runs["none"])[0]
    gap, half_width = paired_difference(runs["iostudy"], runs["darshan"], runs["none"])
    met = gap - half_width <= 0
    where = "below" if gap + half_width < 0 else "at" if met else "above"
    cells = (cell(mine, "+.1f"), cell(other, "+.1f"), "", "<= Darshan", VERDICTS[met])
    print(ROW.format("create+stat+unlink wall% tmpfs", *cells).rstrip())
    print_workload_runs(args, runs, workdir)
    print(f"  (iostudy minus Darshan, paired: {gap:+.1f} % ± {half_width:.1f}: {where} Darshan's)")
    print(
        f"  (iostudy keeps the records that fit in 4 MiB; {DARSHANS_COUNT}: "
        f"DARSHAN_MODMEM={DARSHANS_RECORDS_MIB})"
    )
    return met


@contextlib.contextmanager
def ext4_folder(build):
    """(folder, None): a folder on a new ext4 file system on a loop device, its image in build;
    (None, why not) where one cannot be made. All of it is removed afterwards."""
    missing = [t for t in ("mkfs.ext4", "losetup", "mount", "umount") if not shutil.which(t)]
    if os.geteuid() != 0 or missing:
        yield None, "needs root" if not missing else f"{', '.join(missing)} missing"
        return
    with tempfile.TemporaryDirectory(prefix="iostudy-bench-ext4-", dir=build) as scratch:
        image, mountpoint = os.path.join(scratch, "ext4.img"), os.path.join(scratch, "mnt")
        os.mkdir(mountpoint)
        with open(image, "wb") as f:
            f.truncate(DISK_IMAGE_MIB << 20)
        made = subprocess.run(["mkfs.ext4", "-q", "-F", "-E", "nodiscard", image])
        attach = subprocess.run(
            ["losetup", "--find", "--show", image], capture_output=True, text=True
        )
        device = attach.stdout.strip()
        if made.returncode or attach.returncode:
            yield None, f"mkfs.ext4 or losetup failed: {attach.stderr.strip()}"
            return
        try:
            if subprocess.run(["mount", device, mountpoint]).returncode:
                yield None, f"mount {device} failed"
                return
            try:
                yield mountpoint, None
            finally:
                subprocess.run(["umount", mountpoint], check=True)
        finally:
            subprocess.run(["losetup", "-d", device], check=True)


def disk_workload_row(args, ours, theirs):
    """Print the workload's wall-time row on ext4 on a loop device; its verdict."""
    with ext4_folder(args.build) as (workdir, why_not):
        if workdir is None:
            print(f"  create+stat+unlink wall% ext4: {NOT_MEASURED} ({why_not})")
            return None
        runs = workload_wall(
            args.build, workload_envs(ours, theirs), args.calls, args.runs, workdir
        )
    mine, half_width = paired_overhead(runs["iostudy"], runs["none"])
    other = paired_overhead(runs["darshan"], runs["none"])[0] if theirs else None
    met = row(
        "create+stat+unlink wall% ext4", mine, other, DISK_WALL_TARGET_PCT, "+.1f", half_width
    )
    print_workload_runs(args, runs, "ext4 on a loop device")
    return met


def gluster_workload_row(args, ours, theirs):
    """Print the workload's wall-time row on the test cluster's GlusterFS volume; its verdict."""
    env_file = os.environ.get("IOSTUDY_CLUSTER_ENV")
    with gluster_node.volume_folder(env_file) as (workdir, enter, node):
        if workdir is None:
            print(f"  create+stat+unlink wall% glusterfs: {NOT_MEASURED} ({node})")
            return None
        envs = workload_envs(os.path.abspath(ours), theirs)  # the node's cwd is not ours
        runs = workload_wall(args.build, envs, GLUSTER_ITERATIONS, args.runs, workdir, enter)
    mine, half_width = paired_overhead(runs["iostudy"], runs["none"])
    other = paired_overhead(runs["darshan"], runs["none"])[0] if theirs else None
    name = "create+stat+unlink wall% glusterfs"
    met = row(name, mine, other, DISK_WALL_TARGET_PCT, "+.1f", half_width)
    print_workload_runs(args, runs, f"GlusterFS through {node}'s client", GLUSTER_ITERATIONS)
    return met


def call_table(args, workdir, timed_dir):
    """Print the iostudy-against-Darshan table; the verdicts of its rows."""
    ours, theirs = os.path.join(args.build, "libiostudy.so"), args.darshan
    print(f"Instructions added per call ({args.calls} calls, callgrind), fixed cost, workload:")
    print(ROW.format("call", "iostudy", "Darshan 3.5.0", "ratio", "target", "").rstrip())
    verdicts = call_rows(args, ours, theirs, workdir)
    if not args.no_wall_time:
        verdicts.append(tmpfs_workload_row(args, ours, theirs, timed_dir))
        verdicts.append(disk_workload_row(args, ours, theirs))
        verdicts.append(gluster_workload_row(args, ours, theirs))
    if not theirs:
        print("  Darshan 3.5.0: not measured (pass DARSHAN_LIB=…/libdarshan.so)")
    print("  Darshan 3.5.0 wraps only __xstat/__fxstat: its stat, fstat measured through them")
    data = os.path.join(workdir, "bench_calls.dat")
    print(f"  paths of {len(data)} characters ({data}), the workload's up to {len(data) + 6}")
    return verdicts


def mpiio_table(args, workdir):
    """Print the MPI-IO per-call cost against the MPI's own, per flavour built."""
    lib = os.path.join(args.build, "libiostudy.so")
    print(f"Instructions added per 64-byte MPI_File_write_at ({args.calls} calls):")
    print(f"  {'MPI':8} {'iostudy':>8} {'MPI itself':>11} {'ratio':>6}")
    for flavour in ("openmpi", "mpich"):
        if not os.path.exists(os.path.join(args.build, f"bench_mpiio-{flavour}")):
            print(f"  {flavour:8} skipped: bench_mpiio-{flavour} not built (no {flavour})")
            continue
        added, own = per_mpiio_call(args.build, lib, flavour, args.calls, workdir)
        print(f"  {flavour:8} {added:8.0f} {own:11.0f} {added / own:6.2f}")


def mmap_table(args, workdir):
    """Print the memory-mapped logs' cost against IOSTUDY_MMAP_LOGS=0."""
    lib = os.path.join(args.build, "libiostudy.so")
    print("Memory-mapped logs (default) against IOSTUDY_MMAP_LOGS=0, instructions:")
    print(f"  {'':18} {'mmap':>9} {'no mmap':>9} {'ratio':>6}")
    for op in ("pwrite", "fwrite"):
        on, off = (per_call(args.build, lib, op, args.calls, workdir, m) for m in (True, False))
        print(f"  {op + ' per call':18} {on:9.0f} {off:9.0f} {on / off:6.2f}")
    on, off = (fixed_cost(args.build, lib, workdir, m) for m in (True, False))
    print(f"  {'per process':18} {on:9d} {off:9d} {on / off:6.2f}")


def wall_table(args, workdir):
    """Print the wall-time overhead of the writers; whether it meets its target."""
    print(
        f"Wall time, {args.procs} processes x {args.mib} MiB in 1 MiB writes, "
        f"{args.runs} alternating rounds in {workdir}:"
    )
    lib = os.path.join(args.build, "libiostudy.so")
    runs = wall_time(args.build, lib, args.procs, args.mib, args.runs, workdir)
    wall, cpu = ({k: [v[i] for v in runs[k]] for k in runs} for i in (0, 1))
    overhead, half_width = paired_overhead(wall["lib"], wall["none"])
    met = verdict(overhead, WALL_TARGET_PCT, half_width)
    for name, times in (("wall", wall), ("cpu ", cpu)):
        print(
            f"  {name}: without {statistics.fmean(times['none']):.3f} s, with "
            f"{statistics.fmean(times['lib']):.3f} s on average, overhead "
            f"{shown_overhead(times['lib'], times['none'])} (95 % interval)"
        )
    print(f"  wall-time target <= {WALL_TARGET_PCT:.0f} %: {VERDICTS[met]}")
    return met


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build/runtime", help="runtime build directory")
    parser.add_argument("--darshan", help="Darshan 3.5.0's libdarshan.so, measured beside")
    parser.add_argument("--calls", type=int, default=20000, help="calls per callgrind run")
    parser.add_argument("--runs", type=int, default=40, help="alternating wall-time rounds (>= 30)")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--mib", type=int, default=256, help="MiB each process writes")
    parser.add_argument(
        "--no-wall-time",
        action="store_true",
        help="count instructions only: skip the timed runs (their rows are left out)",
    )
    args = parser.parse_args()
    if args.runs < 30:
        sys.exit("bench: --runs must be at least 30 (the confidence intervals assume as many)")
    if not shutil.which("valgrind"):
        sys.exit("bench: valgrind is missing (make setup installs it)")
    for binary in ("libiostudy.so", "bench_calls", "bench_write"):
        if not os.path.exists(os.path.join(args.build, binary)):
            sys.exit(f"bench: {args.build}/{binary} is missing; run make setup")
    if args.darshan:
        if not os.path.isfile(args.darshan):
            sys.exit(f"bench: no Darshan library {args.darshan}")
        args.darshan = os.path.abspath(args.darshan)
    return args


def main():
    args = parse_args()
    shm = SHM if os.access(SHM, os.W_OK) else None
    with (
        tempfile.TemporaryDirectory(prefix="iostudy-bench-", dir=args.build) as workdir,
        tempfile.TemporaryDirectory(prefix="iostudy-bench-timed-", dir=shm) as timed_dir,
    ):
        # Absolute, so no call pays for the working directory; the cost of a path grows with
        # its length, printed with the table.
        workdir = os.path.abspath(workdir)
        verdicts = call_table(args, workdir, timed_dir)
        mpiio_table(args, workdir)
        mmap_table(args, workdir)
        if not args.no_wall_time:
            verdicts.append(wall_table(args, timed_dir))
    if False in verdicts:
        print("bench-runtime: some targets missed")
        return 1
    if UNDECIDED in verdicts:
        print("bench-runtime: no target missed; some undecided (more --runs narrow the intervals)")
        return 0
    unchecked = "" if args.darshan else " (create+stat+unlink against Darshan unchecked)"
    print(f"bench-runtime: all targets met{unchecked}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
