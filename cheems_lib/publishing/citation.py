"""How to cite: ``CITATION.cff`` at the repository root is the one source of both citations.

The file (Citation File Format 1.2.0) describes this companion (the software entry: title, authors,
version, release date, licence) and, as its ``preferred-citation``, the paper it reproduces (arXiv
2502.17173). The book's "How to cite" page (``book/cite.md``) shows both as BibTeX generated from it
(:func:`bibtex`, the ``{cheems-citation}`` directive), so the page and the file cannot disagree; its
example of quoting a figure (the ``{cheems-cite-example}`` directive, :func:`example`) takes the
figure's source from this build's ``figures/index.csv`` and the commit from its chapter's notebook.
"""
from __future__ import annotations

import csv
import json
import re
from pathlib import Path
from typing import Any
from .publish import md_code

__all__ = ["CFF", "load", "arxiv_id", "bibtex", "example"]

CFF = "CITATION.cff"
"""The citation file, at the repository root."""
PAPER_KEY = "wen2025cheemspracticalguidancebuilding"  # arXiv's own key: citations made before stay valid
SOFTWARE_KEY = "cheems_companion"
ARXIV_CLASS = "cs.CL"  # the paper's arXiv primary class (CFF has no field for it)


def load(root: str | Path = ".") -> dict[str, Any]:
    """``CITATION.cff`` under ``root`` as plain data (dates as ``YYYY-MM-DD`` strings)."""
    import yaml

    data = yaml.safe_load((Path(root) / CFF).read_text(encoding="utf-8"))
    return json.loads(json.dumps(data, default=str))  # a YAML date -> its ISO text, as the schema wants


def arxiv_id(entry: dict[str, Any]) -> str | None:
    """The arXiv identifier of a CFF reference: from an ``arXiv:`` identifier, its arXiv DOI or its URL."""
    texts = [i.get("value", "") for i in entry.get("identifiers", [])] + [entry.get("doi", ""), entry.get("url", "")]
    for text in texts:
        m = re.search(r"(?:arXiv[:.]|arxiv\.org/abs/)(\d{4}\.\d{4,5})", str(text), flags=re.I)
        if m:
            return m[1]
    return None


def _person(p: dict[str, Any]) -> str:
    if "family-names" in p:
        return " ".join(x for x in (p.get("given-names"), p.get("name-particle"), p["family-names"]) if x)
    return "{" + p["name"] + "}"  # an entity: braces keep BibTeX from reading it as first and last names


def _entry(kind: str, key: str, fields: dict[str, Any]) -> str:
    body = "".join(f"      {k}={{{v}}},\n" for k, v in fields.items() if v not in (None, ""))
    return f"@{kind}{{{key},\n{body}}}"


def bibtex(cff: dict[str, Any], which: str) -> str:
    """The BibTeX entry of ``which``: ``"paper"`` (the ``preferred-citation``) or ``"software"`` (this companion,
    with its version and release date)."""
    if which == "paper":
        p = cff["preferred-citation"]
        arxiv = arxiv_id(p)
        return _entry("misc", PAPER_KEY, {
            "title": p["title"], "author": " and ".join(map(_person, p["authors"])), "year": p.get("year"),
            "eprint": arxiv, "archivePrefix": "arXiv" if arxiv else None, "primaryClass": ARXIV_CLASS if arxiv else None,
            "doi": p.get("doi"), "url": p.get("url")})
    if which == "software":
        date = str(cff.get("date-released", ""))
        paper = arxiv_id(cff.get("preferred-citation", {}))
        return _entry("software", SOFTWARE_KEY, {
            "title": cff["title"], "author": " and ".join(map(_person, cff["authors"])), "version": cff.get("version"),
            "date": date, "year": date[:4], "license": cff.get("license"), "url": cff.get("url"),
            "note": (f"Reference companion to arXiv {paper}; " if paper else "") + "cite the version or commit you used"})
    raise ValueError(f"bibtex: {which!r} is not 'paper' or 'software'")


def example(root: str | Path = ".", label: str = "paper-fig6", chapter: str = "scaling") -> str:
    """Markdown: how to quote ``label`` of this build, with its source from ``book/_extra/figures/index.csv`` and
    the commit its chapter ran at (placeholders in angle brackets where the build has not made them)."""
    root = Path(root)
    source = None
    index = root / "book" / "_extra" / "figures" / "index.csv"
    if index.exists():
        with index.open(encoding="utf-8", newline="") as fh:
            source = next((r["source"] for r in csv.DictReader(fh) if r.get("label") == label), None)
    try:
        meta = json.loads((root / "book" / f"{chapter}.ipynb").read_text(encoding="utf-8"))["metadata"]["cheems"]
        commit = (meta.get("commit") or "")[:12] or None
    except (OSError, ValueError, KeyError):
        commit = None
    cff = load(root)
    return (f"For example, as this build would be quoted: \"Fig. {md_code(label)} of the {cff['title']} "
            f"{cff.get('version', '')} (commit {md_code(commit or '<sha>')}; source: "
            f"{md_code(source or '<the source column of figures/index.csv>')})\".")


def _directives():
    """``{cheems-citation} paper|software`` (:func:`bibtex`) and ``{cheems-cite-example}`` (:func:`example`),
    both read at every render from the book's root."""
    from docutils import nodes
    from docutils.statemachine import StringList
    from sphinx.util.docutils import SphinxDirective

    class Citation(SphinxDirective):
        required_arguments = 1

        def run(self):
            root = Path(self.env.srcdir)
            self.env.note_dependency(str(root / CFF))
            if not (root / CFF).is_file():
                raise self.error(f"{root / CFF}: no such file (fix: the book's root needs its {CFF})")
            text = bibtex(load(root), self.arguments[0])
            block = nodes.literal_block(text, text)
            block["language"] = "bibtex"
            return [block]

    class Example(SphinxDirective):
        def run(self):
            box = nodes.container()
            root = Path(self.env.srcdir)
            for dep in (CFF, "book/_extra/figures/index.csv", "book/scaling.ipynb"):  # re-read when they change
                self.env.note_dependency(str(root / dep))
            if not (root / CFF).is_file():
                raise self.error(f"{root / CFF}: no such file (fix: the book's root needs its {CFF})")
            text = example(root)
            self.state.nested_parse(StringList([text], source=CFF), self.content_offset, box)
            return box.children

    return Citation, Example


def setup_directives(app) -> None:
    """Register the two directives with Sphinx (called by :func:`cheems_lib.publishing.sphinx_hook.setup`)."""
    citation, cite_example = _directives()
    app.add_directive("cheems-citation", citation)
    app.add_directive("cheems-cite-example", cite_example)
