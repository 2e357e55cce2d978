"""Benchmark the training data layout: ours (whole prompts, every response once) beside a
pairwise chosen/rejected layout (TRL, OpenRLHF) and the official code's batching, in one run.

Data: CheemsPreference-shaped prompts from the simulated world (preference set, default
size), ranked by the hidden quality so that orders are near-total as after distant
supervision. Reports:

- forward passes per unique response per epoch (1.00 is the limit);
- ordered pairs used out of those available;
- padding as a fraction of processed tokens;
- CPU training throughput (real tokens/s) and time per epoch of the tiny model, ours vs
  the pairwise layout with the same model, loss and token budget;
- ``cheems train --model tiny`` end to end (a fresh process: imports, tokenizer, encoding,
  training, saving) on the default world's human preference subset (815 prompts, 1 epoch,
  ``--threads`` threads): its model FLOP/s beside the fp32 matmul rate measured in the same
  run (a square ``torch.mm`` on as many threads, before and after; the better one counts), and
  their ratio. Model FLOPs count the real tokens only, forward and backward (3x the forward):
  ``2 * L * (weights of every linear layer) + 4 * layers * hidden * L**2`` per forwarded sequence of
  ``L`` tokens (the second term is attention's two products over the full ``L x L``);
- where the training loop's CPU time goes, by kind of torch operator (``torch.profiler`` over
  ``--profile-steps`` optimisation steps of the same model and data, same threads): matrix
  products, attention, and the rest (element-wise and reductions: rotary embedding, RMSNorm,
  SiLU gating, their backward passes, the optimizer).

Usage: python benchmarks/bench_training.py [--prompts N] [--steps N] [--threads N] [--only end-to-end|layouts]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from cheems_lib.models.batching import pack, padding_fraction
from cheems_lib.models.reward_model import build_tiny, train_tokenizer
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.models.bt_loss import bt_loss, forward_rewards, grouped_rewards
from cheems_lib.models.last_token import last_token_only
from cheems_lib.models.prefix_sharing import shared_rewards
from cheems_lib.models.training_config import TrainConfig
from cheems_lib.models.training_pairs import collate, encode_records

OUT = Path(__file__).parent / "out"
ROOT = Path(__file__).resolve().parent.parent


def truth_ranked(n_prompts: int):
    world = build_world(WorldConfig(size="default", seed=0))
    util = {(t["prompt_id"], t["response_id"]): t["utility"] for t in world.truth}
    recs = world.files["cheems_preference/gpt.jsonl"][:n_prompts]
    for r in recs:  # rank by hidden quality: near-total orders, like CheemsPreference after distant supervision
        levels = sorted({-util[(r.id, x.id)] for x in r.responses})
        r.rank = {x.id: levels.index(-util[(r.id, x.id)]) for x in r.responses}
    return recs


def official_pairs_kept(lengths, pairs, batch_sequences: int) -> float:
    """The official greedy rule: fill fixed-size batches prompt by prompt; a prompt that does not
    fit spills its remaining responses into the next batch, and pairs across batches are dropped."""
    kept = total = 0
    slot = 0
    for k, ps in zip((len(l) for l in lengths), pairs):
        batch_of = [(slot + j) // batch_sequences for j in range(k)]
        slot += k
        total += len(ps)
        kept += sum(batch_of[a] == batch_of[b] for a, b in ps)
    return kept / total


def pairwise_batches(pairs_flat, lengths, max_tokens):
    """Chosen/rejected pairs in random order, packed under the same padded-token budget."""
    batches, cur, longest = [], [], 0
    for p, a, b in pairs_flat:
        la, lb = lengths[p][a], lengths[p][b]
        nl = max(longest, la, lb)
        if cur and nl * 2 * (len(cur) + 1) > max_tokens:
            batches.append(cur)
            cur, nl = [], max(la, lb)
        cur.append((p, a, b))
        longest = nl
    if cur:
        batches.append(cur)
    return batches


def matmul_rate(threads: int, n: int = 2048, repeats: int = 5) -> float:
    """Best fp32 FLOP/s of an ``n x n`` ``torch.mm`` on ``threads`` threads."""
    import torch

    torch.set_num_threads(threads)
    a, b = torch.randn(n, n), torch.randn(n, n)
    torch.mm(a, b)  # warm-up
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        torch.mm(a, b)
        best = min(best, time.perf_counter() - t0)
    return 2 * n ** 3 / best


def model_flops(folder: Path, records, max_length: int) -> tuple[float, int]:
    """Forward-and-backward FLOPs of one epoch of the trained ``folder`` over ``records``, and the real tokens."""
    import torch

    from cheems_lib.models.reward_model import load

    model, tok = load(folder)
    cfg = model.config
    linear = sum(m.weight.numel() for m in model.modules() if isinstance(m, torch.nn.Linear))
    data = encode_records(records, tok, max_length)  # the ids training forwarded
    lengths = [n for prompt in data.lengths for n in prompt]
    forward = sum(2 * n * linear + 4 * cfg.num_hidden_layers * cfg.hidden_size * n * n for n in lengths)
    return 3.0 * forward, sum(lengths)


MATMUL_OPS = ("aten::mm", "aten::addmm", "aten::bmm", "aten::matmul", "aten::linear")


def loop_profile(records, threads: int, steps: int) -> dict:
    """Self CPU time of ``steps`` training steps of ``tiny`` by operator kind (see the module docstring)."""
    import torch
    from torch.profiler import ProfilerActivity, profile

    torch.set_num_threads(threads)
    cfg = TrainConfig(model="tiny")
    tok = train_tokenizer((t for r in records for t in [r.prompt, *(x.content for x in r.responses)]),
                          vocab_size=cfg.tokenizer_vocab, model_max_length=cfg.max_length)
    model = build_tiny("tiny", tok, seed=0, max_length=cfg.max_length)
    model.train()
    data = encode_records(records, tok, cfg.max_length)
    opt = torch.optim.AdamW(model.parameters(), lr=cfg.learning_rate)
    batches = pack(data.lengths, cfg.max_tokens_per_batch, seed=0)[:steps + 1]

    def step(batch):
        seqs, pairs = collate(data, batch.prompts)
        with last_token_only(model, training=True):  # as training runs it: each prompt once, the last layer at the end
            rewards = shared_rewards(model, seqs, [len(data.sequences[i]) for i in batch.prompts], tok.pad_token_id,
                                     "cpu", cfg.max_tokens_per_batch)
        loss, _ = bt_loss(rewards, pairs, cfg.reg_coef)
        loss.backward()
        opt.step()
        opt.zero_grad()

    step(batches[0])  # warm-up
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        for batch in batches[1:]:
            step(batch)
    kinds = {"matrix products": 0.0, "attention": 0.0, "element-wise and other": 0.0}
    for ev in prof.key_averages():
        kind = ("matrix products" if ev.key in MATMUL_OPS else "attention" if "attention" in ev.key
                else "element-wise and other")
        kinds[kind] += ev.self_cpu_time_total
    total = sum(kinds.values())
    return {"steps": len(batches) - 1, **{k: round(v / total, 3) for k, v in kinds.items()}}


def end_to_end(threads: int, profile_steps: int = 8) -> dict:
    """``cheems train --model tiny`` on the default world's human preference subset, 1 epoch, in a fresh process."""
    from cheems_lib.records import read_records

    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    cli = [sys.executable, "-m", "cheems_lib.cli"]
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([*cli, "simulate", "-o", str(tmp / "world"), "--size", "default"], env=env, check=True,
                       capture_output=True)
        data = tmp / "human.jsonl"
        subprocess.run([*cli, "resolve", str(tmp / "world/cheems_preference/human.jsonl"), "-o", str(data)], env=env,
                       check=True, capture_output=True)
        before = matmul_rate(threads)
        t0 = time.perf_counter()
        subprocess.run([*cli, "train", "--data", str(data), "--model", "tiny", "--epochs", "1", "--output",
                        str(tmp / "rm")], env=env, check=True, capture_output=True)
        wall = time.perf_counter() - t0
        after = matmul_rate(threads)
        summary = json.loads((tmp / "rm/cheems_train.json").read_text())
        flops, tokens = model_flops(tmp / "rm", read_records(data), summary["config"]["max_length"])
        kinds = loop_profile(read_records(data), threads, profile_steps) if profile_steps else None
    rate = max(before, after)
    report = summary["data"]
    return {"threads": threads, "prompts": report["prompts"] + report["prompts_without_pairs"],
            "prompts_with_pairs": report["prompts"], "real_tokens": tokens,
            "model_gflop": round(flops / 1e9, 1), "wall_s": round(wall, 2),
            "training_loop_s": summary["wall_time_s"],
            "fp32_matmul_gflop_per_s": round(rate / 1e9, 1),
            "end_to_end_gflop_per_s": round(flops / wall / 1e9, 2),
            "end_to_end_share_of_matmul_rate": round(flops / wall / rate, 3),
            "training_loop_share_of_matmul_rate": round(flops / summary["wall_time_s"] / rate, 3),
            "training_loop_cpu_time_by_operator_kind": kinds}


