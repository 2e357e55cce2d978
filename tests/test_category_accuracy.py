"""Accuracy per category (Fig. 4): the table with the null controls, the estimates, the figure and §6.1's
reading of it."""
from __future__ import annotations

import numpy as np
import pytest

from cheems_lib.analyses import category_accuracy, leaderboard as lb
from cheems_lib.estimates import category_estimate, subset_estimate
from cheems_lib.analyses.claims import Ledger

from evaluation_chapter import chapter  # noqa: F401 (a fixture)


def test_category_table_models_then_controls(chapter):
    """Fig. 4's table: per category the models' mean accuracy over seeds, then the controls of null_controls()."""
    from cheems_lib.baselines import CONTROLS, null_controls

    c = chapter
    t = category_accuracy.category_table(c["results"], c["subsets"], "open", seed=1)
    assert list(t["model"]) == ["n (prompts / comparisons)", "oracle", "noisy", *CONTROLS]
    assert list(t["section"]) == ["counts"] + ["reward models"] * 2 + [lb.CONTROLS_SECTION] * 4
    assert list(t.columns[:4]) == ["section", "model", "all categories", "all categories (micro)"]
    per_seed = c["results"]["oracle"]
    cat = next(iter(per_seed[0]["open"].by_category))
    col = next(col for col in t.columns if col.startswith(category_accuracy.CATEGORIES[cat]))
    mean = np.mean([r["open"].by_category[cat]["accuracy"] for r in per_seed])
    assert t.set_index("model").loc["oracle", col] == f"{mean:.3f}"
    nulls = null_controls(c["subsets"], seed=1).set_index(["control", "subset", "category"])
    assert t.set_index("model").loc["baseline:longest", "all categories"] == f"{nulls.loc[('baseline:longest', 'open', ''), 'accuracy']:.3f}"
    # the random row is the leaderboard's baseline:random draw (seed 1 over all the subsets' records)
    assert t.set_index("model").loc["baseline:random", "all categories"] == f"{c['baselines']['baseline:random'][0]['open'].accuracy:.3f}"
    assert (t.drop(columns=["section", "model"]) != "nan").all().all()
    # micro beside macro: the models' pooled share, the controls' category accuracies weighted by comparisons
    first = per_seed[0]["open"]
    assert t.set_index("model").loc["n (prompts / comparisons)", col] == \
        f"{first.by_category[cat]['prompts']:,} / {first.by_category[cat]['comparisons']:,}"
    assert t.set_index("model").loc["oracle", "all categories (micro)"] == \
        f"{np.mean([r['open'].micro_accuracy for r in per_seed]):.3f}"
    longest = c["baselines"]["baseline:longest"][0]["open"]
    assert t.set_index("model").loc["baseline:longest", "all categories (micro)"] == f"{longest.micro_accuracy:.3f}"


def test_findings_pair_a_one_run_model_with_each_training_seed(chapter):
    """A loaded model (one run) beside models trained with two seeds: the §6.1 claims and Fig. 4's rows average
    them, the one run broadcast to each seed (as a baseline is paired), instead of refusing to pair them."""
    c = chapter
    mixed = {**c["results"], "loaded": lb.evaluate_scores({"loaded": c["truth"]}, c["subsets"], n_boot=60)["loaded"]}
    rows = category_accuracy.category_estimates(mixed, "open")
    alone = category_accuracy.category_estimates({"loaded": mixed["loaded"]}, "open")
    both = category_accuracy.category_estimates(c["results"], "open")
    key = "all categories (subset accuracy)"
    assert rows[key].seeds == 2
    assert rows[key].value == pytest.approx((both[key].value * 2 + alone[key].value) / 3)


def test_fig4_category_claims(chapter):
    """One claim per category §6.1 names: the category minus the macro mean of the subset's others, averaged by hand
    over models and seeds; untestable without models."""
    from cheems_lib.categories import CATEGORIES

    c = chapter
    ledger = Ledger("evaluation", "test")
    category_accuracy.add_category_claims(ledger, c["results"], seed=0)
    assert list(ledger.claims) == list(category_accuracy.FIG4_CLAIMS)
    assert {cl.kind for cl in ledger.claims.values()} == {"finding"}  # a world has every category
    for cid, (sub, cat, direction) in category_accuracy.FIG4_CLAIMS.items():
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
    category_accuracy.add_category_claims(empty, {})
    assert {cl.kind for cl in empty.claims.values()} == {"untestable"}


def test_category_estimates_and_figure(chapter):
    """Fig. 4 plots category_estimates per subset: subset accuracy first, deterministic rows marked *, means as diamonds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    from cheems_lib.categories import DETERMINISTIC

    res = chapter["results"]
    rows = category_accuracy.category_estimates(res, "open")
    first = np.mean([subset_estimate(res[m], "accuracy", ["open"]).value for m in res])
    assert list(rows)[0] == "all categories (subset accuracy)" and rows[list(rows)[0]].value == pytest.approx(first)
    det = np.mean([category_estimate(res[m], DETERMINISTIC, ["open"]).value for m in res])
    assert rows[f"deterministic: {category_accuracy.deterministic_label()}"].value == pytest.approx(det)
    assert category_accuracy.deterministic_label() == "math, code, reasoning" and any(k.endswith(" *") for k in rows)
    fig = category_accuracy.category_figure(res)
    axes = fig.axes
    assert [ax.get_title() for ax in axes] == ["Open Prompt", "Human Instruction"]
    for ax, sub in zip(axes, ("open", "human")):
        want = category_accuracy.category_estimates(res, sub)
        means = [c.get_offsets()[0][0] for c in ax.collections[1::2]]
        assert means == pytest.approx([e.value for e in want.values()])
        assert [t.get_text() for t in ax.get_yticklabels()] == list(want)[::-1]
    plt.close(fig)


def test_category_tables_are_one_per_subset_and_none_without_both(chapter):
    """Fig. 4's tables: category_table of Open Prompt and Human Instruction; none without results or a subset."""
    c = chapter
    tables = category_accuracy.category_tables(c["results"], c["subsets"], seed=1)
    assert list(tables) == ["open", "human"]
    assert tables["human"].equals(category_accuracy.category_table(c["results"], c["subsets"], "human", seed=1))
    assert category_accuracy.category_tables({}, c["subsets"]) == {}
    assert category_accuracy.category_tables(c["results"], {"open": c["subsets"]["open"]}) == {}
