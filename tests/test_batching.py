"""Greedy whole-prompt batching and length-grouped forwards."""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from cheems_lib.models.batching import forward_groups, pack, padding_fraction

prompt_lengths = st.lists(st.lists(st.integers(1, 300), min_size=1, max_size=8), min_size=1, max_size=60)


class TestPack:
    def test_docstring_example(self):
        """pack's documented example: an oversize prompt alone, the rest packed under the budget."""
        batches = pack([[3, 5], [4], [9, 9, 9]], 12, shuffle=False)
        assert [(b.prompts, b.oversize) for b in batches] == [([2], True), ([0, 1], False)]

    @settings(max_examples=200, deadline=None)
    @given(prompt_lengths, st.integers(50, 2000), st.integers(0, 5))
    def test_every_prompt_once_and_within_budget(self, lengths, budget, seed):
        """A partition of the prompts; only oversize batches pass the budget, and they hold one prompt."""
        batches = pack(lengths, budget, seed=seed)
        seen = sorted(i for b in batches for i in b.prompts)
        assert seen == list(range(len(lengths)))
        for b in batches:
            assert b.tokens == sum(sum(lengths[i]) for i in b.prompts)
            assert b.tokens <= budget or (b.oversize and len(b.prompts) == 1)

    def test_seeded(self):
        """pack's shuffle repeats with a seed and changes with another."""
        lengths = [[i % 7 + 1] * 3 for i in range(50)]
        a = [b.prompts for b in pack(lengths, 40, seed=1)]
        assert a == [b.prompts for b in pack(lengths, 40, seed=1)] != [b.prompts for b in pack(lengths, 40, seed=2)]


class TestForwardGroups:
    def test_docstring_example(self):
        """forward_groups' documented example groups similar lengths."""
        assert forward_groups([10, 50, 11, 52, 12], 1000) == [[0, 2, 4], [1, 3]]

    @settings(max_examples=200, deadline=None)
    @given(st.lists(st.integers(1, 500), min_size=1, max_size=40), st.integers(500, 5000))
    def test_partition_ratio_and_budget(self, lengths, budget):
        """forward_groups covers every item once, within the length ratio and token budget."""
        groups = forward_groups(lengths, budget)
        assert sorted(j for g in groups for j in g) == list(range(len(lengths)))
        for g in groups:
            ls = [lengths[j] for j in g]
            assert max(ls) <= 1.2 * min(ls)
            assert max(ls) * len(g) <= budget or len(g) == 1

    def test_padding_fraction_by_hand(self):
        """One batch [10, 12, 20]: groups [10, 12] and [20] -> processed 24 + 20, real 42."""
        batches = pack([[10, 12, 20]], 100, shuffle=False)
        assert abs(padding_fraction(batches, [[10, 12, 20]], 100) - (1 - 42 / 44)) < 1e-12


def test_padded_packing_bounds_longest_times_count():
    """pack(padded=True) keeps every batch's longest sequence x its sequences within the budget (FSDP forwards a
    micro-batch as one padded tensor); a prompt over it alone is oversize; real-token packing may exceed it."""
    from cheems_lib.models.batching import pack

    lengths = [[10, 90], [50, 50, 50], [5], [80, 20], [30, 30]]
    for b in pack(lengths, 200, seed=1, padded=True):
        seqs = [n for i in b.prompts for n in lengths[i]]
        assert b.oversize == (max(seqs) * len(seqs) > 200)
        assert b.oversize or max(seqs) * len(seqs) <= 200
    assert any(max(n for i in b.prompts for n in lengths[i]) * b.n_sequences > 200
               for b in pack(lengths, 200, seed=1))


def test_pad_right_is_each_sequence_then_pads():
    """Right padding by definition: each row its sequence, then ``pad_id``; the mask 1 on the real tokens. Lists,
    tuples and ``array('i')`` rows, an empty row, torch's long dtype."""
    from array import array

    import torch

    from cheems_lib.models.batching import pad_right

    seqs = [[5, 6, 7], array("i", [8]), (), (9, 10, 11, 12)]
    ids, mask = pad_right(seqs, 2)
    assert ids.dtype == mask.dtype == torch.long
    assert ids.tolist() == [[5, 6, 7, 2], [8, 2, 2, 2], [2, 2, 2, 2], [9, 10, 11, 12]]
    assert mask.tolist() == [[1, 1, 1, 0], [1, 0, 0, 0], [0, 0, 0, 0], [1, 1, 1, 1]]
