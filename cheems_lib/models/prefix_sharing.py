"""The responses of one prompt share its tokens: the prompt is computed once, its continuations after it.

Every response of a record is encoded as the same chat-template prefix (system prompt, prompt, the assistant's
header) followed by the response. A decoder's keys and values at a position depend only on the tokens up to it,
so the shared prefix's keys and values are the same for every response of the record: computed once, then each
response's own tokens are forwarded after them (transformers' key-value cache, the mechanism of generation).
On the simulated world, Best-of-N scoring (32 samples of one prompt) forwards about half as many tokens so, and
CheemsBench and CheemsPreference (about five responses per prompt) about 40% fewer; the time saved is smaller, as
attention still reads every key (``benchmarks/bench_scoring.py --prefix`` and ``bench_training.py``, in
benchmarks/README.md).

The prefix is found on the token ids, not on the texts: the longest run of ids every response of the record
starts with, leaving each at least one token of its own (:func:`common_prefix`), so no tokenizer's merges across
the prompt/response boundary can make a score wrong. A record with one response shares nothing.

The results equal the full forward's up to float rounding: attention sums the same terms over keys laid out
differently (the prefix padded to the batch's longest), so scores move in their last bits (the tests compare
with the full forward to 1e-5, and every parameter's gradient to 1e-4 relative); the same batches give the same
scores and weights to the last bit. Used for the tiny family's sequence classifiers, in scoring
(:func:`cheems_lib.models.scoring.score_records`) and in training (:func:`cheems_lib.models.training.train`, in one
process or under DDP); a hub model keeps its plain forward.
"""
from __future__ import annotations

from typing import Sequence

from .batching import input_device, pad_right

__all__ = ["common_prefix", "shared_scores", "shared_rewards", "forward_calls", "prefix_batches", "prefix_cache", "continued_rewards", "cache_argument",
           "CHUNK_RECORDS"]

CHUNK_RECORDS = 64
"""Records whose prefixes are computed and held together (their keys and values stay in memory until all their
responses are scored); records are taken in order of prefix length, so a batch's prefixes are of similar length."""


def common_prefix(seqs: Sequence[Sequence[int]]) -> int:
    """Tokens every one of ``seqs`` starts with, at most the shortest's length minus one (each keeps a token of
    its own to read its reward at); 0 for fewer than two sequences.

    >>> common_prefix([[1, 2, 3, 4], [1, 2, 5], [1, 2, 3]])
    2
    >>> common_prefix([[1, 2], [1, 2]])
    1
    """
    if len(seqs) < 2:
        return 0
    first, p = seqs[0], min(len(s) for s in seqs) - 1
    for s in seqs[1:]:
        i = 0
        while i < p and s[i] == first[i]:
            i += 1
        p = i
    return max(p, 0)


def shared_scores(model, groups: Sequence[Sequence[tuple]], pad_id: int, batch_size: int, *,
                  continuations: int | None = None, progress: bool = False):
    """``{key: reward}`` per batch of continuations, for ``groups`` (each a record's ``[(key, token ids), ...]``).

    Records are taken :data:`CHUNK_RECORDS` at a time in order of their prefix's length: the prefixes are forwarded
    ``batch_size`` records at a time (keys and values kept), then every continuation of the chunk, sorted by length,
    ``continuations`` at a time (default ``batch_size``) after its record's keys and values. A score depends in
    its last bits on the records scored with it (the keys are padded to the batch's longest prefix). Call under ``torch.inference_mode`` (and
    :func:`cheems_lib.models.last_token.last_token_only`, which reads the last layer at the last token only)."""
    device = input_device(model)
    records = sorted(((common_prefix([ids for _, ids in g]), g) for g in groups if g), key=lambda pg: pg[0])
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=sum(len(g) for _, g in records), desc="scoring", unit="response")
    for start in range(0, len(records), CHUNK_RECORDS):
        chunk = records[start:start + CHUNK_RECORDS]
        prefixes = [g[0][1][:p] for p, g in chunk]
        cache = prefix_cache(model, prefixes, pad_id, device,
                             [list(range(b, min(b + batch_size, len(chunk)))) for b in range(0, len(chunk), batch_size)])
        conts = sorted(((key, ids[p:], i, p) for i, (p, g) in enumerate(chunk) for key, ids in g),
                       key=lambda c: len(c[1]))
        step = continuations or batch_size
        for b in range(0, len(conts), step):
            part = conts[b:b + step]
            out = continued_rewards(model, [c[1] for c in part], pad_id, device, cache, [c[2] for c in part],
                                    [c[3] for c in part])
            if bar is not None:
                bar.update(len(part))
            yield {c[0]: float(s) for c, s in zip(part, out.float().cpu().tolist())}
    if bar is not None:
        bar.close()


def shared_rewards(model, seqs: Sequence[Sequence[int]], sizes: Sequence[int], pad_id: int, device, max_tokens: int):
    """Rewards of ``seqs`` (1-d, float32, in their order) with the graph kept for backward: the responses of
    consecutive prompts, ``sizes[i]`` of prompt ``i``. Each prompt's shared prefix is forwarded once
    (:func:`prefix_batches` under ``max_tokens``), then the continuations in groups of similar length
    (:func:`cheems_lib.models.batching.forward_groups` under ``max_tokens``); the gradient reaches the prefix
    through its keys and values. What :func:`cheems_lib.models.training.train` forwards in one process or DDP."""
    import torch

    from .batching import forward_groups

    lens, conts, prefixes = _split(seqs, sizes)
    cache = prefix_cache(model, prefixes, pad_id, device, prefix_batches(lens, max_tokens))
    groups = forward_groups([len(c[0]) for c in conts], max_tokens)
    parts = [continued_rewards(model, [conts[j][0] for j in g], pad_id, device, cache, [conts[j][1] for j in g],
                               [conts[j][2] for j in g]).float() for g in groups]
    order = torch.tensor([j for g in groups for j in g], device=device)
    return torch.empty(len(seqs), device=device, dtype=parts[0].dtype).index_copy(0, order, torch.cat(parts))


