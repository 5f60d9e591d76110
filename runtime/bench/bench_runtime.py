"""What the runtime costs an application: `make bench-runtime`.

1. Instructions added per intercepted call (64-byte pwrite, pread, fwrite), counted by valgrind's
   callgrind, which counts instructions repeatably:
   ((I(lib, N) - I(lib, 0)) - (I(none, N) - I(none, 0))) / N. Compared with Darshan 3.5.0
   measured on these machines and with iostudy's targets.
2. Instructions added per 64-byte MPI_File_write_at (one process, MPI_COMM_SELF), per MPI
   flavour built, the same way; it includes the POSIX write beneath, which is recorded too.
   Compared with the instructions the MPI library itself spends on the call.
3. The memory-mapped logs (the default) against IOSTUDY_MMAP_LOGS=0: instructions per 64-byte
   pwrite and fwrite, and the fixed instructions per process (a run with no calls).
4. Wall-time overhead of 4 processes each writing 256 MiB in 1 MiB writes: median of alternating
   runs with and without the runtime.

Standard library only, so it runs with any Python 3.
"""

import argparse
import os
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time

DARSHAN_3_5_0 = {"pwrite": 1140, "pread": 1140, "fwrite": 557}
TARGET = {"pwrite": 300, "pread": 300, "fwrite": 200}
WALL_TARGET_PCT = 1.0


def instructions(cmd, env):
    """Total instructions callgrind counts for one run of cmd."""
    with tempfile.TemporaryDirectory() as d:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={d}/callgrind.out", *cmd],
            env=env,
            capture_output=True,
            text=True,
        )
    found = re.search(r"I\s+refs:\s+([\d,]+)", out.stderr)
    if out.returncode != 0 or not found:
        sys.exit(f"bench: callgrind run failed ({' '.join(cmd)}):\n{out.stderr[-2000:]}")
    return int(found.group(1).replace(",", ""))


def environments(build, logs, mmap=True):
    """The environment without the runtime, and with it writing logs to logs (its memory-mapped
    logs where they go by default, unless mmap is false)."""
    plain = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("LD_PRELOAD", "DARSHAN", "IOSTUDY_MMAP"))
    }
    os.makedirs(logs, exist_ok=True)
    instrumented = dict(
        plain,
        LD_PRELOAD=os.path.join(build, "libiostudy.so"),
        DARSHAN_ENABLE_NONMPI="1",
        DARSHAN_LOGPATH=logs,
    )
    if not mmap:
        instrumented["IOSTUDY_MMAP_LOGS"] = "0"
    return plain, instrumented


def added_per_call(cmd, calls, envs):
    """(instructions the runtime adds per call, instructions of the call itself) for cmd(n),
    the argument list of a program making n calls, from runs with 0 and with calls calls."""
    counts = {}
    for label, env in zip(("none", "lib"), envs, strict=True):
        for n in (0, calls):
            counts[label, n] = instructions(cmd(n), env)
    own = counts["none", calls] - counts["none", 0]
    return ((counts["lib", calls] - counts["lib", 0]) - own) / calls, own / calls


def per_call(build, op, calls, workdir, mmap=True):
    """Instructions the runtime adds to one call of op."""
    prog = os.path.join(build, "bench_calls")
    envs = environments(build, os.path.join(workdir, "logs"), mmap)
    return added_per_call(lambda n: [prog, op, str(n), workdir], calls, envs)[0]


def fixed_cost(build, workdir, mmap):
    """Instructions the runtime adds to a process that makes no call (start and shutdown)."""
    prog = os.path.join(build, "bench_calls")
    plain, instrumented = environments(build, os.path.join(workdir, "logs"), mmap)
    cmd = [prog, "pwrite", "0", workdir]
    return instructions(cmd, instrumented) - instructions(cmd, plain)


def per_mpiio_call(build, flavour, calls, workdir):
    """Instructions the runtime adds to one MPI_File_write_at, and the call's own."""
    prog = os.path.join(build, f"bench_mpiio-{flavour}")
    plain, instrumented = environments(build, os.path.join(workdir, "mpilogs"))
    # An MPI program: the runtime starts at MPI_Init, not by DARSHAN_ENABLE_NONMPI.
    instrumented.pop("DARSHAN_ENABLE_NONMPI")
    root = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1"}
    envs = (dict(plain, **root), dict(instrumented, **root))
    return added_per_call(lambda n: [prog, str(n), workdir], calls, envs)


