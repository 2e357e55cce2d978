"""Bradley-Terry training over partial rankings (paper §5) with accelerate.

Loss of one optimisation step, over its prompts' strictly ordered pairs ``P`` and scored
responses ``R`` (ties give no pair)::

    L = mean_{(w, l) in P} -log sigmoid(r_w - r_l)  +  reg_coef * mean_{i in R} r_i^2

The second term is the Gaussian prior on rewards (paper Eq. 4, Table 9: 0.1); the loss and the step's
metrics are :mod:`cheems_lib.models.bt_loss`. Every response of a prompt is in the same step
(:mod:`cheems_lib.models.training_steps`), so each response is forwarded once per epoch and no pair is
lost. A tiny model forwards each prompt once and its responses after it
(:mod:`cheems_lib.models.prefix_sharing`; the gradient reaches the prompt through its keys and values), with its
last layer at the read position only (:mod:`cheems_lib.models.last_token`); with several processes, whole batches go to
one process and the loss is normalised by the step's global counts, so the gradient is the
same as on one process. The same seed on a CPU gives identical weights.

Real checkpoints train from float32 master weights whatever they are stored in (a bf16 hub
checkpoint's AdamW updates of lr x 1 would round away in bf16); ``mixed_precision`` computes
the forward and backward in bf16 (autocast; under FSDP on parameters gathered in bf16, with
gradients reduced in float32), and ``save_dtype`` decides what is written. Under several processes
every process runs the same number of forwards in every step (zero-loss forwards fill the
gaps), because under FSDP each forward and backward is a collective.

Beside it: the hyperparameters, checked before anything is written, in
:mod:`cheems_lib.models.training_config`; the records' pairs in :mod:`cheems_lib.models.training_pairs`; the
output folder (checkpoints, resume, the atomic publish) in :mod:`cheems_lib.models.run_folder`. The
tiny judge's trainer is :func:`cheems_lib.models.judging.train_judge`, with the judge it trains.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Sequence

from ..outputs import folder_problem, interrupt_point
from ..records import Record
from . import reward_model as rm
from .batching import Batch, forward_groups, forward_options, padding_fraction
from .last_token import last_token_only, supported
from .prefix_sharing import forward_calls, shared_rewards
from .bt_loss import bt_loss, forward_rewards, grouped_rewards, StepMetrics
from .run_folder import (Plan, agreed_plan, append_json_line, discarded_on_write_failure, launch_lock, publish,
                         save_checkpoint, start_fresh, trim_log)
from .training_config import (CHECKPOINTING_FROM, TrainConfig, TrainError, default_device, effective_settings,
                              start_line, warmup_steps)
from .training_pairs import EncodedData, collate, encode_records
from .training_steps import plan_epoch

__all__ = ["train"]


PREPARED_SETS = 4
"""Training sets whose tiny tokenizer and encoding a process keeps (:func:`_prepared`): the training seeds of
one set share both, so the zoo trains the tokenizer and encodes a set once per process, not once per seed."""
_PREPARED: dict[str, tuple] = {}  # key -> (tokenizer, EncodedData), oldest first


def _prepare_model(cfg: TrainConfig, records: Sequence[Record]):
    """Model, tokenizer and encoded data: a tiny model built on the data, or ``from_pretrained`` in float32.

    A resumed run builds the same and then loads its checkpoint's state over it (:func:`_restore`), which
    works for every way a checkpoint is written (whole, or sharded by FSDP)."""
    import torch

    if rm.is_tiny(cfg.model):
        tok, data = _prepared(cfg, records)
        return rm.build_tiny(cfg.model, tok, seed=cfg.seed, max_length=cfg.max_length), tok, data
    # float32 master weights whatever the checkpoint stores: Adam's steps of about lr (5e-6) are below half a
    # bf16 ulp of nearly every weight, so a bf16 model would silently not learn; autocast does the bf16 maths
    model, tok = rm.load(cfg.model, dtype=torch.float32, require_trained_head=False)
    return model, tok, encode_records(records, tok, cfg.max_length)


def save_dtype_of(cfg: TrainConfig) -> str:
    """The dtype the finished model is saved in: ``cfg.save_dtype``, or for ``auto`` the source checkpoint's
    stored dtype (its config's ``dtype``/``torch_dtype``), float32 for a tiny model or a config without one."""
    if cfg.save_dtype != "auto":
        return cfg.save_dtype
    if rm.is_tiny(cfg.model):
        return "float32"
    from transformers import AutoConfig

    with rm.loading(cfg.model):
        config = AutoConfig.from_pretrained(cfg.model, trust_remote_code=False)
    stored = getattr(config, "dtype", None) or getattr(config, "torch_dtype", None)
    name = str(stored).removeprefix("torch.") if stored is not None else "float32"
    return name if name in ("float32", "bfloat16", "float16") else "float32"


def _prepared(cfg: TrainConfig, records: Sequence[Record]) -> tuple:
    """The tiny tokenizer trained on ``records`` and their encoding, reused from the last :data:`PREPARED_SETS`
    of this process when the records (texts, ranks, order), the vocabulary size and the length limit are the same:
    both are deterministic, so a reused pair is the one a fresh run would build. Neither is changed by training."""
    from ..records import data_fingerprint

    key = f"{data_fingerprint(records)}:{cfg.tokenizer_vocab}:{cfg.max_length}"
    if key in _PREPARED:
        _PREPARED[key] = _PREPARED.pop(key)  # most recent last
        return _PREPARED[key]
    texts = (t for rec in records for t in [rec.prompt, *(r.content for r in rec.responses)])
    tok = rm.train_tokenizer(texts, vocab_size=cfg.tokenizer_vocab, model_max_length=cfg.max_length)
    _PREPARED[key] = (tok, encode_records(records, tok, cfg.max_length))
    while len(_PREPARED) > PREPARED_SETS:
        _PREPARED.pop(next(iter(_PREPARED)))
    return _PREPARED[key]


def train(records: Sequence[Record], cfg: TrainConfig, output_dir: str | Path, *, resume: bool = False,
          overwrite: bool = False, progress: bool = True, data_fingerprint: str = "", preset: dict | None = None,
          say=None, extra: dict | None = None) -> dict:
    """Train a reward model on ranked records and save a Hugging Face checkpoint in ``output_dir``.

    Writes ``train_log.jsonl`` (one line per logged step: loss, accuracy, margin, reward
    mean/std, tokens/s, lr), ``checkpoints/`` for resuming while unfinished, and finally
    swaps in the finished folder with ``cheems_train.json`` (config, effective settings,
    data report, final metrics) as the mark of a finished run (see :mod:`cheems_lib.models.run_folder`
    for the folder states, ``resume`` and ``overwrite``). ``preset`` (``{"name", "reason"}``)
    is recorded; ``say`` receives the one-line notes (start line, starting fresh); ``extra`` is added to
    the summary (``cheems train --skip-invalid`` records ``skipped_invalid`` there). Returns the summary.
    """
    cfg.validate()
    from accelerate import Accelerator
    from accelerate.state import AcceleratorState

    if not data_fingerprint:
        from ..records import data_fingerprint as fingerprint_of
        data_fingerprint = fingerprint_of(records)
    preset = preset or {"name": "custom", "reason": "a TrainConfig passed to train()"}
    problem = folder_problem(output_dir)  # a link loop, a device: refused before anything is written
    if problem:
        raise TrainError(f"{output_dir}: {problem}; nothing was written (fix: pass a folder path; a link to a folder "
                         "is fine)")
    out = Path(output_dir).resolve()  # a link to a folder: the model is swapped in where it points
    # accelerate keeps one mixed precision per process: a second run with another (a tiny model, then a bf16
    # one) would be refused, so each run starts from a fresh state; the process group (PartialState) stays
    AcceleratorState._reset_state()
    # cpu=True without CUDA: under torchrun / `accelerate launch --multi_gpu` accelerate then runs gloo multi-CPU
    accelerator = Accelerator(mixed_precision=cfg.mixed_precision, cpu=default_device() == "cpu")
    say = say if (say is not None and accelerator.is_main_process) else (lambda line: None)
    with launch_lock(accelerator, out):  # one run into a folder at a time; before anything is written
        plan = agreed_plan(accelerator, out, str(output_dir), cfg, data_fingerprint, resume=resume, overwrite=overwrite)
        for note in plan.notes:
            say(note)
        if plan.finished is not None:
            return plan.finished
        identity = {"config": asdict(cfg), "data_fingerprint": data_fingerprint, "processes": accelerator.num_processes}
        eff = {**effective_settings(cfg, preset, accelerator.num_processes), "save_dtype": save_dtype_of(cfg)}
        with _deterministic(accelerator.device.type), discarded_on_write_failure(accelerator, plan, out):
            run = _setup(accelerator, cfg, records, eff, lambda: say(start_line(eff)))
            done = _restore(run, plan, out, identity)
            log, total_steps = plan.work / "train_log.jsonl", sum(len(s) for s in run.epoch_steps)
            bar = _progress_bar(total_steps, done) if progress and accelerator.is_local_main_process else None
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
                    if accelerator.is_main_process and (step % cfg.log_every == 0 or step == total_steps):
                        append_json_line(log, metrics.line(step, epoch, time.time() - t0, run.scheduler.get_last_lr()[0]))
                    if bar is not None:
                        bar.update(1)
                    interrupt_point("train.step")
                    if (cfg.save_every and step % cfg.save_every == 0) or per_proc is steps[-1]:  # and at each epoch's end
                        save_checkpoint(accelerator, run.model, run.tok, plan.work / "checkpoints", step, identity)
            if bar is not None:
                bar.close()
            accelerator.wait_for_everyone()
            summary = {**_summary(run, eff, data_fingerprint, total_steps, time.time() - t_start), **(extra or {})}
            publish(accelerator, run.model, run.tok, out, plan.work, summary, dtype=eff["save_dtype"])
        return summary


@contextlib.contextmanager
def _deterministic(device_type: str):
    """Deterministic kernels while a run trains, and the process's previous setting after it.

    On the CPU always. On CUDA only where ``CUBLAS_WORKSPACE_CONFIG`` is set (without it cuBLAS is not
    deterministic and torch only warns), and without filling every new tensor with NaN
    (``fill_uninitialized_memory``), which costs GPU time and changes nothing a correct program reads.
    """
    import torch
    import torch.utils.deterministic as det

    before = (torch.are_deterministic_algorithms_enabled(), torch.is_deterministic_algorithms_warn_only_enabled(),
              det.fill_uninitialized_memory)
    if device_type == "cpu" or os.environ.get("CUBLAS_WORKSPACE_CONFIG"):
        torch.use_deterministic_algorithms(True, warn_only=True)
        if device_type != "cpu":
            det.fill_uninitialized_memory = False
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(before[0], warn_only=before[1])
        det.fill_uninitialized_memory = before[2]


@dataclass
class _Run:
    """What the training loop works with, built once by :func:`_setup`."""

    accelerator: object
    cfg: TrainConfig
    model: object
    tok: object
    optimizer: object
    scheduler: object
    data: EncodedData
    epoch_steps: list  # epoch -> step -> process -> micro-batches
    native_sync: bool  # FSDP synchronises gradients itself, every backward (DDP: we do, once per step)
    options: dict  # extra forward arguments of the plain forward (no key-value cache; prefix sharing makes its own)
    pad_id: int  # an id no training sequence holds, so the classifier reads each sequence's last real token
    forwards: list  # this process's forward calls in the current step (a one-element counter)


def _setup(accelerator, cfg: TrainConfig, records: Sequence[Record], eff: dict, announce) -> _Run:
    """Seed, model, data, the epochs' steps, optimizer and schedule, prepared by accelerate."""
    import torch
    from accelerate.utils import DistributedType, set_seed
    from transformers import get_cosine_schedule_with_warmup

    set_seed(cfg.seed)
    model, tok, data = _prepare_model(cfg, records)
    model.train()  # from_pretrained returns eval mode; train like the HF Trainer, resumed or not
    native_sync = accelerator.distributed_type == DistributedType.FSDP
    eff["gradient_checkpointing"] = _checkpointing(cfg, model, accelerator)
    if eff["gradient_checkpointing"]:
        _checkpoint_activations(model)
    n_proc = accelerator.num_processes
    epoch_steps = [plan_epoch(data, cfg, e, n_proc, padded=native_sync) for e in range(cfg.epochs)]
    if native_sync:
        _fits_fsdp(epoch_steps, data.lengths, cfg)
        _reduce_in_float32(accelerator)
    total_steps = sum(len(s) for s in epoch_steps)
    eff["sequences_per_step"] = round(sum(b.n_sequences for s in epoch_steps[0] for g in s for b in g)
                                      / max(len(epoch_steps[0]), 1), 1)
    announce()
    forwards = [0]
    model.register_forward_pre_hook(lambda *_: forwards.__setitem__(0, forwards[0] + 1))
    options = forward_options(model)
    # transformers' classifiers read the rightmost token that is not the pad id: a pad that is also the eos ending
    # every conversation would train the reward one token early, where scoring (which pads the same way) never reads
    pad_id = rm.absent_pad_id(tok, [s for p in data.sequences for s in p], rm.embedding_rows(model))
    model.config.pad_token_id = pad_id
    optimizer = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate, weight_decay=cfg.weight_decay)
    # warmup's first step has learning rate 0: a run of one step (a small set in one micro-batch) would not learn
    # at all, so warmup always leaves the last step out (warmup_steps below)
    scheduler = get_cosine_schedule_with_warmup(optimizer, warmup_steps(cfg.warmup_ratio, total_steps), total_steps)
    # the scheduler is not prepared: accelerate would step it once per process, so a 2-process
    # run would decay the learning rate twice as fast; it is registered for checkpoints instead
    model, optimizer = accelerator.prepare(model, optimizer)
    accelerator.register_for_checkpointing(scheduler)
    return _Run(accelerator, cfg, model, tok, optimizer, scheduler, data, epoch_steps, native_sync, options, pad_id,
                forwards)


