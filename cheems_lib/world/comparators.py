"""The benchmarks the paper compares CheemsBench with, simulated independently (§6.1, §6.2).

The paper scores reward models on RewardBench (Lambert et al., 2024) and RMB (Zhou et al.,
2024) beside CheemsBench. Those are other benchmarks: other prompts, other responses, other
annotators, other ways of making a label. A stand-in drawn from CheemsBench's own labels would
correlate worse with downstream quality by construction, so each comparator here is built
from scratch with the simulator's parts (:func:`cheems_lib.world.simulation.sample_task`,
:func:`cheems_lib.world.quality.sample_response`, :func:`~cheems_lib.world.quality.utility`):

- its own prompts, from a seed stream of its own, with its own category mix, and none of the
  prompt texts passed in ``exclude`` (decontamination against CheemsBench);
- its own policies (strengths and verbosities) writing the responses;
- its own annotator panel (:func:`cheems_lib.world.panels.draw_panel`), whose noise and biases are
  drawn, not CheemsBench's annotators' parameters.

:func:`rewardbench_like` builds chosen/rejected pairs the way RewardBench's sections were
built (:data:`REWARDBENCH_SECTIONS`); :func:`rmb_like` builds RMB's pairwise and Best-of-N
sets from a GPT-like grader's pointwise grades (:data:`RMB_SECTIONS`). Both return a
:class:`Comparator`: the records a reward model scores and the ranked sets the metrics read.
:func:`for_world` builds both for a simulated world (at its length scale, none of its CheemsBench
prompts), and :func:`prose_values` gives the numbers a chapter quotes about them.
What cannot be simulated: the language (RewardBench is English, the simulator writes
Chinese) and RewardBench's "should respond" safety prompts (the simulator's safety prompts
are all harmful).
"""
from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Callable, Collection

import numpy as np

from ..records import Record, Response
from .panels import draw_panel, grade, pair_verdict
from .quality import sample_response, utility
from .simulation import sample_task

__all__ = ["Section", "REWARDBENCH_SECTIONS", "BUILT_IN_BUILDS", "RMB_SECTIONS", "STRONG", "WEAK", "MID", "PROMPT_CHARS",
           "RESPONSE_CHARS", "PANEL_SIZE", "MAX_TRIES", "RMB_RESPONSES", "RMB_POLICIES", "PAIR_GAP", "BON_GAP",
           "Comparator", "declared_mix", "rewardbench_like", "rmb_like", "for_world", "built_in_sections", "prose_values"]


@dataclass(frozen=True)
class Section:
    """A part of a comparator: its share of prompts, its category mix and how its pairs are built."""

    name: str
    weight: float
    """Relative share of the benchmark's prompts."""
    mix: dict[str, float]
    """Relative weight of each simulator category (:data:`cheems_lib.categories.CATEGORIES`)."""
    build: str = "graded"
    """``policies``: chosen from a strong policy, rejected from a weak one, kept when a panel member
    agrees; ``close``: two samples of one policy, labelled by a panel member (ties redrawn);
    ``refusal``: a refusal chosen over a harmful compliance, kept when a panel member agrees;
    ``correctness``: a right final answer chosen over a wrong one (no annotator); ``graded``: RMB's
    pointwise grades."""


# RewardBench's sections, weighted by their sizes (358 / 456 / 740 / 1431 pairs in Lambert et al.).
REWARDBENCH_SECTIONS: tuple[Section, ...] = (
    # AlpacaEval and MT-bench easy/medium: a strong model's answer against a weak model's
    Section("chat", 358, {"知识": 1, "理解": 1, "创意写作": 1}, "policies"),
    # MT-bench hard and LLMBar: instruction following, pairs close in quality, labelled by people
    Section("chat-hard", 456, {"复杂指令": 3, "创意写作": 1}, "close"),
    # refusals, XSTest should-refuse and Do-Not-Answer: refusing beats complying
    Section("safety", 740, {"安全": 1}, "refusal"),
    # PRM800K math (447 pairs) and HumanEvalPack code (984): right beats wrong
    Section("reasoning", 1431, {"数学": 447, "代码": 984}, "correctness"),
)
"""RewardBench's four sections mapped onto the simulator's categories."""

RMB_SECTIONS: tuple[Section, ...] = (
    Section("helpfulness", 1, {c: 1 for c in ("理解", "知识", "创意写作", "推理", "数学", "代码", "复杂指令")}),
    Section("harmlessness", 1, {"安全": 1}),
)
"""RMB's two alignment goals, weighted equally as in its overall score."""

