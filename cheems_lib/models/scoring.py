"""Discriminative scoring: one reward per (prompt, response), batched by length (paper §6.1).

Responses are sorted by token length and batched in that order, right-padded with an
attention mask. With causal attention and right padding a real token never attends to a
pad and keeps its position, so a score does not depend on the batch size or on its batch
neighbours (the tests check batch sizes 1, 3 and 16 agree to 1e-5 in float32), the
RewardBench problem of accuracy changing with batch size.

:func:`make_scorer` loads what ``cheems score`` scores with: a baseline, a generative judge or a reward
model; :func:`cheems_lib.models.score_output.score_to_file` runs it into a resumable score file, reused only
while the model and the records are unchanged.
"""
from __future__ import annotations

import contextlib
import hashlib
from typing import Callable, Sequence

from ..baselines import named_scores, NAMES
from ..records import Record
from .batching import budget_groups, forward_in_batches, forward_options, input_device, pad_right
from .chat_encoding import encode_pairs
from .judging import judge_records, judge_scores, load_judge, position_consistency
from .last_token import last_token_only
from .prefix_sharing import shared_scores
from .reward_heads import head_of, load, prepare, rewards
from .reward_model import absent_pad_id, check_pair, device_map_for, embedding_rows, ModelError, spread_by_device_map
from .score_output import model_fingerprint, Scorer

__all__ = ["score_records", "make_scorer", "MAX_TOKENS_PER_BATCH", "placement"]

JUDGE_CHUNK = 16  # records judged between two writes of a judge run
MAX_TOKENS_PER_BATCH = 16384
"""Padded tokens per forward pass of a model outside the tiny family (``cheems score --max-tokens-per-batch``):
activation memory grows with the tokens of a batch, not with its sequences, so the budget bounds it for any
mix of lengths (the paper preset's per-device token budget on a GPU)."""
SHARE_FROM = 8
"""Responses a record needs for a tiny model to forward its prompt once (:mod:`cheems_lib.models.prefix_sharing`):
Best-of-N's 32 samples of a prompt score 1.2x to 1.4x faster so (by tiny size), CheemsBench's five responses a
prompt do not (0.9x: the saved tokens do not pay for gathering the cache), ``benchmarks/bench_scoring.py
--prefix``. Those records' continuations go ``2 x batch_size`` at a time: they are about half as long."""
ENCODED_SETS = 8
"""Tokenized record sets a process keeps (:func:`score_records`): the training seeds of one training set
share its tokenizer, so the zoo scores a benchmark once per seed but tokenizes it once per set."""
_ENCODED: dict[str, list] = {}  # key -> token ids as array('i'), oldest first