def _fits_fsdp(epoch_steps: list, lengths: Sequence[Sequence[int]], cfg: TrainConfig) -> None:
    """Refuse, on every process before the first step, a prompt larger than the token budget under FSDP: its
    chunked backward would interleave forwards and backwards unlike the other processes' steps, and FSDP's
    collectives must come in the same order everywhere. Sizes are padded ones (longest response x responses)."""
    largest = max((max(lengths[i]) * len(lengths[i]) for steps in epoch_steps for s in steps for g in s for b in g
                   if b.oversize for i in b.prompts), default=0)
    if largest:
        raise TrainError(f"a prompt needs {largest} padded tokens, over --max-tokens-per-batch "
                         f"{cfg.max_tokens_per_batch}, and under FSDP a prompt cannot be split (fix: pass "
                         f"--max-tokens-per-batch {largest} or more, or a smaller --max-length)")


def _reduce_in_float32(accelerator) -> None:
    """FSDP's mixed precision reduces gradients in bf16 by default (accelerate sets ``reduce_dtype`` to the compute
    dtype); every micro-batch's gradient would be rounded to 3 significant digits before it is summed into the
    float32 shards. Reduce in float32, as DDP's one all-reduce per step does."""
    import dataclasses

    import torch

    plugin = getattr(accelerator.state, "fsdp_plugin", None)
    policy = getattr(plugin, "mixed_precision_policy", None)
    if policy is not None and dataclasses.is_dataclass(policy) and getattr(policy, "reduce_dtype", None) is not None:
        plugin.mixed_precision_policy = dataclasses.replace(policy, reduce_dtype=torch.float32)


