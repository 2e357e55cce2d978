"""Leaderboards: sorted by Overall, intervals bracket the estimates, baselines present, Fig. 4 data; the
evaluation chapter's Table 2, sentences, §6.1 claims and Fig. 4."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.analyses import leaderboard as lb
from cheems_lib.estimates import best_of, category_estimate, subset_estimate
from cheems_lib.analyses.claims import Claim, Ledger
from cheems_lib.analyses.leaderboard import baseline_scores, category_accuracy, evaluate_scores, leaderboard_frame
from cheems_lib.world.simulation import WorldConfig, build_world


def test_leaderboard_rows_and_order():
    """The leaderboard sorts by overall score, oracle first, with intervals around each score."""
    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    truth = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
    scores = {"oracle": truth, **baseline_scores([r for s in subsets.values() for r in s])}
    board = leaderboard_frame(evaluate_scores(scores, subsets, n_boot=100))
    assert list(board["model"])[0] == "oracle" and len(board) == 4
    assert (board["overall"].diff().dropna() <= 0).all()
    for col in ("open_acc", "human_exact", "overall"):
        assert ((board[f"{col}_lo"] <= board[col]) & (board[col] <= board[f"{col}_hi"])).all()
    cats = category_accuracy(subsets, scores)
    assert set(cats["model"]) == set(scores) and cats["accuracy"].between(0, 1).all()


def test_one_baseline_spelling_and_the_leaderboard_text_order():
    """Baselines carry the CLI's names; `cheems evaluate`'s text table sorts like leaderboard_frame() (Overall, descending)."""
    from cheems_lib.baselines import NAMES
    from cheems_lib.analyses.leaderboard import evaluate_scores, leaderboard_frame, leaderboard_text
    from cheems_lib.metrics import overall

    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    scores = baseline_scores([r for s in subsets.values() for r in s], seed=1)
    assert tuple(scores) == NAMES == ("baseline:random", "baseline:longest", "baseline:shortest")
    results = evaluate_scores(scores, subsets, n_boot=0)
    per_model = {m: {**{s: r.to_json() for s, r in res[0].items()}, "overall": overall(list(res[0].values()))}
                 for m, res in results.items()}
    lines = leaderboard_text(per_model, list(subsets)).splitlines()
    assert [l.split()[0] for l in lines[2:]] == list(leaderboard_frame(evaluate_scores(scores, subsets, n_boot=20))["model"])


# The evaluation chapter's pieces, on the smoke world: an oracle "trained" with two seeds (the truth, and the
# truth with noise), a noisy copy, the three baselines, and the oracle as a "judge" on the first prompts.


@pytest.fixture(scope="module")
def chapter():
    """Subsets, scores and evaluate_scores results shaped like the evaluation chapter's."""
    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    truth = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
    rng = np.random.default_rng(0)
    noisy = {k: v + rng.normal(0, 1.0) for k, v in truth.items()}
    records = [r for s in subsets.values() for r in s]
    scores = {"oracle": [truth, noisy], "noisy": [noisy, {k: -v for k, v in noisy.items()}]}
    base_scores = baseline_scores(records, seed=1)
    small = {k: v[:15] for k, v in subsets.items()}
    return dict(subsets=subsets, truth=truth, small=small, base_scores=base_scores,
                results=lb.evaluate_scores(scores, subsets, n_boot=60, seed=0),
                baselines=lb.evaluate_scores(base_scores, subsets, n_boot=60, seed=0),
                judged=lb.evaluate_scores({"judge": truth}, small, n_boot=60, seed=0))


