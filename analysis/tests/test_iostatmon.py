"""iostudy iostat-mon against the real iostat (sysstat): the streaming parser on iostat's own
output, an iostat killed mid-run (restarted with backoff, the gap recorded), a hung one, SIGTERM
(clean stop, at most the interval in progress lost), the monitor itself killed, the device
filter, bytes against writes to a loop device, day files compressed, the import into the store,
and the analysis (seed 000 Figs. 6 and 7) on a small table written by hand.

The faults are real: iostat's process is found through the monitor's state file and
/proc/<monitor>/task/*/children, and killed (SIGKILL) or stopped (SIGSTOP) by its pid. Nothing
is mocked."""

import gzip
import json
import mmap
import os
import shutil
import signal
import subprocess
import sys
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pandas as pd
import pytest

from iostudy.cli.cli import main
from iostudy.collect import iostatanalysis, iostatdays, iostatimport, iostatjson, iostatmonitor
from iostudy.core import jsonlimits
from iostudy.report import devices
from iostudy.store import store

from . import filestate

INTERVAL = 1


@pytest.fixture(scope="module")
def iostat():
    path = shutil.which("iostat")
    if not path:
        pytest.fail(
            "iostat is not installed: the iostat-mon tests need Debian's package 'sysstat' "
            "(in ci/apt-packages.txt; `make setup` installs it)"
        )
    return path


class Mon:
    """A monitor process (`iostudy iostat-mon`) of a test."""

    def __init__(self, out: Path, *args, interval=INTERVAL):
        self.out = Path(out)
        self.log = self.out.parent / f"{self.out.name}.log"
        self.interval = interval
        cmd = [
            sys.executable,
            "-m",
            "iostudy.cli.cli",
            "iostat-mon",
            "--interval",
            str(interval),
            "--out",
            str(out),
            *map(str, args),
        ]
        with open(self.log, "w") as log:
            self.proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=log)

    def state(self) -> dict:
        try:
            return json.loads((self.out / iostatmonitor.STATE).read_text())
        except (OSError, ValueError):
            return {}

    def children(self) -> set[int]:
        pids = set()
        for f in Path(f"/proc/{self.proc.pid}/task").glob("*/children"):
            pids |= {int(p) for p in f.read_text().split()}
        return pids

    def iostat_pid(self, other_than=(), timeout=15.0) -> int:
        """The running iostat's pid (from the state file, checked against /proc)."""
        pid = wait_for(
            lambda: (
                (p := self.state().get("iostat_pid")) not in (None, *other_than)
                and p in self.children()
                and p
            ),
            timeout,
            f"a new iostat child of the monitor (not {other_than}); log:\n{self.text()}",
        )
        return pid

    def records(self, kind=None) -> list[dict]:
        if not self.out.is_dir():  # not started yet
            return []
        recs, _ = iostatimport.read_records(self.out)
        return [r for r in recs if kind is None or r["type"] == kind]

    def io_times(self) -> list[datetime]:
        return sorted({iostatjson.parse_time(r["time"]) for r in self.records("io")})

    def wait_intervals(self, n, after=None, timeout=20.0):
        after = after or datetime.min.replace(tzinfo=timezone.utc)
        wait_for(
            lambda: len([t for t in self.io_times() if t > after]) >= n,
            timeout,
            f"{n} intervals recorded after {after}; log:\n{self.text()}",
        )

    def wait_reports(self, n, timeout=20.0):
        """Until iostat has made n reports (the state file counts them, devices kept or not)."""
        wait_for(
            lambda: self.state().get("intervals", 0) >= n,
            timeout,
            f"{n} reports; log:\n{self.text()}",
        )

    def stop(self, sig=signal.SIGTERM, timeout=15.0) -> int:
        self.proc.send_signal(sig)
        return self.proc.wait(timeout)

    def text(self) -> str:
        return self.log.read_text() if self.log.exists() else ""


