"""Peak memory and time of `cheems evaluate`'s bootstrap, replicates drawn in chunks vs all at once.

The bootstrap resamples prompts within each category. Drawn all at once, a stratum's resample indices are one
(replicates x prompts) integer array: memory grows with prompts x replicates. Drawn in chunks of whole rows
(`metrics.BOOT_CHUNK` indices at a time, each reduced to sums before the next), it stays bounded; the
replicates are the same numbers (numpy's generator gives the same stream drawn in row chunks), which the script
checks by comparing the two JSON outputs byte for byte. "All at once" is the same code with `BOOT_CHUNK` set
above any stratum's size, which is how the replicates were drawn before.

Each run is a fresh process running `cheems evaluate`, which reports its own peak resident memory
(`resource.getrusage(RUSAGE_SELF)`) on its last stderr line.

Usage: python benchmarks/bench_bootstrap.py [--prompts 5000] [--replicates 1000 100000]
"""
from __future__ import annotations

import argparse
import json
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CATEGORIES = ["数学", "代码", "安全", "理解", "创意写作", "知识", "推理", "角色扮演"]
RUN = ("import resource, sys, cheems_lib.metrics as m; m.BOOT_CHUNK = int(sys.argv.pop(1)); "
       "from cheems_lib.cli import main; rc = main(sys.argv[1:]); "
       "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, file=sys.stderr); sys.exit(rc)")


def write_data(folder: Path, prompts: int, seed: int = 0) -> tuple[Path, Path]:
    """A ranked benchmark file of ``prompts`` prompts (4 responses, 8 categories) and random scores for it."""
    rng = random.Random(seed)
    data, scores = [], []
    for p in range(prompts):
        ids = [f"r{k}" for k in range(4)]
        data.append({"id": f"p{p}", "input": f"问题 {p}", "category": [CATEGORIES[p % len(CATEGORIES)]],
                     "responses": [{"id": i, "content": f"回答 {p} {i}"} for i in ids],
                     "rank": {i: rng.randint(0, 2) for i in ids}})
        scores += [{"prompt_id": f"p{p}", "response_id": i, "score": rng.random()} for i in ids]
    (folder / "bench.jsonl").write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in data), encoding="utf-8")
    (folder / "scores.jsonl").write_text("".join(json.dumps(s) + "\n" for s in scores), encoding="utf-8")
    return folder / "bench.jsonl", folder / "scores.jsonl"


def run(chunk: int, data: Path, scores: Path, replicates: int) -> tuple[float, float, str]:
    """(peak MB, seconds, stdout) of one evaluate in a fresh process."""
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", RUN, str(chunk), "evaluate", "--data", str(data), "--scores",
                          str(scores), "--bootstrap", str(replicates)], capture_output=True, text=True, check=True)
    seconds = time.perf_counter() - start
    return int(out.stderr.strip().splitlines()[-1]) / 1024, seconds, out.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--prompts", type=int, default=5000)
    parser.add_argument("--replicates", type=int, nargs="+", default=[1000, 100000])
    args = parser.parse_args()
    from cheems_lib.metrics import BOOT_CHUNK

    with tempfile.TemporaryDirectory() as tmp:
        data, scores = write_data(Path(tmp), args.prompts)
        print(f"{args.prompts:,} prompts, 8 categories, 4 responses each")
        print("| replicates | chunked: peak MB | chunked: s | all at once: peak MB | all at once: s | same output |")
        print("| --- | --- | --- | --- | --- | --- |")
        for n in args.replicates:
            mb, s, out = run(BOOT_CHUNK, data, scores, n)
            mb_all, s_all, out_all = run(1 << 62, data, scores, n)
            print(f"| {n:,} | {mb:,.0f} | {s:.1f} | {mb_all:,.0f} | {s_all:.1f} | {out == out_all} |")


if __name__ == "__main__":
    main()
