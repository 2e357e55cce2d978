"""The hidden quality of a simulated response (the paper's Tables 6-7).

A simulated model of strength ``s`` answers a task: its strength sets the chance of each
visible trait (right answer, harmful compliance, repetition, truncation, ...), and the traits
set a hidden utility on the paper's 0-5 quality scale (Table 7) through the 3H dimensions
(Table 6). :mod:`cheems_lib.world.corpus` renders the traits as Chinese text; the world
(:mod:`cheems_lib.world.simulation`), the comparators and Best-of-N draw responses from here.

It is kept apart from the world's subsets and files because it is one assumption, fitted to
no number (``assumed`` in :data:`cheems_lib.analyses.calibration.PARAMETERS`): changing it changes
every world.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..categories import CATEGORIES
from .corpus import Task, Traits, make_task, render_response

__all__ = ["TRAIT_LOGITS", "DETAIL_LEVELS", "DETAIL_P", "DETAIL_P_RANGE", "UtilityWeights", "UTILITY",
           "HELPFUL_WEIGHTS", "sample_traits", "utility", "components", "sample_response"]

# The assumed coefficients of a response's traits and utility (calibration.PARAMETERS: "assumed", shaped
# after Tables 6-7, no numeric target). Changing any of them changes every world.

TRAIT_LOGITS: dict[str, tuple[float, float]] = {
    "correct": (0.5, 1.5),
    "harmful": (-0.9, -1.6),  # drawn for every task, counts only on safety prompts
    "irrelevant": (-3.6, -1.0),
    "error": (-4.6, -1.0),
    "garbled": (-4.0, -1.5),
    "repetition": (-2.4, -1.0),
    "truncated": (-2.9, -1.0),
    "english": (-2.4, -1.2),
    "false_fact": (-2.8, -1.0),
    "highlight": (-1.5, 1.3),
}
"""``(intercept, slope)`` of each boolean trait: a model of strength ``s`` shows it with probability
``sigmoid(intercept + slope * s)``; positive slopes for good traits, negative for faults. The order is the
order of the uniform draws."""

DETAIL_LEVELS = 4
"""Most detail levels a response has: the level is ``Binomial(DETAIL_LEVELS, p)``."""
DETAIL_P = (0.45, 0.15)
"""``(intercept, slope)`` of the detail probability ``p = intercept + slope * strength``..."""
DETAIL_P_RANGE = (0.05, 0.95)
"""...clipped to this range so that every model can write short and long answers."""


@dataclass(frozen=True)
class UtilityWeights:
    """Weights of the hidden 0-5 utility (Table 7's scale) on the traits (see :func:`utility`)."""

    severe: float = 0.3
    """Utility of harmful compliance, collapsed text or an error message (Table 7: 0-1)."""
    irrelevant: float = 1.0
    """Utility of an answer to another question (Table 7: 1-2)."""
    base: float = 1.7
    """Utility of a relevant answer before its traits."""
    correct: float = 1.6
    """Bonus of the right answer (truthfulness)."""
    detail: float = 0.15
    """Bonus per detail level (helpfulness)."""
    highlight: float = 0.6
    """Bonus of a highlight (helpfulness)."""
    repetition: float = 0.9
    """Penalty of repeated text."""
    truncated: float = 1.1
    """Penalty of a cut-off answer."""
    english: float = 0.6
    """Penalty of switching to English."""
    false_fact: float = 0.7
    """Penalty of a false statement (truthfulness)."""
    low: float = 0.8
    """Lowest utility of a relevant answer: it stays above an irrelevant one's..."""
    high: float = 5.0
    """...and at most the top of the scale."""


UTILITY = UtilityWeights()
"""The weights :func:`utility` uses."""

HELPFUL_WEIGHTS = {"base": 0.5, "detail": 0.1, "highlight": 0.2, "repetition": 0.2, "truncated": 0.3, "english": 0.2}
"""Weights of truth.jsonl's ``helpful`` score in [0, 1] (bonuses, then penalties; see :func:`components`)."""


def _sigmoid(x: float) -> float:
    return 1.0 / (1.0 + np.exp(-x))


def sample_traits(task: Task, strength: float, rng: np.random.Generator) -> Traits:
    """Draw what a model of ``strength`` does on ``task`` (:data:`TRAIT_LOGITS`): stronger models err less."""
    u = rng.random(len(TRAIT_LOGITS))
    shown = {name: bool(x < _sigmoid(a + b * strength)) for x, (name, (a, b)) in zip(u, TRAIT_LOGITS.items())}
    shown["harmful"] = task.kind == "safety" and shown["harmful"]
    p = float(np.clip(DETAIL_P[0] + DETAIL_P[1] * strength, *DETAIL_P_RANGE))
    return Traits(**shown, detail=int(rng.binomial(DETAIL_LEVELS, p)))


def utility(tr: Traits) -> float:
    """Hidden quality on the 0-5 scale of Table 7, from the 3H dimensions of Table 6 (weights: :data:`UTILITY`).

    Severe errors (harmful compliance, text collapse, error message: harmlessness or
    basic helpfulness broken) score below 1; an irrelevant answer below 1.5; otherwise
    truthfulness (right answer, no false statement) and helpfulness (detail, a highlight,
    no repetition, no truncation, no code-switching) add up.
    """
    w = UTILITY
    if tr.harmful or tr.garbled or tr.error:
        return w.severe
    if tr.irrelevant:
        return w.irrelevant
    u = w.base + w.correct * tr.correct + w.detail * tr.detail + w.highlight * tr.highlight
    u -= w.repetition * tr.repetition + w.truncated * tr.truncated + w.english * tr.english + w.false_fact * tr.false_fact
    return float(np.clip(u, w.low, w.high))


def components(tr: Traits) -> dict:
    """The three H dimensions in [0, 1] and the visible traits, for truth.jsonl."""
    h = HELPFUL_WEIGHTS
    bonus = 0 if (tr.error or tr.garbled or tr.irrelevant) else h["base"] + h["detail"] * tr.detail + h["highlight"] * tr.highlight
    return {
        "harmless": 0.0 if tr.harmful else 1.0,
        "truthful": float(tr.correct and not tr.false_fact and not tr.irrelevant),
        "helpful": float(np.clip(bonus - h["repetition"] * tr.repetition - h["truncated"] * tr.truncated
                                 - h["english"] * tr.english, 0, 1)),
        "traits": [k for k in ("correct", "harmful", "irrelevant", "error", "garbled", "repetition", "truncated",
                               "english", "false_fact", "highlight") if getattr(tr, k)],
        "detail": tr.detail,
    }


def sample_response(task: Task, strength: float, verbosity: float, response_chars: float, length_scale: float,
                    rng: np.random.Generator) -> tuple[str, Traits]:
    """One response of a model (``strength``, ``verbosity``) to ``task``: its text and traits."""
    cats = list(CATEGORIES)
    mult = max(1, round(4 * length_scale))  # sentences per detail level grow with the length scale
    tr = sample_traits(task, strength, rng)
    tr.filler_chars = int(response_chars * length_scale * verbosity * rng.uniform(0.6, 1.2))
    other = make_task(cats[int(rng.integers(len(cats)))], rng) if tr.irrelevant else None
    return render_response(task, tr, rng, other=other, sentences_per_detail=mult), tr
