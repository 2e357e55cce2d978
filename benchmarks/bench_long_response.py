"""Peak memory and time of `cheems score` on one very long response, texts cut before tokenizing vs not.

A record with one response of ``--mb`` MB (Chinese and English text, no line breaks) is scored
by a tiny reward model (``tiny-xs``, tokenizer trained on a smoke world, ``max_length`` 512)
through the command line, each run in a fresh process; its peak RSS comes from ``wait4``.

* ``cut`` is the code as it is: each text is cut to ``chat_encoding.text_budget`` characters
  before it is tokenized.
* ``whole`` is the old path, simulated by replacing ``text_budget`` with ``None`` (no cut): the
  whole text is tokenized, then the ids are cut to ``max_length``. It is run on ``--old-mb`` MB
  (default 5: the whole 50 MB takes about 10 GB and 90 s that way); pass ``--old-mb 50`` on a
  machine with the memory to spare.
* ``small`` scores a 1 KB response: what the interpreter, torch and the model take anyway.

Peak RSS is the scoring process's own (``wait4``): this script never imports torch and builds the
model in a child process of its own, because a forked child starts with its parent's pages
counted in its RSS.

The scores of the cut and whole runs on the same input must be equal.

Usage: python benchmarks/bench_long_response.py [--mb 50] [--old-mb 5] [--threads 1]
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
WHOLE = ("import sys; import cheems_lib.models.chat_encoding as enc; enc.text_budget = lambda tokenizer, max_length: None; "
         "from cheems_lib.cli import main; sys.exit(main(sys.argv[1:]))")


def _model(folder: Path) -> Path:
    """A tiny-xs reward model with a tokenizer trained on the smoke world, saved as a checkpoint."""
    from cheems_lib.models import reward_model as rm
    from cheems_lib.world.simulation import WorldConfig, build_world

    recs = build_world(WorldConfig(size="smoke", seed=0)).files["cheems_preference/human.jsonl"]
    tok = rm.train_tokenizer((t for r in recs for t in [r.prompt, *(x.content for x in r.responses)]),
                             vocab_size=3000, model_max_length=512)
    out = folder / "rm"
    rm.build_tiny("tiny-xs", tok, seed=0, max_length=512).save_pretrained(out)
    tok.save_pretrained(out)
    return out


def _data(path: Path, megabytes: float) -> Path:
    """One record whose first response is about ``megabytes`` MB of UTF-8 text."""
    unit = "这是一个非常长的回答，用来测试内存。It keeps going with English words too. "
    n = int(megabytes * 1e6 / len(unit.encode("utf-8"))) + 1
    rec = {"id": "long", "input": "请写一篇很长的文章。",
           "responses": [{"id": "long", "content": unit * n}, {"id": "short", "content": "好的。"}]}
    path.write_text(json.dumps(rec, ensure_ascii=False) + "\n", encoding="utf-8")
    return path


def _score(model: Path, data: Path, out: Path, *, whole: bool, threads: int) -> dict:
    """One `cheems score` in a fresh process: wall seconds, peak RSS (MB) and the scores."""
    head = [sys.executable, "-c", WHOLE] if whole else [sys.executable, "-m", "cheems_lib.cli"]
    cmd = [*head, "score", "--model", str(model), "--trust-head", "--data", str(data), "-o", str(out)]
    env = {**os.environ, "OMP_NUM_THREADS": str(threads), "PYTHONPATH": str(ROOT)}
    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.perf_counter() - t0
    stdout, stderr = proc.stdout.read(), proc.stderr.read()
    if os.waitstatus_to_exitcode(status) != 0:
        raise SystemExit(f"{' '.join(cmd)} failed:\n{stderr.decode()[-2000:]}")
    scores = {(d["prompt_id"], d["response_id"]): d["score"] for d in map(json.loads, out.read_text().splitlines())}
    out.unlink()
    out.with_name(out.name + ".cheems.json").unlink()
    return {"wall s": round(wall, 2), "peak RSS MB": round(usage.ru_maxrss / 1024), "scores": scores,
            "report": json.loads(stdout)}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=float, default=50, help="size of the long response (MB)")
    ap.add_argument("--old-mb", type=float, default=5, help="size given to the old path (whole texts tokenized)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--build-model", type=Path, help=argparse.SUPPRESS)  # the child that builds the model
    args = ap.parse_args()
    if args.build_model:
        _model(args.build_model)
        return
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        subprocess.run([sys.executable, __file__, "--build-model", str(tmp)], check=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT)})
        model = tmp / "rm"
        rows = {}
        for label, mb, whole in (("small (1 KB), cut", 0.001, False), (f"{args.old_mb:g} MB, cut", args.old_mb, False),
                                 (f"{args.old_mb:g} MB, whole (old path)", args.old_mb, True),
                                 (f"{args.mb:g} MB, cut", args.mb, False)):
            data = _data(tmp / f"d{mb}.jsonl", mb)
            rows[label] = _score(model, data, tmp / "s.jsonl", whole=whole, threads=args.threads)
        cut, old = rows[f"{args.old_mb:g} MB, cut"], rows[f"{args.old_mb:g} MB, whole (old path)"]
        same = cut["scores"] == old["scores"] and cut["report"]["truncated"] == old["report"]["truncated"]
        for label, row in rows.items():
            print(f"{label:28s} wall {row['wall s']:7.2f} s   peak RSS {row['peak RSS MB']:6d} MB   "
                  f"truncated {row['report']['truncated']}")
        print(f"cut and whole give the same scores and truncation count on {args.old_mb:g} MB: {same}")
        if not same:
            raise SystemExit(1)


if __name__ == "__main__":
    main()
