"""Discriminative scoring: one reward per (prompt, response), batched by length (paper §6.1).

Responses are sorted by token length and batched in that order, right-padded with an
attention mask. With causal attention and right padding a real token never attends to a
pad and keeps its position, so a score does not depend on the batch size or on its batch
neighbours (the tests check batch sizes 1, 3 and 16 agree to 1e-5 in float32), the
RewardBench problem of accuracy changing with batch size.
"""
from __future__ import annotations

from typing import Sequence

from .records import Record

__all__ = ["score_records"]


def score_records(model, tokenizer, records: Sequence[Record], *, batch_size: int = 16, max_length: int | None = None,
                  progress: bool = False, skip: set | None = None) -> tuple[dict[tuple[str, str], float], dict]:
    """Score every response of ``records``; returns ``(scores, report)``.

    ``max_length`` defaults to the model's maximum positions; longer sequences are cut at
    the end and counted in ``report["truncated"]``. Keys in ``skip`` (already scored, for
    resuming) are not scored again and are counted in ``report["skipped"]``.
    """
    import torch

    from .reward_model import check_pair, encode_pair
    from .batching import pad_right

    check_pair(model, tokenizer)
    limit = max_length or getattr(model.config, "max_position_embeddings", None) or 10**9
    skip = skip or set()
    items, truncated, skipped = [], 0, 0
    for rec in records:
        for r in rec.responses:
            if (rec.id, r.id) in skip:
                skipped += 1
                continue
            ids = encode_pair(tokenizer, rec.prompt, r.content, sys_prompt=rec.sys_prompt)
            if len(ids) > limit:
                truncated += 1
                ids = ids[:limit]
            items.append(((rec.id, r.id), ids))
    items.sort(key=lambda kv: len(kv[1]))
    model.eval()
    device = next(model.parameters()).device
    scores: dict[tuple[str, str], float] = {}
    batches = range(0, len(items), batch_size)
    if progress:
        from tqdm.auto import tqdm
        batches = tqdm(batches, desc="scoring", unit="batch")
    with torch.inference_mode():
        for start in batches:
            part = items[start:start + batch_size]
            ids, mask = pad_right([t for _, t in part], tokenizer.pad_token_id, device)
            out = model(input_ids=ids, attention_mask=mask).logits.squeeze(-1).float().cpu().tolist()
            for (key, _), s in zip(part, out):
                scores[key] = float(s)
    return scores, {"scored": len(items), "truncated": truncated, "skipped": skipped}
