"""Comparing models (cheems_lib.analyses.model_comparison, `cheems evaluate --baseline`): paired differences checked
against the replicates of the evaluations they pair, Holm by hand, rank intervals by hand, and the command line."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import numpy as np
import pytest

from cheems_lib.analyses.model_comparison import paired_differences, rank_intervals, rank_text, same_prompts
from cheems_lib.estimates import Estimate, holm_adjust, subset_estimate
from cheems_lib.metrics import evaluate_subset
from cheems_lib.records import write_records
from cheems_lib.score_file import write_scores
from conftest import make_record

CHEEMS = [sys.executable, "-m", "cheems_lib.cli"]


def _subset(seed: int, n: int = 60, cats: str = "xyz"):
    rng = random.Random(seed)
    return [make_record(f"{seed}-{i}", "abcd", rank={c: rng.randint(0, 3) for c in "abcd"}, category=[cats[i % len(cats)]])
            for i in range(n)]


def _scores(records, seed: int, skill: float):
    """Scores that follow the gold rank with strength ``skill`` (0: random)."""
    rng = np.random.default_rng(seed)
    return {(r.id, x): -skill * r.rank[x] + float(rng.normal()) for r in records for x in r.rank}


def _results(subsets, scores, n_boot=400):
    return {name: evaluate_subset(recs, scores, n_boot=n_boot, seed=7) for name, recs in subsets.items()}


@pytest.fixture(scope="module")
def two_models():
    subsets = {"open": _subset(1), "human": _subset(2)}
    every = [r for recs in subsets.values() for r in recs]
    good, weak = _scores(every, 0, 1.0), _scores(every, 1, 0.1)
    return subsets, {"good": [_results(subsets, good)], "weak": [_results(subsets, weak)]}


def test_differences_are_the_paired_replicates(two_models):
    """Each difference is the model's value minus the baseline's, its interval the percentiles of the replicate
    differences (the same resamples), and its p-value twice the share of replicates on the far side of zero."""
    subsets, results = two_models
    out = paired_differences(results, "weak")["good"]
    good, weak = results["good"][0]["open"], results["weak"][0]["open"]
    cell = out["subsets"]["open"]["accuracy"]
    assert cell["difference"] == pytest.approx(good.accuracy - weak.accuracy, abs=1e-15)
    diff = good.boot_accuracy - weak.boot_accuracy
    assert cell["ci"] == pytest.approx(list(np.quantile(diff, [0.025, 0.975])), abs=1e-15)
    assert cell["p"] == pytest.approx(max(2 / 400, min(1.0, 2 * min(np.mean(diff <= 0), np.mean(diff >= 0)))))
    cat = out["subsets"]["open"]["by_category"]["x"]
    cat_diff = good.boot_category_accuracy["x"] - weak.boot_category_accuracy["x"]
    assert cat["difference"] == pytest.approx(good.by_category["x"]["accuracy"] - weak.by_category["x"]["accuracy"])
    assert cat["ci"] == pytest.approx(list(np.quantile(cat_diff, [0.025, 0.975])), abs=1e-15)
    overall = (good.score + results["good"][0]["human"].score) / 2 - \
        (weak.score + results["weak"][0]["human"].score) / 2
    assert out["overall"]["difference"] == pytest.approx(overall, abs=1e-15)
    assert out["overall"]["ci"][0] > 0  # a model that follows the gold rank beats a near-random one, paired
    assert "weak" not in paired_differences(results, "weak")


def test_holm_runs_over_every_category_of_every_file(two_models):
    """The categories' adjusted p-values are Holm's over all six (three categories in each of two files)."""
    _, results = two_models
    row = paired_differences(results, "weak")["good"]
    cells = [row["subsets"][s]["by_category"][c] for s in ("open", "human") for c in "xyz"]
    assert [c["p_holm"] for c in cells] == pytest.approx(holm_adjust([c["p"] for c in cells]).tolist())
    assert all(c["differs"] == (c["p_holm"] <= 0.05) for c in cells)
    assert "6 categories" in row["holm"]


def test_a_model_equal_to_the_baseline_has_no_interval(two_models):
    """Identical scores: a difference of zero in every replicate, which is no 95% interval (insufficient data)."""
    _, results = two_models
    cell = paired_differences({"a": results["good"], "b": results["good"]}, "b")["a"]["subsets"]["open"]["accuracy"]
    assert cell["difference"] == 0 and "ci" not in cell and "every bootstrap resample" in cell["ci_note"]


def test_a_p_value_of_no_replicate_beyond_zero_is_its_bound(two_models):
    """A model far better than the baseline: no replicate of the overall difference at or below zero, so its p is
    reported as 2 / n_boot, the most such a bootstrap can say, and Holm's note names too few replicates."""
    subsets, results = two_models
    row = paired_differences(results, "weak")["good"]
    assert row["overall"]["p"] == 2 / 400 and "smallest p" not in row["holm"]  # 400 >= 2 x 6 / 0.05
    every = [r for recs in subsets.values() for r in recs]
    few = {n: [_results(subsets, _scores(every, k, skill), n_boot=100)] for k, (n, skill) in
           enumerate((("good", 1.0), ("weak", 0.1)))}
    assert "with 100 replicates the smallest p is 0.02" in paired_differences(few, "weak")["good"]["holm"]
    assert "--bootstrap 240" in paired_differences(few, "weak")["good"]["holm"]


