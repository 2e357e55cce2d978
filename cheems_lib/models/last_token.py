"""A reward is read at one position: the last decoder layer computed there only.

A sequence-classification reward model reads its head at each sequence's last real token.
Every layer but the last must run over every token (the last layer's keys and values need
them), but the last layer's queries, attention output, MLP and residuals are needed at that
one position. :func:`last_token_only` runs the last layer for a few query rows per sequence
(the last token and the one or more before it) instead of all of them. Scoring on the CPU
gets 1.2x to 1.8x faster by tiny size (``benchmarks/bench_scoring.py --last-token``, in
benchmarks/README.md). The other positions keep what the layer below
wrote, so only the last token's logits are meaningful inside the context.

Training uses it too (``training=True``, :func:`cheems_lib.models.training.train` in one process or under DDP):
the backward then runs through the last layer at the read position only, the training loop takes about 30% less
time, and the gradient is the full forward's up to float rounding. That moves trained weights in their last bits,
within the speed rule of benchmarks/README.md (the smoke ledger re-recorded with it passes
``benchmarks/compare_ledgers.py``).

The scores stay the same to the last bit on the CPU, and the extra rows are why. A matrix
product of fewer than :data:`MIN_ROWS` rows takes another kernel path in MKL, with other last
bits than the full forward's, so every product here gets at least that many rows. PyTorch's
CPU flash attention computes a one-row query block differently from a longer one, so each
sequence keeps at least two query rows; and where the full forward's last token was alone in
its final query block (a length of ``1 mod`` :func:`query_block`), it is computed alone here
too. The test checks bit-identical rewards on the machine the smoke ledger was recorded on,
and agreement to 1e-6 elsewhere.

Only Qwen2 sequence classifiers (the ``tiny`` family and Qwen2.5-based reward models, the
paper's) and Qwen2 causal LMs (the tiny judge, Qwen2.5 judges; the judge reads one token's
logits) are read this way, with ``sdpa`` or eager attention, in eval mode, with no sliding
window on the last layer; any other model runs its plain forward (:func:`supported`).
"""
from __future__ import annotations

import contextlib

__all__ = ["supported", "query_block", "rows_per_sequence", "last_token_only", "positions_to_keep"]

MIN_ROWS = 16
"""Rows the last layer's matrix products get at least (``rows`` per sequence x batch): MKL computes products
of fewer rows on another path, whose last bits differ from the full forward's (measured up to 15 rows for
the shapes of the tiny family and of Qwen2.5-0.5B)."""
MODELS = ("Qwen2ForSequenceClassification", "Qwen2ForCausalLM")
"""Reward models, and judges read at their last token (:func:`cheems_lib.models.judging.judge_records`)."""
ATTENTION = ("sdpa", "eager")
"""Attention implementations whose masks this module slices (flash-attention-2 takes none)."""


def supported(model, *, training: bool = False) -> bool:
    """Whether :func:`last_token_only` reads ``model`` at its last tokens (else it runs the plain forward). In eval
    mode; with ``training``, in train mode too, where nothing of the layer is random (no attention dropout) and
    no activation checkpointing replays it."""
    if type(model).__name__ not in MODELS or (model.training and not training):
        return False
    if model.training and (getattr(model.config, "attention_dropout", 0.0) or _checkpointing(model)):
        return False
    layer = model.model.layers[-1]
    return (type(layer).__name__ == "Qwen2DecoderLayer" and layer.self_attn.sliding_window is None
            and model.config._attn_implementation in ATTENTION)


def _checkpointing(model) -> bool:
    """Whether activation checkpointing is on (transformers' newer name first: the older one warns)."""
    for name in ("is_activation_checkpointing", "is_gradient_checkpointing"):
        if hasattr(type(model), name) or hasattr(model, name):
            return bool(getattr(model, name))
    return False


