"""Greedy sample-based batching (paper §5): every response of a prompt in the same step.

The paper forms batches prompt by prompt so that each response is forwarded once; its
official code drops the pairs whose responses land in different batches. Here a prompt is
never split between optimisation steps, so every ordered pair is used:

- prompts are shuffled (seeded), sorted by length inside windows of ``window`` prompts, and
  packed greedily while the batch's real tokens stay within ``max_tokens``;
- a batch is forwarded in *groups* of similar length (:func:`forward_groups`: sorted, longest
  at most ``ratio`` x shortest), so the responses of one prompt, which differ a lot in
  length, are not all padded to the longest; the rewards are joined before the loss;
- a prompt whose responses alone exceed the budget becomes an *oversize* batch of its own;
  the trainer forwards it group by group and keeps all its pairs (gradient caching: one
  extra no-grad forward of that prompt).

Example, unshuffled, ``max_tokens=12``: prompts with response lengths
``[[3, 5], [4], [9, 9, 9]]`` give ``[2]`` (oversize: 27 tokens alone, emitted at once) and
``[0, 1]`` (3 + 5 + 4 = 12 tokens).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Sequence

import numpy as np

__all__ = ["Batch", "pack", "forward_groups", "padding_fraction", "pad_right", "forward_in_batches", "last_token_logits",
           "forward_options", "input_device", "budget_groups"]


@dataclass
class Batch:
    """Indices of whole prompts that go through one forward/backward together."""

    prompts: list[int] = field(default_factory=list)
    n_sequences: int = 0
    tokens: int = 0
    oversize: bool = False


def pack(lengths: Sequence[Sequence[int]], max_tokens: int, *, seed: int | np.random.Generator = 0,
         window: int = 64, shuffle: bool = True, padded: bool = False) -> list[Batch]:
    """Pack prompts (each a list of response token lengths) into batches of at most ``max_tokens`` real tokens.

    Every prompt with at least one response appears in exactly one batch. With
    ``shuffle=False`` prompts are packed in the given order (the tests check the greedy rule).
    With ``padded`` the bound is on padded tokens, the batch's longest sequence x its sequences: for a
    batch forwarded as one padded tensor (under FSDP), whose memory that size decides.
    """
    if max_tokens <= 0:
        raise ValueError("max_tokens must be positive")
    rng = np.random.default_rng(seed)
    n = len(lengths)
    order = list(rng.permutation(n)) if shuffle else list(range(n))
    if shuffle and window > 1:  # sort within windows: similar prompts together, order still random
        order = [i for w in range(0, n, window)
                 for i in sorted(order[w:w + window], key=lambda i: sum(lengths[i]))]
    batches: list[Batch] = []
    cur, longest = Batch(), 0
    for i in order:
        k, size = len(lengths[i]), sum(lengths[i])
        if k == 0:
            continue
        if (max(lengths[i]) * k if padded else size) > max_tokens:  # cannot share a batch with anything
            batches.append(Batch([int(i)], k, size, oversize=True))
            continue
        if cur.prompts and (max(longest, *lengths[i]) * (cur.n_sequences + k) if padded
                            else cur.tokens + size) > max_tokens:
            batches.append(cur)
            cur, longest = Batch(), 0
        cur.prompts.append(int(i))
        cur.n_sequences += k
        cur.tokens += size
        longest = max(longest, *lengths[i])
    if cur.prompts:
        batches.append(cur)
    if shuffle:
        batches = [batches[j] for j in rng.permutation(len(batches))]
    return batches


def forward_groups(seq_lengths: Sequence[int], max_tokens: int, *, ratio: float = 1.2) -> list[list[int]]:
    """Split sequences into forward passes of similar length.

    Sorted by length; a group closes when the next sequence is longer than ``ratio`` x the
    group's shortest or when the padded size (longest x count) would pass ``max_tokens``.
    Returns indices into ``seq_lengths``.

    >>> forward_groups([10, 50, 11, 52, 12], 1000)
    [[0, 2, 4], [1, 3]]
    """
    order = sorted(range(len(seq_lengths)), key=lambda j: (seq_lengths[j], j))
    out, cur = [], []
    for j in order:
        lj = seq_lengths[j]
        if cur and (lj > ratio * seq_lengths[cur[0]] or lj * (len(cur) + 1) > max_tokens):
            out.append(cur)
            cur = []
        cur.append(j)
    if cur:
        out.append(cur)
    return out


def budget_groups(seq_lengths: Sequence[int], max_tokens: int, batch_size: int, *, ratio: float = 1.2) -> list[list[int]]:
    """:func:`forward_groups` cut to at most ``batch_size`` sequences each, longest group first: inference batches
    bounded in padded tokens and in sequences, so a budget the device cannot hold fails in the first batch."""
    return [g[i:i + batch_size] for g in forward_groups(seq_lengths, max_tokens, ratio=ratio)
            for i in range(0, len(g), batch_size)][::-1]


def padding_fraction(batches: Sequence[Batch], lengths: Sequence[Sequence[int]], max_tokens: int,
                     *, ratio: float = 1.2) -> float:
    """Padding tokens / processed tokens when ``batches`` are forwarded in :func:`forward_groups`."""
    real = processed = 0
    for b in batches:
        seq = [n for i in b.prompts for n in lengths[i]]
        real += sum(seq)
        processed += sum(max(seq[j] for j in g) * len(g) for g in forward_groups(seq, max_tokens, ratio=ratio))
    return 1.0 - real / processed if processed else 0.0


def pad_right(seqs: Sequence[Sequence[int]], pad_id: int, device="cpu"):
    """``(input_ids, attention_mask)`` tensors, right-padded to the longest sequence.

    With causal attention and right padding a real token never attends to a pad and keeps
    its position, so a sequence's output does not depend on what it is batched with.
    """
    import numpy as np
    import torch

    # filled in numpy in one step, not row by row in torch: scoring the Best-of-N study pads over a million rows
    lengths = np.fromiter(map(len, seqs), np.int64, len(seqs))
    real = np.arange(lengths.max()) < lengths[:, None]
    ids = np.full(real.shape, pad_id, np.int64)
    ids[real] = np.concatenate([np.asarray(s, np.int64) for s in seqs])  # a boolean mask fills row by row
    return torch.from_numpy(ids).to(device), torch.from_numpy(real.astype(np.int64)).to(device)


def forward_options(model) -> dict:
    """Extra arguments for the plain training and scoring forwards of ``model``: ``use_cache=False`` where its
    forward takes ``use_cache``. A reward model reads one position and never generates, so a cache the forward
    makes for itself is memory for nothing, and under activation checkpointing the backward's replay would append
    the keys and values to it a second time (:mod:`cheems_lib.models.prefix_sharing` passes the one cache it
    needs, a shared prompt's, itself). Models whose forward does not name the argument get none (custom code may reject it)."""
    import inspect

    model = getattr(model, "module", model)  # a DDP wrapper passes keyword arguments through to its module
    try:
        params = inspect.signature(type(model).forward).parameters
    except (TypeError, ValueError):
        return {}
    return {"use_cache": False} if "use_cache" in params else {}


def input_device(model):
    """Where ``model`` takes its input ids: the device of its input embeddings (the first device of a model that
    ``device_map="auto"`` spread over several)."""
    try:
        return model.get_input_embeddings().weight.device
    except (AttributeError, NotImplementedError):
        return next(model.parameters()).device


def last_token_logits(logits, mask):
    """Logits at each row's last real token (right padding): a causal LM's next-token distribution."""
    import torch

    return logits[torch.arange(logits.shape[0], device=logits.device), mask.sum(1) - 1]


def forward_in_batches(model, seqs: Sequence[Sequence[int]], pad_id: int, batch_size: int, head, *,
                       progress: bool = False, desc: str = "forward", last_logits: bool = False):
    """Inference over ``seqs`` in order, ``batch_size`` at a time: yield ``(start, head(logits, mask))``.

    Each batch is right-padded (:func:`pad_right`) and forwarded in inference mode with the
    model in eval mode; ``head`` turns the logits into plain Python values inside that mode,
    so nothing the caller receives holds the graph. Callers sort ``seqs`` by length first to
    keep padding low. What scoring (rewards) and judging (letter probabilities) share.

    With ``last_logits`` (a causal LM) ``head`` gets each row's logits at its last real token,
    ``(batch, vocab)``: the model computes its output layer only at the batch's distinct last
    positions (transformers' ``logits_to_keep``), not at every token.
    """
    import torch

    from .last_token import positions_to_keep

    model.eval()
    device, options = input_device(model), forward_options(model)
    starts = range(0, len(seqs), batch_size)
    if progress:
        from tqdm.auto import tqdm
        starts = tqdm(starts, desc=desc, unit="batch")
    for start in starts:
        with torch.inference_mode():
            ids, mask = pad_right(seqs[start:start + batch_size], pad_id, device)
            if last_logits:
                last = mask.sum(1) - 1
                keep = positions_to_keep(last, ids.shape[1])
                logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=keep, **options).logits
                out = head(logits[torch.arange(len(last), device=device), torch.searchsorted(keep, last)], mask)
            else:
                out = head(model(input_ids=ids, attention_mask=mask, **options).logits, mask)
        yield start, out

