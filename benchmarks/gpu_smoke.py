"""The GPU smoke run (`make gpu-smoke`): the real-model path on one GPU in about two minutes, offline.

Each step prints PASS, FAIL or SKIP with what it measured; the exit status is 1 when any step failed.

1. ``tiny-rm``: a tiny reward model trained on the GPU scores a benchmark there as on the CPU (within 1e-3),
   through the last-token scoring path.
2. ``tiny-judge``: a tiny judge trained on the GPU gives the same letter probabilities there as on the CPU
   (within 1e-3), through ``logits_to_keep``.
3. ``bf16-learns``: a Qwen2 reward model of realistic width (Qwen2.5-0.5B's: hidden 896, 14 heads, 2 key-value
   heads, MLP 4864; random weights, 2 layers), saved in bfloat16 as hub checkpoints are, trains with the paper
   preset (`cheems train`, 10 steps, lr 5e-6) and every parameter tensor but the embedding changes in most of
   its elements.
4. ``bf16-scores``: the trained model scores in bfloat16 as float32 compute does on the same (bf16-rounded)
   weights (Pearson r >= 0.99, all finite); it also prints how far rounding the trained float32 weights to bf16
   moves the scores: a few steps at lr 5e-6 move weights by less than bf16 resolves.
5. ``fsdp-resume``: `accelerate launch` with configs/fsdp_72b.yaml on one process (FSDP2, activation
   checkpointing) is killed (kill -9) at a chosen step, resumed with --resume, finishes, and from_pretrained
   loads the gathered model.
6. ``tiny-then-bf16``: a tiny run (precision no), then a bf16-autocast run, in one process.

Where no GPU is found (or with ``--cpu``) it runs the CPU mode: steps 1, 2 and 5 say SKIP and why, the others
run on the CPU at a narrower width; the test suite runs that mode. It needs only Python with torch,
transformers, accelerate, numpy and orjson: the library is imported from this working tree, nothing is
installed, nothing is downloaded.
"""
from __future__ import annotations

import argparse
import contextlib
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # the library of this working tree, installed or not

REALISTIC = dict(hidden_size=896, num_attention_heads=14, num_key_value_heads=2, intermediate_size=4864)
NARROW = dict(hidden_size=64, num_attention_heads=4, num_key_value_heads=2, intermediate_size=128)
TOLERANCE = 1e-3


class Skip(Exception):
    """A step that cannot run here; the message says why."""


class Report:
    """PASS/FAIL/SKIP lines, one per step, printed as they finish."""

    def __init__(self):
        self.failed = 0

    @contextlib.contextmanager
    def step(self, name: str):
        t0 = time.time()
        detail: list[str] = []
        try:
            yield detail
        except Skip as e:
            print(f"SKIP {name}: {e}", flush=True)
            return
        except Exception as e:  # a smoke run reports every step, whatever one of them raised
            self.failed += 1
            print(f"FAIL {name} ({time.time() - t0:.1f} s): {type(e).__name__}: {' '.join(str(e).split())[:400]}",
                  flush=True)
            return
        print(f"PASS {name} ({time.time() - t0:.1f} s): {'; '.join(detail)}", flush=True)


def cli(*args, env=None, launch: list[str] | None = None) -> subprocess.CompletedProcess:
    """``python -m cheems_lib.cli ARGS`` (under ``accelerate launch LAUNCH`` when given) from this working tree."""
    cmd = [sys.executable, "-m", "cheems_lib.cli", *map(str, args)]
    if launch is not None:
        cmd = [sys.executable, "-m", "accelerate.commands.launch", *launch, "-m", "cheems_lib.cli", *map(str, args)]
    path = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    return subprocess.run(cmd, capture_output=True, text=True, cwd=ROOT, timeout=600,
                          env={**os.environ, "PYTHONPATH": path, **(env or {})})


def must(done: subprocess.CompletedProcess, what: str) -> None:
    if done.returncode != 0:
        raise RuntimeError(f"{what} exited {done.returncode}: {done.stderr.strip()[-600:]}")


def world():
    """Human-labelled training records and a benchmark of the smoke world (seed 0)."""
    from cheems_lib.world.simulation import WorldConfig, build_world

    files = build_world(WorldConfig(size="smoke", seed=0)).files
    return files["cheems_preference/human.jsonl"], files["cheems_bench/human.jsonl"][:40]


def scores_on(model, tok, records, device, dtype=None) -> list[float]:
    import torch

    from cheems_lib.models.scoring import score_records

    model = model.to(device=device, dtype=dtype or torch.float32)
    scores, _ = score_records(model, tok, records, batch_size=8)
    return [scores[k] for k in sorted(scores)]


def largest_gap(a, b) -> float:
    return max(abs(x - y) for x, y in zip(a, b))


