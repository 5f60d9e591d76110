#!/usr/bin/env python3
"""The interference test's load (test_cluster_gluster_interference.py): a batch job's readers,
each of a file of its own on a GlusterFS volume, until the job is cancelled.

Arguments: the folder (on the volume), glusterplace (which names each reader's file onto its
brick, as it does adaptive_check's competing writer), then KIND:BRICK=N for N readers whose
files are on BRICK (a brick's path as pathinfo names it). KIND is r: a reader of 128 MiB with
O_DIRECT, so that each read crosses the link to the brick rather than hitting this client's
cache, optionally followed by a pause in seconds after each MiB (r0.02: at most 50 MiB/s).
Prints "loading" once every reader has started.

Each reader opens its file once and loops in this interpreter: a dd started afresh for each MiB
costs a process and a lookup, open and release on the volume each time, and on this machine
those took the CPUs and the brick's server from the probe's fast writers while taking little of
the link. Standard library only: it runs on the node's interpreter."""

import mmap
import os
import subprocess
import sys
import time

MIB = 1 << 20
READ_SIZE = 128 * MIB


def files_on(placer: str, brick: str, count: int) -> list[str]:
    """count files on brick, named r<k> or, where the volume would put that name elsewhere,
    r<k>.<n> (glusterplace prints the name it made)."""
    place = [[placer, f"r{k}", brick] for k in range(count)]
    return [
        subprocess.run(p, check=True, capture_output=True, text=True).stdout.strip() for p in place
    ]


def prepare(name: str) -> None:
    """A reader's file, written once and kept for later loads."""
    if os.stat(name).st_size != READ_SIZE:
        fd = os.open(name, os.O_WRONLY | os.O_TRUNC)
        for offset in range(0, READ_SIZE, MIB):
            os.pwrite(fd, bytes(MIB), offset)
        os.fsync(fd)
        os.close(fd)


def read(name: str, pause: float) -> None:
    # O_DIRECT needs an aligned buffer: an anonymous map is page-aligned.
    buf = mmap.mmap(-1, MIB)
    fd = os.open(name, os.O_RDONLY | os.O_DIRECT)
    while True:
        offset = 0
        while os.preadv(fd, [buf], offset) > 0:
            offset += MIB
            time.sleep(pause)


def start(placer: str, spec: str) -> None:
    """Forks the readers of one KIND:BRICK=N."""
    kind, rest = spec.split(":", 1)
    brick, count = rest.rsplit("=", 1)
    if kind[0] != "r":
        raise ValueError(f"{spec}: KIND {kind!r} is not r followed by a pause in seconds")
    pause = float(kind[1:] or 0)
    for name in files_on(placer, brick, int(count)):
        prepare(name)
        if os.fork() == 0:
            read(name, pause)


def main(folder: str, placer: str, specs: list[str]) -> None:
    os.chdir(folder)
    for spec in specs:
        start(placer, spec)
    print("loading", flush=True)
    while True:
        os.wait()


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
