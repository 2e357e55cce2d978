"""Dataset analogues of Table 3: each changes one property of the preference set."""
from __future__ import annotations

from cheems_lib.simulation import WorldConfig, build_world
from cheems_lib.transfer import analogues, domain_only, noisy_labels, pairwise_only


def test_variants(tmp_path):
    w = build_world(WorldConfig(size="smoke", seed=6))
    gpt = w.files["cheems_preference/gpt.jsonl"]
    pw = pairwise_only(gpt, seed=1)
    assert all(len(r.responses) == 2 and sorted(r.rank.values()) == [0, 1] for r in pw)
    assert [r.rank for r in pairwise_only(gpt, seed=1)] == [r.rank for r in pw]
    assert all(r.top_category == "数学" for r in domain_only(gpt, "数学"))
    noisy = noisy_labels(gpt, flip=0.3, seed=2)
    flipped = sum(a[2] != b[2] for r, n in zip(gpt, noisy) for a, b in zip(r.annotations, n.annotations))
    total = sum(len(r.annotations) for r in gpt)
    assert 0.25 < flipped / total < 0.35 and all(r.rank is not None for r in noisy)
    sets = analogues(w.files, prompts=100)
    assert len(sets) == 5 and all(d["records"] and d["mimics"] for d in sets.values())


def test_analogues_state_what_they_isolate_and_mimic():
    """Every analogue names the one property it changes; the pairwise one says the real pairwise sets are human-annotated."""
    w = build_world(WorldConfig(size="smoke", seed=6))
    sets = analogues(w.files, prompts=100)
    assert all(d["isolates"] for d in sets.values())
    assert "Skywork" not in sets["multi-response, machine"]["mimics"]
    assert "human-annotated" in sets["pairwise only, machine"]["mimics"]


def test_paper_groups_are_rows_of_table3():
    """The format/annotation groups name datasets of data/paper/table3_datasets.csv, with their mean accuracy."""
    from cheems_lib.transfer import TABLE3_GROUPS, paper_accuracy

    t3 = paper_accuracy()
    for members in TABLE3_GROUPS.values():
        assert set(members) <= set(t3.index)
    row = t3.loc["HH-RLHF"]
    assert row["mean_acc"] == (row["open_acc"] + row["human_acc"]) / 2
