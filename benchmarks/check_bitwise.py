"""Hashes of what a code change must not move: a tiny reward model and a tiny judge trained on
smoke-world records (CPU, fixed seed), their saved weights, and their scores and verdicts.

Run it with two versions of the library and compare the printed JSON, e.g.
``git archive OLD | tar -x -C /tmp/old`` then ``PYTHONPATH=/tmp/old python benchmarks/check_bitwise.py``
and ``PYTHONPATH=. python benchmarks/check_bitwise.py``. Times nothing.

Usage: python benchmarks/check_bitwise.py [--prompts N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import tempfile
from pathlib import Path

import orjson


def sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()[:16]


def main():
    import torch

    from cheems_lib.models import judging, reward_model
    from cheems_lib.world import simulation
    try:
        from cheems_lib.world_files import load_world
    except ImportError:  # versions before the simulation split
        from cheems_lib.world.simulation import load_world
    from cheems_lib.models.scoring import score_records
    from cheems_lib.models.training import TrainConfig, train  # TrainConfig through the re-export: older versions run too

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=60)
    args = ap.parse_args()
    torch.set_num_threads(1)  # the thread count can change float reductions; fix it for both versions
    with tempfile.TemporaryDirectory() as tmp:
        files = load_world(simulation.ensure_world("smoke", 0, cache_dir=Path(tmp) / "worlds"))
        train_recs = files["cheems_preference/human.jsonl"][: args.prompts]
        bench = files["cheems_bench/human.jsonl"][: args.prompts]
        out = Path(tmp) / "rm"
        # a small token budget gives many optimisation steps on few records
        train(train_recs, TrainConfig(model="tiny-s", epochs=2, max_tokens_per_batch=1024, seed=0), out)
        model, tok = reward_model.load(out)
        scores, _ = score_records(model, tok, bench, batch_size=8)
        judge = judging.train_tiny_judge(train_recs, Path(tmp) / "judge", size="tiny-xs", max_pairs=60, epochs=1)
        jm, jt = judging.load_judge(judge)
        verdicts = judging.judge_records(jm, jt, bench[:10], max_length=768)
        result = {
            "reward model steps": len((out / "train_log.jsonl").read_text().splitlines()),
            "reward model weights": sha((out / "model.safetensors").read_bytes()),
            "reward model scores": sha(orjson.dumps(sorted([p, r, s] for (p, r), s in scores.items()))),
            "judge weights": sha((Path(judge) / "model.safetensors").read_bytes()),
            "judge verdicts": sha(orjson.dumps([[v.prompt_id, v.a, v.b, v.ab, v.ba] for v in verdicts])),
        }
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
