#!/usr/bin/env python
"""Open a run's report.html in headless Chromium (the Debian package, /usr/bin/chromium),
check it and save a full-page screenshot (the README's docs/report.png).

Talks the Chrome DevTools Protocol over ``--remote-debugging-pipe`` (fds 3 and 4): no
driver, no websocket library, nothing downloaded.  ``inspect_report`` returns what the
browser saw: every ``<img>`` with its natural size (0 = it did not load), console errors
(console.error, uncaught exceptions, log entries of level error: Selenium's SEVERE), the
``<h2>`` section titles and figure captions, and writes the PNG.

    python scripts/report_screenshot.py                       # a short default run -> docs/report.png
    python scripts/report_screenshot.py --run runs/rzero-... --out /tmp/report.png
"""
from __future__ import annotations

import argparse
import base64
import fcntl
import json
import os
import select
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = os.environ.get("COEVO_CHROMIUM", "/usr/bin/chromium")
# the run behind docs/report.png: one short round of the default preset (about a minute on 2 cores)
SCREENSHOT_RUN = ["--set", "rzero.rounds=1", "--set", "rzero.challenger_steps=2", "--set", "rzero.solver_steps=3",
                  "--set", "rzero.challenger_prompts=16", "--set", "rzero.n_candidates=64",
                  "--set", "rzero.solver_prompts=16", "--set", "world.eval_per_level=20"]


class BrowserError(Exception):
    pass


