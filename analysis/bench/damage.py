"""Damaged Darshan logs for `make bench-analysis`: what a quarantined log costs ingest.

``python analysis/bench/damage.py --out DIR [--logs N]`` writes N damaged logs (default 400)
into a tree laid out as corpus.py's is. Each is a copy of a real test log (corpus.py's sources,
its own job id set by :func:`corpus.set_jobid`, so that no two have the same content), damaged
in one of three ways, in turn:

- ``cut``: cut short inside a region every reader reads (the job, name or POSIX region, chosen
  with the seed): the file ends at a seeded offset strictly inside that region;
- ``zero-job``: the stored bytes of the job region zeroed, but for its last 4 (the Adler-32 of
  the stream, which keeps the copies distinct); libdarshan-util dies of a segfault on these;
- ``deflate``: one byte in the middle of the compressed stream of the POSIX region (of the
  largest module region in a log without POSIX data) changed: zlib refuses the stream, or finds
  the Adler-32 wrong.

The damage is made with the standard library on corpus.py's header reading (``read_header``,
``Header.job_end``), as the job-id rewrite is; regions are those of the log-format reference
(``../shared/reference/darshan-log-format.md``, §2). Only zlib-compressed sources are used (the
deflate damage needs a stream). Standard library only.
"""

import argparse
import datetime
import random
import struct
import sys
from pathlib import Path

import corpus

KINDS = ("cut", "zero-job", "deflate")


def regions(data: bytes, hdr: corpus.Header) -> list[tuple[str, int, int]]:
    """(label, start, end) of each region of the log with stored bytes, in file order: the job
    region, the name region, each module region."""
    start = hdr.layout.header_size
    found = [("job", start, hdr.job_end(len(data)))]
    if hdr.name_off:
        length = struct.unpack_from(hdr.order + "Q", data, hdr.layout.name_map + 8)[0]
        found.append(("names", hdr.name_off, hdr.name_off + length))
    for slot, (off, length) in enumerate(hdr.mod_offs):
        if off and length:
            found.append((f"module slot {slot}", off, off + length))
    return sorted(found, key=lambda r: r[1])


def cut(data: bytes, rng: random.Random) -> tuple[bytes, str]:
    """The log cut short at an offset strictly inside one of its regions."""
    hdr = corpus.read_header(data)
    wanted = ("job", "names", f"module slot {corpus.POSIX_SLOT}")
    read = [r for r in regions(data, hdr) if r[0] in wanted]
    label, start, end = rng.choice([r for r in read if r[2] - r[1] >= 2])
    at = rng.randrange(start + 1, end)
    return data[:at], f"cut at {at} inside the {label} region [{start}, {end})"


def zero_job(data: bytes) -> tuple[bytes, str]:
    """The log with the stored bytes of its job region zeroed, but for the last 4."""
    hdr = corpus.read_header(data)
    start, end = hdr.layout.header_size, hdr.job_end(len(data))
    if end - start <= 4:
        raise corpus.LogFormatError(f"job region [{start}, {end}) too short to zero")
    what = f"job region zeroed [{start}, {end - 4})"
    return data[:start] + bytes(end - 4 - start) + data[end - 4 :], what


def damage_deflate(data: bytes) -> tuple[bytes, str]:
    """The log with the middle byte of its POSIX region's compressed stream changed (of its
    largest module region when it has no POSIX data)."""
    hdr = corpus.read_header(data)
    if hdr.comp_type != corpus.COMP_ZLIB:
        raise corpus.LogFormatError("regions not zlib-compressed")
    modules = [r for r in regions(data, hdr) if r[0].startswith("module")]
    if not modules:
        raise corpus.LogFormatError("no module region")
    posix = [r for r in modules if r[0] == f"module slot {corpus.POSIX_SLOT}"]
    label, start, end = posix[0] if posix else max(modules, key=lambda r: r[2] - r[1])
    at = (start + end) // 2
    return (
        data[:at] + bytes([data[at] ^ 0xA5]) + data[at + 1 :],
        f"byte {at} of the {label} region [{start}, {end}) changed",
    )


def damage(data: bytes, kind: str, rng: random.Random) -> tuple[bytes, str]:
    """``data`` damaged the ``kind`` way (one of KINDS): (the bytes, what was done)."""
    if kind == "cut":
        return cut(data, rng)
    if kind == "zero-job":
        return zero_job(data)
    if kind == "deflate":
        return damage_deflate(data)
    raise ValueError(f"unknown damage {kind!r}")


def usable(src: corpus.Source) -> bool:
    """Whether every kind of damage applies to a source: zlib regions, a module region, a job
    region of more than 4 bytes."""
    try:
        hdr = corpus.read_header(src.data)
        rs = regions(src.data, hdr)
    except corpus.LogFormatError:
        return False
    return (
        hdr.comp_type == corpus.COMP_ZLIB
        and any(label.startswith("module") for label, _, _ in rs)
        and rs[0][2] - rs[0][1] > 4
    )


def build(out, n_logs=400, shared=corpus.DEFAULT_SHARED, seed=0, progress=print):
    """Write ``n_logs`` damaged logs under ``out`` (created; must not hold files yet), the kinds
    in turn. Returns the list of (path, kind, what was done)."""
    out = Path(out)
    if out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty")
    out.mkdir(parents=True, exist_ok=True)
    sources = [s for s in corpus.testdata_sources(shared) if usable(s)]
    if not sources:
        raise ValueError(f"no test log under {Path(shared) / corpus.TESTDATA} can be damaged")
    rng = random.Random(seed)
    jobids = rng.sample(range(*corpus.JOBID_RANGE), n_logs)
    written, seen = [], set()
    for i, jobid in enumerate(jobids):
        src, kind = sources[i % len(sources)], KINDS[i % len(KINDS)]
        bad, what = damage(corpus.set_jobid(src.data, jobid), kind, rng)
        if bad in seen:  # ingest would skip a copy of a log it has read: keep every one distinct
            raise ValueError(f"{src.label}: {kind} damage made a log already written")
        seen.add(bad)
        day = corpus.EPOCH + datetime.timedelta(days=rng.randrange(365))
        name = (
            f"{src.user}_{src.exe}_id{jobid}-{rng.randrange(1000, 4_000_000)}_"
            f"{day.month}-{day.day}-{rng.randrange(86400)}-{rng.getrandbits(64)}_1.darshan"
        )
        folder = out / str(day.year) / str(day.month) / str(day.day)
        folder.mkdir(parents=True, exist_ok=True)
        (folder / name).write_bytes(bad)
        written.append((folder / name, kind, f"{src.label}: {what}"))
    if progress:
        counts = ", ".join(f"{sum(k == kind for _, k, _ in written)} {kind}" for kind in KINDS)
        progress(f"damaged corpus: {len(written)} logs ({counts}) from {len(sources)} test logs")
    return written


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, required=True, help="tree root (created; must be empty)")
    p.add_argument("--logs", type=int, default=400, help="damaged logs (default 400)")
    p.add_argument("--shared", type=Path, default=corpus.DEFAULT_SHARED, help="see corpus.py")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--list", action="store_true", help="print each log and its damage")
    args = p.parse_args(argv)
    if args.logs < 1:
        p.error("--logs must be at least 1")
    try:
        written = build(args.out, args.logs, args.shared, args.seed)
    except (OSError, ValueError) as exc:
        print(f"damage: error: {exc}", file=sys.stderr)
        return 1
    if args.list:
        for path, kind, what in written:
            print(f"{path}\t{kind}\t{what}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
