"""The last layer computed at the read position gives the full forward's rewards (bit for bit on the ledger's machine)."""
from __future__ import annotations

import pytest

from conftest import assert_same_gradients, cpu_vendor, on_ledger_machine


def exact_here() -> bool:
    """Where the last-token path was shown bit-identical to the full forward: the smoke ledger's torch and CPU
    kernels on an Intel processor. MKL takes other paths for small products on AMD's (the same AVX512 level), which
    round differently (1.5e-8 measured on an EPYC), though the smoke ledger itself comes out the same there."""
    return on_ledger_machine() and cpu_vendor() == "GenuineIntel"
from cheems_lib.models.batching import pad_right
from cheems_lib.models.last_token import last_token_only, supported
from cheems_lib.models.reward_model import build_tiny, train_tokenizer

# Lengths around the CPU flash kernel's query blocks (32, 64 and 256 rows): a last token alone in the final block
# (33, 65, 193, 769) is the case that needs its own one-row attention.
LENGTHS = [2, 5, 31, 32, 33, 34, 64, 65, 66, 191, 192, 193, 194, 257, 300, 767, 768, 769, 800]


@pytest.fixture(scope="module")
def tok():
    return train_tokenizer(["奖励模型 reward model 偏好 preference"] * 20, vocab_size=300)


def _batches(pad_id, seed=0):
    """Right-padded batches of random token ids: each length alone (no padding), and mixed lengths (padding)."""
    import torch

    g = torch.Generator().manual_seed(seed)
    seqs = {n: torch.randint(3, 290, (n,), generator=g).tolist() for n in LENGTHS}
    yield from ([seqs[n], seqs[n][::-1]] for n in LENGTHS)  # two rows of one length: no padding
    for group in ([2, 5, 31, 33, 34], [32, 64, 65, 66], [191, 193, 194, 257, 300], [767, 768, 769, 800], [65]):
        yield [seqs[n] for n in group]


def _rewards(model, batch, pad_id, fast: bool):
    import contextlib

    import torch

    ids, mask = pad_right(batch, pad_id)
    with torch.inference_mode(), last_token_only(model) if fast else contextlib.nullcontext():
        return model(input_ids=ids, attention_mask=mask).logits.squeeze(-1)


@pytest.mark.parametrize("size,attention", [("tiny-xs", "sdpa"), ("tiny", "sdpa"), ("tiny-l", "sdpa"),
                                            ("tiny", "eager")])
def test_rewards_equal_the_full_forward(tok, size, attention):
    """Every length around the kernel's query blocks, with and without padding, 1 to 3 layers, sdpa and eager
    attention: the rewards equal the full forward's, bit for bit where that was shown (:func:`exact_here`), to 1e-6
    elsewhere."""
    import torch

    model = build_tiny(size, tok, seed=1, max_length=1024).eval()
    model.config._attn_implementation = attention
    assert supported(model)
    exact = exact_here() and attention == "sdpa"
    for batch in _batches(tok.pad_token_id):
        full = _rewards(model, batch, tok.pad_token_id, fast=False)
        fast = _rewards(model, batch, tok.pad_token_id, fast=True)
        lengths = [len(s) for s in batch]
        if exact:
            assert torch.equal(full, fast), (lengths, (full - fast).abs().max().item())
        else:
            torch.testing.assert_close(fast, full, rtol=0, atol=1e-6, msg=f"lengths {lengths}")


def test_the_context_restores_the_model(tok):
    """After the context the model is its plain self again: the same forward, no hook left, its state dict unchanged."""
    import torch

    model = build_tiny("tiny-s", tok, seed=2).eval()
    keys = list(model.state_dict())
    batch = [[5, 6, 7, 8], [9, 10]]
    ids, mask = pad_right(batch, tok.pad_token_id)
    with torch.inference_mode():
        before = model(input_ids=ids, attention_mask=mask).logits
        with last_token_only(model):
            assert list(model.state_dict()) == keys
        after = model(input_ids=ids, attention_mask=mask).logits
    assert torch.equal(before, after)
    assert not model._forward_pre_hooks and "forward" not in vars(model.model.layers[-1])


def test_unsupported_models_run_their_plain_forward(tok):
    """A model in training mode, or one that is not a Qwen2 model (here a Llama classifier), is left as it is."""
    from transformers import LlamaConfig, LlamaForSequenceClassification

    model = build_tiny("tiny-xs", tok, seed=0)
    model.train()
    llama = LlamaForSequenceClassification(LlamaConfig(vocab_size=len(tok), hidden_size=32, intermediate_size=64,
                                                       num_hidden_layers=1, num_attention_heads=2, num_labels=1,
                                                       pad_token_id=tok.pad_token_id)).eval()
    for m in (model, llama):
        assert not supported(m)
        with last_token_only(m) as inside:
            assert inside is m and "forward" not in vars(m.model.layers[-1])