class Chromium:
    """Headless Chromium driven over the DevTools pipe; one page target (``self.session``)."""

    def __init__(self, binary: str = CHROMIUM, width: int = 1200, height: int = 900, timeout_s: float = 60) -> None:
        if not Path(binary).is_file():
            raise BrowserError(f"no browser at {binary} (apt-get install chromium)")
        self.timeout_s, self.next_id, self.buf, self.events = timeout_s, 0, b"", []
        self.profile = tempfile.mkdtemp(prefix="coevo-chromium-")
        to_child, self.w = os.pipe()  # the browser reads commands on fd 3
        self.r, from_child = os.pipe()  # and writes replies / events on fd 4

        def fds() -> None:  # in the child: the pipe ends on fds 3 and 4 (via fds >= 10: no clash)
            a, b = fcntl.fcntl(to_child, fcntl.F_DUPFD, 10), fcntl.fcntl(from_child, fcntl.F_DUPFD, 10)
            os.dup2(a, 3)
            os.dup2(b, 4)

        args = [binary, "--headless=new", "--remote-debugging-pipe", "--no-sandbox", "--disable-gpu",
                "--disable-dev-shm-usage", "--no-first-run", "--no-default-browser-check", "--disable-extensions",
                "--hide-scrollbars", f"--user-data-dir={self.profile}", f"--window-size={width},{height}",
                "about:blank"]
        self.proc = subprocess.Popen(args, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL, pass_fds=(3, 4), preexec_fn=fds,
                                     start_new_session=True)
        os.close(to_child)
        os.close(from_child)
        target = self.call("Target.createTarget", {"url": "about:blank"})["targetId"]
        self.session = self.call("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        for domain in ("Page", "Runtime", "Log"):
            self.call(f"{domain}.enable", session=True)

    # ------------------------------------------------------------------ protocol
    def _read(self, deadline: float) -> dict:
        while b"\0" not in self.buf:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([self.r], [], [], left)[0]:
                raise BrowserError(f"no answer from the browser within {self.timeout_s:.0f} s")
            chunk = os.read(self.r, 1 << 20)
            if not chunk:
                raise BrowserError(f"the browser exited (code {self.proc.poll()})")
            self.buf += chunk
        msg, _, self.buf = self.buf.partition(b"\0")
        return json.loads(msg)

    def call(self, method: str, params: dict | None = None, session: bool = False) -> dict:
        self.next_id += 1
        msg = {"id": self.next_id, "method": method, "params": params or {}}
        if session:
            msg["sessionId"] = self.session
        os.write(self.w, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + self.timeout_s
        while True:
            m = self._read(deadline)
            if m.get("id") == self.next_id:
                if "error" in m:
                    raise BrowserError(f"{method}: {m['error'].get('message')}")
                return m.get("result", {})
            self.events.append(m)

    def wait_event(self, method: str) -> dict:
        deadline = time.monotonic() + self.timeout_s
        for i, m in enumerate(self.events):
            if m.get("method") == method:
                return self.events.pop(i)
        while True:
            m = self._read(deadline)
            if m.get("method") == method:
                return m
            self.events.append(m)

    def evaluate(self, expression: str):
        r = self.call("Runtime.evaluate", {"expression": expression, "returnByValue": True, "awaitPromise": True},
                      session=True)
        if "exceptionDetails" in r:
            raise BrowserError(f"script failed: {r['exceptionDetails'].get('text')}")
        return r["result"].get("value")

    # ------------------------------------------------------------------ page
    def open(self, url: str) -> None:
        self.call("Page.navigate", {"url": url}, session=True)
        self.wait_event("Page.loadEventFired")

    def console_errors(self) -> list[str]:
        """Error-level messages so far: console.error / assert, uncaught exceptions, log entries."""
        out = []
        for m in self.events:
            p, meth = m.get("params", {}), m.get("method")
            if meth == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(f"exception: {d.get('exception', {}).get('description') or d.get('text')}")
            elif meth == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
                out.append("console." + p["type"] + ": " + " ".join(str(a.get("value", a.get("description")))
                                                                    for a in p.get("args", [])))
            elif meth == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                e = p["entry"]
                out.append(f"log ({e.get('source')}): {e.get('text')} {e.get('url', '')}".strip())
        return out

    def screenshot(self, path: Path, width: int = 1200) -> tuple[int, int]:
        """A PNG of the whole page (beyond the viewport); returns its CSS size."""
        size = self.call("Page.getLayoutMetrics", session=True)["cssContentSize"]
        w, h = int(max(width, size["width"])), int(size["height"])
        shot = self.call("Page.captureScreenshot", {"format": "png", "captureBeyondViewport": True,
                                                    "clip": {"x": 0, "y": 0, "width": w, "height": h, "scale": 1}},
                         session=True)
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_bytes(base64.b64decode(shot["data"]))
        return w, h

    def close(self) -> None:
        try:
            self.call("Browser.close")
        except (BrowserError, OSError):
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            os.killpg(self.proc.pid, 9)
            self.proc.wait()
        for fd in (self.r, self.w):
            try:
                os.close(fd)
            except OSError:
                pass
        shutil.rmtree(self.profile, ignore_errors=True)


PAGE_FACTS = """(async () => {
  const imgs = Array.from(document.images);
  await Promise.all(imgs.map(i => i.decode().catch(() => null)));
  return {
    images: imgs.map(i => ({alt: i.alt, natural_width: i.naturalWidth, natural_height: i.naturalHeight,
                            src: i.src.slice(0, 40)})),
    sections: Array.from(document.querySelectorAll('h2')).map(h => h.textContent.trim()),
    captions: Array.from(document.querySelectorAll('figcaption')).map(c => c.textContent.trim()),
    notes: Array.from(document.querySelectorAll('.note')).map(c => c.textContent.trim()),
    title: document.title,
  };
})()"""


def inspect_report(report: Path, png: Path | None = None, binary: str = CHROMIUM) -> dict:
    """What headless Chromium sees of ``report`` (see the module doc); the screenshot to ``png``."""
    b = Chromium(binary)
    try:
        b.open(Path(report).resolve().as_uri())
        facts = b.evaluate(PAGE_FACTS)
        facts["console_errors"] = b.console_errors()
        if png is not None:
            facts["screenshot"] = {"path": str(png), "size": list(b.screenshot(png))}
    finally:
        b.close()
    facts["broken_images"] = [i for i in facts["images"] if not i["natural_width"]]
    return facts


def main(argv=None) -> dict:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--run", type=Path, help="run directory (default: a short run of the default preset)")
    ap.add_argument("--out", type=Path, default=ROOT / "docs" / "report.png")
    a = ap.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="coevo-shot-") as tmp:
        run = a.run
        if run is None:
            run = Path(tmp) / "rzero"
            subprocess.run([sys.executable, "-m", "coevo.cli", "run", "-q", "--out", str(run), *SCREENSHOT_RUN],
                           check=True, cwd=ROOT)
        if not (run / "report.html").is_file():
            sys.exit(f"no report.html in {run}")
        facts = inspect_report(run / "report.html", a.out)
    res = {k: facts[k] for k in ("screenshot", "sections", "broken_images", "console_errors")}
    print(json.dumps(res, indent=1))
    if facts["broken_images"] or facts["console_errors"]:
        sys.exit(1)
    return res


if __name__ == "__main__":
    main()
