"""The smoke book in a real browser: headless Chromium opens every page.

A page fails on a broken image or a figure without one, math that MathJax did not
typeset, an interactive table (itables) that never loaded, a JavaScript error (exception or console error), or any request that leaves the
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
  const loading = [...main.querySelectorAll('table')].filter(t => !t.hidden && t.textContent.includes('Loading ITables'))
                    .map(t => t.id);
  return {broken, empty, untyped, loading, maths: maths.length, figures: main.querySelectorAll('figure').length};
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
    # and until every interactive table (itables) has replaced its "Loading ITables" placeholder
    tools.call("Runtime.evaluate", awaitPromise=True, expression=(
        "(async () => { for (let i = 0; i < 400; i++) { if (![...document.querySelectorAll('table')].some("
        "t => !t.hidden && t.textContent.includes('Loading ITables'))) return; "
        "await new Promise(r => setTimeout(r, 50)); } })()"))
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
    problems += [f"interactive table never loaded DataTables: {t}" for t in result["loading"]]
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


# Waits poll for the state each step must reach (bounded at 10 s), never a fixed pause: a loaded machine only
# makes them slower, and a step that never lands fails on the assertion that follows.
UNTIL = """
  const sleep = ms => new Promise(r => setTimeout(r, ms));
  const until = async (done) => { for (let i = 0; i < 400 && !done(); i++) await sleep(25); };
