"""Each chapter shows its method: every results section carries the library call that computes it, visible.

A *results section* is a ``##`` section after the parameters cell that holds a code cell: such a section computes
or shows something of this run (the Overview, "What it means" and other prose sections hold none). Its visible
cell is the call a reader would copy, as a lecture shows its code, and it fits the page's code box without
scrolling sideways; the display plumbing (tables, figures, glue) stays in hidden cells. The claims page and the
reproduction checklist have no results section in this sense: their sections show files that other runs wrote, so
their cells are plumbing and all of them may stay hidden.
"""
from __future__ import annotations

import ast
import re

import jupytext
import pytest
from conftest import ROOT

from cheems_lib.publishing.chapters import CHAPTERS

HIDING = {"remove-cell", "remove-input", "hide-input", "hide-cell"}
MAX_VISIBLE_LINES = 8  # a call and its arguments, not a program
MAX_VISIBLE_WIDTH = 78
"""Characters a line of a visible cell may have: at a 1280 px window the page's code box shows about this many, and
a longer line is cut off and scrolls sideways, hiding the end of the call a reader would copy."""
WITHOUT_RESULTS = {"claims", "reproduce"}  # pages of files other runs wrote (see the module docstring)


def sections(path) -> list[tuple[str, list]]:
    """``(heading, code cells)`` of every ``##`` section after the parameters cell of the chapter at ``path``."""
    cells = jupytext.read(path, fmt="md:myst").cells
    start = next(i for i, c in enumerate(cells) if "parameters" in c.metadata.get("tags", []))
    out: list[tuple[str, list]] = []
    for cell in cells[start + 1:]:
        if cell.cell_type == "markdown":
            out += [(h, []) for h in re.findall(r"^## +(.+)$", cell.source, flags=re.M)]
        elif cell.cell_type == "code" and out:
            out[-1][1].append(cell)
    return out


def visible(cell) -> bool:
    return not HIDING & set(cell.metadata.get("tags", []))


def visible_code_cells(path) -> list:
    """The code cells a reader sees in the chapter at ``path``: neither hidden nor the parameters cell."""
    return [c for c in jupytext.read(path, fmt="md:myst").cells
            if c.cell_type == "code" and visible(c) and "parameters" not in c.metadata.get("tags", [])]


def wide_lines(cell) -> list[str]:
    """The lines of ``cell`` longer than :data:`MAX_VISIBLE_WIDTH` characters, comments included."""
    return [line for line in cell.source.splitlines() if len(line) > MAX_VISIBLE_WIDTH]


def library_names(path) -> set[str]:
    """Names a chapter binds to cheems_lib: its imports from the package and what ``open_chapter`` returns."""
    names: set[str] = set()
    for cell in jupytext.read(path, fmt="md:myst").cells:
        if cell.cell_type != "code" or "parameters" in cell.metadata.get("tags", []):
            continue
        for node in ast.walk(ast.parse(cell.source)):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("cheems_lib"):
                names |= {a.asname or a.name for a in node.names}
            elif isinstance(node, ast.Import):
                names |= {(a.asname or a.name).split(".")[0] for a in node.names if a.name.startswith("cheems_lib")}
            elif (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)
                  and getattr(node.value.func, "id", "") == "open_chapter"):
                names |= {n.id for t in node.targets for n in ast.walk(t) if isinstance(n, ast.Name)}
    return names


def calls_library(source: str, names: set[str]) -> bool:
    """Whether ``source`` calls something rooted at one of ``names`` (``scaling.data_sweep(...)``, ``world.gpt()``)."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call):
            root = node.func
            while isinstance(root, (ast.Attribute, ast.Call, ast.Subscript)):
                root = root.func if isinstance(root, ast.Call) else root.value
            if isinstance(root, ast.Name) and root.id in names:
                return True
    return False


def lines(cell) -> int:
    return sum(1 for line in cell.source.splitlines() if line.strip() and not line.strip().startswith("#"))


@pytest.mark.parametrize("ch", [c for c in CHAPTERS if c.name not in WITHOUT_RESULTS], ids=lambda c: c.name)
def test_every_results_section_shows_its_library_call(ch):
    """Every results section has a visible code cell of at most 8 lines that calls cheems_lib."""
    path = ROOT / "notebooks" / f"{ch.name}.md"
    names = library_names(path)
    missing = [heading for heading, cells in sections(path) if cells and not any(
        visible(c) and lines(c) <= MAX_VISIBLE_LINES and calls_library(c.source, names) for c in cells)]
    assert missing == [], f"notebooks/{ch.name}.md: sections without a short visible library call: {missing}"


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_visible_cells_are_short_library_calls(ch):
    """No chapter shows plumbing: each visible code cell is short and calls cheems_lib."""
    path = ROOT / "notebooks" / f"{ch.name}.md"
    names = library_names(path)
    bad = [c.source.splitlines()[0] for c in visible_code_cells(path)
           if lines(c) > MAX_VISIBLE_LINES or not calls_library(c.source, names)]
    assert bad == []


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_visible_cells_fit_the_page_width(ch):
    """Every line of a visible code cell, comments included, fits the page's code box: at most 78 characters."""
    path = ROOT / "notebooks" / f"{ch.name}.md"
    wide = [line for c in visible_code_cells(path) for line in wide_lines(c)]
    assert wide == [], f"notebooks/{ch.name}.md: visible lines over {MAX_VISIBLE_WIDTH} characters (wrap them): {wide}"


def test_the_section_reader_finds_what_it_should(tmp_path):
    """A section with only hidden code is reported, a visible library call satisfies it, and prose sections
    and the parameters cell are not sections."""
    head = "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# T\n\n## Overview\n\nText.\n\n"
    params = "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # s\n```\n\n"
    body = ("```{code-cell} ipython3\n:tags: [remove-cell]\nfrom cheems_lib import metrics\nimport math\n```\n\n"
            "## Result\n\n```{code-cell} ipython3\n:tags: [remove-input]\nx = metrics.accuracy([1], [1])\n```\n\n"
            "## What it means\n\nProse.\n")
    chapter = tmp_path / "ch.md"
    chapter.write_text(head + params + body, encoding="utf-8")
    found = sections(chapter)
    assert [(h, len(c)) for h, c in found] == [("Result", 1), ("What it means", 0)]
    assert not visible(found[0][1][0]) and library_names(chapter) == {"metrics"}
    assert calls_library("x = metrics.accuracy([1], [1])", {"metrics"})
    assert not calls_library("y = math.sqrt(2)", {"metrics"}) and not calls_library("display(x)", {"metrics"})


def test_the_width_check_finds_long_visible_lines(tmp_path):
    """A visible line of 79 characters is reported, comment or code, one of 78 is not, and a hidden cell's long
    line or the parameters cell's is never a visible line."""
    code, comment = "x = metrics.accuracy(" + "1" * 57 + ")", "# " + "w" * 77
    head = "---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# T\n\n"
    params = "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # " + "s" * 90 + "\n```\n\n"
    hidden = "```{code-cell} ipython3\n:tags: [remove-cell]\nfrom cheems_lib import metrics  # " + "h" * 80 + "\n```\n\n"
    shown = f"## Result\n\n```{{code-cell}} ipython3\n{comment}\n{code}\n{code[:-2]})\n{comment[:-1]}\n```\n"
    chapter = tmp_path / "ch.md"
    chapter.write_text(head + params + hidden + shown, encoding="utf-8")
    (cell,) = visible_code_cells(chapter)
    assert (len(comment), len(code)) == (MAX_VISIBLE_WIDTH + 1,) * 2
    assert wide_lines(cell) == [comment, code]
