"""Bradley-Terry training over partial rankings (paper §5) with accelerate.

Loss of one optimisation step, over its prompts' strictly ordered pairs ``P`` and scored
responses ``R`` (ties give no pair)::

    L = mean_{(w, l) in P} -log sigmoid(r_w - r_l)  +  reg_coef * mean_{i in R} r_i^2

The second term is the Gaussian prior on rewards (paper Eq. 4, Table 9: 0.1). Every
response of a prompt is in the same step (:mod:`cheems_lib.batching`), so each response is
forwarded once per epoch and no pair is lost; with several processes, whole batches go to
one process and the loss is normalised by the step's global counts, so the gradient is the
same as on one process.

Reliability (against a killed or interrupted process; power loss is not covered):

- the same seed on a CPU gives identical weights;
- every config field is checked (:meth:`TrainConfig.validate`) before anything is written;
- checkpoints are written with ``accelerate``'s ``save_state`` into a temporary folder and
  renamed, so a kill never leaves a half-written checkpoint; each records the config, the
  data fingerprint and the number of processes (``cheems_state.json``), and ``resume=True``
  refuses a checkpoint that differs in anything that changes the result (every field but
  :data:`BOOKKEEPING_FIELDS`), then ends with the same weights as an uninterrupted run;
- an output folder is in one of three states: missing/empty, *unfinished* (a run in
  progress: ``checkpoints/``, ``train_log.jsonl``, the marker ``.cheems_training``) or
  *finished* (the Hugging Face checkpoint, ``train_log.jsonl`` and ``cheems_train.json``).
  The finished folder is assembled complete in the hidden sibling ``.NAME.cheems-final``
  and swapped in with one atomic ``renameat2(RENAME_EXCHANGE)`` (Linux); where that call is
  missing, two renames, and the next run repairs a kill between them. So ``cheems_train.json``
  in the output always means every file beside it is complete and from that run, and a
  folder without it is resumable. A finished folder keeps no ``checkpoints/`` (for a real
  model the optimizer state is several times the weights);
- ``overwrite=True`` trains a finished (or unfinished) output anew in the sibling
  ``.NAME.cheems-overwrite`` and swaps the result in only when complete: until then the old
  model stays untouched. Without it, a finished output or one holding a checkpoint is
  refused, and a non-empty folder that is not a training folder is never written into.

The tiny generative judge's trainer (:func:`train_judge`, :class:`JudgeTrainConfig`) lives
here too, beside the reward model's; :func:`cheems_lib.judging.train_tiny_judge` builds its
examples and calls it.
"""
from __future__ import annotations

import contextlib
import json
import math
import os
import shutil
import time
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import Sequence

import numpy as np

from .batching import Batch, forward_groups, pack, pad_right, padding_fraction
from .outputs import exchange as _exchange
from .records import Record, strict_pairs

__all__ = ["TrainConfig", "EncodedData", "encode_records", "bt_loss", "train", "TrainError", "choose_preset",
           "collate", "forward_rewards", "grouped_rewards", "StepMetrics", "JudgeTrainConfig", "train_judge",
           "paper_machine_settings", "check_learning_rate", "BOOKKEEPING_FIELDS", "PRETRAINED_MAX_LR", "PRESETS"]

PRESETS = ("tiny", "paper")
BOOKKEEPING_FIELDS = ("max_steps", "save_every", "log_every")
"""Config fields that do not change the trained weights: a resumed run may change them."""
PRETRAINED_MAX_LR = 1e-4
"""Above this learning rate a pretrained checkpoint is refused unless forced (Table 9 uses 5e-6)."""
MARKER = ".cheems_training"  # marks an unfinished training folder (written at the start of a fresh run)


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
    "epochs": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "max_length": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "tokenizer_vocab": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "max_tokens_per_batch": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "grad_accum": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "log_every": (lambda v: _is_int(v) and v >= 1, "an integer >= 1"),
    "seed": (lambda v: _is_int(v) and v >= 0, "an integer >= 0"),
    "max_steps": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0: every epoch)"),
    "save_every": (lambda v: _is_int(v) and v >= 0, "an integer >= 0 (0: at the end of each epoch)"),
    "learning_rate": (lambda v: _is_num(v) and v > 0, "a finite number > 0"),
    "reg_coef": (lambda v: _is_num(v) and v >= 0, "a finite number >= 0"),
    "weight_decay": (lambda v: _is_num(v) and v >= 0, "a finite number >= 0"),
    "max_grad_norm": (lambda v: _is_num(v) and v >= 0, "a finite number >= 0 (0: no clipping)"),
    "warmup_ratio": (lambda v: _is_num(v) and 0 <= v <= 1, "a number in [0, 1]"),
    "mixed_precision": (lambda v: v in ("no", "bf16", "fp16"), "one of no, bf16, fp16"),
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
    """Padded tokens per micro-batch (longest sequence x sequences); whole prompts are packed greedily under it."""
    grad_accum: int = 1
    """Micro-batches per process per optimisation step."""
    mixed_precision: str = "no"
    """'no', 'bf16' or 'fp16' (accelerate); bf16 on GPUs for real models."""
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
    def paper(cls, model: str = "Qwen/Qwen2.5-72B-Instruct", **overrides) -> "TrainConfig":
        """Table 9: lr 5e-6 cosine, warm-up 0.1, 2 epochs, max length 2048, reg 0.1, bf16.

        The paper's global batch of 256 sequences is reached by the token budget and
        gradient accumulation: 16,384 padded tokens x 4 accumulation steps per GPU.
        """
        base = dict(model=model, max_length=2048, learning_rate=5e-6, warmup_ratio=0.1, epochs=2, reg_coef=0.1,
                    max_tokens_per_batch=16384, grad_accum=4, mixed_precision="bf16", save_every=200)
        return cls(**{**base, **overrides})


