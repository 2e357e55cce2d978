"""The package's layers, lowest first: methods that work on any file at the top level; the wings ``models/``
(reward models) and ``world/`` (the simulator), side by side; ``publishing/`` (the book's machinery); ``analyses/``
(the paper's tables and figures, which publish themselves through it). A module imports its own layer and the
ones below, never one above nor a wing beside its own; ``cli``, the entry point, may import any."""
from __future__ import annotations

import ast
import itertools

import jupytext
import pytest
from conftest import ROOT
from test_imports import PACKAGE, import_graph, module_name, modules

from cheems_lib.publishing.chapters import CHAPTERS

TOP = ""
"""The top level's name in :data:`LAYERS` (its modules have no dot)."""
LAYERS = {TOP: 0, "models": 1, "world": 1, "publishing": 2, "analyses": 3}
"""Each layer's rank: a module may import a lower rank or its own wing, so two wings of one rank (models/ and
world/: a reward model knows nothing of the simulator, the simulator scores with no reward model) never import each
other. publishing/ sits below analyses/ so the book's machinery runs without any table's code."""
WINGS = tuple(w for w in LAYERS if w != TOP)
ENTRY_POINTS = {"cli"}
"""Modules that wire every layer together: they may import any."""
MAX_TOP_LEVEL = 20
"""At most this many top-level modules: one idea per module, so a split of a big module adds files here; the count
bounds how wide the top level grows, not how many ideas the package has (a new family of them goes into a wing)."""


def layer(module: str) -> str:
    """``models.zoo`` -> ``models``; a top-level module -> :data:`TOP`."""
    return module.split(".")[0] if "." in module else TOP


def _shown(name: str) -> str:
    return "the top level" if name == TOP else f"{name}/"


def rule_broken(importer: str, imported: str) -> str | None:
    """The rule the import ``importer -> imported`` breaks, e.g. ``publishing/ never imports analyses/``; None if
    it is allowed."""
    a, b = layer(importer), layer(imported)
    if importer in ENTRY_POINTS or a == b or LAYERS[b] < LAYERS[a]:
        return None
    return f"{_shown(a)} never imports {_shown(b)}"


def violations(graph: dict[str, set[str]]) -> list[str]:
    """Every import that crosses a layer the wrong way, as ``importer -> imported (rule)``."""
    return [f"{importer} -> {target} ({why})" for importer, imported in sorted(graph.items())
            for target in sorted(imported) if (why := rule_broken(importer, target))]


def test_the_wings_exist():
    """The sub-packages are exactly the declared wings, each with its docstring, and the top level keeps at most
    :data:`MAX_TOP_LEVEL` modules."""
    assert {p.parent.name for p in PACKAGE.glob("*/__init__.py")} == set(WINGS)
    for name in WINGS:
        init = PACKAGE / name / "__init__.py"
        assert init.read_text(encoding="utf-8").startswith('"""'), name
    top = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    assert len(top) <= MAX_TOP_LEVEL, sorted(top)


def test_no_import_crosses_a_layer_the_wrong_way():
    """Every edge of the real graph, lazy imports included, goes down the layers or stays in its wing."""
    assert violations(import_graph()) == []


FORBIDDEN_EDGES = [
    (("records", "models.zoo"), "the top level never imports models/"),
    (("records", "world.simulation"), "the top level never imports world/"),
    (("outputs", "publishing.build"), "the top level never imports publishing/"),
    (("estimates", "analyses.claims"), "the top level never imports analyses/"),
    (("models.zoo", "world.simulation"), "models/ never imports world/"),
    (("models.scoring", "publishing.figures"), "models/ never imports publishing/"),
    (("models.zoo", "analyses.experiments"), "models/ never imports analyses/"),
    (("world.panels", "models.scoring"), "world/ never imports models/"),
    (("world.corpus", "publishing.figures"), "world/ never imports publishing/"),
    (("world.simulation", "analyses.claims"), "world/ never imports analyses/"),
    (("publishing.execute", "analyses.claims"), "publishing/ never imports analyses/"),
]


@pytest.mark.parametrize("edge, rule", FORBIDDEN_EDGES)
def test_the_checker_catches_each_rule(edge, rule):
    """Adding one forbidden edge to the real graph is reported with its rule."""
    graph = import_graph()
    assert edge[0] in graph and edge[1] in graph, edge  # a module renamed since: pick another of its layer
    graph[edge[0]] = graph[edge[0]] | {edge[1]}
    assert f"{edge[0]} -> {edge[1]} ({rule})" in violations(graph)


def test_every_forbidden_pair_of_layers_has_an_example():
    """Each ordered pair of layers that may not import the other appears in :data:`FORBIDDEN_EDGES` (a new wing
    brings its examples), and each allowed pair is allowed."""
    forbidden = {(a, b) for a, b in itertools.permutations(LAYERS, 2) if LAYERS[b] >= LAYERS[a]}
    assert {(layer(i), layer(t)) for (i, t), _ in FORBIDDEN_EDGES} == forbidden
    allowed = [("analyses.claims", "publishing.claims_files"), ("publishing.execute", "world.simulation"),
               ("publishing.execute", "models.scoring"), ("world.simulation", "records"), ("records", "outputs"),
               ("cli", "analyses.leaderboard")]
    assert [e for e in allowed if rule_broken(*e)] == []


MAX_LINES = 80  # a function, or a chapter's code, that a reader takes in at one sitting


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
    """No function of the library is longer than 80 lines."""
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