def test_same_counts_on_other_prompts_are_not_paired(two_models):
    """Each model lacks another prompt of one category (so every count is the same): not the same prompts."""
    from dataclasses import replace

    subsets, results = two_models
    other = {n: recs[:-1] + [replace(recs[-1], id="other")] if n == "open" else recs for n, recs in subsets.items()}
    every = [r for recs in [*subsets.values(), other["open"]] for r in recs]
    a, b = _results(subsets, _scores(every, 4, 1.0)), _results(other, _scores(every, 5, 1.0))
    assert [a["open"].by_category[c]["prompts"] for c in "xyz"] == [b["open"].by_category[c]["prompts"] for c in "xyz"]
    assert not same_prompts(a, b)
    with pytest.raises(ValueError, match="different prompts"):
        paired_differences({"a": [a], "b": [b]}, "b")


def test_without_replicates_nothing_is_tested_or_tied():
    """--bootstrap 0: differences alone, no Holm; ranks alone, and only the first is tied with the first."""
    subsets = {"open": _subset(1)}
    every = subsets["open"]
    results = {n: [_results(subsets, _scores(every, k, skill), n_boot=0)] for k, (n, skill) in
               enumerate((("good", 1.0), ("weak", 0.1)))}
    row = paired_differences(results, "weak")["good"]
    assert set(row["subsets"]["open"]["accuracy"]) == {"difference"}
    assert row["holm"].endswith("none was tested")
    from cheems_lib.analyses.leaderboard import paired_text
    assert "not tested (no intervals)" in paired_text({"good": row}, ["open"])
    ranks = rank_intervals({n: subset_estimate(r, "accuracy") for n, r in results.items()})
    assert ranks == {"good": {"rank": 1, "rank_ci": None, "tied_with_first": True},
                     "weak": {"rank": 2, "rank_ci": None, "tied_with_first": None}}


def test_a_model_on_other_prompts_is_ranked_but_not_called_tied():
    """groups: a model evaluated on other prompts than the first gets a rank interval but no tie verdict."""
    reps = np.linspace(-0.05, 0.05, 100)
    e = {"a": Estimate.single(0.8, 0.8 + reps, n=50), "judge": Estimate.single(0.79, 0.79 + reps[::-1], n=20)}
    out = rank_intervals(e, groups={"a": "all prompts", "judge": "first 20"})
    assert out["judge"]["rank_ci"] == [1, 2] and out["judge"]["tied_with_first"] is None
    assert rank_intervals(e)["judge"]["tied_with_first"] is True