def choose_preset(model: str, preset: str | None = None) -> tuple[str, str]:
    """``(preset, reason)``: ``preset`` if given, else ``tiny`` for the tiny family and ``paper``
    (Table 9) for anything loaded with ``from_pretrained`` (a hub name or a local path)."""
    from .reward_model import is_tiny

    if preset is not None:
        if preset not in PRESETS:
            raise TrainError(f"--preset {preset}: unknown (fix: pass one of {', '.join(PRESETS)})")
        return preset, f"--preset {preset}"
    if is_tiny(model):
        return "tiny", "a tiny-family model built here"
    return "paper", "a pretrained checkpoint (from_pretrained): Table 9"


def paper_machine_settings(device: str | None = None) -> dict:
    """Token budget, accumulation and precision of the paper preset on this machine.

    Both keep 65,536 padded tokens per optimisation step and process (Table 9's 256
    sequences per step on 8 processes): on a GPU 16,384 tokens x 4 micro-batches in bf16
    (fp16 where bf16 is unsupported); on a CPU 4,096 x 16 in float32 (CPU bf16 autocast is
    slow or missing, and smaller forwards keep the activations in memory).
    """
    import torch

    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    if device == "cpu":
        return {"max_tokens_per_batch": 4096, "grad_accum": 16, "mixed_precision": "no"}
    bf16 = torch.cuda.is_available() and torch.cuda.is_bf16_supported()
    return {"max_tokens_per_batch": 16384, "grad_accum": 4, "mixed_precision": "bf16" if bf16 else "fp16"}


def _table9_learning_rate() -> float:
    """Table 9's learning rate from ``data/paper``; the preset's copy where the data is not shipped."""
    try:
        from .paper import table

        return float(dict(table("table9_hyperparameters").values)["learning_rate"])
    except (FileNotFoundError, KeyError, ImportError):
        return TrainConfig.paper().learning_rate


def check_learning_rate(cfg: TrainConfig, *, force: bool = False) -> None:
    """Refuse a learning rate above :data:`PRETRAINED_MAX_LR` on a pretrained checkpoint unless ``force``."""
    from .reward_model import is_tiny

    if force or is_tiny(cfg.model) or cfg.learning_rate <= PRETRAINED_MAX_LR:
        return
    t9 = _table9_learning_rate()
    raise TrainError(f"--learning-rate {cfg.learning_rate:g} is above {PRETRAINED_MAX_LR:g} for the pretrained "
                     f"checkpoint {cfg.model} and would wreck it; Table 9 trains with {t9:g} (fix: leave "
                     f"--learning-rate out for {t9:g}, or pass --force-lr to train with {cfg.learning_rate:g})")


@dataclass
class EncodedData:
    """Training prompts as token ids with their ordered pairs, and what was left out."""

    sequences: list[list[list[int]]]  # prompt -> response -> token ids
    pairs: list[list[tuple[int, int]]]  # prompt -> (better, worse) local indices
    truncated: int = 0
    prompts_without_pairs: int = 0
    responses_unranked: int = 0

    @property
    def lengths(self) -> list[list[int]]:
        return [[len(s) for s in p] for p in self.sequences]

    @property
    def n_pairs(self) -> int:
        return sum(len(p) for p in self.pairs)

    def report(self) -> dict:
        return {"prompts": len(self.sequences), "responses": sum(len(p) for p in self.sequences),
                "pairs": self.n_pairs, "truncated_sequences": self.truncated,
                "prompts_without_pairs": self.prompts_without_pairs, "responses_unranked": self.responses_unranked}


def encode_records(records: Sequence[Record], tokenizer, max_length: int) -> EncodedData:
    """Encode each ranked record; prompts with no strict pair are counted and left out."""
    from .reward_model import encode_pairs

    data = EncodedData([], [])
    kept = []  # (record, its ranked responses' texts) for the prompts with a strict pair
    for rec in records:
        if rec.rank is None:
            raise TrainError(f"{rec.origin or rec.id}: record has no 'rank' (fix: run `cheems resolve` first)")
        ids = [r.id for r in rec.responses if r.id in rec.rank]
        data.responses_unranked += len(rec.responses) - len(ids)
        local = {rid: i for i, rid in enumerate(ids)}
        pairs = [(local[a], local[b]) for a, b in strict_pairs(rec.rank, ids)]
        if not pairs:
            data.prompts_without_pairs += 1
            continue
        text = {r.id: r.content for r in rec.responses}
        kept.append((rec, [text[rid] for rid in ids]))
        data.pairs.append(pairs)
    if not data.pairs:
        raise TrainError("no usable pair: every prompt is unranked or all-tied (fix: check the files' 'rank' fields)")
    toks = iter(encode_pairs(tokenizer, [(rec.prompt, t, rec.sys_prompt) for rec, texts in kept for t in texts]))
    for rec, texts in kept:
        seqs = [next(toks) for _ in texts]
        data.truncated += sum(len(t) > max_length for t in seqs)
        data.sequences.append([t[:max_length] for t in seqs])
    return data


