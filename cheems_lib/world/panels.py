"""Annotator panels drawn independently of CheemsBench's annotators, and what Fig. 5's judges share with them.

A benchmark that CheemsBench is compared with, or a judge that rates Best-of-N picks, must
not share CheemsBench's annotator by construction, or the comparison is decided by the
simulator. A *panel* is a few annotators whose parameters are drawn uniformly from declared
ranges (:data:`RANGES`) with a seeded stream of their own: the ranges are a prior chosen to
bracket plausible values, never fitted to any claim. Each member is a
:class:`~cheems_lib.world.annotators.HumanAnnotator` or :class:`~cheems_lib.world.annotators.GPTAnnotator`,
so the functional form of the length preference (:func:`~cheems_lib.world.annotators.length_preference`)
is shared with CheemsBench's annotators; its parameters are not.

- :func:`draw_panel`: the panel of a named purpose (``stream``) and seed;
- :func:`pair_verdict`: a human-like member compares two responses (+1, -1, or 0 for a tie);
- :func:`grade`: a GPT-like member grades responses one at a time on a 1-10 scale;
- :func:`shared_parameters`: which parameter values two groups of annotators share;
- :func:`sharing_table`: the same for every group of judges against every benchmark's annotators.

Judge sharing (paper §6.2, Fig. 5): the downstream judges that grade Best-of-N picks are checked against every
benchmark's annotators, so a reader sees that no claim of Fig. 5 is decided by a judge that *is* an annotator:

- :func:`benchmark_annotators`: each benchmark's annotators (CheemsBench's from the world's config);
- :func:`judge_table`: :func:`sharing_table` plus :data:`SHARED_COLUMN`, the count shared with CheemsBench's
  annotators (every downstream judge is drawn on a stream of its own, so it is 0);
- :func:`judge_sharing` and :func:`sharing_sentences`: the chapter's sentences on what each kind of judge shares
  (:data:`WIN_RATE_JUDGES`, :data:`MT_JUDGE`).
"""
from __future__ import annotations

import zlib
from dataclasses import fields, replace
from typing import Mapping, Sequence

import numpy as np

from .annotators import GPTAnnotator, HumanAnnotator, length_preference

__all__ = ["RANGES", "draw_panel", "pair_verdict", "grade", "shared_parameters", "sharing_table",
           "benchmark_annotators", "judge_table", "SHARED_COLUMN", "judge_sharing", "sharing_sentences",
           "WIN_RATE_JUDGES", "MT_JUDGE"]

RANGES: dict[str, dict[str, tuple[float, float]]] = {
    # a prior over careful human raters: per-response perception noise, a per-judgement
    # noise, the gap called a tie, and the length preference's size and peak (characters)
    "human": {"shared_noise": (0.1, 0.6), "noise": (0.0, 0.3), "tie_margin": (0.2, 0.8),
              "length_bias": (0.0, 0.6), "length_peak": (40.0, 160.0)},
    # a prior over LLM graders; pointwise grading shows one response at a time, so no position bias
    "gpt": {"noise": (0.4, 1.0), "length_bias": (0.0, 1.0), "length_peak": (40.0, 160.0)},
}
"""Uniform range of every drawn parameter, per kind of annotator (a declared prior, not fitted). Each range holds
the benchmark annotator's own value of its kind (:class:`~cheems_lib.world.annotators.HumanAnnotator`,
:class:`~cheems_lib.world.annotators.GPTAnnotator`), so a drawn judge is neither more nor less of its kind by
construction; the draws never copy it (:func:`shared_parameters`)."""

_KINDS = {"human": HumanAnnotator, "gpt": GPTAnnotator}


def draw_panel(kind: str, *, seed: int, size: int, stream: str) -> list[HumanAnnotator | GPTAnnotator]:
    """``size`` annotators of ``kind`` (``human`` or ``gpt``), each parameter uniform in :data:`RANGES`.

    ``stream`` names the purpose (e.g. ``"rewardbench"``): panels of different purposes drawn
    with the same ``seed`` are independent, and the same (kind, seed, size, stream) gives the same panel.
    A GPT-like member's position bias is 0 (it grades one response at a time).
    """
    if kind not in _KINDS:
        raise ValueError(f"panel kind {kind!r}: use one of {list(_KINDS)}")
    if size < 1:
        raise ValueError(f"panel size {size}: need at least one annotator")
    rng = np.random.default_rng([seed, zlib.crc32(stream.encode()), zlib.crc32(kind.encode())])
    base = _KINDS[kind]() if kind == "human" else GPTAnnotator(position_bias=0.0)
    ranges = RANGES[kind]
    return [replace(base, **{k: float(rng.uniform(lo, hi)) for k, (lo, hi) in ranges.items()}) for _ in range(size)]


def pair_verdict(utility: Sequence[float], lengths: Sequence[float], judge: HumanAnnotator, rng: np.random.Generator,
                 *, length_scale: float = 1.0) -> int:
    """A human-like judge compares responses 0 and 1: +1 (0 is better), -1, or 0 (a tie).

    Each response is perceived once, ``u + N(0, shared_noise) + N(0, noise)``, plus the length
    preference relative to the pair's mean length; a perceived gap below ``tie_margin`` is a tie.
    """
    u, lens = np.asarray(utility, float), np.asarray(lengths, float)
    seen = u + rng.normal(0.0, judge.shared_noise, size=2) + rng.normal(0.0, judge.noise, size=2)
    seen = seen + length_preference(lens - lens.mean(), judge, length_scale)
    d = float(seen[0] - seen[1])
    return 0 if abs(d) < judge.tie_margin else (1 if d > 0 else -1)


