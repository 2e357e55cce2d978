"""Dataset analogues of Table 3: each changes one property of the preference set and stands for the rows that share it."""
from __future__ import annotations

import pytest

from cheems_lib.analyses import transfer
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.analyses.transfer import PROPERTIES, TABLE3_DATASETS, analogues, domain_only, noisy_labels, pairwise_only


@pytest.fixture(scope="module")
def files():
    """The smoke world's files."""
    return build_world(WorldConfig(size="smoke", seed=6)).files


@pytest.fixture(scope="module")
def sets(files):
    """The chapter's analogues on the smoke world."""
    return analogues(files, prompts=100)


def test_pairwise_only_keeps_one_seeded_strict_pair(files):
    """pairwise_only leaves two responses of different rank per prompt, the same ones for the same seed."""
    gpt = files["cheems_preference/gpt.jsonl"]
    pw = pairwise_only(gpt, seed=1)
    assert all(len(r.responses) == 2 and sorted(r.rank.values()) == [0, 1] for r in pw)
    assert [r.rank for r in pairwise_only(gpt, seed=1)] == [r.rank for r in pw]


def test_domain_only_keeps_one_category(files):
    """domain_only keeps only the prompts of the category asked for."""
    assert all(r.top_category == "数学" for r in domain_only(files["cheems_preference/gpt.jsonl"], "数学"))


def test_noisy_labels_flip_about_the_share_asked(files):
    """noisy_labels flips about the share of annotations asked and re-ranks every record."""
    gpt = files["cheems_preference/gpt.jsonl"]
    noisy = noisy_labels(gpt, flip=0.3, seed=2)
    flipped = sum(a[2] != b[2] for r, n in zip(gpt, noisy) for a, b in zip(r.annotations, n.annotations))
    total = sum(len(r.annotations) for r in gpt)
    assert 0.25 < flipped / total < 0.35 and all(r.rank is not None for r in noisy)


def test_every_analogue_has_records_and_says_what_it_isolates(sets):
    """Five non-empty sets, each with its properties and the one property it changes."""
    assert len(sets) == 5
    for d in sets.values():
        assert d["records"] and d["isolates"] and all(d[p] for p in (*PROPERTIES, "labels"))


def test_properties_cover_exactly_the_rows_of_table3():
    """TABLE3_DATASETS describes every row of data/paper/table3_datasets.csv and no other."""
    assert set(TABLE3_DATASETS) == set(transfer.paper_accuracy().index)
    for row in TABLE3_DATASETS.values():
        assert set(PROPERTIES) <= set(row) and row["note"]


def test_analogues_agree_with_the_table3_rows_they_stand_for(sets):
    """Each analogue's annotation, format and domain equal those of every Table 3 row (of the CSV) it stands for."""
    rows = set(transfer.paper_accuracy().index)
    for name, d in sets.items():
        for dataset in d["stands_for"]:
            assert dataset in rows, f"{name} stands for {dataset}, not a row of table3_datasets.csv"
            for prop in PROPERTIES:
                assert TABLE3_DATASETS[dataset][prop] == d[prop], (name, dataset, prop)


def test_analogues_stand_for_every_row_that_matches_them(sets):
    """No Table 3 row with an analogue's three properties (and clean labels) is left out of its stands_for."""
    for name, d in sets.items():
        if d["labels"] != "as annotated":
            assert not d["stands_for"]
            continue
        matching = {n for n, row in TABLE3_DATASETS.items() if all(row[p] == d[p] for p in PROPERTIES)}
        assert matching == set(d["stands_for"]), name


def test_known_properties_of_table3_datasets():
    """The corrected kinds: HH-RLHF, Chatbot Arena, PKU-SafeRLHF, HelpSteer2 are human; Skywork is pairwise;
    MathStackExchange is human-ranked math, unlike the machine-annotated math analogue."""
    for name in ("HH-RLHF", "ChatbotArena", "PKU-SafeRLHF", "HelpSteer2"):
        assert TABLE3_DATASETS[name]["annotation"] == "human"
    assert TABLE3_DATASETS["Skywork"]["format"] == "pairwise"
    assert TABLE3_DATASETS["MathStackExchange"]["annotation"] == "human"
    assert TABLE3_DATASETS["MathStackExchange"]["domain"] == "math"


