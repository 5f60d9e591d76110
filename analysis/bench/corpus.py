"""A facility-scale corpus of Darshan logs for `make bench-analysis`.

``python analysis/bench/corpus.py --out DIR [--logs N]`` writes N logs (default 10,000) into a
tree laid out as a facility's Darshan log root is: ``DIR/<Y>/<M>/<D>/<user>_<exe>_id<jobid>-
<pid>_<M>-<D>-<secs>-<random>_1.darshan`` (month and day not zero padded, as Darshan names them).
Every log has its own job id. They are copies of

- every real log in ``../shared/testdata/darshan-logs`` (formats 3.00 to 3.41, little and
  big endian), without their DXT traces (:func:`without_dxt`; ``--dxt`` keeps them: ingest's
  speed target holds for logs without DXT, its memory with DXT is bench_ingest's trace step),
  and
- logs our runtime writes (``build/runtime/libiostudy.so``, LD_PRELOADed into ``dd`` and
  ``cp`` runs of a few files each), a tenth of the corpus by default,

each copy with its job id rewritten by :func:`set_jobid`. The sources are used in turn, the
order, dates, names and job ids come from a seeded generator: the same arguments give the same
tree (the runtime's own logs differ from build to build in their timestamps only).

Standard library only; the log format is ``../shared/reference/darshan-log-format.md``.
"""

import argparse
import datetime
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile
import zlib
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]
DEFAULT_SHARED = REPO_ROOT.parent / "shared"
DEFAULT_RUNTIME_BUILD = REPO_ROOT / "build" / "runtime"
TESTDATA = Path("testdata") / "darshan-logs"
RUNTIME_LIB = "libiostudy.so"

MAGIC = 6567223
COMP_ZLIB, COMP_NONE = 0, 2


@dataclass(frozen=True)
class Layout:
    """Where a header format keeps its fields (log-format reference §2.1, §3.1)."""

    header_size: int
    name_map: int  # offset of name_map {off u64, len u64}
    mod_map: int  # offset of mod_map[slots] {off u64, len u64}
    slots: int
    jobid: int  # offset of the i64 jobid inside the decompressed darshan_job


LAYOUT_341 = Layout(header_size=1328, name_map=32, mod_map=48, slots=64, jobid=48)
LAYOUT_LEGACY = Layout(header_size=360, name_map=24, mod_map=40, slots=16, jobid=32)
LAYOUTS = {
    "3.41": LAYOUT_341,
    "3.00": LAYOUT_LEGACY,
    "3.10": LAYOUT_LEGACY,
    "3.20": LAYOUT_LEGACY,
    "3.21": LAYOUT_LEGACY,
}
POSIX_SLOT = 1  # the POSIX module's index in every format version
DXT_IDS = (10, 11)  # DXT_POSIX and DXT_MPIIO


class LogFormatError(ValueError):
    """A log this module cannot rewrite."""


@dataclass(frozen=True)
class Header:
    version: str
    order: str  # struct byte-order prefix: "<" or ">"
    layout: Layout
    comp_type: int
    name_off: int
    mod_offs: tuple  # (off, len) per slot

    def job_end(self, file_size: int) -> int:
        """End of the job region (§2.4): the name region's offset, else the lowest-index module
        with an offset, else the end of the file."""
        if self.name_off:
            return self.name_off
        for off, _ in self.mod_offs:
            if off:
                return off
        return file_size


def read_header(data: bytes) -> Header:
    version = data[:8].split(b"\0", 1)[0].decode("ascii", "replace")
    layout = LAYOUTS.get(version)
    if layout is None:
        raise LogFormatError(f"unsupported format version {version!r}")
    if len(data) < layout.header_size:
        raise LogFormatError("shorter than its header")
    for order in "<>":
        if struct.unpack_from(order + "q", data, 8)[0] == MAGIC:
            break
    else:
        raise LogFormatError("bad magic number")
    name_off = struct.unpack_from(order + "Q", data, layout.name_map)[0]
    maps = struct.unpack_from(f"{order}{2 * layout.slots}Q", data, layout.mod_map)
    return Header(
        version=version,
        order=order,
        layout=layout,
        comp_type=data[16],
        name_off=name_off,
        mod_offs=tuple(zip(maps[0::2], maps[1::2], strict=True)),
    )