@pytest.fixture
def monitors():
    started = []

    def start(out, *args, interval=INTERVAL):
        m = Mon(out, *args, interval=interval)
        started.append(m)
        return m

    yield start
    for m in started:  # a failed test leaves none running
        if m.proc.poll() is None:
            m.proc.kill()
            m.proc.wait()


def wait_for(cond, timeout, what):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = cond()
        if value:
            return value
        time.sleep(0.02)
    pytest.fail(f"timed out after {timeout} s waiting for {what}")


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # a zombie is dead too
    stat = Path(f"/proc/{pid}/stat")
    return not (stat.exists() and stat.read_text().rsplit(")", 1)[1].split()[0] == "Z")


def now() -> datetime:
    return datetime.now(timezone.utc)


def t(text) -> datetime:
    return iostatjson.parse_time(text)


def real_devices(iostat) -> list[str]:
    """The devices iostat reports here (its since-boot report, at once)."""
    out = subprocess.run(
        [iostat, "-d", "-o", "JSON"],
        capture_output=True,
        text=True,
        env=iostatmonitor.iostat_env(),
        check=True,
    ).stdout
    stats = json.loads(out)["sysstat"]["hosts"][0]["statistics"]
    return [d["disk_device"] for d in stats[0]["disk"]]


# -- iostat's JSON stream ------------------------------------------------------------------------


def test_stream_parser_on_real_output_in_any_chunks(iostat):
    cmd = iostatmonitor.iostat_command(iostat, 1)[:-1] + ["1", "3"]  # 3 reports, then the end
    raw = subprocess.run(
        cmd, capture_output=True, env=iostatmonitor.iostat_env(), check=True
    ).stdout
    doc = json.loads(raw)  # the oracle: the whole document, parsed at once
    expected = doc["sysstat"]["hosts"][0]["statistics"]
    assert len(expected) == 3 and all("timestamp" in e for e in expected)
    for size in (1, 7, 4096, len(raw)):
        stream = iostatjson.StatsStream()
        got = []
        for i in range(0, len(raw), size):
            got += stream.feed(raw[i : i + size])
        assert got == expected, size
        assert stream.done
        assert stream.header["nodename"] == doc["sysstat"]["hosts"][0]["nodename"]
    # The times are iostat's (-t, ISO, UTC), one interval apart.
    times = [t(e["timestamp"]) for e in expected]
    assert all(x is not None for x in times)
    assert abs((now() - times[-1]).total_seconds()) < 10
    assert [round((b - a).total_seconds()) for a, b in zip(times, times[1:], strict=False)] in (
        [1, 1],
        [1, 2],
        [2, 1],
    )
    when, recs, seen = iostatjson.entry_records(expected[0], "h1", 1.0)
    assert when == times[0] and seen and [r["device"] for r in recs] == seen
    d0 = expected[0]["disk"][0]
    assert recs[0]["write_bytes"] == round(d0["wkB/s"] * 1024)
    assert recs[0]["util_pct"] == d0["util"] and recs[0]["queue"] == d0["aqu-sz"]


def test_stream_parser_rejects_what_is_not_iostat_json():
    stream = iostatjson.StatsStream()
    assert stream.feed(b'{"sysstat": {"hosts": [{"nodename": "n", "statistics": [') == []
    assert stream.feed(b'{"disk": []}') == [{"disk": []}]
    with pytest.raises(iostatjson.StreamError, match="unexpected"):
        stream.feed(b", Segmentation fault}")


def test_selected_patterns():
    assert iostatjson.selected("sdb", ["sd*"], ["sda"])
    assert not iostatjson.selected("sda", ["sd*"], ["sda"])
    assert not iostatjson.selected("nvme0n1", ["sd*"], [])
    assert iostatjson.selected("dm-3", [], ["sd?"])


# -- the monitor against the real iostat ---------------------------------------------------------


