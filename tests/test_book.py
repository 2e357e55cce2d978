"""The book pipeline: every chapter runs with the smoke profile and the book renders."""
from __future__ import annotations

import pytest

from cheems_lib.book import BookError, build, execute_chapter
from cheems_lib.chapters import CHAPTERS
from conftest import ROOT, copy_repo

pytestmark = pytest.mark.book


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
    """Each figure links PNG, SVG and PDF files that exist; each table links its CSV."""
    import re

    _, html, _ = smoke_book
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
        figures, tables = figures + n_fig, tables + n_tab
    assert figures >= 11 and tables >= 15


def test_failing_chapter_names_chapter_and_cell(tmp_path):
    """A chapter that raises stops the build with its name and the failing cell."""
    root = copy_repo(tmp_path)
    (root / "notebooks/broken.md").write_text(
        (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
        + "# Broken\n\n"
        "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # seed\n```\n\n"
        "```{code-cell} ipython3\nraise ValueError('boom')\n```\n", encoding="utf-8")
    with pytest.raises(BookError, match=r"chapter 'broken' failed in cell .*raise ValueError.*ValueError: boom"):
        execute_chapter("broken", {"seed": 1}, root, profile="smoke", log=lambda s: None)


def test_unknown_parameter_is_refused(tmp_path):
    root = copy_repo(tmp_path)
    with pytest.raises(BookError, match="no selected chapter has such a parameter"):
        build("smoke", overrides={"no_such_parameter": "1"}, root=root, html=False)