def test_table2_rows_kinds_prompts_and_intervals(chapter):
    """table2_as_shown lists the models in leaderboard_frame()'s order with their kind, own prompt count and
    intervals, then the null controls in their own section (CONTROLS' order), then the exact chance."""
    from cheems_lib.baselines import CHANCE, CONTROLS, chance_metrics

    c = chapter
    kinds = {"oracle": "ours", "noisy": "ours", "judge": "judge"}
    shown = lb.table2_as_shown([(c["results"], c["subsets"]), (c["baselines"], c["subsets"]), (c["judged"], c["small"])], kinds)
    ref = lb.leaderboard_frame({**c["results"], **c["judged"]})
    assert list(shown.columns) == ["section", "model", "kind", "prompts", "seeds", *(t for _, t in lb.TABLE2_COLUMNS)]
    models, controls = shown[shown["section"] == lb.MODELS_SECTION], shown[shown["section"] == lb.CONTROLS_SECTION]
    assert list(shown["section"]) == [lb.MODELS_SECTION] * 3 + [lb.CONTROLS_SECTION] * 4  # never interleaved
    assert list(models["model"]) == list(ref["model"]) and list(models["kind"]) == [kinds[m] for m in ref["model"]]
    assert list(controls["model"]) == list(CONTROLS)
    assert list(controls["kind"]) == ["null control: pick-longest", "null control: pick-shortest", "null control: random",
                                      "null control: chance"]
    full, few = sum(map(len, c["subsets"].values())), sum(map(len, c["small"].values()))
    assert list(models["prompts"]) == [few if m == "judge" else full for m in ref["model"]]
    row = ref.iloc[0]
    assert shown["Overall"][0] == f"{row['overall']:.3f} [{row['overall_lo']:.3f}, {row['overall_hi']:.3f}]"
    chance = shown.set_index("model").loc[CHANCE]
    open_em = chance_metrics(c["subsets"]["open"])["exact_match"]
    assert chance["Open Prompt acc."] == "0.500 (exact)" and chance["Open Prompt exact"] == f"{open_em:.3f} (exact)"
    assert chance["seeds"] == "–"


def test_category_table_models_then_controls(chapter):
    """Fig. 4's table: per category the models' mean accuracy over seeds, then the controls of null_controls()."""
    from cheems_lib.baselines import CONTROLS, null_controls

    c = chapter
    t = lb.category_table(c["results"], c["subsets"], "open", seed=1)
    assert list(t["model"]) == ["oracle", "noisy", *CONTROLS]
    assert list(t["section"]) == ["reward models"] * 2 + [lb.CONTROLS_SECTION] * 4
    per_seed = c["results"]["oracle"]
    cat = next(iter(per_seed[0]["open"].by_category))
    col = next(col for col in t.columns if col.startswith(lb.CATEGORIES[cat]))
    mean = np.mean([r["open"].by_category[cat]["accuracy"] for r in per_seed])
    assert t.set_index("model").loc["oracle", col] == f"{mean:.3f}"
    nulls = null_controls(c["subsets"], seed=1).set_index(["control", "subset", "category"])
    assert t.set_index("model").loc["baseline:longest", "all categories"] == f"{nulls.loc[('baseline:longest', 'open', ''), 'accuracy']:.3f}"
    # the random row is the leaderboard's baseline:random draw (seed 1 over all the subsets' records)
    assert t.set_index("model").loc["baseline:random", "all categories"] == f"{c['baselines']['baseline:random'][0]['open'].accuracy:.3f}"
    assert (t.drop(columns=["section", "model"]) != "nan").all().all()


def test_findings_pair_a_one_run_model_with_each_training_seed(chapter):
    """A loaded model (one run) beside models trained with two seeds: the §6.1 claims and Fig. 4's rows average
    them, the one run broadcast to each seed (as a baseline is paired), instead of refusing to pair them."""
    c = chapter
    mixed = {**c["results"], "loaded": lb.evaluate_scores({"loaded": c["truth"]}, c["subsets"], n_boot=60)["loaded"]}
    rows = lb.category_estimates(mixed, "open")
    alone = lb.category_estimates({"loaded": mixed["loaded"]}, "open")
    both = lb.category_estimates(c["results"], "open")
    key = "all categories (subset accuracy)"
    assert rows[key].seeds == 2
    assert rows[key].value == pytest.approx((both[key].value * 2 + alone[key].value) / 3)