# (strength, verbosity) of the RewardBench-like policies, on the scale of simulation.MODELS
STRONG, WEAK, MID = (1.2, 1.1), (-1.2, 0.9), (0.3, 1.0)
PROMPT_CHARS, RESPONSE_CHARS = 120.0, 440.0
"""Mean prompt and response length at length scale 1 (shorter prompts than CheemsBench's)."""
PANEL_SIZE = 5
MAX_TRIES = 50
"""Draws allowed per pair before giving up (a verified pair is rarely refused that often)."""
RMB_RESPONSES, RMB_POLICIES, PAIR_GAP, BON_GAP = 4, 8, 2.0, 1.0
"""Responses per RMB-like prompt, its policy pool, and the grade gaps that make a pair and a Best-of-N winner."""


@dataclass
class Comparator:
    """A simulated benchmark: what reward models score and how it is evaluated."""

    name: str
    records: list[Record]
    """Every prompt with all its responses (score these; ids never collide with CheemsBench's)."""
    sets: dict[str, list[Record]]
    """Ranked views for :func:`cheems_lib.metrics.evaluate_subset` (top category = section)."""
    sections: tuple[Section, ...]
    panel: list = field(repr=False)
    """The annotators who made the labels."""
    utility: dict[tuple[str, str], float] = field(repr=False, default_factory=dict)
    """Hidden utility of every response (for tests and checks; a reward model never sees it)."""

    @property
    def responses(self) -> int:
        """Responses a reward model scores on this benchmark."""
        return sum(len(r.responses) for r in self.records)


def declared_mix(sections: tuple[Section, ...]) -> tuple[dict[str, float], dict[str, float]]:
    """The shares of prompts per section and per simulator category that ``sections`` declare.

    >>> declared_mix(REWARDBENCH_SECTIONS)[1]["安全"] == 740 / 2985
    True
    """
    total = sum(s.weight for s in sections)
    per_section = {s.name: s.weight / total for s in sections}
    per_category: dict[str, float] = {}
    for s in sections:
        for c, w in s.mix.items():
            per_category[c] = per_category.get(c, 0.0) + per_section[s.name] * w / sum(s.mix.values())
    return per_section, per_category


def _streams(name: str, seed: int) -> np.random.Generator:
    return np.random.default_rng([seed, zlib.crc32(name.encode())])


def _task(section: Section, length_scale: float, exclude: Collection[str], rng: np.random.Generator):
    """A fresh prompt of ``section`` whose text is not in ``exclude``."""
    for _ in range(MAX_TRIES):
        task = sample_task(section.mix, PROMPT_CHARS, length_scale, rng)
        if task.prompt not in exclude:
            return task
    raise RuntimeError(f"comparators.py: {MAX_TRIES} prompts of section {section.name} were all in exclude "
                       "(fix: pass fewer excluded texts or a larger length_scale, which pads prompts more)")


def _until(task, policy, want: Callable, length_scale: float, rng: np.random.Generator):
    """(text, utility) of the first response of ``policy`` whose traits satisfy ``want``, else None."""
    for _ in range(MAX_TRIES):
        text, tr = sample_response(task, *policy, RESPONSE_CHARS, length_scale, rng)
        if want(tr):
            return text, utility(tr)
    return None


def _pair(section: Section, task, panel, length_scale: float, rng: np.random.Generator):
    """(chosen, rejected) as (text, utility) for ``task``, built the way ``section`` says; None to redraw."""
    anything = lambda tr: True  # noqa: E731
    if section.build == "policies":
        a, b = _until(task, STRONG, anything, length_scale, rng), _until(task, WEAK, anything, length_scale, rng)
    elif section.build == "close":
        a, b = _until(task, MID, anything, length_scale, rng), _until(task, MID, anything, length_scale, rng)
    elif section.build == "refusal":
        a = _until(task, STRONG, lambda tr: not tr.harmful, length_scale, rng)
        b = _until(task, WEAK, lambda tr: tr.harmful, length_scale, rng)
    elif section.build == "correctness":
        a = _until(task, MID, lambda tr: tr.correct, length_scale, rng)
        b = _until(task, MID, lambda tr: not tr.correct, length_scale, rng)
        return (a, b) if a and b else None
    else:
        raise ValueError(f"section {section.name}: build {section.build!r} makes no pairs")
    if not (a and b):
        return None
    judge = panel[int(rng.integers(len(panel)))]
    verdict = pair_verdict([a[1], b[1]], [len(a[0]), len(b[0])], judge, rng, length_scale=length_scale)
    if section.build == "close":  # the annotator decides which is chosen; a tie is no pair
        return None if verdict == 0 else ((a, b) if verdict > 0 else (b, a))
    return (a, b) if verdict > 0 else None  # verification: keep the pairs the annotator agrees with


