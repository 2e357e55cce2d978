"""Leaderboards (Table 2): sorted by Overall, intervals bracket the estimates, baselines present; the evaluation
chapter's Table 2 as shown."""
from __future__ import annotations

from cheems_lib.analyses import leaderboard as lb
from cheems_lib.analyses.category_accuracy import category_accuracy
from cheems_lib.analyses.leaderboard import baseline_scores, evaluate_scores, leaderboard_frame
from cheems_lib.world.simulation import WorldConfig, build_world

from evaluation_chapter import chapter  # noqa: F401 (a fixture)


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
    from cheems_lib.analyses.score_evaluation import summary_json
    from cheems_lib.metrics import overall

    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    scores = baseline_scores([r for s in subsets.values() for r in s], seed=1)
    assert tuple(scores) == NAMES == ("baseline:random", "baseline:longest", "baseline:shortest")
    results = evaluate_scores(scores, subsets, n_boot=0)
    per_model = {m: summary_json(res[0]) for m, res in results.items()}
    assert all(p["overall"] == overall(list(r[0].values())) for p, r in zip(per_model.values(), results.values()))
    lines = leaderboard_text(per_model, list(subsets)).splitlines()
    assert [l.split()[0] for l in lines[2:]] == list(leaderboard_frame(evaluate_scores(scores, subsets, n_boot=20))["model"])


def test_table2_rows_kinds_prompts_and_intervals(chapter):
    """table2_as_shown lists the models in leaderboard_frame()'s order with their kind, own prompt count and
    intervals, then the null controls in their own section (CONTROLS' order), then the exact chance."""
    from cheems_lib.analyses.model_comparison import rank_intervals, rank_text
    from cheems_lib.baselines import CHANCE, CONTROLS, chance_metrics
    from cheems_lib.estimates import subset_estimate

    c = chapter
    kinds = {"oracle": "ours", "noisy": "ours", "judge": "judge"}
    shown = lb.table2_as_shown([(c["results"], c["subsets"]), (c["baselines"], c["subsets"]), (c["judged"], c["small"])], kinds)
    ref = lb.leaderboard_frame({**c["results"], **c["judged"]})
    assert list(shown.columns) == ["section", "model", "Overall", "rank", "kind", "prompts", "seeds",
                                   "Open Prompt acc.", "Open Prompt exact", "Open Prompt micro acc.",
                                   "Open Prompt micro exact", "Human Instr. acc.", "Human Instr. exact",
                                   "Human Instr. micro acc.", "Human Instr. micro exact",
                                   "Overall (micro)"]  # key column first
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
    assert chance["Open Prompt micro acc."] == "0.500 (exact)"
    assert list(controls["rank"]) == ["–"] * 4 and models["rank"].iloc[0].startswith("1")
    # the judge saw other prompts: ranked, not tested for a tie with the first
    groups = {m: "small" if m == "judge" else "all" for m in ref["model"]}
    ranks = rank_intervals({m: subset_estimate({**c["results"], **c["judged"]}[m], "overall") for m in ref["model"]},
                           groups=groups)
    assert ranks["judge"]["tied_with_first"] is (True if ranks["judge"]["rank"] == 1 else None)
    assert list(models["rank"]) == [rank_text(ranks[m]) for m in ref["model"]]
    assert "order flips" not in shown
    flips = lb.table2_as_shown([(c["results"], c["subsets"]), (c["judged"], c["small"])], kinds,
                               consistency={"judge": 0.75})["order flips"]
    assert sorted(flips) == ["", "", "0.250"]


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


def test_judge_results_evaluate_every_judge_on_all_the_subsets_records(chapter, monkeypatch):
    """Each judge sees the records of every subset at once, on the device and batch size asked, and its scores are
    evaluated like a model's (same bootstrap seed: paired); no judges or no subsets: nothing is loaded."""
    c, calls = chapter, []

    def judge_all(judges, records, *, device, dtype, batch_size):
        calls.append((dict(judges), [r.id for r in records], device, dtype, batch_size))
        return {name: c["truth"] for name in judges}, {name: 0.75 for name in judges}

    monkeypatch.setattr(lb, "judge_all", judge_all)
    results, consistency, scores = lb.judge_results({"judge": "path"}, c["small"], device="cpu", batch_size=4,
                                                    n_boot=60, seed=0)
    assert calls == [({"judge": "path"}, [r.id for s in c["small"].values() for r in s], "cpu", None, 4)]
    assert consistency == {"judge": 0.75} and scores == {"judge": c["truth"]}
    expected = c["judged"]["judge"][0]
    assert {sub: r.accuracy for sub, r in results["judge"][0].items()} == {sub: r.accuracy for sub, r in expected.items()}
    assert (results["judge"][0]["open"].boot_accuracy == expected["open"].boot_accuracy).all()
    assert lb.judge_results({}, c["small"]) == ({}, {}, {}) and lb.judge_results({"judge": "path"}, {}) == ({}, {}, {})
    assert len(calls) == 1