def _inflate(region: bytes) -> bytes:
    """The concatenated zlib streams of a region (§2.3)."""
    out = []
    while region:
        d = zlib.decompressobj()
        try:
            out.append(d.decompress(region))
        except zlib.error as exc:
            raise LogFormatError(f"job region does not inflate: {exc}") from None
        if not d.eof:
            raise LogFormatError("job region ends inside a zlib stream")
        region = d.unused_data
    return b"".join(out)


def set_jobid(data: bytes, jobid: int) -> bytes:
    """The log ``data`` with the jobid of its job region set to ``jobid``, otherwise the same.

    The job region is inflated, patched (i64 at offset 48 of darshan_job in format 3.41, at 32
    in the older ones, in the log's own byte order) and deflated again as one zlib stream; every
    later region moves by the change in size, so the name region and each module region with an
    offset get their header offsets shifted. Formats 3.00-3.41, either byte order, zlib or
    uncompressed regions. Raises LogFormatError.
    """
    if not -(2**63) <= jobid < 2**63:
        raise ValueError(f"jobid {jobid} does not fit an i64")
    hdr = read_header(data)
    lay, order = hdr.layout, hdr.order
    start, end = lay.header_size, hdr.job_end(len(data))
    if end < start or end > len(data):
        raise LogFormatError(f"job region [{start}, {end}) outside the file")
    if hdr.comp_type == COMP_ZLIB:
        job = bytearray(_inflate(data[start:end]))
    elif hdr.comp_type == COMP_NONE:
        job = bytearray(data[start:end])
    else:
        raise LogFormatError(f"compression type {hdr.comp_type} not supported")
    if len(job) < lay.jobid + 8:
        raise LogFormatError(f"job region of {len(job)} bytes holds no jobid")
    struct.pack_into(order + "q", job, lay.jobid, jobid)
    new_job = zlib.compress(bytes(job)) if hdr.comp_type == COMP_ZLIB else bytes(job)
    delta = len(new_job) - (end - start)

    header = bytearray(data[:start])
    if hdr.name_off:
        struct.pack_into(order + "Q", header, lay.name_map, hdr.name_off + delta)
    for slot, (off, _) in enumerate(hdr.mod_offs):
        if off:
            struct.pack_into(order + "Q", header, lay.mod_map + 16 * slot, off + delta)
    return bytes(header) + new_job + data[end:]


def module_id(slot: int, version: str) -> int:
    """The 3.41 id of module slot ``slot`` of a log of format ``version``: formats below 3.20
    lack H5D (id 4), below 3.41 PNETCDF_VAR (id 6) (the reference, section 2.1)."""
    if version < "3.20" and slot >= 4:
        slot += 1
    if version < "3.41" and slot >= 6:
        slot += 1
    return slot


def without_dxt(data: bytes) -> bytes:
    """The log ``data`` without its DXT traces: the header's map entries of DXT_POSIX and
    DXT_MPIIO (ids 10 and 11) zeroed, which readers take as modules the log does not hold
    (their bytes stay in the file, unread)."""
    hdr = read_header(data)
    header = bytearray(data[: hdr.layout.header_size])
    for slot in range(hdr.layout.slots):
        if module_id(slot, hdr.version) in DXT_IDS:
            struct.pack_into(hdr.order + "QQ", header, hdr.layout.mod_map + 16 * slot, 0, 0)
    return bytes(header) + data[len(header) :]


def has_posix(data: bytes) -> bool:
    """Whether the header lists POSIX data (a region of non-zero length)."""
    return read_header(data).mod_offs[POSIX_SLOT][1] > 0


# -- sources -------------------------------------------------------------------------------------

_DARSHAN_NAME = re.compile(r"^([A-Za-z0-9.-]+)_(.+?)_id\d+")


@dataclass(frozen=True)
class Source:
    """A log the corpus copies: its bytes and the user/exe parts of the names of its copies."""

    label: str  # where it came from, for messages
    kind: str  # "testdata" or "runtime"
    data: bytes
    user: str
    exe: str


def _name_parts(path: Path) -> tuple[str, str]:
    m = _DARSHAN_NAME.match(path.name)
    if m:
        user, exe = m.groups()
    else:
        user, exe = "darshan", path.stem
    return user, re.sub(r"[^A-Za-z0-9.+-]", "-", exe)