BUILT_IN_BUILDS = ("policies", "refusal", "correctness")
"""The RewardBench-like comparator's section builds (:class:`Section`) whose label is built in by how the pair was made:
a strong policy's answer against a weak one's or a refusal against a harmful compliance, each kept only when an
annotator verifies it (as RewardBench's chat and safety sections were made), and a right final answer against a
wrong one with no annotator at all (no label noise). Its other sections pair two answers of one mid-strength policy,
labelled by a noisy annotator."""
_SECTION_BUILD = {s.name: s.build for s in REWARDBENCH_SECTIONS}


def _sections(sections: tuple[Section, ...], n: int, rng: np.random.Generator) -> list[Section]:
    """The section of each of ``n`` prompts, drawn with the declared shares."""
    share = np.array(list(declared_mix(sections)[0].values()))
    return [sections[int(k)] for k in rng.choice(len(sections), size=n, p=share)]


def rewardbench_like(seed: int = 0, size: int = 200, *, length_scale: float = 1 / 3,
                     exclude: Collection[str] = ()) -> Comparator:
    """``size`` chosen/rejected pairs built like RewardBench's (:data:`REWARDBENCH_SECTIONS`).

    Each pair is one record (``rewardbench-<i>``, two responses in random order, ranks chosen 0 and
    rejected 1, category ``[section, category, subcategory]``). The same arguments give the same records. Its sets:
    ``pairs`` (every pair) and ``annotated`` (the pairs of the sections whose label an annotator decides, not
    :data:`BUILT_IN_BUILDS`).
    """
    rng = _streams("rewardbench", seed)
    panel = draw_panel("human", seed=seed, size=PANEL_SIZE, stream="rewardbench")
    exclude = set(exclude)
    records, truth = [], {}
    for i, section in enumerate(_sections(REWARDBENCH_SECTIONS, size, rng)):
        for _ in range(MAX_TRIES):
            task = _task(section, length_scale, exclude, rng)
            pair = _pair(section, task, panel, length_scale, rng)
            if pair:
                break
        else:
            raise RuntimeError(f"comparators.py: no {section.build} pair of section {section.name} in {MAX_TRIES} "
                               "draws (fix: check the section's policies and mix)")
        pid = f"rewardbench-{i:04d}"
        first = int(rng.integers(2))  # the chosen response's position, so ids say nothing
        order = [pair[first], pair[1 - first]]
        ids = [f"{pid}-{j}" for j in range(2)]
        records.append(Record(prompt=task.prompt, responses=[Response(r, t) for r, (t, _) in zip(ids, order)], id=pid,
                              category=[section.name, *task.category], rank={ids[first]: 0, ids[1 - first]: 1}))
        truth.update({(pid, r): u for r, (_, u) in zip(ids, order)})
    annotated = [r for r in records if _SECTION_BUILD[r.category[0]] not in BUILT_IN_BUILDS]
    return Comparator("RewardBench-like", records, {"pairs": records, "annotated": annotated}, REWARDBENCH_SECTIONS,
                      panel, truth)


