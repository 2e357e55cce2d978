"""Reward models trained on real human scores: do they learn them, and does a real Best-of-N follow (§6.1-6.3, Fig. 5).

The human scores are WritingPreferenceBench zh's (:mod:`cheems_lib.analyses.human_labels`, which splits its prompts
into two halves). Tiny reward models are trained on the training half (:func:`training_sets`: a few answers per prompt,
or one pair) and, for comparison, on the world folder's preference file (in ``data/real`` DPO-zh's pairs, model
labels; its labels are named as the world states them, :class:`~cheems_lib.analyses.human_labels.HumanData`), then
rank every answer of the held-out half (:func:`train_and_score`):

- transfer (Tables 3 and 4): their accuracy on the held-out half's human rankings against the null controls, and the
  human-score model against the preference-file one, a comparison confounded by domain (:func:`add_transfer_claims`);
- a real Best-of-N (Fig. 5): each model's pick per held-out prompt is the answer it scores highest, its quality the
  human score of that answer; :func:`prompt_correlation` correlates it with the models' accuracy across the population
  (:func:`population`), both recomputed on every resample of the held-out prompts (:func:`best_of_n`,
  :func:`add_bon_claims`): the accuracy on one half of the held-out prompts and the picks on the other (the finding,
  as Fig. 5's downstream prompts are not the benchmark's), and both on the same prompts (robustness).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

from .. import estimates
from ..metrics import lookup_scores, prompt_outcomes
from ..paper import table as paper_table
from ..records import Record
from ..world.best_of_n import prompt_resamples, select_best
from . import claims, experiments, leaderboard
from .human_labels import HumanData, keep_answers, scores_of, split_halves
from .length_strata import length_table
from .transfer import pairwise_only

__all__ = ["training_sets", "population", "outcomes", "spearman_rows", "prompt_correlation", "HELD_OUT", "BestOfN",
           "Trained", "train_and_score", "best_of_n", "add_transfer_claims", "add_bon_claims", "plot_bon"]


def training_sets(train: Sequence[Record] | None, preference: Sequence[Record] | None, *, answers: int,
                  seed: int = 0, preference_name: str = "preference file") -> dict[str, list[Record]]:
    """The training sets, by name: the human half with ``answers`` answers per prompt (:func:`keep_answers`), the
    human half as one random strictly ordered pair per prompt (:func:`cheems_lib.analyses.transfer.pairwise_only`),
    and the world folder's preference file (``preference``, named ``preference_name``, which names its labels as the
    world states them: :func:`cheems_lib.analyses.human_labels.preference_name`); a set whose records are missing is
    absent."""
    sets = {}
    if train:
        sets[f"human half, {answers} answers"] = keep_answers(train, answers, seed=seed)
        sets["human half, one pair"] = pairwise_only(train, seed=seed)
    if preference:
        sets[preference_name] = list(preference)
    return sets


def population(sets: Mapping[str, Sequence[Record]], sizes: Sequence[str], *, seeds: Sequence[int], epochs: int,
               first_only: Sequence[str] = ()) -> list[experiments.ModelSpec]:
    """Every set trained at every size in ``sizes`` (a set named in ``first_only`` at the first size only) with every
    training seed: the models, named ``"<size> · <set>"``, that pick the Best-of-N answers. A model's zoo entry
    depends only on its records and config, so one another chapter trains is shared."""
    specs = []
    for name, records in sets.items():
        for size in sizes[:1] if name in first_only else sizes:
            label = f"{size} · {name}"
            specs += experiments.Family({label: list(records)}, seeds=tuple(seeds), epochs=epochs, models={label: size},
                                        group=name).specs()
    return specs


def outcomes(records: Sequence[Record], scores: Mapping[tuple[str, str], float]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Per record: the comparisons ``scores`` gets right, the comparisons (the benchmark's accuracy, §3.3), and the
    human score of the answer ``scores`` ranks first (its Best-of-N pick). Ties go to the first answer in the record's
    order (:func:`cheems_lib.world.best_of_n.select_best`'s rule), so a reward model that gives every answer the same
    score picks each prompt's first answer, not a random one."""
    correct, total = prompt_outcomes([r.rank for r in records], lookup_scores(records, scores))
    picks = select_best(records, scores)
    picked = np.array([scores_of(r)[r.responses[p].id] for r, p in zip(records, picks)], float)
    return correct.astype(float), total.astype(float), picked