def wall_time(build, procs, mib, runs, workdir):
    """Median wall and CPU seconds of procs concurrent writers, without and with the runtime.

    One untimed warm-up pair first (file system and page cache settle); then runs alternate
    which variant goes first. CPU time (user + system of the writers) is reported beside wall
    time because it is far less noisy on a shared 2-core machine.
    """
    prog = os.path.join(build, "bench_write")
    plain, instrumented = environments(build, os.path.join(workdir, "walllogs"))
    wall = {"none": [], "lib": []}
    cpu = {"none": [], "lib": []}
    for run in range(-1, runs):
        order = ("none", "lib") if run % 2 == 0 else ("lib", "none")
        for label in order:
            env = instrumented if label == "lib" else plain
            subprocess.run(["sync"], check=True)  # keep earlier runs' writeback out of this one
            start = time.perf_counter()
            children = [
                subprocess.Popen([prog, os.path.join(workdir, f"w{i}.dat"), str(mib)], env=env)
                for i in range(procs)
            ]
            used = 0.0
            for child in children:
                _, status, usage = os.wait4(child.pid, 0)
                if os.waitstatus_to_exitcode(status) != 0:
                    sys.exit("bench: a writer failed")
                used += usage.ru_utime + usage.ru_stime
            elapsed = time.perf_counter() - start
            for i in range(procs):
                os.unlink(os.path.join(workdir, f"w{i}.dat"))
            if run >= 0:
                wall[label].append(elapsed)
                cpu[label].append(used)
        if run >= 0:
            print(
                f"  run {run + 1}/{runs}: without {wall['none'][-1]:.3f} s "
                f"(cpu {cpu['none'][-1]:.3f} s), with {wall['lib'][-1]:.3f} s "
                f"(cpu {cpu['lib'][-1]:.3f} s)",
                flush=True,
            )
    median = statistics.median
    return (median(wall["none"]), median(wall["lib"])), (median(cpu["none"]), median(cpu["lib"]))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--build", default="build/runtime", help="runtime build directory")
    parser.add_argument("--calls", type=int, default=20000, help="calls per callgrind run")
    parser.add_argument("--runs", type=int, default=9, help="alternating wall-time runs (>= 5)")
    parser.add_argument("--procs", type=int, default=4)
    parser.add_argument("--mib", type=int, default=256, help="MiB each process writes")
    args = parser.parse_args()
    if not shutil.which("valgrind"):
        sys.exit("bench: valgrind is missing (make setup installs it)")
    for binary in ("libiostudy.so", "bench_calls", "bench_write"):
        if not os.path.exists(os.path.join(args.build, binary)):
            sys.exit(f"bench: {args.build}/{binary} is missing; run make setup")

    with tempfile.TemporaryDirectory(prefix="iostudy-bench-", dir=args.build) as workdir:
        print(f"Instructions added per 64-byte call ({args.calls} calls, callgrind):")
        print(f"  {'call':8} {'iostudy':>8} {'Darshan 3.5.0':>14} {'ratio':>6} {'target':>7}")
        ok = True
        for op in ("pwrite", "pread", "fwrite"):
            added = per_call(args.build, op, args.calls, workdir)
            ratio = added / DARSHAN_3_5_0[op]
            ok &= added <= TARGET[op]
            verdict = "ok" if added <= TARGET[op] else "MISSED"
            print(
                f"  {op:8} {added:8.0f} {DARSHAN_3_5_0[op]:14d} {ratio:6.2f} "
                f"{'<= ' + str(TARGET[op]):>7} {verdict}"
            )
        print(f"Instructions added per 64-byte MPI_File_write_at ({args.calls} calls):")
        print(f"  {'MPI':8} {'iostudy':>8} {'MPI itself':>11} {'ratio':>6}")
        for flavour in ("openmpi", "mpich"):
            if not os.path.exists(os.path.join(args.build, f"bench_mpiio-{flavour}")):
                print(f"  {flavour:8} skipped: bench_mpiio-{flavour} not built (no {flavour})")
                continue
            added, own = per_mpiio_call(args.build, flavour, args.calls, workdir)
            print(f"  {flavour:8} {added:8.0f} {own:11.0f} {added / own:6.2f}")
        print("Memory-mapped logs (default) against IOSTUDY_MMAP_LOGS=0, instructions:")
        print(f"  {'':18} {'mmap':>9} {'no mmap':>9} {'ratio':>6}")
        for op in ("pwrite", "fwrite"):
            on, off = (per_call(args.build, op, args.calls, workdir, m) for m in (True, False))
            print(f"  {op + ' per call':18} {on:9.0f} {off:9.0f} {on / off:6.2f}")
        on, off = (fixed_cost(args.build, workdir, m) for m in (True, False))
        print(f"  {'per process':18} {on:9d} {off:9d} {on / off:6.2f}")
        print(
            f"Wall time, {args.procs} processes x {args.mib} MiB in 1 MiB writes, "
            f"median of {args.runs} alternating runs:"
        )
        (without, with_lib), (cpu_without, cpu_with) = wall_time(
            args.build, args.procs, args.mib, args.runs, workdir
        )
        overhead = (with_lib - without) / without * 100
        cpu_overhead = (cpu_with - cpu_without) / cpu_without * 100
        ok &= overhead <= WALL_TARGET_PCT
        verdict = "ok" if overhead <= WALL_TARGET_PCT else "MISSED"
        print(
            f"  wall: without {without:.3f} s, with {with_lib:.3f} s, overhead {overhead:+.2f} % "
            f"(target <= {WALL_TARGET_PCT:.0f} %) {verdict}"
        )
        print(
            f"  cpu:  without {cpu_without:.3f} s, with {cpu_with:.3f} s, "
            f"overhead {cpu_overhead:+.2f} %"
        )
    print("bench-runtime: " + ("all targets met" if ok else "some targets missed"))
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
