"""Leaderboards: sorted by Overall, intervals bracket the estimates, baselines present, Fig. 4 data."""
from __future__ import annotations

from cheems_lib.leaderboard import baseline_scores, category_accuracy, leaderboard
from cheems_lib.simulation import WorldConfig, build_world


def test_leaderboard_rows_and_order():
    """The leaderboard sorts by overall score, oracle first, with intervals around each score."""
    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    truth = {(t["prompt_id"], t["response_id"]): t["utility"] for t in w.truth}
    scores = {"oracle": truth, **baseline_scores([r for s in subsets.values() for r in s])}
    board = leaderboard(subsets, scores, n_boot=100)
    assert list(board["model"])[0] == "oracle" and len(board) == 4
    assert (board["overall"].diff().dropna() <= 0).all()
    for col in ("open_acc", "human_exact", "overall"):
        assert ((board[f"{col}_lo"] <= board[col]) & (board[col] <= board[f"{col}_hi"])).all()
    cats = category_accuracy(subsets, scores)
    assert set(cats["model"]) == set(scores) and cats["accuracy"].between(0, 1).all()


def test_one_baseline_spelling_and_the_text_board_order():
    """Baselines carry the CLI's names; `cheems evaluate`'s text table sorts like board() (Overall, descending)."""
    from cheems_lib.baselines import NAMES
    from cheems_lib.leaderboard import board, evaluate_scores, text_board
    from cheems_lib.metrics import overall

    w = build_world(WorldConfig(size="smoke", seed=0))
    subsets = {"open": w.files["cheems_bench/open.jsonl"], "human": w.files["cheems_bench/human.jsonl"]}
    scores = baseline_scores([r for s in subsets.values() for r in s], seed=1)
    assert tuple(scores) == NAMES == ("baseline:random", "baseline:longest", "baseline:shortest")
    results = evaluate_scores(scores, subsets, n_boot=0)
    per_model = {m: {**{s: r.to_json() for s, r in res[0].items()}, "overall": overall(list(res[0].values()))}
                 for m, res in results.items()}
    lines = text_board(per_model, list(subsets)).splitlines()
    assert [l.split()[0] for l in lines[2:]] == list(board(evaluate_scores(scores, subsets, n_boot=20))["model"])
