"""Training configuration (paper §5, Table 9): what a reward-model or tiny-judge run trains with.

:class:`TrainConfig` holds every hyperparameter with its help text and range check;
:meth:`TrainConfig.paper` is Table 9, :func:`paper_machine_settings` fits its token budget to
this machine, :func:`choose_preset` picks between the tiny and the paper preset by model kind,
and :func:`check_learning_rate` guards a pretrained checkpoint against a tiny model's learning
rate. :class:`JudgeTrainConfig` is the tiny judge's counterpart. :func:`default_device` is the library's
one choice between the CPU and a GPU (training, scoring, the chapters' worlds, the book's parallel jobs).

Kept apart from :mod:`cheems_lib.models.training` (as TRL keeps ``reward_config.py`` apart from its
trainer) so that the command line can build its flags and validate them without importing
torch, and so that a reader finds every default in one place.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any, Mapping

from .reward_model import is_tiny

__all__ = ["TrainConfig", "TrainError", "warmup_steps", "choose_preset", "paper_machine_settings", "check_learning_rate",
           "JudgeTrainConfig", "effective_settings", "start_line", "BOOKKEEPING_FIELDS", "PRETRAINED_MAX_LR",
           "PRESETS", "SAVE_DTYPES", "CHECKPOINTING", "CHECKPOINTING_FROM", "default_device", "field_docs"]

PRESETS = ("tiny", "paper")
SAVE_DTYPES = ("auto", "float32", "bfloat16", "float16")
CHECKPOINTING = ("auto", "on", "off")
CHECKPOINTING_FROM = 1_000_000_000
"""Parameters from which ``gradient_checkpointing="auto"`` recomputes activations in the backward pass: a 1B
model's activations for a 16,384-token micro-batch outgrow its float32 weights and Adam state on one GPU."""
BOOKKEEPING_FIELDS = ("max_steps", "save_every", "log_every", "save_dtype")
"""Config fields that do not change the trained weights: a resumed run may change them."""
PRETRAINED_MAX_LR = 1e-4
"""Above this learning rate a pretrained checkpoint is refused unless forced (Table 9 uses 5e-6)."""


class TrainError(ValueError):
    """Training cannot start; the message says why and what to do."""


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _is_int(v) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _is_num(v) -> bool:
    return (isinstance(v, (int, float)) and not isinstance(v, bool)) and math.isfinite(v)


# field -> (test, allowed range in words); checked by TrainConfig.validate
_RULES = {
    # every epoch's step plan is built at the start: a huge count would hang there, not train
    "epochs": (lambda v: _is_int(v) and 1 <= v <= 1000, "an integer in [1, 1000]"),
    "max_length": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "tokenizer_vocab": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "max_tokens_per_batch": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "grad_accum": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "log_every": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    # accelerate's set_seed seeds numpy's legacy generator, which takes 32 bits
    "seed": (lambda v: _is_int(v) and 0 <= v < 2**32, "an integer in [0, 4294967295]"),
    "max_steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0: every epoch)"),
    "save_every": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0: at the end of each epoch)"),
    "learning_rate": (lambda v: _is_num(v) and v > 0, "a finite number > 0"),
    "reg_coef": (lambda v: _is_num(v) and v >= 0, "a finite number >= 0"),
    "weight_decay": (lambda v: _is_num(v) and v >= 0, "a finite number >= 0"),
    "max_grad_norm": (lambda v: _is_num(v) and v >= 0, "a finite number >= 0 (0: no clipping)"),
    "warmup_ratio": (lambda v: _is_num(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "mixed_precision": (lambda v: v in ("no", "bf16", "fp16"), "one of no, bf16, fp16"),
    "save_dtype": (lambda v: v in SAVE_DTYPES, "one of " + ", ".join(SAVE_DTYPES)),
    "global_batch": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0: --grad-accum micro-batches per step)"),
    "gradient_checkpointing": (lambda v: v in CHECKPOINTING, "one of " + ", ".join(CHECKPOINTING)),
    "model": (lambda v: isinstance(v, str) and v.strip() != "", "a tiny size, a hub name or a checkpoint path"),
}


