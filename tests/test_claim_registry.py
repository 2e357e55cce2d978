"""The claims registry (data/paper/claims.yaml): every claim the book records is in it, every entry is recorded by
a chapter, kinds follow the registry, and the p-values of the default settings can reach Holm's thresholds."""
import json
import re
from pathlib import Path

import numpy as np
import pytest

from cheems_lib import estimates
from cheems_lib.analyses import claim_registry, claims
from cheems_lib.analyses.claims import Claim, Ledger
from cheems_lib.estimates import Estimate

ROOT = Path(__file__).resolve().parents[1]
SMOKE_LEDGER = ROOT / "tests" / "data" / "smoke_ledger.json"
REAL_CHAPTERS = ("real", "human_labels")  # the chapters that read real files by default


def _recorded_ids() -> set[str]:
    return {key.split("/", 1)[1] for key in json.loads(SMOKE_LEDGER.read_text(encoding="utf-8"))["claims"]}


def test_registry_and_the_smoke_ledger_hold_the_same_claims():
    """Both ways: a registry claim that no chapter records, or a recorded claim the registry lacks, fails here (the
    smoke ledger is the smoke book's, which tests/test_book.py rebuilds and compares with it)."""
    registered = set(claim_registry.registry())
    recorded = _recorded_ids()
    assert not recorded - registered, f"recorded but not registered: {sorted(recorded - registered)}"
    assert not registered - recorded, f"registered but recorded by no chapter: {sorted(registered - recorded)}"


def test_every_entry_names_a_chapter_of_the_book():
    from cheems_lib.publishing.chapters import CHAPTERS

    names = {c.name for c in CHAPTERS}
    assert {e.chapter for e in claim_registry.registry().values()} <= names


def test_a_ledger_refuses_a_claim_the_registry_lacks():
    ledger = Ledger("data", "simulated world (test)")
    with pytest.raises(KeyError, match=r"not in data/paper/claims.yaml \(fix: add an entry"):
        ledger.add(Claim("tab1-no-such-claim", "Table 1", "x", "finding", "supported"), glue=False)


def test_a_ledger_refuses_a_kind_or_chapter_the_registry_does_not_give():
    with pytest.raises(ValueError, match="the registry allows simulator-check, finding, untestable"):
        Ledger("data", "simulated world (test)").add(Claim("tab1-length-direction-open-prompt", "", "x", "calibrated",
                                                           "supported"), glue=False)
    with pytest.raises(ValueError, match="the registry gives it to 'data'"):
        Ledger("biases", "simulated world (test)").add(Claim("tab1-length-direction-open-prompt", "", "x", "",
                                                             "supported"), glue=False)
    with pytest.raises(ValueError, match="cites 'Table 9'"):
        Ledger("data", "simulated world (test)").add(Claim("tab1-length-direction-open-prompt", "Table 9", "x", "",
                                                           "supported"), glue=False)


def test_the_ledger_fills_kind_reference_words_and_reason_from_the_registry():
    """An empty kind is the registry's for the ledger's data: a simulator check on a simulated world, a finding on
    real files; the paper's reference and words come from the entry."""
    entry = claim_registry.entry("tab1-length-direction-open-prompt")
    diff = Estimate.single(0.1, [0.05, 0.1, 0.15] * 10, n=40)
    simulated = Ledger("data", "simulated world (size smoke, seed 0)").add(
        Claim.test(entry.id, diff, entry.direction, paper_ref="", claim="x", kind=""), glue=False)
    real = Ledger("data", "data: data/real (x.jsonl)").add(
        Claim.test(entry.id, diff, entry.direction, paper_ref="", claim="x", kind=""), glue=False)
    assert (simulated.kind, real.kind) == ("simulator-check", "finding")
    assert simulated.paper_ref == entry.paper_ref and simulated.paper_words == entry.paper_words != ""
    assert simulated.reason == entry.reason and real.reason == ""
    assert simulated.mechanism == entry.construction and real.mechanism == ""


def test_kinds_follow_the_review():
    """No finding reads simulated labels without training (the Table 1 length directions are simulator checks), and
    the comparisons the paper never makes are our questions with the part of the paper they relate to."""
    reg = claim_registry.registry()
    for cid in [c for c in reg if c.startswith("tab1-length-direction-")]:
        assert (reg[cid].kind, reg[cid].real_kind) == ("simulator-check", "finding")
    for cid in ("real-transfer-beats-random", "real-transfer-beats-longest", "real-judge-consistency",
                "real-preference-length", "real-judge-position", "real-aspect-conflicts"):
        assert reg[cid].kind == "question" and re.match(r"ours \(relates to .+\)$", reg[cid].paper_ref), cid
    for e in reg.values():  # every claim of the paper is quoted
        assert e.paper_words or e.kind in ("question", "robustness", "untestable"), e.id