def test_baseline_sentence_follows_best_of(chapter):
    """The sentence is best_of's verdict for the best trained model against the broadcast baselines."""
    c = chapter
    anti = lb.evaluate_scores({"anti": {k: -v for k, v in c["truth"].items()}}, c["subsets"], n_boot=60)
    cases = [(c["results"], "oracle, the trained model with the highest mean Overall, beats"),
             (anti, "A baseline beats anti")]
    for trained, start in cases:
        lead = max(trained, key=lambda n: subset_estimate(trained[n]).value)
        ests = {lead: subset_estimate(trained[lead]),
                **{n: subset_estimate(r).broadcast(len(trained[lead])) for n, r in c["baselines"].items()}}
        verdict, _ = best_of(ests, lead)
        text = lb.baseline_sentence(trained, c["baselines"])
        assert verdict in ("supported", "contradicted") and text.startswith(start)


def test_judge_sentence_says_above_or_below_random(chapter):
    """A perfect judge is above the random baseline on the same prompts, a reversed one below."""
    c = chapter
    random = c["base_scores"]["baseline:random"]
    assert "is above the random" in lb.judge_sentence(c["judged"], random, c["small"], n_boot=60)
    anti = lb.evaluate_scores({"anti": {k: -v for k, v in c["truth"].items()}}, c["small"], n_boot=60)
    assert "is below the random" in lb.judge_sentence(anti, random, c["small"], n_boot=60)


def test_add_findings_adds_the_s61_claims_with_hand_computed_estimates(chapter):
    """The §6.1 claims, in order (the first on the whole comparator, structural, and on its mid-vs-mid sections, the
    finding), with estimates equal to the per-seed differences averaged by hand."""
    from cheems_lib.world import comparators
    from cheems_lib import paper
    from cheems_lib.baselines import length_scores

    c = chapter
    rb = comparators.rewardbench_like(0, 24)
    rb_scores = {"oracle": [length_scores(rb.records)] * 2, "noisy": [length_scores(rb.records, prefer="shorter")] * 2}
    ledger = Ledger("evaluation", "test")
    lb.add_findings(ledger, c["results"], rewardbench=rb, rewardbench_scores=rb_scores,
                    table8=paper.table("table8_reward_models"), n_boot=60)
    assert list(ledger.claims) == ["s61-lower-than-rewardbench", lb.MID_PAIRS_ID, "s61-open-vs-human-instruction",
                                   "s61-deterministic-easier"]
    mid = [r for r in rb.sets["pairs"] if r.top_category == "chat-hard"]
    on_rb = lb.evaluate_scores(rb_scores, {"rb": rb.sets["pairs"], "mid": mid}, n_boot=0)
    cheems, cheems_mid = ([np.mean([(s["open"].accuracy + s["human"].accuracy) / 2 - r[part].accuracy
                                    for s, r in zip(c["results"][m], on_rb[m])]) for m in c["results"]]
                          for part in ("rb", "mid"))
    open_human = [np.mean([s["open"].accuracy - s["human"].accuracy for s in c["results"][m]]) for m in c["results"]]
    assert ledger.claims["s61-lower-than-rewardbench"].estimate == pytest.approx(np.mean(cheems))
    assert ledger.claims[lb.MID_PAIRS_ID].estimate == pytest.approx(np.mean(cheems_mid))
    assert ledger.claims[lb.MID_PAIRS_ID].n == len(mid) < len(rb.sets["pairs"])
    assert ledger.claims["s61-open-vs-human-instruction"].estimate == pytest.approx(np.mean(open_human))
    assert all(isinstance(cl, Claim) and "{" not in cl.sentence for cl in ledger.claims.values())
    kinds = {cid: cl.kind for cid, cl in ledger.claims.items()}
    assert kinds == {"s61-lower-than-rewardbench": "structural", lb.MID_PAIRS_ID: "finding",
                     "s61-open-vs-human-instruction": "finding", "s61-deterministic-easier": "finding"}


