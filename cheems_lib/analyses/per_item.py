"""Per-item results: one row per (model, prompt) of ``cheems evaluate --per-item FILE``, and the protocol beside it.

A summary (accuracy, exact match, Overall) hides which prompts a model gets wrong; a researcher who compares two
models prompt by prompt, or rechecks the summary, needs the items. :func:`rows` gives, for each prompt of a data
file, the counts the summary is built from (:func:`cheems_lib.metrics.prompt_outcomes`, the same call
:func:`cheems_lib.metrics.evaluate_subset` makes): the comparisons and how many the scores get right, exact match, the
tied gold pairs (not compared) and the compared pairs whose scores tie (counted wrong, :data:`PROTOCOL`), and every
ranked response's id, gold rank and score. :func:`summary` rebuilds each subset's macro accuracy and exact match
from the rows (the tests check that they equal ``cheems evaluate``'s). :func:`write` writes the rows as JSONL and
the protocol to ``FILE.cheems.json`` (:func:`protocol`: the tie rule, the view, macro and micro, each data file's
SHA-256 and each model's fingerprint from its score file's sidecar, ``unknown`` for a hand-made score file), each
atomically.
"""
from __future__ import annotations

import json
from itertools import combinations
from pathlib import Path
from typing import Mapping, Sequence

from ..conflicts import ordered_pairs
from ..fingerprint import file_hash
from ..metrics import lookup_scores, prompt_outcomes
from ..outputs import atomic_open
from ..records import Record, strict_pairs

__all__ = ["PROTOCOL", "COLUMNS", "rows", "leaderboard_rows", "summary", "model_fingerprint_of", "protocol",
           "chapter_protocol", "write"]

PROTOCOL = {
    "tie_rule": "a compared pair counts as correct only when the better-ranked response has the strictly higher "
                "score: equal scores are wrong (also for exact match)",
    "accuracy": "macro: per data file, the mean over top-level categories of (correct comparisons / comparisons) "
                "in the category; micro: correct comparisons / comparisons over the file",
    "exact_match": "per prompt with a comparison, whether every comparison is correct; macro over top-level "
                   "categories, micro over prompts",
    "overall": "the mean over data files of (macro accuracy + macro exact match) / 2",
    "tied_gold_pairs": "pairs of ranked responses with the same gold rank: not compared",
    "tied_score_pairs": "compared pairs whose two scores are equal: counted wrong by the tie rule",
}
"""How every number of a per-item file, and of the summary it rebuilds, is computed."""
COLUMNS = ("model", "subset", "prompt_id", "category", "comparisons", "correct", "exact_match", "tied_gold_pairs",
           "tied_score_pairs", "responses")
"""A row's keys, in order; ``responses`` is ``[{"id", "rank", "score"}]`` for the prompt's ranked responses."""


def rows(model: str, subset: str, records: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
         view: str = "layers", scores_path: str = "scores") -> list[dict]:
    """One row per prompt of ``records`` (the data file ``subset``) scored by ``model``'s ``scores``. ``exact_match``
    is None for a prompt with no comparison (it takes no part in exact match).

    >>> from cheems_lib.records import Response
    >>> r = Record(prompt="q", id="p", responses=[Response(i, "x") for i in "abc"], rank={"a": 0, "b": 1, "c": 1})
    >>> row = rows("m", "open", [r], {("p", "a"): 1.0, ("p", "b"): 1.0, ("p", "c"): 0.0})[0]
    >>> row["comparisons"], row["correct"], row["exact_match"], row["tied_gold_pairs"], row["tied_score_pairs"]
    (2, 1, False, 1, 1)
    """
    per_prompt = lookup_scores(records, scores, scores_path=scores_path)
    ranks = [rec.rank for rec in records]
    pairs = [ordered_pairs(rec, view="implied") for rec in records] if view == "implied" else None
    correct, total = prompt_outcomes(ranks, per_prompt, pairs=pairs)
    out = []
    for i, (rec, score) in enumerate(zip(records, per_prompt)):
        compared = pairs[i] if pairs is not None else strict_pairs(rec.rank)
        ranked = [r for r in rec.response_ids if r in rec.rank]
        out.append({"model": model, "subset": subset, "prompt_id": rec.id, "category": rec.top_category,
                    "comparisons": int(total[i]), "correct": int(correct[i]),
                    "exact_match": bool(correct[i] == total[i]) if total[i] else None,
                    "tied_gold_pairs": sum(rec.rank[a] == rec.rank[b] for a, b in combinations(ranked, 2)),
                    "tied_score_pairs": sum(score[a] == score[b] for a, b in compared),
                    "responses": [{"id": r, "rank": rec.rank[r], "score": score[r]} for r in ranked]})
    return out


