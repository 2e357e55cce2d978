"""cheems_lib.publishing.claims_files: the chapters' claim files, their run digest, and which of them are shown."""
from __future__ import annotations

import json

from cheems_lib.publishing.claims_files import (claims_dir, inputs_digest, load_all, load_shown, run_digest, shown_run,
                                                write_claims)

SOURCE = "simulated world (size smoke, seed 0)"


def _page_shows(root, chapter, run):
    """A minimal executed notebook ``book/<chapter>.ipynb`` whose run glued ``run`` (as myst_nb's glue writes it)."""
    out = {"output_type": "display_data", "data": {"application/papermill.record/text/plain": repr(run)},
           "metadata": {"scrapbook": {"name": f"claims-run-{chapter}", "mime_prefix": "application/papermill.record/"}}}
    nb = {"cells": [{"cell_type": "code", "source": "ledger.save()", "outputs": [out], "metadata": {}}], "metadata": {}}
    (root / "book" / f"{chapter}.ipynb").write_text(json.dumps(nb), encoding="utf-8")


def _claims(verdict="supported"):
    return [{"id": "tab4-x", "verdict": verdict, "kind": "finding"}, {"id": "fig7-y", "verdict": "inconclusive",
                                                                    "kind": "untestable", "reason": "no models"}]


class TestWriteClaims:
    def test_the_file_carries_the_digest_of_what_it_saved(self, tmp_path):
        """The file lands in book/_extra/claims/<chapter>.json with its chapter, source, claims and ``run``, the
        digest of those three, which is also returned for the notebook's glue."""
        path, run = write_claims(tmp_path, "preference", SOURCE, _claims())
        assert path == claims_dir(tmp_path) / "preference.json" == tmp_path / "book/_extra/claims/preference.json"
        body = json.loads(path.read_text(encoding="utf-8"))
        assert body["run"] == run == run_digest(body) and len(run) == 16
        assert body["claims"] == _claims() and body["source"] == SOURCE

    def test_the_digest_covers_the_claims(self, tmp_path):
        """Another verdict is another run."""
        assert write_claims(tmp_path, "preference", SOURCE, _claims())[1] != \
            write_claims(tmp_path, "preference", SOURCE, _claims("contradicted"))[1]


class TestShownRun:
    def test_reads_the_glued_run(self, tmp_path):
        """The run glued as ``claims-run-<chapter>`` is read back, as myst_nb wrote it."""
        (tmp_path / "book").mkdir()
        _page_shows(tmp_path, "preference", "abc")
        assert shown_run(tmp_path / "book/preference.ipynb", "preference") == "abc"
        assert shown_run(tmp_path / "book/preference.ipynb", "data") is None  # another chapter's glue

    def test_a_missing_or_broken_notebook_shows_no_run(self, tmp_path):
        """No notebook, or one that is not JSON, records no run (its claims are then stale, never an error)."""
        assert shown_run(tmp_path / "none.ipynb", "preference") is None
        (tmp_path / "bad.ipynb").write_text("{", encoding="utf-8")
        assert shown_run(tmp_path / "bad.ipynb", "preference") is None


def test_only_the_run_the_page_shows_is_used(tmp_path):
    """The file says which run wrote it; when that is not the run the page records (another run overwrote
    it, the page was never built, or the file was edited) it is named stale and its claims are left out;
    the Claims page's cache input changes with the file's bytes."""
    _, shown = write_claims(tmp_path, "preference", SOURCE, _claims())
    _page_shows(tmp_path, "preference", shown)
    rows = load_all(tmp_path, ["preference"])
    assert [r["id"] for r in rows] == ["tab4-x", "fig7-y"] and all(r["source"] == SOURCE for r in rows)
    before = inputs_digest(tmp_path)
    other, run = write_claims(tmp_path, "preference", SOURCE, _claims("contradicted"))  # e.g. a plain papermill run
    assert run != shown and inputs_digest(tmp_path) != before
    rows, stale = load_shown(claims_dir(tmp_path), tmp_path / "book", ["preference"])
    assert rows == [] and "not written by the run that book/preference.ipynb shows" in stale["preference"]
    assert "cheems book --chapter preference --force" in stale["preference"]
    (tmp_path / "book" / "preference.ipynb").unlink()
    assert load_shown(claims_dir(tmp_path), tmp_path / "book", ["preference"])[1].keys() == {"preference"}
    _page_shows(tmp_path, "preference", run)
    body = json.loads(other.read_text(encoding="utf-8"))
    body["claims"][0]["verdict"] = "supported"  # edited by hand: its run no longer matches its content
    other.write_text(json.dumps(body), encoding="utf-8")
    assert load_all(tmp_path, ["preference"]) == []


def test_a_chapter_without_a_file_is_neither_shown_nor_stale(tmp_path):
    """A chapter that saved no claims adds no row and no stale entry (e.g. a page without a ledger)."""
    assert load_shown(claims_dir(tmp_path), tmp_path / "book", ["preference"]) == ([], {})