def score_records(model, tokenizer, records: Sequence[Record], *, batch_size: int = 16, max_length: int | None = None,
                  progress: bool = False, skip: set | None = None, on_batch: Callable[[dict], None] | None = None,
                  max_tokens_per_batch: int | None = None) -> tuple[dict[tuple[str, str], float], dict]:
    """Score every response of ``records``; returns ``(scores, report)``.

    ``max_length`` defaults to the model's maximum positions; longer sequences are cut at
    the end and counted in ``report["truncated"]``; texts are cut to a character budget before
    tokenizing (:func:`cheems_lib.models.chat_encoding.text_budget`), which changes no score. Keys in ``skip`` (already scored, for
    resuming) are not scored again and are counted in ``report["skipped"]``. ``on_batch``
    receives each batch's ``{key: score}`` as soon as it is computed (to stream to disk).

    A model of the tiny family (the book's) is forwarded ``batch_size`` sequences at a time in order of length,
    except the records of at least :data:`SHARE_FROM` responses (Best-of-N samples), whose prompt is forwarded once
    and their responses after it (:mod:`cheems_lib.models.prefix_sharing`: the same scores up to float rounding;
    in their last bits they depend on the records scored with them, so a resumed or multi-process run may differ
    there from one uninterrupted run). Any other model, or any with ``max_tokens_per_batch``, is forwarded in batches of at most
    ``batch_size`` sequences and ``max_tokens_per_batch`` padded tokens (default :data:`MAX_TOKENS_PER_BATCH`;
    one longer sequence goes alone), longest first, so a budget the device cannot hold fails in the first
    batch, not after hours. The reward is read as the model's head says
    (:mod:`cheems_lib.models.reward_heads`), at each sequence's last real token: the batch is padded with an
    id none of its texts holds (:func:`cheems_lib.models.reward_model.absent_pad_id`).
    """
    if batch_size < 1:
        raise ValueError(f"batch_size must be >= 1, got {batch_size}")
    if max_length is not None and max_length < 1:
        raise ValueError(f"max_length must be >= 1, got {max_length}")
    if max_tokens_per_batch is not None and max_tokens_per_batch < 1:
        raise ValueError(f"max_tokens_per_batch must be >= 1, got {max_tokens_per_batch}")

    check_pair(model, tokenizer)
    model.eval()
    head = head_of(model)
    limit = max_length or getattr(model.config, "max_position_embeddings", None) or 10**9
    skip = skip or set()
    todo = [(rec, r) for rec in records for r in rec.responses if (rec.id, r.id) not in skip]
    skipped = sum(len(rec.responses) for rec in records) - len(todo)
    # a custom model's reward token is appended after the cut, as its own scoring appends it to the whole text
    cut = limit - (head.end_token_id is not None)
    encoded = _encoded(tokenizer, [(rec.prompt, r.content, rec.sys_prompt) for rec, r in todo], max(cut, 1))
    truncated = sum(len(ids) > cut for ids in encoded)
    items = [((rec.id, r.id), prepare(head, ids[:cut])) for (rec, r), ids in zip(todo, encoded)]
    items.sort(key=lambda kv: len(kv[1]))
    pad_id = absent_pad_id(tokenizer, [t for _, t in items], embedding_rows(model)) if items else tokenizer.pad_token_id
    scores: dict[tuple[str, str], float] = {}
    tiny = getattr(model.config, "cheems_tiny_size", None) is not None
    if tiny and max_tokens_per_batch is None and head.kind == "classifier":
        batches = _tiny_batches(model, items, pad_id, batch_size, progress, share=not spread_by_device_map(model))
    else:
        batches = _budget_batches(model, head, items, pad_id, batch_size, max_tokens_per_batch or MAX_TOKENS_PER_BATCH,
                                  progress)
    # the last layer at the read position only (the same scores, faster); not for a model whose layers
    # accelerate's hooks move between devices (replacing a layer's forward would drop its hook)
    reading = contextlib.nullcontext() if spread_by_device_map(model) else last_token_only(model)
    with reading, _pad_token_id(model, pad_id):
        for batch in batches:
            scores.update(batch)
            if on_batch is not None:
                on_batch(batch)
    return scores, {"scored": len(items), "truncated": truncated, "skipped": skipped}


def _tiny_batches(model, items: list, pad_id: int, batch_size: int, progress: bool, *, share: bool = True):
    """``{key: reward}`` per batch of a tiny model: with ``share`` (not for a model spread over devices), the records
    with at least :data:`SHARE_FROM` responses forward their prompt once
    (:func:`cheems_lib.models.prefix_sharing.shared_scores`, prompts ``batch_size`` records at a time, continuations
    ``2 x batch_size``: they are about half as long), the others every response whole, ``batch_size`` at a time in
    order of length (``items`` is sorted so); one progress bar over all of them."""
    groups: dict[str, list] = {}
    for key, ids in items:
        groups.setdefault(key[0], []).append((key, ids))
    shared = [g for g in groups.values() if len(g) >= SHARE_FROM] if share else []
    whole = [kv for g in groups.values() if len(g) < SHARE_FROM for kv in g] if shared else items
    whole.sort(key=lambda kv: len(kv[1]))
    bar = None
    if progress:
        from tqdm.auto import tqdm
        bar = tqdm(total=len(items), desc="scoring", unit="response")
    parts = [({key: float(s) for (key, _), s in zip(whole[start:start + batch_size], out)}
              for start, out in forward_in_batches(model, [t for _, t in whole], pad_id, batch_size,
                                                   lambda logits, mask: logits.squeeze(-1).float().cpu().tolist()))]
    if shared:
        parts.append(_inference(shared_scores(model, shared, pad_id, batch_size, continuations=2 * batch_size)))
    for part in parts:
        for batch in part:
            if bar is not None:
                bar.update(len(batch))
            yield batch
    if bar is not None:
        bar.close()


def _inference(batches):
    """``batches`` (a generator) run in inference mode, one batch at a time (the caller puts the model in eval
    mode)."""
    import torch

    while True:
        with torch.inference_mode():
            batch = next(batches, None)
        if batch is None:
            return
        yield batch