@pytest.mark.slow
def test_killed_iostat_restarted_with_backoff_gaps_recorded_sigterm(iostat, monitors, tmp_path):
    # 2-s intervals: the second iostat is killed before its first report, so that the backoff
    # doubles (it goes back to 1 s only after an iostat has reported).
    mon = monitors(tmp_path / "mon", "--host", "oss-test", interval=2)
    pid1 = mon.iostat_pid()
    mon.wait_intervals(2)
    last_before = mon.io_times()[-1]
    killed1 = now()
    os.kill(pid1, signal.SIGKILL)
    pid2 = mon.iostat_pid(other_than=(pid1,))
    killed2 = now()
    os.kill(pid2, signal.SIGKILL)
    pid3 = mon.iostat_pid(other_than=(pid1, pid2))
    started3 = now()
    mon.wait_intervals(3, after=started3)
    stopping = now()
    assert mon.stop() == 0, mon.text()
    stopped = now()

    assert not any(alive(p) for p in (pid1, pid2, pid3))
    recs, problems = iostatimport.read_records(mon.out)
    assert problems == []
    gap1, gap2 = mon.records("gap")
    assert f"iostat (pid {pid1}) killed by SIGKILL; restarted after 1 s" == gap1["reason"]
    assert f"iostat (pid {pid2}) killed by SIGKILL; restarted after 2 s" == gap2["reason"]
    # The first gap starts where the record stopped, before the kill, and ends after it.
    assert t(gap1["start"]) >= last_before
    assert t(gap1["start"]) <= killed1 + timedelta(seconds=0.5)
    assert killed1 < t(gap1["end"]) < killed2
    # The second iostat never reported: the second gap goes on from the first.
    assert gap2["start"] == gap1["end"]
    assert (t(gap2["end"]) - t(gap2["start"])).total_seconds() >= 2
    io = mon.records("io")
    assert {r["host"] for r in recs} == {"oss-test"}
    assert all(r["seconds"] == 2.0 for r in io)
    # Nothing recorded inside a gap (an interval of the new iostat begins at the gap's end).
    for g in (gap1, gap2):
        for r in io:
            end = t(r["time"])
            assert not (t(g["start"]) < end - timedelta(seconds=1) < t(g["end"])), (g, r)
    # SIGTERM: a stop record, the complete intervals kept, at most the one in progress lost.
    (stop,) = mon.records("stop")
    assert stop["reason"] == "SIGTERM"
    last = mon.io_times()[-1]
    assert stop["since"] == iostatjson.iso(last)
    assert last >= stopping - timedelta(seconds=2 + 1.5)
    assert t(stop["time"]) <= stopped
    assert recs[0]["type"] == "start" and recs[-1]["type"] == "stop"
    log = mon.text()
    assert "restarting in 1 s" in log and "restarting in 2 s" in log
    assert log.strip().splitlines()[-1].endswith(f"records in {mon.out}")

    # Into the store: the io rows and both gaps; the gaps table explains them.
    st = tmp_path / "store"
    assert main(["iostat-mon", "import", str(mon.out), "--store", str(st)]) == 0
    part = filestate.part(st, "iostat", "iostat-oss-test")
    assert part.is_file()
    con = store.connect(st)
    n_io = con.execute("SELECT count(*) FROM iostat WHERE kind = 'io'").fetchone()[0]
    assert n_io == len(io)
    table = store.read_table(st, "iostat")
    g = iostatanalysis.gaps(table)
    assert g["recorded"].all() and len(g) >= 1
    assert all(f"pid {p})" in " ".join(g["reason"]) for p in (pid1, pid2))
    # Importing again replaces the part; --host names another part.
    assert main(["iostat-mon", "import", str(mon.out), "--store", str(st)]) == 0
    assert store.connect(st).execute("SELECT count(*) FROM iostat").fetchone()[0] == len(table)
    assert main(["iostat-mon", "import", str(mon.out), "--store", str(st), "--host", "x"]) == 0
    assert filestate.part(st, "iostat", "iostat-x").is_file()
    hosts = store.connect(st).execute("SELECT DISTINCT host FROM iostat ORDER BY 1").fetchall()
    assert hosts == [("oss-test",), ("x",)]


