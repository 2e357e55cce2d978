"""Reward heads: how a reward is read from a model, beside ``AutoModelForSequenceClassification``.

A reward model's checkpoint says what it is in one of three ways (:data:`HEADS`):

* ``classifier``: a sequence classifier with one label (``AutoModelForSequenceClassification``, the
  paper's and the ``tiny`` family's). transformers pools its logit at the rightmost token that is not
  the pad id, so scoring pads with an id that no sequence holds
  (:func:`cheems_lib.models.reward_model.absent_pad_id`) and sets it as ``config.pad_token_id``.
* ``custom``: a checkpoint with its own code (``auto_map`` in ``config.json``, loaded with
  ``trust_remote_code``) whose ``forward`` returns the reward: an output with ``.score`` (ArmoRM),
  ``.rewards`` or ``.logits`` of shape ``[batch, 1]`` (InternLM2's reward models), or one value per
  token ``[batch, length]``, read at each sequence's last real token. How such code pools is its own
  (the last column, the first pad, the attention mask), so it is forwarded in batches of sequences of
  one length, without padding: whatever it pools, it reads the last real token. A config with a
  ``reward_token_id`` (InternLM2's) gets that token appended to every sequence, as the model's own
  ``get_score`` does.
* ``logit``: a causal LM whose reward is the logit of one vocabulary entry (``token_id``; 0 by
  default, as the model card of Nemotron's reward models reads it) at each sequence's last real
  token, found from the attention mask.

Which head (:func:`choose`): ``auto`` picks ``custom`` for a checkpoint with custom code for
``AutoModelForSequenceClassification`` or ``AutoModel`` when ``trust_remote_code`` is given, and
``classifier`` otherwise. It never picks ``logit``: a causal LM's logit of token 0 is a reward only
for a model trained so, and any causal LM would otherwise score silently; ``cheems score
--reward-head logit`` asks for it. An explicit head is checked against the checkpoint.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from .last_token import positions_to_keep
from . import reward_model
from .reward_model import check_pair, check_source, loading, ModelError, realign

__all__ = ["HEADS", "CUSTOM_CLASSES", "OUTPUT_FIELDS", "RewardHead", "detect", "choose", "load", "attach", "head_of",
           "rewards", "from_output", "prepare"]

HEADS = ("classifier", "custom", "logit")
"""The reward heads, as ``cheems score --reward-head`` names them (besides ``auto``)."""
CUSTOM_CLASSES = ("AutoModelForSequenceClassification", "AutoModel")
"""``auto_map`` entries a custom reward model is loaded through, in this order."""
OUTPUT_FIELDS = ("score", "rewards", "logits")
"""Where a custom model's output holds its reward, in this order (ArmoRM's ``.score`` comes with
per-objective ``.rewards``, so ``.score`` goes first)."""


@dataclass(frozen=True)
class RewardHead:
    """How one loaded reward model is read (see the module docstring)."""

    kind: str = "classifier"
    token_id: int = 0
    """``logit``: the vocabulary entry whose logit is the reward."""
    end_token_id: int | None = None
    """``custom``: a token appended to every sequence (the config's ``reward_token_id``), or None."""
    auto_class: str | None = None
    """``custom``: the ``auto_map`` entry (of :data:`CUSTOM_CLASSES`) the model is loaded through."""

    @property
    def pads(self) -> bool:
        """Whether sequences of different lengths share a batch (right-padded); a custom model's own
        pooling might read a pad, so its batches hold one length each."""
        return self.kind != "custom"


def detect(config, *, trust_remote_code: bool = False) -> str:
    """The head ``auto`` picks for ``config`` (see the module docstring)."""
    auto_map = getattr(config, "auto_map", None) or {}
    if trust_remote_code and any(k in auto_map for k in CUSTOM_CLASSES):
        return "custom"
    return "classifier"


def choose(config, requested: str = "auto", *, trust_remote_code: bool = False, token_id: int = 0,
           where: str = "model") -> RewardHead:
    """The :class:`RewardHead` of ``requested`` (``auto`` or one of :data:`HEADS`) for ``config``;
    :class:`~cheems_lib.models.reward_model.ModelError` for a head the checkpoint cannot have."""
    if requested != "auto" and requested not in HEADS:
        raise ModelError(f"{where}: unknown reward head {requested!r} (fix: use auto, {', '.join(HEADS)})")
    kind = detect(config, trust_remote_code=trust_remote_code) if requested == "auto" else requested
    if kind == "custom":
        auto_map = getattr(config, "auto_map", None) or {}
        if not any(k in auto_map for k in CUSTOM_CLASSES):
            raise ModelError(f"{where}: --reward-head custom needs custom code for {' or '.join(CUSTOM_CLASSES)} "
                             "(auto_map in config.json), and this checkpoint has none "
                             "(fix: --reward-head classifier or logit)")
        if not trust_remote_code:
            raise ModelError(f"{where}: --reward-head custom runs the code in the checkpoint "
                             "(fix: add --trust-remote-code if you trust it)")
        end = getattr(config, "reward_token_id", None)
        return RewardHead("custom", end_token_id=end if isinstance(end, int) and not isinstance(end, bool) else None,
                          auto_class=next(k for k in CUSTOM_CLASSES if k in auto_map))
    if kind == "logit":
        vocab = getattr(config.get_text_config() if hasattr(config, "get_text_config") else config, "vocab_size", None)
        if isinstance(token_id, bool) or not isinstance(token_id, int) or token_id < 0 or (vocab and token_id >= vocab):
            raise ModelError(f"{where}: --reward-token {token_id} is not a token id of its vocabulary of {vocab} "
                             f"(fix: pass an id in [0, {(vocab or 1) - 1}]; 0 for Nemotron's reward models)")
        return RewardHead("logit", token_id=token_id)
    return RewardHead("classifier")


def load(name_or_path: str | Path, *, head: str = "auto", reward_token: int = 0, dtype=None, device_map=None,
         require_trained_head: bool = True, trust_remote_code: bool = False):
    """A reward model read by ``head`` (``auto`` or one of :data:`HEADS`, :func:`choose`) and its tokenizer.

    A sequence classifier is :func:`cheems_lib.models.reward_model.load`'s, with its checks. A custom model must
    find all its weights in the checkpoint; a ``logit`` model its language-model head (or tied embeddings).
    ``dtype``, ``device_map`` and ``trust_remote_code`` go to ``from_pretrained``; the head is remembered on the
    model (:func:`head_of`), which scoring reads.
    """
    from transformers import AutoConfig, AutoModel, AutoModelForCausalLM, AutoModelForSequenceClassification, \
        AutoTokenizer

    where = str(name_or_path)
    check_source(name_or_path)
    remote = {"trust_remote_code": bool(trust_remote_code)}  # False, not None: never an interactive prompt
    with loading(where):
        config = AutoConfig.from_pretrained(where, **remote)
    chosen = choose(config, head, trust_remote_code=trust_remote_code, token_id=reward_token, where=where)
    if chosen.kind == "classifier":
        model, tokenizer = reward_model.load(name_or_path, dtype=dtype, device_map=device_map,
                                             require_trained_head=require_trained_head,
                                             trust_remote_code=trust_remote_code)
        attach(model, chosen)
        return model, tokenizer
    cls = (AutoModelForCausalLM if chosen.kind == "logit"
           else AutoModelForSequenceClassification if chosen.auto_class == CUSTOM_CLASSES[0] else AutoModel)
    with loading(where):
        tokenizer = AutoTokenizer.from_pretrained(where, **remote)
        model, info = cls.from_pretrained(where, dtype=dtype, device_map=device_map, output_loading_info=True, **remote)
    missing = sorted(info.get("missing_keys", []))
    if chosen.kind == "logit":
        lm_head = [k for k in missing if "lm_head" in k]
        if lm_head and not getattr(model.config, "tie_word_embeddings", False):
            raise ModelError(f"{where}: no language-model head {lm_head} in the checkpoint, so the reward logit would "
                             "be random (fix: --reward-head logit reads a causal LM; a sequence classifier takes "
                             "--reward-head classifier)")
    elif require_trained_head and missing:
        raise ModelError(f"{where}: the weights {missing[:4]} are not in the checkpoint and would be random "
                         "(fix: pass the complete checkpoint, or --trust-head if they are meant to be new)")
    attach(model, chosen)
    check_pair(model, tokenizer, where)
    realign(model)
    return model, tokenizer


def attach(model, head: RewardHead) -> None:
    """Remember on ``model`` how it is read (:func:`head_of`)."""
    model.cheems_reward_head = head


def head_of(model) -> RewardHead:
    """How ``model`` is read: what :func:`attach` recorded, else a sequence classifier (a model built in code)."""
    return getattr(model, "cheems_reward_head", None) or RewardHead("classifier")


def prepare(head: RewardHead, ids: list[int]) -> list[int]:
    """The token ids ``head`` forwards for an encoded conversation: a custom model's reward token appended."""
    if head.end_token_id is None:
        return ids
    return [*ids, head.end_token_id]


def rewards(head: RewardHead, model, ids, mask, options: dict | None = None):
    """One reward per row of the right-padded batch ``(ids, mask)``: a 1-D tensor (call in inference mode).
    ``options``: extra forward arguments (``use_cache=False``)."""
    options = options or {}
    if head.kind == "classifier":  # transformers pools at the rightmost non-pad token
        return model(input_ids=ids, attention_mask=mask, **options).logits.squeeze(-1)
    import torch

    last = mask.sum(1) - 1  # right padding: each row's last real token
    if head.kind == "logit":
        return _last_logits(model, ids, mask, last, options)[:, head.token_id]
    return from_output(model(input_ids=ids, attention_mask=mask, **options), last.to(torch.long), tuple(ids.shape))


def _last_logits(model, ids, mask, last, options: dict):
    """A causal LM's logits at ``last`` of each row; only those positions' output layer where the forward
    takes ``logits_to_keep`` (a 128k vocabulary at every token would dwarf the rest)."""
    import inspect

    import torch

    rows = torch.arange(len(last), device=ids.device)
    if "logits_to_keep" in inspect.signature(model.forward).parameters:
        keep = positions_to_keep(last, ids.shape[1])
        logits = model(input_ids=ids, attention_mask=mask, logits_to_keep=keep, **options).logits
        return logits[rows.to(logits.device), torch.searchsorted(keep, last).to(logits.device)]
    logits = model(input_ids=ids, attention_mask=mask, **options).logits
    return logits[rows.to(logits.device), last.to(logits.device)]


def from_output(out, last, shape: tuple[int, int]):
    """The reward in a custom model's output: the first tensor of :data:`OUTPUT_FIELDS`, one value per
    sequence (``[batch]``, ``[batch, 1]``) or per token (``[batch, length]``, ``[batch, length, 1]``, read at
    ``last``); ``shape`` is the input's ``(batch, length)``."""
    import torch

    get = out.get if isinstance(out, dict) else lambda name: getattr(out, name, None)
    found = [(name, get(name)) for name in OUTPUT_FIELDS if torch.is_tensor(get(name))]
    if not found:
        raise ModelError(f"the model's forward returned {type(out).__name__} without a .score, .rewards or .logits "
                         "tensor (fix: --reward-head classifier or logit, or a model whose forward returns its reward)")
    name, value = found[0]
    b, n = shape
    if value.dim() == 3 and tuple(value.shape) == (b, n, 1):
        value = value[..., 0]
    if value.dim() == 2 and tuple(value.shape) == (b, n) and n > 1:  # per token: the last real one
        return value[torch.arange(b, device=value.device), last.to(value.device)]
    if value.dim() == 2 and tuple(value.shape) == (b, 1):
        return value[:, 0]
    if value.dim() == 1 and value.shape[0] == b:
        return value
    raise ModelError(f"the model's output .{name} has shape {list(value.shape)} for a batch of {b} x {n} tokens; a "
                     "reward is one value per sequence ([batch, 1]) or per token ([batch, length]) "
                     "(fix: --reward-head classifier or logit, or a model with one reward per sequence)")