@dataclass
class TrainConfig:
    """Hyperparameters. Defaults suit the tiny CPU model; :meth:`paper` gives Table 9's;
    :meth:`for_model` picks between them by model kind (what ``cheems train`` and the book use)."""

    # model
    model: str = "tiny"
    """'tiny' (or a size of the tiny family, e.g. 'tiny-xl'), a hub name, or a local checkpoint path."""
    max_length: int = 512
    """Tokens per (prompt, response) sequence; longer ones are cut at the end, counted and reported. Paper: 2048."""
    tokenizer_vocab: int = 3000
    """Vocabulary of the tokenizer trained for tiny models (ignored for pretrained models)."""
    # optimisation
    learning_rate: float = 2e-3
    """Peak AdamW learning rate. Paper: 5e-6 for 0.5B-72B models; a randomly initialised tiny model needs far more."""
    weight_decay: float = 0.0
    """AdamW weight decay."""
    warmup_ratio: float = 0.1
    """Share of steps with linear warm-up before the cosine decay (Table 9)."""
    epochs: int = 2
    """Passes over the data (Table 9: 2)."""
    reg_coef: float = 0.1
    """Weight of the Gaussian prior reg_coef * mean(r^2) (Table 9: 0.1; TRL's center_rewards_coefficient is off by default)."""
    max_grad_norm: float = 1.0
    """Gradient clipping."""
    # batching
    max_tokens_per_batch: int = 8192
    """Token budget of a micro-batch: whole prompts are packed greedily up to this many real tokens and forwarded in length groups of at most this many padded tokens (longest sequence x sequences); under FSDP, where a micro-batch is one padded forward, up to this many padded tokens."""
    grad_accum: int = 1
    """Micro-batches per process per optimisation step, when global_batch is 0 (an explicit --grad-accum turns the preset's global_batch off)."""
    global_batch: int = 0
    """Sequences per optimisation step over all processes (Table 9: 256), to within one prompt: the step's prompts are chosen first, then packed into micro-batches and spread over the processes, so the process count does not change the steps. 0: grad_accum micro-batches per process per step."""
    mixed_precision: str = "no"
    """'no', 'bf16' or 'fp16' (accelerate): the forward and backward compute in that precision (autocast; under FSDP on parameters gathered in it, gradients reduced in float32); the weights and the optimizer stay float32 (bf16 on GPUs for real models)."""
    save_dtype: str = "auto"
    """dtype of the saved model: 'auto' (the source checkpoint's dtype; float32 for a tiny model), float32, bfloat16 or float16."""
    gradient_checkpointing: str = "auto"
    """Recompute activations in the backward pass: 'on', 'off' or 'auto' (on for from_pretrained models of 1B parameters or more; FSDP's own activation checkpointing takes its place)."""
    # bookkeeping
    seed: int = 0
    """Seed of initialisation, tokenizer-independent shuffling and batching."""
    max_steps: int = 0
    """Stop after this many optimisation steps (0: run every epoch); the schedule still spans all epochs."""
    save_every: int = 0
    """Write a resumable checkpoint every N steps (0: only at the end of each epoch)."""
    log_every: int = 1
    """Write a metrics line every N steps."""

    def validate(self) -> "TrainConfig":
        """Raise :class:`TrainError` naming the first field out of range, its value and the allowed range."""
        for name, (ok, allowed) in _RULES.items():
            value = getattr(self, name)
            if not ok(value):
                raise TrainError(f"{_flag(name)} {value}: out of range, must be {allowed} "
                                 f"(fix: pass {_flag(name)} with {allowed}, or leave it out for the preset's value)")
        if self.global_batch and self.grad_accum > 1:
            raise TrainError(f"--global-batch {self.global_batch} and --grad-accum {self.grad_accum}: both set the "
                             "step's size (fix: pass one of them; --global-batch 0 to accumulate micro-batches)")
        return self

    @classmethod
    def for_model(cls, model: str = "tiny", preset: str | None = None, *, device: str | None = None,
                  **overrides) -> "TrainConfig":
        """The safe defaults for ``model`` (see :func:`choose_preset`), then ``overrides`` on top.

        A tiny-family name gives exactly ``TrainConfig(model=model, **overrides)``; anything
        else is loaded with ``from_pretrained`` and gets Table 9 (:meth:`paper`) with the token
        budget of :func:`paper_machine_settings` for ``device`` (default: CUDA if available).
        """
        name, _ = choose_preset(model, preset)
        base = cls(model=model) if name == "tiny" else cls.paper(model=model, **paper_machine_settings(device))
        return replace(base, **overrides)

    @classmethod
    def from_flags(cls, model: str, preset: str | None, flags: Mapping[str, Any]) -> "TrainConfig":
        """:meth:`for_model` with the fields that ``flags`` gives (``cheems train``'s options; None: not given) on
        top. An explicit ``grad_accum`` without ``global_batch`` sets the step's size itself (``global_batch`` 0)."""
        overrides = {f.name: flags[f.name] for f in fields(cls) if f.name != "model" and flags.get(f.name) is not None}
        if flags.get("grad_accum") is not None and flags.get("global_batch") is None:
            overrides["global_batch"] = 0
        return cls.for_model(model, preset, **overrides)

    @classmethod
    def paper(cls, model: str = "Qwen/Qwen2.5-72B-Instruct", **overrides) -> "TrainConfig":
        """Table 9: lr 5e-6 cosine, warm-up 0.1, 2 epochs, max length 2048, reg 0.1, bf16.

        The paper's global batch of 256 sequences is kept whatever the number of processes
        (``global_batch``); the token budget only bounds a micro-batch's memory.
        """
        base = dict(model=model, max_length=2048, learning_rate=5e-6, warmup_ratio=0.1, epochs=2, reg_coef=0.1,
                    max_tokens_per_batch=16384, global_batch=256, mixed_precision="bf16", save_every=200)
        return cls(**{**base, **overrides})