def test_sigterm_while_waiting_to_restart(iostat, monitors, tmp_path):
    mon = monitors(tmp_path / "mon")
    pid = mon.iostat_pid()
    mon.wait_intervals(1)
    os.kill(pid, signal.SIGKILL)
    wait_for(lambda: "restarting in 1 s" in mon.text(), 5, "the monitor to see the death")
    assert mon.stop() == 0  # within the 1-s wait
    (gap,) = mon.records("gap")
    assert gap["reason"] == f"iostat (pid {pid}) killed by SIGKILL; not restarted: SIGTERM"
    (stop,) = mon.records("stop")
    assert stop["reason"] == "SIGTERM"
    assert mon.state()["iostat_pid"] is None


@pytest.mark.slow
def test_hung_iostat_is_killed_and_restarted(iostat, monitors, tmp_path):
    mon = monitors(tmp_path / "mon")
    pid = mon.iostat_pid()
    mon.wait_intervals(1)
    os.kill(pid, signal.SIGSTOP)  # alive, silent: hung
    new = mon.iostat_pid(other_than=(pid,), timeout=20)
    assert not alive(pid)
    mon.wait_intervals(1, after=now())
    assert mon.stop() == 0
    (gap,) = mon.records("gap")
    assert gap["reason"].startswith(f"no report from iostat (pid {pid}) for 8 s: killed")
    assert new != pid


@pytest.mark.slow
def test_monitor_killed_iostat_dies_too_and_a_new_monitor_appends(iostat, monitors, tmp_path):
    out = tmp_path / "mon"
    first = monitors(out)
    pid = first.iostat_pid()
    first.wait_intervals(2)
    first.stop(signal.SIGKILL)
    # iostat does not outlive its monitor (PR_SET_PDEATHSIG); every line written is whole.
    wait_for(lambda: not alive(pid), 5, f"iostat {pid} to die with its monitor")
    recs, problems = iostatimport.read_records(out)
    assert problems == [] and recs[-1]["type"] == "io"
    time.sleep(4)
    second = monitors(out)
    second.wait_intervals(2, after=now())
    # One monitor per DIR.
    third = monitors(out)
    assert third.proc.wait(15) == 2
    assert f"another iostat-mon (pid {second.proc.pid}) writes here" in third.text()
    assert second.stop(signal.SIGINT) == 0
    assert [r["type"] for r in iostatimport.read_records(out)[0]].count("start") == 2
    st = tmp_path / "store"
    assert main(["iostat-mon", "import", str(out), "--store", str(st)]) == 0
    g = iostatanalysis.gaps(store.read_table(st, "iostat"))
    assert list(g["reason"]) == ["no record (monitor not running)"]
    assert g["seconds"].iloc[0] >= 3


def test_device_filter(iostat, monitors, tmp_path):
    devices = real_devices(iostat)
    assert devices, "iostat reports no device here"
    first = devices[0]
    excluded = monitors(tmp_path / "excluded", "--exclude", first)
    only = monitors(tmp_path / "only", "--include", first[:2] + "*", "--exclude", "nomatch*")
    for m in (excluded, only):
        m.wait_reports(2)
        assert m.stop() == 0
    got_only = {r["device"] for r in only.records("io")}
    assert got_only and all(d.startswith(first[:2]) for d in got_only) and first in got_only
    got_excluded = {r["device"] for r in excluded.records("io")}
    assert first not in got_excluded
    assert got_excluded == set(devices) - {first} or not (set(devices) - {first})
    if not got_excluded:
        assert "no device selected by the patterns" in excluded.text()
    (start,) = excluded.records("start")
    assert start["exclude"] == [first] and start["include"] == []


@pytest.fixture
def loop_device(tmp_path):
    """A loop device over a file (root and losetup needed): a device whose I/O is the test's."""
    if os.geteuid() != 0 or not shutil.which("losetup"):
        pytest.skip("a loop device needs root and losetup (util-linux): bytes check skipped")
    backing = tmp_path / "loop.img"
    with open(backing, "wb") as f:
        f.truncate(64 << 20)
    dev = subprocess.run(
        ["losetup", "--find", "--show", str(backing)], capture_output=True, text=True, check=True
    ).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["losetup", "--detach", dev], check=False)