"""

SORT_AND_FILTER = """(async () => {""" + UNTIL + """
  const table = document.getElementById(%(id)s);
  for (let i = 0; i < 200 && !(table && table.classList.contains('dataTable')); i++) await sleep(50);
  if (!table || !table.classList.contains('dataTable')) return {interactive: false};
  const box = table.closest('.dt-container');
  const length = box.querySelector('select');
  const rows = () => table.querySelectorAll('tbody tr').length;
  // "Showing 1 to N of N entries": the last two numbers agree once every row is on the page
  const allShown = () => { const n = (box.querySelector('.dt-info') || {textContent: ''}).textContent
    .replace(/,/g, '').match(/\\d+/g) || []; return n.length >= 2 && n[n.length - 1] === n[n.length - 2]
    && rows() === +n[n.length - 1]; };
  if (length) {  // every row on one page
    length.value = length.options[length.options.length - 1].value;
    length.dispatchEvent(new Event('change', {bubbles: true}));
    await until(allShown);
  }
  const header = [...table.querySelectorAll('thead th')];
  const column = header.findIndex(th => th.textContent.trim() === %(column)s);
  const cells = () => [...table.querySelectorAll('tbody tr')].map(r => r.cells[column].textContent.trim());
  const same = (a, b) => a.length === b.length && a.every((x, i) => x === b[i]);
  const before = cells();
  header[column].click();
  await until(() => !same(cells(), before));
  const up = cells();
  header[column].click();
  await until(() => !same(cells(), up));
  const down = cells();
  const search = box.querySelector('input[type=search]');
  search.value = %(word)s;
  search.dispatchEvent(new Event('input', {bubbles: true}));
  await until(() => rows() < before.length);
  const kept = [...table.querySelectorAll('tbody tr')].map(r => r.textContent);
  return {interactive: true, column, before, up, down, kept,
          fallback_hidden: document.getElementById(%(id)s + '_fallback').hidden};
})()"""

PLAIN_TABLE = """(() => {
  const box = document.getElementById(%(id)s + '_fallback');
  return {hidden: box.hidden || box.offsetHeight === 0, rows: box.querySelectorAll('tbody tr').length,
          interactive_hidden: document.getElementById(%(id)s).hidden, caption: box.textContent.includes('CSV')};
})()"""


def _run(tools: DevTools, expression: str) -> dict:
    out = tools.call("Runtime.evaluate", expression=expression, awaitPromise=True, returnByValue=True)
    if "exceptionDetails" in out:
        raise RuntimeError(out["exceptionDetails"])
    return out["result"]["value"]


def test_ledger_sorts_filters_and_reads_without_javascript(browser, smoke_book):
    """The claims ledger is a sortable, filterable table (itables, offline, no request leaves the
    machine): a click on the header `id` reorders the rows by id, the search box keeps only the rows that mention
    a word; with JavaScript off the page shows the plain table, every claim and the CSV link in it."""
    import pandas as pd

    _, html, _ = smoke_book
    page = html / "book" / "claims.html"
    seen = _visit(browser, page)
    assert not seen["problems"], seen["problems"]
    table = json.dumps("T_tab-claims-ledger")
    got = _run(browser, SORT_AND_FILTER % {"id": table, "column": json.dumps("id"), "word": json.dumps("supported")})
    n_claims = len(pd.read_csv(html / "tables" / "claims.csv"))
    assert got["interactive"] and got["fallback_hidden"] and got["column"] == 0, got
    assert len(got["before"]) == n_claims > 1 and sorted(got["up"]) == sorted(got["before"]), got
    assert got["up"] != got["before"] and got["down"] == got["up"][::-1], got  # sorted one way, then the other
    assert 0 < len(got["kept"]) < n_claims and all("supported" in row for row in got["kept"]), got["kept"]
    browser.call("Emulation.setScriptExecutionDisabled", value=True)
    try:
        browser.events.clear()
        browser.call("Page.navigate", url=page.as_uri())
        browser.wait_for("Page.loadEventFired")
        plain = _run(browser, PLAIN_TABLE % {"id": table})
    finally:
        browser.call("Emulation.setScriptExecutionDisabled", value=False)
    assert not plain["hidden"] and plain["interactive_hidden"] and plain["caption"], plain
    assert plain["rows"] == n_claims, plain


IN_VIEW = """(() => {
  const caption = [...document.querySelectorAll('main table caption, main table tfoot, main table thead tr')]
    .find(c => c.textContent.includes(%(label)s) && c.closest('table').offsetParent !== null);
  if (!caption) return {found: false};
  const table = caption.closest('table');
  const th = [...table.querySelectorAll('thead th')].find(h => h.textContent.trim() === %(column)s);
  if (!th) return {found: true, column: false};
  const cell = th.getBoundingClientRect();
  const clips = [];
  for (let box = th.parentElement; box && box !== document.body; box = box.parentElement) {
    const style = getComputedStyle(box), edge = box.getBoundingClientRect();
    if (style.overflowX !== 'visible' && (cell.right > edge.right + 1 || cell.left < edge.left - 1))
      clips.push(box.className || box.tagName);
  }
  const article = document.querySelector('.bd-article').getBoundingClientRect();
  return {found: true, column: true, clips, right: cell.right, page_right: article.right};
})()"""

SORT_BY = """(async () => {""" + UNTIL + """
  const table = document.getElementById(%(id)s);
  for (let i = 0; i < 200 && !(table && table.classList.contains('dataTable')); i++) await sleep(50);
  const header = [...table.querySelectorAll('thead th')];
  const column = header.findIndex(th => th.textContent.trim() === %(column)s);
  const before = [...table.querySelectorAll('tbody tr')].map(r => r.cells[1].textContent.trim());
  const sectionsBefore = [...table.querySelectorAll('tbody tr')].map(r => r.cells[0].textContent.trim());
  header[column].click();
  const models = () => [...table.querySelectorAll('tbody tr')].map(r => r.cells[1].textContent.trim());
  await until(() => models().join('\\n') !== before.join('\\n'));
  const rows = [...table.querySelectorAll('tbody tr')];
  return {before, sectionsBefore, sections: rows.map(r => r.cells[0].textContent.trim()), models: rows.map(r => r.cells[1].textContent.trim())};
})()"""


def test_leaderboard_sorts_within_its_sections(browser, smoke_book):
    """Table 2 opens in the table's own order (ranked by Overall, then the null controls), and sorts by
    Overall within its sections: the null controls stay below the reward models, never ranked with them."""
    import pandas as pd

    _, html, _ = smoke_book
    _visit(browser, html / "book" / "evaluation.html")
    got = _run(browser, SORT_BY % {"id": json.dumps("T_paper-table2"), "column": json.dumps("Overall")})
    # the download is named after whose numbers it holds (simulated-*), the page label stays paper-table2
    assert got["before"] == list(pd.read_csv(html / "tables" / "simulated-table2.csv")["model"]), got["before"]
    sections = list(dict.fromkeys(got["sectionsBefore"]))
    assert len(sections) == 2 and got["sections"] == sorted(got["sectionsBefore"], key=sections.index), got
    assert sorted(got["models"]) == sorted(got["before"]) and got["models"] != got["before"], got


KEY_COLUMNS = [("evaluation", "paper-table2", "Overall"), ("conflicts", "paper-table5", "difference"),
               ("data", "paper-table1", "ours"), ("evaluation", "tab-evaluation-claims", "paper"),
               ("downstream", "tab-downstream-models", "Human win rate")]


def test_key_columns_are_in_view_at_1280_px(browser, smoke_book):
    """At a 1280 px window, the column that matters in each wide table is on screen without a sideways
    scroll: Overall in Table 2, the difference in Table 5, ours in Table 1, the paper's numbers beside the evaluation
    chapter's claims, the win rate beside every reward model of Fig. 5."""
    _, html, _ = smoke_book
    browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1000, deviceScaleFactor=1, mobile=False)
    try:
        report = {}
        for chapter, label, column in KEY_COLUMNS:
            _visit(browser, html / "book" / f"{chapter}.html")
            seen = _run(browser, IN_VIEW % {"label": json.dumps(label), "column": json.dumps(column)})
            if not (seen["found"] and seen["column"] and not seen["clips"] and seen["right"] <= seen["page_right"] + 1):
                report[f"{label}/{column}"] = seen
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert not report, report