def rows_per_sequence(batch: int, least: int = 1) -> int:
    """Positions per sequence that give a batch of ``batch`` sequences :data:`MIN_ROWS` rows, and at least ``least``."""
    return max(least, -(-MIN_ROWS // batch))


def query_block(length: int) -> int:
    """Query rows per block of PyTorch's CPU flash attention for ``length`` queries (its split sizes)."""
    return 256 if length >= 768 else 64 if length >= 192 else 32


@contextlib.contextmanager
def last_token_only(model, *, training: bool = False):
    """Inside, a supported ``model``'s forward computes its last layer at each sequence's last real token
    (the rightmost 1 of ``attention_mask``) and the tokens just before it (at least two rows per sequence and
    :data:`MIN_ROWS` per batch); the logits are exact at the last token and meaningless elsewhere. A batch with
    too few tokens for that runs the layer whole. An unsupported model is left as it is.

    With ``training`` (:func:`supported`) the layer also runs so in train mode, with autograd: the backward then
    goes through the last layer at those positions only (the reward is read nowhere else, so the gradient is the
    full forward's, up to the last bits of smaller products). The rows are written out of place, as autograd needs."""
    if not supported(model, training=training):
        yield model
        return
    import torch

    layer, state = model.model.layers[-1], {}

    def capture(module, args, kwargs):  # the 2-D mask: where each row's last real token is
        state["mask"] = kwargs.get("attention_mask", args[1] if len(args) > 1 else None)

    def forward(hidden_states, attention_mask=None, position_embeddings=None, **kwargs):
        b, n = hidden_states.shape[:2]
        rows = rows_per_sequence(b, least=2)  # two query rows keep attention off its one-row path
        if rows >= n:  # a batch this small costs nothing: the layer's own forward
            return type(layer).forward(layer, hidden_states, attention_mask=attention_mask,
                                       position_embeddings=position_embeddings, **kwargs)
        last = _last_positions(state["mask"], hidden_states)
        return _last_layer(layer, hidden_states, attention_mask, position_embeddings, last, rows, torch,
                           cache=kwargs.get("cache", kwargs.get("past_key_values")))  # transformers' new name first

    hook = model.register_forward_pre_hook(capture, with_kwargs=True)
    layer.forward = forward
    try:
        yield model
    finally:
        del layer.forward
        hook.remove()


def _last_positions(mask, hidden_states):
    import torch

    b, n = hidden_states.shape[:2]
    if mask is None:
        return torch.full((b,), n - 1, dtype=torch.long, device=hidden_states.device)
    width = mask.shape[1]  # the cached positions and these n: the last real token among these n
    return (mask.to(torch.long) * torch.arange(1, width + 1, device=mask.device)).argmax(1) - (width - n)


def _attention(attn, q, k, v, mask, torch):
    """Attention of queries ``q`` (batch, heads, rows, dim) over all keys, as the full forward's kernels
    compute it: torch's ``scaled_dot_product_attention`` on keys and values repeated per query head (transformers'
    sdpa path would fold a one-row query's heads into rows), or transformers' eager attention; (batch, rows,
    heads, dim)."""
    from transformers.models.qwen2.modeling_qwen2 import eager_attention_forward, repeat_kv

    if attn.config._attn_implementation == "eager":
        if mask is not None and mask.dtype == torch.bool:  # eager attention adds its mask
            mask = torch.zeros(mask.shape, dtype=q.dtype, device=q.device).masked_fill(~mask, torch.finfo(q.dtype).min)
        return eager_attention_forward(attn, q, k, v, mask, dropout=0.0, scaling=attn.scaling)[0]
    groups = attn.num_key_value_groups
    out = torch.nn.functional.scaled_dot_product_attention(q, repeat_kv(k, groups), repeat_kv(v, groups),
                                                           attn_mask=mask, scale=attn.scaling)
    return out.transpose(1, 2)


def _last_layer(layer, x, mask4d, position_embeddings, last, r, torch, cache=None):
    """``layer`` (a Qwen2 decoder layer) at the ``r`` positions up to ``last`` of each sequence, written into ``x``.
    With a key-value ``cache`` (a shared prefix, :mod:`cheems_lib.models.prefix_sharing`) the layer's keys and
    values of these positions are appended to it and its queries attend to all of them."""
    from transformers.models.qwen2.modeling_qwen2 import rotate_half

    attn, (b, n, _) = layer.self_attn, x.shape
    d = attn.head_dim
    rows = torch.arange(b, device=x.device)[:, None]
    at = (last[:, None] - torch.arange(r - 1, -1, -1, device=x.device)).clamp(min=0)  # (b, r), the last one last
    h = layer.input_layernorm(x)
    q = attn.q_proj(h[rows, at]).view(b, r, -1, d).transpose(1, 2)
    k = attn.k_proj(h).view(b, n, -1, d).transpose(1, 2)
    v = attn.v_proj(h).view(b, n, -1, d).transpose(1, 2)
    cos, sin = (t.expand(b, n, d) for t in position_embeddings)
    q = q * cos[rows, at].unsqueeze(1) + rotate_half(q) * sin[rows, at].unsqueeze(1)  # as apply_rotary_pos_emb
    k = k * cos.unsqueeze(1) + rotate_half(k) * sin.unsqueeze(1)
    if cache is not None:
        k, v = cache.update(k, v, attn.layer_idx)
    width = k.shape[2]  # keys: the cached ones, then these n
    causal = mask4d is None  # no padding: the full forward ran causal attention without a mask
    if causal:
        mask4d = torch.ones(n, width, dtype=torch.bool, device=x.device).tril(width - n)[None, None]
    masks = mask4d.expand(b, -1, n, width)[rows, :, at].transpose(1, 2)  # (b, 1, r, width)
    out = _attention(attn, q, k, v, masks, torch)  # (b, r, heads, d)
    alone = (last == n - 1) & (n % query_block(n) == 1)  # the full forward's one-row query block
    graph = torch.is_grad_enabled() and x.requires_grad  # training: autograd keeps x and out, so no writes into them
    if alone.any() and not graph:  # the last bits of the full forward, which training does not promise
        i = alone.nonzero()[:, 0]
        out[i, -1:] = _attention(attn, q[i, :, -1:], k[i], v[i], None if causal else masks[i, :, -1:], torch)
    y = x[rows, at] + attn.o_proj(out.reshape(b, r, -1))
    y = y + layer.mlp(layer.post_attention_layernorm(y))
    if graph:  # only the read position: its gradient flows once (clamped rows of a short sequence repeat a position)
        return x.index_put((rows[:, 0], last), y[:, -1])
    x[rows, at] = y
    return x


def positions_to_keep(last, length: int):
    """The sorted positions whose logits a batch computes: every row's ``last`` and, when the output layer's
    product would have fewer than :data:`MIN_ROWS` rows, the first other positions
    too, so it takes the kernel path of the full forward (whose logits stay the same to the last bit); every
    position when the batch is that small anyway."""
    import torch

    need = rows_per_sequence(len(last))
    if need >= length:
        return torch.arange(length, device=last.device)
    keep = torch.unique(last)
    if len(keep) < need:
        others = torch.ones(length, dtype=torch.bool, device=last.device)
        others[keep] = False
        keep = torch.sort(torch.cat([keep, others.nonzero()[:need - len(keep), 0]])).values
    return keep
