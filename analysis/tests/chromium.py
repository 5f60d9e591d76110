"""Load a page in headless Chromium (Debian's package) and report what happened.

Drives the browser over the DevTools protocol on a pipe (``--remote-debugging-pipe``: fd 3
carries our commands, fd 4 the browser's replies and events, each message JSON ended by a NUL),
so no port, no websocket client and no extra package are needed. It collects every console
message, uncaught exception and log entry (failed resource loads appear there), and every
request the page made, then takes a screenshot.
"""

from __future__ import annotations

import base64
import io
import json
import os
import re
import select
import shutil
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

PACKAGE = "chromium"
# As root Chromium needs --no-sandbox; the network flags keep it from calling out (the machine
# has no network, and the report must not need one).
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-extensions",
    "--remote-debugging-pipe",
]


# A report page's budget (issue: reports that are verdicts): at 1,400 px wide, at most
# 15,000 px tall and 2 MB.
PAGE_WIDTH, PAGE_HEIGHT, PAGE_BYTES = 1400, 15_000, 2_000_000
#: a folder to keep each budget-checked page's full screenshot in (study-version-height.png)
SCREENSHOTS = "IOSTUDY_SCREENSHOTS"


def assert_within_budget(page, chromium: str | None = None) -> int:
    """The page, loaded whole at PAGE_WIDTH, is at most PAGE_HEIGHT tall and PAGE_BYTES big,
    without a console error, and none of its sections is empty; returns its height."""
    from PIL import Image

    load_ = load(page.resolve().as_uri(), width=PAGE_WIDTH, full_page=True, chromium=chromium)
    assert load_.errors() == [], page
    height = Image.open(io.BytesIO(load_.screenshot)).size[1]
    if shots := os.environ.get(SCREENSHOTS):  # to look at every page the tests check
        stem = "" if page.name == "index.html" else f"-{page.stem}"  # a job's, a project's
        name = f"{page.parent.parent.name}-{page.parent.name}{stem}-{height}px.png"
        (Path(shots) / name).write_bytes(load_.screenshot)
    assert height <= PAGE_HEIGHT, f"{page}: {height} px tall"
    assert page.stat().st_size <= PAGE_BYTES, f"{page}: {page.stat().st_size} bytes"
    assert_no_empty_section(page)
    return height


# Each table wider than the box that holds it (whose scroll bar then hides its last columns):
# [the id of its section, its width, the box's width].
OVERFLOWING_TABLES = """Array.from(document.querySelectorAll('table'))
  .filter(t => t.scrollWidth > t.parentElement.clientWidth + 1)
  .map(t => [t.closest('[id]')?.id || '', t.scrollWidth, t.parentElement.clientWidth])"""


def overflowing_tables(page, chromium: str | None = None) -> list:
    """The page's tables wider than their boxes at PAGE_WIDTH (OVERFLOWING_TABLES)."""
    load_ = load(
        page.resolve().as_uri(), width=PAGE_WIDTH, chromium=chromium, evaluate=OVERFLOWING_TABLES
    )
    assert load_.errors() == [], page
    return load_.value


def assert_no_empty_section(page) -> list[str]:
    """Every section of a report page shows something: a figure, a table, or the one line that
    names the command bringing its data (on a job's or a project's page: the line that says
    why a figure or table is not there); and no two elements share an id (a link to one would
    land on the other). Returns the sections' keys in page order."""
    html = page.read_text()
    outside_figures = re.sub(r"<svg.*?</svg>", "", html, flags=re.S)  # their ids are salted
    ids = re.findall(r'<[a-z]+ [^>]*?\bid="([^"]+)"', outside_figures)
    assert len(ids) == len(set(ids)), sorted({i for i in ids if ids.count(i) > 1})
    found = re.findall(r'<section id="section-([^"]+)">(.*?)</section>', html, flags=re.S)
    assert found, f"{page}: no section"
    for ident, body in found:
        shows = ["<svg", "<table", 'class="missing"']
        shows += ['class="caption note"'] if page.name != "index.html" else []
        assert any(s in body for s in shows), (page, ident)
    return [ident for ident, _ in found]