def spearman_rows(x: np.ndarray, y: np.ndarray) -> np.ndarray:
    """Spearman correlation of each row of ``x`` with the same row of ``y`` (ties at their mean rank); NaN where a
    row is constant.

    >>> spearman_rows(np.array([[1, 2, 3, 4.0]]), np.array([[1, 3, 2, 4.0]]))
    array([0.8])
    """
    import pandas as pd

    rx, ry = (pd.DataFrame(np.atleast_2d(v)).rank(axis=1).to_numpy() for v in (x, y))
    rx, ry = rx - rx.mean(axis=1, keepdims=True), ry - ry.mean(axis=1, keepdims=True)
    with np.errstate(invalid="ignore", divide="ignore"):
        r = (rx * ry).sum(axis=1) / np.sqrt((rx * rx).sum(axis=1) * (ry * ry).sum(axis=1))
    return np.where(np.isfinite(r), r, np.nan)


def prompt_correlation(correct: np.ndarray, total: np.ndarray, picked: np.ndarray, *, n_boot: int = estimates.N_BOOT,
                       seed: int = 0, downstream: np.ndarray | None = None) -> estimates.Estimate:
    """Spearman correlation, across reward models, of benchmark accuracy (``correct`` ``(models, prompts)`` over
    ``total`` comparisons per prompt) with Best-of-N quality (the mean of ``picked`` ``(models, prompts)``, the human
    score of each model's pick). Each replicate resamples the prompts and recomputes both sides for every model,
    then the correlation; the models stay fixed, so the interval covers the prompts, not the choice of models.
    ``downstream``: a boolean mask over the prompts; the accuracy is then read on the other prompts and the
    Best-of-N on these, each side resampled on its own (no prompt serves both). Its ``n``: the prompts (the
    fewer side's, with ``downstream``). A resample adds noise to every model's two values, which pulls a replicate's
    correlation toward zero, so the percentile interval leans toward zero: a conservative test of a positive one."""
    correct, picked, total = np.atleast_2d(correct), np.atleast_2d(picked), np.asarray(total, float)
    bench = np.ones(total.size, bool) if downstream is None else ~np.asarray(downstream, bool)
    down = np.ones(total.size, bool) if downstream is None else np.asarray(downstream, bool)
    c, t, p = correct[:, bench], total[bench], picked[:, down]
    point = spearman_rows(c.sum(axis=1) / t.sum(), p.mean(axis=1))[0]
    boot = ()
    if n_boot:
        wb = prompt_resamples(t.size, n_boot, seed=seed, stream="benchmark prompts")
        wd = wb if downstream is None else prompt_resamples(p.shape[1], n_boot, seed=seed, stream="Best-of-N prompts")
        boot = spearman_rows(wb @ c.T / (wb @ t)[:, None], wd @ p.T / p.shape[1])
    return estimates.Estimate.single(float(point), boot, n=int(min(int((t > 0).sum()), p.shape[1])))


HELD_OUT = "held-out half"
"""The benchmark subset the reward models are evaluated on: the held-out half's human rankings."""
TOO_FEW_MODELS = "*Skipped: the real Best-of-N; it needs at least three reward models (more sizes or training seeds).*"
"""The page's sentence when the population is too small to correlate."""


@dataclass
class BestOfN:
    """The real Best-of-N: one row per reward model in ``frame`` (``model``, ``training set``, ``size``, ``seed``,
    ``accuracy``, ``Best-of-N human score``) followed by the reference picks (``lines``, by name, their mean human
    score), and the two correlations of :func:`prompt_correlation`: ``disjoint``, the accuracy on one half of the
    held-out prompts and the picks on the other (the finding), and ``rho``, both on the same prompts (robustness)."""

    frame: Any
    lines: dict[str, float]
    rho: estimates.Estimate
    disjoint: estimates.Estimate
    models: int

    def figure(self, *, seed: int = 0):
        """:func:`plot_bon` of the reward models (not the reference picks)."""
        return plot_bon(self.frame.iloc[:self.models], rho=self.rho, disjoint=self.disjoint, lines=self.lines, seed=seed)