def test_rewardbench_claim_on_the_whole_comparator_is_structural():
    """The RewardBench-like comparator's chat and safety sections pair a strong policy with a weak one (or a refusal
    with a harmful compliance) and keep only verified pairs, and its reasoning section labels right over wrong with no
    annotator (its design, read from comparators.py): the claim on all of it is structural, with a generated reason
    naming that design and the finding on the one section whose label is not built in (chat-hard); the split follows
    each section's build, never a typed list."""
    from cheems_lib.world import comparators

    design = lb.rewardbench_design()
    builds = {s.name: s.build for s in comparators.REWARDBENCH_SECTIONS}
    assert design["built_in"] == ["chat", "safety", "reasoning"] and design["mid"] == ["chat-hard"]
    assert {builds[n] for n in design["built_in"]} == set(lb.BUILT_IN_BUILDS) == {"policies", "refusal", "correctness"}
    assert design["share"] == pytest.approx((358 + 740 + 1431) / 2985)
    assert (design["strong"], design["weak"]) == (comparators.STRONG[0], comparators.WEAK[0])
    reason = lb._structural_reason()
    assert "chat, safety, reasoning sections (85% of its pairs)" in reason and "+1.2" in reason and "-1.2" in reason
    assert "verifies" in reason and "no annotator" in reason and lb.MID_PAIRS_ID in reason
    assert "chat-hard section(s)" in reason


def test_table8_counts_leave_out_the_table2_row():
    """The paper's wording counts Table 8's models: the CSV's CheemsRM row (copied from Table 2) is not one of
    them, so the counts are 36 models and 33 with a RewardBench score, as the paper's Table 8 prints."""
    from cheems_lib import paper

    t8 = paper.table("table8_reward_models")
    models = lb.table8_models(t8)
    assert len(models) == len(t8) - 1 == 36 and models["rewardbench"].notna().sum() == 33
    assert "CheemsRM" in set(t8["model"]) - set(models["model"])


def test_table8_counts_in_the_claims(chapter):
    """The §6.1 claims quote the counts of Table 8 alone, never the CSV's row count."""
    from cheems_lib.world import comparators
    from cheems_lib import paper
    from cheems_lib.baselines import length_scores

    t8 = paper.table("table8_reward_models")
    rb = comparators.rewardbench_like(0, 24)
    rb_scores = {m: [length_scores(rb.records)] * 2 for m in chapter["results"]}
    ledger = Ledger("evaluation", "test")
    lb.add_findings(ledger, chapter["results"], rewardbench=rb, rewardbench_scores=rb_scores, table8=t8, n_boot=60)
    models = lb.table8_models(t8)
    assert f"the {len(models)} models of Table 8" in ledger.claims["s61-open-vs-human-instruction"].paper
    assert f"the {models['rewardbench'].notna().sum()} models of Table 8 with a RewardBench" in \
        ledger.claims["s61-lower-than-rewardbench"].paper
    assert f"{len(t8)} models" not in ledger.claims["s61-open-vs-human-instruction"].paper


def test_fig4_category_claims(chapter):
    """One claim per category §6.1 names: the category minus the macro mean of the subset's others, averaged by hand
    over models and seeds; untestable without models."""
    from cheems_lib.world.corpus import CATEGORIES

    c = chapter
    ledger = Ledger("evaluation", "test")
    lb.add_category_claims(ledger, c["results"], seed=0)
    assert list(ledger.claims) == list(lb.FIG4_CLAIMS)
    assert {cl.kind for cl in ledger.claims.values()} == {"finding"}  # a world has every category
    for cid, (sub, cat, direction) in lb.FIG4_CLAIMS.items():
        claim = ledger.claims[cid]
        if claim.kind == "untestable":
            continue
        assert claim.kind == "finding" and claim.paper_ref == "§6.1, Fig. 4"
        expected = []
        for m in c["results"]:
            per_seed = []
            for s in c["results"][m]:
                by = s[sub].by_category
                others = [k for k in CATEGORIES if k in by and k != cat]
                per_seed.append(by[cat]["accuracy"] - np.mean([by[k]["accuracy"] for k in others]))
            expected.append(np.mean(per_seed))
        assert claim.estimate == pytest.approx(np.mean(expected))
    empty = Ledger("evaluation", "test")
    lb.add_category_claims(empty, {})
    assert {cl.kind for cl in empty.claims.values()} == {"untestable"}


