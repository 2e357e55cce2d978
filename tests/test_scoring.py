"""Scores do not depend on batch size or batch neighbours; resume skips; truncation is counted."""
from __future__ import annotations

import pytest

from cheems_lib.models.reward_model import build_tiny, train_tokenizer
from cheems_lib.models.scoring import score_records
from cheems_lib.world.simulation import WorldConfig, build_world


@pytest.fixture(scope="module")
def setup():
    recs = build_world(WorldConfig(size="smoke", seed=2)).files["cheems_bench/open.jsonl"][:12]
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=600)
    return recs, tok, build_tiny("tiny-s", tok, seed=3)


def test_batch_size_invariance(setup):
    """Batch sizes 1, 3 and 16 give the same scores to 1e-5 in float32."""
    recs, tok, model = setup
    ref, _ = score_records(model, tok, recs, batch_size=1)
    for bs in (3, 16):
        other, _ = score_records(model, tok, recs, batch_size=bs)
        assert other.keys() == ref.keys()
        assert all(abs(other[k] - ref[k]) <= 1e-5 for k in ref)


def test_resume_skips_scored_and_truncation_is_counted(setup):
    """Scoring skips already-scored responses and counts truncated ones."""
    recs, tok, model = setup
    full, _ = score_records(model, tok, recs)
    done = set(list(full)[:10])
    rest, report = score_records(model, tok, recs, skip=done)
    assert report["skipped"] == 10 and set(rest) == set(full) - done
    _, report = score_records(model, tok, recs, max_length=16)
    assert report["truncated"] == report["scored"] > 0


def test_scores_are_unchanged_by_cutting_before_tokenizing(setup, monkeypatch):
    """Cutting texts to the character budget before tokenizing (reward_model.text_budget) changes no score and no
    truncation count: the same as tokenizing whole texts (the old path), normal texts and an 18,000-character one."""
    from dataclasses import replace

    from cheems_lib.models import reward_model
    from cheems_lib.records import Response

    from cheems_lib.models import scoring

    monkeypatch.setattr(scoring, "ENCODED_SETS", 0)  # every call tokenizes: the old path must really run
    recs, tok, model = setup
    long = replace(recs[0], id="long", responses=[Response("x", "很长的回答。" * 3_000), *recs[0].responses])
    records = [*recs[:4], long]
    new = [score_records(model, tok, records, max_length=m) for m in (None, 48)]
    monkeypatch.setattr(reward_model, "text_budget", lambda tokenizer, max_length: None)
    old = [score_records(model, tok, records, max_length=m) for m in (None, 48)]
    for (a, ra), (b, rb) in zip(new, old):
        assert ra == rb and ra["truncated"] >= 1
        assert a.keys() == b.keys() and all(abs(a[k] - b[k]) <= 1e-6 for k in a)


def test_a_tokenization_is_reused_only_for_the_same_tokenizer_limit_and_texts(setup, monkeypatch):
    """Scoring the same records again with the same tokenizer (another training seed of one set) tokenizes
    nothing and gives the same scores; another tokenizer, limit or text tokenizes again; at most
    ENCODED_SETS tokenizations are kept."""
    from dataclasses import replace

    from cheems_lib.models import scoring
    from cheems_lib.records import Response

    monkeypatch.setattr(scoring, "_ENCODED", {})
    calls = []
    real = scoring.encode_pairs
    monkeypatch.setattr(scoring, "encode_pairs", lambda tok, pairs, **kw: calls.append(len(pairs)) or real(tok, pairs, **kw))
    recs, tok, model = setup
    first, _ = score_records(model, tok, recs)
    again, _ = score_records(build_tiny("tiny-s", tok, seed=4), tok, recs)  # another seed, the same tokenizer
    assert len(calls) == 1 and again.keys() == first.keys() and again != first
    assert score_records(model, tok, recs)[0] == first
    other_tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=500)
    score_records(build_tiny("tiny-s", other_tok, seed=3), other_tok, recs)
    score_records(model, tok, recs, max_length=16)
    edited = [replace(recs[0], responses=[Response(recs[0].responses[0].id, "改过的回答"), *recs[0].responses[1:]]), *recs[1:]]
    score_records(model, tok, edited)
    assert len(calls) == 4
    for k in range(scoring.ENCODED_SETS + 2):
        score_records(model, tok, recs[:1], max_length=20 + k)
    assert len(scoring._ENCODED) == scoring.ENCODED_SETS
