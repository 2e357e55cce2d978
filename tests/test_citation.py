"""CITATION.cff: valid Citation File Format 1.2.0, true to the project, and the one source of the cite page.

The schema is shipped in tests/data/cff-1.2.0.schema.json: the official CFF 1.2.0 schema
(https://citation-file-format.github.io/1.2.0/schema.json), copied byte for byte from the
cffconvert 2.0.0 wheel (cffconvert/schemas/1.2.0/schema.json). cffconvert itself is not a test
dependency: it pins jsonschema<4, which the book's packages (nbformat, jupyter-events) outgrew.
"""
from __future__ import annotations

import copy
import json
import re

import pytest

from cheems_lib.publishing import citation
from conftest import ROOT

SCHEMA = ROOT / "tests" / "data" / "cff-1.2.0.schema.json"


def _errors(data) -> list[str]:
    import jsonschema

    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER)
    return [f"{'/'.join(map(str, e.path))}: {e.message}" for e in validator.iter_errors(data)]


def test_citation_cff_is_valid_cff_1_2_0():
    """CITATION.cff validates against the CFF 1.2.0 schema, and the check bites: a copy without authors, with a
    misspelt key or with a date that is no date is refused."""
    data = citation.load(ROOT)
    assert data["cff-version"] == "1.2.0" and _errors(data) == []
    for broken in ({"authors": None}, {"titel": "x"}, {"date-released": "22 Nov 2026"}):
        bad = {k: v for k, v in copy.deepcopy(data).items() if not (k in broken and broken[k] is None)}
        bad.update({k: v for k, v in broken.items() if v is not None})
        assert _errors(bad), broken


def test_citation_cff_says_what_the_project_says():
    """The software entry has the project's title (_config.yml), version (pyproject.toml) and licence, and no
    invented address; the preferred citation is the paper: arXiv 2502.17173, its title and its twelve authors."""
    import yaml

    data = citation.load(ROOT)
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")  # tomllib needs 3.11; the project allows 3.10
    project = {"version": re.search(r'^version = "(.+)"', pyproject, re.M)[1],
               "license": {"text": re.search(r'^license = \{ text = "(.+)" \}', pyproject, re.M)[1]}}
    config = yaml.safe_load((ROOT / "_config.yml").read_text(encoding="utf-8"))
    assert data["title"] == config["title"] and data["version"] == project["version"]
    assert data["license"] == project["license"]["text"] and re.fullmatch(r"\d{4}-\d{2}-\d{2}", data["date-released"])
    assert "url" not in data and "repository-code" not in data  # the project has no public address yet
    paper = data["preferred-citation"]
    assert citation.arxiv_id(paper) == "2502.17173" and paper["title"].startswith("Cheems: A Practical Guidance")
    names = [f"{a['given-names']} {a['family-names']}" for a in paper["authors"]]
    assert names[0] == "Xueru Wen" and names[-1] == "Debing Zhang" and len(names) == 12


def test_cite_page_bibtex_is_generated_from_the_cff():
    """The cite page types no BibTeX: it uses the directives, whose entries carry the CFF's title, authors, arXiv
    id, version and date, and follow the file when it changes."""
    page = (ROOT / "book" / "cite.md").read_text(encoding="utf-8")
    assert "```{cheems-citation} paper" in page and "```{cheems-citation} software" in page
    assert "{cheems-cite-example}" in page and not re.search(r"@\w+\{", page) and "training seeds 0-" not in page
    data = citation.load(ROOT)
    paper, software = citation.bibtex(data, "paper"), citation.bibtex(data, "software")
    assert f"title={{{data['preferred-citation']['title']}}}" in paper and "eprint={2502.17173}" in paper
    assert "author={Xueru Wen and Jie Lou and " in paper and paper.endswith("}")
    assert f"version={{{data['version']}}}" in software and f"date={{{data['date-released']}}}" in software
    assert "author={{The Cheems companion authors}}" in software and "url=" not in software
    changed = copy.deepcopy(data)
    changed["version"], changed["preferred-citation"]["authors"][0]["family-names"] = "9.9.9", "Wenn"
    assert "version={9.9.9}" in citation.bibtex(changed, "software")
    assert "Xueru Wenn and" in citation.bibtex(changed, "paper")
    with pytest.raises(ValueError):
        citation.bibtex(data, "poster")


def test_cite_example_quotes_this_builds_source_and_commit(tmp_path):
    """The cite page's example takes the figure's source from the build's figures/index.csv and the commit from
    its chapter's notebook (so it says the training seeds the build used), and placeholders before a build."""
    (tmp_path / "CITATION.cff").write_bytes((ROOT / "CITATION.cff").read_bytes())
    assert "`<sha>`" in citation.example(tmp_path) and "<the source column" in citation.example(tmp_path)
    figures = tmp_path / "book" / "_extra" / "figures"
    figures.mkdir(parents=True)
    source = "simulated world (size default, seed 0, simulator 1.0; training seeds 0-2)"
    (figures / "index.csv").write_text(f'label,source,chapter\npaper-fig7,other,scaling\npaper-fig6,"{source}",scaling\n',
                                       encoding="utf-8")
    (tmp_path / "book" / "scaling.ipynb").write_text(json.dumps({"metadata": {"cheems": {"commit": "ab" * 20}}}),
                                                      encoding="utf-8")
    text = citation.example(tmp_path)
    assert f"`{source}`" in text and "`abababababab`" in text and "Cheems companion 0.1.0" in text


def _bib_entries() -> dict[str, str]:
    """``{key: body}`` of book/references.bib."""
    text = (ROOT / "book" / "references.bib").read_text(encoding="utf-8")
    return {m[1]: m[2] for m in re.finditer(r"^@\w+\{([\w-]+),\n(.*?)^\}", text, flags=re.M | re.S)}


def test_every_cited_key_is_in_the_bibliography():
    """Every {cite} role of a chapter or page names an entry of book/references.bib (an unknown key is only a
    warning in Sphinx: the page would show the bare key), and every entry is cited somewhere."""
    entries = _bib_entries()
    sources = sorted((ROOT / "notebooks").glob("*.md")) + sorted((ROOT / "book").glob("*.md"))
    cited: dict[str, str] = {}
    for path in sources:
        for roles in re.findall(r"\{cite(?::\w+)?\}`([^`]+)`", path.read_text(encoding="utf-8")):
            for key in roles.split(","):
                cited.setdefault(key.strip(), path.relative_to(ROOT).as_posix())
    assert {k: f for k, f in cited.items() if k not in entries} == {}
    assert sorted(set(entries) - set(cited)) == []


def test_the_papers_bibliography_entry_agrees_with_the_cff():
    """The bibliography's entry for the paper has CITATION.cff's title, authors, year and arXiv id."""
    import yaml

    paper = yaml.safe_load((ROOT / "CITATION.cff").read_text(encoding="utf-8"))["preferred-citation"]
    entry = _bib_entries()["wen2025cheems"]
    authors = " and ".join(f"{a['family-names']}, {a['given-names']}" for a in paper["authors"])
    assert f"{{{paper['title']}}}" in entry and f"{{{authors}}}" in entry
    assert f"{{{paper['year']}}}" in entry and paper["identifiers"][0]["value"] in entry
