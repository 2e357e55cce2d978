"""Scoring throughput of the tiny reward model on CPU: length-bucketed batches vs one by one,
plus unsorted batches of the same size, the same batches streamed to a resumable score
file as `cheems score` does, and another training seed's model on the same records (its tokenizer
is the same, so the tokenization is reused: what the zoo does for a training set's seeds), in one
run (responses/s and real tokens/s). Every row but the last tokenizes from scratch.

``--alternatives`` adds, in the same run and on tokenization already done, what else could speed scoring up
and how far each moves a score from the default's (``scaled_dot_product_attention``, batches of 16): eager
attention, larger batches, and ``torch.compile`` (its warm-up reported apart). None of them is used: each
moves scores in their last bits, so none is free under "the same seed, the same results".

``--last-token`` compares, in one run and for each tiny size, scoring with the last decoder layer computed at
the read position only (:mod:`cheems_lib.models.last_token`, the default) against the full forward, on the
same records tokenized once: seconds of each, the speed-up, and how many scores differ at all.

Usage: python benchmarks/bench_scoring.py [--prompts N] [--batch-size N] [--threads N] [--alternatives] [--last-token]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from cheems_lib.models.reward_model import build_tiny, train_tokenizer
from cheems_lib.models.chat_encoding import encode_pair
from cheems_lib.models import scoring
from cheems_lib.models.scoring import score_records
from cheems_lib.world.simulation import WorldConfig, build_world
from cheems_lib.models.batching import pad_right

OUT = Path(__file__).parent / "out"


def main():
    import torch

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=400)
    ap.add_argument("--batch-size", type=int, default=16)
    ap.add_argument("--threads", type=int, default=0, help="torch threads (0: torch's default)")
    ap.add_argument("--alternatives", action="store_true", help="also time eager attention, larger batches and "
                                                                      "torch.compile against the default")
    ap.add_argument("--last-token", action="store_true", help="only compare the last-token last layer with the full "
                                                                  "forward, per tiny size")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    recs = build_world(WorldConfig(size="default")).files["cheems_bench/human.jsonl"][: args.prompts]
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=3000)
    if args.last_token:
        result = {"machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
                  "responses": sum(len(r.responses) for r in recs), "batch_size": args.batch_size,
                  "sizes": last_token_rows(recs, tok, args.batch_size)}
        print(json.dumps(result, indent=2))
        OUT.mkdir(exist_ok=True)
        (OUT / "bench_scoring_last_token.json").write_text(json.dumps(result, indent=2))
        return
    model = build_tiny("tiny", tok, seed=0).eval()
    n = sum(len(r.responses) for r in recs)
    tokens = sum(len(encode_pair(tok, r.prompt, x.content)) for r in recs for x in r.responses)
    result = {"machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
              "responses": n, "mean_tokens": round(tokens / n, 1)}
    for label, bs in (("length-bucketed, batch %d" % args.batch_size, args.batch_size), ("one by one", 1)):
        scoring._ENCODED.clear()
        t = time.perf_counter()
        score_records(model, tok, recs, batch_size=bs)
        dt = time.perf_counter() - t
        result[label] = {"responses_per_s": round(n / dt, 1), "tokens_per_s": round(tokens / dt)}
    import tempfile

    from cheems_lib.models.score_output import ScoreOutput

    scoring._ENCODED.clear()
    with tempfile.TemporaryDirectory() as tmp:
        out = ScoreOutput(Path(tmp) / "s.jsonl", {"model": "bench"})
        t = time.perf_counter()
        score_records(model, tok, recs, batch_size=args.batch_size, on_batch=out.append)
        out.finish(recs)
        dt = time.perf_counter() - t
    result["length-bucketed, batch %d, streamed to a resumable file" % args.batch_size] = {
        "responses_per_s": round(n / dt, 1), "tokens_per_s": round(tokens / dt)}
    other_seed = build_tiny("tiny", tok, seed=1).eval()  # the tokenization of the row above is kept
    t = time.perf_counter()
    score_records(other_seed, tok, recs, batch_size=args.batch_size)
    dt = time.perf_counter() - t
    result["length-bucketed, batch %d, another seed's model (tokenization reused)" % args.batch_size] = {
        "responses_per_s": round(n / dt, 1), "tokens_per_s": round(tokens / dt)}
    seqs = [encode_pair(tok, r.prompt, x.content) for r in recs for x in r.responses]
    order = np.random.default_rng(0).permutation(len(seqs))
    t = time.perf_counter()
    with torch.inference_mode():
        for s in range(0, len(seqs), args.batch_size):
            ids, mask = pad_right([seqs[i] for i in order[s:s + args.batch_size]], tok.pad_token_id, "cpu")
            model(input_ids=ids, attention_mask=mask)
    dt = time.perf_counter() - t
    result["unsorted, batch %d" % args.batch_size] = {"responses_per_s": round(n / dt, 1), "tokens_per_s": round(tokens / dt)}
    if args.alternatives:
        result["alternatives (tokenization reused)"] = alternatives(recs, tok, args.batch_size)
    result["device"] = "cpu (this script times the CPU path only)"
    print(json.dumps(result, indent=2))
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_scoring.json").write_text(json.dumps(result, indent=2))


def last_token_rows(recs, tok, batch_size: int, repeats: int = 3) -> dict:
    """Per tiny size: forward-only seconds (best of ``repeats``, alternating) with the full forward and with the
    last layer at the read position only, the speed-up and the scores that differ (any bit)."""
    import contextlib

    from cheems_lib.models.reward_model import TINY_SIZES

    full_forward = lambda model: contextlib.nullcontext()  # noqa: E731 (what scoring did before)
    rows = {}
    for size in TINY_SIZES:
        model = build_tiny(size, tok, seed=0).eval()
        score_records(model, tok, recs, batch_size=batch_size)  # tokenize once, outside every timing
        best, scores = {}, {}
        for _ in range(repeats):
            for label, context in (("full forward", full_forward), ("last token", scoring.last_token_only)):
                real, scoring.last_token_only = scoring.last_token_only, context
                try:
                    t = time.perf_counter()
                    scores[label], _ = score_records(model, tok, recs, batch_size=batch_size)
                    best[label] = min(best.get(label, float("inf")), time.perf_counter() - t)
                finally:
                    scoring.last_token_only = real
        a, b = scores["full forward"], scores["last token"]
        rows[size] = {"layers": TINY_SIZES[size].layers, "full_forward_s": round(best["full forward"], 2),
                      "last_token_s": round(best["last token"], 2),
                      "speed_up": round(best["full forward"] / best["last token"], 2),
                      "scores_differing": sum(a[k] != b[k] for k in a), "scores": len(a)}
    return rows


def alternatives(recs, tok, batch_size: int) -> dict:
    """Forward-only time of each alternative on ``recs`` (tokenized already), beside the default, and the
    largest change of any score from the default's."""
    import torch

    def timed(model, bs):
        t = time.perf_counter()
        scores, _ = score_records(model, tok, recs, batch_size=bs)
        return time.perf_counter() - t, scores

    def fresh(attn):
        model = build_tiny("tiny", tok, seed=0).eval()
        model.config._attn_implementation = attn
        return model

    score_records(fresh("sdpa"), tok, recs, batch_size=batch_size)  # tokenize once, outside every row
    base_s, base = timed(fresh("sdpa"), batch_size)
    n = len(base)
    rows = {f"sdpa, batch {batch_size} (the default)": (base_s, base)}
    rows[f"eager attention, batch {batch_size}"] = timed(fresh("eager"), batch_size)
    for bs in (4 * batch_size, 8 * batch_size):
        rows[f"sdpa, batch {bs}"] = timed(fresh("sdpa"), bs)
    compiled = fresh("sdpa")
    compiled.forward = torch.compile(compiled.forward, dynamic=True)
    t = time.perf_counter()
    score_records(compiled, tok, recs[:8], batch_size=batch_size)
    warm = time.perf_counter() - t
    rows[f"torch.compile (dynamic shapes), batch {batch_size}, after a {warm:.1f} s warm-up"] = timed(compiled, batch_size)
    return {label: {"seconds": round(dt, 2), "responses_per_s": round(n / dt, 1), "speed-up": round(base_s / dt, 2),
                    "max_score_change": float(max(abs(s[k] - base[k]) for k in base))}
            for label, (dt, s) in rows.items()}


if __name__ == "__main__":
    main()
