"""The "How this book was built" page, from notebooks whose metadata is written here (no chapter runs)."""
from __future__ import annotations

import json
import re

import pytest

from cheems_lib.publishing import build_stats
from cheems_lib.publishing.chapters import CHAPTERS
from cheems_lib.publishing.publish import md_text

pytestmark = pytest.mark.book

RUN = {"cache_key": "k", "profile": "smoke", "parameters": {"size": "smoke", "sizes": ["tiny"]}, "wall_time_s": 12.25,
       "executed_at": "2026-11-25T06:00:00Z", "commit": "c0ffee" * 6 + "beef", "dirty": True,
       "packages": {"torch": "2.9.0", "papermill": "2.7.0", "jupyter-book": None},
       "data_files": {"data/paper/table5.csv": "ab" * 32, "build/worlds/w/open.jsonl": "cd" * 32}}


def _notebook(path, meta):
    path.write_text(json.dumps({"cells": [], "metadata": {"cheems": meta}, "nbformat": 4, "nbformat_minor": 5}),
                    encoding="utf-8")


@pytest.fixture
def book_root(tmp_path):
    """A book folder: ``data`` ran (this build found it up to date), ``conflicts`` failed after a good run,
    ``biases`` failed without ever succeeding (a placeholder page), ``scaling`` ran in an earlier build,
    the other chapters never ran."""
    book = tmp_path / "book"
    book.mkdir()
    _notebook(book / "data.ipynb", RUN)
    _notebook(book / "conflicts.ipynb", RUN | {"wall_time_s": 1.5, "packages": {"torch": "2.8.0"}})
    _notebook(book / "conflicts.failed.ipynb", {"failure": "failed in cell 7: ValueError: <b>boom</b>"})
    _notebook(book / "biases.ipynb", {"placeholder": True, "error": "failed in cell 3: KeyError: 'x'"})
    _notebook(book / "biases.failed.ipynb", {"failure": "failed in cell 3: KeyError: 'x'"})
    _notebook(book / "scaling.ipynb", RUN)
    return tmp_path


def _line(text: str, name: str) -> str:
    return next(line for line in text.splitlines() if line.startswith(f"| {{doc}}`{name} <{name}>`"))


def test_page_lists_every_chapter_with_its_run(book_root):
    """One row per registered chapter with status, profile, wall time and cache; the parameters, data fingerprint
    and commit of each run; the commit, every package version and the total time of the build."""
    outcomes = {"data": "cached", "conflicts": "failed", "biases": "failed"}
    text = build_stats.page(book_root, outcomes, 40.0, commit="1234567")
    for ch in CHAPTERS:
        assert _line(text, ch.name)
    assert _line(text, "data").startswith("| {doc}`data <data>` | ok | smoke | 12.2 s | hit: up to date |")
    assert "| not in this build |" in _line(text, "scaling") and "not executed yet" in _line(text, "transfer")
    assert "`size=smoke`, `sizes=[\"tiny\"]` | 2 files, `" in text and "`c0ffeec0ffee` (dirty)" in text
    assert "from git commit `1234567`" in text and "in 40.0 s" in text and "took 26.0 s in all" in text
    assert "| torch | 2\\.9\\.0 | data, scaling |" in text and "| torch | 2\\.8\\.0 | conflicts |" in text
    assert "| jupyter\\-book | not installed |" in text
    assert f"| `build/worlds/w/open.jsonl` | `{'cd' * 32}` | every chapter that recorded them |" in text


def test_failed_chapters_link_their_failure(book_root):
    """A failed chapter says so with its error (escaped), links its page (the placeholder showing the error, or the
    last good run) and its failed notebook; a chapter that failed in this build without a notebook says failed."""
    text = build_stats.page(book_root, {"conflicts": "failed", "biases": "failed", "evaluation": "failed"})
    conflicts, biases = _line(text, "conflicts"), _line(text, "biases")
    assert f"**failed**: {md_text('failed in cell 7: ValueError: <b>boom</b>')} (" in conflicts and "<b>" not in conflicts
    assert "{doc}`its page <conflicts>` shows the last good run" in conflicts
    assert "{download}`failed notebook <conflicts.failed.ipynb>`" in conflicts and "| miss: failed |" in conflicts
    assert "{doc}`its page <biases>` shows the error" in biases and "<biases.failed.ipynb>" in biases
    assert "**failed**: see the failed notebook" in _line(text, "evaluation")
    assert sum("**failed**" in line for line in text.splitlines()) == 3


def test_write_page_replaces_the_page(book_root):
    """write_page writes book/build_stats.md whole (no temporary file left) and rewrites it on the next build."""
    path = build_stats.write_page(book_root)
    assert path == book_root / build_stats.PAGE and path.read_text(encoding="utf-8").startswith("(build-stats)=")
    (book_root / "book" / "conflicts.failed.ipynb").unlink()
    assert "**failed**" not in _line(build_stats.write_page(book_root).read_text(encoding="utf-8"), "conflicts")
    assert not [p for p in (book_root / "book").iterdir() if re.match(r"\.", p.name)]