def test_pairwise_annotation_comparison_is_matched(sets):
    """The pairwise human and machine sets have one pair per prompt and as many pairs; the human one keeps the
    multi-response human set's prompts."""
    ph, pm = sets["pairwise, human"]["records"], sets["pairwise, machine"]["records"]
    assert len(ph) == len(pm)
    assert all(len(r.annotations) == 1 and len(r.responses) == 2 for r in ph + pm)
    assert {r.id for r in ph} <= {r.id for r in sets["multi-response, human"]["records"]}
    assert (sets["pairwise, human"]["annotation"], sets["pairwise, machine"]["annotation"]) == ("human", "machine")


def test_annotation_pairs_are_the_chapters_pairwise_sets(files, sets):
    """annotation_pairs, which the sensitivity chapter's sweep of tab3-human-beats-machine uses, builds exactly the
    chapter's two pairwise sets (one place builds them), the machine pairs from the whole GPT subset in order."""
    human, gpt = files["cheems_preference/human.jsonl"], files["cheems_preference/gpt.jsonl"]
    ph, pm = transfer.annotation_pairs(human, gpt, seed=0)
    assert ph == sets["pairwise, human"]["records"] and pm == sets["pairwise, machine"]["records"]
    assert pm == pairwise_only(gpt, seed=0)[:len(ph)]


def test_nearest_names_rows_one_property_away():
    """nearest lists the rows that differ in exactly one known property, with that property."""
    near = transfer.nearest({"annotation": "machine", "format": "multi-response", "domain": "math"})
    assert near["MathStackExchange"] == "annotation" and near["UltraFeedback"] == "domain"
    assert "MathPreference" not in near  # its annotation is unknown
    noisy = transfer.nearest({"annotation": "machine", "format": "multi-response", "domain": "general",
                              "labels": "30% flipped"})
    assert noisy == {"Nectar": "labels", "UltraFeedback": "labels"}


def test_paper_groups_are_rows_of_table3():
    """The format/annotation groups name datasets of data/paper/table3_datasets.csv, with their mean accuracy."""
    t3 = transfer.paper_accuracy()
    groups = transfer.table3_groups()
    assert set(groups["pairwise, human-annotated"]) >= {"HH-RLHF", "HelpSteer2"}
    assert "Skywork" in groups["pairwise, machine-annotated"]
    for members in groups.values():
        assert set(members) <= set(t3.index)
    row = t3.loc["HH-RLHF"]
    assert row["mean_acc"] == (row["open_acc"] + row["human_acc"]) / 2


@pytest.fixture(scope="module")
def evaluated(files, sets):
    """Stand-in results for the chapter's tables: each analogue 'scored' by seeded random scores (two seeds),
    plus the baselines, on the smoke world's benchmark; the board indexed by model and Overall estimates."""
    from cheems_lib.baselines import random_scores
    from cheems_lib.estimates import subset_estimate
    from cheems_lib.analyses.leaderboard import baseline_scores, evaluate_scores, leaderboard_frame

    bench = {"open": files["cheems_bench/open.jsonl"], "human": files["cheems_bench/human.jsonl"]}
    records = [r for s in bench.values() for r in s]
    scores = {name: [random_scores(records, seed=10 * i + s) for s in range(2)] for i, name in enumerate(sets)}
    results = evaluate_scores({**scores, **baseline_scores(records)}, bench, n_boot=40)
    return leaderboard_frame(results).set_index("model"), {n: subset_estimate(r) for n, r in results.items()}


def test_table3_has_a_row_per_set_then_the_baselines(sets, evaluated):
    """Our Table 3: the analogues in order, then the other models, with leaderboard_frame()'s intervals and 'one property
    away' only for analogues that stand for no row."""
    board, _ = evaluated
    t = transfer.table3(sets, board)
    assert list(t["training data"]) == list(sets) + ["baseline:longest", "baseline:shortest", "baseline:random"]
    for _, row in t.iterrows():
        r = board.loc[row["training data"]]
        assert row["overall"] == f"{r['overall']:.3f} [{r['overall_lo']:.3f}, {r['overall_hi']:.3f}]"
        d = sets.get(row["training data"])
        assert row["prompts"] == (len(d["records"]) if d else "-") and row["seeds"] == r["seeds"]
        assert (row["one property away"] != "-") <= bool(d and not d["stands_for"])


