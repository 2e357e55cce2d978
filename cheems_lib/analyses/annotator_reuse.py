"""Annotator reuse in Table 4's first comparison: does the human subset still beat the GPT subset when the benchmark's
annotator does not also label the human training subset?

In the simulated world one human annotator (:class:`cheems_lib.world.annotators.HumanAnnotator`, its parameters)
labels both the golden preference subset the human model trains on and CheemsBench, which scores it, so the
human model may win by learning the benchmark's annotator (its tie margin, its length preference) rather than
better preferences. The paper's annotators are one crowd too, but whether its result rests on that is what this
row asks. :func:`annotator_sweep` relabels the human training subset (the same prompts and responses) with
annotators whose preferences are drawn from the human prior of :mod:`cheems_lib.world.panels` (:data:`STREAM`;
:data:`DRAWN`, none equal to the benchmark annotator's) and whose noise is the benchmark annotator's, on the same
random stream: only what the annotator prefers changes, not how accurate its labels are. It re-tests the comparison
on the unchanged benchmark, against the same GPT-subset model; :func:`add_claim` records whether the verdict with the
benchmark's own annotator holds for every drawn one (claim :data:`CLAIM_ID`, kind *robustness*, decided by
:func:`cheems_lib.analyses.sensitivity.summarize`), and its sentence says what the comparison rests on and how much of
its size the shared annotator accounts for (paired over the same bootstrap draws). The rows share one noise draw, so
they are re-labellings of one sample, not independent repetitions.
"""
from __future__ import annotations

from dataclasses import fields, replace

from ..estimates import decide, mean_of
from ..world.annotators import HumanAnnotator
from ..world.panels import draw_panel
from ..world.simulation import human_labels, WorldConfig
from ..world_files import LAYOUT
from .claims import Claim
from .sensitivity import ASSUMPTIONS, CLAIM, difference, STATISTIC, summarize, sweep_frame, SweepConfig, TAB4

__all__ = ["ANNOTATOR", "CLAIM_ID", "STREAM", "DRAWN", "annotator_sweep", "drawn_annotators", "world_annotator",
           "add_claim"]

ANNOTATOR = ASSUMPTIONS["annotator"]
"""How the book names and draws this row (the x axis of :func:`cheems_lib.analyses.sensitivity.sweep_figure`)."""
CLAIM_ID = ANNOTATOR.claim_for(TAB4)
"""The robustness row's ledger id."""
STREAM = "table4-training-annotator"
"""The panel stream of the drawn annotators (independent of every other panel, :func:`cheems_lib.world.panels.draw_panel`)."""
DRAWN = ("tie_margin", "length_bias", "length_peak")
"""What a drawn annotator prefers, drawn apart from the benchmark's annotator; its noise is the benchmark's
(:func:`drawn_annotators`)."""


def _describe(a) -> str:
    return (f"shared noise {a.shared_noise:.2f}, noise {a.noise:.2f}, tie margin {a.tie_margin:.2f}, "
            f"length bias {a.length_bias:.2f} (peak {a.length_peak:.0f})")


def annotator_sweep(world, cfg: SweepConfig = SweepConfig(), *, annotators: int = 3, gpt_prompts: int = 0):
    """One row per annotator of the human training subset: 0 is the world's own (the benchmark's), 1 ..
    ``annotators`` are drawn from the human prior with the world's seed (:func:`drawn_annotators`). Each row is the
    human model minus the GPT model (the first ``gpt_prompts`` GPT-annotated prompts, default as many as human
    prompts: the 1 : 1 of the other chapters, so the row at 0 is the ratio sweep's 1 : 1 point and the zoo trains it
    once) on the world's own benchmark, with its ``annotator`` described. The relabelled subsets keep the world's
    prompts, responses and random stream; only the annotator's preferences change."""
    from tqdm.auto import tqdm

    human, gpt, own = world.human, world.gpt(gpt_prompts or len(world.human)), world_annotator(world)
    rows = [{"value": 0.0, "annotator": "the benchmark's own: " + _describe(own),
             **difference(world, human, gpt, world.bench, cfg)}]
    for i, drawn in enumerate(tqdm(drawn_annotators(own, seed=world.seed, size=annotators),
                                   desc="training annotators"), 1):
        relabelled = human_labels(WorldConfig(size=world.size, seed=world.seed, human=drawn),
                                  ("pref_human",))[LAYOUT["pref_human"]]
        if _texts(relabelled) != _texts(human):
            raise ValueError(f"the world's human subset ({len(human):,} prompts) is not the one a size-{world.size} "
                             f"world of seed {world.seed} simulates ({len(relabelled):,}): fix: simulate the world with "
                             f"`cheems simulate --size {world.size} --seed {world.seed}`")
        rows.append({"value": float(i), "annotator": "drawn: " + _describe(drawn),
                     **difference(world, relabelled, gpt, world.bench, cfg)})
    return sweep_frame(rows)


def _texts(records) -> list:
    return [(r.id, [(x.id, x.content) for x in r.responses]) for r in records]