def test_bytes_recorded_match_writes_to_a_loop_device(iostat, monitors, tmp_path, loop_device):
    name = Path(loop_device).name
    mon = monitors(tmp_path / "mon", "--include", name)
    others = monitors(tmp_path / "others", "--exclude", "loop*")
    mon.iostat_pid()
    others.iostat_pid()
    time.sleep(1.5)
    written = 24 << 20
    buf = mmap.mmap(-1, 1 << 20)  # page-aligned, as O_DIRECT wants
    buf.write(b"\xa5" * (1 << 20))
    fd = os.open(loop_device, os.O_WRONLY | os.O_DIRECT)
    try:
        for _ in range(written >> 20):
            assert os.write(fd, buf) == 1 << 20
        os.fsync(fd)
    finally:
        os.close(fd)
    done = now()
    mon.wait_intervals(2, after=done + timedelta(seconds=1))
    others.wait_intervals(1, after=done + timedelta(seconds=1))
    assert mon.stop() == 0 and others.stop() == 0
    io = mon.records("io")
    assert {r["device"] for r in io} == {name}
    total = sum(r["write_bytes"] for r in io)
    # rate x nominal interval: iostat's intervals are not exactly 1 s
    assert abs(total - written) <= 0.05 * written, (total, written)
    assert not any(r["device"].startswith("loop") for r in others.records("io"))


def test_past_days_compressed_on_start(iostat, monitors, tmp_path):
    out = tmp_path / "mon"
    out.mkdir()
    old = [
        {
            "type": "io",
            "time": "2020-01-01T10:00:00Z",
            "host": "h",
            "device": "sdb",
            "seconds": 60.0,
            "read_bytes": 1,
            "write_bytes": 2,
        },
        {
            "type": "gap",
            "host": "h",
            "start": "2020-01-01T10:00:00Z",
            "end": "2020-01-01T10:05:00Z",
            "reason": "x",
        },
    ]
    text = "".join(json.dumps(r) + "\n" for r in old) + '{"type": "io", "ti'  # cut short
    (out / "2020-01-01.jsonl").write_text(text)
    mon = monitors(out)
    mon.wait_reports(1)
    assert mon.stop() == 0
    assert not (out / "2020-01-01.jsonl").exists()
    with gzip.open(out / "2020-01-01.jsonl.gz", "rt") as f:
        assert f.read() == text + "\n"
    recs, problems = iostatimport.read_records(out)
    assert recs[:2] == old
    assert len(problems) == 1 and "2020-01-01.jsonl.gz:3: not a JSON record" in problems[0]
    today = now().date().isoformat()
    assert (out / f"{today}.jsonl").exists() or (out / f"{today}.jsonl.gz").exists()


def test_cli_errors_name_the_problem(iostat, tmp_path, capsys):
    with pytest.raises(SystemExit) as exc:
        main(["iostat-mon", "--interval", "1"])
    assert exc.value.code == 2
    assert "--out DIR is required" in capsys.readouterr().err
    missing = tmp_path / "no-iostat"
    assert main(["iostat-mon", "--out", str(tmp_path / "m"), "--iostat", str(missing)]) == 2
    assert f"{missing}: not found (install sysstat" in capsys.readouterr().err
    assert main(["iostat-mon", "import", str(tmp_path / "nodir")]) == 2
    assert f"{tmp_path / 'nodir'}: no such directory" in capsys.readouterr().err


# -- the day files -------------------------------------------------------------------------------