@dataclass
class Trained:
    """Every reward model trained here, scored on the held-out half, with the null controls (:func:`train_and_score`).
    ``human`` and ``dpo`` name the two models the transfer claims compare: the human half's and the world folder's
    preference file's (``dpo``, DPO-zh's in ``data/real``; None without a preference file)."""

    data: HumanData
    specs: list
    scores: dict[str, list[dict]]
    controls: dict[str, dict]
    results: dict[str, list[dict]] = field(repr=False)
    human: str
    dpo: str | None

    @property
    def accuracy(self) -> dict[str, estimates.Estimate]:
        """Every model's and control's accuracy on the held-out half (paired: one bootstrap seed for all)."""
        return {name: estimates.subset_estimate(res, "accuracy") for name, res in self.results.items()}

    def board(self, *, seed: int = 0):
        """Table 2 as the evaluation chapter shows it: the models ranked, then the null controls and chance."""
        kinds = {s.name: f"trained on {s.group}" for s in self.specs}
        return leaderboard.table2_as_shown([(self.results, {HELD_OUT: self.data.held})], kinds, seed=seed)

    def length_table(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0):
        """Every model's accuracy on the held-out half by the length of the preferred answer, beside the null controls
        (:func:`cheems_lib.analyses.length_strata.length_table`, paired with ``seed``)."""
        return length_table(self.scores, {HELD_OUT: self.data.held}, n_boot=n_boot, seed=seed)

    def transfer_figure(self, *, seed: int = 0):
        """The two compared models' accuracy and the controls' (:func:`cheems_lib.publishing.figures.overall_dots`)."""
        from ..publishing.figures import overall_dots

        shown = {n: self.accuracy[n] for n in [self.human, self.dpo, *self.controls] if n is not None}
        return overall_dots(shown, seed=seed, xlabel="accuracy on the held-out half's human scores")

    def best_of_n(self, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> BestOfN | None:
        """Each model's accuracy and Best-of-N pick on the held-out half (:func:`outcomes`), their correlation on the
        same prompts and on disjoint halves of them (:func:`split_halves` of the held-out half, ``seed``), and the
        reference picks: every prompt's best answer, a random pick's expectation, the longest and the shortest answer.
        None with fewer than 3 models (no correlation)."""
        import pandas as pd

        if len(self.specs) < 3:
            return None
        held, rows, seen = self.data.held, [], {}
        correct, picked = [], []
        for spec in self.specs:  # a name's scores are listed by training seed, in spec order
            k = seen[spec.name] = seen.get(spec.name, -1) + 1
            c, total, p = outcomes(held, self.scores[spec.name][k])
            correct.append(c)
            picked.append(p)
            rows.append({"model": f"{spec.name} · seed {spec.config.seed}", "training set": spec.group,
                         "size": spec.config.model, "seed": spec.config.seed, "accuracy": c.sum() / total.sum(),
                         "Best-of-N human score": p.mean()})
        human = [list(scores_of(r).values()) for r in held]
        lines = {"best answer (oracle)": float(np.mean([max(h) for h in human])),
                 "random pick (expected)": float(np.mean([np.mean(h) for h in human]))}
        accuracy = dict.fromkeys(lines)
        for name in ("baseline:longest", "baseline:shortest"):
            c, _, p = outcomes(held, self.controls[name])
            lines[leaderboard.CONTROLS[name]], accuracy[leaderboard.CONTROLS[name]] = float(p.mean()), c.sum() / total.sum()
        frame = pd.DataFrame(rows + [{"model": n, "training set": leaderboard.CONTROLS_SECTION, "size": "–", "seed": "–",
                                      "accuracy": accuracy[n], "Best-of-N human score": v} for n, v in lines.items()])
        correct, picked = np.array(correct), np.array(picked)
        downstream = {r.id for r in split_halves(self.data.held_tagged, seed=seed)[1]}
        return BestOfN(frame, lines, prompt_correlation(correct, total, picked, n_boot=n_boot, seed=seed),
                       prompt_correlation(correct, total, picked, n_boot=n_boot, seed=seed,
                                          downstream=[r.id in downstream for r in held]), len(rows))


def train_and_score(data: HumanData, world, *, sizes: Sequence[str], answers: int, seeds: Sequence[int], epochs: int,
                    n_boot: int = estimates.N_BOOT, seed: int = 0) -> Trained | None:
    """Train (or load from the zoo) every model of :func:`population` on :func:`training_sets`, the preference file's
    at the first of ``sizes`` only (DPO-zh's many prompts make it the costliest set), score the held-out half's
    answers, and evaluate them and the null controls (:func:`cheems_lib.analyses.leaderboard.baseline_scores`, random
    drawn with ``seed``) with CheemsBench's metrics. The transfer claims compare the human half's and the preference
    file's models at the first size. None without human scores."""
    if data.records is None:
        return None
    if not sizes:
        raise ValueError("sizes is empty: nothing to train (fix: -p sizes '[\"tiny-xs\"]')")
    sets = training_sets(data.train, data.preference, answers=answers, seed=seed, preference_name=data.preference_name)
    human_set, dpo_set = f"human half, {answers} answers", data.preference_name
    specs = population(sets, sizes, seeds=seeds, epochs=epochs, first_only=(dpo_set,))
    subsets = {HELD_OUT: data.held}
    scores = experiments.score_family(specs, world, records=subsets)
    controls = leaderboard.baseline_scores(data.held, seed=seed)
    results = leaderboard.evaluate_scores({**scores, **controls}, subsets, n_boot=n_boot, seed=seed)
    return Trained(data, specs, scores, controls, results, f"{sizes[0]} · {human_set}",
                   f"{sizes[0]} · {dpo_set}" if dpo_set in sets else None)


def best_of_n(trained: Trained | None, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> BestOfN | None:
    """The real Best-of-N of ``trained``'s reward models (:meth:`Trained.best_of_n`); None without them (no human
    scores) or with fewer than 3."""
    return trained.best_of_n(n_boot=n_boot, seed=seed) if trained is not None else None


def add_transfer_claims(ledger: claims.Ledger, accuracy: Mapping[str, estimates.Estimate], human: str | None,
                        dpo: str | None, *, seed: int = 0, missing_human: str = "",
                        missing_dpo: str = "needs cheems_preference.jsonl in the world folder",
                        trained_on: str = "the world folder's preference file", their_prompts: str = "its prompts",
                        their_labels: str = "its labels", their_format: str = "its records") -> None:
    """Accuracy on the held-out half's human rankings (paired :class:`~cheems_lib.estimates.Estimate` by model name,
    the null controls included): the model trained on the human half (``human``) and the one trained on the world
    folder's preference file (``dpo``) against the random and longest controls, and the two against each other (our
    question: their training sets differ in more than their labels). ``trained_on``, ``their_prompts``,
    ``their_labels`` and ``their_format`` say what the preference file is, its prompts, its labels as the world states
    them and its form
    (:meth:`cheems_lib.analyses.human_labels.HumanData.transfer_words`: DPO-zh's model labels in ``data/real``, never
    called human labels there). A claim whose model is None is untestable with why."""
    from ..baselines import NAMES

    random, longest = NAMES[0], NAMES[1]
    t4 = paper_table("table4_ablation").set_index("training_data").loc["Human subset"]
    zh = paper_table("table3_datasets").query("language == 'zh'")["open_acc"]
    link = dict(link="fig-human-labels-transfer")
    rows = [
        ("human-transfer-beats-random", human, random, dict(
            link, paper_ref="", kind="", claim="a reward model trained on human rankings ranks "
            "the answers of held-out prompts by human score better than chance",
            paper=f"Table 4: the Human subset's model reaches accuracy {t4['open_acc']:.3f} (Open Prompt) and "
                  f"{t4['human_acc']:.3f} (Human Instruction) on CheemsBench (a 72B model on another benchmark: a "
                  "reference, not a target)")),
        ("human-transfer-beats-longest", human, longest, dict(
            link, paper_ref="", kind="question", claim="does a reward model trained on human rankings rank the "
            "answers of held-out prompts better than always preferring the longest answer?", reason="the project's own question: the paper shows no length baseline, and where the "
            "scorers favour length the longest answer is itself a fair guess", paper="no length baseline in the paper")),
        ("human-transfer-dpo-beats-random", dpo, random, dict(
            link, paper_ref="", kind="", claim=f"a reward model trained on {trained_on} "
            "ranks answers to real Chinese writing prompts by human score better than chance",
            paper=f"Table 3: reward models trained on Chinese open datasets reach accuracy {zh.min():.3f} to "
                  f"{zh.max():.3f} on CheemsBench Open Prompt (another benchmark and other models: a reference)")),
        ("human-transfer-human-vs-dpo", human, dpo, dict(
            link, paper_ref="", kind="question", claim="does the model trained on held-apart human rankings "
            f"rank the held-out answers better than the one trained on {trained_on}?",
            reason="the project's own question, and confounded: the two training sets differ in domain (writing prompts "
                   f"of one benchmark against {their_prompts}), in labels (human scores against {their_labels}), in "
                   f"format (several ranked answers per prompt against {their_format}) and in size, so a difference "
                   "cannot be put on any one of them",
            paper="Table 3 compares datasets that differ in the same ways; the paper draws no conclusion from one "
                  "such pair")),
    ]
    for cid, ours, other, fields in rows:
        if ours is None or other is None:  # the human model is missing first: it needs the human file
            fields.pop("reason", None)  # a question's reason where it can be tested; here what is missing says why
            ledger.add(claims.Claim.untestable(cid, reason=missing_human if human is None else missing_dpo, **fields))
            continue
        a, b = accuracy[ours], accuracy[other]
        a, b = (e.broadcast(max(a.seeds, b.seeds)) if e.seeds == 1 else e for e in (a, b))
        ledger.add(claims.Claim.test(cid, a - b, "greater", seed=seed, **fields,
                                     statistic=f"accuracy of {ours} minus that of {other} on the held-out half; paired"))


def add_bon_claims(ledger: claims.Ledger, bon: BestOfN | None, *, seeds: int, seed: int = 0, missing: str = "") -> None:
    """A real Fig. 5: benchmark accuracy against the human score of the Best-of-N pick across the reward models of
    ``bon`` (:meth:`Trained.best_of_n`): the accuracy on one half of the held-out prompts and the picks on the other
    (the finding), and both on the same held-out prompts (*robustness*); untestable with ``missing`` without it.

    Why the disjoint one is the finding: Fig. 5 correlates the benchmark with downstream prompts that are not the
    benchmark's, and on the same prompts accuracy and pick rest on the same human scores of the same answers (a model
    that ranks a prompt's answers right also picks its best one there), so their correlation is partly one measurement
    read twice. It stays as a descriptive second reading, a robustness claim (a variant of the finding, never counted
    as one); not a question, since it reads the paper's claim, not one of ours."""
    rho, disjoint, models = (bon.rho, bon.disjoint, bon.models) if bon is not None else (None, None, 0)
    fields = dict(paper_ref="", link="fig-human-labels-bon",
                  claim="a reward model's accuracy on human rankings predicts the human-judged quality of its Best-of-N "
                        "pick: a positive correlation across reward models",
                  paper='"Our benchmark exhibits significantly stronger correlations with downstream tasks compared to '
                        'other baselines" (a plot without numbers)')
    where = {"human-bon-correlation-disjoint": "the accuracy on one half of the held-out prompts, the Best-of-N on "
                                               "the other",
             "human-bon-correlation": "accuracy and Best-of-N on the same held-out prompts"}
    # The disjoint halves are the finding: Fig. 5's downstream prompts are not the benchmark's. The same-prompt
    # correlation reads one set of human scores on both sides, so it only describes; "robustness" (a variant of a
    # finding, never counted as one) fits it, "question" would not (it reads the paper's claim, not one of ours).
    kinds = {"human-bon-correlation-disjoint": dict(kind="finding"),
             "human-bon-correlation": dict(kind="robustness", reason=(
                 "the same-prompt reading of human-bon-correlation-disjoint, descriptive: accuracy and picks rest on "
                 "the same human scores of the same answers, so part of the correlation is one measurement read twice; "
                 "Fig. 5's downstream prompts are not the benchmark's, which the disjoint halves reproduce"))}
    ends = {"human-bon-correlation-disjoint": ("a better benchmark score goes with a better pick on other prompts, as "
                                               "Fig. 5 needs.",
                                               "a better benchmark score goes with a worse pick on other prompts.",
                                               "the interval includes zero."),
            "human-bon-correlation": ("a better benchmark score goes with a better pick on the same prompts (the same "
                                      "human scores on both sides, so no test of Fig. 5 by itself).",
                                      "a better benchmark score goes with a worse pick on the same prompts.",
                                      "the interval includes zero.")}
    for cid, est in (("human-bon-correlation-disjoint", disjoint), ("human-bon-correlation", rho)):
        kind = dict(kinds[cid])
        statistic = (f"Spearman correlation across {models} reward models ({where[cid]}) of accuracy on the human "
                     "rankings with the mean human score (0-3) of each model's Best-of-N pick; bootstrap over the "
                     "held-out prompts, both sides recomputed per resample, the models fixed")
        if est is None:
            kind.pop("reason", None)  # what is missing says why
            ledger.add(claims.Claim.untestable(cid, reason=missing, **fields, **kind, statistic=statistic))
            continue
        opening = (f"Across {models} reward models, the Spearman correlation is {{estimate:.2f}} [{{lo:.2f}}, {{hi:.2f}}] "
                   f"({where[cid]}): ")
        claim = claims.Claim.test(cid, est, "greater", seed=seed, **fields, **kind, statistic=statistic,
                                  says={v: opening + end for v, end in zip(estimates.VERDICTS, ends[cid])})
        claim.seeds = seeds  # every training set of the population has them all
        ledger.add(claim)


def plot_bon(table, *, rho: estimates.Estimate | None = None, disjoint: estimates.Estimate | None = None,
             lines: Mapping[str, float] | None = None, seed: int = 0):
    """A real Fig. 5: each reward model's accuracy on the held-out human rankings (x) against the mean human score of
    its Best-of-N picks (y), both on every held-out prompt, coloured by training set, marked by size; ``table`` has
    columns ``accuracy``, ``Best-of-N human score``, ``training set``, ``size``. ``lines``: reference picks (name ->
    mean human score), drawn as horizontal lines; ``rho`` (the same prompts, what the dots show) and ``disjoint``
    (accuracy and picks on disjoint halves, the finding): the Spearman correlations, shown in the title."""
    import matplotlib.pyplot as plt
    import seaborn as sns

    fig, ax = plt.subplots(figsize=(7.5, 5))
    sns.scatterplot(table, x="accuracy", y="Best-of-N human score", hue="training set", style="size", s=60, ax=ax)
    for (name, value), color in zip((lines or {}).items(), ("#59a14f", "#e15759", "#9c9c9c", "#b07aa1")):
        ax.axhline(value, color=color, lw=1, ls="--", label=name)
    title = "Benchmark accuracy vs Best-of-N quality, both from human scores"
    for name, est in (("disjoint halves", disjoint), ("same prompts, as plotted", rho)):
        if est is not None:
            lo, hi = est.interval(seed=seed)
            title += f"\nSpearman, {name}: {est.value:.2f} [95% interval over prompts {lo:.2f}, {hi:.2f}]"
    ax.set(title=title, xlabel="accuracy on the held-out half's human rankings",
           ylabel="mean human score (0-3) of the Best-of-N pick")
    ax.legend(fontsize=7, loc="best")
    ax.grid(alpha=0.3)
    fig.tight_layout()
    return fig
