"""What the caches' content fingerprints cost (cheems_lib.fingerprint.file_hash, which the book's chapter cache,
publishing.execute.cache_key, and the score cache, models.score_output.model_fingerprint, key files by; and
models.score_output.record_fingerprint).

Side by side in one run, for each hash candidate available without a new dependency (hashlib sha256 in 256
KiB chunks read into one buffer, the library's; blake2b the same way; hashlib.file_digest with sha256):

- the largest shipped data files (data/real; each under FULL_HASH_BYTES, so hashed on every run), beside what
  the old key read (a stat: size and mtime);
- a 500 MiB checkpoint-like file of random bytes (over FULL_HASH_BYTES): the first run (no hash cache entry:
  hashed, then stored) and a cached run (a stat and a read of the hash cache);

then, with the library's hash: model_fingerprint of a checkpoint folder holding the 500 MiB file (first and
cached run), the big file's cached run with the hash cache full (MAX_ENTRIES entries), cache_key of the
human-scores chapter on its data/real defaults, and 100,000 records of 5 responses (CheemsPreference-sized)
fingerprinted.

Medians of 5 runs (3 for a first run of the 500 MiB file); files are in the page cache (just written or read).
The big file (random bytes, fixed seed) and the hash cache live in a temporary folder, removed at the end; the
user's own hash cache is not touched.
"""
from __future__ import annotations

import hashlib
import json
import os
import statistics
import tempfile
import time
from pathlib import Path

import numpy as np

from cheems_lib import fingerprint
from cheems_lib.models.score_output import model_fingerprint, record_fingerprint
from cheems_lib.publishing import execute
from cheems_lib.records import Record, Response

ROOT = Path(__file__).resolve().parents[1]
DATA = ["data/real/writingpref/writingpref_zh.jsonl.xz", "data/real/cheems_preference.jsonl",
        "data/real/llmzoo/review_output.jsonl", "data/real/cheems_bench/open.jsonl"]
BIG_MIB = 500


def _file_digest(path) -> str:
    with open(path, "rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


LIBRARY = fingerprint._hash_file
CANDIDATES = {"sha256, 256 KiB chunks (the library's)": ("sha256", LIBRARY),
              "blake2b, 256 KiB chunks": ("blake2b", LIBRARY),
              "hashlib.file_digest(sha256)": ("sha256", _file_digest)}
"""name -> (fingerprint.ALGORITHM, fingerprint._hash_file) for the run: the hash cache checks a cached hash's
length against ALGORITHM's."""


def _median(fn, repeat: int = 5, before=None) -> float:
    times = []
    for _ in range(repeat):
        if before is not None:
            before()
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times)


def _ms(s: float) -> str:
    return f"{s * 1e3:.3f} ms" if s < 0.01 else f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s"


def _write(path: Path, mib: int) -> None:
    rng = np.random.default_rng(0)
    with open(path, "wb") as fh:
        for _ in range(mib):
            fh.write(rng.bytes(1 << 20))


def main() -> None:
    data = [ROOT / p for p in DATA if (ROOT / p).is_file()]
    for p in data:
        p.read_bytes()  # into the page cache
    rows = []
    with tempfile.TemporaryDirectory(prefix="cheems-bench-fingerprint-") as tmp:
        ckpt = Path(tmp) / "rm"
        ckpt.mkdir()
        big = ckpt / "model.safetensors"
        _write(big, BIG_MIB)
        (ckpt / "config.json").write_text("{}")
        time.sleep(fingerprint.RACY_NS / 1e9 + 0.2)  # a file written just now is never cached (fingerprint.RACY_NS)
        cache = Path(tmp) / "file_hashes.json"
        os.environ[fingerprint.CACHE_ENV] = str(cache)
        forget = lambda: cache.unlink(missing_ok=True)  # noqa: E731
        try:
            stat_only = {p: _median(lambda p=p: os.stat(p)) for p in data + [big]}
            for name, (algorithm, candidate) in CANDIDATES.items():
                fingerprint.ALGORITHM, fingerprint._hash_file = algorithm, candidate
                for p in data:
                    t = _median(lambda p=p: fingerprint.file_hash(p))
                    rows.append((name, p.relative_to(ROOT).as_posix(), p.stat().st_size, t, t, stat_only[p]))
                cold = _median(lambda: fingerprint.file_hash(big), repeat=3, before=forget)
                assert cache.is_file(), "the big file's hash was not cached"
                warm = _median(lambda: fingerprint.file_hash(big))
                rows.append((name, f"{BIG_MIB} MiB checkpoint-like file", big.stat().st_size, cold, warm, stat_only[big]))
            fingerprint.ALGORITHM, fingerprint._hash_file = "sha256", LIBRARY
            forget()
            model_cold = _median(lambda: model_fingerprint(ckpt), repeat=3, before=forget)
            model_warm = _median(lambda: model_fingerprint(ckpt))
            entries = json.loads(cache.read_bytes())  # the hash cache at its size limit: MAX_ENTRIES entries
            entries["files"] |= {f"0:{i}": {"stat": [1, 2, 3], "sha256": "0" * 64, "path": f"{tmp}/{'x' * 60}{i}"}
                                 for i in range(fingerprint.MAX_ENTRIES - len(entries["files"]))}
            cache.write_text(json.dumps(entries))
            full_warm = _median(lambda: fingerprint.file_hash(big))
        finally:
            os.environ.pop(fingerprint.CACHE_ENV)
            big.unlink()

    print("| hash | file | size | first run (no cached hash) | cached run | MB/s (first run) | old key: stat only |")
    print("| --- | --- | --- | --- | --- | --- | --- |")
    for name, what, size, cold, warm, stat in rows:
        print(f"| {name} | {what} | {size / 1e6:.2f} MB | {_ms(cold)} | {_ms(warm)} | {size / 1e6 / cold:,.0f} "
              f"| {_ms(stat)} |")
    print()
    print(f"model_fingerprint, checkpoint folder with the {BIG_MIB} MiB file: first run {_ms(model_cold)}, "
          f"cached run {_ms(model_warm)}")
    print(f"the {BIG_MIB} MiB file's cached run with the hash cache full ({fingerprint.MAX_ENTRIES} entries): "
          f"{_ms(full_warm)}")
    source = ROOT / "notebooks/human_labels.md"
    declared = execute.parameters_of(source)
    files = execute.input_files(execute._defaults(declared), declared, ROOT)
    print(f"cache_key of the human-scores chapter on its data/real defaults ({len(files)} files, "
          f"{sum(f.stat().st_size for f in files) / 1e6:.1f} MB): {_ms(_median(lambda: execute.cache_key(source, {}, ROOT)))}"
          f", of which hashing its data files {_ms(_median(lambda: [fingerprint.file_hash(f) for f in files]))}"
          f" (the old key's stats: {_ms(_median(lambda: [f.stat() for f in files]))})")
    words = [f"回答{i}" for i in range(1000)]
    recs = [Record(prompt=f"问题 {i} " + words[i % 1000] * 20, id=f"p{i}",
                   responses=[Response(f"r{j}", words[(i + j) % 1000] * 100) for j in range(5)])
            for i in range(100_000)]
    print(f"100,000 records x 5 responses: record_fingerprint {_ms(_median(lambda: [record_fingerprint(r) for r in recs], repeat=3))}")


if __name__ == "__main__":
    main()
