"""World replicates (cheems_lib.publishing.replicates): the comparison across worlds, the ledgers it reads, the full profiles."""
from __future__ import annotations

import json
import math

import numpy as np
import pytest

from cheems_lib.publishing import replicates
from cheems_lib.estimates import Estimate
from cheems_lib.analyses.claims import Claim, Ledger


def _row(cid, seed, estimate, verdict, *, kind="finding", replicate=None, width=0.1):
    return {"id": cid, "kind": kind, "chapter": "preference", "claim": f"{cid} holds", "world_seed": seed,
            "estimate": estimate, "ci_low": estimate - width / 2, "ci_high": estimate + width / 2, "verdict": verdict,
            "replicate": seed != 0 if replicate is None else replicate, "source": f"simulated world (seed {seed})"}


def test_compare_finds_flips_reversals_and_spread():
    """Per claim: the estimate and verdict on each world, the range and spread, a flip (any two verdicts differ),
    a reversal (supported on one world, contradicted on another); a claim on one world only has no spread or
    flip; calibrated claims are left out."""
    rows = [_row("a", 0, 0.30, "supported"), _row("a", 1, 0.10, "supported"), _row("a", 2, -0.20, "contradicted"),
            _row("b", 0, 0.05, "supported"), _row("b", 1, 0.07, "supported"), _row("b", 2, 0.06, "supported"),
            _row("c", 0, 0.01, "inconclusive"), _row("c", 1, 0.2, "supported"),
            _row("d", 0, 0.5, "supported"),
            _row("e", 0, 0.5, "supported", kind="calibrated"), _row("e", 1, -0.5, "contradicted", kind="calibrated"),
            _row("q", 0, 0.5, "supported", kind="question"), _row("q", 1, 0.5, "supported", kind="question")]
    frame = replicates.compare(rows).set_index("id")
    assert list(frame.index) == ["a", "b", "c", "d", "q"]
    assert [c for c in frame.columns if "seed" in c] == ["estimate_seed0", "verdict_seed0", "estimate_seed1",
                                                        "verdict_seed1", "estimate_seed2", "verdict_seed2"]
    a, b, c, d = (frame.loc[k] for k in "abcd")
    assert (a["min"], a["max"]) == (-0.20, 0.30) and a["spread"] == pytest.approx(0.5)
    assert (a["flips"], a["reverses"], a["worlds"]) == ("yes", "yes", 3)
    assert (b["flips"], b["reverses"]) == ("no", "no") and b["spread"] == pytest.approx(0.02)
    assert (c["flips"], c["reverses"], c["worlds"]) == ("yes", "no", 2)
    assert c["verdict_seed2"] == "" and math.isnan(c["estimate_seed2"])
    assert (d["flips"], d["reverses"], d["worlds"]) == ("", "", 1) and math.isnan(d["spread"])
    assert a["mean_ci_width"] == pytest.approx(0.1)
    text = replicates.summary(frame.reset_index())
    assert "5 claims of kind finding, question or simulator-check rebuilt on world seeds 0, 1 and 2, 2 of them on every one" in text
    assert "2 keep their verdict" in text and "2 change it, 1 of these from supported to contradicted" in text
    assert "for 2 the estimates spread" in text  # a (0.5) and c (0.19) spread wider than their 0.1 intervals
    assert replicates.row_sources(rows, frame.reset_index())[0] == ("simulated world (seed 0); simulated world "
                                                                    "(seed 1); simulated world (seed 2)")


def test_compare_prefers_the_books_own_run():
    """Where a replicate ran on the book's own world seed, the book's run is the one shown."""
    rows = [_row("a", 0, 0.5, "contradicted", replicate=True), _row("a", 0, 0.3, "supported", replicate=False)]
    row = replicates.compare(rows).iloc[0]
    assert (row["estimate_seed0"], row["verdict_seed0"], row["worlds"]) == (0.3, "supported", 1)


def test_left_out_names_the_command_and_the_chapters():
    """Without replicates the page says what the build leaves out and how to get it, from the registry."""
    text = replicates.left_out()
    assert "cheems book --profile full" in text and "world seeds 1 and 2" in text
    assert all(name in text for name in replicates.replicated_chapters())


def _page(book, chapter, run, params):
    """A minimal executed notebook ``book/<chapter>.ipynb``: its recorded parameters and glued claims run."""
    out = {"output_type": "display_data", "data": {"application/papermill.record/text/plain": repr(run)},
           "metadata": {"scrapbook": {"name": f"claims-run-{chapter}", "mime_prefix": "application/papermill.record/"}}}
    cell = {"cell_type": "code", "source": 'size: str = "default"  # size\nseed: int = 0  # seed', "outputs": [],
            "metadata": {"tags": ["parameters"]}}
    nb = {"cells": [cell, {"cell_type": "code", "source": "ledger.save()", "outputs": [out], "metadata": {}}],
          "metadata": {"cheems": {"parameters": params}}}
    (book / f"{chapter}.ipynb").write_text(json.dumps(nb), encoding="utf-8")