def test_a_judges_last_token_logits_equal_the_full_forward(tok):
    """A causal LM judge read with ``forward_in_batches(last_logits=True)`` inside the context (the last layer at the
    last tokens, the output layer at the batch's distinct last positions) gives the logits the full forward gives
    at each row's last token: bit for bit where the smoke ledger was recorded, to 1e-6 elsewhere."""
    import torch
    from transformers import Qwen2ForCausalLM

    from cheems_lib.models.batching import forward_in_batches, last_token_logits
    from cheems_lib.models.reward_model import tiny_config

    torch.manual_seed(0)
    judge = Qwen2ForCausalLM(tiny_config("tiny", tok)).eval()
    assert supported(judge)
    seqs = sorted((b for batch in _batches(tok.pad_token_id, seed=1) for b in batch), key=len)
    keep = lambda logits, mask: logits.clone()  # noqa: E731
    full = [out for _, out in forward_in_batches(judge, seqs, tok.pad_token_id, 8,
                                                 lambda logits, mask: last_token_logits(logits, mask).clone())]
    with last_token_only(judge):
        fast = [out for _, out in forward_in_batches(judge, seqs, tok.pad_token_id, 8, keep, last_logits=True)]
    for a, b in zip(full, fast):
        if exact_here():
            assert torch.equal(a, b), (a - b).abs().max().item()
        else:
            torch.testing.assert_close(b, a, rtol=0, atol=1e-6)


@pytest.mark.parametrize("size", ["tiny-xs", "tiny"])
def test_training_through_the_read_position_gives_the_full_gradient(tok, size):
    """In train mode (``training=True``) the last layer runs at the read positions with autograd: the rewards and
    every parameter's gradient of a Bradley-Terry loss equal the full forward's up to float rounding, on padded
    batches around the kernel's query blocks; without ``training`` a model in train mode runs its plain forward."""
    import contextlib

    import torch

    from cheems_lib.models.bt_loss import bt_loss

    model = build_tiny(size, tok, seed=2, max_length=1024).train()
    assert supported(model, training=True) and not supported(model)
    for batch in list(_batches(tok.pad_token_id, seed=3))[-5:]:
        ids, mask = pad_right(batch, tok.pad_token_id)
        pairs = [(i, j) for i in range(len(batch)) for j in range(len(batch)) if i < j]
        out = []
        for fast in (False, True):
            model.zero_grad(set_to_none=True)
            with last_token_only(model, training=True) if fast else contextlib.nullcontext():
                r = model(input_ids=ids, attention_mask=mask).logits.squeeze(-1).float()
            bt_loss(r, pairs, 0.01)[0].backward()
            out.append((r.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
        (full, g_full), (fast_r, g_fast) = out
        assert torch.allclose(fast_r, full, rtol=0, atol=1e-5)
        assert_same_gradients(g_full, g_fast)


def test_a_judges_training_answer_logits_give_the_full_gradient(tok):
    """The tiny judge trains on the logits of one token per example (``judging.answer_logits``: the last layer at
    the read position, the output layer at the last positions only): the loss and every parameter's gradient equal
    the full forward's up to float rounding, on padded batches around the kernel's query blocks."""
    import torch
    import torch.nn.functional as F
    from transformers import Qwen2ForCausalLM

    from cheems_lib.models.batching import last_token_logits
    from cheems_lib.models.judging import answer_logits
    from cheems_lib.models.reward_model import tiny_config

    torch.manual_seed(4)
    model = Qwen2ForCausalLM(tiny_config("tiny-xs", tok, max_length=1024)).train()
    for batch in list(_batches(tok.pad_token_id, seed=5))[-5:]:
        ids, mask = pad_right(batch, tok.pad_token_id)
        target = torch.arange(len(batch)) + 3
        out = []
        for fast in (False, True):
            model.zero_grad(set_to_none=True)
            logits = (answer_logits(model, ids, mask) if fast else
                      last_token_logits(model(input_ids=ids, attention_mask=mask).logits, mask))
            loss = F.cross_entropy(logits, target, reduction="sum")
            loss.backward()
            out.append((loss.detach(), {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}))
        (full, g_full), (fast_loss, g_fast) = out
        assert torch.allclose(fast_loss, full, rtol=1e-5)
        assert_same_gradients(g_full, g_fast)