def leaderboard_rows(scores_by_model: Mapping[str, Mapping | Sequence[Mapping]],
                     subsets: Mapping[str, Sequence[Record]], *, view: str = "layers") -> list[dict]:
    """The per-item rows of a leaderboard's models (``{name: scores}``, or a list of scores per training seed, as
    :func:`cheems_lib.analyses.leaderboard.evaluate_scores` takes them) on every subset: :func:`rows` per model and
    subset; a model trained with several seeds gives one model per seed, named ``<name> (seed <k>)``."""
    return [row for model, sc in _per_seed(scores_by_model) for sub, recs in subsets.items()
            for row in rows(model, sub, recs, sc, view=view)]


def _per_seed(scores_by_model: Mapping[str, Mapping | Sequence[Mapping]]) -> list[tuple[str, Mapping]]:
    """``(model name, scores)`` per model and training seed: ``<name> (seed <k>)`` where a model has several."""
    out = []
    for name, scores in scores_by_model.items():
        per_seed = [scores] if isinstance(scores, Mapping) else list(scores)
        out += [(name if len(per_seed) == 1 else f"{name} (seed {k})", sc) for k, sc in enumerate(per_seed)]
    return out


def summary(items: Sequence[Mapping]) -> dict[tuple[str, str], dict[str, float]]:
    """Per (model, subset): the macro ``accuracy`` and ``exact_match`` (over top-level categories, as
    :func:`cheems_lib.metrics.evaluate_subset`), the micro ones (over comparisons, and over prompts), and the count of
    prompts with a comparison, rebuilt from per-item ``items``."""
    groups: dict[tuple[str, str], dict[str, list]] = {}
    for row in items:
        if row["comparisons"]:
            groups.setdefault((row["model"], row["subset"]), {}).setdefault(row["category"], []).append(row)
    out = {}
    for key, cats in groups.items():
        acc = [sum(r["correct"] for r in rs) / sum(r["comparisons"] for r in rs) for rs in cats.values()]
        em = [sum(bool(r["exact_match"]) for r in rs) / len(rs) for rs in cats.values()]
        every = [r for rs in cats.values() for r in rs]
        out[key] = {"accuracy": sum(acc) / len(acc), "exact_match": sum(em) / len(em),
                    "micro_accuracy": sum(r["correct"] for r in every) / sum(r["comparisons"] for r in every),
                    "micro_exact_match": sum(bool(r["exact_match"]) for r in every) / len(every),
                    "prompts": len(every)}
    return out


def model_fingerprint_of(score_path: str | Path) -> str:
    """The model fingerprint ``cheems score`` recorded beside ``score_path`` (``SCORES.cheems.json``), else
    ``unknown`` (a score file written by hand or by another tool)."""
    sidecar = Path(score_path).with_name(Path(score_path).name + ".cheems.json")
    try:
        return str(json.loads(sidecar.read_text(encoding="utf-8")).get("model_fingerprint") or "unknown")
    except (OSError, ValueError, AttributeError):
        return "unknown"


def protocol(data: Sequence[str | Path], models: Mapping[str, str | Path], *, view: str) -> dict:
    """The sidecar of a per-item file: :data:`PROTOCOL`, the ``view`` of the compared pairs, each data file's
    SHA-256 and each model's score file and fingerprint (``models``: name -> score file)."""
    return {"protocol": PROTOCOL, "view": view, "columns": list(COLUMNS),
            "data": {str(p): file_hash(p) for p in data},
            "models": {name: {"scores": str(path), "scores_sha256": file_hash(path),
                              "model_fingerprint": model_fingerprint_of(path)} for name, path in models.items()}}


def chapter_protocol(data: Mapping[str, str | Path], models: Mapping[str, Mapping | Sequence[Mapping]], *,
                     view: str = "layers") -> dict:
    """The sidecar of a per-item file a chapter publishes: :data:`PROTOCOL`, the view, each data file's folder and
    name and SHA-256 (``data``: the subset -> its path) and the models by the names the rows give them
    (``models`` as :func:`leaderboard_rows` takes them: one per training seed), scored in the chapter itself, so
    without a score file whose sidecar would name their fingerprint."""
    return {"protocol": PROTOCOL, "view": view, "columns": list(COLUMNS),
            "data": {name: {"file": "/".join(Path(path).parts[-2:]), "sha256": file_hash(path)}
                     for name, path in data.items()},
            "models": {name: {"scores": "scored in the chapter", "model_fingerprint": "unknown"}
                       for name, _ in _per_seed(models)}}


def write(path: str | Path, items: Sequence[Mapping], sidecar: Mapping) -> None:
    """``items`` as JSONL at ``path`` and ``sidecar`` at ``path.cheems.json``, each replaced only when written
    whole (the sidecar last, so a sidecar always describes the file beside it)."""
    path = Path(path)
    with atomic_open(path, "w", encoding="utf-8") as f:
        for row in items:
            f.write(json.dumps(row, ensure_ascii=False) + "\n")
    with atomic_open(path.with_name(path.name + ".cheems.json"), "w", encoding="utf-8") as f:
        json.dump(sidecar, f, ensure_ascii=False, indent=2)
        f.write("\n")