def testdata_sources(shared: Path, dxt: bool = False) -> list[Source]:
    """Every log under shared/testdata/darshan-logs, in path order; without their DXT traces
    unless ``dxt``."""
    root = Path(shared) / TESTDATA
    paths = sorted(root.rglob("*.darshan"))
    if not paths:
        raise FileNotFoundError(f"no *.darshan under {root}")
    sources = []
    for p in paths:
        data = p.read_bytes()
        read_header(data)  # refuse a log set_jobid cannot rewrite now, not midway
        data = data if dxt else without_dxt(data)
        user, exe = _name_parts(p)
        sources.append(Source(str(p.relative_to(root)), "testdata", data, user, exe))
    return sources


def runtime_library(build: Path) -> Path | None:
    lib = Path(build) / RUNTIME_LIB
    return lib if lib.is_file() else None


def _runtime_env(lib: Path, log: Path, mmap_dir: Path, jobid: int) -> dict:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DARSHAN_", "IOSTUDY_", "DXT_")) and k != "LD_PRELOAD"
    }
    env.update(
        LD_PRELOAD=str(lib),
        DARSHAN_ENABLE_NONMPI="1",
        DARSHAN_LOGFILE=str(log),
        DARSHAN_MMAP_LOGPATH=str(mmap_dir),
        SLURM_JOB_ID=str(jobid),
        LOGNAME="bench",
        LC_ALL="C",
    )
    return env


def runtime_sources(build: Path, count: int = 20, seed: int = 0, workdir=None) -> list[Source]:
    """``count`` logs written by our runtime: ``dd`` writing a file of a few blocks, then ``cp``
    copying the files written so far, alternately, each run LD_PRELOADed with
    ``build``/libiostudy.so (non-MPI mode, one DARSHAN_LOGFILE per run). Raises RuntimeError
    when the library is missing or a run fails."""
    lib = runtime_library(build)
    if lib is None:
        raise RuntimeError(f"{Path(build) / RUNTIME_LIB} is missing: run `make build-runtime`")
    rng = random.Random(seed)
    own_tmp = workdir is None
    work = Path(tempfile.mkdtemp(prefix="iostudy-corpus-runtime-") if own_tmp else workdir)
    data_dir, log_dir, mmap_dir = work / "data", work / "logs", work / "mmap"
    for d in (data_dir, log_dir, mmap_dir):
        d.mkdir(parents=True, exist_ok=True)
    sources = []
    try:
        written = []
        for i in range(count):
            log = log_dir / f"run{i:03d}.darshan"
            if i % 2 == 0 or not written:
                exe = "dd"
                target = data_dir / f"f{i:03d}.dat"
                bs = rng.choice((4096, 65536, 1 << 20))
                cmd = [
                    "dd",
                    "if=/dev/zero",
                    f"of={target}",
                    f"bs={bs}",
                    f"count={rng.randint(1, 8)}",
                ]
                written.append(target)
            else:
                exe = "cp"
                sub = data_dir / f"copy{i:03d}"
                sub.mkdir()
                cmd = ["cp", *map(str, rng.sample(written, min(len(written), 3))), str(sub)]
            proc = subprocess.run(
                cmd,
                env=_runtime_env(lib, log, mmap_dir, 900000 + i),
                cwd=work,
                capture_output=True,
                text=True,
                errors="replace",
                timeout=60,
            )
            problems = [ln for ln in proc.stderr.splitlines() if ln.startswith("iostudy:")]
            if proc.returncode != 0 or problems or not log.is_file():
                raise RuntimeError(
                    f"runtime run {' '.join(cmd)} failed (exit status {proc.returncode}, "
                    f"log {'written' if log.is_file() else 'missing'}): {proc.stderr.strip()}"
                )
            data = log.read_bytes()
            read_header(data)
            sources.append(Source(f"runtime {exe} run {i}", "runtime", data, "bench", exe))
    finally:
        if own_tmp:
            shutil.rmtree(work, ignore_errors=True)
    return sources


# -- the tree ------------------------------------------------------------------------------------

EPOCH = datetime.date(2025, 1, 1)
JOBID_RANGE = (1_000_000, 2**31 - 1)  # the runtime parses job ids as 32-bit ints


def plan(n_logs: int, n_test: int, n_runtime: int, runtime_share: float) -> tuple[int, int]:
    """How many copies of test logs and of runtime logs make up ``n_logs``."""
    copies_runtime = 0
    if n_runtime:
        copies_runtime = min(n_logs, math.ceil(n_logs * runtime_share))
    if copies_runtime < n_logs and not n_test:
        raise ValueError("no test logs to copy")
    return n_logs - copies_runtime, copies_runtime


