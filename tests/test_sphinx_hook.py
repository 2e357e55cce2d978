"""The book's Sphinx extension (cheems_lib.publishing.sphinx_hook)."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from cheems_lib.categories import CATEGORIES, DETERMINISTIC
from cheems_lib.publishing.sphinx_hook import _cli_parser, _help, category_table, cli_help, real_data_table, subcommands
from conftest import ROOT


def test_category_table_is_the_librarys():
    """The ``{cheems-categories}`` table of the "Use your own data" page has one row per library category, in
    order, with its English name, and marks exactly the library's deterministic ones."""
    rows = [[cell.strip() for cell in line.strip("|").split("|")] for line in category_table().splitlines()[2:]]
    assert [(name, english) for name, english, _ in rows] == list(CATEGORIES.items())
    assert sorted(name for name, _, det in rows if det == "yes") == sorted(DETERMINISTIC)
    assert {det for *_, det in rows} == {"yes", "no"}


class TestCliHelp:
    """``cli_help``: the ``{cheems-cli}`` directive of the command-line page."""

    def test_every_subcommand_has_its_help(self):
        """Without names, the text has ``cheems --help`` and, for every subcommand of the parser in its order, a
        labelled rubric over exactly what ``cheems SUB --help`` prints at the page's width."""
        text = cli_help()
        subs = subcommands()
        assert {"resolve", "evaluate", "simulate", "train", "score", "preference", "import", "book"} <= set(subs)
        assert text.startswith("(cli-help)=\n```{rubric} cheems\n```") and _help(_cli_parser()) in text
        at = [text.index(f"(cli-help-{name})=\n```{{rubric}} cheems {name}\n```\n\n```text\n{_help(sub)}\n```")
              for name, sub in subs.items()]
        assert at == sorted(at)
        assert "usage: cheems train" in text and "--learning-rate" in text and "--skip-invalid" in text

    def test_help_has_a_fixed_width(self, monkeypatch):
        """The rendered help does not depend on the terminal that built the book."""
        monkeypatch.setenv("COLUMNS", "200")
        wide = cli_help(["score"])
        monkeypatch.setenv("COLUMNS", "40")
        assert cli_help(["score"]) == wide

    def test_names_select_subcommands(self):
        """Names pick those subcommands only, without the top-level help; an unknown name is a KeyError naming
        the subcommands there are."""
        text = cli_help(["train"])
        assert "cheems train" in text and "cheems score" not in text and "(cli-help)=" not in text
        with pytest.raises(KeyError, match="no cheems subcommand nope; subcommands are resolve"):
            cli_help(["nope"])

    def test_building_the_help_imports_no_torch(self):
        """The book's Sphinx process renders the help without importing torch (only the parser is built)."""
        code = ("import sys; from cheems_lib.publishing.sphinx_hook import cli_help; cli_help(); "
                "assert 'torch' not in sys.modules, 'torch imported'")
        subprocess.run([sys.executable, "-c", code], check=True)


def test_real_data_table_is_the_manifests(tmp_path):
    """``{cheems-real-data}`` has one row per file of the manifest, in order, with its labels, licence and counts."""
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"files": {"a.jsonl": {"labels": "human", "licence": "MIT", "prompts": 3,
                                                          "responses": 9},
                                              "b/c.jsonl": {"labels": "gpt-3.5-turbo", "prompts": 1}}}), "utf-8")
    rows = real_data_table(manifest).splitlines()
    assert rows[2:] == ["| `a.jsonl` | human | MIT | 3 | 9 |", "| `b/c.jsonl` | gpt-3.5-turbo |  | 1 |  |"]
    shipped = real_data_table().splitlines()[2:]
    files = json.loads((ROOT / "data/real/manifest.json").read_text(encoding="utf-8"))["files"]
    assert [row.split("`")[1] for row in shipped] == list(files)
