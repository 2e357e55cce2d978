"""Book build speed: where a cold build's time goes, chapter by chapter, and a rebuild with nothing
changed, in one run (each mode in its own copy with an empty model zoo).

For every chapter: its wall time and, inside it, the time spent training (each model), scoring,
judging, Best-of-N and bootstraps. The chapters' kernels are timed from the outside: an IPython
start-up file (in a temporary IPYTHONDIR that only this benchmark's kernels see) wraps the library
functions below, so the library carries no timing code and the numbers come from the very kernels
the build runs. A call inside another timed call is counted once, for the outer one, so the phases
of a chapter never add up to more than its wall time; "other" is the rest (simulation, encoding,
tables, figures, imports).

Usage: python benchmarks/bench_book.py [--profile default|smoke] [--jobs 2 [1 ...]] [--chapter NAME ...]
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
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
OUT = Path(__file__).parent / "out"
sys.path.insert(0, str(ROOT / "tests"))

# (phase, "module:function"): the library's entry points for each kind of work
PHASES = [
    ("training", "cheems_lib.models.training:train"),
    ("training", "cheems_lib.models.judging:train_judge"),
    ("scoring", "cheems_lib.models.scoring:score_records"),
    ("judging", "cheems_lib.models.judging:judge_records"),
    ("best_of_n", "cheems_lib.world.best_of_n:sample_tasks"),
    ("best_of_n", "cheems_lib.world.best_of_n:sample_candidates"),
    ("best_of_n", "cheems_lib.world.best_of_n:regrade"),
    ("best_of_n", "cheems_lib.world.best_of_n:select_best"),
    ("best_of_n", "cheems_lib.world.best_of_n:length_controlled"),
    ("bootstrap", "cheems_lib.correlation:correlation"),
    ("bootstrap", "cheems_lib.metrics:evaluate_subset"),
    ("bootstrap", "cheems_lib.metrics:stratified_draws"),
    ("bootstrap", "cheems_lib.world.best_of_n:evaluate"),
    ("bootstrap", "cheems_lib.world.best_of_n:prompt_resamples"),
    ("bootstrap", "cheems_lib.estimates:ratio_estimate"),
    ("bootstrap", "cheems_lib.estimates:subset_estimate"),
    ("bootstrap", "cheems_lib.estimates:category_estimate"),
    ("bootstrap", "cheems_lib.estimates:p_value"),
]
COLUMNS = ["training", "scoring", "judging", "best_of_n", "bootstrap"]

# Run by every chapter kernel at start (IPython start-up file). It wraps each PHASES function in every
# loaded cheems_lib module that binds it (hoisted `from x import f` included) and appends one JSON line
# per outermost timed call to $CHEEMS_BENCH_PHASES; the chapter's name comes from check_parameters,
# the first call of every chapter.
STARTUP = r'''
import functools, importlib, json, os, sys, time
_phases = json.loads(os.environ["CHEEMS_BENCH_PHASE_LIST"])
_out = os.environ["CHEEMS_BENCH_PHASES"]
_state = {"chapter": None, "depth": 0}

def _write(line):
    with open(_out, "a", encoding="utf-8") as fh:
        fh.write(json.dumps(line) + "\n")

def _label(name, args, kwargs):
    if name == "train":
        cfg = args[1] if len(args) > 1 else kwargs.get("cfg")
        return f"{getattr(cfg, 'model', '?')} on {len(args[0])} prompts, {getattr(cfg, 'epochs', '?')} epochs"
    if name == "train_judge":
        return f"judge on {len(args[0])} examples"
    return ""

def _wrap(phase, fn):
    @functools.wraps(fn)
    def timed(*args, **kwargs):
        if _state["depth"]:
            return fn(*args, **kwargs)
        _state["depth"] += 1
        start = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            _state["depth"] -= 1
            _write({"pid": os.getpid(), "chapter": _state["chapter"], "phase": phase, "function": fn.__name__,
                    "seconds": time.perf_counter() - start, "label": _label(fn.__name__, args, kwargs)})
    timed.__cheems_bench__ = True
    return timed

def _install():
    wrapped = {}
    for phase, target in _phases:
        module, name = target.split(":")
        fn = getattr(importlib.import_module(module), name)
        wrapped[id(fn)] = _wrap(phase, fn)
    chapters = importlib.import_module("cheems_lib.publishing.chapters")
    check = chapters.check_parameters

    @functools.wraps(check)
    def named(chapter, *args, **kwargs):
        _state["chapter"] = chapter
        _write({"pid": os.getpid(), "chapter": chapter, "phase": "start", "seconds": 0.0})
        return check(chapter, *args, **kwargs)
    wrapped[id(check)] = named
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("cheems_lib"):
            for attr, value in list(vars(mod).items()):
                if id(value) in wrapped and not getattr(value, "__cheems_bench__", False):
                    setattr(mod, attr, wrapped[id(value)])

_install()
'''


def _ipython_dir(tmp: Path, phases_file: Path) -> dict[str, str]:
    """The environment that makes the build's kernels run :data:`STARTUP`."""
    startup = tmp / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    (startup / "00-cheems-bench.py").write_text(STARTUP, encoding="utf-8")
    return {"IPYTHONDIR": str(tmp / "ipython"), "CHEEMS_BENCH_PHASES": str(phases_file),
            "CHEEMS_BENCH_PHASE_LIST": json.dumps(PHASES)}