def _checkpoint_activations(model) -> None:
    """Hugging Face activation checkpointing, non-reentrant (it needs no input that requires a gradient); the
    method is ``activation_checkpointing_enable`` in newer transformers, ``gradient_checkpointing_enable`` before."""
    if hasattr(model, "activation_checkpointing_enable"):
        model.activation_checkpointing_enable(activation_checkpointing_kwargs={"use_reentrant": False})
    else:
        model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})


def _checkpointing(cfg: TrainConfig, model, accelerator) -> bool:
    """Whether Hugging Face gradient checkpointing is on (see ``TrainConfig.gradient_checkpointing``). Never under
    FSDP with its own activation checkpointing (configs/fsdp_72b.yaml): the layers would be recomputed twice."""
    plugin = getattr(accelerator.state, "fsdp_plugin", None)
    if plugin is not None and getattr(plugin, "activation_checkpointing", False):
        return False
    if cfg.gradient_checkpointing != "auto":
        return cfg.gradient_checkpointing == "on" and getattr(model, "supports_gradient_checkpointing", False)
    return (not rm.is_tiny(cfg.model) and getattr(model, "supports_gradient_checkpointing", False)
            and rm.count_parameters(model) >= CHECKPOINTING_FROM)


def _restore(run: _Run, plan: Plan, out: Path, identity: dict) -> int:
    """Load the checkpoint to resume (and trim the log to it) or mark a fresh start; the steps already done."""
    accelerator, done = run.accelerator, 0
    if plan.resume_dir is not None:
        accelerator.load_state(str(plan.resume_dir))
        done = json.loads((plan.resume_dir / "cheems_state.json").read_text())["global_step"]
    if accelerator.is_main_process:
        if plan.resume_dir is None:
            start_fresh(plan.work, out, {**identity, "output": str(out)})
        else:
            trim_log(plan.work / "train_log.jsonl", done)
    accelerator.wait_for_everyone()
    return done


