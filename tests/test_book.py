"""The book pipeline: every chapter runs with the smoke profile and the book renders."""
from __future__ import annotations

import hashlib
import json
import re
import shutil

import pytest

from cheems_lib.book import BookInputError, ChapterFailed, ChaptersFailed, build, execute_chapter
from cheems_lib.chapters import CHAPTERS
from conftest import ROOT, copy_repo

pytestmark = pytest.mark.book


def _published(kind: str) -> dict[str, int]:
    """Per registered chapter, its unconditional ``publish.<kind>(`` calls (at a cell's top level): each
    renders one figure or table, so a page shows at least that many."""
    return {ch.name: len(re.findall(rf"^publish\.{kind}\(", (ROOT / "notebooks" / f"{ch.name}.md").read_text(encoding="utf-8"),
                                    re.M))
            for ch in CHAPTERS}


def test_smoke_build_renders_every_chapter(smoke_book):
    """All chapters execute with the smoke profile, the HTML exists, and a rebuild uses the cache."""
    root, html, _ = smoke_book
    assert (html / "index.html").exists() and (html / "_static/mathjax/tex-chtml.js").exists()
    for ch in CHAPTERS:
        text = (html / "book" / f"{ch.name}.html").read_text(encoding="utf-8")
        for label in ch.labels:
            assert f'id="{label}"' in text, (ch.name, label)
        assert "cdn.jsdelivr" not in text and "Traceback" not in text
        assert "caption-number" not in text  # no "Fig. 8" of ours next to the paper's Fig. 6
        assert "How this chapter was run" in text and "Reproducibility" in text  # header and footer
    logs = []
    build("smoke", root=root, log=logs.append, html=False)
    assert sum("up to date" in line for line in logs) == len(CHAPTERS)


def test_every_figure_and_table_can_be_downloaded(smoke_book):
    """Each figure links PNG, SVG and PDF files that exist; each table links its CSV; every chapter shows
    at least the figures and tables its notebook publishes unconditionally."""
    _, html, _ = smoke_book
    want_figures, want_tables = _published("figure"), _published("table")
    figures = tables = 0
    for page in (html / "book").glob("*.html"):
        text = page.read_text(encoding="utf-8")
        n_fig = text.count('<figure')
        fig_links = set(re.findall(r'href="\.\./figures/([\w-]+)\.(png|svg|pdf)"', text))
        labels = {label for label, _ in fig_links}
        assert len(labels) == n_fig, (page.name, n_fig, labels)
        for label, ext in fig_links:
            assert (html / "figures" / f"{label}.{ext}").stat().st_size > 0
        assert all((label, ext) in fig_links for label in labels for ext in ("png", "svg", "pdf"))
        # data tables (pandas); the header's parameter table is page metadata, not data
        n_tab = len(re.findall(r'<table (?:id="T_|border="1" class="dataframe)', text))
        csv = re.findall(r'href="\.\./tables/([\w-]+)\.csv"', text)
        assert len(csv) == n_tab, (page.name, n_tab, csv)
        for label in csv:
            assert (html / "tables" / f"{label}.csv").stat().st_size > 0
        assert n_fig >= want_figures.get(page.stem, 0) and n_tab >= want_tables.get(page.stem, 0), page.name
        figures, tables = figures + n_fig, tables + n_tab
    assert figures >= sum(want_figures.values()) and tables >= sum(want_tables.values())


