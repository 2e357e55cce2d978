"""Length-stratified accuracy: the strata's boundaries, hand counts, the library's totals, the controls, the tokenizer
path, the intervals and their pairing, and the book's table."""
from __future__ import annotations

import math

import numpy as np
import pytest

from cheems_lib.analyses.length_strata import (LENGTH_CONTROLS, MARGIN, MODELS_SECTION, STRATA, controls, gap_sentence,
                                               length_estimates, length_figure, length_table, lengths, pair_strata,
                                               stratified, stratum_estimates, stratum_of, unit_name)
from cheems_lib.analyses.leaderboard import CONTROLS_SECTION
from cheems_lib.baselines import CHANCE
from cheems_lib.conflicts import ordered_pairs, resolve
from cheems_lib.estimates import insufficient
from cheems_lib.input_files import DataError
from cheems_lib.metrics import prompt_outcomes
from cheems_lib.records import FIRST, Record, Response


def record(pid: str, sizes: dict[str, int], rank: dict[str, int], category: str = "A") -> Record:
    """A prompt whose response ``r`` is ``sizes[r]`` characters long."""
    return Record(prompt=f"prompt {pid}", id=pid, responses=[Response(r, "x" * n) for r, n in sizes.items()],
                  rank=rank, category=[category])


def hand_example() -> tuple[list[Record], dict]:
    """Four prompts whose strata and outcomes are counted by hand in the test below."""
    records = [record("p1", {"a": 20, "b": 10, "c": 19}, {"a": 0, "b": 1, "c": 2}),  # longer, similar, shorter
               record("p2", {"a": 5, "b": 50}, {"a": 0, "b": 1}),  # shorter
               record("p3", {"a": 30, "b": 30, "c": 10}, {"a": 0, "b": 0, "c": 1}, "B"),  # longer twice
               record("p4", {"a": 8, "b": 8}, {"a": 0, "b": 0}, "B")]  # no comparison
    scores = {("p1", "a"): 3.0, ("p1", "b"): 1.0, ("p1", "c"): 2.0,  # right, right, wrong
              ("p2", "a"): 1.0, ("p2", "b"): 1.0,  # a tie: wrong
              ("p3", "a"): 2.0, ("p3", "b"): 0.0, ("p3", "c"): 1.0,  # right, wrong
              ("p4", "a"): 0.0, ("p4", "b"): 0.0}
    return records, scores


def random_example(n: int = 40, seed: int = 0, categories: str = "AB") -> tuple[list[Record], dict]:
    """``n`` prompts of 2 to 5 responses with random lengths, ranks (ties included) and scores."""
    rng = np.random.default_rng(seed)
    records, scores = [], {}
    for p in range(n):
        ids = [f"r{i}" for i in range(rng.integers(2, 6))]
        sizes = {r: int(rng.integers(0, 60)) for r in ids}
        rank = {r: int(rng.integers(0, 3)) for r in ids}
        records.append(record(f"p{p}", sizes, rank, categories[p % len(categories)]))
        scores |= {(f"p{p}", r): float(rng.normal()) for r in ids}
    return records, scores


# ---- the strata ----------------------------------------------------------------------------------------------------


def test_stratum_boundaries():
    """A difference of exactly the margin (of the longer answer) is similar, one more is longer or shorter; two
    empty answers are similar; the margin is read as the decimal it is written as."""
    assert MARGIN == 0.10 and STRATA == ("longer", "similar", "shorter")
    assert stratum_of(100, 90) == stratum_of(90, 100) == "similar"
    assert (stratum_of(100, 89), stratum_of(89, 100)) == ("longer", "shorter")
    assert (stratum_of(0, 0), stratum_of(1, 0), stratum_of(0, 1)) == ("similar", "longer", "shorter")
    assert (stratum_of(5, 5, 0), stratum_of(6, 5, 0)) == ("similar", "longer")
    assert stratum_of(90, 27, 0.7) == "similar"  # 0.7 * 90 is 62.99999999999999 in floats, under the difference 63
    assert stratum_of(90, 26, 0.7) == "longer"


@pytest.mark.parametrize("margin", [-0.01, 1, 1.5, math.nan, "0.1", True, None])
def test_margin_outside_zero_one_is_refused(margin):
    records, scores = hand_example()
    with pytest.raises(ValueError, match="margin"):
        stratum_of(1, 1, margin)
    with pytest.raises(ValueError, match="margin"):
        stratified(records, scores, margin=margin)