def _progress_bar(total: int, initial: int):
    from tqdm.auto import tqdm

    return tqdm(total=total, initial=initial, desc="training", unit="step")


def _optimisation_step(run: _Run, per_proc: list[list[Batch]]) -> StepMetrics:
    """One step: this process's micro-batches, the gradient sync, clipping and the update; the step's metrics."""
    accelerator, model, cfg, data = run.accelerator, run.model, run.cfg, run.data
    mine = per_proc[accelerator.process_index]
    step_batches = [b for group in per_proc for b in group]
    n_pairs = sum(len(data.pairs[i]) for b in step_batches for i in b.prompts)  # the loss's global normalisers
    n_rewards = sum(b.n_sequences for b in step_batches)
    metrics = StepMetrics()
    run.forwards[0] = 0
    # DDP: every backward without its hooks, one all-reduce per step below. FSDP: its own reduce-scatter in every
    # backward, into sharded gradients (no_sync would keep whole unsharded gradients on every process)
    with accelerator.no_sync(model) if not run.native_sync else contextlib.nullcontext():
        for batch in mine:
            seqs, pairs = collate(data, batch.prompts)
            r, stats = _micro_batch(run, batch, seqs, pairs, n_pairs, n_rewards)
            metrics.add(stats, r, seqs)
        # every process the same forwards, whatever its share of the step: under FSDP each forward and backward is
        # a collective, and a process with fewer would leave the others waiting for ever
        pad_id = run.pad_id
        for _ in range(max(sum(_forwards(run, b) for b in group) for group in per_proc) - run.forwards[0]):
            accelerator.backward(forward_rewards(model, [[pad_id]], pad_id, accelerator.device, run.options).sum() * 0.0)
    metrics.forwards = run.forwards[0]
    if accelerator.num_processes > 1 and not run.native_sync:
        _all_reduce_grads(accelerator, model)
    if cfg.max_grad_norm:
        accelerator.clip_grad_norm_(model.parameters(), cfg.max_grad_norm)
    run.optimizer.step()
    run.scheduler.step()
    run.optimizer.zero_grad(set_to_none=True)
    return metrics.reduced(accelerator)