def choose_preset(model: str, preset: str | None = None) -> tuple[str, str]:
    """``(preset, reason)``: ``preset`` if given, else ``tiny`` for the tiny family and ``paper``
    (Table 9) for anything loaded with ``from_pretrained`` (a hub name or a local path)."""
    if preset is not None:
        if preset not in PRESETS:
            raise TrainError(f"--preset {preset}: unknown (fix: pass one of {', '.join(PRESETS)})")
        return preset, f"--preset {preset}"
    if is_tiny(model):
        return "tiny", "a tiny-family model built here"
    return "paper", "a pretrained checkpoint (from_pretrained): Table 9"


def default_device() -> str:
    """``"cuda"`` when torch sees a GPU, else ``"cpu"`` (also where torch is not installed). Imports torch
    only when called, so the command line's start-up and ``cheems resolve`` stay free of it."""
    try:
        import torch
    except ImportError:
        return "cpu"
    return "cuda" if torch.cuda.is_available() else "cpu"


def paper_machine_settings(device: str | None = None) -> dict:
    """Micro-batch token budget and precision of the paper preset on this machine.

    The step itself is Table 9's 256 sequences everywhere (``global_batch``); only the
    micro-batch differs: on a GPU 16,384 padded tokens in bf16 autocast (fp16 where bf16 is
    unsupported); on a CPU 4,096 in float32 (CPU bf16 autocast is slow or missing, and
    smaller forwards keep the activations in memory).
    """
    import torch

    device = device or default_device()
    if device == "cpu":
        return {"max_tokens_per_batch": 4096, "mixed_precision": "no"}
    bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return {"max_tokens_per_batch": 16384, "mixed_precision": "bf16" if bf16 else "fp16"}


def _table9_learning_rate() -> float:
    """Table 9's learning rate from ``data/paper``; the preset's copy where the data is not shipped."""
    try:
        from ..paper import table

        return float(dict(table("table9_hyperparameters").values)["learning_rate"])
    except (FileNotFoundError, KeyError, ImportError):
        return TrainConfig.paper().learning_rate


def warmup_steps(ratio: float, total_steps: int) -> int:
    """Warmup steps of a cosine schedule over ``total_steps``: ``ceil(ratio * total_steps)``, at most
    ``total_steps - 1``. Warmup starts at learning rate 0, so a run of one step warmed up over that step (a small
    training set in one micro-batch) would end exactly as it started.

    >>> warmup_steps(0.1, 100), warmup_steps(0.1, 1), warmup_steps(0.1, 2), warmup_steps(0.0, 5)
    (10, 0, 1, 0)
    """
    return max(0, min(math.ceil(ratio * total_steps), total_steps - 1))


