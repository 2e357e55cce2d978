"""The real profiles' cost: ``cheems book --profile real-smoke`` (what ``make test`` builds) beside
``--profile smoke`` on the simulated world, side by side in one run, each from an empty model zoo;
per chapter and in all. ``--with-real`` adds the full ``real`` profile (default settings on data/real).

Usage: python benchmarks/bench_real_profile.py [--with-real]
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import re
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "out"
sys.path.insert(0, str(ROOT / "tests"))


def _one(profile: str) -> dict:
    from conftest import copy_repo

    from cheems_lib.book import build

    logs: list[str] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = copy_repo(Path(tmp))
        start = time.perf_counter()
        build(profile, root=root, jobs=2, log=logs.append)
        total = time.perf_counter() - start
    chapters = {m[1]: float(m[2]) for line in logs if (m := re.match(r"\[cheems book\] (\w+): done in ([\d.]+) s", line))}
    return {"profile": profile, "total_s": round(total, 1), "chapters_s": chapters}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-real", action="store_true", help="also build the full real profile")
    args = ap.parse_args()
    load = os.getloadavg()[0]  # before: a loaded machine stretches every number
    rows = []
    for profile in ("smoke", "real-smoke") + (("real",) if args.with_real else ()):
        rows.append(_one(profile))
        print(json.dumps(rows[-1]), flush=True)
    result = {"cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(), "jobs": 2,
              "load_1min_before": load, "runs": rows}
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_real_profile.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