def _forwards(run: _Run, batch: Batch) -> int:
    """The forward calls :func:`_micro_batch` makes for ``batch``: one under FSDP; with each prompt once
    (:func:`_shares_prefix`), the prefix forwards and one per group of continuations
    (:func:`cheems_lib.models.prefix_sharing.forward_calls`); else one per length group, twice that for an oversize
    prompt (a no-grad pass, then the chunked backward's)."""
    if run.native_sync:
        return 1
    seqs = [s for i in batch.prompts for s in run.data.sequences[i]]
    if _shares_prefix(run) and not batch.oversize:
        return forward_calls(seqs, [len(run.data.sequences[i]) for i in batch.prompts], run.cfg.max_tokens_per_batch)
    groups = len(forward_groups([len(s) for s in seqs], run.cfg.max_tokens_per_batch))
    return 2 * groups if batch.oversize else groups


def _shares_prefix(run: _Run) -> bool:
    """Whether :func:`_micro_batch` forwards each prompt once (:mod:`cheems_lib.models.prefix_sharing`): a tiny model
    whose last layer is read at the read position (one process or DDP); a hub model keeps the plain forward."""
    module = getattr(run.model, "module", run.model)
    return (not run.native_sync and getattr(module.config, "cheems_tiny_size", None) is not None
            and supported(module, training=True))