def bt_loss(rewards, pairs: Sequence[tuple[int, int]], reg_coef: float, *, n_pairs: int | None = None,
            n_rewards: int | None = None):
    """Bradley-Terry loss with the Gaussian prior, summed and divided by the step's counts.

    ``rewards`` is a 1-d tensor; ``pairs`` index into it. ``n_pairs``/``n_rewards`` default
    to this call's counts (plain means); the trainer passes the whole step's counts.
    Returns ``(loss, stats)`` with ``stats`` the summed pair loss, correct pairs and margin.
    """
    import torch
    import torch.nn.functional as F

    w = torch.tensor([p[0] for p in pairs], dtype=torch.long, device=rewards.device)
    l = torch.tensor([p[1] for p in pairs], dtype=torch.long, device=rewards.device)
    diff = rewards[w] - rewards[l]
    pair_loss = -F.logsigmoid(diff).sum()
    prior = (rewards ** 2).sum()
    loss = pair_loss / (n_pairs or len(pairs)) + reg_coef * prior / (n_rewards or rewards.numel())
    with torch.no_grad():
        stats = {"pair_loss": float(pair_loss), "correct": int((diff > 0).sum()), "margin": float(diff.sum()),
                 "pairs": len(pairs)}
    return loss, stats


def forward_rewards(model, seqs: Sequence[Sequence[int]], pad_id: int, device):
    """Rewards of ``seqs`` (1-d, float32) in one right-padded forward, with the graph kept for backward."""
    ids, mask = pad_right(seqs, pad_id, device)
    return model(input_ids=ids, attention_mask=mask).logits.squeeze(-1).float()


def grouped_rewards(model, seqs: Sequence[Sequence[int]], pad_id: int, device, max_tokens: int):
    """Rewards of all ``seqs`` in their original order, forwarded in length-homogeneous groups."""
    import torch

    groups = forward_groups([len(s) for s in seqs], max_tokens)
    parts = [forward_rewards(model, [seqs[j] for j in g], pad_id, device) for g in groups]
    order = torch.tensor([j for g in groups for j in g], device=device)
    return torch.empty(len(seqs), device=device, dtype=parts[0].dtype).index_copy(0, order, torch.cat(parts))


def collate(data: EncodedData, prompts: Sequence[int]) -> tuple[list[list[int]], list[tuple[int, int]]]:
    """The responses of ``prompts`` (a batch) as one list of token ids, and their pairs as indices into it."""
    seqs: list[list[int]] = []
    pairs: list[tuple[int, int]] = []
    for i in prompts:
        offset = len(seqs)
        pairs += [(offset + a, offset + b) for a, b in data.pairs[i]]
        seqs += data.sequences[i]
    return seqs, pairs


@dataclass
class StepMetrics:
    """Sums over one optimisation step's micro-batches (and, after :meth:`reduced`, its processes)."""

    pair_loss: float = 0.0
    correct: float = 0
    margin: float = 0.0
    pairs: float = 0
    r_sum: float = 0.0
    r_sq: float = 0.0
    n_r: float = 0
    tokens: float = 0

    def add(self, stats: dict, rewards, seqs) -> None:
        """Add one micro-batch: its :func:`bt_loss` stats, its rewards and its sequences."""
        self.pair_loss += stats["pair_loss"]
        self.correct += stats["correct"]
        self.margin += stats["margin"]
        self.pairs += stats["pairs"]
        rd = rewards.detach().float()
        self.r_sum += float(rd.sum())
        self.r_sq += float((rd ** 2).sum())
        self.n_r += rd.numel()
        self.tokens += sum(len(s) for s in seqs)

    def reduced(self, acc) -> "StepMetrics":
        """The sums over every process (a collective: every process calls it)."""
        import torch

        values = torch.tensor([getattr(self, f.name) for f in fields(self)], dtype=torch.float64, device=acc.device)
        return StepMetrics(*acc.reduce(values, "sum").tolist())

    def line(self, step: int, epoch: int, seconds: float, lr: float) -> dict:
        """The ``train_log.jsonl`` line: means per pair and per reward."""
        per_pair = max(self.pairs, 1)
        mean = self.r_sum / self.n_r
        return {"step": step, "epoch": epoch, "pairs": int(self.pairs), "loss": self.pair_loss / per_pair,
                "accuracy": self.correct / per_pair, "margin": self.margin / per_pair, "reward_mean": mean,
                "reward_std": math.sqrt(max(self.r_sq / self.n_r - mean ** 2, 0.0)),
                "tokens_per_s": self.tokens / max(seconds, 1e-9), "lr": lr}


def _epoch_batches(data: EncodedData, cfg: TrainConfig, epoch: int) -> list[Batch]:
    return pack(data.lengths, cfg.max_tokens_per_batch, seed=np.random.default_rng([cfg.seed, epoch]))


