"""Encoding (prompt, response) pairs one at a time vs in one batch, and what it does to a whole
train + score of a tiny reward model, in one run.

1. The default world's benchmark (Open Prompt + Human Instruction, every response) encoded with
   ``encode_pair`` per pair, with ``encode_pairs`` at once rendering the chat template, and with ``encode_pairs``
   reusing that rendering (as another training set's tokenizer does), alternating, median of ``--repeats``; the
   ids must be equal.
2. ``--old SRC`` (a checkout of the library before the change, e.g. from ``git archive``):
   ``zoo.train_or_load`` on the human preference subset (2 epochs) + ``zoo.score_or_load`` on the
   benchmark, each in a fresh process and an empty zoo, old and new code alternating; the saved
   weights and the scores must hash the same.
3. ``--sizes``: the same train + score with this code for each tiny size.

Each train + score runs after a warm-up model in the same process (imports), as in the book.

Workers run with ``OMP_NUM_THREADS=1`` by default, as each of the book's two kernels does.
Times are given as wall and as CPU seconds of the process (``time.process_time``, every
thread): on a machine shared with other jobs the CPU seconds move much less than the wall.

Usage: python benchmarks/bench_encoding.py [--repeats N] [--old SRC] [--rounds N] [--sizes tiny-xs,tiny] [--threads N]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve()


def _world():
    from cheems_lib.world import simulation
    from cheems_lib import world_files

    files = world_files.load_world(simulation.ensure_world("default", 0))
    bench = files["cheems_bench/open.jsonl"] + files["cheems_bench/human.jsonl"]
    return files["cheems_preference/human.jsonl"], bench


def encoding(repeats: int) -> dict:
    """Part 1: one by one vs batched on every benchmark response, same tokenizer as training builds."""
    from cheems_lib.models import chat_encoding
    from cheems_lib.models import reward_model as rm
    from cheems_lib.models.training_config import TrainConfig

    human, bench = _world()
    cfg = TrainConfig()
    tok = rm.train_tokenizer((t for r in human for t in [r.prompt, *(x.content for x in r.responses)]),
                             vocab_size=cfg.tokenizer_vocab, model_max_length=cfg.max_length)
    items = [(r.prompt, x.content, r.sys_prompt) for r in bench for x in r.responses]
    def rendering_too():
        chat_encoding._RENDERED.clear()  # as a process's first tokenizer with this template
        return chat_encoding.encode_pairs(tok, items)

    ways = {"one by one (encode_pair)": lambda: [chat_encoding.encode_pair(tok, p, r, sys_prompt=s) for p, r, s in items],
            "batched (encode_pairs), rendering the template": rendering_too,
            # the same tokenizer with its rendering kept: what another training set's tokenizer pays (another
            # vocabulary, the same template and special tokens), up to its vocabulary's tokenizing speed
            "batched, the rendering reused": lambda: chat_encoding.encode_pairs(tok, items)}
    times = {k: {"wall": [], "cpu": []} for k in ways}
    for _ in range(repeats):
        got = []
        for label, way in ways.items():
            (wall, cpu), ids = _clock(way)
            times[label]["wall"].append(wall)
            times[label]["cpu"].append(cpu)
            got.append(ids)
        assert got[0] == got[1] == got[2], "encode_pairs differs from encode_pair"
    return {"pairs": len(items), "tokens": sum(map(len, got[1])), "identical ids": True,
            **{k: {f"median {m} s": round(statistics.median(v[m]), 3) for m in ("wall", "cpu")}
               for k, v in times.items()}}


def _clock(f):
    """((wall s, CPU s of this process), f())."""
    wall, cpu = time.perf_counter(), time.process_time()
    out = f()
    return (time.perf_counter() - wall, time.process_time() - cpu), out


def worker(size: str) -> None:
    """One train_or_load + score_or_load in an empty zoo; prints times and hashes as JSON.

    A small model on 40 prompts is trained and scored first: a process pays its imports
    once (the book's kernels train many models each), and that is reported apart.
    """
    import cheems_lib
    from cheems_lib.models import zoo
    from cheems_lib.models.training_config import TrainConfig

    human, bench = _world()
    with tempfile.TemporaryDirectory() as cache:
        warm, _ = _clock(lambda: zoo.score_or_load(
            zoo.train_or_load(human[:40], TrainConfig(model="tiny-xs", epochs=1), cache_dir=cache, name="warm"), bench[:40]))
        t_train, path = _clock(lambda: zoo.train_or_load(human, TrainConfig(model=size, epochs=2), cache_dir=cache))
        t_score, scores = _clock(lambda: zoo.score_or_load(path, bench))
        weights = hashlib.sha256((path / "model.safetensors").read_bytes()).hexdigest()[:16]
    blob = json.dumps(sorted([p, r, s] for (p, r), s in scores.items())).encode()
    print(json.dumps({"library": str(Path(cheems_lib.__file__).parent.parent), "size": size,
                      "warm-up wall s": round(warm[0], 1), "warm-up cpu s": round(warm[1], 1), "train wall s": round(t_train[0], 1), "train cpu s": round(t_train[1], 1),
                      "score wall s": round(t_score[0], 1), "score cpu s": round(t_score[1], 1), "responses": len(scores), "weights": weights,
                      "scores": hashlib.sha256(blob).hexdigest()[:16]}))


def run_worker(src: Path, size: str, threads: int) -> dict:
    env = {**os.environ, "PYTHONPATH": str(src), "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads)}
    out = subprocess.run([sys.executable, str(HERE), "--worker", size], env=env, capture_output=True, text=True,
                         check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--old", type=Path, help="library checkout before the change, for the whole train + score")
    ap.add_argument("--rounds", type=int, default=2, help="old/new alternations of the whole train + score")
    ap.add_argument("--sizes", default="", help="comma-separated tiny sizes to time with this code")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        return worker(args.worker)
    import torch

    new = HERE.parent.parent
    result = {"machine": f"{platform.machine()}, {os.cpu_count()} cores, torch {torch.__version__}, "
                         f"workers with {args.threads} torch thread(s)",
              "encoding": encoding(args.repeats)}
    if args.old:
        runs = {"old": [], "new": []}
        for _ in range(args.rounds):
            for label, src in (("old", args.old), ("new", new)):
                runs[label].append(run_worker(src, "tiny", args.threads))
        same = {r["weights"] for rs in runs.values() for r in rs}, {r["scores"] for rs in runs.values() for r in rs}
        keys = ("warm-up cpu s", "train wall s", "train cpu s", "score wall s", "score cpu s")
        result["whole train + score, tiny"] = {
            **{label: {k: [r[k] for r in rs] for k in keys} for label, rs in runs.items()},
            "identical weights and scores": len(same[0]) == 1 and len(same[1]) == 1}
    for size in filter(None, args.sizes.split(",")):
        r = run_worker(new, size, args.threads)
        result.setdefault("sizes", {})[size] = {k: v for k, v in r.items() if k.endswith(" s") or k == "responses"}
    print(json.dumps(result, indent=2, ensure_ascii=False))


if __name__ == "__main__":
    main()
