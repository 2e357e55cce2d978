"""A prompt shared by its responses, computed once: the same rewards and gradients as forwarding every response whole."""
from __future__ import annotations

import pytest

from conftest import assert_same_gradients
from cheems_lib.models.batching import pad_right
from cheems_lib.models.last_token import last_token_only
from cheems_lib.models.prefix_sharing import (cache_argument, common_prefix, forward_calls, shared_rewards,
                                              shared_scores)
from cheems_lib.models.reward_model import build_tiny, train_tokenizer


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(["奖励模型 reward model 偏好 preference"] * 20, vocab_size=300)


def _groups(seed=0, records=9):
    """Records of token ids: a prompt (its length varies by record, 0 for some), then 1 to 7 responses each (one
    record has a single response, one has responses that are prefixes of each other, one repeats a response)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    out = []
    for i in range(records):
        prompt = torch.randint(3, 290, (int(torch.randint(0, 70, (1,), generator=g)) if i else 0,), generator=g).tolist()
        n = 1 if i == 1 else int(torch.randint(2, 8, (1,), generator=g))
        responses = [torch.randint(3, 290, (int(torch.randint(1, 40, (1,), generator=g)),), generator=g).tolist()
                     for _ in range(n)]
        if i == 2:  # responses that are prefixes of one another: the prefix stops one token before the shortest
            responses = [responses[0][:k] for k in (1, 3, len(responses[0]))]
        if i == 3:
            responses[1] = list(responses[0])
        out.append([((f"p{i}", f"r{j}"), prompt + r) for j, r in enumerate(responses)])
    return out


def _full(model, seqs, pad_id):
    """Every sequence forwarded whole, one at a time (no padding): the reference."""
    import torch

    with torch.inference_mode():
        return [float(model(input_ids=torch.tensor([s])).logits[0, 0]) for s in seqs]


def test_common_prefix():
    assert common_prefix([]) == 0
    assert common_prefix([[1, 2, 3]]) == 0  # one response shares with nobody
    assert common_prefix([[1, 2, 3], [1, 2, 4]]) == 2
    assert common_prefix([[1, 2, 3], [1, 2, 3]]) == 2  # each keeps a token of its own
    assert common_prefix([[1], [1, 2]]) == 0
    assert common_prefix([[5, 1], [6, 1]]) == 0


@pytest.mark.parametrize("size,attention,batch_size", [("tiny-xs", "sdpa", 4), ("tiny", "sdpa", 16),
                                                       ("tiny-l", "sdpa", 3), ("tiny", "eager", 5)])
def test_scores_equal_every_response_forwarded_whole(tok, size, attention, batch_size):
    """Records with and without a shared prompt, prefixes of different lengths in one batch, one to three layers, sdpa
    and eager attention, with the last layer at the read position and without: each reward equals the response
    forwarded whole and alone to 1e-5, and the same call gives the same rewards to the last bit."""
    import torch

    model = build_tiny(size, tok, seed=1, max_length=1024).eval()
    model.config._attn_implementation = attention
    groups = _groups()
    want = dict(zip([k for g in groups for k, _ in g], _full(model, [s for g in groups for _, s in g], tok.pad_token_id)))
    for fast in (True, False):
        runs = []
        for _ in range(2):
            with torch.inference_mode(), last_token_only(model) if fast else _plain():
                runs.append({k: v for batch in shared_scores(model, groups, tok.pad_token_id, batch_size)
                             for k, v in batch.items()})
        assert runs[0] == runs[1]
        assert runs[0].keys() == want.keys()
        for key, value in want.items():
            assert runs[0][key] == pytest.approx(value, abs=1e-5), key


def _plain():
    import contextlib

    return contextlib.nullcontext()


@pytest.mark.parametrize("size", ["tiny-xs", "tiny"])
def test_training_rewards_and_gradients_equal_the_full_forward(tok, size):
    """In train mode with the last layer at the read position (as training runs it): the rewards and every
    parameter's gradient of a Bradley-Terry loss over each prompt's responses equal forwarding every response whole,
    up to float rounding; the forward calls made are the ones :func:`forward_calls` announces (DDP's processes must
    make as many)."""
    import torch

    from cheems_lib.models.bt_loss import bt_loss, grouped_rewards

    model = build_tiny(size, tok, seed=2, max_length=1024).train()
    groups = [g for g in _groups(seed=4) if len(g) > 1]
    seqs, sizes = [s for g in groups for _, s in g], [len(g) for g in groups]
    pairs, start = [], 0
    for k in sizes:
        pairs += [(start + i, start + j) for i in range(k) for j in range(k) if i < j]
        start += k
    calls = []
    hook = model.register_forward_pre_hook(lambda *a: calls.append(1))
    out = []
    for shared in (False, True):
        model.zero_grad(set_to_none=True)
        calls.clear()
        with last_token_only(model, training=True):
            if shared:
                r = shared_rewards(model, seqs, sizes, tok.pad_token_id, "cpu", 256)
            else:
                r = grouped_rewards(model, seqs, tok.pad_token_id, "cpu", 256)
        bt_loss(r, pairs, 0.01)[0].backward()
        out.append((r.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
    hook.remove()
    assert len(calls) == forward_calls(seqs, sizes, 256) > 1
    (full, g_full), (fast, g_fast) = out
    assert torch.allclose(fast, full, rtol=0, atol=1e-5)
    assert_same_gradients(g_full, g_fast)


def test_no_shared_prompt_forwards_no_prefix(tok):
    """Prompts whose responses share no token: no prefix forward, the continuations are the whole responses."""
    model = build_tiny("tiny-xs", tok, seed=0).train()
    seqs, sizes = [[5, 6], [7, 8], [9, 4], [10, 11]], [2, 2]
    assert forward_calls(seqs, sizes, 256) == 1
    calls = []
    hook = model.register_forward_pre_hook(lambda *a: calls.append(1))
    with last_token_only(model, training=True):
        r = shared_rewards(model, seqs, sizes, tok.pad_token_id, "cpu", 256)
    hook.remove()
    assert len(calls) == 1 and r.shape == (4,)
    ids, mask = pad_right(seqs, tok.pad_token_id)
    assert r.detach().tolist() == pytest.approx(model(input_ids=ids, attention_mask=mask).logits.squeeze(-1).tolist(),
                                                abs=1e-6)


def test_the_cache_argument_is_the_one_the_model_takes(tok):
    import inspect

    model = build_tiny("tiny-xs", tok, seed=0)
    assert cache_argument(model) in inspect.signature(type(model).forward).parameters


def test_score_records_shares_the_prompt_of_records_with_many_responses(tok, monkeypatch):
    """``score_records`` on a tiny model: a record with at least ``SHARE_FROM`` responses goes through the shared
    prefix, one with fewer is forwarded whole; every score equals the response forwarded whole and alone (1e-5)."""
    from cheems_lib.models import scoring
    from cheems_lib.records import Record, Response

    model = build_tiny("tiny-xs", tok, seed=3).eval()
    many = Record(prompt="奖励模型 偏好 " * 6, id="many",
                  responses=[Response(f"m{i}", "reward " * (i + 1) + "偏好") for i in range(scoring.SHARE_FROM)])
    few = Record(prompt="preference 模型", id="few", responses=[Response(f"f{i}", "模型 " * (i + 2)) for i in range(3)])
    seen = []
    real = scoring.shared_scores
    monkeypatch.setattr(scoring, "shared_scores", lambda m, groups, *a, **k: seen.append(
        sorted(key[0] for g in groups for key, _ in g)) or real(m, groups, *a, **k))
    got, report = scoring.score_records(model, tok, [many, few])
    assert seen == [["many"] * scoring.SHARE_FROM] and report["scored"] == scoring.SHARE_FROM + 3
    from cheems_lib.models.chat_encoding import encode_pair

    for rec in (many, few):
        for r in rec.responses:
            want = _full(model, [encode_pair(tok, rec.prompt, r.content)], tok.pad_token_id)[0]
            assert got[rec.id, r.id] == pytest.approx(want, abs=1e-5)


def test_prefix_keys_come_back_in_the_prefixes_order_whatever_the_batches(tok):
    """``prefix_cache`` forwards the prefixes in any batches (here out of order and split) and returns each
    prefix's keys and values at its own index, the same as in one batch up to rounding; ``prefix_batches`` keeps
    the order and bounds a forward's padded tokens."""
    import torch

    from cheems_lib.models.prefix_sharing import prefix_batches, prefix_cache

    model = build_tiny("tiny-xs", tok, seed=5).eval()
    prefixes = [[5, 6, 7], [8, 9], [10, 11, 12, 13], []]
    with torch.inference_mode():
        one = prefix_cache(model, prefixes, tok.pad_token_id, "cpu", [[0, 1, 2, 3]])
        split = prefix_cache(model, prefixes, tok.pad_token_id, "cpu", [[2, 0], [3], [1]])
    for (k1, v1), (k2, v2) in zip(one, split):
        for i, p in enumerate(prefixes):
            assert torch.allclose(k1[i, :, :len(p)], k2[i, :, :len(p)], atol=1e-6)
            assert torch.allclose(v1[i, :, :len(p)], v2[i, :, :len(p)], atol=1e-6)
    assert prefix_batches([3, 5, 2, 6], 12) == [[0, 1], [2, 3]]
    assert prefix_batches([0, 0, 20], 8) == [[0, 1], [2]]  # an empty prefix counts one token; a long one goes alone


def test_scores_across_chunks_of_records(tok, monkeypatch):
    """More records than one chunk holds (:data:`CHUNK_RECORDS`, here 2): every score still equals the response
    forwarded whole and alone."""
    import torch

    from cheems_lib.models import prefix_sharing

    monkeypatch.setattr(prefix_sharing, "CHUNK_RECORDS", 2)
    model = build_tiny("tiny-xs", tok, seed=6).eval()
    groups = _groups(seed=7)
    want = dict(zip([k for g in groups for k, _ in g], _full(model, [s for g in groups for _, s in g], tok.pad_token_id)))
    with torch.inference_mode(), last_token_only(model):
        got = {k: v for batch in shared_scores(model, groups, tok.pad_token_id, 3, continuations=5) for k, v in batch.items()}
    assert got.keys() == want.keys()
    for key, value in want.items():
        assert got[key] == pytest.approx(value, abs=1e-5), key
