"""Sensitivity sweeps: the verdict summary, the refused ratios and what a shared-noise world changes."""
from __future__ import annotations

from dataclasses import replace

import pandas as pd
import pytest

from cheems_lib import sensitivity
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
])
def test_summary_says_whether_the_verdict_at_the_worlds_value_holds(verdicts, expected):
    """A sweep is robust when every value repeats the verdict at the world's own value, flips on the opposite one."""
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
