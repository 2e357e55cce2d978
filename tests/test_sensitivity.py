"""Sensitivity sweeps: the verdict summary, the refused ratios, what a shared-noise world changes, the sweep's
figure and its claim."""
from __future__ import annotations

from dataclasses import replace

import matplotlib
import numpy as np
import pandas as pd
import pytest

from cheems_lib import claims, sensitivity
from cheems_lib.annotators import HumanAnnotator
from cheems_lib.simulation import WorldConfig, build_world


def _sweep(verdicts, values=(0.0, 0.3, 0.8)):
    return pd.DataFrame({"value": values, "estimate": [0.1] * len(values), "ci_low": [0.0] * len(values),
                         "ci_high": [0.2] * len(values), "seeds": [1] * len(values), "verdict": verdicts})


@pytest.mark.parametrize("verdicts, expected", [
    (["supported", "supported", "supported"], "supported"),
    (["contradicted", "contradicted", "contradicted"], "supported"),
    (["contradicted", "supported", "inconclusive"], "contradicted"),
    (["inconclusive", "supported", "supported"], "inconclusive"),
    (["inconclusive", "inconclusive", "inconclusive"], "inconclusive"),
    (["supported", "inconclusive", "supported"], "inconclusive"),
])
def test_summary_says_whether_the_verdict_at_the_worlds_value_holds(verdicts, expected):
    """A sweep is robust when every value repeats the definite verdict at the world's own value, flips on the
    opposite one; an inconclusive verdict at the world's own value is never 'robust', even when every point shares it."""
    verdict, base = sensitivity.summarize(_sweep(verdicts), 0.3)
    assert verdict == expected and base["value"] == 0.3 and base["verdict"] == verdicts[1]


def test_summary_needs_the_worlds_own_value():
    """A sweep without the world's own value cannot say whether that verdict holds."""
    with pytest.raises(ValueError, match="no point at the world's own value"):
        sensitivity.summarize(_sweep(["supported"] * 3), 0.5)


def test_ratio_beyond_the_world_is_refused():
    """Asking for more GPT prompts than the world holds is an error naming the fix, not a silent cut."""
    class World:
        human = [object()] * 10

        def gpt(self):
            return [object()] * 30

    with pytest.raises(ValueError, match="needs 40 GPT prompts, the world has 30"):
        sensitivity.ratio_sweep(World(), [4.0])


def test_shared_noise_changes_only_the_human_labels():
    """Re-simulating with another shared noise keeps every text and GPT label, and changes human rankings."""
    a = build_world(WorldConfig(size="smoke", seed=1)).files
    b = build_world(WorldConfig(size="smoke", seed=1, human=replace(HumanAnnotator(), shared_noise=0.9))).files
    for path in a:
        assert [r.responses for r in a[path]] == [r.responses for r in b[path]]
    assert a["cheems_preference/gpt.jsonl"] == b["cheems_preference/gpt.jsonl"]
    assert a["cheems_bench_gpt/open.jsonl"] == b["cheems_bench_gpt/open.jsonl"]
    assert [r.rank for r in a["cheems_preference/human.jsonl"]] != [r.rank for r in b["cheems_preference/human.jsonl"]]
    assert [r.rank for r in a["cheems_bench/open.jsonl"]] != [r.rank for r in b["cheems_bench/open.jsonl"]]


class _Ledger(claims.Ledger):
    """A ledger that does not glue (no notebook here)."""

    def add(self, claim, *, glue=False):
        return super().add(claim, glue=False)


def test_sweep_figure_plots_the_estimates_with_their_intervals():
    """Each point sits at its estimate with its interval as error bar, coloured by verdict; the marked value drawn."""
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    sweep = _sweep(["supported", "inconclusive", "supported"]).assign(estimate=[0.1, 0.02, 0.15],
                                                                       ci_low=[0.05, -0.01, 0.1])
    fig = sensitivity.sweep_figure(sweep, "shared_noise", marked=0.3, model="tiny-xs")
    ax = fig.axes[0]
    points = {tuple(x) for c in ax.containers for x in np.column_stack(c.lines[0].get_data())}
    assert points == set(zip(sweep["value"], sweep["estimate"]))
    bars = {round(float(s[1][1] - s[0][1]), 9) for c in ax.containers for s in c.lines[2][0].get_segments()}
    assert bars == {round(h - lo, 9) for lo, h in zip(sweep["ci_low"], sweep["ci_high"])}
    assert sorted(t.get_text() for t in ax.get_legend().get_texts()) == ["inconclusive", "supported"]
    assert "humans' shared noise" in ax.get_title() and "tiny-xs" in ax.get_title()
    assert any(list(line.get_xdata()) == [0.3, 0.3] for line in ax.lines)
    plt.close(fig)
    empty = sensitivity.sweep_figure(None, "ratio", marked=8.5, model="tiny-xs")
    assert not empty.axes[0].axison and empty.axes[0].texts[0].get_text().startswith("real files")
    plt.close(empty)


def test_sweep_claim_records_the_summary():
    """The claim carries summarize's verdict and the row at the world's own value, and names the flips; a sweep
    is of kind robustness (never a finding), with its reason naming the swept claim."""
    ledger = _Ledger("sensitivity", "test")
    sweep = _sweep(["contradicted", "supported", "inconclusive"])
    sensitivity.add_sweep_claim(ledger, sweep, "ratio", own=0.3)
    claim = ledger.claims[sensitivity.ASSUMPTIONS["ratio"].claim_id]
    assert claim.verdict == "contradicted"
    assert claim.estimate == 0.1 and claim.kind == "robustness" and claim.link == "sensitivity-ratio"
    assert "0 (contradicted), 0.8 (inconclusive)" in claim.sentence
    assert "tab4-human-beats-gpt" in claim.reason and "not a claim of the paper" in claim.reason


def test_unswept_claim_is_untestable():
    """On real files (no sweep) the claim is untestable and inconclusive, with the assumption's reason."""
    ledger = _Ledger("sensitivity", "test")
    sensitivity.add_sweep_claim(ledger, None, "shared_noise", own=0.5)
    (claim,) = ledger.claims.values()
    assert (claim.kind, claim.verdict) == ("untestable", "inconclusive")
    assert claim.reason == sensitivity.ASSUMPTIONS["shared_noise"].unswept_reason
