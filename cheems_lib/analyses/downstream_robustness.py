"""Robustness of Fig. 5's claims (paper §6.2): the chapter's robustness section and the shared-noise sweep.

:func:`add_robustness` runs the robustness section after Fig. 5's claims
(:func:`cheems_lib.analyses.downstream_correlation.add_claims`; :func:`add_claims_and_controls` runs the two): the
controls of :mod:`cheems_lib.analyses.downstream_controls` (equal size, length-controlled Best-of-N, judge identity)
and the claims across the humans' assumed shared noise; :func:`add_untestable_claims` lists every claim of Fig. 5,
robustness rows included, as untestable where the population cannot run.

The simulator's human annotators perceive each response with a noise shared across annotators, a value the paper
does not give. Whether Fig. 5's two main claims hold across it is tested cheaply: CheemsBench's same prompts and
responses are re-annotated at each value (:func:`cheems_lib.world.simulation.human_labels`) and the models' kept
scores are evaluated on the new labels (:func:`relabeled`); nothing is trained or scored again.
:func:`noise_sweeps` computes each claim of :data:`NOISE_TARGETS` at each value, :func:`add_noise_claims` adds one
*robustness* claim per swept claim (:func:`cheems_lib.analyses.sensitivity.add_sweep_claim`), and
:func:`noise_figure` and :func:`noise_table` show the sweep.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, Mapping, Sequence

from ..records import Record
from ..world.best_of_n import length_controlled, regrade, TASK_LABELS
from ..world.simulation import human_labels, WorldConfig
from ..world_files import LAYOUT
from .claims import Claim
from .downstream_claims import (CHEEMSBENCH_BEST_CLAIM, cheemsbench_best_claim, chinese_and_english_claim,
                                claim_statistic, EVERY_TASK_CLAIM, EVERY_TASK_QUOTE, HUMAN_BEATS_GPT_CLAIM,
                                human_beats_gpt_claim, undecided_text)
from .downstream_controls import add_controls, CONTROL_CLAIMS, EQUAL_SIZE_DRAWS, equal_size_table
from .downstream_correlation import add_claims, comparisons, task_average
from .downstream_population import benchmark_table, pair_counts, Scores, Setting
from .sensitivity import add_sweep_claim, sweep_figure, Target

__all__ = ["add_claims_and_controls", "add_robustness", "Robustness", "noise_figure", "noise_table",
           "add_untestable_claims", "noise_sweeps", "add_noise_claims", "NOISE_TARGETS", "relabeled"]


def add_claims_and_controls(ledger, scores: Scores, world, setting: Setting, *, shared_noise: Sequence[float],
                            n_boot: int = 1000, seed: int = 0, seeds: int = 1) -> Robustness:
    """Fig. 5's claims (:func:`cheems_lib.analyses.downstream_correlation.add_claims`), then their controls on the
    same picks (:func:`add_robustness`, with ``setting``'s tasks and benchmark annotators)."""
    add_claims(ledger, scores, n_boot=n_boot, seed=seed, seeds=seeds)
    return add_robustness(ledger, scores, world, setting.tasks, setting.annotators, shared_noise=shared_noise,
                          n_boot=n_boot, seed=seed, seeds=seeds)


def add_robustness(ledger, scores: Scores, world, tasks: Mapping, annotators: Mapping[str, Sequence | None], *,
                   shared_noise: Sequence[float], n_boot: int = 1000, seed: int = 0, seeds: int = 1) -> Robustness:
    """The controls of Fig. 5's claims, after :func:`cheems_lib.analyses.downstream_correlation.add_claims`: on the
    same picks, nothing scored again, the length-controlled outcomes and the old judge identity (the MT-bench-like task
    re-graded by CheemsBench's GPT annotator, :func:`cheems_lib.analyses.downstream_controls.add_controls`);
    CheemsBench at each comparator's size; each metric and task alone; and the humans' assumed shared noise
    (CheemsBench's same responses re-annotated at each of ``shared_noise`` and the world's own value, the models'
    scores re-evaluated, :func:`add_noise_claims`)."""
    cheems_gpt = annotators["CheemsBench GPT"]
    identity = ({TASK_LABELS["mt_bench_sim"]: regrade(tasks["mt_bench_sim"], gpt=cheems_gpt[0]).outcome}
                if cheems_gpt else None)
    controlled = {TASK_LABELS[t]: length_controlled(c) for t, c in tasks.items()}
    add_controls(ledger, scores, length_controlled=controlled, identity=identity, n_boot=n_boot, seed=seed, seeds=seeds)
    size_table = equal_size_table(scores, n_boot=n_boot, seed=seed)
    detail = comparisons(scores, n_boot=n_boot, seed=seed)
    human = annotators["CheemsBench (human)"]
    own = human[0].shared_noise if human else float("nan")
    values = sorted(set(map(float, shared_noise)) | {own}) if human else []
    sweeps = noise_sweeps(scores, world, values, human[0], n_boot=n_boot, seed=seed, seeds=seeds) if human else None
    add_noise_claims(ledger, sweeps, own=own, reason="the world's summary names no human annotator to re-annotate with")
    undecided = undecided_text(ledger.claims.get("fig5-cheemsbench-best"), len(set(scores.clusters)))
    return Robustness(size_table, detail, sweeps, own, values, undecided)


@dataclass
class Robustness:
    """What the chapter's robustness section shows (:func:`add_robustness`)."""

    size_table: Any  # CheemsBench at full size and cut to each comparator's size (equal_size_table)
    detail: Any  # the comparisons for every CheemsBench metric and each task alone (comparisons)
    sweeps: dict | None  # the main claims at each value of the humans' shared noise (noise_sweeps); None: no humans
    own_noise: float  # the world's own shared noise (NaN without a human annotator)
    noise_values: list[float]  # the swept values, the world's own included
    undecided: str = ""  # whether these training sets decide fig5-cheemsbench-best (downstream_claims.undecided_text)

    def prose_values(self) -> dict[str, str | int]:
        """The chapter's glued values on the robustness section: random cuts per size, the world's own shared
        noise, the swept values and whether the training sets decide the main claim."""
        return {"n_size_draws": EQUAL_SIZE_DRAWS, "own_noise": f"{self.own_noise:g}",
                "noise_values": ", ".join(f"{v:g}" for v in self.noise_values), "fig5_undecided": self.undecided}


def noise_figure(robust: Robustness, models: int):
    """The shared-noise sweep of the first claim of :data:`NOISE_TARGETS` that was swept (the GPT claim where it
    is), ``models`` reward models with fixed scores."""
    target = next(t for t in NOISE_TARGETS if t in robust.sweeps)
    return sweep_figure(robust.sweeps[target], "shared_noise", marked=robust.own_noise, model=f"{models} models, fixed",
                        target=NOISE_TARGETS[target])


def noise_table(robust: Robustness):
    """Every swept claim's estimate, interval and verdict at each value of the humans' shared noise."""
    import pandas as pd

    table = pd.concat([s.assign(claim=t)[["claim", "value", "estimate", "ci_low", "ci_high", "verdict"]]
                       for t, s in robust.sweeps.items()])
    return table.rename(columns={"value": "shared noise"})


def add_untestable_claims(ledger, reason: str) -> None:
    """Fig. 5's claims when this world cannot run the population (``reason``): all *untestable*, their controls and
    shared-noise sweeps too."""
    ledger.add(Claim.untestable("fig5-cheemsbench-best", "", CHEEMSBENCH_BEST_CLAIM, reason,
                                link="paper-fig5"))
    ledger.add(Claim.untestable("fig5-human-beats-gpt", "", HUMAN_BEATS_GPT_CLAIM, reason, link="paper-fig5"))
    ledger.add(Claim.untestable("fig5-cheemsbench-best-every-task", "", EVERY_TASK_CLAIM, reason,
                                link="paper-fig5", paper=EVERY_TASK_QUOTE))
    ledger.add(chinese_and_english_claim())
    for id, claim in CONTROL_CLAIMS.items():
        ledger.add(Claim.untestable(id, "", claim, reason, link="paper-fig5"))
    add_noise_claims(ledger, None, own=math.nan, reason=reason)


def noise_sweeps(scores: Scores, world, values: Sequence[float], human, *, n_boot: int = 1000, seed: int = 0,
                 seeds: int = 1) -> dict:
    """``{claim id: sweep}`` for each claim of :data:`NOISE_TARGETS` (the GPT one only where the world has the GPT
    copy): per value of the humans' shared noise, the claim's estimate, interval and verdict (as
    :func:`cheems_lib.analyses.downstream_correlation.add_claims` decides it), in the rows
    :func:`cheems_lib.analyses.sensitivity.summarize` reads.

    At each value, ``world``'s CheemsBench is re-annotated by ``human`` (the world's human annotator) with that
    shared noise (:func:`cheems_lib.world.simulation.human_labels`: the same prompts and responses, checked) and the
    models' kept scores are evaluated on the new labels (:func:`relabeled`). Nothing is trained or scored again;
    the comparators' and the GPT copy's correlations do not depend on the value and are computed once.
    """
    import pandas as pd

    down_boot, fixed = scores.prompt_boot(n_boot, seed), {}
    counts = {f"bench_{k}": len(v) for k, v in world.bench.items()}

    def statistic(a, b):
        return claim_statistic(scores, a, b, seeds)

    relabeled_columns = {f"{b} {m}" for b in ("CheemsBench", *_HUMAN_SETS.values()) for m in ("acc", "exact")}
    targets = [t for t in NOISE_TARGETS if t != "fig5-human-beats-gpt" or "CheemsBench GPT acc" in scores.bench.columns]
    rows: dict[str, list[dict]] = {t: [] for t in targets}
    for v in values:
        config = WorldConfig(size=world.size, seed=world.seed, counts=counts, human=replace(human, shared_noise=float(v)))
        files = human_labels(config, tuple(counts))
        bench = {k: files[LAYOUT[f"bench_{k}"]] for k in world.bench}
        _same_responses(world.bench, bench, v)
        at, memo = relabeled(scores, bench), {}

        def spearman(column, at=at, memo=memo):
            cache = memo if column in relabeled_columns else fixed  # the others do not depend on the value
            if column not in cache:
                cache[column] = task_average(at.bench, at.down, column, n_boot=n_boot, seed=seed, clusters=at.clusters,
                                             down_boot=down_boot)
            return cache[column]

        for t in targets:
            c = (cheemsbench_best_claim(spearman, statistic, seed) if t == "fig5-cheemsbench-best"
                 else human_beats_gpt_claim(spearman, statistic, True, seed))
            rows[t].append({"value": float(v), "estimate": c.estimate, "ci_low": c.ci_low, "ci_high": c.ci_high,
                            "seeds": seeds, "n": c.n, "unit": c.unit, "verdict": c.verdict})
    return {t: pd.DataFrame(rows[t]) for t in targets}


def add_noise_claims(ledger, sweeps: Mapping | None, *, own: float, reason: str | None = None) -> None:
    """One *robustness* claim per claim of :data:`NOISE_TARGETS` (:func:`cheems_lib.analyses.sensitivity.add_sweep_claim`,
    id ``<claim>-vs-shared-noise``): does its verdict at the world's own shared noise ``own`` hold across its sweep
    (:func:`noise_sweeps`)? A claim without a sweep (``sweeps`` None, or a claim missing from it) is *untestable*
    with ``reason`` (or, for the GPT claim, the missing GPT copy)."""
    for t, target in NOISE_TARGETS.items():
        sweep = (sweeps or {}).get(t)
        why = reason if sweeps is None else "the files hold no GPT-annotated copy of CheemsBench (cheems_bench_gpt/)"
        add_sweep_claim(ledger, sweep, "shared_noise", own=own, target=target, reason=None if sweep is not None else why)


def _noise_target(claim_id: str, claim: str, short: str, title: str):
    """The :class:`cheems_lib.analyses.sensitivity.Target` of one Fig. 5 claim swept over the humans' shared noise."""
    return Target(claim_id, claim, f"{short}, with CheemsBench's human labels re-drawn at each value",
                  ("human-annotated CheemsBench", "reference"), f"{short}\n(difference in Spearman r)",
                  f"Fig. 5, {title}", "", link="downstream-shared-noise",
                  note="; the reward models, their scores and the downstream tasks are held fixed (trained and judged "
                       "on the world's own data): only CheemsBench's human labels of the same prompts and responses "
                       "are re-drawn, so the sweep asks whether the benchmark's labels decide the claim")


NOISE_TARGETS = {
    "fig5-human-beats-gpt": _noise_target("fig5-human-beats-gpt", HUMAN_BEATS_GPT_CLAIM,
                                          "human-annotated minus GPT copy", "human minus GPT"),
    "fig5-cheemsbench-best": _noise_target("fig5-cheemsbench-best", CHEEMSBENCH_BEST_CLAIM,
                                           "CheemsBench minus the closest comparator", "CheemsBench minus closest"),
}
"""Fig. 5's claims swept over the humans' shared noise (:func:`noise_sweeps`), by id."""


_HUMAN_SETS = {"open": "Open Prompt", "human": "Human Instruction"}
"""CheemsBench's human-annotated subsets and the benchmark names they are scored under
(:func:`cheems_lib.analyses.downstream_population.benchmark_sets`)."""


def relabeled(scores: Scores, bench: Mapping[str, Sequence[Record]]) -> Scores:
    """``scores`` with CheemsBench's human-annotated columns (whole benchmark and each subset, accuracy and exact
    match) evaluated on other labels of the same responses: ``bench`` is ``{"open": records, "human": records}``,
    and every model's kept scores (:attr:`cheems_lib.analyses.downstream_population.Scores.responses`) are evaluated
    on it, so nothing is scored again. The GPT copy, the comparators and the downstream tasks are unchanged."""
    if scores.responses is None:
        raise ValueError("these scores keep no scores on CheemsBench's responses (fix: build them with tabulate)")
    sets = {"CheemsBench": [r for k in _HUMAN_SETS if k in bench for r in bench[k]],
            **{_HUMAN_SETS[k]: list(v) for k, v in bench.items()}}
    models = list(scores.bench.index)
    per_model = {m: scores.response_scores(m) for m in models}
    table = benchmark_table(sets, per_model)
    new = scores.bench.copy()
    for column in table.columns:
        new[column] = table[column]
    return replace(scores, bench=new, pairs=pair_counts(sets["CheemsBench"], per_model, models))


def _same_responses(old: Mapping[str, Sequence[Record]], new: Mapping[str, Sequence[Record]], value: float) -> None:
    """Refuse a re-annotation whose prompts or responses differ from the world's (the sweep re-labels, never
    re-draws, the benchmark): a world the simulator does not reproduce cannot be swept this way."""
    def content(sets):
        return {k: [(r.id, r.prompt, [(x.id, x.content) for x in r.responses]) for r in v] for k, v in sets.items()}

    if content(old) != content(new):
        raise ValueError(f"re-annotating CheemsBench at shared_noise {value:g} changed its prompts or responses: this "
                         "world is not the one the simulator makes from its summary (fix: re-simulate it with "
                         "`cheems simulate`)")