def _steps(batches: list[Batch], n_proc: int, accum: int) -> list[list[list[Batch]]]:
    """Group an epoch's batches into steps: step -> process -> its micro-batches (maybe fewer)."""
    per_step = n_proc * accum
    out = []
    for s in range(0, len(batches), per_step):
        group = batches[s:s + per_step]
        out.append([group[p::n_proc] for p in range(n_proc)])
    return out


def _prepare_model(cfg: TrainConfig, records: Sequence[Record], resume_dir: Path | None):
    """Model and tokenizer: from a checkpoint, a tiny model built on the data, or from_pretrained."""
    from . import reward_model as rm

    if resume_dir is not None:
        return rm.load(resume_dir, require_trained_head=False)
    if rm.is_tiny(cfg.model):
        texts = (t for rec in records for t in [rec.prompt, *(r.content for r in rec.responses)])
        tok = rm.train_tokenizer(texts, vocab_size=cfg.tokenizer_vocab, model_max_length=cfg.max_length)
        return rm.build_tiny(cfg.model, tok, seed=cfg.seed, max_length=cfg.max_length), tok
    return rm.load(cfg.model, require_trained_head=False)


def _write_json(path: Path, obj) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(json.dumps(obj, indent=2, ensure_ascii=False, default=str), encoding="utf-8")
    os.replace(tmp, path)


def _sibling(out: Path, kind: str) -> Path:
    """A hidden folder next to ``out`` (same file system, so renames are atomic)."""
    return out.parent / f".{out.name}.cheems-{kind}"


def _rmtree(path: Path) -> None:
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path)
    elif path.exists() or path.is_symlink():
        path.unlink()


def _swap_in(stage: Path, out: Path) -> None:
    """Make the complete folder ``stage`` appear at ``out``, replacing what is there, then delete the old."""
    if not out.exists():
        out.parent.mkdir(parents=True, exist_ok=True)
        os.rename(stage, out)
        return
    if not _exchange(stage, out):  # no RENAME_EXCHANGE here: two renames; _recover repairs a kill between them
        old = _sibling(out, "old")
        _rmtree(old)
        os.rename(out, old)
        os.rename(stage, out)
        _rmtree(old)
        return
    _rmtree(stage)  # now the old folder


@contextlib.contextmanager
def _sigint_deferred():
    """Hold SIGINT until the block ends (main thread only), then deliver it."""
    import signal
    import threading

    if threading.current_thread() is not threading.main_thread():
        yield
        return
    got = []
    previous = signal.signal(signal.SIGINT, lambda *a: got.append(a))
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)
        if got:
            raise KeyboardInterrupt


def _recover(out: Path) -> None:
    """Finish or undo a publish interrupted between its two fallback renames; drop stale staging folders."""
    stage, old = _sibling(out, "final"), _sibling(out, "old")
    if not out.exists():
        if (stage / "cheems_train.json").exists():
            os.rename(stage, out)
        elif old.exists():
            os.rename(old, out)
    for stale in (stage, old):
        _rmtree(stale)


def _folder_state(out: Path) -> str:
    """'fresh' (missing or empty), 'finished', 'unfinished' (a cheems run in progress) or 'foreign'."""
    if not out.exists():
        return "fresh"
    if not out.is_dir():
        return "foreign"
    if (out / "cheems_train.json").exists():
        return "finished"
    if any((out / n).exists() for n in (MARKER, "checkpoints", "train_log.jsonl")):
        return "unfinished"
    return "fresh" if not any(out.iterdir()) else "foreign"


def _latest_checkpoint(work: Path) -> Path | None:
    latest = work / "checkpoints" / "latest"
    if not latest.exists():
        return None
    d = work / "checkpoints" / latest.read_text().strip()
    return d if (d / "cheems_state.json").exists() else None


def _differences(recorded: dict, cfg: TrainConfig, fingerprint: str, processes: int) -> list[str]:
    """Result-changing differences between a recorded run and this one, as 'field here vs recorded'."""
    mine = {**asdict(cfg), "processes": processes}
    theirs = {**recorded.get("config", {}), "processes": recorded.get("processes", processes)}
    diffs = [f"{k} {mine[k]} now vs {theirs[k]} recorded" for k in mine
             if k not in BOOKKEEPING_FIELDS and k in theirs and mine[k] != theirs[k]]
    diffs += [f"{k} {mine[k]} now vs not recorded" for k in mine if k not in BOOKKEEPING_FIELDS and k not in theirs]
    if recorded.get("data_fingerprint") and fingerprint != recorded["data_fingerprint"]:
        diffs.append(f"data fingerprint {fingerprint[:12]} now vs {recorded['data_fingerprint'][:12]} recorded (other records)")
    return diffs


@dataclass
class _Plan:
    work: Path  # where checkpoints and the log go
    resume_dir: Path | None
    notes: list[str]
    finished: dict | None = None  # the existing summary when there is nothing to do


