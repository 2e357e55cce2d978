"""Scoring throughput of the tiny reward model on CPU: length-bucketed batches vs one by one,
plus unsorted batches of the same size, the same batches streamed to a resumable score
file as `cheems score` does, and another training seed's model on the same records (its tokenizer
is the same, so the tokenization is reused: what the zoo does for a training set's seeds), in one
run (responses/s and real tokens/s). Every row but the last tokenizes from scratch.

Usage: python benchmarks/bench_scoring.py [--prompts N] [--batch-size N]
"""
from __future__ import annotations

import argparse
import json
import platform
import time
from pathlib import Path

import numpy as np

from cheems_lib.models.reward_model import build_tiny, encode_pair, train_tokenizer
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
    args = ap.parse_args()
    recs = build_world(WorldConfig(size="default")).files["cheems_bench/human.jsonl"][: args.prompts]
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=3000)
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

    from cheems_lib.models.scoring import ScoreOutput

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
    result["gpu"] = "not measured: no GPU was available to this session"
    print(json.dumps(result, indent=2))
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_scoring.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