def grade(utility: Sequence[float], lengths: Sequence[float], judge: GPTAnnotator, rng: np.random.Generator,
          *, length_scale: float = 1.0) -> np.ndarray:
    """A GPT-like judge's 1-10 grade of each response of one prompt, shown one at a time.

    ``round(2 * (u + length bonus) + N(0, sqrt(2) * noise))`` clipped to 1-10; the length bonus is
    relative to the prompt's median length. Two grades then differ by noise of standard deviation
    ``2 * noise``: one pairwise call's noise on the doubled scale.
    """
    u, lens = np.asarray(utility, float), np.asarray(lengths, float)
    bonus = length_preference(lens - np.median(lens), judge, length_scale)
    g = 2 * (u + bonus) + rng.normal(0.0, 2 * judge.noise / np.sqrt(2), size=len(u))
    return np.clip(np.round(g), 1, 10)


def shared_parameters(a: Sequence[HumanAnnotator | GPTAnnotator], b: Sequence[HumanAnnotator | GPTAnnotator]) -> list[str]:
    """Names of the parameters whose value some member of ``a`` shares with some member of ``b``
    (annotators of different kinds share none).

    >>> shared_parameters([HumanAnnotator()], [HumanAnnotator(noise=0.2)])
    ['shared_noise', 'tie_margin', 'length_bias', 'length_peak']
    """
    names = list(dict.fromkeys(f.name for cls in _KINDS.values() for f in fields(cls)))
    return [n for n in names if any(type(x) is type(y) and hasattr(x, n) and getattr(x, n) == getattr(y, n)
                                    for x in a for y in b)]


def sharing_table(judges: Mapping[str, Sequence], annotators: Mapping[str, Sequence | None]):
    """Judges x benchmarks DataFrame: the :func:`shared_parameters` of each group of ``judges`` with each
    benchmark's ``annotators``, comma-separated; ``none`` when they share none, ``real annotators:
    unknown`` where a benchmark's annotators are None (real labels, parameters unknown)."""
    import pandas as pd

    return pd.DataFrame({bench: {judge: ("real annotators: unknown" if ann is None else
                                         ", ".join(shared_parameters(members, ann)) or "none")
                                 for judge, members in judges.items()}
                         for bench, ann in annotators.items()})


def benchmark_annotators(world, rewardbench, rmb) -> dict[str, list | None]:
    """Each benchmark's annotators: CheemsBench's simulated human and GPT annotators (from the world's
    config; None for real files, whose annotators are unknown) and the comparators' panels."""
    config = (world.summary or {}).get("config", {})
    return {"CheemsBench (human)": [HumanAnnotator(**config["human"])] if "human" in config else None,
            "CheemsBench GPT": [GPTAnnotator(**config["gpt"])] if "gpt" in config else None,
            "RewardBench-like": rewardbench.panel, "RMB-like": rmb.panel}


def judge_table(judges: Mapping[str, Sequence], annotators: Mapping[str, Sequence | None]):
    """:func:`sharing_table` of the downstream ``judges`` against every benchmark's
    ``annotators``, plus :data:`SHARED_COLUMN`: how many parameter values each group of judges shares with
    CheemsBench's human and GPT annotators together (computed, summed over the two; 0 means drawn
    independently of both; ``unknown`` for real annotators)."""
    table = sharing_table(judges, annotators)
    cheems = [a for b, a in annotators.items() if b.startswith("CheemsBench")]
    table[SHARED_COLUMN] = ["unknown" if any(a is None for a in cheems) else
                            sum(len(shared_parameters(members, a)) for a in cheems) for members in judges.values()]
    return table


SHARED_COLUMN = "parameters shared with CheemsBench's annotators"
"""The column of :func:`judge_table` that counts what a downstream judge shares with CheemsBench's annotators."""


def judge_sharing(row: Mapping[str, str], *, who: str = "The win-rate judges") -> str:
    """The sentence on what ``who`` (a group of downstream judges) shares: ``row`` is its row of
    :func:`sharing_table` (or :func:`judge_table`, whose count column is skipped)."""
    shared = {b: v for b, v in row.items() if b != SHARED_COLUMN and v not in ("none", "real annotators: unknown")}
    verb = "shares" if who.startswith("The MT") or not who.endswith("s") else "share"
    if not shared:
        return f"{who} {verb} no parameter value with any benchmark's annotators, only the world."
    return f"{who} {verb} " + "; ".join(f"{v} with {b}" for b, v in shared.items()) + "."


def sharing_sentences(sharing) -> dict[str, str]:
    """The chapter's sentences on what each kind of downstream judge shares (``sharing``: :func:`judge_table`)."""
    return {"judge_sharing": judge_sharing(sharing.loc[WIN_RATE_JUDGES]),
            "mt_judge_sharing": judge_sharing(sharing.loc[MT_JUDGE], who="The MT-bench-like judge")}


WIN_RATE_JUDGES = "Human win rate (judge panel)"
MT_JUDGE = "MT-bench-like grade (GPT-like judge)"
"""The rows of :func:`judge_table` for the two kinds of downstream judge
(:attr:`cheems_lib.analyses.downstream_population.Setting.judges`)."""