def _plan(out: Path, shown: str, cfg: TrainConfig, fingerprint: str, processes: int, *, resume: bool,
          overwrite: bool) -> _Plan:
    """Decide where to train and what to resume from; reads only, raises TrainError on a refusal."""
    state = _folder_state(out)
    notes: list[str] = []
    if state == "foreign":
        raise TrainError(f"{shown}: not empty and not a cheems training folder; nothing was written "
                         "(fix: choose a new --output)")
    if overwrite and state in ("finished", "unfinished"):
        work = _sibling(out, "overwrite")
    elif state == "finished":
        if not resume:
            raise TrainError(f"{shown}: already holds a finished model (cheems_train.json) (fix: choose a new "
                             "--output, or pass --overwrite to replace it once the new model is complete)")
        summary = json.loads((out / "cheems_train.json").read_text(encoding="utf-8"))
        diffs = _differences(summary, cfg, fingerprint, processes)
        if diffs:
            raise TrainError(f"{shown}: --resume with another configuration than the finished run: "
                             f"{'; '.join(diffs)} (fix: pass --overwrite to retrain, or choose a new --output)")
        return _Plan(out, None, [f"cheems: {shown}: already finished; nothing to resume"], finished=summary)
    else:
        work = out
    ckpt = _latest_checkpoint(work)
    if resume and ckpt is None:
        notes.append(f"cheems: {shown}: no checkpoint to resume; starting fresh")
    elif resume:
        recorded = json.loads((ckpt / "cheems_state.json").read_text(encoding="utf-8"))
        if "config" not in recorded:
            notes.append(f"cheems: {shown}: checkpoint {ckpt.name} records no configuration (older version); "
                         "resuming without checking it")
        else:
            diffs = _differences(recorded, cfg, fingerprint, processes)
            if diffs:
                raise TrainError(f"{shown}: --resume with another configuration than checkpoint {ckpt.name}: "
                                 f"{'; '.join(diffs)} (fix: pass the interrupted run's settings and data, "
                                 "or --overwrite to start over)")
        return _Plan(work, ckpt, notes)
    elif ckpt is not None and work == out:
        raise TrainError(f"{shown}: holds an unfinished run (checkpoint {ckpt.name}) (fix: pass --resume to "
                         "continue it, or --overwrite to start over)")
    return _Plan(work, None, notes)


def _start_fresh(work: Path, out: Path, marker: dict) -> None:
    """Clear a training folder of an earlier attempt (ours only) and mark it as in progress."""
    if work != out:
        _rmtree(work)
    else:
        for name in ("checkpoints", "train_log.jsonl", ".final.tmp"):
            _rmtree(work / name)
    work.mkdir(parents=True, exist_ok=True)
    _write_json(work / MARKER, marker)


