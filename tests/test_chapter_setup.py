"""open_chapter: a chapter's first cell, checked against the lines it replaces."""
from __future__ import annotations

import ast

import pytest
from conftest import ROOT

from cheems_lib.analyses import world_folder
from cheems_lib.publishing import provenance
from cheems_lib.analyses.chapter_setup import open_chapter, use_source
from cheems_lib.publishing.chapters import BookInputError, parameters_of


def defaults(name: str) -> dict:
    """The values of ``notebooks/<name>.md``'s parameters cell, as papermill would leave them in the kernel."""
    return {n: ast.literal_eval(s["default"]) for n, s in parameters_of(ROOT / "notebooks" / f"{name}.md").items()}


@pytest.fixture(autouse=True)
def at_root(monkeypatch):
    """Parameter paths are relative to the repository root, where ``cheems book`` runs the chapters."""
    monkeypatch.chdir(ROOT)
    yield
    provenance.set_source(None)


class TestOpenChapter:
    def test_refuses_what_the_parameters_cell_does_not_allow(self):
        """A value outside its declaration is refused before any data is read, in one line naming the fix."""
        with pytest.raises(BookInputError, match=r"^parameter train_seeds = 0: must be in \[1, 10\] .*notebooks/scaling.md\)$"):
            open_chapter("scaling", {**defaults("scaling"), "train_seeds": 0})

    def test_equals_the_lines_it_replaces(self, smoke_dir):
        """The world is open_world's on the same parameters, and the ledger is the chapter's, labelled with the
        world and its training seeds; that label is every download's source."""
        params = {**defaults("scaling"), "world_dir": str(smoke_dir), "train_seeds": 2}
        world, ledger = open_chapter("scaling", params)
        expected = world_folder.open_world(str(smoke_dir), params["size"], params["seed"], params["human_ids"])
        assert world.directory == expected.directory and sorted(world.files) == sorted(expected.files)
        assert ledger.chapter == "scaling" and ledger.claims == {}
        assert ledger.source == expected.trained_source(range(2)) == provenance.resolve_source("tab-x")

    def test_a_chapter_without_training_uses_the_world_source(self, smoke_dir):
        """A chapter that declares no ``train_seeds`` (conflicts) labels its numbers with the world alone."""
        world, ledger = open_chapter("conflicts", {**defaults("conflicts"), "world_dir": str(smoke_dir)})
        assert ledger.source == world.source and "training seeds" not in ledger.source

    def test_without_a_world_only_checks(self):
        """``world=False`` (the claims page) checks the parameters and opens nothing."""
        assert open_chapter("claims", defaults("claims"), world=False) == (None, None)
        with pytest.raises(BookInputError, match="^parameter replicate_seeds"):
            open_chapter("claims", {**defaults("claims"), "replicate_seeds": [-1]}, world=False)


class TestUseSource:
    def test_relabels_the_ledger_and_the_downloads(self, smoke_dir):
        """A chapter whose numbers come from more than the world (a human-score file) relabels both at once."""
        world, ledger = open_chapter("conflicts", {**defaults("conflicts"), "world_dir": str(smoke_dir)})
        source = provenance.world_source(smoke_dir, note="one more file")
        assert use_source(ledger, source) is ledger
        assert ledger.source == source == provenance.resolve_source("tab-x")