def write_tree(
    out: Path, sources: list[Source], n_logs: int, runtime_share=0.1, seed=0, progress=None
):
    """Write ``n_logs`` copies of ``sources`` under ``out``/<Y>/<M>/<D>/; returns the list of
    (path, source) written, in writing order."""
    rng = random.Random(seed)
    test = [s for s in sources if s.kind != "runtime"]
    runtime = [s for s in sources if s.kind == "runtime"]
    n_test, n_runtime = plan(n_logs, len(test), len(runtime), runtime_share)
    chosen = [test[i % len(test)] for i in range(n_test)]
    chosen += [runtime[i % len(runtime)] for i in range(n_runtime)]
    rng.shuffle(chosen)
    jobids = rng.sample(range(*JOBID_RANGE), n_logs)
    written = []
    step = max(1, n_logs // 10)
    for i, (src, jobid) in enumerate(zip(chosen, jobids, strict=True)):
        day = EPOCH + datetime.timedelta(days=rng.randrange(365))
        secs = rng.randrange(86400)
        name = (
            f"{src.user}_{src.exe}_id{jobid}-{rng.randrange(1000, 4_000_000)}_"
            f"{day.month}-{day.day}-{secs}-{rng.getrandbits(64)}_1.darshan"
        )
        folder = out / str(day.year) / str(day.month) / str(day.day)
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / name
        try:
            path.write_bytes(set_jobid(src.data, jobid))
        except LogFormatError as exc:
            raise LogFormatError(f"{src.label}: {exc}") from None
        written.append((path, src))
        if progress and ((i + 1) % step == 0 or i + 1 == n_logs):
            progress(f"corpus: {i + 1}/{n_logs} logs written")
    return written


def build(
    out,
    n_logs=10_000,
    shared=DEFAULT_SHARED,
    runtime_build=DEFAULT_RUNTIME_BUILD,
    runtime_logs=20,
    runtime_share=0.1,
    seed=0,
    progress=print,
    dxt=False,
):
    """Build the corpus in ``out`` (created; must not hold files yet). ``runtime_logs`` = 0
    leaves the runtime's logs out; ``dxt``: the test logs keep their DXT traces. Returns the
    list of (path, Source) written."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    sources = testdata_sources(shared, dxt)
    if progress:
        progress(f"corpus: {len(sources)} test logs from {Path(shared) / TESTDATA}")
    if runtime_logs:
        sources += runtime_sources(runtime_build, runtime_logs, seed)
        if progress:
            progress(f"corpus: {runtime_logs} logs written by {Path(runtime_build) / RUNTIME_LIB}")
    return write_tree(out, sources, n_logs, runtime_share, seed, progress)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="corpus root (created; must be empty)")
    p.add_argument("--logs", type=int, default=10_000, help="logs in the corpus (default 10000)")
    p.add_argument(
        "--shared",
        type=Path,
        default=DEFAULT_SHARED,
        help="the shared/ folder holding testdata/darshan-logs (default: beside the repo)",
    )
    p.add_argument(
        "--runtime-build",
        type=Path,
        default=DEFAULT_RUNTIME_BUILD,
        help="where libiostudy.so was built (default build/runtime)",
    )
    p.add_argument(
        "--runtime-logs",
        type=int,
        default=20,
        help="distinct logs our runtime writes for the corpus; 0: none (default 20)",
    )
    p.add_argument(
        "--runtime-share",
        type=float,
        default=0.1,
        help="fraction of the corpus copied from the runtime's logs (default 0.1)",
    )
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--dxt", action="store_true", help="the test logs keep their DXT traces")
    args = p.parse_args(argv)
    if args.logs < 1:
        p.error("--logs must be at least 1")
    try:
        written = build(
            args.out,
            args.logs,
            args.shared,
            args.runtime_build,
            args.runtime_logs,
            args.runtime_share,
            args.seed,
            progress=lambda msg: print(msg, flush=True),
            dxt=args.dxt,
        )
    except (OSError, ValueError, RuntimeError) as exc:
        print(f"corpus: error: {exc}", file=sys.stderr)
        return 1
    n_rt = sum(src.kind == "runtime" for _, src in written)
    print(f"corpus: {len(written)} logs in {args.out} ({n_rt} from the runtime's logs)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