def _trim_log(path: Path, upto: int) -> None:
    """Drop the log lines written after step ``upto`` (the checkpoint a run resumes from), atomically."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text("".join(l + "\n" for l in _read_log(path, upto)), encoding="utf-8")
    os.replace(tmp, path)


def _append_json_line(path: Path, obj: dict) -> None:
    with open(path, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(obj) + "\n")


def _read_log(path: Path, upto: int) -> list[str]:
    """Log lines up to step ``upto``; a half-written last line of a killed run is dropped."""
    kept = []
    for line in path.read_text(encoding="utf-8").splitlines() if path.exists() else []:
        try:
            if json.loads(line)["step"] <= upto:
                kept.append(line)
        except (ValueError, KeyError):
            continue
    return kept


def effective_settings(cfg: TrainConfig, preset: dict, processes: int) -> dict:
    """What a run trains with, as printed at the start and recorded in ``cheems_train.json``."""
    return {"preset": preset.get("name"), "preset_reason": preset.get("reason"), "model": cfg.model,
            "learning_rate": cfg.learning_rate, "epochs": cfg.epochs, "max_length": cfg.max_length,
            "max_tokens_per_batch": cfg.max_tokens_per_batch, "grad_accum": cfg.grad_accum,
            "mixed_precision": cfg.mixed_precision, "processes": processes}


def start_line(eff: dict) -> str:
    """The one-line summary of :func:`effective_settings` printed when training starts."""
    return (f"cheems: training {eff['model']} with preset {eff['preset']} ({eff['preset_reason']}): "
            f"learning rate {eff['learning_rate']:g}, epochs {eff['epochs']}, max length {eff['max_length']}, "
            f"token budget {eff['max_tokens_per_batch']} x {eff['grad_accum']} accumulation, "
            f"{eff['processes']} process{'es' if eff['processes'] != 1 else ''}, "
            f"mixed precision {eff['mixed_precision']}")


def train(records: Sequence[Record], cfg: TrainConfig, output_dir: str | Path, *, resume: bool = False,
          overwrite: bool = False, progress: bool = True, data_fingerprint: str = "", preset: dict | None = None,
          say=None) -> dict:
    """Train a reward model on ranked records and save a Hugging Face checkpoint in ``output_dir``.

    Writes ``train_log.jsonl`` (one line per logged step: loss, accuracy, margin, reward
    mean/std, tokens/s, lr), ``checkpoints/`` for resuming while unfinished, and finally
    swaps in the finished folder with ``cheems_train.json`` (config, effective settings,
    data report, final metrics) as the mark of a finished run (see the module docstring
    for the folder states, ``resume`` and ``overwrite``). ``preset`` (``{"name", "reason"}``)
    is recorded; ``say`` receives the one-line notes (start line, starting fresh). Returns the summary.
    """
    cfg.validate()
    import torch
    from accelerate import Accelerator

    if not data_fingerprint:
        from .records import data_fingerprint as fingerprint_of
        data_fingerprint = fingerprint_of(records)
    preset = preset or {"name": "custom", "reason": "a TrainConfig passed to train()"}
    out = Path(output_dir).resolve()
    # cpu=True without CUDA: under torchrun / `accelerate launch --multi_gpu` accelerate then runs gloo multi-CPU
    acc = Accelerator(mixed_precision=cfg.mixed_precision, cpu=not torch.cuda.is_available())
    say = say if (say is not None and acc.is_main_process) else (lambda line: None)
    plan = _agreed_plan(acc, out, str(output_dir), cfg, data_fingerprint, resume=resume, overwrite=overwrite)
    for note in plan.notes:
        say(note)
    if plan.finished is not None:
        return plan.finished
    identity = {"config": asdict(cfg), "data_fingerprint": data_fingerprint, "processes": acc.num_processes}
    eff = effective_settings(cfg, preset, acc.num_processes)
    run = _setup(acc, cfg, records, plan.resume_dir, lambda: say(start_line(eff)))
    done = _restore(run, plan, out, identity)
    log, total_steps = plan.work / "train_log.jsonl", sum(len(s) for s in run.epoch_steps)
    bar = _progress_bar(total_steps, done) if progress and acc.is_local_main_process else None
    step, t_start = 0, time.time()
    for epoch, steps in enumerate(run.epoch_steps):
        for per_proc in steps:
            step += 1
            if step <= done:
                continue
            if cfg.max_steps and step > cfg.max_steps:
                break
            t0 = time.time()
            metrics = _optimisation_step(run, per_proc)
            if acc.is_main_process and (step % cfg.log_every == 0 or step == total_steps):
                _append_json_line(log, metrics.line(step, epoch, time.time() - t0, run.scheduler.get_last_lr()[0]))
            if bar is not None:
                bar.update(1)
            if (cfg.save_every and step % cfg.save_every == 0) or per_proc is steps[-1]:  # and at each epoch's end
                _save_checkpoint(acc, run.model, run.tok, plan.work / "checkpoints", step, identity)
    if bar is not None:
        bar.close()
    acc.wait_for_everyone()
    summary = _summary(run, eff, data_fingerprint, total_steps, time.time() - t_start)
    _publish(acc, run.model, run.tok, out, plan.work, summary)
    return summary


@dataclass
class _Run:
    """What the training loop works with, built once by :func:`_setup`."""

    acc: object
    cfg: TrainConfig
    model: object
    tok: object
    optimizer: object
    scheduler: object
    data: EncodedData
    epoch_steps: list  # epoch -> step -> process -> micro-batches
    native_sync: bool  # FSDP/DeepSpeed synchronise gradients themselves (DDP: we do, once per step)


def _agreed_plan(acc, out: Path, shown: str, cfg: TrainConfig, fingerprint: str, *, resume: bool,
                 overwrite: bool) -> "_Plan":
    """Repair an interrupted publish (main process), then let every process read the same plan."""
    if acc.is_main_process:
        _recover(out)
    acc.wait_for_everyone()
    plan = _plan(out, shown, cfg, fingerprint, acc.num_processes, resume=resume, overwrite=overwrite)
    acc.wait_for_everyone()  # every process has read the folder before the main one writes to it
    return plan


def _setup(acc, cfg: TrainConfig, records: Sequence[Record], resume_dir: Path | None, announce) -> _Run:
    """Seed, model, data, the epochs' steps, optimizer and schedule, prepared by accelerate."""
    import torch
    from accelerate.utils import DistributedType, set_seed
    from transformers import get_cosine_schedule_with_warmup

    set_seed(cfg.seed)
    torch.use_deterministic_algorithms(True, warn_only=True)
    model, tok = _prepare_model(cfg, records, resume_dir)
    model.train()  # from_pretrained returns eval mode; train like the HF Trainer, resumed or not
    data = encode_records(records, tok, cfg.max_length)
    announce()
    n_proc = acc.num_processes
    epoch_steps = [_steps(_epoch_batches(data, cfg, e), n_proc, cfg.grad_accum) for e in range(cfg.epochs)]
    total_steps = sum(len(s) for s in epoch_steps)
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    scheduler = get_cosine_schedule_with_warmup(optimizer, math.ceil(cfg.warmup_ratio * total_steps), total_steps)
    # the scheduler is not prepared: accelerate would step it once per process, so a 2-process
    # run would decay the learning rate twice as fast; it is registered for checkpoints instead
    model, optimizer = acc.prepare(model, optimizer)
    acc.register_for_checkpointing(scheduler)
    native_sync = acc.distributed_type in (DistributedType.FSDP, DistributedType.DEEPSPEED)
    return _Run(acc, cfg, model, tok, optimizer, scheduler, data, epoch_steps, native_sync)


def _restore(run: _Run, plan: "_Plan", out: Path, identity: dict) -> int:
    """Load the checkpoint to resume (and trim the log to it) or mark a fresh start; the steps already done."""
    acc, done = run.acc, 0
    if plan.resume_dir is not None:
        acc.load_state(str(plan.resume_dir))
        done = json.loads((plan.resume_dir / "cheems_state.json").read_text())["global_step"]
    if acc.is_main_process:
        if plan.resume_dir is None:
            _start_fresh(plan.work, out, {**identity, "output": str(out)})
        else:
            _trim_log(plan.work / "train_log.jsonl", done)
    acc.wait_for_everyone()
    return done