def tiny_rm(cuda: bool, tmp: Path, train_set, bench, detail) -> None:
    if not cuda:
        raise Skip("no CUDA device (the CPU mode trains and scores on the CPU elsewhere)")
    from cheems_lib.models.reward_model import load
    from cheems_lib.models.training import train
    from cheems_lib.models.training_config import TrainConfig

    summary = train(train_set, TrainConfig(model="tiny", epochs=1, max_length=256, tokenizer_vocab=1000),
                    tmp / "tiny-rm", progress=False)
    model, tok = load(tmp / "tiny-rm")
    gpu, cpu = scores_on(model, tok, bench, "cuda"), scores_on(model, tok, bench, "cpu")
    gap = largest_gap(gpu, cpu)
    detail += [f"trained {summary['steps']} steps on cuda", f"{len(gpu)} scores, largest GPU-CPU gap {gap:.2e}"]
    if gap > TOLERANCE:
        raise AssertionError(f"GPU and CPU scores differ by {gap:.2e} > {TOLERANCE}")


def tiny_judge(cuda: bool, tmp: Path, train_set, bench, detail) -> None:
    if not cuda:
        raise Skip("no CUDA device")
    from cheems_lib.models.judging import judge_records, load_judge, train_tiny_judge

    train_tiny_judge(train_set, tmp / "tiny-judge", size="tiny-xs", max_pairs=300, epochs=1)
    lm, tok = load_judge(tmp / "tiny-judge")
    probs = {}
    for device in ("cuda", "cpu"):
        verdicts = judge_records(lm.to(device), tok, bench[:12], batch_size=8)
        probs[device] = [p for v in verdicts for p in (*v.ab, *v.ba)]
    gap = largest_gap(probs["cuda"], probs["cpu"])
    detail += [f"{len(probs['cpu']) // 6} pairs in both orders", f"largest GPU-CPU probability gap {gap:.2e}"]
    if gap > TOLERANCE:
        raise AssertionError(f"GPU and CPU letter probabilities differ by {gap:.2e} > {TOLERANCE}")


