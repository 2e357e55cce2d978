"""Calibration: the simulated world (or the real files) beside the paper's Tables 1 and 5.

The functions take the files of the spec §6 layout (``{layout path: records}``, as
:func:`cheems_lib.simulation.load_world` returns them), so the same code describes the
real CheemsBench files when a user has them. :func:`checks` lists every calibration
target of the simulator with its value and whether it is met; the tests and the book
both use it.
"""
from __future__ import annotations

import numpy as np

from .annotators import position_share
from .baselines import length_scores
from .metrics import evaluate_subset
from .paper import table
from .simulation import length_stats

__all__ = ["TABLE1_COLUMNS", "TABLE5_FILES", "table1", "paper_table1", "table5", "checks"]

# paper column -> layout path
TABLE1_COLUMNS = {
    "cheemsbench_open_prompt": "cheems_bench/open.jsonl",
    "cheemsbench_human_instruction": "cheems_bench/human.jsonl",
    "cheemspreference_gpt": "cheems_preference/gpt.jsonl",
    "cheemspreference_human": "cheems_preference/human.jsonl",
}
# (paper subset, annotator) -> layout path
TABLE5_FILES = {
    ("open_prompt", "human"): "cheems_bench/open.jsonl",
    ("human_instruction", "human"): "cheems_bench/human.jsonl",
    ("open_prompt", "gpt"): "cheems_bench_gpt/open.jsonl",
    ("human_instruction", "gpt"): "cheems_bench_gpt/human.jsonl",
}


def table1(files: dict, *, length_scale: float = 1.0):
    """Table 1's statistics of ``files`` in the paper's shape; lengths divided by ``length_scale``.

    ``comparisons_excluding_ties`` counts the pairs with different ranks (what the metrics
    compare); ``comparisons_per_prompt`` is added so counts of different sizes compare.
    """
    import pandas as pd

    cols = {}
    for col, path in TABLE1_COLUMNS.items():
        if path not in files:
            continue
        recs = files[path]
        st = length_stats(recs)
        cols[col] = {
            "prompts": len(recs), "responses_per_prompt": st["responses_per_prompt"],
            "comparisons_excluding_ties": st["comparisons_excluding_ties"],
            "comparisons_per_prompt": st["comparisons_excluding_ties"] / len(recs),
            "avg_chars_prompt": st["avg_chars_prompt"] / length_scale,
            "avg_chars_chosen": st["avg_chars_chosen"] / length_scale,
            "avg_chars_rejected": st["avg_chars_rejected"] / length_scale,
        }
    return pd.DataFrame(cols)


def paper_table1():
    """The paper's Table 1 with ``comparisons_per_prompt`` added."""
    paper = table("table1_statistics").set_index("statistic")
    paper.loc["comparisons_per_prompt"] = paper.loc["comparisons_excluding_ties"] / paper.loc["prompts"]
    return paper


def table5(files: dict):
    """Conflict ratios beside the paper's Table 5 (only rows whose file is present)."""
    import pandas as pd

    from .conflicts import conflict_stats

    paper = table("table5_conflict_ratio")
    rows = []
    for _, r in paper.iterrows():
        path = TABLE5_FILES[(r["subset"], r["annotator"])]
        if path in files:
            rows.append({"subset": r["subset"], "annotator": r["annotator"], "file": path,
                         "paper": r["conflict_ratio"], "ours": conflict_stats(files[path])["conflict_ratio"]})
    out = pd.DataFrame(rows)
    if len(out):
        out["difference"] = out["ours"] - out["paper"]
    return out


def checks(files: dict, *, length_scale: float = 1.0, truth: dict | None = None, sizes: dict | None = None) -> list[dict]:
    """Every calibration target: ``{"check", "target", "value", "ok"}`` per row.

    ``sizes`` (the simulator's prompt counts) enables the count-proportion check; ``truth``
    (``{(prompt_id, response_id): utility}``) enables the learnability check.
    """
    out = []

    def add(name, target, value, ok):
        out.append({"check": name, "target": target, "value": float(value), "ok": bool(ok)})

    for _, r in table5(files).iterrows():
        add(f"conflict ratio, {r['subset']} / {r['annotator']}", f"{r['paper']:.4f} ± 0.03", r["ours"],
            abs(r["ours"] - r["paper"]) <= 0.03)
    human = [rec for p in ("cheems_bench/open.jsonl", "cheems_bench/human.jsonl") if p in files for rec in files[p]]
    gpt = [rec for p in ("cheems_bench_gpt/open.jsonl", "cheems_bench_gpt/human.jsonl") if p in files for rec in files[p]]
    if human:
        v = position_share(human)
        add("human: share of decisions for the second-shown response", "0.50 ± 0.03", v, abs(v - 0.5) <= 0.03)
    if gpt:
        v = position_share(gpt)
        add("GPT: share of decisions for the second-shown response", "≥ 0.55", v, v >= 0.55)
    ours = table1(files, length_scale=length_scale)
    paper = paper_table1()
    for col in ours.columns:
        for stat in ("responses_per_prompt", "avg_chars_prompt", "avg_chars_chosen", "avg_chars_rejected"):
            p, v = paper.loc[stat, col], ours.loc[stat, col]
            tol = 0.1 if stat == "responses_per_prompt" else 0.15 * p
            add(f"Table 1 {stat}, {col}", f"{p:g} ± {tol:.3g}", v, abs(v - p) <= tol)
    if sizes:
        ratios = {col: sizes[col] / paper.loc["prompts", col] for col in ours.columns if col in sizes}
        groups = [("cheemsbench_open_prompt", "cheemsbench_human_instruction"), ("cheemspreference_gpt", "cheemspreference_human")]
        for a, b in groups:
            if a in ratios and b in ratios:
                rel = ratios[a] / ratios[b]
                add(f"prompt counts in Table 1's proportion, {a} : {b}", "1.00 ± 0.02", rel, abs(rel - 1) <= 0.02)
    for path in ("cheems_bench/open.jsonl", "cheems_bench/human.jsonl"):
        if path in files:
            acc = evaluate_subset(files[path], length_scores(files[path]), n_boot=0).accuracy
            add(f"longest-response baseline accuracy, {path}", "< 0.60", acc, acc < 0.60)
    if truth is not None and "cheems_preference/human.jsonl" in files:
        from .baselines import NgramProbe

        probe = NgramProbe().fit(files["cheems_preference/human.jsonl"], truth)
        for path in ("cheems_bench/open.jsonl", "cheems_bench/human.jsonl"):
            if path in files:
                acc = evaluate_subset(files[path], probe.score(files[path]), n_boot=0).accuracy
                base = evaluate_subset(files[path], length_scores(files[path]), n_boot=0).accuracy
                add(f"learnable: n-gram probe on clean labels beats length by ≥ 0.10, {path}",
                    f"≥ {base + 0.10:.3f}", acc, acc >= base + 0.10)
    return out