def drawn_annotators(own: HumanAnnotator, *, seed: int, size: int) -> list[HumanAnnotator]:
    """``size`` annotators drawn from the human prior (:func:`cheems_lib.world.panels.draw_panel`, stream
    :data:`STREAM`) in what they prefer (:data:`DRAWN`: the tie margin and the length preference), with ``own``'s
    noise: the prior's noise ranges lie mostly above the benchmark annotator's, so drawing them too would make the
    relabelled subset worse as well as different, and a lower accuracy would not tell reuse from noise."""
    kept = {f.name: getattr(own, f.name) for f in fields(HumanAnnotator) if f.name not in DRAWN}
    return [replace(a, **kept) for a in draw_panel("human", seed=seed, size=size, stream=STREAM)]


def world_annotator(world):
    """The human annotator the simulated ``world`` was built with (its summary's config; the default otherwise)."""
    saved = ((world.summary or {}).get("config") or {}).get("human") or {}
    return HumanAnnotator(**{f.name: saved[f.name] for f in fields(HumanAnnotator) if f.name in saved})


def _size(sweep, base) -> str:
    """The benchmark's own annotator's difference minus the drawn ones' mean, paired (the same prompts, GPT model,
    training seeds and bootstrap draws), and what its verdict says; the range of the drawn ones where the sweep
    carries no estimates."""
    drawn = sweep[sweep["value"] > 0]
    lo, hi = float(drawn["estimate"].min()), float(drawn["estimate"].max())
    diffs = sweep.attrs.get("diffs") or {}
    if any(diffs.get(v) is None for v in sweep["value"]):
        return f"Its size: {float(base['estimate']):+.3f}, against {lo:+.3f} to {hi:+.3f} with the drawn ones."
    gap = diffs[0.0] - mean_of([diffs[v] for v in drawn["value"]])
    low, high = gap.interval()
    moved = {"supported": "raises", "contradicted": "lowers"}.get(decide(gap, "greater"))
    said = (f"sharing the benchmark's annotator {moved} it by {gap.value:+.3f} [{low:+.3f}, {high:+.3f}] (95% "
            "interval, paired)" if moved else f"the two are not separated ({gap.value:+.3f} [{low:+.3f}, {high:+.3f}], "
            "95% interval, paired)")
    return f"Its size: {float(base['estimate']):+.3f}, against {lo:+.3f} to {hi:+.3f} with the drawn ones; {said}."


def add_claim(ledger, sweep, *, reason: str | None = None) -> None:
    """Record :data:`CLAIM_ID`: does the verdict of ``tab4-human-beats-gpt`` with the benchmark's own annotator
    labelling the human training subset hold for every drawn annotator of ``sweep`` (:func:`annotator_sweep`)? Its
    sentence says what the 1 : 1 result rests on. ``sweep=None`` (real files, files missing): *untestable* with
    ``reason`` (default: :data:`ANNOTATOR`'s)."""
    claim = f"the verdict on '{CLAIM}' holds when annotators drawn apart from the benchmark's label the human subset"
    if sweep is None:
        says = {} if reason else {"inconclusive": ANNOTATOR.unswept_says}
        ledger.add(Claim.untestable(CLAIM_ID, "", claim, reason or ANNOTATOR.unswept_reason, link=ANNOTATOR.link,
                                    says=says))
        return
    verdict, base = summarize(sweep, 0.0)
    drawn = sweep[sweep["value"] > 0]
    k, held = len(drawn), int((drawn["verdict"] == base["verdict"]).sum())
    every = "; ".join(f"{r.verdict} ({r.estimate:+.3f})" for r in drawn.itertuples())
    own = f"with the benchmark's own annotator labelling the human subset the comparison is {base['verdict']}"
    ledger.add(Claim(
        CLAIM_ID, "", claim, "robustness", verdict, estimate=base["estimate"], ci_low=base["ci_low"],
        ci_high=base["ci_high"], seeds=base["seeds"], n=base.get("n"), link=ANNOTATOR.link,
        reason=f"a re-test of {TAB4} with its human training subset relabelled: it says whether that claim's verdict "
               "rests on the benchmark's annotator labelling the training subset too; not a claim of the paper",
        statistic=f"{STATISTIC}, with the benchmark's own annotator; re-tested with {k} drawn annotators",
        paper="the paper's human subset and benchmark are labelled by the same annotation team",
        says={"supported": f"The 1 : 1 verdict does not rest on annotator reuse: {own}, and each of {k} annotators "
                           f"drawn from the human prior gives the same verdict ({every}). {_size(sweep, base)}",
              "contradicted": f"The 1 : 1 verdict rests on annotator reuse: {own}, but annotators drawn from the human "
                              f"prior give {every}.",
              "inconclusive": f"The 1 : 1 verdict may rest on annotator reuse: {own}, and {held} of {k} annotators "
                              f"drawn from the human prior reach that verdict ({every})." if base["verdict"] !=
                              "inconclusive" else f"There is no definite 1 : 1 result to hold: {own}; with annotators "
                              f"drawn from the human prior: {every}."}))