def bf16_checkpoint(path: Path, records, width: dict) -> Path:
    """A Qwen2 sequence classifier with ``width``, 2 layers and random weights, saved in bfloat16 with a tokenizer
    trained on ``records``: the shape of a hub reward-model checkpoint, made here."""
    import torch
    from transformers import Qwen2Config, Qwen2ForSequenceClassification

    from cheems_lib.models.reward_model import train_tokenizer

    tok = train_tokenizer((t for r in records for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=3000)
    config = Qwen2Config(vocab_size=len(tok), num_hidden_layers=2, max_position_embeddings=2048, num_labels=1,
                         pad_token_id=tok.pad_token_id, tie_word_embeddings=False, **width)
    torch.manual_seed(0)
    Qwen2ForSequenceClassification(config).to(torch.bfloat16).save_pretrained(path)
    tok.save_pretrained(path)
    return path


def bf16_learns(base: Path, data: Path, tmp: Path, detail) -> Path:
    import torch
    from safetensors.torch import load_file

    out = tmp / "bf16-trained"
    done = cli("train", "--model", base, "--data", data, "--output", out, "--max-steps", 10, "--max-length", 256,
               "--max-tokens-per-batch", 2048, "--grad-accum", 1, "--warmup-ratio", 0, "--save-dtype", "float32")
    must(done, "cheems train")
    eff = json.loads((out / "cheems_train.json").read_text())["effective"]
    before, after = load_file(str(base / "model.safetensors")), load_file(str(out / "model.safetensors"))
    shares = {k: float((after[k] != before[k].float()).float().mean()) for k in after if k != "model.embed_tokens.weight"}
    low = {k: round(v, 3) for k, v in shares.items() if v <= 0.5}
    detail += [f"preset {eff['preset']}, mixed precision {eff['mixed_precision']}, "
               f"{sum(p.numel() for p in after.values()) / 1e6:.2f}M parameters",
               f"least-changed tensor {min(shares, key=shares.get)}: {min(shares.values()):.3f} of its elements"]
    if low:
        raise AssertionError(f"tensors that did not learn: {low}")
    if {w.dtype for w in after.values()} != {torch.float32}:
        raise AssertionError("--save-dtype float32 did not save float32")
    return out


def bf16_scores(trained: Path, bench, device: str, detail) -> None:
    """bf16 scoring against float32 scoring of the same bf16-rounded weights (the compute path alone), and how far
    rounding the trained float32 weights to bf16 moves the scores (what saving in bf16 would cost)."""
    import torch

    from cheems_lib.models.reward_model import load

    model, tok = load(trained)
    full = scores_on(model, tok, bench, device)
    half = scores_on(model, tok, bench, device, torch.bfloat16)
    rounded = scores_on(model, tok, bench, device)  # float32 compute, weights now bf16-rounded
    t_rounded, t_half = torch.tensor(rounded), torch.tensor(half)
    r = float(torch.corrcoef(torch.stack([t_rounded, t_half]))[0, 1])
    detail += [f"{len(half)} scores on {device}", f"bf16 vs float32 compute on the same weights: Pearson r {r:.4f}, "
               f"largest gap {largest_gap(rounded, half):.2e} (score std {float(t_rounded.std()):.2e})",
               f"rounding the trained weights to bf16 moves scores by up to {largest_gap(full, rounded):.2e}"]
    if not torch.isfinite(t_half).all() or r < 0.99:
        raise AssertionError(f"bf16 scores disagree with float32 on the same weights (r = {r:.4f})")


def fsdp_resume(cuda: bool, base: Path, data: Path, tmp: Path, detail) -> None:
    if not cuda:
        raise Skip("accelerate drives FSDP only on CUDA (its CPU config falls back to DDP)")
    from transformers import AutoModelForSequenceClassification

    out = tmp / "fsdp"
    launch = ["--config_file", str(ROOT / "configs/fsdp_72b.yaml"), "--num_machines", "1", "--num_processes", "1",
              "--machine_rank", "0", "--main_process_port", "29517"]
    args = ["train", "--model", base, "--data", data, "--output", out, "--max-steps", 6, "--save-every", 2,
            "--max-length", 256, "--max-tokens-per-batch", 2048, "--grad-accum", 1, "--warmup-ratio", 0]
    cut = cli(*args, launch=launch, env={"CHEEMS_TEST_INTERRUPT": "train.step=3:SIGKILL"})
    latest = out / "checkpoints" / "latest"
    if cut.returncode == 0 or not latest.exists():
        raise RuntimeError(f"the kill at step 3 did not leave a checkpoint (exit {cut.returncode}): "
                           f"{cut.stderr.strip()[-600:]}")
    detail.append(f"killed at step 3, checkpoint {latest.read_text().strip()}")
    must(cli(*args, "--resume", launch=launch), "the resumed FSDP run")
    summary = json.loads((out / "cheems_train.json").read_text())
    model = AutoModelForSequenceClassification.from_pretrained(out)
    detail += [f"resumed to step {summary['final']['step']}, {summary['processes']} process",
               f"from_pretrained loads {sum(p.numel() for p in model.parameters()) / 1e6:.0f}M parameters "
               f"({next(model.parameters()).dtype})"]


def tiny_then_bf16(tmp: Path, train_set, detail) -> None:
    from cheems_lib.models.training import train
    from cheems_lib.models.training_config import TrainConfig

    small = dict(model="tiny-xs", epochs=1, max_length=128, tokenizer_vocab=500, max_steps=2)
    first = train(train_set, TrainConfig(**small), tmp / "first", progress=False)
    second = train(train_set, TrainConfig(**small, mixed_precision="bf16"), tmp / "second", progress=False)
    detail.append(f"precision {first['effective']['mixed_precision']}, then {second['effective']['mixed_precision']}")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--cpu", action="store_true", help="the CPU mode even where a GPU is found")
    p.add_argument("--keep", type=Path, help="work in this folder and keep it (default: a temporary folder)")
    args = p.parse_args(argv)
    import accelerate
    import torch
    import transformers

    from cheems_lib.records import write_records

    cuda = torch.cuda.is_available() and not args.cpu
    if args.cpu:
        os.environ["CUDA_VISIBLE_DEVICES"] = ""  # the commands it starts see no GPU either
    device = "cuda" if cuda else "cpu"
    card = torch.cuda.get_device_name(0) if cuda else "no GPU (CPU mode)"
    print(f"gpu smoke: {card}; Python {sys.version.split()[0]}, torch {torch.__version__}, transformers "
          f"{transformers.__version__}, accelerate {accelerate.__version__}", flush=True)
    report, t0 = Report(), time.time()
    with contextlib.ExitStack() as stack:
        tmp = args.keep or Path(stack.enter_context(tempfile.TemporaryDirectory(prefix="cheems-gpu-smoke-")))
        tmp.mkdir(parents=True, exist_ok=True)
        train_set, bench = world()
        data = tmp / "train.jsonl"
        write_records(train_set[:48], data)
        with report.step("tiny-rm") as detail:
            tiny_rm(cuda, tmp, train_set, bench, detail)
        with report.step("tiny-judge") as detail:
            tiny_judge(cuda, tmp, train_set, bench, detail)
        base = bf16_checkpoint(tmp / "bf16-base", train_set, REALISTIC if cuda else NARROW)
        trained = None
        with report.step("bf16-learns") as detail:
            trained = bf16_learns(base, data, tmp, detail)
        with report.step("bf16-scores") as detail:
            if trained is None:
                raise Skip("bf16-learns failed")
            bf16_scores(trained, bench, device, detail)
        with report.step("fsdp-resume") as detail:
            fsdp_resume(cuda, base, data, tmp, detail)
        with report.step("tiny-then-bf16") as detail:
            tiny_then_bf16(tmp, train_set, detail)
    verdict = "FAIL" if report.failed else "PASS"
    print(f"gpu smoke: {verdict} ({report.failed} failed) in {time.time() - t0:.0f} s", flush=True)
    return 1 if report.failed else 0


if __name__ == "__main__":
    sys.exit(main())