def test_category_estimates_and_figure(chapter):
    """Fig. 4 plots category_estimates per subset: subset accuracy first, deterministic rows marked *, means as diamonds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cheems_lib.world.corpus import DETERMINISTIC

    res = chapter["results"]
    rows = lb.category_estimates(res, "open")
    first = np.mean([subset_estimate(res[m], "accuracy", ["open"]).value for m in res])
    assert list(rows)[0] == "all categories (subset accuracy)" and rows[list(rows)[0]].value == pytest.approx(first)
    det = np.mean([category_estimate(res[m], DETERMINISTIC, ["open"]).value for m in res])
    assert rows[f"deterministic: {lb.deterministic_label()}"].value == pytest.approx(det)
    assert lb.deterministic_label() == "math, code, reasoning" and any(k.endswith(" *") for k in rows)
    fig = lb.category_figure(res)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["Open Prompt", "Human Instruction"]
    for ax, sub in zip(axes, ("open", "human")):
        want = lb.category_estimates(res, sub)
        means = [c.get_offsets()[0][0] for c in ax.collections[1::2]]
        assert means == pytest.approx([e.value for e in want.values()])
        assert [t.get_text() for t in ax.get_yticklabels()] == list(want)[::-1]
    plt.close(fig)


def test_score_models_equals_score_records_per_set(tmp_path):
    """score_models loads a checkpoint once and gives each record set the scores score_records gives it."""
    from cheems_lib.models.reward_model import build_tiny, load, train_tokenizer
    from cheems_lib.models.scoring import score_records

    recs = build_world(WorldConfig(size="smoke", seed=2)).files["cheems_bench/open.jsonl"][:6]
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=600)
    build_tiny("tiny-xs", tok, seed=3).save_pretrained(tmp_path)
    tok.save_pretrained(tmp_path)
    (tmp_path / "cheems_train.json").write_text("{}")  # the trained-head marker: this test scores, it does not train
    first, second = lb.score_models([str(tmp_path)], [recs[:3], recs[3:]], batch_size=4)
    model, t = load(tmp_path)
    for got, part in ((first, recs[:3]), (second, recs[3:])):
        ref, _ = score_records(model, t, part, batch_size=1)
        assert got[str(tmp_path)].keys() == ref.keys()
        assert all(abs(got[str(tmp_path)][k] - ref[k]) <= 1e-5 for k in ref)


def test_interval_cell_quotes_value_and_interval():
    """A board row's column is quoted as "value [lo, hi]" to three decimals, the same for one row or a column."""
    import pandas as pd

    from cheems_lib.analyses.leaderboard import interval_cell, interval_text

    frame = pd.DataFrame({"overall": [0.61234, 0.5], "overall_lo": [0.55, 0.4449], "overall_hi": [0.6666, 0.6]})
    assert interval_cell(frame.iloc[0], "overall") == "0.612 [0.550, 0.667]"
    assert interval_text(frame, "overall") == ["0.612 [0.550, 0.667]", "0.500 [0.445, 0.600]"]


def test_findings_untestable_without_models_or_on_real_files():
    """No trained model (no preference file): every §6.1 claim is untestable and says what it needs."""
    from cheems_lib.analyses.claims import Ledger
    from cheems_lib.analyses.leaderboard import add_findings

    ledger = Ledger("evaluation", "test")
    add_findings(ledger, {}, rewardbench=None, rewardbench_scores={}, table8=None, simulated=False)
    assert [(c.id, c.kind) for c in ledger.claims.values()] == [
        ("s61-lower-than-rewardbench", "untestable"), (lb.MID_PAIRS_ID, "untestable"),
        ("s61-open-vs-human-instruction", "untestable"), ("s61-deterministic-easier", "untestable")]
    assert all(c.reason == "needs trained models and cheems_bench/" for c in ledger.claims.values())


def test_judge_sentence_on_too_few_prompts_says_insufficient_data(chapter):
    """A judge on five prompts per subset gets the insufficient-data sentence with the count, not a verdict."""
    c = chapter
    few = {k: v[:5] for k, v in c["subsets"].items()}
    judged = lb.evaluate_scores({"judge": c["truth"]}, few, n_boot=60, seed=0)
    text = lb.judge_sentence(judged, c["base_scores"]["baseline:random"], few, n_boot=60)
    assert text.startswith("Insufficient data: ") and "needs at least 10" in text and "above" not in text
