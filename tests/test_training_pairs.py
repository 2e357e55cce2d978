"""cheems_lib.models.training_pairs: strict pairs from rankings (ties give none), refusals, collation."""
from __future__ import annotations

import pytest

from cheems_lib.models.training_config import TrainError
from cheems_lib.models.training_pairs import encode_records
from conftest import make_record


def test_ties_give_no_pair_and_unusable_data_is_refused():
    """Tied responses give no training pair, and data without pairs or ranks is refused."""
    from cheems_lib.models.reward_model import train_tokenizer

    tok = train_tokenizer(["abc 你好"] * 5, vocab_size=300)
    rec = make_record("p", "abc", rank={"a": 0, "b": 0, "c": 1})
    data = encode_records([rec, make_record("q", "ab", rank={"a": 0, "b": 0})], tok, 64)
    assert data.pairs == [[(0, 2), (1, 2)]] and data.prompts_without_pairs == 1
    with pytest.raises(TrainError, match="no usable pair"):
        encode_records([make_record("q", "ab", rank={"a": 0, "b": 0})], tok, 64)
    with pytest.raises(TrainError, match="no 'rank'"):
        encode_records([make_record("q", "ab")], tok, 64)


def test_a_record_without_rank_is_ranked_from_its_annotations_and_counted():
    """A record built in code with annotations and no rank trains on Algorithm 1's ranking (the record is not changed),
    counted in the report; no 'run cheems resolve first'."""
    from cheems_lib.models.reward_model import train_tokenizer

    tok = train_tokenizer(["abc 你好"] * 5, vocab_size=300)
    rec = make_record("p", "abc", [("a", "b", "1"), ("b", "c", "1"), ("c", "a", "1")])  # a cycle: all tied
    ranked = make_record("q", "abc", [("a", "b", "1"), ("b", "c", "0")])
    data = encode_records([rec, ranked], tok, 64)
    assert data.pairs == [[(0, 1), (0, 2)]] and data.prompts_without_pairs == 1  # a > b = c
    assert data.report()["resolved"] == 2 and rec.rank is None and ranked.rank is None


def test_collate_reindexes_pairs_into_the_batch():
    """collate joins the prompts' responses in order and shifts each prompt's pairs by its offset."""
    from cheems_lib.models.training_pairs import EncodedData, collate

    data = EncodedData(sequences=[[[1], [2]], [[3], [4], [5]], [[6]]], pairs=[[(0, 1)], [(2, 0), (1, 2)], []])
    seqs, pairs = collate(data, [1, 0])
    assert seqs == [[3], [4], [5], [1], [2]]
    assert pairs == [(2, 0), (1, 2), (3, 4)]