def verdict_at_top(page) -> dict:
    """The report's verdict as MANIFEST.json records it (``report``: kind, verdict, reasons),
    after checking that the page states the same word, and each reason, above its contents."""
    import html as html_mod

    report = json.loads((page.parent / "MANIFEST.json").read_text())["report"]
    text = page.read_text()
    top = html_mod.unescape(text[: text.index('<nav class="toc">')])
    assert f'<p class="word">{report["verdict"]}</p>' in top, page
    for reason in report["reasons"]:
        assert reason in top, (page, reason)
    return report


def assert_not_blank(png: bytes):
    """The screenshot shows a page with content: many colours, not mostly white."""
    import numpy as np  # the browser driving above needs no package; this check does
    from PIL import Image

    pixels = np.asarray(Image.open(io.BytesIO(png)).convert("RGB"))
    colours = np.unique(pixels.reshape(-1, 3), axis=0)
    non_white = (pixels < 245).any(axis=2).mean()
    assert len(colours) > 50, f"{len(colours)} distinct colours"
    assert non_white > 0.05, f"only {non_white:.1%} of the pixels are not white"


def find_chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


@dataclass
class PageLoad:
    console: list[dict] = field(default_factory=list)  # Runtime.consoleAPICalled params
    exceptions: list[dict] = field(default_factory=list)  # Runtime.exceptionThrown params
    log: list[dict] = field(default_factory=list)  # Log.entryAdded entries
    requests: list[str] = field(default_factory=list)  # URLs the page requested
    screenshot: bytes = b""
    value: object = None  # what the expression given to load() evaluated to

    def errors(self) -> list[str]:
        """Console errors and warnings, uncaught exceptions, error and warning log entries."""
        out = []
        for c in self.console:
            if c.get("type") in ("error", "assert", "warning"):
                text = " ".join(str(a.get("value", a.get("description", ""))) for a in c["args"])
                out.append(f"console.{c['type']}: {text}")
        for e in self.exceptions:
            d = e["exceptionDetails"]
            desc = (d.get("exception") or {}).get("description", "")
            out.append(f"exception: {d.get('text')} {desc} at {d.get('url')}:{d.get('lineNumber')}")
        for entry in self.log:
            if entry.get("level") in ("error", "warning"):
                out.append(f"log {entry['level']}: {entry.get('text')} {entry.get('url', '')}")
        return out


