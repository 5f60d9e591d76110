"""A facility-scale report, measured: `make bench-report`.

1. A store of ``--jobs`` synthetic job logs (100,000 by default) is written straight into the
   store's tables (one log tree's run, study "facility": jobs of 1 to 4,096 processes over a
   year, a POSIX and a STDIO record each, bytes and times spread over decades; synthstore.py's
   ``make_store``), so that the report, not ingest, is what is measured.
2. ``iostudy report build --store STORE --study facility`` runs in a child process: wall time,
   and peak resident memory (the child's getrusage maximum), the page's size.
3. With ``--baseline-src DIR`` (analysis/src of a git worktree of an older commit), the same
   build by that iostudy (this Python, PYTHONPATH=DIR) right after, into its own reports
   folder, and the ratios.
4. The figures against the targets: at most 30 s and 2 GiB, the page at most 2 MB and
   15,000 px tall at 1,400 px wide (measured in headless Chromium); at most 500 job and
   project pages, the largest of them within the page's budget too.

Exits non-zero only when a step failed; a missed target is printed, not an error. Benchmarks are
never timed assertions in tests.
"""

from __future__ import annotations

import argparse
import io
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from synthstore import make_store

TARGET_S, TARGET_GIB, TARGET_PAGE_MB, TARGET_PAGE_KPX = 30.0, 2.0, 2.0, 15.0
# Job and project pages are made for the jobs and projects the report's tables show (a few
# tables of at most 16 rows, and a project page's Table V): a bound that does not grow with jobs.
TARGET_PAGES = 500
# A child that runs the command and reports its own children's peak RSS (KiB) on stderr last.
MEASURE = (
    "import resource, subprocess, sys; p = subprocess.run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, file=sys.stderr); "
    "sys.exit(p.returncode)"
)


def build(store: Path, reports: Path, src: str | None) -> dict:
    """One report build in a child process: seconds, peak GiB, the page's MB and height."""
    env = dict(os.environ, PYTHONPATH=src) if src else dict(os.environ)
    cmd = [
        sys.executable,
        "-c",
        MEASURE,
        sys.executable,
        "-m",
        "iostudy.cli.cli",
        "report",
        "build",
        "--store",
        str(store),
        "--study",
        "facility",
        "--reports",
        str(reports),
    ]
    t0 = time.monotonic()
    proc = subprocess.run(cmd, env=env, capture_output=True, text=True)
    seconds = time.monotonic() - t0
    if proc.returncode != 0:
        raise SystemExit(f"bench-report: the build failed ({src or 'this tree'}):\n{proc.stderr}")
    peak_kib = int(proc.stderr.strip().splitlines()[-1])
    page = Path(proc.stdout.strip().splitlines()[-1])
    details = sorted(page.parent.glob("job-*.html")) + sorted(page.parent.glob("project-*.html"))
    largest = max(details, key=lambda p: p.stat().st_size, default=None)
    return {
        "s": seconds,
        "gib": peak_kib / 2**20,
        "mb": page.stat().st_size / 1e6,
        "kpx": page_height(page) / 1000,
        "pages": len(details),
        "detail_mb": largest.stat().st_size / 1e6 if largest else 0.0,
        "detail_kpx": page_height(largest) / 1000 if largest else 0.0,
    }


def page_height(page: Path) -> float:
    """The page's height in px at the budget's width, loaded whole in headless Chromium (the
    tests' driver, analysis/tests/chromium.py); NaN without Chromium."""
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
    from PIL import Image
    from tests import chromium

    if not chromium.find_chromium():
        return float("nan")
    shot = chromium.load(page.resolve().as_uri(), width=chromium.PAGE_WIDTH, full_page=True)
    return float(Image.open(io.BytesIO(shot.screenshot)).size[1])


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=100_000, help="synthetic job logs (100,000)")
    ap.add_argument("--baseline-src", help="analysis/src of an older iostudy, built beside")
    args = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        t0 = time.monotonic()
        store = make_store(Path(tmp) / "store", args.jobs)
        print(f"bench-report: a store of {args.jobs:,} job logs in {time.monotonic() - t0:.1f} s")
        this = build(store, Path(tmp) / "reports", None)
        base = (
            build(store, Path(tmp) / "reports-base", args.baseline_src)
            if (args.baseline_src)
            else None
        )
    print(f"{'':28}{'this tree':>12}" + (f"{'baseline':>12}{'ratio':>8}" if base else ""))
    for key, what, target in (
        ("s", "report build, s", TARGET_S),
        ("gib", "peak memory, GiB", TARGET_GIB),
        ("mb", "page, MB", TARGET_PAGE_MB),
        ("kpx", "page at 1,400 px, kpx tall", TARGET_PAGE_KPX),
        ("pages", "job and project pages", TARGET_PAGES),
        ("detail_mb", "largest of them, MB", TARGET_PAGE_MB),
        ("detail_kpx", "largest, kpx tall", TARGET_PAGE_KPX),
    ):
        line = f"{what:28}{this[key]:12.2f}"
        if base:
            ratio = f"{this[key] / base[key]:8.2f}" if base[key] else f"{'-':>8}"
            line += f"{base[key]:12.2f}{ratio}"
        verdict = "met" if this[key] <= target else "MISSED"
        verdict = "not measured (no chromium)" if this[key] != this[key] else verdict  # NaN
        print(f"{line}   target <= {target:g}: {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
