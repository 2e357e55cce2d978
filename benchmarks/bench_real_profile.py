"""What the real data adds to ``make test``, side by side in one run, per chapter and in all:

- the smoke book without the real chapter, from an empty model zoo;
- the whole smoke book (with the real chapter), from an empty model zoo;
- ``--profile real-smoke`` sharing the smoke book's zoo, as the test suite builds it
  (tests/conftest.py ``real_book``).

The addition is (smoke - smoke without real) + real-smoke. ``--with-real`` adds the full ``real``
profile (default settings on data/real) from an empty zoo.

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


def _one(profile: str, tmp: Path, name: str, chapters: list[str] | None = None, zoo_of: Path | None = None) -> dict:
    from conftest import copy_repo

    from cheems_lib.publishing.build import build

    logs: list[str] = []
    (tmp / name).mkdir()
    root = copy_repo(tmp / name)
    if zoo_of is not None:
        (root / "build").mkdir()
        (root / "build" / "zoo").symlink_to(zoo_of / "build" / "zoo", target_is_directory=True)
    start = time.perf_counter()
    build(profile, chapters, root=root, jobs=2, log=logs.append)
    total = time.perf_counter() - start
    times = {m[1]: float(m[2]) for line in logs if (m := re.match(r"\[cheems book\] (\w+): done in ([\d.]+) s", line))}
    return {"run": name, "profile": profile, "zoo": "shared with smoke" if zoo_of else "empty",
            "total_s": round(total, 1), "chapters_s": times, "root": root}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--with-real", action="store_true", help="also build the full real profile")
    args = ap.parse_args()
    load = os.getloadavg()[0]  # before: a loaded machine stretches every number
    from cheems_lib.publishing.chapters import CHAPTERS

    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        rows.append(_one("smoke", tmp, "smoke-without-real", [c.name for c in CHAPTERS if c.name != "real"]))
        rows.append(_one("smoke", tmp, "smoke"))
        rows.append(_one("real-smoke", tmp, "real-smoke", zoo_of=rows[-1]["root"]))
        if args.with_real:
            rows.append(_one("real", tmp, "real"))
        for row in rows:
            row.pop("root")
            print(json.dumps(row), flush=True)
    added = rows[1]["total_s"] - rows[0]["total_s"] + rows[2]["total_s"]
    result = {"cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(), "jobs": 2,
              "load_1min_before": load, "added_to_make_test_s": round(added, 1), "runs": rows}
    OUT.mkdir(exist_ok=True)
    (OUT / "bench_real_profile.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