def test_other_prompts_cannot_be_paired(two_models):
    subsets, results = two_models
    fewer = {name: recs[:-1] if name == "open" else recs for name, recs in subsets.items()}
    every = [r for recs in subsets.values() for r in recs]
    other = _results(fewer, _scores(every, 3, 1.0))
    assert not same_prompts(other, results["weak"][0])
    with pytest.raises(ValueError, match="different prompts"):
        paired_differences({"other": [other], "weak": results["weak"]}, "weak")
    with pytest.raises(ValueError, match="no model named"):
        paired_differences(results, "nobody")


def test_rank_intervals_by_hand():
    """Four replicates: the ranks in each by hand (equal values share a rank), the interval their extremes at this
    coverage (95% of four: the lower and higher quantiles are the min and max), ties with the first by the paired
    difference."""
    e = {"a": Estimate.single(0.6, [0.60, 0.70, 0.50, 0.62], n=40),
         "b": Estimate.single(0.5, [0.55, 0.40, 0.55, 0.45], n=40),
         "c": Estimate.single(0.5, [0.30, 0.31, 0.32, 0.33], n=40)}
    out = rank_intervals(e)
    # replicate ranks: a 1,1,2,1; b 2,2,1,2; c 3,3,3,3
    assert out["a"] == {"rank": 1, "rank_ci": [1, 2], "tied_with_first": True}
    assert out["b"]["rank"] == 2 and out["c"]["rank"] == 2  # equal points share a rank
    assert out["b"]["rank_ci"] == [1, 2] and out["c"]["rank_ci"] == [3, 3]
    assert out["b"]["tied_with_first"] and not out["c"]["tied_with_first"]
    assert rank_text(out["b"]) == "2 [1, 2] =1" and rank_text(out["a"]) == "1 [1, 2]"
    assert rank_text({"rank": 3, "rank_ci": None}) == "3"


def test_rank_intervals_pair_a_trained_model_with_a_one_seed_one():
    """A three-seed model and a one-seed baseline: the baseline is paired with each seed (broadcast)."""
    reps = np.linspace(-0.05, 0.05, 200)
    trained = Estimate.stack([Estimate.single(v, v + reps, n=50) for v in (0.70, 0.72, 0.74)])
    out = rank_intervals({"trained": trained, "baseline": Estimate.single(0.5, 0.5 + reps[::-1], n=50)})
    assert out["trained"]["rank_ci"] == [1, 1] and out["baseline"]["rank_ci"] == [2, 2]
    assert not out["baseline"]["tied_with_first"]


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    d = tmp_path_factory.mktemp("compare")
    subsets = {"open": _subset(1, 40), "human": _subset(2, 40)}
    for name, recs in subsets.items():
        write_records(recs, d / f"{name}.jsonl")
    every = [r for recs in subsets.values() for r in recs]
    for name, (seed, skill) in {"good": (0, 1.0), "weak": (1, 0.1), "fair": (2, 0.4)}.items():
        write_scores([(p, r, s) for (p, r), s in _scores(every, seed, skill).items()], d / f"{name}.jsonl")
    return d


def _evaluate(d, *extra, models=("good", "weak", "fair")):
    args = ["evaluate", "--data", d / "open.jsonl", "--data", d / "human.jsonl", "--bootstrap", "300"]
    args += [x for m in models for x in ("--scores", d / f"{m}.jsonl")] + list(extra)
    return subprocess.run([*CHEEMS, *map(str, args)], capture_output=True, text=True)


def test_cli_baseline_and_ranks(files):
    """`--baseline weak`: every other model's paired differences in its object and in a stderr table; every model
    has a rank with its interval; the leaderboard shows micro accuracy beside macro."""
    res = _evaluate(files, "--baseline", "weak")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert "vs_baseline" not in out["weak"]
    assert out["good"]["vs_baseline"]["baseline"] == "weak"
    assert out["good"]["vs_baseline"]["overall"]["ci"][0] > 0
    assert set(out["good"]["vs_baseline"]["subsets"]["open"]["by_category"]) == {"x", "y", "z"}
    assert out["good"]["rank"] == 1 and out["weak"]["rank"] == 3
    assert all(len(out[m]["rank_ci"]) == 2 for m in out)
    assert "paired differences from weak" in res.stderr and "open micro" in res.stderr
    plain = _evaluate(files)
    assert plain.returncode == 0 and "vs_baseline" not in json.loads(plain.stdout)["good"]


