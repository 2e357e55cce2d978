"""The chapter registry agrees with _toc.yml and with each chapter's parameters cell."""
from __future__ import annotations

import pytest

from cheems_lib.book import coerce, parameters_of
from cheems_lib.chapters import CHAPTERS, PROFILES, toc_yaml
from conftest import ROOT


def test_toc_is_generated_from_registry():
    """_toc.yml equals what the registry implies (regenerate with chapters.toc_yaml())."""
    assert (ROOT / "_toc.yml").read_text(encoding="utf-8") == toc_yaml()


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_parameters_cell(ch):
    """Every parameter is `name: type = default  # help`, with help, a seed, and profile values it declares."""
    declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
    if ch.labels and not ch.after_all:  # chapters that compute results; "Reproduce" and "Claims" draw nothing random
        assert "seed" in declared
    assert all(p["help"] for p in declared.values())
    for profile in PROFILES:
        assert set(ch.parameters(profile)) <= set(declared)


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_papermill_reads_every_parameter(ch):
    """`papermill --help-notebook` shows every parameter with its type and help."""
    import jupytext
    from papermill.translators import PythonTranslator

    nb = jupytext.read(ROOT / "notebooks" / f"{ch.name}.md")
    cell = next(c for c in nb.cells if "parameters" in c.metadata.get("tags", []))
    seen = {p.name: p for p in PythonTranslator.inspect(cell)}
    declared = parameters_of(ROOT / "notebooks" / f"{ch.name}.md")
    assert set(seen) == set(declared)
    assert all(seen[n].help == declared[n]["help"] for n in declared)


@pytest.mark.parametrize("ch", CHAPTERS, ids=lambda c: c.name)
def test_chapter_carries_its_stable_labels(ch):
    """Each paper artefact id appears as a MyST label or a figure name in the chapter source."""
    text = (ROOT / "notebooks" / f"{ch.name}.md").read_text(encoding="utf-8")
    for label in ch.labels:
        assert f"({label})=" in text or f":name: {label}" in text, label


def test_coerce():
    """coerce turns command-line strings into each parameter type of a chapter."""
    assert coerce("3", "int") == 3 and coerce("0.5", "float") == 0.5 and coerce("no", "bool") is False
    assert coerce('["a", "b"]', "list[str]") == ["a", "b"] and coerce("x.jsonl", "str") == "x.jsonl"


def test_api_page_documents_every_module():
    """book/api.md has an automodule for each cheems_lib module, so the API page is complete."""
    import re

    listed = set(re.findall(r"automodule:: cheems_lib\.(\w+)", (ROOT / "book/api.md").read_text(encoding="utf-8")))
    modules = {p.stem for p in (ROOT / "cheems_lib").glob("*.py") if p.stem != "__init__"}
    assert listed == modules


def test_readme_says_where_every_module_lives():
    """README's "Where things live" table names every cheems_lib module, so a concept can be found from it."""
    import re

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Where things live", 1)[1].split("\n## ", 1)[0]
    listed = set(re.findall(r"cheems_lib/(\w+)\.py", section)) | set(re.findall(r"`(\w+)\.py`", section))
    modules = {p.stem for p in (ROOT / "cheems_lib").glob("*.py") if p.stem != "__init__"}
    assert modules <= listed, sorted(modules - listed)


def test_every_figure_has_a_stable_label_and_caption():
    """Each glued figure's key and name are stable ids (spec §7) and it has a caption and download links."""
    import re

    from cheems_lib.publish import LABEL

    for ch in CHAPTERS:
        text = (ROOT / "notebooks" / f"{ch.name}.md").read_text(encoding="utf-8")
        for key, name, caption in re.findall(r"```\{glue:figure\} (\S+)\n:name: (\S+)\n\n(.*?)```", text, flags=re.S):
            assert LABEL.match(key) and LABEL.match(name), (ch.name, key, name)
            assert caption.strip(), (ch.name, key)
            assert f'publish.downloads("{key}")' in text and f'publish.figure(' in text
        assert text.count("{glue:figure}") == len(re.findall(r"\{glue:figure\} \S+\n:name: ", text)), ch.name