def test_day_log_rolls_over_and_reopens_a_compressed_day(tmp_path):
    log = iostatdays.DayLog(tmp_path)
    d1 = datetime(2026, 1, 23, 23, 59, 30, tzinfo=timezone.utc)
    d2 = d1 + timedelta(minutes=1)
    log.write([{"n": 1}], d1)
    assert (tmp_path / "2026-01-23.jsonl").read_text() == '{"n":1}\n'
    log.write([{"n": 2}, {"n": 3}], d2)
    assert not (tmp_path / "2026-01-23.jsonl").exists()
    assert (tmp_path / "2026-01-24.jsonl").read_text() == '{"n":2}\n{"n":3}\n'
    log.write([{"n": 4}], d1)  # late: the compressed day gets one more gzip member
    log.write([{"n": 5}], d2)
    with gzip.open(tmp_path / "2026-01-23.jsonl.gz", "rt") as f:
        assert f.read() == '{"n":1}\n{"n":4}\n'
    end = datetime(2026, 1, 25, tzinfo=timezone.utc)
    assert log.roll(end + timedelta(seconds=30), grace=70) is None
    assert log.roll(end + timedelta(seconds=71), grace=70) == "2026-01-24"
    assert sorted(p.name for p in tmp_path.iterdir()) == [
        "2026-01-23.jsonl.gz",
        "2026-01-24.jsonl.gz",
    ]
    log.close()


def test_day_file_lines_out_of_the_limits_are_named_and_the_others_read(tmp_path):
    """A day file's lines nested too deep, with a number that is not finite, or too long are
    skipped with the file and line named (iostudy.core.jsonlimits); the lines around them are
    read."""
    good = [
        {
            "type": "io",
            "time": "2026-01-23T10:01:00Z",
            "host": "h",
            "device": "sdb",
            "seconds": 60.0,
            "read_bytes": 1,
            "write_bytes": 2,
        },
        {"type": "stop", "time": "2026-01-23T10:02:00Z", "reason": "SIGTERM"},
    ]
    long = '{"type": "io", "device": "' + "a" * jsonlimits.MAX_LINE + '"}'
    bad = ["[" * 100_000 + "]" * 100_000, '{"type": "io", "seconds": NaN}', long]
    path = tmp_path / "2026-01-23.jsonl"
    path.write_text("\n".join([json.dumps(good[0]), *bad, json.dumps(good[1])]) + "\n")
    recs, problems = iostatimport.read_records(tmp_path)
    assert recs == good
    assert problems == [
        f"{path}:2: not a JSON record: nested deeper than 32 levels",
        f"{path}:3: not a JSON record: NaN: not a finite number",
        f"{path}:4: not a JSON record: longer than {jsonlimits.MAX_LINE} bytes",
    ]


@pytest.mark.parametrize(
    ("field", "value", "named"),
    [
        ("read_bytes", 10**400, "read_bytes = 1000000000"),  # past int64: crashed the import
        ("write_bytes", -8, "write_bytes = -8"),
        ("seconds", 1e308, "seconds = 1e+308"),  # past timedelta: crashed the import
        ("read_iops", "many", "read_iops = 'many'"),
        ("device", 7, "device = 7"),
    ],
)
def test_an_io_record_the_store_refuses_is_skipped_and_named(tmp_path, capsys, field, value, named):
    """An io record whose value the store's rule refuses (iostudy.logs.plausibility, the rule
    of ingest and import) is skipped, named with its file and line; the others are imported."""
    good = {
        "type": "io",
        "time": "2026-01-23T10:01:00Z",
        "host": "h",
        "device": "sdb",
        "seconds": 60.0,
        "read_bytes": 1,
        "write_bytes": 2,
    }
    bad = {**good, "time": "2026-01-23T10:02:00Z", field: value}
    day = tmp_path / "mon" / "2026-01-23.jsonl"
    day.parent.mkdir()
    day.write_text(f"{json.dumps(good)}\n{json.dumps(bad)}\n")
    st = tmp_path / "store"
    assert main(["iostat-mon", "import", str(day.parent), "--store", str(st)]) == 0
    err = capsys.readouterr().err
    assert f"{day}:2: not an iostat-mon record: " in err and named in err, err
    assert store.read_table(st, "iostat")["end"].tolist() == [pd.Timestamp("2026-01-23 10:01")]


# -- analysis (seed 000 IV) on a table written by hand ---------------------------------------------