def test_table3_shows_its_results_before_the_descriptions(sets, evaluated):
    """Our Table 3 and the paper's: the results come right after the row's name (Overall first in ours), so at a
    page's width they are in view before any description column."""
    board, _ = evaluated
    assert list(transfer.table3(sets, board).columns[:4]) == ["section", "training data", "overall", "open acc"]
    assert list(transfer.published_table3(sets).columns[:5]) == ["dataset", "open_acc", "open_exact", "human_acc",
                                                                 "human_exact"]


def test_table3_shows_the_null_controls_apart_with_the_exact_chance(files, sets, evaluated):
    """Given the benchmark, Table 3's baselines and the exact chance (chance_metrics) form their own section, last."""
    from cheems_lib.analyses.leaderboard import CONTROLS_SECTION
    from cheems_lib.baselines import CHANCE, chance_metrics

    board, _ = evaluated
    bench = {"open": files["cheems_bench/open.jsonl"], "human": files["cheems_bench/human.jsonl"]}
    t = transfer.table3(sets, board, bench)
    assert list(t["section"]) == ["training data (ours)"] * len(sets) + [CONTROLS_SECTION] * (len(board) - len(sets) + 1)
    chance = t.iloc[-1]
    assert chance["training data"] == CHANCE and chance["open acc"] == "0.500 (exact)"
    assert chance["human exact"] == f"{chance_metrics(bench['human'])['exact_match']:.3f} (exact)"


def test_published_table3_adds_our_properties_and_analogue(sets):
    """The paper's rows with each dataset's properties from TABLE3_DATASETS and the analogue standing for it."""
    pub = transfer.published_table3(sets)
    assert list(pub["dataset"]) == list(transfer.paper_accuracy().index)
    for _, row in pub.iterrows():
        assert all(row[p] == TABLE3_DATASETS[row["dataset"]][p] for p in (*PROPERTIES, "note"))
        standing = [n for n, d in sets.items() if row["dataset"] in d["stands_for"]]
        assert row["our analogue"] == (standing[0] if standing else "-")


def test_paper_groups_text_quotes_each_dataset_mean():
    """Each group of table3_groups, with each dataset's mean accuracy read from the CSV, three decimals."""
    t3 = transfer.paper_accuracy()
    text = transfer.paper_groups_text()
    for group, names in transfer.table3_groups().items():
        assert f"{group}: {names[0]} {t3.loc[names[0], 'mean_acc']:.3f}" in text


def test_add_claims_tests_the_paired_differences(sets, evaluated):
    """Three claims in order; the two findings' estimates are the paired Overall differences, language is untestable."""
    from cheems_lib.analyses.claims import Ledger

    _, overall = evaluated
    ledger = Ledger("transfer", "test")
    transfer.add_claims(ledger, sets, overall)
    assert list(ledger.claims) == ["tab3-multi-response-helps", "tab3-human-beats-machine", "tab3-chinese-vs-english",
                                   "tab3-huozi-best-chinese", "tab3-ultrafeedback-best-english"]
    diff = overall[transfer.MULTI_HUMAN] - overall[transfer.PAIR_HUMAN]
    assert ledger.claims["tab3-multi-response-helps"].estimate == pytest.approx(diff.value)
    diff = overall[transfer.PAIR_HUMAN] - overall[transfer.PAIR_MACHINE]
    assert ledger.claims["tab3-human-beats-machine"].estimate == pytest.approx(diff.value)
    assert ledger.claims["tab3-chinese-vs-english"].kind == "untestable"


def test_questions_of_ours_are_not_credited_to_the_paper(sets, evaluated):
    """The two Table 3 comparisons the paper never makes are kind question with an "ours" paper_ref, tested or untestable;
    the multi-response one names its confound, the comparisons per prompt of both sets."""
    from cheems_lib.analyses.claims import Ledger

    ledger = Ledger("transfer", "test")
    transfer.add_claims(ledger, sets, evaluated[1])
    multi = ledger.claims["tab3-multi-response-helps"]
    for cid in ("tab3-multi-response-helps", "tab3-human-beats-machine"):
        assert ledger.claims[cid].kind == "question" and ledger.claims[cid].paper_ref.startswith("ours (relates to ")
    per_prompt = transfer._comparisons_per_prompt(sets[transfer.MULTI_HUMAN]["records"])
    assert per_prompt > 1 and f"{per_prompt:.1f} comparisons per prompt" in multi.reason and "confounded" in multi.reason
    untested = Ledger("transfer", "test")
    transfer.add_untestable_claims(untested, "needs x")
    assert untested.claims["tab3-multi-response-helps"].paper_ref.startswith("ours (relates to ")


