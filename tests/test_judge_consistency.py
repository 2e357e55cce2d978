"""An LLM judge against itself: repeated pairs, position preference, merged aspect conflicts."""
from __future__ import annotations

import json

import numpy as np

from cheems_lib import estimates
from cheems_lib.analyses import claims, judge_consistency as jc
from cheems_lib.records import Record, Response, read_records

from conftest import ROOT


def _ranked(pid: str, order: list[str], rank: dict[str, int], **extra) -> Record:
    return Record(prompt=pid, id=pid, responses=[Response(x, f"answer {x}") for x in order], rank=rank, extra=extra)


def test_repeats_counts_by_hand():
    """Set 1 shows a, b, c, d; set 2 shows c, b, a, e. Shared: a, b, c (3 pairs). Swapped pairs:
    (a, b), (a, c), (b, c) all reverse their order. Ranks: set 1 a<b<c (a best), set 2 a=b, c best.
    Strict in both: (a, c) and (b, c) only (a, b tie in set 2); both flip: 0 agree.
    Swapped decisions: set 1 gives 3 strict (a>b, a>c, b>c: each won by the earlier-shown),
    set 2 gives 2 strict (c>a, c>b: c is shown first, so won by the earlier-shown): 5, all earlier."""
    s1 = [_ranked("p", ["a", "b", "c", "d"], {"a": 0, "b": 1, "c": 2, "d": 3})]
    s2 = [_ranked("p", ["c", "b", "a", "e"], {"c": 0, "b": 1, "a": 1, "e": 2})]
    rep = jc.repeats(s1, s2)
    assert (rep.prompts, rep.pairs) == (1, 3)
    assert (rep.strict.tolist(), rep.agree.tolist()) == ([2.0], [0.0])
    assert (rep.swapped.tolist(), rep.earlier.tolist()) == ([5.0], [5.0])
    assert rep.earlier_share(n_boot=0).value == 1.0


def test_repeats_skips_prompts_in_one_set_only():
    """A prompt missing from the second set, or unranked, is not compared."""
    s1 = [_ranked("p", ["a", "b"], {"a": 0, "b": 1}), _ranked("q", ["a", "b"], {"a": 0, "b": 1})]
    s2 = [_ranked("p", ["b", "a"], {"a": 0, "b": 1})]
    rep = jc.repeats(s1, s2)
    assert rep.prompts == 1 and rep.agree.tolist() == [1.0] and rep.earlier.tolist() == [1.0]
    assert jc.repeats(s1, []).prompts == 0


def test_repeats_on_the_shipped_llmzoo_sets_match_a_hand_count():
    """data/real's two LLMZoo answer sets: every question is in both, and the answers whose
    content is in both make the repeated pairs (counted here from the JSON, not the library)."""
    a = [json.loads(line) for line in open(ROOT / "data/real/cheems_bench/open.jsonl", encoding="utf-8")]
    b = {r["id"]: r for r in map(json.loads, open(ROOT / "data/real/llmzoo/review_output.jsonl", encoding="utf-8"))}
    pairs = 0
    for r in a:
        shared = {x["content"] for x in r["responses"]} & {x["content"] for x in b[r["id"]]["responses"]}
        pairs += len(shared) * (len(shared) - 1) // 2
    rep = jc.repeats(read_records(ROOT / "data/real/cheems_bench/open.jsonl"),
                     read_records(ROOT / "data/real/llmzoo/review_output.jsonl"))
    assert rep.prompts == len(a) == 70
    assert rep.pairs == pairs == 210


def test_shared_answers_counts_each_prompts_common_answers():
    """Per prompt in both sets, the answers both hold (by id); prompts in one set only are left out."""
    first = [Record(prompt="q", id="p", responses=[Response("x", "甲"), Response("y", "乙"), Response("z", "丙")]),
             Record(prompt="r", id="only-first", responses=[Response("x", "甲"), Response("y", "乙")])]
    second = [Record(prompt="q", id="p", responses=[Response("z", "丙"), Response("w", "丁"), Response("x", "甲")])]
    assert jc.shared_answers(first, second) == [2]
    assert jc.shared_answers(first, []) == []


def test_aspect_conflicts_flags_disagreeing_aspects():
    """Two aspects that order a pair oppositely form a cycle Algorithm 1 cannot reproduce;
    agreeing aspects do not; one aspect alone gives no comparison to merge... still annotated."""
    agree = _ranked("p", ["a", "b"], {"a": 0, "b": 1}, aspects={"general": {"a": 0, "b": 1}, "coherence": {"a": 0, "b": 1}})
    clash = _ranked("q", ["a", "b"], {"a": 0, "b": 1}, aspects={"general": {"a": 0, "b": 1}, "coherence": {"a": 1, "b": 0}})
    conflicted, annotated = jc.aspect_conflicts([agree, clash])
    assert conflicted.tolist() == [0.0, 1.0] and annotated.tolist() == [1.0, 1.0]


def _ledger():
    return claims.Ledger("real", "test")