def _split(seqs: Sequence[Sequence[int]], sizes: Sequence[int]) -> tuple[list[int], list[tuple], list]:
    """Each prompt's prefix length, every response's ``(continuation, prompt index, prefix length)``, and each
    prompt's prefix."""
    from itertools import accumulate

    starts = [0, *accumulate(sizes)][:len(sizes)]
    lens = [common_prefix(seqs[s:s + k]) for s, k in zip(starts, sizes)]
    conts = [(seqs[s + j][p:], i, p) for i, (s, k, p) in enumerate(zip(starts, sizes, lens)) for j in range(k)]
    return lens, conts, [seqs[s][:p] for s, p in zip(starts, lens)]


def forward_calls(seqs: Sequence[Sequence[int]], sizes: Sequence[int], max_tokens: int) -> int:
    """The forward calls :func:`shared_rewards` makes for these arguments: one per :func:`prefix_batches` (none when
    no prompt shares a token), then one per group of continuations (processes under DDP must make as many)."""
    from .batching import forward_groups

    lens, conts, _ = _split(seqs, sizes)
    prefixes = len(prefix_batches(lens, max_tokens)) if max(lens, default=0) > 0 else 0
    return prefixes + len(forward_groups([len(c[0]) for c in conts], max_tokens))


def prefix_batches(lens: Sequence[int], max_tokens: int) -> list[list[int]]:
    """The prompts' prefixes (``lens`` tokens each) in forwards of at most ``max_tokens`` padded tokens, in order
    (one prefix longer than the budget goes alone): usually one forward, as the prompts of a micro-batch are
    fewer tokens than its responses.

    >>> prefix_batches([3, 5, 2, 6], 12)
    [[0, 1], [2, 3]]
    """
    out: list[list[int]] = []
    longest = 0
    for i, n in enumerate(lens):
        n = max(n, 1)  # an empty prefix is forwarded as one pad
        if out and max(longest, n) * (len(out[-1]) + 1) <= max_tokens:
            out[-1].append(i)
            longest = max(longest, n)
        else:
            out.append([i])
            longest = n
    return out


def prefix_cache(model, prefixes: Sequence[Sequence[int]], pad_id: int, device, batches: Sequence[Sequence[int]]):
    """Every layer's keys and values of ``prefixes``, forwarded in ``batches`` (lists of indices into them):
    ``[(keys, values), ...]``, each ``(prefixes, key-value heads, longest, head dim)`` in the order of ``prefixes``,
    zero after a prefix's end; ``None`` when no prefix has a token. Out of place, so autograd can follow it."""
    import torch
    import torch.nn.functional as F

    longest = max((len(p) for p in prefixes), default=0)
    if longest == 0:
        return None
    parts, order = [], []
    for batch in batches:
        ids, mask = pad_right([prefixes[j] or [pad_id] for j in batch], pad_id, device)
        out = model(input_ids=ids, attention_mask=mask, use_cache=True)
        past = getattr(out, "cache", None) or out.past_key_values  # transformers' newer name first
        parts.append([tuple(F.pad(t, (0, 0, 0, longest - t.shape[2])) for t in (layer.keys, layer.values))
                      for layer in past.layers])
        order += batch
    back = torch.empty(len(order), dtype=torch.long, device=device)
    back[torch.tensor(order, device=device)] = torch.arange(len(order), device=device)
    return [tuple(torch.cat([p[i][kv] for p in parts]).index_select(0, back) for kv in (0, 1))
            for i in range(len(parts[0]))]


def cache_argument(model) -> str:
    """The name ``model``'s forward takes a key-value cache by: ``cache`` (transformers from 5.2x) or
    ``past_key_values`` (before; still accepted, with a warning, until 5.40)."""
    import inspect

    model = getattr(model, "module", model)  # a DDP wrapper passes keyword arguments through to its module
    if type(model) not in _CACHE_ARGUMENT:
        params = inspect.signature(type(model).forward).parameters
        _CACHE_ARGUMENT[type(model)] = "cache" if "cache" in params else "past_key_values"
    return _CACHE_ARGUMENT[type(model)]


_CACHE_ARGUMENT: dict[type, str] = {}


def continued_rewards(model, conts: Sequence[Sequence[int]], pad_id: int, device, cache, rows: Sequence[int],
                      lens: Sequence[int]):
    """Rewards of the continuations ``conts``, each after the prefix ``rows[i]`` of ``cache`` (:func:`prefix_cache`,
    ``lens[i]`` tokens long): 1-d, in the model's dtype."""
    import torch
    from transformers import DynamicCache

    ids, mask = pad_right(conts, pad_id, device)
    width = max(lens)
    if cache is None or width == 0:
        return model(input_ids=ids, attention_mask=mask, use_cache=False).logits.squeeze(-1)
    rows_t, lens_t = torch.tensor(rows, device=device), torch.tensor(lens, device=device)
    past = DynamicCache([(k[:, :, :width].index_select(0, rows_t.to(k.device)),
                          v[:, :, :width].index_select(0, rows_t.to(v.device))) for k, v in cache])
    seen = (torch.arange(width, device=device)[None] < lens_t[:, None]).to(mask.dtype)
    positions = lens_t[:, None] + torch.arange(ids.shape[1], device=device)[None]
    out = model(input_ids=ids, attention_mask=torch.cat([seen, mask], 1), position_ids=positions,
                use_cache=True, **{cache_argument(model): past})
    return out.logits.squeeze(-1)