def test_pair_strata_by_hand():
    """Each compared pair of the hand example with its stratum; a missing length says which."""
    records, _ = hand_example()
    found = pair_strata(records, lengths(records))
    assert found == [[("a", "b", "longer"), ("a", "c", "similar"), ("b", "c", "shorter")], [("a", "b", "shorter")],
                     [("a", "c", "longer"), ("b", "c", "longer")], []]
    with pytest.raises(ValueError, match='prompt "p1" response "a"'):
        pair_strata(records, {})


# ---- counts ----------------------------------------------------------------------------------------------------------


def test_hand_computed_example():
    """Every stratum's comparisons, correct ones and micro accuracy, overall and per category, as counted by hand."""
    records, scores = hand_example()
    out = stratified(records, scores)
    assert (out["margin"], out["unit"], out["view"]) == (0.1, "characters", "layers")
    assert out["strata"] == {"longer": {"comparisons": 3, "correct": 2, "accuracy": 2 / 3, "prompts": 2},
                             "similar": {"comparisons": 1, "correct": 1, "accuracy": 1.0, "prompts": 1},
                             "shorter": {"comparisons": 2, "correct": 0, "accuracy": 0.0, "prompts": 2}}
    assert out["by_category"] == {
        "A": {"longer": {"comparisons": 1, "correct": 1, "accuracy": 1.0},
              "similar": {"comparisons": 1, "correct": 1, "accuracy": 1.0},
              "shorter": {"comparisons": 2, "correct": 0, "accuracy": 0.0}},
        "B": {"longer": {"comparisons": 2, "correct": 1, "accuracy": 0.5},
              "similar": {"comparisons": 0, "correct": 0, "accuracy": None},
              "shorter": {"comparisons": 0, "correct": 0, "accuracy": None}}}
    assert "accuracy_ci" not in out["strata"]["longer"] and "ci_note" not in out["strata"]["longer"]  # n_boot=0


def test_strata_add_up_to_the_library_totals():
    """The strata split the comparisons of :func:`prompt_outcomes`: comparisons and correct ones sum to its totals."""
    for seed in range(3):
        records, scores = random_example(seed=seed)
        out = stratified(records, scores, margin=0.2)
        correct, total = prompt_outcomes([r.rank for r in records],
                                         [{rid: scores[(r.id, rid)] for rid in r.rank} for r in records])
        assert sum(c["comparisons"] for c in out["strata"].values()) == total.sum()
        assert sum(c["correct"] for c in out["strata"].values()) == correct.sum()
        per_category = [c[s]["comparisons"] for c in out["by_category"].values() for s in STRATA]
        assert sum(per_category) == total.sum()


def test_a_score_tie_is_wrong():
    """Equal scores for every response: no comparison is correct, in any stratum."""
    records, _ = random_example()
    out = stratified(records, {(r.id, x.id): 1.0 for r in records for x in r.responses})
    assert all(c["correct"] == 0 and c["accuracy"] == 0.0 for c in out["strata"].values() if c["comparisons"])


def test_implied_view_passes_through():
    """``view="implied"`` stratifies only the pairs the annotations imply, as :func:`ordered_pairs` gives them."""
    anns = [("a", "b", FIRST), ("c", "d", FIRST)]
    sizes = {"a": 100, "b": 10, "c": 10, "d": 100}
    rec = Record(prompt="q", id="p", responses=[Response(r, "x" * n) for r, n in sizes.items()], annotations=anns,
                 rank=resolve(list(sizes), anns), category=["A"])
    assert len(ordered_pairs(rec)) == 4 and ordered_pairs(rec, view="implied") == [("a", "b"), ("c", "d")]
    scores = {("p", r): -float(n) for r, n in sizes.items()}  # the shorter wins
    implied = stratified([rec], scores, view="implied")
    assert implied["view"] == "implied"
    assert {s: (c["comparisons"], c["correct"]) for s, c in implied["strata"].items()} == \
        {"longer": (1, 0), "similar": (0, 0), "shorter": (1, 1)}
    layers = stratified([rec], scores)
    assert sum(c["comparisons"] for c in layers["strata"].values()) == 4
    with pytest.raises(ValueError, match="view"):
        stratified([rec], scores, view="nope")


def test_missing_score_is_a_data_error():
    records, scores = hand_example()
    del scores[("p2", "b")]
    with pytest.raises(DataError, match=r'my\.jsonl: no score for prompt "p2" response "b"'):
        stratified(records, scores, scores_path="my.jsonl")


# ---- controls ------------------------------------------------------------------------------------------------------


