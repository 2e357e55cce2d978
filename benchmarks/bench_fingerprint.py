"""What the score cache's fingerprints cost (cheems_lib.models.scoring: model_fingerprint, record_fingerprint).

`cheems score` fingerprints the model's files and every record before it scores, so a rerun
after retraining (or after a record's text changed) rescores instead of keeping stale scores.
This measures, side by side in one run:

- a checkpoint folder with one weight file of 64 MiB (hashed whole) and one of 1 GiB (over
  the 64 MiB limit: size, mtime and its first and last MiB), against reading each file once;
- 100,000 records of 5 responses (CheemsPreference-sized), fingerprinted.

Files are written with random bytes of a fixed seed into a temporary folder and removed.
"""
from __future__ import annotations

import os
import tempfile
import time
from pathlib import Path

import numpy as np

from cheems_lib.records import Record, Response
from cheems_lib.models.scoring import model_fingerprint, record_fingerprint


def _write(path: Path, mib: int, rng: np.random.Generator) -> None:
    with open(path, "wb") as fh:
        for _ in range(mib):
            fh.write(rng.bytes(1 << 20))


def _best(fn, repeat: int = 3) -> float:
    times = []
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return min(times)


def _read(path: Path) -> None:
    with open(path, "rb") as fh:
        while fh.read(1 << 24):
            pass


def main() -> None:
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory() as tmp:
        for mib in (64, 1024):
            folder = Path(tmp) / f"m{mib}"
            folder.mkdir()
            _write(folder / "model.safetensors", mib, rng)
            (folder / "config.json").write_text("{}")
            print(f"checkpoint with a {mib:>5} MiB weight file: model_fingerprint {_best(lambda: model_fingerprint(folder)):7.3f} s"
                  f" | reading the file once {_best(lambda: _read(folder / 'model.safetensors')):7.3f} s")
            for f in folder.iterdir():
                os.remove(f)
    words = [f"回答{i}" for i in range(1000)]
    recs = [Record(prompt=f"问题 {i} " + words[i % 1000] * 20, id=f"p{i}",
                   responses=[Response(f"r{j}", words[(i + j) % 1000] * 100) for j in range(5)])
            for i in range(100_000)]
    print(f"100,000 records x 5 responses: record_fingerprint {_best(lambda: [record_fingerprint(r) for r in recs]):.3f} s")


if __name__ == "__main__":
    main()