def _progress_bar(total: int, initial: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="training", unit="step")


def _optimisation_step(run: _Run, per_proc: list[list[Batch]]) -> StepMetrics:
    """One step: this process's micro-batches, the gradient sync, clipping and the update; the step's metrics."""
    acc, model, cfg, data = run.acc, run.model, run.cfg, run.data
    mine = per_proc[acc.process_index]
    step_batches = [b for group in per_proc for b in group]
    n_pairs = sum(len(data.pairs[i]) for b in step_batches for i in b.prompts)  # the loss's global normalisers
    n_rewards = sum(b.n_sequences for b in step_batches)
    metrics = StepMetrics()
    for k, batch in enumerate(mine):
        last = k == len(mine) - 1
        # DDP: every backward without its hooks, one all-reduce per step below. FSDP/DeepSpeed: their own sync.
        with acc.no_sync(model) if (not run.native_sync or not last) else contextlib.nullcontext():
            seqs, pairs = collate(data, batch.prompts)
            r, stats = _micro_batch(run, batch, seqs, pairs, n_pairs, n_rewards)
            metrics.add(stats, r, seqs)
    pad_id = run.tok.pad_token_id
    if acc.num_processes > 1 and not run.native_sync:
        _all_reduce_grads(acc, model)
    elif run.native_sync and not mine:  # FSDP/DeepSpeed: a process without a batch still joins the sync
        acc.backward(forward_rewards(model, [[pad_id]], pad_id, acc.device).sum() * 0.0)
    if cfg.max_grad_norm:
        acc.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return metrics.reduced(acc)


def _micro_batch(run: _Run, batch: Batch, seqs, pairs, n_pairs: int, n_rewards: int):
    """Forward and backward of one micro-batch; returns its rewards and :func:`bt_loss` stats."""
    acc, cfg, pad_id = run.acc, run.cfg, run.tok.pad_token_id
    scale = acc.num_processes if run.native_sync else 1  # FSDP/DeepSpeed average gradients over processes; undo it
    if batch.oversize:
        if run.native_sync:
            raise TrainError(f"a prompt has {batch.tokens} tokens, over max_tokens_per_batch "
                             f"{cfg.max_tokens_per_batch} (fix: raise it; FSDP/DeepSpeed cannot split a prompt)")
        return _oversize_step(run.model, acc, seqs, pairs, cfg, pad_id, acc.device, n_pairs, n_rewards, scale)
    r = (forward_rewards(run.model, seqs, pad_id, acc.device) if run.native_sync
         else grouped_rewards(run.model, seqs, pad_id, acc.device, cfg.max_tokens_per_batch))
    loss, stats = bt_loss(r, pairs, cfg.reg_coef, n_pairs=n_pairs, n_rewards=n_rewards)
    acc.backward(loss * scale)
    return r, stats


def _summary(run: _Run, eff: dict, fingerprint: str, total_steps: int, seconds: float) -> dict:
    """``cheems_train.json`` without its final metrics (:func:`_publish` adds them)."""
    cfg, data = run.cfg, run.data
    first_epoch = [b for s in run.epoch_steps[0] for g in s for b in g]
    return {"config": asdict(cfg), "effective": eff, "data": data.report(), "data_fingerprint": fingerprint,
            "steps": total_steps, "processes": run.acc.num_processes, "pairs_used_per_epoch": data.n_pairs,
            "padding_fraction": padding_fraction(first_epoch, data.lengths, cfg.max_tokens_per_batch),
            "wall_time_s": round(seconds, 2)}


def _publish(acc, model, tok, out: Path, work: Path, summary: dict) -> None:
    """Assemble the finished folder complete beside ``out`` and swap it in at once (main process)."""
    if acc.is_main_process:
        log = work / "train_log.jsonl"
        stage = _sibling(out, "final")
        _rmtree(stage)
        stage.mkdir(parents=True)
        with _writing(stage):
            acc.unwrap_model(model).save_pretrained(stage, safe_serialization=True)
            tok.save_pretrained(stage)
            if log.exists():
                shutil.copy2(log, stage / "train_log.jsonl")
            summary["final"] = _last_log(log)
            _write_json(stage / "cheems_train.json", summary)  # the mark of a finished run
        with _sigint_deferred():  # a Ctrl-C here would leave the old folder beside the new one
            _swap_in(stage, out)
            if work != out:
                _rmtree(work)
    acc.wait_for_everyone()


def _oversize_step(model, acc, seqs, pairs, cfg, pad_id, device, n_pairs, n_rewards, scale):
    """One prompt too large for a batch: no-grad rewards, their loss gradient, then chunked backward.

    Exact: dL/dtheta = sum_i dL/dr_i * dr_i/dtheta, computed chunk by chunk.
    """
    import torch

    parts = forward_groups([len(s) for s in seqs], cfg.max_tokens_per_batch)
    with torch.no_grad():
        r = torch.empty(len(seqs), device=device)
        for part in parts:
            r[part] = forward_rewards(model, [seqs[j] for j in part], pad_id, device)
    r_leaf = r.clone().requires_grad_(True)
    loss, stats = bt_loss(r_leaf, pairs, cfg.reg_coef, n_pairs=n_pairs, n_rewards=n_rewards)
    (grad,) = torch.autograd.grad(loss * scale, r_leaf)
    for part in parts:
        rp = forward_rewards(model, [seqs[j] for j in part], pad_id, device)
        acc.backward((rp * grad[part]).sum())
    return r, stats


