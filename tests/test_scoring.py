"""Scores do not depend on batch size or batch neighbours; resume skips; truncation is counted."""
from __future__ import annotations

import numpy as np
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
    """Cutting texts to the character budget before tokenizing (chat_encoding.text_budget) changes no score and no
    truncation count: the same as tokenizing whole texts (the old path), normal texts and an 18,000-character one."""
    from dataclasses import replace

    from cheems_lib.models import chat_encoding
    from cheems_lib.records import Response

    from cheems_lib.models import scoring

    monkeypatch.setattr(scoring, "ENCODED_SETS", 0)  # every call tokenizes: the old path must really run
    recs, tok, model = setup
    long = replace(recs[0], id="long", responses=[Response("x", "很长的回答。" * 3_000), *recs[0].responses])
    records = [*recs[:4], long]
    new = [score_records(model, tok, records, max_length=m) for m in (None, 48)]
    monkeypatch.setattr(chat_encoding, "text_budget", lambda tokenizer, max_length: None)
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


def test_a_tiny_model_is_batched_by_count_as_before_bit_for_bit(setup):
    """A tiny model's default scoring is the count-batched path it always had (forward_in_batches of batch_size
    sequences sorted by length, padded with the tokenizer's pad): the same floats, so the book's numbers do not
    move. Up to 4 float32 ulps: under load, in a long test session, CPU kernels may take another SIMD path for
    tensors at another memory alignment and move the last bit (seen once in a full run, 0.11462995 against
    0.11462994); the smoke ledger test still holds the book's numbers exactly."""
    from cheems_lib.models.batching import forward_in_batches
    from cheems_lib.models.last_token import last_token_only
    from cheems_lib.models.chat_encoding import encode_pairs

    recs, tok, model = setup
    items = [((rec.id, r.id), ids) for rec in recs for r in rec.responses
             for ids in encode_pairs(tok, [(rec.prompt, r.content, rec.sys_prompt)])]
    items.sort(key=lambda kv: len(kv[1]))
    before = {}
    with last_token_only(model):
        for start, out in forward_in_batches(model, [t for _, t in items], tok.pad_token_id, 5,
                                             lambda logits, mask: logits.squeeze(-1).float().cpu().tolist()):
            before.update({k: float(s) for (k, _), s in zip(items[start:start + 5], out)})
    now, _ = score_records(model, tok, recs, batch_size=5)
    assert now.keys() == before.keys()
    keys = list(before)
    np.testing.assert_array_max_ulp(np.float32([now[k] for k in keys]), np.float32([before[k] for k in keys]), maxulp=4)


def test_an_explicit_token_budget_bounds_a_tiny_models_batches_too(setup):
    """With max_tokens_per_batch even a tiny model's forwards hold at most that many padded tokens (or one
    longer sequence), and its scores stay those of the count-batched path to 1e-5."""
    recs, tok, model = setup
    shapes = []
    hook = model.register_forward_pre_hook(lambda m, a, kw: shapes.append(tuple(kw["input_ids"].shape)), with_kwargs=True)
    try:
        budget, _ = score_records(model, tok, recs, batch_size=16, max_tokens_per_batch=300)
    finally:
        hook.remove()
    ref, _ = score_records(model, tok, recs, batch_size=16)
    assert all(b * n <= 300 or b == 1 for b, n in shapes) and len(shapes) > len(ref) // 16
    assert ref.keys() == budget.keys() and all(abs(ref[k] - budget[k]) <= 1e-5 for k in ref)


def test_placement_loads_onto_the_process_device_and_spreads_only_one_process():
    """No device map: the CPU as ever (None), a GPU straight onto it ({"": "cuda:K"}); "auto" is passed through
    for one process and refused, in one line naming the fix, for a data-parallel launch."""
    from types import SimpleNamespace

    import torch

    from cheems_lib.models.reward_model import ModelError
    from cheems_lib.models.scoring import placement

    cpu = SimpleNamespace(device=torch.device("cpu"), num_processes=1)
    assert placement(cpu) is None and placement(cpu, "auto") == "auto"
    assert placement(SimpleNamespace(device=torch.device("cuda", 3), num_processes=8)) == {"": "cuda:3"}
    with pytest.raises(ModelError, match="8 processes.*fix: run one process") as e:
        placement(SimpleNamespace(device=torch.device("cuda", 3), num_processes=8), "auto")
    assert "\n" not in str(e.value)


# --- the score cache keys a checkpoint's files by content (cheems_lib.fingerprint) ---


