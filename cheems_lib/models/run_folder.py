"""The training output folder (paper §5's runs, made resumable): checkpoints, resume and the
atomic publish of the finished model.

Reliability against a killed or interrupted process (power loss is not covered):

- checkpoints are written with ``accelerate``'s ``save_state`` into a temporary folder and
  renamed (:func:`save_checkpoint`), so a kill never leaves a half-written checkpoint; each
  records the config, the data fingerprint and the number of processes
  (``cheems_state.json``), and ``resume=True`` refuses a checkpoint that differs in anything
  that changes the result (every field but
  :data:`~cheems_lib.models.training_config.BOOKKEEPING_FIELDS`), then ends with the same weights as
  an uninterrupted run;
- an output folder is in one of three states: missing/empty, *unfinished* (a run in
  progress: ``checkpoints/``, ``train_log.jsonl``, the marker :data:`MARKER`) or
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
  refused, and a non-empty folder that is not a training folder is never written into;
- a failed write (a full disk; torch's and safetensors' own errors become ``OSError``,
  :func:`cheems_lib.outputs.write_error`) removes the half-written checkpoint and the hidden
  siblings of this run (:func:`discarded_on_write_failure`), never the output itself;
- one run writes a folder at a time: the main process holds the output's lock (:func:`launch_lock`) from
  before the plan is made until the run ends, and a second run into it is refused on every process.

Kept apart from :mod:`cheems_lib.models.training`: the loop decides what to compute, this module only
where it goes and when it counts as done (:func:`agreed_plan` before the loop, :func:`publish`
after it).
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path

from ..outputs import atomic_open, interrupt_point, LockedError, OutputLock, write_error
from ..outputs import exchange as _exchange
from .training_config import BOOKKEEPING_FIELDS, TrainConfig, TrainError
from ..input_files import read_json

__all__ = ["MARKER", "Plan", "launch_lock", "agreed_plan", "start_fresh", "trim_log", "append_json_line", "save_checkpoint",
           "publish", "save_model", "discarded_on_write_failure"]

MARKER = ".cheems_training"  # marks an unfinished training folder (written at the start of a fresh run)


def _write_json(path: Path, obj) -> None:
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write(json.dumps(obj, indent=2, ensure_ascii=False, default=str))


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
        interrupt_point("publish.swapped")
        return
    if not _exchange(stage, out):  # no RENAME_EXCHANGE here: two renames; _recover repairs a kill between them
        old = _sibling(out, "old")
        _rmtree(old)
        os.rename(out, old)
        os.rename(stage, out)
        interrupt_point("publish.swapped")
        _rmtree(old)
        return
    interrupt_point("publish.swapped")
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
class Plan:
    """Where a run trains and what it resumes from, decided by :func:`agreed_plan` before anything is written."""

    work: Path  # where checkpoints and the log go
    resume_dir: Path | None
    notes: list[str]
    finished: dict | None = None  # the existing summary when there is nothing to do


def _plan(out: Path, shown: str, cfg: TrainConfig, fingerprint: str, processes: int, *, resume: bool,
          overwrite: bool) -> Plan:
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
        summary = read_json(out / "cheems_train.json", "remove the folder, or pass --overwrite to retrain")
        diffs = _differences(summary, cfg, fingerprint, processes)
        if diffs:
            raise TrainError(f"{shown}: --resume with another configuration than the finished run: "
                             f"{'; '.join(diffs)} (fix: pass --overwrite to retrain, or choose a new --output)")
        return Plan(out, None, [f"cheems: {shown}: already finished; nothing to resume"], finished=summary)
    else:
        work = out
    ckpt = _latest_checkpoint(work)
    if resume and ckpt is None:
        notes.append(f"cheems: {shown}: no checkpoint to resume; starting fresh")
    elif resume:
        recorded = read_json(ckpt / "cheems_state.json", f"remove {ckpt.name}, or pass --overwrite to retrain")
        if "config" not in recorded:
            notes.append(f"cheems: {shown}: checkpoint {ckpt.name} records no configuration (older version); "
                         "resuming without checking it")
        else:
            diffs = _differences(recorded, cfg, fingerprint, processes)
            if diffs:
                raise TrainError(f"{shown}: --resume with another configuration than checkpoint {ckpt.name}: "
                                 f"{'; '.join(diffs)} (fix: pass the interrupted run's settings and data, "
                                 "or --overwrite to start over)")
        return Plan(work, ckpt, notes)
    elif ckpt is not None and work == out:
        raise TrainError(f"{shown}: holds an unfinished run (checkpoint {ckpt.name}) (fix: pass --resume to "
                         "continue it, or --overwrite to start over)")
    return Plan(work, None, notes)


@contextlib.contextmanager
def launch_lock(accelerator, out: Path):
    """The output folder's :class:`~cheems_lib.outputs.OutputLock`, one per launch, held while the block runs.

    The main process takes it (beside the folder: ``OUT.lock``) and every process learns, in one broadcast,
    whether it could; so a second run into the same folder (one process, or a whole ``accelerate launch``)
    stops on every process before anything is written, with :class:`~cheems_lib.outputs.LockedError`
    (``another process (pid N) is writing this output``), instead of meeting the first run's files half-way
    or waiting at a barrier that the main process never reaches. Every process raises it; the command line
    prints it once, from the main process.
    """
    lock, refused, error = OutputLock(out, join=True), None, None  # join: the model zoo locks the folder it trains
    if accelerator.is_main_process:
        try:
            lock.__enter__()
        except LockedError as e:
            refused = str(e)
        except Exception as e:  # a lock file that cannot be made (a file above the folder): the main process says it
            refused, error = f"{out}: could not lock the output ({e})", e
    if accelerator.num_processes > 1:
        from accelerate.utils import broadcast_object_list

        refused = broadcast_object_list([refused])[0]
    if error is not None:
        raise error
    if refused is not None:
        raise LockedError(refused)
    try:
        yield
    finally:
        if accelerator.is_main_process:
            lock.__exit__(None, None, None)


def agreed_plan(accelerator, out: Path, shown: str, cfg: TrainConfig, fingerprint: str, *, resume: bool,
                overwrite: bool) -> Plan:
    """Repair an interrupted publish (main process), then let every process read the same plan."""
    if accelerator.is_main_process:
        _recover(out)
    accelerator.wait_for_everyone()
    plan = _plan(out, shown, cfg, fingerprint, accelerator.num_processes, resume=resume, overwrite=overwrite)
    accelerator.wait_for_everyone()  # every process has read the folder before the main one writes to it
    return plan


def start_fresh(work: Path, out: Path, marker: dict) -> None:
    """Clear a training folder of an earlier attempt (ours only) and mark it as in progress."""
    if work != out:
        _rmtree(work)
    else:
        for name in ("checkpoints", "train_log.jsonl", ".final.tmp"):
            _rmtree(work / name)
    work.mkdir(parents=True, exist_ok=True)
    _write_json(work / MARKER, marker)


def trim_log(path: Path, upto: int) -> None:
    """Drop the log lines written after step ``upto`` (the checkpoint a run resumes from), atomically."""
    kept = _read_log(path, upto)
    with atomic_open(path, "w", encoding="utf-8") as fh:
        fh.write("".join(l + "\n" for l in kept))


def append_json_line(path: Path, obj: dict) -> None:
    """Add one line to ``train_log.jsonl`` (a kill may cut it; :func:`trim_log` drops such a line)."""
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


def _last_log(path: Path) -> dict:
    lines = [l for l in path.read_text(encoding="utf-8").splitlines() if l.strip()] if path.exists() else []
    return json.loads(lines[-1]) if lines else {}


def save_checkpoint(accelerator, model, tok, root: Path, step: int, identity: dict) -> None:
    """accelerate's save_state into a temporary folder, renamed when complete; keeps the newest only.

    ``identity`` (config, data fingerprint, processes) goes into ``cheems_state.json`` so a
    resume can refuse a checkpoint of another run.
    """
    name = f"step-{step:07d}"
    tmp = root / f".{name}.tmp"
    if accelerator.is_main_process:
        root.mkdir(parents=True, exist_ok=True)
        for stale in root.glob(".step-*.tmp"):  # left by a kill during an earlier save
            shutil.rmtree(stale, ignore_errors=True)
    accelerator.wait_for_everyone()
    with _writing(tmp):
        accelerator.save_state(str(tmp))
        if accelerator.is_main_process:
            # with the tokenizer: loadable by from_pretrained
            accelerator.unwrap_model(model).config.save_pretrained(tmp)
            tok.save_pretrained(tmp)
            _write_json(tmp / "cheems_state.json", {"global_step": step, **identity})
    # every process writes its own random state into the folder: the main one renames it only once all have
    # (without this, a slower process on a loaded machine found the folder already renamed away)
    accelerator.wait_for_everyone()
    if accelerator.is_main_process:
        interrupt_point("checkpoint.written")
        os.replace(tmp, root / name)
        with atomic_open(root / "latest", "w") as fh:
            fh.write(name)
        for old in root.glob("step-*"):
            if old.name != name:
                shutil.rmtree(old, ignore_errors=True)
        interrupt_point("checkpoint.saved")
    accelerator.wait_for_everyone()


@contextlib.contextmanager
def _writing(folder: Path):
    """Remove ``folder`` if writing it fails, and report any write failure as an OSError naming it.

    safetensors and torch's zip writer report a full disk in their own ways
    (:func:`cheems_lib.outputs.write_error`); as an OSError (ENOSPC) it becomes the command
    line's one-line runtime failure, and the last complete checkpoint stays.
    """
    try:
        yield
    except BaseException as e:
        err = write_error(e, folder)  # before the removal frees the space that tells a full disk
        _rmtree(folder)
        if err is None:
            raise
        raise err from None


@contextlib.contextmanager
def discarded_on_write_failure(accelerator, plan: Plan, out: Path):
    """On an OSError (a full disk) remove the hidden folders this run made beside ``out``.

    ``.NAME.cheems-final`` always; ``.NAME.cheems-overwrite`` unless the run resumed from a
    checkpoint in it (that checkpoint is complete: ``--overwrite --resume`` continues once
    there is space). The output itself is not touched: the previous model of an overwrite,
    or the last complete checkpoint of a run training in place, stays.
    """
    try:
        yield
    except OSError:
        if accelerator.is_main_process:
            _rmtree(_sibling(out, "final"))
            if plan.work != out and plan.resume_dir is None:
                _rmtree(plan.work)
        raise


def save_model(model, state: dict, folder: Path, dtype: str) -> None:
    """``save_pretrained`` of ``state`` (the full state dict) with every floating tensor in ``dtype``, and the
    config saying so (transformers would record the training dtype, float32)."""
    import torch

    target = getattr(torch, dtype)
    for name in list(state):  # one tensor at a time: a 72B model never holds both copies
        if state[name].is_floating_point():
            state[name] = state[name].to(target)
    model.save_pretrained(folder, state_dict=state, safe_serialization=True)
    config = json.loads((folder / "config.json").read_text(encoding="utf-8"))
    if config.get("dtype") != dtype:  # the file's record only: the live model keeps its own
        config["dtype"] = dtype
        with atomic_open(folder / "config.json", "w", encoding="utf-8") as fh:
            fh.write(json.dumps(config, indent=2, sort_keys=True) + "\n")


def publish(accelerator, model, tok, out: Path, work: Path, summary: dict, *, dtype: str = "float32") -> None:
    """Assemble the finished folder complete beside ``out`` and swap it in at once (main process).

    Every process calls it: the whole state dict is gathered first (under FSDP a collective over the shards),
    then the main process writes it in ``dtype``."""
    state = accelerator.get_state_dict(model)
    if accelerator.is_main_process:
        log = work / "train_log.jsonl"
        stage = _sibling(out, "final")
        _rmtree(stage)
        stage.mkdir(parents=True)
        with _writing(stage):
            save_model(accelerator.unwrap_model(model), state, stage, dtype)
            interrupt_point("publish.staging")
            tok.save_pretrained(stage)
            if log.exists():
                shutil.copy2(log, stage / "train_log.jsonl")
            summary["final"] = _last_log(log)
            _write_json(stage / "cheems_train.json", summary)  # the mark of a finished run
        interrupt_point("publish.staged")
        with _sigint_deferred():  # a Ctrl-C here would leave the old folder beside the new one
            _swap_in(stage, out)
            if work != out:
                _rmtree(work)
    accelerator.wait_for_everyone()