@contextlib.contextmanager
def _pad_token_id(model, pad_id: int):
    """``model``'s config pads with ``pad_id`` inside (transformers' classifiers pool at the rightmost other token,
    custom code often at the first pad): the same id the batches are padded with. Restored afterwards."""
    text = model.config.get_text_config() if hasattr(model.config, "get_text_config") else model.config
    configs = [model.config] if text is model.config else [model.config, text]  # multimodal: the text config pools
    before = [(c, getattr(c, "pad_token_id", None)) for c in configs]
    for c in configs:
        c.pad_token_id = pad_id
    try:
        yield
    finally:
        for c, v in before:
            c.pad_token_id = v


def _budget_batches(model, head, items: list, pad_id: int, batch_size: int, max_tokens: int, progress: bool):
    """``{key: reward}`` per batch of ``items`` (sorted by length): :func:`cheems_lib.models.batching.forward_groups`
    under ``max_tokens`` padded tokens, at most ``batch_size`` sequences, longest first; a custom head gets
    batches of one length (no padding: its own pooling reads the last real token whatever it does)."""
    import torch

    lengths = [len(t) for _, t in items]
    ratio = 1.2 if head.pads else 1.0
    groups = budget_groups(lengths, max_tokens, batch_size, ratio=ratio)
    device, options = input_device(model), forward_options(model)
    if progress:
        from tqdm.auto import tqdm
        groups = tqdm(groups, desc="scoring", unit="batch")
    for g in groups:
        with torch.inference_mode():
            ids, mask = pad_right([items[j][1] for j in g], pad_id, device)
            try:
                out = rewards(head, model, ids, mask, options).float().cpu().tolist()
            except torch.OutOfMemoryError:
                raise ModelError(f"out of device memory on a batch of {len(g)} sequences x {ids.shape[1]} tokens "
                                 "(fix: lower --max-tokens-per-batch or --batch-size, or spread the model with "
                                 "--device-map auto)") from None
        yield {items[j][0]: float(s) for j, s in zip(g, out)}


def _encoding_key(tokenizer, pairs: list, limit: int) -> str | None:
    """What a tokenization depends on: the fast tokenizer's whole state (vocabulary, merges, normalizer,
    truncation; ``backend_tokenizer.to_str()``), its chat template, the length limit and the texts; None for
    a tokenizer without a serialisable backend (never cached)."""
    import orjson

    backend = getattr(tokenizer, "backend_tokenizer", None)
    if backend is None:
        return None
    h = hashlib.sha256(backend.to_str().encode())
    h.update(orjson.dumps([type(tokenizer).__name__, getattr(tokenizer, "chat_template", None), limit]))
    h.update(orjson.dumps(pairs))
    return h.hexdigest()


def _encoded(tokenizer, pairs: list, limit: int) -> list:
    """Token ids of ``pairs`` (:func:`cheems_lib.models.chat_encoding.encode_pairs`, each text cut to its character
    budget before tokenizing, so a huge response costs its budget, not its size), reused from the last
    :data:`ENCODED_SETS` tokenizations of this process when tokenizer, limit and texts are the same."""
    from array import array

    key = _encoding_key(tokenizer, pairs, limit)
    if key in _ENCODED:
        _ENCODED[key] = _ENCODED.pop(key)  # most recent last
        return _ENCODED[key]
    encoded = [array("i", ids) for ids in encode_pairs(tokenizer, pairs, max_length=limit)]
    if key is not None:
        _ENCODED[key] = encoded
        while len(_ENCODED) > ENCODED_SETS:
            _ENCODED.pop(next(iter(_ENCODED)))
    return encoded


def placement(state, device_map=None):
    """The ``device_map`` a model of a ``cheems score`` process loads with (``state``: accelerate's ``PartialState``).

    None given: straight onto the process's device (``{"": "cuda:K"}``: no full copy in host memory first, which
    8 data-parallel processes would each make), and on the CPU as ever. ``"auto"`` (or another accelerate
    strategy) spreads one model over every device, for one that a device cannot hold: one process only, since
    each process of a data-parallel launch holds a copy of its own. It changes where layers run, not what they
    compute, so it is not a setting of the score file (a run may resume under another one).
    """
    if device_map is None:
        return device_map_for(state.device)
    if state.num_processes > 1:
        raise ModelError(f"--device-map {device_map} spreads one model over every device, but this launch runs "
                         f"{state.num_processes} processes that each load their own copy (fix: run one process "
                         "for --device-map, or leave it out to put one copy on each process's device)")
    return device_map