@pytest.mark.parametrize("models, baseline, says", [(("good", "weak"), "nobody", "not a model here"),
                                                    (("good",), "good", "one --scores file gives one")])
def test_cli_baseline_must_name_one_of_the_models(files, models, baseline, says):
    res = _evaluate(files, "--baseline", baseline, models=models)
    assert res.returncode == 2 and says in res.stderr and len(res.stderr.strip().splitlines()) == 1


def test_a_data_file_named_as_an_output_key_is_refused(files, tmp_path):
    (tmp_path / "overall.jsonl").write_bytes((files / "open.jsonl").read_bytes())
    res = subprocess.run([*CHEEMS, "evaluate", "--data", str(tmp_path / "overall.jsonl"), "--data",
                          str(files / "human.jsonl"), "--scores", str(files / "good.jsonl")],
                         capture_output=True, text=True)
    assert res.returncode == 2 and "is a key of the output itself" in res.stderr


def test_cli_by_length_equals_the_library_with_controls(files):
    """Every data file's object has by_length: the library's strata on the same data and scores (micro accuracy per
    stratum, summing to every comparison), and the null controls beside them."""
    from cheems_lib.analyses.length_strata import STRATA, stratified
    from cheems_lib.records import read_records
    from cheems_lib.score_file import read_scores

    res = _evaluate(files, "--length-margin", "0.2", models=("good",))
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    recs = read_records(files / "open.jsonl")
    mine = stratified(recs, read_scores(files / "good.jsonl"), margin=0.2, n_boot=300, seed=0)
    got = out["open"]["by_length"]
    assert got["strata"] == json.loads(json.dumps(mine["strata"])) and got["margin"] == 0.2
    assert sum(got["strata"][s]["comparisons"] for s in STRATA) == sum(c["comparisons"] for c in
                                                                         out["open"]["by_category"].values())
    assert set(got["controls"]) >= {"baseline:longest", "baseline:shortest", "baseline:random"}
    # the controls per category too: pick-longest there is stratified() of its scores on the category's prompts
    from cheems_lib.baselines import named_scores

    cat = next(iter(got["by_category"]))
    longest = stratified([r for r in recs if r.top_category == cat], named_scores("baseline:longest", recs), margin=0.2)
    assert got["by_category"][cat]["controls"]["baseline:longest"] == {s: longest["strata"][s]["accuracy"]
                                                                        for s in STRATA}


def test_cli_by_length_in_tokens(files, tmp_path):
    """--tokenizer counts lengths in a tokenizer's tokens (one saved here, no download); a folder without one is a
    one-line usage error."""
    from cheems_lib.models.reward_model import train_tokenizer
    from cheems_lib.records import read_records

    texts = [x.content for r in read_records(files / "open.jsonl") for x in r.responses]
    train_tokenizer(texts, vocab_size=300).save_pretrained(tmp_path / "tok")
    res = _evaluate(files, "--tokenizer", tmp_path / "tok", "--bootstrap", "0", models=("good",))
    assert res.returncode == 0, res.stderr
    assert json.loads(res.stdout)["open"]["by_length"]["unit"] == "tokens"
    (tmp_path / "empty").mkdir()
    bad = _evaluate(files, "--tokenizer", tmp_path / "empty", models=("good",))
    assert bad.returncode == 2 and "--tokenizer" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_a_model_on_too_few_prompts_gets_a_rank_but_no_interval():
    """Five prompts give no 95% interval (the library's rule), so no rank interval and no tie mark either."""
    reps = np.linspace(-0.05, 0.05, 100)
    out = rank_intervals({"a": Estimate.single(0.8, 0.8 + reps, n=50), "few": Estimate.single(0.3, 0.3 + reps, n=5)})
    assert out["few"] == {"rank": 2, "rank_ci": None, "tied_with_first": None} and rank_text(out["few"]) == "2"