def _all_reduce_grads(acc, model) -> None:
    """Sum every gradient over processes in one flat all-reduce (the loss is already normalised globally)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:  # a process without a batch this step has no gradient yet
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = acc.reduce(torch.cat([p.grad.reshape(-1) for p in params]), "sum")
    offset = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
        offset += n


def _save_checkpoint(acc, model, tok, root: Path, step: int, identity: dict) -> None:
    """accelerate's save_state into a temporary folder, renamed when complete; keeps the newest only.

    ``identity`` (config, data fingerprint, processes) goes into ``cheems_state.json`` so a
    resume can refuse a checkpoint of another run.
    """
    name = f"step-{step:07d}"
    tmp = root / f".{name}.tmp"
    if acc.is_main_process:
        root.mkdir(parents=True, exist_ok=True)
        for stale in root.glob(".step-*.tmp"):  # left by a kill during an earlier save
            shutil.rmtree(stale, ignore_errors=True)
    acc.wait_for_everyone()
    with _writing(tmp):
        acc.save_state(str(tmp))
        if acc.is_main_process:
            acc.unwrap_model(model).config.save_pretrained(tmp)  # with the tokenizer: loadable by from_pretrained
            tok.save_pretrained(tmp)
            _write_json(tmp / "cheems_state.json", {"global_step": step, **identity})
    if acc.is_main_process:
        os.replace(tmp, root / name)
        latest_tmp = root / "latest.tmp"
        latest_tmp.write_text(name)
        os.replace(latest_tmp, root / "latest")
        for old in root.glob("step-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
    acc.wait_for_everyone()


@contextlib.contextmanager
def _writing(folder: Path):
    """Remove ``folder`` if writing it fails, and report any write failure as an OSError naming it.

    safetensors raises its own error type on a full disk; as an OSError it becomes the
    command line's one-line runtime failure, and the last complete checkpoint stays.
    """
    try:
        yield
    except BaseException as e:
        _rmtree(folder)
        if type(e).__name__ != "SafetensorError" and "os error" not in str(e):
            raise
        raise OSError(getattr(e, "errno", None) or 5, f"could not write ({' '.join(str(e).split())[:200]})",
                      str(folder)) from None


def _last_log(path: Path) -> dict:
    lines = [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] if path.exists() else []
    return json.loads(lines[-1]) if lines else {}


@dataclass
class JudgeTrainConfig:
    """Hyperparameters of the tiny judge (:func:`train_judge`, called by
    :func:`cheems_lib.judging.train_tiny_judge`); defaults are what the book trains with."""

    size: str = "tiny"
    """A size of the tiny family (:data:`cheems_lib.reward_model.TINY_SIZES`)."""
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


def train_judge(examples: Sequence[tuple[list[int], int]], tokenizer, cfg: JudgeTrainConfig, output_dir, *,
                progress: bool = False):
    """Train a tiny Qwen2 causal LM on ``(prompt ids, answer token)`` examples and save it in ``output_dir``.

    The loss is cross-entropy of the next token after the prompt (the judge's letter),
    summed over a batch and divided by its examples. Batches are whole examples packed
    under the token budget, reshuffled each epoch; the schedule is linear warm-up over
    ``warmup_fraction`` of the batches, then linear decay. Returns ``output_dir``.
    """
    import torch
    import torch.nn.functional as F
    from transformers import Qwen2ForCausalLM

    from .batching import last_token_logits
    from .reward_model import tiny_config

    torch.manual_seed(cfg.seed)
    model = Qwen2ForCausalLM(tiny_config(cfg.size, tokenizer, max_length=cfg.max_length))
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
    model.train()
    lengths = [[len(ids)] for ids, _ in examples]
    batches = [b for e in range(cfg.epochs) for b in pack(lengths, cfg.max_tokens_per_batch, seed=[cfg.seed, e])]
    n, warmup = len(batches), max(1, math.floor(cfg.warmup_fraction * len(batches)))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda step: min(1.0, (step + 1) / warmup) * max(0.0, 1 - step / n))
    if progress:
        from tqdm.auto import tqdm
        batches = tqdm(batches, desc="training judge", unit="batch")
    for batch in batches:
        items = [examples[i] for i in batch.prompts]
        loss = 0.0
        for group in forward_groups([len(ids) for ids, _ in items], cfg.max_tokens_per_batch):
            ids, mask = pad_right([items[j][0] for j in group], tokenizer.pad_token_id, "cpu")
            last = last_token_logits(model(input_ids=ids, attention_mask=mask).logits, mask)
            target = torch.tensor([items[j][1] for j in group])
            loss = loss + F.cross_entropy(last, target, reduction="sum")
        (loss / len(items)).backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
        opt.step()
        sched.step()
        opt.zero_grad()
    model.eval()
    model.save_pretrained(output_dir)
    tokenizer.save_pretrained(output_dir)
    return output_dir