def table() -> pd.DataFrame:
    """Two hosts, 60-s intervals from 10:00 on 2026-01-23. Host a: sdb reads 60 MiB per
    interval (1 MiB/s), 600 MiB (10 MiB/s) in the one ending 10:05, sdc writes 30 MiB per
    interval (0.5 MiB/s), until 10:08; it stopped then (stop record) and has one more interval,
    10:15-10:16 (sdb only). Host b: sdb writes 150 MiB per interval (2.5 MiB/s) until 10:10,
    with no record 10:03-10:06 (a gap record), and one interval, 60 MiB, on the next day."""
    base = datetime(2026, 1, 23, 10, 0)
    mib = 1 << 20
    rows = []

    def io(host, dev, end, rb=0, wb=0):
        start = end - timedelta(seconds=60)
        rows.append(
            {
                "host": host,
                "device": dev,
                "kind": "io",
                "start": start,
                "end": end,
                "seconds": 60.0,
                "read_bytes": rb,
                "write_bytes": wb,
            }
        )

    for i in range(1, 11):
        end = base + timedelta(minutes=i)
        if i <= 8:
            io("a", "sdb", end, rb=600 * mib if i == 5 else 60 * mib)
            io("a", "sdc", end, wb=30 * mib)
        if not 4 <= i <= 6:
            io("b", "sdb", end, wb=150 * mib)
    rows.append(
        {
            "host": "b",
            "kind": "gap",
            "start": base + timedelta(minutes=3),
            "end": base + timedelta(minutes=6),
            "reason": "iostat died",
        }
    )
    rows.append(
        {
            "host": "a",
            "kind": "stop",
            "start": base + timedelta(minutes=8),
            "end": base + timedelta(minutes=8, seconds=20),
            "reason": "SIGTERM",
        }
    )
    io("a", "sdb", base + timedelta(minutes=16), rb=60 * mib)
    io("b", "sdb", datetime(2026, 1, 24, 0, 1), wb=60 * mib)
    return pd.DataFrame(rows)


def test_throughput_sums_hosts_per_minute():
    s = throughput = iostatanalysis.throughput(table())
    assert list(throughput.columns) == iostatanalysis.THROUGHPUT_COLUMNS
    at = s.set_index("time")
    t5 = pd.Timestamp("2026-01-23 10:04")  # the interval ending 10:05
    assert at.loc[t5, "read_mib_s"] == pytest.approx(10.0)
    assert at.loc[t5, "write_mib_s"] == pytest.approx(0.5)  # b has no record then
    t1 = pd.Timestamp("2026-01-23 10:00")
    assert at.loc[t1, ["read_mib_s", "write_mib_s", "hosts"]].tolist() == pytest.approx(
        [1.0, 3.0, 2]
    )
    # 10:00 to 10:09, 10:15 and 00:00 the next day
    assert len(s) == 12 and (s["bucket_s"] == 60).all()
    # no host recorded 10:10-10:15 nor 10:16 until the next day's first bucket
    assert devices.missing_spans(s) == [
        (pd.Timestamp("2026-01-23 10:10"), pd.Timestamp("2026-01-23 10:15")),
        (pd.Timestamp("2026-01-23 10:16"), pd.Timestamp("2026-01-24 00:00")),
    ]
    # 5-minute buckets: each host's rate over the seconds its intervals cover, hosts added.
    five = iostatanalysis.throughput(table(), bucket_s=300).set_index("time")
    # 10:00-10:05: a reads 4 x 60 + 600 MiB over 300 s; b writes 3 x 120 MiB over 180 s
    assert five.loc[t1, "read_mib_s"] == pytest.approx(840 / 300)
    assert five.loc[t1, "write_mib_s"] == pytest.approx(0.5 + 2.5)


