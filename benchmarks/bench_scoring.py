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

``--prefix`` compares, in one run and for the tiny sizes the book scores most, scoring each record's prompt once
(:mod:`cheems_lib.models.prefix_sharing`, the default) against forwarding every response whole, on CheemsBench
records (five responses a prompt) and Best-of-N samples (32 a prompt), tokenized once: seconds of each, the
speed-up, the share of tokens no longer forwarded and the largest score change.

Usage: python benchmarks/bench_scoring.py [--prompts N] [--batch-size N] [--threads N] [--alternatives] [--last-token]
       [--prefix]
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
    ap.add_argument("--prefix", action="store_true", help="only compare scoring each prompt once with forwarding every "
                                                           "response whole, per tiny size")
    args = ap.parse_args()
    if args.threads:
        torch.set_num_threads(args.threads)
    recs = build_world(WorldConfig(size="default")).files["cheems_bench/human.jsonl"][: args.prompts]
    tok = train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]), vocab_size=3000)
    if args.prefix:
        from cheems_lib.world.best_of_n import sample_candidates

        sets = {f"CheemsBench Human Instruction, {len(recs)} prompts": recs,
                "Best-of-N (human win-rate task), 100 prompts x 32 samples":
                    sample_candidates("human_win_rate", prompts=100, n=32, seed=0).records}
        result = {"machine": f"{platform.machine()}, {torch.get_num_threads()} threads, torch {torch.__version__}",
                  "batch_size": args.batch_size, "sets": {name: prefix_rows(r, tok, args.batch_size)
                                                          for name, r in sets.items()}}
        print(json.dumps(result, indent=2))
        OUT.mkdir(exist_ok=True)
        (OUT / "bench_scoring_prefix.json").write_text(json.dumps(result, indent=2))
        return
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


def prefix_rows(recs, tok, batch_size: int, repeats: int = 3, sizes=("tiny-xs", "tiny-s", "tiny")) -> dict:
    """Per tiny size: seconds (best of ``repeats``, alternating) of every response forwarded whole (sorted by length,
    batches of ``batch_size``, the last layer at the read position) and of each record's prompt once
    (:func:`cheems_lib.models.prefix_sharing.shared_scores`, prompts in batches of ``batch_size`` records and
    continuations in batches of ``2 * batch_size``, as
    :func:`score_records` runs it for records of at least ``scoring.SHARE_FROM`` responses), on ``recs`` tokenized
    beforehand."""
    import torch

    from cheems_lib.models.batching import forward_in_batches
    from cheems_lib.models.prefix_sharing import common_prefix, shared_scores

    pairs = [(r.prompt, x.content, r.sys_prompt) for r in recs for x in r.responses]
    keys = [(r.id, x.id) for r in recs for x in r.responses]
    encoded = scoring._encoded(tok, pairs, 2047)  # what score_records reuses
    items = sorted(zip(keys, encoded), key=lambda kv: len(kv[1]))
    by_record: dict[str, list] = {}
    for (rid, _), ids in zip(keys, encoded):
        by_record.setdefault(rid, []).append(ids)
    saved = sum(common_prefix(g) * (len(g) - 1) for g in by_record.values()) / sum(map(len, encoded))

    def whole(model):
        out = {}
        with scoring.last_token_only(model):
            for start, rewards in forward_in_batches(model, [t for _, t in items], tok.pad_token_id, batch_size,
                                                     lambda logits, mask: logits.squeeze(-1).float().tolist()):
                out.update({k: s for (k, _), s in zip(items[start:start + batch_size], rewards)})
        return out

    def once(model):  # every record's prompt once, whatever its responses (score_records does so from SHARE_FROM)
        groups: dict[str, list] = {}
        for key, ids in items:
            groups.setdefault(key[0], []).append((key, ids))
        with scoring.last_token_only(model):
            return {k: v for batch in shared_scores(model, list(groups.values()), tok.pad_token_id, batch_size,
                                                     continuations=2 * batch_size)
                    for k, v in batch.items()}

    rows = {}
    for size in sizes:
        model = build_tiny(size, tok, seed=0).eval()
        best, scores = {}, {}
        for _ in range(repeats):
            for label, run in (("whole", whole), ("prefix once", once)):
                t = time.perf_counter()
                with torch.inference_mode():
                    scores[label] = run(model)
                best[label] = min(best.get(label, float("inf")), time.perf_counter() - t)
        a, b = scores["whole"], scores["prefix once"]
        rows[size] = {"responses": len(a), "tokens_not_forwarded": round(saved, 3),
                      "every_response_whole_s": round(best["whole"], 2), "prompt_once_s": round(best["prefix once"], 2),
                      "speed_up": round(best["whole"] / best["prefix once"], 2),
                      "max_score_change": float(max(abs(a[k] - b[k]) for k in a))}
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