def test_controls_on_distinct_lengths():
    """Pick-longest is right on every "longer" pair and wrong on every "shorter" one, pick-shortest the reverse,
    random lies between; chance is 0.5 on the non-empty strata and None on an empty one."""
    rng = np.random.default_rng(1)
    records = []
    for p in range(30):  # lengths 10, 20, 30, ... apart by far more than the margin: no similar pair
        order = rng.permutation(4)
        records.append(record(f"p{p}", {f"r{i}": 10 * (1 + int(order[i])) for i in range(4)},
                              {f"r{i}": i for i in range(4)}, "AB"[p % 2]))
    out = controls(records, seed=3)
    assert list(out) == [*LENGTH_CONTROLS, CHANCE]
    assert out["baseline:longest"] == {"longer": 1.0, "similar": None, "shorter": 0.0}
    assert out["baseline:shortest"] == {"longer": 0.0, "similar": None, "shorter": 1.0}
    assert all(0 < out["baseline:random"][s] < 1 for s in ("longer", "shorter"))
    assert out["baseline:random"]["similar"] is None
    assert out[CHANCE] == {"longer": 0.5, "similar": None, "shorter": 0.5}
    assert controls(records, seed=3) == out and controls(records, seed=4)["baseline:random"] != out["baseline:random"]


# ---- lengths in tokens -----------------------------------------------------------------------------------------------


class WordTokenizer:
    """A stand-in for a Hugging Face tokenizer: one token per word, and it records each call's batch."""

    def __init__(self):
        self.batches: list[int] = []

    def __call__(self, texts, add_special_tokens=True):
        assert add_special_tokens is False and isinstance(texts, list)
        self.batches.append(len(texts))
        return {"input_ids": [list(range(len(t.split()))) for t in texts]}


def test_lengths_in_tokens():
    """With a tokenizer, lengths are token counts, tokenized in batches; they can flip a pair's stratum."""
    rec = Record(prompt="q", id="p", responses=[Response("a", "aaaaaaaaaaaa"), Response("b", "b b b"),
                                                Response("c", "c")], rank={"a": 0, "b": 1, "c": 1}, category=["A"])
    tok = WordTokenizer()
    sizes = lengths([rec, rec], tok, batch_size=4)
    assert tok.batches == [4, 2]
    assert sizes == {("p", "a"): 1, ("p", "b"): 3, ("p", "c"): 1}
    assert lengths([rec]) == {("p", "a"): 12, ("p", "b"): 5, ("p", "c"): 1}
    assert (unit_name(None), unit_name(tok)) == ("characters", "tokens")
    scores = {("p", "a"): 1.0, ("p", "b"): 0.0, ("p", "c"): 0.0}
    by_chars = stratified([rec], scores)
    by_tokens = stratified([rec], scores, lengths=sizes, unit=unit_name(tok))
    assert by_chars["strata"]["longer"]["comparisons"] == 2 and by_chars["unit"] == "characters"
    assert {s: c["comparisons"] for s, c in by_tokens["strata"].items()} == {"longer": 0, "similar": 1, "shorter": 1}
    assert by_tokens["unit"] == "tokens"


# ---- intervals -------------------------------------------------------------------------------------------------------


def test_too_few_prompts_get_a_note_not_an_interval():
    records, scores = hand_example()
    out = stratified(records, scores, n_boot=200)
    for cell in out["strata"].values():
        assert "accuracy_ci" not in cell and cell["ci_note"].startswith("insufficient data: ")
    assert out["strata"]["similar"]["ci_note"].startswith("insufficient data: 1 prompt with a comparison")


def test_an_interval_contains_its_point_and_is_deterministic():
    records, scores = random_example(60)
    out = stratified(records, scores, n_boot=200, seed=5)
    for s in STRATA:
        cell = out["strata"][s]
        assert cell["prompts"] >= 10, s
        lo, hi = cell["accuracy_ci"]
        assert lo < hi and lo <= cell["accuracy"] <= hi
    assert stratified(records, scores, n_boot=200, seed=5) == out
    assert stratified(records, scores, n_boot=200, seed=6)["strata"] != out["strata"]


def test_small_categories_are_pooled():
    records, scores = random_example(40, categories="AAAAAAAAAABC")  # B and C: 3 or 4 prompts each
    assert stratified(records, scores, n_boot=50)["pooled_categories"] == ["B", "C"]