def chapter_table(logs: list[str], phases_file: Path) -> tuple[list[dict], list[dict]]:
    """Per chapter: wall time (from the build's log) and seconds per phase; and each trained model's time."""
    walls = {m.group(1): float(m.group(2)) for line in logs
             if (m := re.match(r"\[cheems book\] (\S+): done in ([\d.]+) s", line))}
    by = defaultdict(lambda: defaultdict(float))
    models = []
    lines = phases_file.read_text(encoding="utf-8").splitlines() if phases_file.exists() else []
    for row in map(json.loads, lines):
        if row["phase"] == "start":
            continue
        by[row["chapter"]][row["phase"]] += row["seconds"]
        if row["phase"] == "training":
            models.append({"chapter": row["chapter"], "model": row["label"], "seconds": round(row["seconds"], 1)})
    table = []
    for name, wall in sorted(walls.items(), key=lambda kv: -kv[1]):
        phases = {c: round(by[name][c], 1) for c in COLUMNS}
        n_models = sum(1 for m in models if m["chapter"] == name)
        table.append({"chapter": name, "wall_s": wall, **phases, "models_trained": n_models,
                      "other": round(wall - sum(phases.values()), 1)})
    return table, models


def markdown(table: list[dict]) -> str:
    head = ["chapter", "wall_s", *COLUMNS, "other", "models_trained"]
    rows = ["| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    rows += ["| " + " | ".join(str(r[h]) for h in head) + " |" for r in table]
    return "\n".join(rows)


def main():
    from conftest import copy_repo

    from cheems_lib.publishing.build import build

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--profile", default="default", choices=["smoke", "default", "real", "real-smoke"])
    ap.add_argument("--jobs", type=int, nargs="+", default=[2], help="chapters at once; one cold build each")
    ap.add_argument("--chapter", action="append", help="only these chapters (repeat; default: the whole book)")
    args = ap.parse_args()
    load_before, runs = os.getloadavg(), []
    for jobs in args.jobs:
        with tempfile.TemporaryDirectory() as tmp:
            tmp = Path(tmp)
            (tmp / "repo").mkdir()
            root = copy_repo(tmp / "repo")
            phases_file = tmp / "phases.jsonl"
            saved = {k: os.environ.get(k) for k in ("IPYTHONDIR", "CHEEMS_BENCH_PHASES", "CHEEMS_BENCH_PHASE_LIST")}
            os.environ.update(_ipython_dir(tmp, phases_file))
            logs: list[str] = []
            try:
                start = time.perf_counter()
                build(args.profile, args.chapter, root=root, jobs=jobs, log=logs.append)
                first = time.perf_counter() - start
                start = time.perf_counter()
                build(args.profile, args.chapter, root=root, jobs=jobs, log=lambda s: None)
                again = time.perf_counter() - start
            finally:
                for k, v in saved.items():
                    os.environ.pop(k, None) if v is None else os.environ.__setitem__(k, v)
            table, models = chapter_table(logs, phases_file)
            runs.append({"jobs": jobs, "cold_build_s": round(first, 1), "rebuild_nothing_changed_s": round(again, 1),
                         "chapters": table, "models": models})
            print(f"\n## {args.profile}, {jobs} chapter{'s' if jobs != 1 else ''} at a time: cold {first:.1f} s, rebuild {again:.1f} s\n")
            print(markdown(table), flush=True)
    result = {"profile": args.profile, "cpus": os.cpu_count(), "machine": platform.processor() or platform.machine(),
              "load_before": load_before, "runs": runs}
    OUT.mkdir(exist_ok=True)
    tmp_out = OUT / "bench_book.json.tmp"
    tmp_out.write_text(json.dumps(result, indent=2))
    tmp_out.replace(OUT / "bench_book.json")
    print(f"\nwritten: {OUT / 'bench_book.json'} (each trained model's time under 'models')")


if __name__ == "__main__":
    main()