def make_scorer(model: str, state, *, judge: bool = False, dtype: str | None = None, batch_size: int = 16,
                max_length: int | None = None, seed: int = 0, trust_head: bool = False, device_map=None,
                trust_remote_code: bool = False, reward_head: str = "auto", reward_token: int = 0,
                max_tokens_per_batch: int | None = None) -> Scorer:
    """Load what scores ``model``: a baseline name (:data:`cheems_lib.baselines.NAMES`), a generative
    judge (``judge=True``) or a reward model, placed by :func:`placement` (``device_map``).

    ``trust_remote_code`` runs a checkpoint's own code; ``reward_head`` and ``reward_token`` say how a reward
    model is read (:mod:`cheems_lib.models.reward_heads`); ``max_tokens_per_batch`` bounds a batch's padded
    tokens (:func:`score_records`; a judge outside the tiny family too).
    Each batch's scores go to the sink as soon as they exist, so an interrupt loses at most one batch; a judge's
    go with the verdicts they came from (``sink(scores, verdicts)``), which the score file keeps beside it.
    The scorer's ``fingerprint`` attribute is :func:`cheems_lib.models.score_output.model_fingerprint` of what it loaded.
    """
    import sys

    progress = sys.stderr.isatty() and state.is_main_process
    if model in NAMES:
        scorer = _baseline_scorer(model, seed)
        scorer.fingerprint = model_fingerprint(model)
        return scorer
    where = placement(state, device_map)
    if judge:
        return _judge_scorer(model, state, dtype=dtype, batch_size=batch_size, max_length=max_length, progress=progress,
                             device_map=where, trust_remote_code=trust_remote_code,
                             max_tokens_per_batch=max_tokens_per_batch)

    rm, tok = load(model, dtype=dtype, require_trained_head=not trust_head, device_map=where,
                   trust_remote_code=trust_remote_code, head=reward_head, reward_token=reward_token)

    def reward(records, done, sink):
        return score_records(rm, tok, records, batch_size=batch_size, max_length=max_length,
                             progress=progress, skip=done, on_batch=sink, max_tokens_per_batch=max_tokens_per_batch)[1]
    reward.fingerprint = model_fingerprint(model, rm.config)
    return reward


def _baseline_scorer(name: str, seed: int) -> Scorer:
    def baseline(records, done, sink):
        scores = {k: v for k, v in named_scores(name, records, seed=seed).items() if k not in done}
        sink(scores)
        return {"scored": len(scores)}
    return baseline


def _judge_scorer(model: str, state, *, dtype, batch_size: int, max_length: int | None, progress: bool,
                  device_map=None, trust_remote_code: bool = False, max_tokens_per_batch: int | None = None) -> Scorer:
    lm, tok = load_judge(model, dtype=dtype, device_map=device_map, trust_remote_code=trust_remote_code)
    if getattr(lm.config, "cheems_tiny_size", None) is None:  # a real judge: batches bounded by tokens
        max_tokens_per_batch = max_tokens_per_batch or MAX_TOKENS_PER_BATCH

    def judge(records, done, sink):
        verdicts, scored = [], 0
        chunks = range(0, len(records), JUDGE_CHUNK)
        if progress:
            from tqdm.auto import tqdm
            chunks = tqdm(chunks, desc="judging", unit="chunk")
        for start in chunks:  # whole records per chunk: a response's score needs all of its pairs
            part = judge_records(lm, tok, records[start:start + JUDGE_CHUNK], batch_size=batch_size,
                                 max_length=max_length, max_tokens_per_batch=max_tokens_per_batch)
            # a record cut by a torn last line has some scores on disk already: a second line would be a duplicate
            scores = {k: v for k, v in judge_scores(part).items() if k not in done}
            sink(scores, part)  # the verdicts too, kept beside the scores
            verdicts += part
            scored += len(scores)
        return {"scored": scored, "position_consistency": position_consistency(verdicts), "pairs_judged": len(verdicts)}
    judge.fingerprint = model_fingerprint(model, lm.config)
    return judge