def test_add_claims_untestable_without_second_set_or_aspects(monkeypatch):
    """Without a second answer set the position and consistency claims are untestable, and say why;
    without aspect rankings the merged-aspects claim is."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
    ledger = _ledger()
    bench = [_ranked("p", ["a", "b"], {"a": 0, "b": 1})]
    jc.add_claims(ledger, bench=bench, second=None, judge="judge-x", n_boot=100)
    kinds = {cid: (c.kind, c.reason) for cid, c in ledger.claims.items()}
    assert kinds["real-judge-position"] == ("untestable", "needs a second answer set of the same prompts")
    assert kinds["real-judge-consistency"][0] == "untestable"
    assert kinds["real-aspect-conflicts"][0] == "untestable" and "aspects" in kinds["real-aspect-conflicts"][1]


def test_add_claims_on_one_prompt_is_insufficient_data(monkeypatch):
    """One repeated prompt gives no verdict but *insufficient data* (estimates.MIN_UNITS)."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
    ledger = _ledger()
    s1 = [_ranked("p", ["a", "b", "c"], {"a": 0, "b": 1, "c": 2})]
    s2 = [_ranked("p", ["c", "b", "a"], {"a": 2, "b": 1, "c": 0})]
    jc.add_claims(ledger, bench=s1, second=s2, judge="judge-x", n_boot=100)
    assert ledger.claims["real-judge-position"].verdict == estimates.INSUFFICIENT
    assert ledger.claims["real-judge-consistency"].verdict == estimates.INSUFFICIENT


def test_add_claims_on_many_prompts_decides(monkeypatch):
    """A judge that picks the later-shown answer on 16 of 20 prompts (and answer a, wherever shown, on 4):
    position *supported* (the earlier-shown wins 4 of 40 decisions), and it orders 16 of 20 repeated pairs
    differently, so inconsistency is *supported*."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
    s1 = [_ranked(f"p{i}", ["a", "b"], {"a": int(i >= 4), "b": int(i < 4)}) for i in range(20)]
    s2 = [_ranked(f"p{i}", ["b", "a"], {"a": 0, "b": 1}) for i in range(20)]
    ledger = _ledger()
    est = jc.add_claims(ledger, bench=s1, second=s2, judge="judge-x", n_boot=200)
    assert est["real-judge-position"].value == 0.1 and ledger.claims["real-judge-position"].verdict == "supported"
    assert est["real-judge-consistency"].value == 0.2
    assert ledger.claims["real-judge-consistency"].verdict == "supported"
    # the position test is confounded by the change of answer set: our question, with the confound as its reason
    assert ledger.claims["real-judge-position"].kind == "question"
    assert "confounded" in ledger.claims["real-judge-position"].reason
    # so is the consistency test (the same confound, and not Table 5's statistic): the registry's reason says so
    assert ledger.claims["real-judge-consistency"].kind == "question"
    assert "confounded" in ledger.claims["real-judge-consistency"].reason


def test_add_claims_on_an_interval_of_no_width_is_insufficient_data(monkeypatch):
    """A judge that always picks the later-shown answer, and aspects that conflict on every prompt: every
    resample gives the same share, so the 95% intervals have no width. With 12 prompts (at least MIN_UNITS)
    that is *insufficient data* saying so, not *supported* (the shipped LLMZoo aspects once gave [0.741, 0.741])."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
    clash = {"general": {"a": 0, "b": 1}, "coherence": {"a": 1, "b": 0}}
    s1 = [_ranked(f"p{i}", ["a", "b"], {"a": 1, "b": 0}, aspects=clash) for i in range(12)]
    s2 = [_ranked(f"p{i}", ["b", "a"], {"a": 0, "b": 1}) for i in range(12)]
    ledger = _ledger()
    est = jc.add_claims(ledger, bench=s1, second=s2, judge="judge-x", n_boot=200)
    for cid in ("real-judge-position", "real-judge-consistency", "real-aspect-conflicts"):
        lo, hi = est[cid].interval()
        assert est[cid].n == 12 and lo == hi, cid
        claim = ledger.claims[cid]
        assert claim.verdict == estimates.INSUFFICIENT, cid
        assert claim.sentence.startswith("Insufficient data: 12 prompts, but every bootstrap resample gives the same "
                                         "value (the 95% interval has no width)"), claim.sentence
    assert "whether the merged aspect rankings conflict" in ledger.claims["real-aspect-conflicts"].sentence


def test_plot_judge_draws_both_panels():
    """The figure has the shares panel and the conflicts panel with the paper's four Table 5 rows."""
    fig = jc.plot_judge({"x": estimates.Estimate.single(0.6, np.linspace(0.5, 0.7, 50), n=20)},
                        estimates.Estimate.single(0.9, np.full(50, 0.9), n=20))
    left, right = fig.axes
    assert len(right.get_yticklabels()) == 5


def test_add_length_claims_tests_each_file_and_says_what_is_missing(monkeypatch):
    """The longer answer wins the strict decision of 16 of 20 prompts: the judge's length claim is *supported*; without
    a preference file its claim is untestable and names the file."""
    import myst_nb

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
    bench = [Record(prompt=f"p{i}", id=f"p{i}", responses=[Response("a", "x" * 30), Response("b", "x")],
                    annotations=[("a", "b", "1" if i < 16 else "2")]) for i in range(20)]
    ledger = _ledger()
    found = jc.add_length_claims(ledger, bench=bench, preference=None, judge="judge-x", n_boot=100)
    assert list(found) == ["real-judge-length"] and found["real-judge-length"].value == 0.8
    assert ledger.claims["real-judge-length"].verdict == "supported"
    assert ledger.claims["real-judge-length"].claim == "judge-x prefers the longer response"
    missing = ledger.claims["real-preference-length"]
    assert (missing.kind, missing.reason) == ("untestable", "needs cheems_preference.jsonl")


def test_judge_shares_names_the_plotted_shares_in_order():
    """Claim ids become the figure's names, in the figure's order; the aspect conflicts are not a share."""
    est = estimates.Estimate.single(0.6, np.linspace(0.5, 0.7, 50), n=20)
    found = {"real-aspect-conflicts": est, "real-judge-length": est, "real-judge-consistency": est}
    assert list(jc.judge_shares(found)) == ["ordered alike both times", "won by the longer answer (judge)"]
