"""A scan's session: ``iostudy fsstats scan``'s :func:`scan` lists the root, runs the walker
(:mod:`iostudy.collect.fsstats_walker`) until the tree is done or it is stopped, keeps the
checkpoint, says the progress, and makes the snapshot
(:mod:`iostudy.collect.fsstats_snapshot`). Apart from the walker as what decides when a walk
starts, stops and goes on.

With ``--checkpoint FILE`` the state (histograms, directories still to list in FILE.pending.<n>,
inodes of multiply-linked files) is saved every ``--checkpoint-every`` seconds, on SIGINT or
SIGTERM and after ``--max-dirs`` directories; ``--resume`` goes on from it. A checkpoint holds
whole directories only: a directory is either counted or still to list, never half.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import stat
import tempfile
import time
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path

from iostudy import __version__
from iostudy.collect.fsstats_snapshot import (
    COUNTS,
    FORMAT,
    VERSION,
    FsstatsError,
    WalkFailed,
    write_snapshot,
)
from iostudy.collect.fsstats_tally import Tally
from iostudy.collect.fsstats_walker import (
    TOOL,
    StopSignals,
    default_threads,
    find_walker,
    list_root,
    run_walker,
)
from iostudy.core.progress import QUIET, Progress

#: how a scan ends: its tree done (the snapshot made), or stopped by --max-dirs or a signal
DONE, STOPPED, INTERRUPTED = "done", "stopped", "interrupted"


class _WalkProgress:
    """The walk's counts so far said to ``progress``, after each batch of the walker's records
    (at least every second)."""

    def __init__(self, root: str, progress: Progress):
        self.root, self.progress = root, progress

    def update(self, tally: Tally, elapsed: float) -> None:
        entries = tally.total("entries")
        rate = entries / elapsed if elapsed > 0 else 0.0
        self.progress.note(
            f"fsstats scan {self.root}: {entries:,} entries, {tally.listed:,} directories "
            f"listed, {rate:,.0f} entries/s, {tally.n_errors:,} errors"
        )


@dataclass
class ScanResult:
    outcome: str  # DONE (the snapshot made), STOPPED or INTERRUPTED
    snapshot: dict | None
    tally: Tally
    elapsed: float
    checkpoint: Path | None = None


def _utc_iso(ts: float) -> str:
    return datetime.fromtimestamp(ts, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def _statvfs(root: str) -> dict:
    try:
        s = os.statvfs(root)
    except OSError:
        return {}
    return {
        "size_bytes": s.f_blocks * s.f_frsize,
        "used_bytes": (s.f_blocks - s.f_bfree) * s.f_frsize,
        "free_bytes": s.f_bavail * s.f_frsize,
        "inodes": s.f_files,
        "inodes_free": s.f_ffree,
    }


class _Checkpoint:
    """FILE (JSON: the tally and the scan's facts) and FILE.pending.<n> (the directories still
    to list, iostudy-fswalk's start format). A new generation's pending file is written before
    the JSON that names it is renamed into place, and the older one removed after: a crash at
    any point leaves a consistent pair."""

    def __init__(self, path: Path):
        self.path = Path(path)

    def pending_path(self, generation: int) -> Path:
        return self.path.with_name(f"{self.path.name}.pending.{generation}")

    def exists(self) -> bool:
        return self.path.is_file()

    def load(self) -> dict:
        try:
            state = json.loads(self.path.read_text())
        except (OSError, ValueError) as exc:
            raise FsstatsError(f"{self.path}: cannot read the checkpoint: {exc}") from None
        if not isinstance(state, dict) or state.get("format") != f"{FORMAT}-checkpoint":
            raise FsstatsError(f"{self.path}: not an fsstats checkpoint")
        if not self.pending_path(state["generation"]).is_file():
            raise FsstatsError(
                f"{self.path}: its list of directories to walk, "
                f"{self.pending_path(state['generation'])}, is missing"
            )
        return state

    def save(self, state: dict) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        tmp.write_text(json.dumps(state))
        os.replace(tmp, self.path)
        for old in self.path.parent.glob(f"{self.path.name}.pending.*"):
            suffix = old.name.rsplit(".", 1)[-1]
            if suffix.isdigit() and int(suffix) != state["generation"]:
                old.unlink(missing_ok=True)

    def remove(self) -> None:
        self.path.unlink(missing_ok=True)
        for old in self.path.parent.glob(f"{self.path.name}.pending.*"):
            old.unlink(missing_ok=True)


@dataclass
class _Session:
    """One session of a scan (a resumed scan has several): the tree and how to walk it, and the
    state a checkpoint keeps (tally, facts, generation, the start directories of the next
    walker run)."""

    walker: Path
    root: str  # resolved
    dev: int
    name: str | None
    threads: int
    ck: _Checkpoint | None
    listing: Path | None
    max_dirs: int | None
    checkpoint_every: float
    work: Path  # a temporary folder: the walker's files when there is no checkpoint
    tally: Tally | None = None
    facts: dict | None = None
    generation: int = 0
    starts: Path | None = None

    def resume(self) -> None:
        state = self.ck.load()
        if state["root"] != self.root or state["device"] != self.dev:
            raise FsstatsError(
                f"{self.ck.path}: a checkpoint of {state['root']} (device {state['device']}), "
                f"not of {self.root} (device {self.dev})"
            )
        self.tally = Tally.from_state(state["tally"])
        self.generation = state["generation"]
        self.starts = self.ck.pending_path(self.generation)
        self.facts = state["facts"]
        self.facts["sessions"] += 1

    def begin(self, list_file) -> None:
        """A fresh scan: the root listed here, its directories the walker's start."""
        now = time.time()
        self.facts = {"started": now, "elapsed": 0.0, "sessions": 1}
        recs, projects, start_lines, errors = list_root(os.fsencode(self.root), self.dev, list_file)
        self.tally = Tally(int(now), projects)
        for error in errors:
            self.tally.add_error(*error)
        self.tally.add_root_dir()
        self.tally.add(recs)
        self.generation = 0
        self.starts = self.ck.pending_path(0) if self.ck else self.work / "starts"
        self.starts.parent.mkdir(parents=True, exist_ok=True)
        self.starts.write_bytes(b"".join(start_lines))

    def save(self) -> None:
        self.ck.save(
            {
                "format": f"{FORMAT}-checkpoint",
                "version": VERSION,
                "root": self.root,
                "device": self.dev,
                "name": self.name,
                "generation": self.generation,
                "facts": self.facts,
                "tally": self.tally.state(),
            }
        )

    def run(self, stack: contextlib.ExitStack, resume: bool, progress: Progress) -> str:
        """Start (or go on) and walk: DONE when the tree is done, else STOPPED or
        INTERRUPTED."""
        resuming = bool(resume and self.ck and self.ck.exists())
        list_file = (
            stack.enter_context(open(self.listing, "ab" if resuming else "wb"))
            if self.listing
            else None
        )
        if resuming:
            self.resume()
        else:
            self.begin(list_file)
        if list_file is not None:
            list_file.close()  # the walker appends to it
        if self.ck and not resuming:
            self.save()
        t0 = time.monotonic()
        elapsed_before = self.facts["elapsed"]
        listed_before = self.tally.listed  # this session's --max-dirs counts from here

        def clock():
            return elapsed_before + time.monotonic() - t0

        signals = stack.enter_context(StopSignals())
        counts = _WalkProgress(self.root, progress)
        outcome = self.walk(signals, counts, clock, listed_before)
        counts.update(self.tally, clock())
        return outcome

    def walk(self, signals: StopSignals, progress: _WalkProgress, clock, listed_before: int) -> str:
        """Walker runs until the tree is done or the scan is stopped (a checkpoint saved
        after each run)."""
        while True:
            gen = self.generation + 1
            pending = self.ck.pending_path(gen) if self.ck else self.work / f"pending.{gen}"
            walker_status, reason = run_walker(
                self.walker,
                self.starts,
                pending,
                self.work / "errors",
                self.tally,
                signals,
                progress,
                clock,
                threads=self.threads,
                dev=self.dev,
                listing=self.listing,
                max_dirs=self.max_dirs - (self.tally.listed - listed_before)
                if self.max_dirs
                else None,
                max_ms=max(1, int(self.checkpoint_every * 1000)) if self.ck else None,
            )
            self.generation = gen
            self.facts["elapsed"] = clock()
            if self.ck:  # done too: a snapshot that cannot be written is one --resume away
                self.save()
            if walker_status == 0:
                return DONE
            self.starts = pending
            if signals.received or reason == "signal":
                return INTERRUPTED
            if reason == "max-dirs":
                return STOPPED
            if not self.ck:  # cannot happen: without a checkpoint nothing else stops the walker
                raise WalkFailed(f"{TOOL} stopped early: {reason}")

    def snapshot(self, out: Path | None) -> dict:
        tally = self.tally
        finished = time.time()
        return {
            "format": FORMAT,
            "version": VERSION,
            "name": self.name or (Path(out).stem if out else os.path.basename(self.root)),
            "root": self.root,
            "device": self.dev,
            "host": socket.gethostname(),
            "started": _utc_iso(self.facts["started"]),
            "finished": _utc_iso(finished),
            "now": tally.now,
            "elapsed_s": round(self.facts["elapsed"], 3),
            "sessions": self.facts["sessions"],
            "tool": {"iostudy": __version__, "walker": TOOL, "threads": self.threads},
            "filesystem": _statvfs(self.root),
            "counts": {c: tally.total(c) for c in COUNTS},
            "errors": {**tally.errors, "examples": tally.examples},
            "histograms": tally.histograms(),
            "projects": tally.project_list(),
        }


def _directory(root) -> tuple[str, int]:
    """The tree to scan: root resolved (followed if it is a symlink, as find -H) and its
    device."""
    given = os.path.abspath(os.fsdecode(root))
    try:
        st = os.stat(given)
    except OSError as exc:
        raise FsstatsError(f"{given}: {exc.strerror}") from None
    if not stat.S_ISDIR(st.st_mode):
        raise FsstatsError(f"{given}: not a directory")
    return os.path.realpath(given), st.st_dev


def _check_writable(out: Path) -> None:
    """The snapshot can be written at out, before any walking."""
    folder = Path(out).absolute().parent
    existing = next(p for p in (folder, *folder.parents) if p.exists())
    if not os.access(existing, os.W_OK | os.X_OK) or not existing.is_dir():
        raise FsstatsError(f"{out}: cannot write there ({existing} is not a writable folder)")


def scan(
    root,
    out: Path | None,
    *,
    name: str | None = None,
    threads: int | None = None,
    checkpoint: Path | None = None,
    checkpoint_every: float = 600.0,
    resume: bool = False,
    max_dirs: int | None = None,
    listing: Path | None = None,
    progress: Progress = QUIET,
) -> ScanResult:
    """Scan the tree under root; write the snapshot to out when complete (a temporary file
    renamed into place) and return it. Raises FsstatsError when the scan cannot start or the
    walker fails. With max_dirs, stops after that many directories (a checkpoint is needed to
    go on); SIGINT and SIGTERM stop it too (the checkpoint, if any, is saved). The counts so
    far go to progress as the walk goes."""
    walker = find_walker()
    if walker is None:
        raise FsstatsError(f"{TOOL} not found: run `make setup` (or set IOSTUDY_FSWALK to it)")
    if (max_dirs or resume) and checkpoint is None:
        raise FsstatsError("--max-dirs and --resume need --checkpoint FILE")
    root_s, dev = _directory(root)
    ck = _Checkpoint(checkpoint) if checkpoint else None
    if ck and ck.exists() and not resume:
        raise FsstatsError(
            f"{ck.path} exists: give --resume to go on from it, or remove it to start afresh"
        )
    if out is not None:
        _check_writable(out)
    with contextlib.ExitStack() as stack:
        work = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="fsstats-")))
        session = _Session(
            walker=walker,
            root=root_s,
            dev=dev,
            name=name,
            threads=threads or default_threads(),
            ck=ck,
            listing=listing,
            max_dirs=max_dirs,
            checkpoint_every=checkpoint_every,
            work=work,
        )
        outcome = session.run(stack, resume, progress)
    elapsed = session.facts["elapsed"]
    if outcome != DONE:
        return ScanResult(outcome, None, session.tally, elapsed, ck.path if ck else None)
    snapshot = session.snapshot(out)
    if out is not None:
        try:
            write_snapshot(snapshot, Path(out))
        except OSError as exc:
            kept = f" (--resume with the checkpoint {ck.path} writes it)" if ck else ""
            raise WalkFailed(f"{out}: cannot write: {exc.strerror or exc}{kept}") from None
    if ck:
        ck.remove()
    return ScanResult(DONE, snapshot, session.tally, elapsed, None)