def test_every_download_names_its_source(smoke_book):
    """Every table CSV has a source column of a known kind, every figure's SVG a Description, and the
    indexes list every download with its chapter."""
    import csv

    import pandas as pd

    root, html, _ = smoke_book
    tables, figures = root / "book/_extra/tables", root / "book/_extra/figures"
    for path in sorted(tables.glob("*.csv")):
        frame = pd.read_csv(path)
        assert "source" in frame.columns, path.name
        assert frame["source"].str.match(r"(paper|simulated|data)\b").all(), (path.name, frame["source"].unique())
    labels = {p.stem for p in tables.glob("*.csv")} - {"index"}
    rows = list(csv.DictReader((tables / "index.csv").open(encoding="utf-8")))
    assert {r["label"] for r in rows} == labels and all(r["chapter"] for r in rows)
    assert next(r for r in rows if r["label"] == "tab-evaluation-published-table8")["source"].startswith("paper, Table 8")
    assert next(r for r in rows if r["label"] == "paper-table1")["source"].startswith("simulated world (size smoke")
    assert next(r for r in rows if r["label"] == "tab-conflicts-example")["source"].startswith(
        "data: data/examples/annotations.jsonl sha256 ")
    svgs = sorted(figures.glob("*.svg"))
    assert len(svgs) >= sum(_published("figure").values())
    for svg in svgs:
        text = svg.read_text(encoding="utf-8")
        assert "<dc:description>Source: " in text and '<g id="cheems-source">' in text, svg.name
    assert {r["label"] for r in csv.DictReader((figures / "index.csv").open(encoding="utf-8"))} == {p.stem for p in svgs}
    assert (html / "tables/index.csv").exists() and (html / "figures/index.csv").exists()