def main():
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=1500)
    ap.add_argument("--steps", type=int, default=40, help="optimisation steps timed per layout")
    ap.add_argument("--threads", type=int, default=2, help="torch threads of the end-to-end run and its matmul")
    ap.add_argument("--only", choices=["end-to-end", "layouts"], help="run one of the two parts")
    ap.add_argument("--profile-steps", type=int, default=8, help="training steps profiled by operator kind (0: none)")
    args = ap.parse_args()
    e2e = None
    if args.only != "layouts":
        e2e = end_to_end(args.threads, args.profile_steps)
        print(json.dumps({"cheems train end to end": e2e}, indent=2))
        if args.only == "end-to-end":
            return
    torch.manual_seed(0)
    recs = truth_ranked(args.prompts)
    cfg = TrainConfig(model="tiny", max_tokens_per_batch=8192)
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=3000)
    data = encode_records(recs, tok, cfg.max_length)
    lengths = data.lengths
    n_resp = sum(len(l) for l in lengths)
    n_pairs = data.n_pairs
    batches = pack(lengths, cfg.max_tokens_per_batch, seed=0)
    ours_forwards = sum(b.n_sequences * (2 if b.oversize else 1) for b in batches)
    used = sum(len(data.pairs[i]) for b in batches for i in b.prompts)
    pad_grouped = padding_fraction(batches, lengths, cfg.max_tokens_per_batch)
    pad_single = 1 - sum(map(sum, lengths)) / sum(max(lengths[i][j] for i in b.prompts for j in range(len(lengths[i])))
                                                  * b.n_sequences for b in batches)
    rng = np.random.default_rng(0)
    flat = [(p, a, b) for p, ps in enumerate(data.pairs) for a, b in ps]
    flat = [flat[i] for i in rng.permutation(len(flat))]
    pw = pairwise_batches(flat, lengths, cfg.max_tokens_per_batch)
    pw_real = sum(lengths[p][a] + lengths[p][b] for bt in pw for p, a, b in bt)
    pw_proc = sum(2 * len(bt) * max(max(lengths[p][a], lengths[p][b]) for p, a, b in bt) for bt in pw)

    def timed_epoch(layout: str):
        model = build_tiny("tiny", tok, seed=0, max_length=cfg.max_length)
        opt = torch.optim.AdamW(model.parameters(), lr=1e-3)
        todo = batches if layout == "ours" else pw
        n = min(args.steps, len(todo))
        real, t0 = 0, time.perf_counter()
        for bt in todo[:n]:
            if layout == "ours":
                seqs, pairs = collate(data, bt.prompts)
                r = grouped_rewards(model, seqs, tok.pad_token_id, "cpu", cfg.max_tokens_per_batch)
            else:
                seqs = [data.sequences[p][x] for p, a, b in bt for x in (a, b)]
                pairs = [(2 * k, 2 * k + 1) for k in range(len(bt))]
                r = forward_rewards(model, seqs, tok.pad_token_id, "cpu")
            loss, _ = bt_loss(r, pairs, 0.1)
            loss.backward()
            opt.step()
            opt.zero_grad()
            real += sum(len(s) for s in seqs)
        dt = time.perf_counter() - t0
        return real / dt, dt / n * len(todo)

    ours_tps, ours_epoch = timed_epoch("ours")
    pw_tps, pw_epoch = timed_epoch("pairwise")
    result = {
        "machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
        "prompts": len(lengths), "responses_per_prompt": round(n_resp / len(lengths), 2),
        "ordered_pairs_per_prompt": round(n_pairs / len(lengths), 2),
        "forward_passes_per_unique_response": {"ours": round(ours_forwards / n_resp, 3),
                                               "pairwise chosen/rejected": round(2 * n_pairs / n_resp, 3)},
        "ordered_pairs_used": {"ours": round(used / n_pairs, 3),
                               "official batching, 8 sequences per batch": round(official_pairs_kept(lengths, data.pairs, 8), 3),
                               "pairwise chosen/rejected": 1.0},
        "padding_fraction": {"ours (length-grouped forwards)": round(pad_grouped, 3),
                             "ours without grouping": round(pad_single, 3),
                             "pairwise chosen/rejected": round(1 - pw_real / pw_proc, 3)},
        "cpu_training_real_tokens_per_s": {"ours": round(ours_tps), "pairwise": round(pw_tps)},
        "cpu_seconds_per_epoch_tiny": {"ours": round(ours_epoch, 1), "pairwise": round(pw_epoch, 1)},
        "device": "cpu (this script times the CPU path only)",
        "cheems train end to end": e2e,
    }
    print(json.dumps(result, indent=2))
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_training.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