def _micro_batch(run: _Run, batch: Batch, seqs, pairs, n_pairs: int, n_rewards: int):
    """Forward and backward of one micro-batch; returns its rewards and :func:`cheems_lib.models.bt_loss.bt_loss` stats."""
    accelerator, cfg, pad_id = run.accelerator, run.cfg, run.pad_id
    # FSDP averages gradients over processes; undo it
    scale = accelerator.num_processes if run.native_sync else 1
    if batch.oversize:  # never under FSDP (refused by _fits_fsdp before the first step)
        return _oversize_step(run.model, accelerator, seqs, pairs, cfg, pad_id, accelerator.device, n_pairs, n_rewards,
                              scale, run.options)
    if run.native_sync:
        r = forward_rewards(run.model, seqs, pad_id, accelerator.device, run.options)
    else:  # each prompt once, then its responses after it, and the last layer at the read position only,
        # forward and backward (a DDP wrapper calls the patched module)
        with last_token_only(getattr(run.model, "module", run.model), training=True):
            if _shares_prefix(run):
                r = shared_rewards(run.model, seqs, [len(run.data.sequences[i]) for i in batch.prompts], pad_id,
                                   accelerator.device, cfg.max_tokens_per_batch)
            else:
                r = grouped_rewards(run.model, seqs, pad_id, accelerator.device, cfg.max_tokens_per_batch, run.options)
    loss, stats = bt_loss(r, pairs, cfg.reg_coef, n_pairs=n_pairs, n_rewards=n_rewards)
    accelerator.backward(loss * scale)
    return r, stats


def _summary(run: _Run, eff: dict, fingerprint: str, total_steps: int, seconds: float) -> dict:
    """``cheems_train.json`` without its final metrics (:func:`~cheems_lib.models.run_folder.publish` adds them)."""
    cfg, data = run.cfg, run.data
    first_epoch = [b for s in run.epoch_steps[0] for g in s for b in g]
    return {"config": asdict(cfg), "effective": eff, "data": data.report(), "data_fingerprint": fingerprint,
            "steps": total_steps, "processes": run.accelerator.num_processes, "pairs_used_per_epoch": data.n_pairs,
            "micro_batches_per_epoch": len(first_epoch),
            "padding_fraction": padding_fraction(first_epoch, data.lengths, cfg.max_tokens_per_batch),
            "wall_time_s": round(seconds, 2)}


def _oversize_step(model, accelerator, seqs, pairs, cfg, pad_id, device, n_pairs, n_rewards, scale, options=None):
    """One prompt too large for a batch: no-grad rewards, their loss gradient, then chunked backward.

    Exact: dL/dtheta = sum_i dL/dr_i * dr_i/dtheta, computed chunk by chunk.
    """
    import torch

    parts = forward_groups([len(s) for s in seqs], cfg.max_tokens_per_batch)
    with torch.no_grad():
        r = torch.empty(len(seqs), device=device)
        for part in parts:
            r[part] = forward_rewards(model, [seqs[j] for j in part], pad_id, device, options)
    r_leaf = r.clone().requires_grad_(True)
    loss, stats = bt_loss(r_leaf, pairs, cfg.reg_coef, n_pairs=n_pairs, n_rewards=n_rewards)
    (grad,) = torch.autograd.grad(loss * scale, r_leaf)
    for part in parts:
        rp = forward_rewards(model, [seqs[j] for j in part], pad_id, device, options)
        accelerator.backward((rp * grad[part]).sum())
    return r, stats


def _all_reduce_grads(accelerator, model) -> None:
    """Sum every gradient over processes in one flat all-reduce (the loss is already normalised globally)."""
    import torch

    params = [p for p in model.parameters() if p.requires_grad]
    for p in params:  # a process without a batch this step has no gradient yet
        if p.grad is None:
            p.grad = torch.zeros_like(p)
    flat = accelerator.reduce(torch.cat([p.grad.reshape(-1) for p in params]), "sum")
    offset = 0
    for p in params:
        n = p.numel()
        p.grad.copy_(flat[offset:offset + n].view_as(p.grad))
        offset += n
