"""The package's layers (issue 27): methods that work on any file at the top level, then the wings
``models/`` (reward models), ``world/`` (the simulator), ``analyses/`` (the paper's tables and figures) and
``publishing/`` (the book's machinery). Lower layers never import higher ones."""
from __future__ import annotations

import ast

import jupytext
import pytest
from conftest import ROOT
from test_imports import PACKAGE, import_graph, module_name, modules

from cheems_lib.publishing.chapters import CHAPTERS

WINGS = ("models", "world", "analyses", "publishing")
# Who may not import whom, beyond "the top level imports no wing".
FORBIDDEN = {"world": {"analyses", "publishing", "models"}, "models": {"world", "analyses", "publishing"}}


def wing(module: str) -> str | None:
    """``models.zoo`` -> ``models``; a top-level module -> None."""
    return module.split(".")[0] if "." in module else None


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that crosses a layer the wrong way, as ``importer -> imported``."""
    bad = []
    for importer, imported in sorted(graph.items()):
        for target in sorted(imported):
            if wing(importer) is None and importer != "cli" and wing(target) is not None:
                bad.append(f"{importer} -> {target} (the top level imports no wing)")
            elif wing(target) in FORBIDDEN.get(wing(importer), ()):
                bad.append(f"{importer} -> {target} ({wing(importer)}/ never imports {wing(target)}/)")
    return bad


def test_the_wings_exist():
    """Each wing is a package with its docstring, and the top level keeps at most 14 modules (methods on any file; a fifteenth concept goes into a wing or a module that exists)."""
    for name in WINGS:
        init = PACKAGE / name / "__init__.py"
        assert init.exists() and init.read_text(encoding="utf-8").startswith('"""'), name
    top = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    assert len(top) <= 14, sorted(top)


def test_no_import_crosses_a_layer_the_wrong_way():
    """The top level imports no wing (cli, the entry point, excepted); world/ never imports analyses/ or
    publishing/; models/ and world/ do not import each other."""
    assert violations(import_graph()) == []


@pytest.mark.parametrize("edge, rule", [
    (("records", "models.zoo"), "the top level imports no wing"),
    (("world.simulation", "analyses.claims"), "world/ never imports analyses/"),
    (("world.corpus", "publishing.figures"), "world/ never imports publishing/"),
    (("models.zoo", "world.simulation"), "models/ never imports world/"),
    (("world.panels", "models.scoring"), "world/ never imports models/"),
])
def test_the_checker_catches_each_rule(edge, rule):
    """Adding one forbidden edge to the real graph is reported with its rule."""
    graph = import_graph()
    graph[edge[0]] = graph[edge[0]] | {edge[1]}
    assert any(rule in v for v in violations(graph))


MAX_LINES = 80  # issue 27: a function, or a chapter's code, that a reader takes in at one sitting


def long_functions(source: str) -> list[tuple[str, int]]:
    """Every function (methods and nested ones included) of ``source`` over :data:`MAX_LINES` lines, with its length."""
    return [(n.name, n.end_lineno - n.lineno + 1) for n in ast.walk(ast.parse(source))
            if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef)) and n.end_lineno - n.lineno + 1 > MAX_LINES]


def code_lines(path) -> int:
    """A chapter's lines of code: non-blank, non-comment lines of its code cells, the parameters cell left out
    (the style asks for one line per parameter there, so a well-documented chapter is not penalised)."""
    nb = jupytext.read(path, fmt="md:myst")
    return sum(1 for c in nb.cells if c.cell_type == "code" and "parameters" not in c.metadata.get("tags", [])
               for line in c.source.splitlines() if line.strip() and not line.strip().startswith("#"))


def test_no_function_is_over_80_lines():
    """No function of the library is longer than 80 lines (issue 27)."""
    long = {module_name(p): f for p in modules() if (f := long_functions(p.read_text(encoding="utf-8")))}
    assert long == {}


def test_no_chapter_has_over_80_code_lines():
    """Chapters are narrative plus library calls: at most 80 lines of code each, the parameters cell aside."""
    counts = {p.stem: code_lines(p) for p in sorted((ROOT / "notebooks").glob("*.md"))}
    assert len(counts) == len(CHAPTERS)
    assert {k: n for k, n in counts.items() if n > MAX_LINES} == {}


def test_the_size_checks_count_what_they_should(tmp_path):
    """An 81-line function is caught and an 80-line one is not; a chapter's comments, blank lines and parameters
    cell are not code."""
    body = "\n".join(f"    x{i} = {i}" for i in range(79))
    assert long_functions(f"def f():\n{body}\n") == []
    assert long_functions(f"def f():\n{body}\n    x = 0\n") == [("f", 81)]
    chapter = tmp_path / "ch.md"
    chapter.write_text("---\njupytext:\n  text_representation:\n    format_name: myst\n---\n\n# T\n\n"
                       "```{code-cell} ipython3\n:tags: [parameters]\nseed: int = 0  # s\n```\n\n"
                       "```{code-cell} ipython3\n# why\n\nx = 1\ny = 2\n```\n", encoding="utf-8")
    assert code_lines(chapter) == 2