def test_stratum_estimates_are_paired_and_match_stratified():
    """Two models with the same seed share their resamples: a model equal to another differs by exactly zero in every
    replicate. Each seed's replicates are those behind :func:`stratified`'s interval, and ``n`` is the stratum's
    prompts."""
    records, scores = random_example(60)
    other = {k: v + float(np.random.default_rng(9).normal()) for k, v in scores.items()}
    first = stratum_estimates(records, [scores, other], n_boot=200, seed=5)
    again = stratum_estimates(records, [dict(scores), other], n_boot=200, seed=5)
    out = stratified(records, scores, n_boot=200, seed=5)
    for s in STRATA:
        assert first[s].boot.shape == (2, 200) and first[s].n == out["strata"][s]["prompts"]
        assert np.all((first[s] - again[s]).boot == 0)
        assert first[s].point[0] == pytest.approx(out["strata"][s]["accuracy"])
        assert np.quantile(first[s].boot[0], [0.025, 0.975]).tolist() == pytest.approx(out["strata"][s]["accuracy_ci"])
    one = stratum_estimates(records, scores, n_boot=200, seed=5)  # one mapping is one seed
    assert all(np.array_equal(one[s].boot[0], first[s].boot[0]) for s in STRATA)


def test_an_empty_stratum_estimate_is_insufficient():
    records, scores = hand_example()
    est = stratum_estimates(records[2:], scores, n_boot=20)  # p3 and p4: only "longer" pairs
    assert est["similar"].n == 0 and math.isnan(est["similar"].value) and insufficient(est["similar"])


# ---- the book's table and figure -------------------------------------------------------------------------------------


def test_length_table_and_figure():
    """Model rows (one mapping, or one per seed) per subset, then the controls' rows; the n columns are the
    comparisons; the figure has a panel per subset."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    open_recs, open_scores = random_example(30, seed=1)
    human_recs, human_scores = random_example(12, seed=2)
    human_recs = [Record(r.prompt, r.responses, f"h{r.id}", rank=r.rank, category=r.category) for r in human_recs]
    human_scores = {(f"h{p}", r): v for (p, r), v in human_scores.items()}
    both = open_scores | human_scores
    table = length_table({"m1": both, "m2": [both, {k: -v for k, v in both.items()}]},
                         {"open": open_recs, "human": human_recs}, n_boot=50)
    assert list(table.columns) == ["section", "model", "subset", "longer acc.", "longer n", "similar acc.",
                                   "similar n", "shorter acc.", "shorter n"]
    assert list(zip(table["section"], table["model"], table["subset"])) == [
        (MODELS_SECTION, "m1", "open"), (MODELS_SECTION, "m1", "human"), (MODELS_SECTION, "m2", "open"),
        (MODELS_SECTION, "m2", "human"),
        *[(CONTROLS_SECTION, c, sub) for c in LENGTH_CONTROLS for sub in ("open", "human")]]
    expected = stratified(open_recs, open_scores)["strata"]
    first = table.iloc[0]
    for s in STRATA:
        assert first[f"{s} n"] == expected[s]["comparisons"]
        assert first[f"{s} acc."].startswith(f"{expected[s]['accuracy']:.3f}")
    assert "[" in first["longer acc."]  # 30 prompts: an interval
    longest = table[(table["model"] == "baseline:longest")].iloc[0]
    assert longest["longer acc."] == "1.000"
    fig = length_figure(table)
    assert len(fig.axes) == 2 and [ax.get_title() for ax in fig.axes] == ["open", "human"]
    plt.close(fig)


def test_gap_sentence_reads_the_paired_gap_beside_pick_longest():
    """The sentence's gap is accuracy on longer minus on shorter pairs, averaged over the models; for a model that
    scores by length it equals pick-longest's gap."""
    from cheems_lib.baselines import named_scores

    recs, scores = random_example(40, seed=3)
    results = length_estimates({"by length": named_scores("baseline:longest", recs), "other": scores}, {"open": recs},
                               n_boot=200)
    control = results["open"]["controls"]["baseline:longest"]
    gap = control["longer"] - control["shorter"]
    alone = gap_sentence(results, names=["by length"])
    assert alone.startswith(f"On open, accuracy where the preferred answer is longer minus where it is shorter, "
                            f"averaged over the 1 model, is {gap:+.3f}") and alone.endswith(f"pick-longest's is {gap:+.3f}.")
    est = results["open"]["models"]["other"]
    both = (est["longer"] - est["shorter"]).value + gap
    assert f"averaged over the 2 models, is {both / 2:+.3f}" in gap_sentence(results)