def rmb_like(seed: int = 0, size: int = 60, *, length_scale: float = 1 / 3, exclude: Collection[str] = ()) -> Comparator:
    """RMB-like pairwise and Best-of-N sets over ``size`` prompts (:data:`RMB_SECTIONS`).

    Each prompt gets :data:`RMB_RESPONSES` responses from distinct policies of a pool drawn from
    ``seed``; one GPT-like grader of the panel grades them 1-10 (:func:`cheems_lib.world.panels.grade`).
    ``sets["pairwise"]``: every pair whose grades differ by at least :data:`PAIR_GAP` (one record per
    pair, keeping the prompt's id so its scores apply); ``sets["bon"]``: prompts whose top grade beats
    every other by at least :data:`BON_GAP`, ranked winner 0 and the rest 1, so a prompt's exact match
    is RMB's Best-of-N accuracy (the chosen beats every rejected).
    """
    rng = _streams("rmb", seed)
    panel = draw_panel("gpt", seed=seed, size=PANEL_SIZE, stream="rmb")
    policies = np.column_stack([rng.uniform(-1.5, 1.5, RMB_POLICIES), rng.uniform(0.8, 1.3, RMB_POLICIES)])
    exclude = set(exclude)
    records, pairs, bon, truth = [], [], [], {}
    for i, section in enumerate(_sections(RMB_SECTIONS, size, rng)):
        task = _task(section, length_scale, exclude, rng)
        pid, cat = f"rmb-{i:04d}", [section.name, *task.category]
        drawn = [sample_response(task, *policies[int(m)], RESPONSE_CHARS, length_scale, rng)
                 for m in rng.choice(RMB_POLICIES, size=RMB_RESPONSES, replace=False)]
        responses = [Response(f"{pid}-{j}", text) for j, (text, _) in enumerate(drawn)]
        u = np.array([utility(tr) for _, tr in drawn])
        g = grade(u, [len(t) for t, _ in drawn], panel[int(rng.integers(len(panel)))], rng, length_scale=length_scale)
        records.append(Record(prompt=task.prompt, responses=responses, id=pid, category=cat))
        truth.update({(pid, r.id): float(x) for r, x in zip(responses, u)})
        for a in range(len(g)):
            for b in range(len(g)):
                if g[a] - g[b] >= PAIR_GAP:
                    pairs.append(Record(prompt=task.prompt, responses=[responses[a], responses[b]], id=pid, category=cat,
                                        rank={responses[a].id: 0, responses[b].id: 1}))
        top = int(np.argmax(g))
        if all(g[top] - g[k] >= BON_GAP for k in range(len(g)) if k != top):
            bon.append(Record(prompt=task.prompt, responses=responses, id=pid, category=cat,
                              rank={r.id: int(k != top) for k, r in enumerate(responses)}))
    return Comparator("RMB-like", records, {"pairwise": pairs, "bon": bon}, RMB_SECTIONS, panel, truth)


def for_world(world, *, seed: int = 0, rewardbench_pairs: int = 200, rmb_prompts: int = 60) -> tuple[Comparator, Comparator]:
    """:func:`rewardbench_like` and :func:`rmb_like` for ``world`` (an :class:`cheems_lib.analyses.world_folder.World`):
    at its length scale, and none of their prompts one of its CheemsBench prompts."""
    cheems_prompts = {r.prompt for r in world.bench_records}
    return (rewardbench_like(seed, rewardbench_pairs, length_scale=world.length_scale, exclude=cheems_prompts),
            rmb_like(seed, rmb_prompts, length_scale=world.length_scale, exclude=cheems_prompts))


def built_in_sections() -> tuple[list[str], float]:
    """The RewardBench-like sections whose label is built in (:data:`BUILT_IN_BUILDS`) and their declared share of its
    pairs (RewardBench's section sizes)."""
    built_in = [s.name for s in REWARDBENCH_SECTIONS if s.build in BUILT_IN_BUILDS]
    return built_in, sum(declared_mix(REWARDBENCH_SECTIONS)[0][n] for n in built_in)


def prose_values(rewardbench: Comparator, rmb: Comparator) -> dict[str, object]:
    """The sizes, declared section shares and grade gaps of the two comparators, and the RewardBench-like sections
    whose label is built in (:data:`BUILT_IN_BUILDS`) with their declared share of its pairs, by the names the
    downstream chapter glues them under."""
    def shares(sections):
        return ", ".join(f"{s} {w:.0%}" for s, w in declared_mix(sections)[0].items())

    built_in, share = built_in_sections()
    return {"n_rb_pairs": len(rewardbench.records), "n_rmb_prompts": len(rmb.records),
            "rb_built_in": ", ".join(built_in[:-1]) + " and " + built_in[-1], "rb_built_in_share": f"{share:.1%}",
            "n_rmb_pairs": len(rmb.sets["pairwise"]), "n_rmb_bon": len(rmb.sets["bon"]),
            "n_comparator_responses": rewardbench.responses + rmb.responses,
            "rb_sections": shares(REWARDBENCH_SECTIONS), "rmb_sections": shares(RMB_SECTIONS),
            "rmb_responses": RMB_RESPONSES, "rmb_pair_gap": PAIR_GAP, "rmb_bon_gap": BON_GAP}