def test_best_dataset_claims_read_the_papers_table3():
    """Huozi and UltraFeedback: arithmetic on the paper's Table 3 CSV. Each has the highest Overall (mean of the
    four columns) of its language, recomputed here from the CSV, and the sentence names the columns where it is not
    first (Huozi's Open Prompt exact, UltraFeedback's Human Instruction accuracy)."""
    from cheems_lib.analyses.claims import Ledger
    from cheems_lib.paper import table

    t3 = table("table3_datasets").set_index("dataset")
    ledger = Ledger("transfer", "test")
    transfer.add_best_dataset_claims(ledger)
    for cid, (lang, name) in {"tab3-huozi-best-chinese": ("zh", "Huozi"),
                              "tab3-ultrafeedback-best-english": ("en", "UltraFeedback")}.items():
        rows = t3[t3["language"] == lang][["open_acc", "open_exact", "human_acc", "human_exact"]]
        overall = rows.mean(axis=1)
        claim = ledger.claims[cid]
        assert claim.kind == "arithmetic" and "paper's own Table 3" in claim.reason
        assert claim.estimate == pytest.approx(overall[name] - overall.drop(name).max())
        assert claim.verdict == ("supported" if overall.idxmax() == name else "contradicted")
        for col in rows:
            assert (rows[col].idxmax() != name) == (rows[col].drop(name).max() > rows.loc[name, col])
        behind = [c for c in rows if rows[c].drop(name).max() > rows.loc[name, c]]
        assert ("not first in every column" in claim.sentence) == bool(behind)
    assert "Open Prompt exact: HH-RLHF-cn" in ledger.claims["tab3-huozi-best-chinese"].sentence
    assert "Human Instruction accuracy: Skywork" in ledger.claims["tab3-ultrafeedback-best-english"].sentence


def test_effects_reads_each_change_against_its_reference(sets, evaluated):
    """One row and one short sentence per change of EFFECTS, without asides in parentheses; 'raises' exactly when the
    difference's interval is above zero."""
    import re

    from cheems_lib.estimates import decide

    _, overall = evaluated
    table, text = transfer.effects(sets, overall)
    sentences = re.split(r"(?<=\.) (?=[A-Z])", text)
    assert list(table["variant"]) == list(transfer.EFFECTS) and len(sentences) == len(transfer.EFFECTS)
    assert all(s.endswith(".") and "(" not in s for s in sentences), sentences
    for _, row in table.iterrows():
        diff = overall[row["variant"]] - overall[row["reference"]]
        assert row["reference"] == transfer.EFFECTS[row["variant"]][0]
        assert (row["Overall"] == "raises") == (decide(diff, "greater") == "supported")
        assert row["Overall difference [95%]"].startswith(f"{diff.value:+.3f}")


def test_add_real_claims(monkeypatch):
    """Without a trained model both real-data transfer claims are untestable with the reason; with
    one, a model that beats both baselines on 20 prompts is *supported* against each (paired)."""
    import numpy as np
    import myst_nb

    from cheems_lib import estimates
    from cheems_lib.analyses import claims

    monkeypatch.setattr(myst_nb, "glue", lambda *a, **k: None)
    ledger = claims.Ledger("real", "test")
    transfer.add_real_claims(ledger, {}, None, reason="needs cheems_preference.jsonl")
    assert {c.kind for c in ledger.claims.values()} == {"untestable"}
    assert ledger.claims["real-transfer-beats-random"].reason == "needs cheems_preference.jsonl"
    boot = np.linspace(-0.02, 0.02, 100)
    acc = {"rm": estimates.Estimate(np.array([0.8, 0.82]), np.stack([0.8 + boot, 0.82 + boot]), n=20),
           "baseline:random": estimates.Estimate.single(0.5, 0.5 + boot, n=20),
           "baseline:longest": estimates.Estimate.single(0.6, 0.6 + boot, n=20)}
    ledger = claims.Ledger("real", "test")
    transfer.add_real_claims(ledger, acc, "rm")
    assert [c.verdict for c in ledger.claims.values()] == ["supported", "supported"]
