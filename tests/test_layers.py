"""The package's layers (issue 27): methods that work on any file at the top level, then the wings
``models/`` (reward models), ``world/`` (the simulator), ``analyses/`` (the paper's tables and figures) and
``publishing/`` (the book's machinery). Lower layers never import higher ones."""
from __future__ import annotations

import pytest
from test_imports import PACKAGE, import_graph

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
    """Each wing is a package with its docstring, and the top level keeps at most 13 modules."""
    for name in WINGS:
        init = PACKAGE / name / "__init__.py"
        assert init.exists() and init.read_text(encoding="utf-8").startswith('"""'), name
    top = [p.stem for p in PACKAGE.glob("*.py") if p.stem != "__init__"]
    assert len(top) <= 13, sorted(top)


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