EVERY_KEY_IN_VIEW = """(() => {
  const width = window.innerWidth;
  const tables = [...document.querySelectorAll('main div.cell_output table')]
    .filter(t => t.offsetParent !== null && t.querySelector('thead th'));
  const report = [];
  for (const table of tables) {
    const caption = (table.querySelector('caption') || {textContent: ''}).textContent.trim().slice(-60);
    const key = table.dataset.keyColumn;
    if (!key) { report.push({caption, problem: 'no data-key-column'}); continue; }
    const rows = [...table.querySelectorAll('thead tr')];
    const th = [...rows[rows.length - 1].querySelectorAll('th')].concat([...table.querySelectorAll('thead th')])
      .find(h => h.textContent.trim() === key);
    if (!th) { report.push({caption, key, problem: 'no header cell with that text'}); continue; }
    const cell = th.getBoundingClientRect();
    let right = Math.min(width, document.querySelector('.bd-article').getBoundingClientRect().right);
    for (let box = th.parentElement; box && box !== document.body; box = box.parentElement)
      if (getComputedStyle(box).overflowX !== 'visible') right = Math.min(right, box.getBoundingClientRect().right);
    if (cell.left < 0 || cell.right > right + 1) report.push({caption, key, right: cell.right, visible_to: right});
  }
  return {tables: tables.length, report};
})()"""


def test_every_tables_key_column_is_in_view_at_1280_px(browser, smoke_book):
    """At a 1280 px window, every table of every chapter page shows its key column (named by ``data-key-column``,
    which ``publish.table`` writes: Overall, else the first result after the row label) without a sideways scroll of
    the page or of the table's own box; a table the library did not mark fails too."""
    _, html, _ = smoke_book
    browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1000, deviceScaleFactor=1, mobile=False)
    try:
        report, tables = {}, 0
        for page in sorted((html / "book").glob("*.html")):
            _visit(browser, page)
            seen = _run(browser, EVERY_KEY_IN_VIEW)
            tables += seen["tables"]
            if seen["report"]:
                report[page.name] = seen["report"]
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert tables >= 10 and not report, json.dumps(report, indent=1, ensure_ascii=False)


LEDGER_SHAPE = """(() => {
  const tables = [...document.querySelectorAll('main table')].filter(t => t.offsetParent !== null);
  const ledgers = tables.filter(t => /tab-claims-(ledger|csv)/.test(t.textContent.slice(0, 400)) &&
                                     t.querySelector('tbody tr'));
  const rows = ledgers.flatMap(t => [...t.querySelectorAll('tbody tr')].map(r => r.getBoundingClientRect().height));
  return {ledgers: ledgers.length, tallest: Math.max(...rows), rows: rows.length,
          details: ledgers.length ? ledgers[0].querySelectorAll('details:not([open])').length : 0};
})()"""


def test_claims_page_shows_the_ledger_once_and_compactly(browser, smoke_book):
    """The Claims page shows the ledger once (tables/claims.csv is a download, not a second table), each
    claim on a short row, its long texts in a closed <details> per row."""
    _, html, _ = smoke_book
    browser.call("Emulation.setDeviceMetricsOverride", width=1280, height=1000, deviceScaleFactor=1, mobile=False)
    try:
        _visit(browser, html / "book" / "claims.html")
        seen = _run(browser, LEDGER_SHAPE)
    finally:
        browser.call("Emulation.clearDeviceMetricsOverride")
    assert seen["ledgers"] == 1 and seen["rows"] >= 1 and seen["details"] == seen["rows"], seen
    assert seen["tallest"] < 320, seen  # a reason in its own column made rows over 1,000 px tall
