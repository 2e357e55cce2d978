"""Benchmark `cheems simulate` at every size, pinned to one core.

Paper size is Table 1's full counts (27,861 + 3,260 + 2,492 prompts, about 178k responses,
every annotation written); the budget is 60 s on one core. Each size also records the
byte-identity of two runs with the same seed.

Usage: python benchmarks/bench_simulate.py [--sizes smoke default paper]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

OUT = Path(__file__).parent / "out"


def digest(d: Path) -> str:
    h = hashlib.sha256()
    for p in sorted(d.rglob("*")):
        if p.is_file():
            h.update(p.relative_to(d).as_posix().encode() + p.read_bytes())
    return h.hexdigest()


def run(size: str, target: Path) -> float:
    shutil.rmtree(target, ignore_errors=True)
    env = {**os.environ, "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    cmd = [sys.executable, "-m", "cheems_lib.cli", "simulate", "-o", str(target), "--size", size, "--seed", "0"]
    if shutil.which("taskset"):
        cmd = ["taskset", "-c", "0", *cmd]
    t = time.perf_counter()
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return time.perf_counter() - t


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", nargs="+", default=["smoke", "default", "paper"])
    args = ap.parse_args()
    OUT.mkdir(exist_ok=True)
    results = {}
    for size in args.sizes:
        a, b = OUT / f"world-{size}-a", OUT / f"world-{size}-b"
        wall = run(size, a)
        run(size, b)
        summary = json.loads((a / "summary.json").read_text())
        results[size] = {"wall_s_one_core": round(wall, 2),
                         "prompts": sum(f["prompts"] for p, f in summary["files"].items() if "bench_gpt" not in p),
                         "mb": round(sum(p.stat().st_size for p in a.rglob("*") if p.is_file()) / 2**20, 1),
                         "byte_identical": digest(a) == digest(b)}
        shutil.rmtree(b)
    print(json.dumps(results, indent=2))
    (OUT / "bench_simulate.json").write_text(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