def test_daily_totals_peaks_and_burstiness():
    tab = table()
    days = iostatanalysis.daily_totals(tab)
    assert list(days["day"]) == ["2026-01-23", "2026-01-24"]
    mib = 1 << 20
    d1 = days.iloc[0]
    assert d1["read_bytes"] == (8 * 60 + 600) * mib
    assert d1["write_bytes"] == (8 * 30 + 7 * 150) * mib
    # host-seconds covered: a 9 min, b 7 min, of 2 hosts x a day
    assert d1["recorded_pct"] == pytest.approx(100 * 16 * 60 / (2 * 86400))
    series = iostatanalysis.throughput(tab)
    p = iostatanalysis.peaks(series).set_index("direction")
    assert p.loc["read", "peak_mib_s"] == pytest.approx(10.0)
    assert p.loc["read", "at"] == pd.Timestamp("2026-01-23 10:04")
    assert p.loc["write", "peak_mib_s"] == pytest.approx(3.0)
    assert p.loc["total", "peak_mib_s"] == pytest.approx(10.5)
    # below a third of 10.5 MiB/s (3.5): 10:03 and 10:05 (a: 1.5), 10:08 and 10:09 (b: 2.5),
    # 10:15 and the next day (1.0); not 10:00-10:02, 10:06, 10:07 (4.0) and 10:04 (10.5)
    assert iostatanalysis.share_below(series) == pytest.approx(6 / 12)
    cdf = iostatanalysis.burstiness(series)
    assert cdf["fraction"].iloc[0] == 0 and cdf["fraction"].iloc[-1] == 1
    assert cdf["total_mib_s"].is_monotonic_increasing
    assert cdf["total_mib_s"].iloc[-1] == pytest.approx(10.5)
    assert cdf["pct_of_peak"].iloc[-1] == pytest.approx(100)
    s = iostatanalysis.summary(tab, series).set_index("metric")
    assert s.loc["time below a third of the peak total", "value"] == pytest.approx(50.0)
    assert s.loc["peak read over 60 s", "value"] == pytest.approx(10.0)
    assert s.loc["days with records", "value"] == 2


def test_gaps_explained_by_the_monitors_records():
    g = iostatanalysis.gaps(table())
    assert list(g["host"]) == ["b", "a", "b"]
    b_gap, a_stop, b_night = g.to_dict("records")
    assert (b_gap["start"], b_gap["end"]) == (
        pd.Timestamp("2026-01-23 10:03"),
        pd.Timestamp("2026-01-23 10:06"),
    )
    assert b_gap["reason"] == "iostat died" and b_gap["recorded"]
    # a's record stops at 10:08 (a stop record) and goes on at 10:15
    assert (a_stop["start"], a_stop["end"]) == (
        pd.Timestamp("2026-01-23 10:08"),
        pd.Timestamp("2026-01-23 10:15"),
    )
    assert a_stop["reason"] == "monitor stopped: SIGTERM" and not a_stop["recorded"]
    assert b_night["reason"] == "no record (monitor not running)" and not b_night["recorded"]
    assert b_night["seconds"] == pytest.approx((13 * 60 + 50) * 60)


def test_add_section_draws_figures_and_tables(tmp_path):
    calls = []

    def add(section, kind, ident, caption, df, fig=None, table=False, hide=()):
        calls.append((section, kind, ident, caption, df, fig))
        df.to_csv(tmp_path / f"{ident}.csv", index=False)
        if fig is not None:
            fig.savefig(tmp_path / f"{ident}.svg", format="svg")

    devices.add_section(add, {"iostat": table()})
    ids = [c[2] for c in calls]
    assert ids == [
        "iostat-throughput",
        "iostat-summary",
        "iostat-daily",
        "iostat-burstiness",
        "iostat-gaps",
    ]
    assert {c[0] for c in calls} == {devices.SECTION}
    for _, kind, ident, caption, df, fig in calls:
        assert caption.endswith(".") and "\n" not in caption
        assert len(df)
        assert (fig is not None) == (kind == "figure")
        if fig is not None:
            assert (tmp_path / f"{ident}.svg").stat().st_size > 5000
    fig6 = calls[0][5]
    assert [line.get_label() for line in fig6.axes[0].get_lines()] == ["read", "write"]
    assert len(fig6.axes[0].patches) == 2  # the spans without a record
    calls.clear()
    empty = pd.DataFrame(columns=store.TABLES["iostat"].names)
    devices.add_section(add, {"iostat": empty})
    assert calls == []
