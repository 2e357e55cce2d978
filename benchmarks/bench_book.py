"""Book build speed: chapters run one at a time vs two at a time, and a rebuild with nothing
changed, side by side in one run (smoke profile, empty model zoo for each mode).

Usage: python benchmarks/bench_book.py [--profile smoke]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "out"
sys.path.insert(0, str(ROOT / "tests"))


def main():
    from conftest import copy_repo

    from cheems_lib.publishing.build import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="smoke", choices=["smoke", "default"])
    args = ap.parse_args()
    rows = []
    for jobs in (1, 2):
        with tempfile.TemporaryDirectory() as tmp:
            root = copy_repo(Path(tmp))
            start = time.perf_counter()
            build(args.profile, root=root, jobs=jobs, log=lambda s: None)
            first = time.perf_counter() - start
            start = time.perf_counter()
            build(args.profile, root=root, jobs=jobs, log=lambda s: None)
            again = time.perf_counter() - start
            rows.append({"jobs": jobs, "first_build_s": round(first, 1), "rebuild_nothing_changed_s": round(again, 1)})
            print(json.dumps(rows[-1]), flush=True)
    result = {"profile": args.profile, "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
              "runs": rows, "speedup_2_jobs": round(rows[0]["first_build_s"] / rows[1]["first_build_s"], 2)}
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_book.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