def test_no_registry_question_is_credited_to_the_paper(tmp_path, monkeypatch):
    bad = tmp_path / "claims.yaml"
    bad.write_text("- id: tab1-x\n  chapter: data\n  kind: question\n  paper_ref: Table 1\n  mechanism: none\n",
                   encoding="utf-8")
    monkeypatch.setenv("CHEEMS_PAPER_DATA", str(tmp_path))
    with pytest.raises(ValueError, match="a question, and only a question"):
        claim_registry.registry()


def _default_n_boot() -> dict[str, int]:
    """Each chapter's default ``n_boot`` (its parameters cell), which the default profile keeps."""
    out = {}
    for path in (ROOT / "notebooks").glob("*.md"):
        m = re.search(r"^n_boot: int = (\d+)", path.read_text(encoding="utf-8"), re.M)
        if m:
            out[path.stem] = int(m.group(1))
    return out


def test_the_smallest_reachable_p_is_below_holms_first_threshold_at_the_default_settings():
    """With each family's count of findings m (simulated chapters, real-data chapters), the fewest replicates any
    of its chapters draws by default give a smallest p (2 / n_boot) at most Holm's first threshold (0.05 / m), so a
    finding passes Holm on evidence, not because no replicate happened to cross."""
    n_boot = _default_n_boot()
    from cheems_lib.publishing.chapters import CHAPTERS

    assert {c.name for c in CHAPTERS if c.name not in ("claims", "reproduce")} <= set(n_boot)
    for real in (False, True):
        findings = [e for e in claim_registry.registry().values()
                    if e.kind_on(not real) == "finding" and (e.chapter in REAL_CHAPTERS) == real]
        fewest = min(n_boot[e.chapter] for e in findings)
        assert estimates.smallest_p(fewest) <= estimates.HOLM_ALPHA / len(findings), (real, len(findings), fewest)
        assert fewest >= estimates.replicates_for(len(findings))


def test_smallest_p_is_what_p_value_gives_for_one_replicate_across():
    reps = list(np.linspace(0.05, 0.15, 999)) + [-0.1]
    assert estimates.p_value(Estimate.single(0.1, reps), "greater") == pytest.approx(estimates.smallest_p(1000))


def test_claims_page_counts_and_adjusts_the_families_apart():
    from cheems_lib.analyses import claims_page

    rows = []
    for i, (source, p) in enumerate([("simulated world (s)", 0.001), ("simulated world (s)", 0.04),
                                     ("simulated world (s)", 0.04), ("data: real.jsonl", 0.04)]):
        c = Claim(f"fig5-x{i}", "§6.2", "x", "finding", "supported", estimate=0.1, ci_low=0.01, ci_high=0.2, p=p,
                  replicates=1000, direction="greater", n=100)
        rows.append({**c.to_json(), "source": source})
    out = claims.multiplicity(claims.to_frame(rows))
    assert list(out["family"]) == ["simulated"] * 3 + ["real data"]
    # in one family of four the real 0.04 would fail too (0.04 * 3 > 0.05); apart, it is alone and holds
    assert list(out["holm"]) == ["supported", "inconclusive", "inconclusive", "supported"]
    text = claims_page.holm_text(out)
    assert "Simulated: 3 findings with a p-value; 2 of 3 decided verdicts become inconclusive" in text
    assert "Real data: 1 finding with a p-value; no decided verdict becomes inconclusive" in text
    assert "is above 0.002, the smallest nonzero p that 1,000 replicates can give" in text
    assert claims_page.findings_text(out) == (
        "Of the 3 findings on a simulated world, 3 are supported, 0 contradicted, 0 inconclusive and 0 with "
        "insufficient data. Of the 1 finding on real data, 1 is supported, 0 contradicted, 0 inconclusive and 0 "
        "with insufficient data.")


def test_doctests_of_the_claims_modules():
    """The worked examples in the docstrings of the claims' modules hold."""
    import doctest

    from cheems_lib.analyses import (claim_registry as registry_module, construction_ablation, downstream_claims,
                                     leaderboard_findings, sample_batching)

    for module in (registry_module, construction_ablation, downstream_claims, leaderboard_findings, sample_batching):
        result = doctest.testmod(module)
        assert result.failed == 0 and result.attempted > 0, module.__name__


def test_construction_text_names_the_registrys_mechanism():
    text = claim_registry.construction_text("tab4-human-beats-gpt")
    assert text.startswith("On a simulated world, what could decide tab4-human-beats-gpt by construction: ")
    assert claim_registry.entry("tab4-human-beats-gpt").mechanism[:40].lower() in text.lower() and text.endswith(".")
