"""The book pipeline: every chapter runs with the smoke profile and the book renders."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cheems_lib.book import BookError, build, execute_chapter
from cheems_lib.chapters import CHAPTERS
from conftest import ROOT

pytestmark = pytest.mark.book


def _copy_repo(dst: Path) -> Path:
    for name in ("_config.yml", "_toc.yml"):
        shutil.copy(ROOT / name, dst / name)
    for name in ("notebooks", "data"):
        shutil.copytree(ROOT / name, dst / name, ignore=shutil.ignore_patterns("*.ipynb"))
    (dst / "book").mkdir()
    for page in (ROOT / "book").glob("*.md"):
        shutil.copy(page, dst / "book" / page.name)
    return dst


def test_smoke_build_renders_every_chapter(tmp_path):
    """All chapters execute with the smoke profile, the HTML exists, and a rebuild uses the cache."""
    root = _copy_repo(tmp_path)
    logs = []
    html = build("smoke", root=root, log=logs.append)
    assert (html / "index.html").exists() and (html / "_static/mathjax/tex-chtml.js").exists()
    for ch in CHAPTERS:
        text = (html / "book" / f"{ch.name}.html").read_text(encoding="utf-8")
        for label in ch.labels:
            assert f'id="{label}"' in text, (ch.name, label)
        assert "cdn.jsdelivr" not in text and "Traceback" not in text
    logs.clear()
    build("smoke", root=root, log=logs.append, html=False)
    assert any("up to date" in line for line in logs)


def test_failing_chapter_names_chapter_and_cell(tmp_path):
    """A chapter that raises stops the build with its name and the failing cell."""
    root = _copy_repo(tmp_path)
    (root / "notebooks/broken.md").write_text(
        (ROOT / "notebooks/conflicts.md").read_text(encoding="utf-8").split("---\n")[1].join(["---\n", "---\n"])
        + "# Broken\n\n"
        "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # seed\n```\n\n"
        "```{code-cell} ipython3\nraise ValueError('boom')\n```\n", encoding="utf-8")
    with pytest.raises(BookError, match=r"chapter 'broken' failed in cell .*raise ValueError.*ValueError: boom"):
        execute_chapter("broken", {"seed": 1}, root, profile="smoke", log=lambda s: None)


def test_unknown_parameter_is_refused(tmp_path):
    root = _copy_repo(tmp_path)
    with pytest.raises(BookError, match="no selected chapter has such a parameter"):
        build("smoke", overrides={"no_such_parameter": "1"}, root=root, html=False)
