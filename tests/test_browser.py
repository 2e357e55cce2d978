"""The smoke book in a real browser: headless Chromium opens every page.

A page fails on a broken image or a figure without one, math that MathJax did not
typeset, a JavaScript error (exception or console error), or any request that leaves the
machine (every asset must be a local file). Chromium is driven over the DevTools protocol;
`.ci/run` installs the Debian package, elsewhere the test skips with the reason.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

pytestmark = pytest.mark.book

CHROMIUM = next((p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p), None)
LOCAL_SCHEMES = ("file:", "data:", "blob:", "about:")

CHECK_PAGE = """(() => {
  const main = document.querySelector('main') || document.body;
  const broken = [...document.images].filter(i => !i.complete || i.naturalWidth === 0).map(i => i.src);
  const empty = [...main.querySelectorAll('figure')].filter(f => !f.querySelector('img, svg, object'))
                  .map(f => f.id || f.textContent.slice(0, 60));
  const maths = [...main.querySelectorAll('.math')];
  const untyped = maths.filter(m => !m.querySelector('mjx-container')).map(m => m.textContent.slice(0, 60));
  return {broken, empty, untyped, maths: maths.length, figures: main.querySelectorAll('figure').length};
})()"""


class DevTools:
    """A minimal DevTools-protocol client for one page target."""

    def __init__(self, ws_url: str):
        import websocket

        self.ws = websocket.create_connection(ws_url, timeout=60, suppress_origin=True)
        self.next_id = 0
        self.events: list[dict] = []

    def call(self, method: str, **params) -> dict:
        self.next_id += 1
        self.ws.send(json.dumps({"id": self.next_id, "method": method, "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == self.next_id:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            self.events.append(msg)

    def wait_for(self, method: str, timeout: float = 60) -> dict:
        end = time.time() + timeout
        while time.time() < end:
            for i, ev in enumerate(self.events):
                if ev.get("method") == method:
                    return self.events.pop(i)
            self.events.append(json.loads(self.ws.recv()))
        raise TimeoutError(method)


@pytest.fixture(scope="module")
def browser(tmp_path_factory):
    if CHROMIUM is None:
        pytest.skip("headless Chromium is not installed (apt-get install chromium; .ci/run does this)")
    profile = tmp_path_factory.mktemp("chromium")
    proc = subprocess.Popen([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                             "--disable-background-networking", "--disable-component-update", "--disable-sync",
                             "--disable-default-apps", "--disable-extensions", "--allow-file-access-from-files",
                             f"--user-data-dir={profile}", "--remote-debugging-port=0", "about:blank"],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    port_file = profile / "DevToolsActivePort"
    for _ in range(1200):  # a start-up wait, generous so that a loaded machine cannot fail it
        if port_file.exists() and port_file.read_text().strip():
            break
        time.sleep(0.1)
    else:
        proc.kill()
        pytest.fail("Chromium did not open its DevTools port in 120 s")
    port = port_file.read_text().split()[0]
    targets = json.load(urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list"))
    page = next(t for t in targets if t["type"] == "page")
    tools = DevTools(page["webSocketDebuggerUrl"])
    for domain in ("Page", "Runtime", "Network", "Log"):
        tools.call(f"{domain}.enable")
    yield tools
    tools.ws.close()
    proc.kill()
    proc.wait()


def _visit(tools: DevTools, path: Path) -> dict:
    tools.events.clear()
    tools.call("Page.navigate", url=path.as_uri())
    tools.wait_for("Page.loadEventFired")
    # wait until MathJax (if the page loads it) has typeset everything
    tools.call("Runtime.evaluate", awaitPromise=True, expression=(
        "(async () => { if (window.MathJax && MathJax.startup && MathJax.startup.promise) "
        "await MathJax.startup.promise; })()"))
    out = tools.call("Runtime.evaluate", expression=CHECK_PAGE, returnByValue=True)
    if "exceptionDetails" in out:
        raise RuntimeError(f"{path}: the page check failed: {out['exceptionDetails']}")
    result = out["result"]["value"]
    problems = []
    for ev in tools.events:
        m, p = ev.get("method"), ev.get("params", {})
        if m == "Network.requestWillBeSent" and not p["request"]["url"].startswith(LOCAL_SCHEMES):
            problems.append(f"network request to {p['request']['url']}")
        elif m == "Runtime.exceptionThrown":
            problems.append(f"JavaScript exception: {p['exceptionDetails'].get('exception', {}).get('description') or p['exceptionDetails'].get('text')}")
        elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
            problems.append("console error: " + " ".join(str(a.get("value", a.get("description", ""))) for a in p["args"]))
        elif m == "Log.entryAdded" and p["entry"]["level"] == "error":
            problems.append(f"browser error: {p['entry']['text']} {p['entry'].get('url', '')}")
        elif m == "Network.loadingFailed" and not p.get("canceled"):
            problems.append(f"failed to load a resource: {p.get('errorText')}")
    problems += [f"broken image {src}" for src in result["broken"]]
    problems += [f"figure without an image: {f}" for f in result["empty"]]
    problems += [f"math not typeset: {t}" for t in result["untyped"]]
    return {"problems": problems, **result}


def test_every_page_renders_in_chromium(browser, smoke_book):
    """Every smoke-book page renders in Chromium without problems, with real maths and figures."""
    _, html, _ = smoke_book
    pages = [p for p in sorted(html.glob("*.html")) + sorted((html / "book").glob("*.html"))
             if 'http-equiv="Refresh"' not in p.read_text(encoding="utf-8")]  # index.html only redirects
    assert len(pages) >= 12
    report, maths, figures = {}, 0, 0
    for page in pages:
        seen = _visit(browser, page)
        maths, figures = maths + seen["maths"], figures + seen["figures"]
        if seen["problems"]:
            report[str(page.relative_to(html))] = seen["problems"]
    assert not report, json.dumps(report, indent=1, ensure_ascii=False)
    assert maths >= 2 and figures >= 11  # the checks saw real math and real figures


def test_every_real_page_renders_in_chromium(browser, real_book):
    """The ``real-smoke`` book (every chapter on data/real) renders in Chromium without problems."""
    _, html, _ = real_book
    pages = sorted((html / "book").glob("*.html"))
    report = {str(p.relative_to(html)): seen["problems"] for p in pages if (seen := _visit(browser, p))["problems"]}
    assert len(pages) >= 12 and not report, json.dumps(report, indent=1, ensure_ascii=False)