def _save(where, estimate, params):
    """A preference chapter's run in ``where`` (a book or a replicate folder) with one finding at ``estimate``."""
    (where / "book").mkdir(parents=True, exist_ok=True)
    ledger = Ledger("preference", f"simulated world (size smoke, seed {params.get('seed', 0)})", registered=False)
    ledger.add(Claim.test("tab4-x", Estimate.single(estimate, np.linspace(estimate - 0.05, estimate + 0.05, 100), n=50),
                          "greater", paper_ref="Table 4", claim="x helps", kind="finding"), glue=False)
    path = ledger.save(where, glue=False)
    _page(where / "book", "preference", json.loads(path.read_text(encoding="utf-8"))["run"], params)


def test_load_reads_each_world_and_leaves_out_mismatched_replicates(tmp_path):
    """The book's run (its seed the default of its executed parameters cell) and each replicate's are read with their
    world seeds; a replicate run with other parameters, one whose claims file another run wrote, and one that
    never ran are left out and named, never mixed in."""
    _save(tmp_path, 0.2, {"size": "smoke"})
    _save(replicates.prepare(tmp_path, 1), -0.2, {"size": "smoke", "seed": 1})
    _save(replicates.prepare(tmp_path, 2), 0.1, {"size": "default", "seed": 2})  # other parameters
    _save(replicates.prepare(tmp_path, 3), 0.1, {"size": "smoke", "seed": 3})
    stale = replicates.replicate_root(tmp_path, 3) / "book" / "_extra" / "claims" / "preference.json"
    stale.write_text(stale.read_text(encoding="utf-8").replace("x helps", "y helps"), encoding="utf-8")
    rows, left = replicates.load(tmp_path, [1, 2, 3, 4], chapters=["preference"])
    assert [(r["world_seed"], r["replicate"], r["verdict"]) for r in rows] == [(0, False, "supported"),
                                                                             (1, True, "contradicted")]
    assert set(left) == {"preference on world seed 2", "preference on world seed 3", "preference on world seed 4"}
    assert "other parameters" in left["preference on world seed 2"]
    assert all("cheems book --profile full --chapter preference" in why for why in left.values())
    frame = replicates.compare(rows)
    assert frame.loc[0, "reverses"] == "yes"
    before = replicates.inputs_digest(tmp_path, [1])
    _save(replicates.replicate_root(tmp_path, 1), 0.3, {"size": "smoke", "seed": 1})
    assert replicates.inputs_digest(tmp_path, [1]) != before  # the Claims page's cache key sees a new replicate


def test_prepare_links_the_checkout_and_refuses_to_replace_a_folder(tmp_path):
    """A replicate folder links notebooks, data and build relatively (build is made, so the caches are shared);
    preparing again is a no-op; a real folder where a link belongs is refused, not removed."""
    for name in ("notebooks", "data"):
        (tmp_path / name).mkdir()
    out = replicates.prepare(tmp_path, 1)
    assert out == tmp_path / "_build" / "replicates" / "seed1"
    for name in replicates.LINKED:
        assert (out / name).is_symlink() and (out / name).resolve() == (tmp_path / name).resolve()
        assert not (out / name).readlink().is_absolute()
    assert replicates.prepare(tmp_path, 1) == out
    (out / "data").unlink()
    (out / "data").mkdir()
    with pytest.raises(FileExistsError, match="not a link"):
        replicates.prepare(tmp_path, 1)
    assert (out / "data").is_dir()


def test_full_smoke_build_replicates_a_chapter_and_the_claims_page_shows_it(tmp_path):
    """A smoke build's Claims page says what it leaves out; ``--profile full-smoke`` then reruns the chapter on each
    replicate world in its own folder (the book's run is reused from the cache) and the Claims page shows every
    finding of it on each world, with no missing value; a second build executes nothing again."""
    import pandas as pd

    from cheems_lib.publishing.build import build
    from cheems_lib.publishing.chapters import REPLICATE_SEEDS
    from conftest import copy_repo

    root = copy_repo(tmp_path)
    build("smoke", ["data"], root=root, html=False, log=lambda s: None)
    page = (root / "book" / "claims.ipynb").read_text(encoding="utf-8")
    assert "This build leaves the world replicates out" in page and "cheems book --profile full" in page
    logs: list[str] = []
    build("full-smoke", ["data"], root=root, html=False, log=logs.append)
    assert "[cheems book] data: up to date" in logs  # the book's own run is the smoke profile's
    for seed in REPLICATE_SEEDS:
        where = replicates.replicate_root(root, seed)
        assert replicates.run_of(where / "book", "data")[0] == seed
        assert (where / "book" / "_extra" / "claims" / "data.json").is_file()
        assert f"[cheems book] data (world seed {seed}): executing (full-smoke profile)" in logs
    findings = [c["id"] for c in json.loads((root / "book/_extra/claims/data.json").read_text(encoding="utf-8"))["claims"]
                if c["kind"] in replicates.KINDS]
    table = pd.read_csv(root / "book" / "_extra" / "tables" / "claims-replicates.csv")
    assert findings and list(table["id"]) == findings and (table["worlds"] == 1 + len(REPLICATE_SEEDS)).all()
    assert table[[f"estimate_seed{s}" for s in (0, *REPLICATE_SEEDS)] + ["spread", "mean_ci_width"]].notna().all().all()
    assert set(table["flips"]) <= {"yes", "no"}
    page = (root / "book" / "claims.ipynb").read_text(encoding="utf-8")
    assert "World replicates: " in page and "leaves the world replicates out" not in page
    logs.clear()
    build("full-smoke", ["data"], root=root, html=False, log=logs.append)
    assert not [line for line in logs if "executing" in line], logs