def check_learning_rate(cfg: TrainConfig, *, force: bool = False) -> None:
    """Refuse a learning rate above :data:`PRETRAINED_MAX_LR` on a pretrained checkpoint unless ``force``."""
    if force or is_tiny(cfg.model) or cfg.learning_rate <= PRETRAINED_MAX_LR:
        return
    t9 = _table9_learning_rate()
    raise TrainError(f"--learning-rate {cfg.learning_rate:g} is above {PRETRAINED_MAX_LR:g} for the pretrained "
                     f"checkpoint {cfg.model} and would wreck it; Table 9 trains with {t9:g} (fix: leave "
                     f"--learning-rate out for {t9:g}, or pass --force-lr to train with {cfg.learning_rate:g})")


@dataclass
class JudgeTrainConfig:
    """Hyperparameters of the tiny judge (:func:`cheems_lib.models.judging.train_judge`, called by
    :func:`cheems_lib.models.judging.train_tiny_judge`); defaults are what the book trains with."""

    size: str = "tiny"
    """A size of the tiny family (:data:`cheems_lib.models.reward_model.TINY_SIZES`)."""
    max_pairs: int = 2000
    """Ranked pairs sampled (seeded) for training; each is shown in both orders."""
    epochs: int = 2
    """Passes over the examples."""
    learning_rate: float = 1e-3
    """Peak AdamW learning rate."""
    max_tokens_per_batch: int = 8192
    """Real tokens per batch (packing), also the padded-token budget of one forward group."""
    max_length: int = 768
    """Tokens per judge prompt; longer prompts keep their end (the instruction to answer comes last)."""
    seed: int = 0
    """Seed of the pair sample, initialisation and batching."""
    warmup_fraction: float = 0.1
    """Share of the batches with linear warm-up (floored, at least 1) before the linear decay to 0."""
    max_grad_norm: float = 1.0
    """Gradient clipping."""
    tokenizer_vocab: int = 3000
    """Vocabulary of the tokenizer trained on the judge template, criteria and records."""


def effective_settings(cfg: TrainConfig, preset: dict, processes: int) -> dict:
    """What a run trains with, as printed at the start and recorded in ``cheems_train.json``."""
    return {"preset": preset.get("name"), "preset_reason": preset.get("reason"), "model": cfg.model,
            "learning_rate": cfg.learning_rate, "epochs": cfg.epochs, "max_length": cfg.max_length,
            "max_tokens_per_batch": cfg.max_tokens_per_batch, "grad_accum": cfg.grad_accum,
            "global_batch": cfg.global_batch, "mixed_precision": cfg.mixed_precision, "processes": processes}


def start_line(eff: dict) -> str:
    """The one-line summary of :func:`effective_settings` printed when training starts."""
    return (f"cheems: training {eff['model']} with preset {eff['preset']} ({eff['preset_reason']}): "
            f"learning rate {eff['learning_rate']:g}, epochs {eff['epochs']}, max length {eff['max_length']}, "
            f"token budget {eff['max_tokens_per_batch']} per micro-batch, {_step_text(eff)}, "
            f"{eff['processes']} process{'es' if eff['processes'] != 1 else ''}, "
            f"mixed precision {eff['mixed_precision']}, saved as {eff.get('save_dtype', 'auto')}"
            + (", gradient checkpointing" if eff.get("gradient_checkpointing") else ""))


def _step_text(eff: dict) -> str:
    """How big an optimisation step is: the sequences it averages (measured on the plan), and what set it."""
    measured = eff.get("sequences_per_step")
    mean = f"{measured:.1f} sequences per step on average" if measured is not None else "sequences per step unknown"
    if eff.get("global_batch"):
        return f"global batch {eff['global_batch']} sequences ({mean})"
    return f"{eff['grad_accum']} accumulation ({mean})"


def field_docs(cls) -> dict[str, str]:
    """``{field: docstring}`` of a config dataclass whose fields are documented by a string under each one: the
    help of ``cheems train``'s flags, one per :class:`TrainConfig` field."""
    import ast
    import inspect

    body = ast.parse(inspect.getsource(cls)).body[0].body
    return {a.target.id: " ".join(d.value.value.split()) for a, d in zip(body, body[1:])
            if isinstance(a, ast.AnnAssign) and isinstance(d, ast.Expr) and isinstance(d.value, ast.Constant)
            and isinstance(d.value.value, str)}