class _Pipe:
    def __init__(self, write_fd: int, read_fd: int, events: list):
        self.w, self.r, self.events = write_fd, read_fd, events
        self.buf = b""
        self.next_id = 0

    def _recv(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError("no answer from chromium")
            if select.select([self.r], [], [], left)[0]:
                chunk = os.read(self.r, 1 << 20)
                if not chunk:
                    raise EOFError("chromium closed the DevTools pipe")
                self.buf += chunk
        message, self.buf = self.buf.split(b"\0", 1)
        return json.loads(message)

    def call(self, method: str, params=None, session=None, timeout=30.0) -> dict:
        self.next_id += 1
        message = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            message["sessionId"] = session
        os.write(self.w, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + timeout
        while True:
            reply = self._recv(deadline)
            if reply.get("id") == self.next_id:
                if "error" in reply:
                    raise RuntimeError(f"{method}: {reply['error']}")
                return reply.get("result", {})
            self.events.append(reply)

    def wait_for(self, method: str, timeout=30.0) -> None:
        deadline = time.monotonic() + timeout
        while not any(e.get("method") == method for e in self.events):
            self.events.append(self._recv(deadline))

    def drain(self, seconds: float) -> None:
        """Collect the events that arrive within the next seconds (late console output)."""
        deadline = time.monotonic() + seconds
        try:
            while True:
                self.events.append(self._recv(deadline))
        except TimeoutError:
            pass


def load(  # noqa: C901
    url: str,
    width=1280,
    height=900,
    full_page=False,
    chromium: str | None = None,
    evaluate: str | None = None,
) -> PageLoad:
    """Open url in a fresh headless Chromium; returns what happened and a PNG screenshot, and
    the value of the JavaScript expression ``evaluate`` (JSON-able) once the page loaded."""
    binary = chromium or find_chromium()
    if not binary:
        raise FileNotFoundError(f"chromium not found: install Debian's package {PACKAGE}")
    cmd_r, cmd_w = os.pipe()  # our commands -> the browser's fd 3
    ev_r, ev_w = os.pipe()  # the browser's fd 4 -> its replies

    def child_fds():
        # dup first, so that neither dup2 closes the other's source; then clear close-on-exec
        # (a dup that lands on 3 or 4 itself makes its dup2 a no-op that keeps the flag).
        a, b = os.dup(cmd_r), os.dup(ev_w)
        os.dup2(a, 3)
        os.dup2(b, 4)
        os.set_inheritable(3, True)
        os.set_inheritable(4, True)

    # stderr to a file: a pipe nobody reads while the page loads could fill and stall the browser.
    with (
        tempfile.TemporaryDirectory(prefix="iostudy-chromium-") as profile,
        tempfile.TemporaryFile() as stderr_file,
    ):
        proc = subprocess.Popen(
            [binary, *FLAGS, f"--user-data-dir={profile}", f"--window-size={width},{height}"],
            preexec_fn=child_fds,
            close_fds=False,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=stderr_file,
        )
        os.close(cmd_r)
        os.close(ev_w)
        events: list[dict] = []
        pipe = _Pipe(cmd_w, ev_r, events)
        result = PageLoad()
        try:
            target = pipe.call("Target.createTarget", {"url": "about:blank"})
            session = pipe.call(
                "Target.attachToTarget", {"targetId": target["targetId"], "flatten": True}
            )["sessionId"]
            for domain in ("Runtime", "Log", "Page", "Network"):
                pipe.call(f"{domain}.enable", session=session)
            pipe.call(
                "Emulation.setDeviceMetricsOverride",
                {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False},
                session=session,
            )
            pipe.call("Page.navigate", {"url": url}, session=session)
            pipe.wait_for("Page.loadEventFired")
            pipe.drain(0.5)
            if evaluate:
                found = pipe.call(
                    "Runtime.evaluate",
                    {"expression": evaluate, "returnByValue": True},
                    session=session,
                )
                result.value = found["result"].get("value")
            params = {"format": "png"}
            if full_page:
                size = pipe.call("Page.getLayoutMetrics", session=session)["cssContentSize"]
                params |= {
                    "captureBeyondViewport": True,
                    "clip": {"x": 0, "y": 0, "width": width, "height": size["height"], "scale": 1},
                }
            shot = pipe.call("Page.captureScreenshot", params, session=session)
            result.screenshot = base64.b64decode(shot["data"])
            try:
                pipe.call("Browser.close", timeout=10)
            except (EOFError, TimeoutError):
                pass
        except (EOFError, TimeoutError, BrokenPipeError) as exc:  # the browser is gone
            proc.kill()
            proc.wait()
            stderr_file.seek(0)
            stderr = stderr_file.read().decode(errors="replace")
            raise RuntimeError(f"chromium failed: {exc}\n{stderr[-2000:]}") from exc
        finally:
            os.close(cmd_w)
            os.close(ev_r)
            try:
                proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
    for e in events:
        method, params = e.get("method"), e.get("params", {})
        if method == "Runtime.consoleAPICalled":
            result.console.append(params)
        elif method == "Runtime.exceptionThrown":
            result.exceptions.append(params)
        elif method == "Log.entryAdded":
            result.log.append(params["entry"])
        elif method == "Network.requestWillBeSent":
            result.requests.append(params["request"]["url"])
    return result