def test_failing_chapter_names_chapter_and_cell(tmp_path):
    """A chapter that raises names its cell and error; its failed run is kept aside and a placeholder page
    stands in for it (it never succeeded), so the book still renders."""
    root = copy_repo(tmp_path)
    (root / "notebooks/broken.md").write_text(
        (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
        + "# Broken\n\n"
        "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # seed\n```\n\n"
        "```{code-cell} ipython3\nraise ValueError('boom')\n```\n", encoding="utf-8")
    with pytest.raises(ChapterFailed, match=r"chapter 'broken' failed in cell .*raise ValueError.*ValueError: boom "
                                            r"\(failed notebook: book/broken.failed.ipynb; the page is a placeholder\)"):
        execute_chapter("broken", {"seed": 1}, root, profile="smoke", log=lambda s: None)
    failed = json.loads((root / "book/broken.failed.ipynb").read_text(encoding="utf-8"))
    assert any("boom" in json.dumps(c.get("outputs", [])) for c in failed["cells"])
    page = json.loads((root / "book/broken.ipynb").read_text(encoding="utf-8"))
    assert page["metadata"]["cheems"]["placeholder"] and "boom" in "".join(page["cells"][0]["source"])
    assert sorted(p.name for p in (root / "book").iterdir() if p.name.startswith(".")) == []


@pytest.fixture(scope="module")
def conflicts_done(tmp_path_factory):
    """A copy of the book with the (fast) conflicts chapter executed once with the smoke profile."""
    root = copy_repo(tmp_path_factory.mktemp("good"))
    build("smoke", ["conflicts"], root=root, html=False, log=lambda s: None)
    return root


def _sha(path):
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_failing_chapter_keeps_last_good_run_and_book_renders(conflicts_done, tmp_path):
    """A failing chapter keeps its last good notebook, the other chapters still run, the book renders with a
    placeholder for a chapter that never succeeded, one line per failure; the next good run cleans up."""
    root = tmp_path / "book"
    shutil.copytree(conflicts_done, root)
    good = _sha(root / "book/conflicts.ipynb")
    logs = []
    # data_path is conflicts' own parameter, n_bins biases' own: conflicts fails, biases fails (never ran), data runs
    with pytest.raises(ChaptersFailed) as e:
        build("smoke", ["conflicts", "biases", "data"], {"data_path": "no/such.jsonl", "n_bins": "0"}, root=root,
              force=True, log=logs.append)
    lines = e.value.lines
    assert len(lines) == 2 and lines[0].startswith("notebooks/conflicts.md: chapter 'conflicts' failed in cell ")
    assert "no/such.jsonl" in lines[0] and lines[0].endswith(
        "(failed notebook: book/conflicts.failed.ipynb; book/conflicts.ipynb keeps the last good run)")
    assert lines[1].startswith("notebooks/biases.md: chapter 'biases' failed") and "the page is a placeholder" in lines[1]
    assert _sha(root / "book/conflicts.ipynb") == good
    html = root / "_build/html/book"
    assert "has not executed successfully yet" in (html / "biases.html").read_text(encoding="utf-8")
    assert 'id="paper-alg1"' in (html / "conflicts.html").read_text(encoding="utf-8")  # the last good run
    assert "How this chapter was run" in (html / "data.html").read_text(encoding="utf-8")  # ran despite the others
    assert "has not been executed yet" in (html / "scaling.html").read_text(encoding="utf-8")
    build("smoke", ["conflicts"], root=root, force=True, html=False, log=logs.append)
    assert not (root / "book/conflicts.failed.ipynb").exists() and _sha(root / "book/conflicts.ipynb") != good


@pytest.mark.parametrize("argv", [["--jobs", "-1"], ["--chapter", "no_such_chapter"], ["-p", "no_such_parameter", "1"],
                                  ["--chapter", "biases", "-p", "n_bins", "many"]],
                         ids=["jobs", "chapter", "parameter", "value"])
def test_bad_arguments_exit_2_before_running(argv, tmp_path, monkeypatch, capsys):
    """A negative --jobs, an unknown chapter or -p name, a -p value of the wrong type: one line, exit 2, nothing run."""
    from cheems_lib.cli import main

    root = copy_repo(tmp_path)
    monkeypatch.chdir(root)
    with pytest.raises(SystemExit) as e:
        main(["book", "--profile", "smoke", "--no-html", *argv])
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and len(err) == 1 and err[0].startswith("cheems: ") and "(fix: " in err[0], err
    assert not list((root / "book").glob("*.ipynb"))


def test_unknown_parameter_is_refused(tmp_path):
    """-p with a name no selected chapter declares is refused before anything runs."""
    root = copy_repo(tmp_path)
    with pytest.raises(BookInputError, match="no selected chapter has such a parameter"):
        build("smoke", overrides={"no_such_parameter": "1"}, root=root, html=False)


KILLS = [("book.cell=1", "SIGKILL", 1), ("book.cell=6", "SIGKILL", 1), ("book.executed=1", "SIGKILL", 1),
         ("book.executed=1", "SIGINT", 1), ("book.cell=1", "SIGINT", 2)]


@pytest.mark.parametrize("at,sig_name,jobs", KILLS, ids=[f"{a}-{s}-jobs{j}" for a, s, j in KILLS])
def test_killed_build_keeps_the_last_good_notebook(conflicts_done, tmp_path, at, sig_name, jobs):
    """A real SIGKILL or SIGINT while a chapter's kernel executes cells, or after the chapter ran but before
    its notebook replaced the last good one: the last good notebook is intact; SIGINT exits 130 without a
    traceback, and with two chapters in parallel (the signal at the first cell either runs) stops both:
    neither finishes, none is recorded as failed."""
    import os
    import signal
    import subprocess
    import sys

    root = tmp_path / "book"
    shutil.copytree(conflicts_done, root)
    good = _sha(root / "book/conflicts.ipynb")
    more = ["--chapter", "biases", "--jobs", "2"] if jobs == 2 else ["--jobs", "1"]
    env = {**os.environ, "PYTHONUNBUFFERED": "1", "CHEEMS_TEST_INTERRUPT": f"{at}:{sig_name}"}
    proc = subprocess.run([sys.executable, "-m", "cheems_lib.cli", "book", "--profile", "smoke", "--chapter",
                           "conflicts", "--no-html", "--force", *more], cwd=root, capture_output=True, text=True,
                          env=env, start_new_session=True, timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == (-signal.SIGKILL if sig_name == "SIGKILL" else 130), (proc.returncode, out[-2000:])
    assert _sha(root / "book/conflicts.ipynb") == good
    assert not (root / "book/biases.ipynb").exists() and "done in" not in out
    if sig_name == "SIGINT":
        assert "Traceback" not in out and not list((root / "book").glob("*.failed.ipynb")), out[-2000:]
    if jobs == 2:
        assert "2 chapters, 2 at a time" in out


def test_forced_verdict_changes_the_generated_sentence(smoke_book, tmp_path, monkeypatch):
    """Forcing a claim's verdict the other way changes the sentence its chapter shows: the prose is generated
    from the verdict, never typed."""
    root, _, _ = smoke_book
    copy = tmp_path / "book"
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns("_build"))
    claim_id, name = "tab4-human-beats-gpt", "preference"
    assert f"claim-{claim_id}" in (ROOT / "notebooks" / f"{name}.md").read_text(encoding="utf-8")
    saved = copy / "book" / "_extra" / "claims" / f"{name}.json"
    before = next(c for c in json.loads(saved.read_text(encoding="utf-8"))["claims"] if c["id"] == claim_id)
    flipped = "contradicted" if before["verdict"] != "contradicted" else "supported"
    monkeypatch.setenv("CHEEMS_FORCE_VERDICT", f"{claim_id}={flipped}")
    build("smoke", [name], root=copy, html=False, log=lambda s: None)
    after = next(c for c in json.loads(saved.read_text(encoding="utf-8"))["claims"] if c["id"] == claim_id)
    assert after["verdict"] == flipped and after["forced"] and after["sentence"] != before["sentence"]
    nb = json.loads((copy / "book" / f"{name}.ipynb").read_text(encoding="utf-8"))
    glued = [o["data"]["application/papermill.record/text/plain"] for c in nb["cells"] for o in c.get("outputs", [])
             if o.get("metadata", {}).get("scrapbook", {}).get("name") == f"claim-{claim_id}"]
    assert glued and after["sentence"] in glued[0]
    ledger = (copy / "book" / "_extra" / "tables" / "claims.csv").read_text(encoding="utf-8")
    assert f"{claim_id}," in ledger and flipped in ledger.split(f"{claim_id},")[1].splitlines()[0]


def test_claims_ledger_is_complete(smoke_book):
    """tables/claims.csv: the documented columns, at least 20 claims with unique stable ids, valid kinds and
    verdicts, a numeric interval for every finding, and every chapter that tests claims present."""
    import math

    import pandas as pd

    from cheems_lib import claims

    root, html, _ = smoke_book
    ledger = pd.read_csv(html / "tables" / "claims.csv")
    assert list(ledger.columns) == claims.CLAIM_COLUMNS + ["source"]
    assert len(ledger) >= 20 and ledger["id"].is_unique
    assert ledger["kind"].isin(claims.KINDS).all() and ledger["verdict"].isin(claims.VERDICTS).all()
    findings = ledger[ledger["kind"] == "finding"]
    assert all(math.isfinite(v) for v in findings[["estimate", "ci_low", "ci_high"]].to_numpy().ravel())
    assert ledger["source"].str.match(r"^(paper|simulated|data)").all()
    assert {"data", "conflicts", "biases", "evaluation", "transfer", "preference", "scaling", "downstream",
            "sensitivity"} <= set(ledger["chapter"])
    assert set(ISSUE_14_IDS) <= set(ledger["id"]), set(ISSUE_14_IDS) - set(ledger["id"])
    kinds = ledger.set_index("id")["kind"]
    # independent comparators and judges: these are findings now, not built in
    assert (kinds[["s61-lower-than-rewardbench", "fig5-cheemsbench-best", "fig5-human-beats-gpt"]] == "finding").all()
    assert (kinds[["tab3-chinese-vs-english", "fig7-pretrained-vs-instruct"]] == "untestable").all()
    # tab3 and tab4 no longer compare the same two models
    rows = ledger.set_index("id")
    assert rows.loc["tab3-human-beats-machine", "estimate"] != rows.loc["tab4-human-beats-gpt", "estimate"]


# the stable claim ids the ledger must hold (issue 14)
ISSUE_14_IDS = (
    "alg1-scc-equivalence", "tab1-comparisons", "tab1-gpt-length-gap", "tab5-gpt-more-conflicts",
    "tab5-human-instruction-more-conflicts", "fig15-gpt-position", "fig15-human-no-position", "fig15-length",
    "s61-lower-than-rewardbench", "s61-open-vs-human-instruction", "s61-deterministic-easier",
    "tab3-multi-response-helps", "tab3-human-beats-machine", "tab4-human-beats-gpt", "tab4-length-debias-helps",
    "tab4-distant-supervision-helps", "tab4-combined-best", "fig5-cheemsbench-best", "fig5-human-beats-gpt",
    "fig6-data-scaling", "fig7-model-scaling", "tab3-chinese-vs-english", "fig7-pretrained-vs-instruct",
    "tab4-human-beats-gpt-vs-shared-noise", "tab4-human-beats-gpt-vs-ratio")
