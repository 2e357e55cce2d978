"""Reward models: any Hugging Face sequence classifier with one output, and the tiny family.

A reward model here is an ``AutoModelForSequenceClassification`` with ``num_labels=1``
plus its tokenizer; a (prompt, response) pair is encoded with the tokenizer's chat template
(prompt as the user turn, response as the assistant turn; a template that refuses a system
turn gets the system prompt at the start of the user turn) and the score is the logit at
the last non-padding token (the encoding: :mod:`cheems_lib.models.chat_encoding`). :func:`load`
takes a hub name or a local path, so the same code serves real models on a GPU and the embedded default; it also loads reward models with their
own code or a reward read from a causal LM's logit (:mod:`cheems_lib.models.reward_heads`),
and places a model with a ``device_map`` (:func:`device_map_for`).

The embedded default, ``tiny``, is a small Qwen2-architecture model with a byte-level BPE
tokenizer trained locally on the training texts (the ``tokenizers`` library, using Qwen2's
exact pre-tokenization, so ``AutoTokenizer`` reloads it unchanged). It is saved as a normal
checkpoint directory. :data:`TINY_SIZES` names five sizes spanning more than 30x in
parameters for the model-scaling chapter.

A GGUF file (a llama.cpp checkpoint) becomes such a directory through :mod:`cheems_lib.models.gguf`.
"""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .chat_encoding import encode_pair

__all__ = ["TINY_SIZES", "TinySize", "is_tiny", "train_tokenizer", "tiny_config", "build_tiny", "load",
           "ModelError", "count_parameters", "realign", "check_source", "loading", "head_looks_untrained",
           "spare_pad_ids", "absent_pad_id", "embedding_rows", "placement_for", "FITS_SHARE", "device_map_for",
           "spread_by_device_map"]

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
