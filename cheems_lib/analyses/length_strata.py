"""Length-stratified accuracy: does a reward model rank well only where the better answer is also the longer one?

A benchmark whose preferred answers tend to be longer rewards a scorer for length alone. RewardBench's users found
that "pick the longer answer" scores 100% on two of its chat subsets, and that RewardBench 2's Focus subset leans the
other way (its chosen answers are shorter on average); RM-Bench reports accuracy by the style of the two answers, its
"hard" accuracy counting the pairs whose preferred answer is the more concise or plainer one. This module asks the same of CheemsBench:
per model (and per top-level category), pairwise accuracy split by the length of the preferred answer of each compared
pair against the other's.

Definitions. A compared pair is a (better, worse) pair of :func:`cheems_lib.conflicts.ordered_pairs` (``view``
``"layers"``, the paper's, or ``"implied"``). With the preferred (better-ranked) answer of length ``Lp`` and the
other of length ``Lo``, the pair is in stratum

- ``similar`` when ``|Lp - Lo| <= margin * max(Lp, Lo)`` (within :data:`MARGIN`, 10%, of the longer; two empty
  answers are similar, and a difference of exactly the margin is similar),
- else ``longer`` when ``Lp > Lo``,
- else ``shorter``.

Lengths are characters by default (as :mod:`cheems_lib.baselines`' length scorers and Table 1 count them), or the
tokens of a tokenizer (:func:`lengths`). A comparison is correct only when the better answer's score is strictly
higher: a score tie is wrong, as in :mod:`cheems_lib.metrics`.

Accuracy here is *micro*: correct comparisons / comparisons of the stratum, pooled over the prompts of one data file
(:func:`stratified`), and pooled again within each top-level category in ``by_category``. The benchmark's own
accuracy is a macro mean over categories, but a stratum is often empty in some category (every pair of a short
factual category can be "similar"), which leaves a macro mean undefined or resting on a handful of pairs.

Null controls (:func:`controls`) sit beside every model, never ranked with it: pick-longest, pick-shortest and one
seeded random draw (:func:`cheems_lib.baselines.named_scores`), and chance (0.5 on any non-empty stratum). The
pick-longest control scores 1 on ``longer`` and 0 on ``shorter`` (where the lengths it scores by are the ones
stratified by), so a model's gap between the two strata reads against the largest gap length alone can make.

Intervals come from the library's one bootstrap (:func:`cheems_lib.metrics.stratified_draws`): prompts, not pairs,
are resampled within their top-level category (small categories pooled), over the prompts with at least one
comparison, so the resamples depend on the records and ``seed`` only, never on the scores. Two models evaluated with
the same ``seed`` share them (their differences are paired), and they are the very resamples of
:func:`cheems_lib.metrics.evaluate_subset` with that seed. An interval is reported only by the library's rule
(:func:`cheems_lib.metrics.checked_interval`): at least 10 prompts with a comparison *in the stratum*, and some width.
"""
from __future__ import annotations

import math
from fractions import Fraction
from numbers import Real
from typing import Mapping, Sequence

import numpy as np

from ..baselines import CHANCE, CONTROLS, named_scores
from ..conflicts import ordered_pairs
from ..estimates import Estimate, insufficient, mean_of
from ..input_files import show
from ..metrics import MIN_STRATUM, checked_interval, lookup_scores, stratified_draws
from ..records import Record
from .leaderboard import CONTROLS_SECTION

__all__ = ["STRATA", "MARGIN", "CAPTION", "MODELS_SECTION", "LENGTH_CONTROLS", "stratum_of", "lengths", "unit_name",
           "pair_strata", "stratified", "controls", "controls_by_category", "stratum_estimates", "length_estimates",
           "length_table", "length_figure", "gap_sentence"]

STRATA = ("longer", "similar", "shorter")
"""The strata of a compared pair, by the preferred answer's length against the other's (see the module doc)."""
MARGIN = 0.10
"""The length difference, as a share of the longer answer's length, up to which a pair is ``similar``: 10%, so that
answers a reader could not tell apart by length alone are not sorted into longer and shorter. Any margin in [0, 1)
can be asked for."""
MODELS_SECTION = "reward models"
"""The section of :func:`length_table`'s model rows (its controls are in
:data:`cheems_lib.analyses.leaderboard.CONTROLS_SECTION`)."""
LENGTH_CONTROLS = ("baseline:longest", "baseline:shortest", "baseline:random")
"""The scored null controls of :func:`controls`, in the order tables show them."""


CAPTION = ("Accuracy by the length of the preferred answer (micro, per stratum; mean over training seeds, 95% "
           "interval over seeds and prompts; n: comparisons); null controls not ranked")
"""The caption of a :func:`length_table` in a chapter."""


def _margin(margin: float) -> Fraction:
    """``margin`` as the exact decimal it is written as (0.1 is 1/10, not the binary float just above it), so a
    difference of exactly the margin is ``similar`` for every margin; ValueError outside [0, 1)."""
    if isinstance(margin, bool) or not isinstance(margin, Real) or not 0 <= margin < 1:
        raise ValueError(f"margin must be a number in [0, 1), got {margin!r}")
    return Fraction(str(margin))


def _stratum(preferred: float, other: float, margin: Fraction) -> str:
    # cross-multiplied so integer lengths compare exactly, with no rounding at the boundary
    if abs(preferred - other) * margin.denominator <= margin.numerator * max(preferred, other):
        return "similar"
    return "longer" if preferred > other else "shorter"


def stratum_of(preferred: float, other: float, margin: float = MARGIN) -> str:
    """The stratum of a pair whose preferred answer has length ``preferred`` and the other ``other``.

    >>> stratum_of(100, 90), stratum_of(100, 89), stratum_of(89, 100), stratum_of(0, 0)
    ('similar', 'longer', 'shorter', 'similar')
    """
    return _stratum(preferred, other, _margin(margin))


def lengths(records: Sequence[Record], tokenizer=None, *, batch_size: int = 256) -> dict[tuple[str, str], int]:
    """``{(prompt_id, response_id): length}`` of every response: characters, or with a Hugging Face ``tokenizer``
    the tokens of the content without special tokens (tokenized ``batch_size`` texts per call, since one call per
    text is many times slower)."""
    keys = [(rec.id, x.id) for rec in records for x in rec.responses]
    texts = [x.content for rec in records for x in rec.responses]
    if tokenizer is None:
        return dict(zip(keys, map(len, texts)))
    sizes: list[int] = []
    for start in range(0, len(texts), batch_size):
        sizes += [len(ids) for ids in tokenizer(texts[start:start + batch_size], add_special_tokens=False)["input_ids"]]
    return dict(zip(keys, sizes))


def unit_name(tokenizer=None) -> str:
    """The unit :func:`lengths` counts with ``tokenizer``: ``"characters"`` or ``"tokens"``."""
    return "characters" if tokenizer is None else "tokens"


def _or_characters(records: Sequence[Record], given: Mapping[tuple[str, str], float] | None) -> Mapping:
    return lengths(records) if given is None else given


def pair_strata(records: Sequence[Record], lengths: Mapping[tuple[str, str], float], *, margin: float = MARGIN,
                view: str = "layers") -> list[list[tuple[str, str, str]]]:
    """Per record, ``(better, worse, stratum)`` for each of its compared pairs (``view``: see
    :func:`cheems_lib.conflicts.ordered_pairs`), stratified by ``lengths`` (:func:`lengths`).

    >>> from cheems_lib.records import Response
    >>> r = Record("q", [Response("a", "xxxx"), Response("b", "x"), Response("c", "xxxx")], id="p",
    ...            rank={"a": 0, "b": 1, "c": 2})
    >>> pair_strata([r], {("p", "a"): 4, ("p", "b"): 1, ("p", "c"): 4})
    [[('a', 'b', 'longer'), ('a', 'c', 'similar'), ('b', 'c', 'shorter')]]
    """
    exact = _margin(margin)
    out = []
    for rec in records:
        found = []
        for better, worse in ordered_pairs(rec, view=view):
            try:
                found.append((better, worse, _stratum(lengths[(rec.id, better)], lengths[(rec.id, worse)], exact)))
            except KeyError as e:
                raise ValueError(f"no length for prompt {show(e.args[0][0])} response {show(e.args[0][1])} "
                                 "(fix: compute the lengths of these records with lengths(records))") from None
        out.append(found)
    return out


def _counts(records: Sequence[Record], scores: Mapping[tuple[str, str], float],
            strata_pairs: Sequence[Sequence[tuple[str, str, str]]], scores_path: str) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt and stratum (columns in :data:`STRATA`' order): correct comparisons, and comparisons."""
    per_prompt = lookup_scores(records, scores, scores_path=scores_path)
    column = {s: j for j, s in enumerate(STRATA)}
    correct = np.zeros((len(records), len(STRATA)), np.int64)
    total = np.zeros_like(correct)
    for p, (score, pairs) in enumerate(zip(per_prompt, strata_pairs)):
        for better, worse, stratum in pairs:
            total[p, column[stratum]] += 1
            correct[p, column[stratum]] += score[better] > score[worse]
    return correct, total


def _replicates(correct: np.ndarray, total: np.ndarray, cats: np.ndarray, n_boot: int,
                seed: int) -> tuple[np.ndarray, tuple[str, ...]]:
    """Each stratum's micro accuracy in each replicate (``(n_boot, strata)``; NaN where a replicate drew no comparison
    of the stratum) from :func:`cheems_lib.metrics.stratified_draws` over the prompts with a comparison, and the
    categories it pooled. The mask and strata depend on the records only, so every model gets the same resamples."""
    has = total.sum(axis=1) > 0
    top, bottom = np.zeros((n_boot, total.shape[1])), np.zeros((n_boot, total.shape[1]))
    pooled: list[str] = []
    for stratum, rows, draw in stratified_draws(cats, n_boot, seed, mask=has):
        if rows.start == 0:  # a new stratum
            c, t = correct[stratum.members], total[stratum.members]
            pooled += list(stratum.labels) if stratum.pooled else []
        top[rows] += c[draw].sum(axis=1)
        bottom[rows] += t[draw].sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        return top / bottom, tuple(sorted(pooled))


def _cells(correct: np.ndarray, total: np.ndarray) -> dict[str, dict]:
    """Per stratum: comparisons, correct ones and their micro accuracy (None without a comparison)."""
    c, t = correct.sum(axis=0), total.sum(axis=0)
    return {s: {"comparisons": int(t[j]), "correct": int(c[j]), "accuracy": float(c[j] / t[j]) if t[j] else None}
            for j, s in enumerate(STRATA)}


def _pooled_note(pooled: Sequence[str]) -> str:
    return (f"categories pooled for the bootstrap (fewer than {MIN_STRATUM} prompts): {', '.join(pooled)}"
            if pooled else "")


def stratified(records: Sequence[Record], scores: Mapping[tuple[str, str], float], *, margin: float = MARGIN,
               lengths: Mapping[tuple[str, str], float] | None = None, view: str = "layers", n_boot: int = 0,
               seed: int = 0, scores_path: str = "scores", unit: str | None = None) -> dict:
    """Micro accuracy of ``scores`` per stratum on one data file's ``records``, JSON-ready.

    ``{"margin", "unit", "view", "strata": {stratum: {"comparisons", "correct", "accuracy", "prompts"}},
    "by_category": {category: {stratum: {"comparisons", "correct", "accuracy"}}}}``: ``accuracy`` is correct
    comparisons / comparisons (micro, see the module doc; None for an empty stratum), ``prompts`` the prompts with a
    comparison in the stratum, the units its interval rests on. ``lengths`` default to characters (:func:`lengths`);
    ``unit`` names them in the result (default ``"characters"``, or ``"as given"`` for given lengths: pass
    :func:`unit_name` of the tokenizer). With ``n_boot`` replicates (drawn with ``seed``) each stratum also has
    ``accuracy_ci`` (``[low, high]``) when :func:`cheems_lib.metrics.checked_interval` gives one, else ``ci_note``
    says why not; ``pooled_categories`` names the categories the bootstrap resampled together. A score missing for
    a ranked response is a one-line DataError naming ``scores_path``."""
    if unit is None:
        unit = "characters" if lengths is None else "as given"
    strata_pairs = pair_strata(records, _or_characters(records, lengths), margin=margin, view=view)
    correct, total = _counts(records, scores, strata_pairs, scores_path)
    cells = _cells(correct, total)
    for j, s in enumerate(STRATA):
        cells[s]["prompts"] = int((total[:, j] > 0).sum())
    cats = np.array([rec.top_category for rec in records], dtype=object)
    by_category = {cat: _cells(correct[cats == cat], total[cats == cat])
                   for cat in sorted(set(cats[total.sum(axis=1) > 0].tolist()))}
    out = {"margin": float(margin), "unit": unit, "view": view, "strata": cells, "by_category": by_category}
    if n_boot:
        boot, pooled = _replicates(correct, total, cats, n_boot, seed)
        for j, s in enumerate(STRATA):
            interval, why = checked_interval(boot[:, j], cells[s]["prompts"], what=f"accuracy on {s} pairs")
            if interval is None:
                cells[s]["ci_note"] = why
            else:
                cells[s]["accuracy_ci"] = interval
        if pooled:
            out["pooled_categories"] = list(pooled)
    return out


def controls(records: Sequence[Record], *, margin: float = MARGIN,
             lengths: Mapping[tuple[str, str], float] | None = None, view: str = "layers",
             seed: int = 0) -> dict[str, dict[str, float | None]]:
    """The null controls' micro accuracy per stratum (point values): ``{name: {stratum: accuracy or None}}`` for
    :data:`LENGTH_CONTROLS` (pick-longest, pick-shortest, random drawn with ``seed`` over ``records``), then
    :data:`cheems_lib.baselines.CHANCE` with 0.5 on every non-empty stratum (None on an empty one).

    The length controls score by characters, as :func:`cheems_lib.baselines.named_scores` does; the pairs are
    stratified by ``lengths`` (default characters), the same as the model's. Pick-longest then scores 1.0 on
    ``longer`` and 0.0 on ``shorter`` (0 on ``similar`` pairs of equal length, a score tie), which is what makes a
    model's gap between the two readable; stratified by tokens, it departs from 1 and 0 only where characters and
    tokens disagree on which answer is longer."""
    return _controls(records, margin=margin, lengths=lengths, view=view, seed=seed)[0]


def _controls(records: Sequence[Record], *, margin: float, lengths, view: str, seed: int) -> tuple[dict, dict]:
    """:func:`controls` over the whole file, and per top-level category (``{category: {name: {stratum: acc}}}``)."""
    whole: dict = {}
    per_category: dict = {}
    for name in LENGTH_CONTROLS:
        result = stratified(records, named_scores(name, records, seed=seed), margin=margin, lengths=lengths,
                            view=view)
        whole[name] = {s: cell["accuracy"] for s, cell in result["strata"].items()}
        for cat, cells in result["by_category"].items():
            per_category.setdefault(cat, {})[name] = {s: cells[s]["accuracy"] for s in STRATA}
    chance = lambda accs: {s: None if acc is None else 0.5 for s, acc in accs.items()}  # noqa: E731
    whole[CHANCE] = chance(whole[LENGTH_CONTROLS[0]])
    for cells in per_category.values():
        cells[CHANCE] = chance(cells[LENGTH_CONTROLS[0]])
    return whole, per_category


def controls_by_category(records: Sequence[Record], *, margin: float = MARGIN,
                         lengths: Mapping[tuple[str, str], float] | None = None, view: str = "layers",
                         seed: int = 0) -> tuple[dict, dict]:
    """:func:`controls` over the whole file and per top-level category (``{category: {name: {stratum: accuracy or
    None}}}``), from the same runs of the controls: the null controls beside ``stratified``'s ``by_category``."""
    return _controls(records, margin=margin, lengths=lengths, view=view, seed=seed)


def stratum_estimates(records: Sequence[Record], scores_per_seed: Sequence[Mapping] | Mapping, *,
                      margin: float = MARGIN, lengths: Mapping[tuple[str, str], float] | None = None,
                      n_boot: int = 1000, seed: int = 0, view: str = "layers") -> dict[str, Estimate]:
    """Per stratum, an :class:`cheems_lib.estimates.Estimate` of the micro accuracy over training seeds: one
    point and ``n_boot`` replicates per scores mapping of ``scores_per_seed`` (one mapping alone is one seed).

    Every seed, and every model given the same ``records``, ``view`` and ``seed``, is resampled alike, so two models'
    estimates subtract paired. ``n`` is the prompts with a comparison in the stratum (0 for an empty one, whose
    point is NaN: :func:`cheems_lib.estimates.insufficient` then withholds its interval); ``note`` names the
    categories pooled for the bootstrap."""
    per_seed = [scores_per_seed] if isinstance(scores_per_seed, Mapping) else list(scores_per_seed)
    if not per_seed:
        raise ValueError("no scores: give one scores mapping per training seed")
    strata_pairs = pair_strata(records, _or_characters(records, lengths), margin=margin, view=view)
    cats = np.array([rec.top_category for rec in records], dtype=object)
    found: dict[str, list[Estimate]] = {s: [] for s in STRATA}
    for k, scores in enumerate(per_seed):
        correct, total = _counts(records, scores, strata_pairs, f"scores of training seed {k}")
        boot, pooled = _replicates(correct, total, cats, n_boot, seed)
        for j, s in enumerate(STRATA):
            t = total[:, j].sum()
            point = correct[:, j].sum() / t if t else math.nan
            found[s].append(Estimate.single(point, boot[:, j], n=int((total[:, j] > 0).sum()),
                                            note=_pooled_note(pooled)))
    return {s: Estimate.stack(found[s]) for s in STRATA}


def length_estimates(scores_by_model: Mapping[str, Mapping | Sequence[Mapping]],
                     subsets: Mapping[str, Sequence[Record]], *, margin: float = MARGIN,
                     lengths: Mapping[tuple[str, str], float] | None = None, unit: str | None = None,
                     view: str = "layers", n_boot: int = 1000, seed: int = 0) -> dict:
    """What :func:`length_table` and :func:`length_figure` show, per subset: ``{"margin", "unit", "comparisons":
    {stratum: n}, "models": {model: {stratum: Estimate}}, "controls": controls(...)}``. Each model's value is one
    scores mapping or one per training seed (:func:`stratum_estimates`, all with ``seed``, so paired); the random
    control is drawn with ``seed`` over each subset's records. ``lengths`` (default characters) covers every subset's
    records; ``unit`` names them (as in :func:`stratified`)."""
    out = {}
    for sub, records in subsets.items():
        sizes = _or_characters(records, lengths)
        found = [st for pairs in pair_strata(records, sizes, margin=margin, view=view) for *_, st in pairs]
        out[sub] = {"margin": float(margin), "unit": unit or ("characters" if lengths is None else "as given"),
                    "comparisons": {s: found.count(s) for s in STRATA},
                    "models": {name: stratum_estimates(records, scores, margin=margin, lengths=sizes,
                                                       n_boot=n_boot, seed=seed, view=view)
                               for name, scores in scores_by_model.items()},
                    "controls": controls(records, margin=margin, lengths=sizes, view=view, seed=seed)}
    return out


def _accuracy_cell(est: Estimate, seed: int) -> str:
    """``value [lo, hi]`` (three decimals); the value alone where the data give no 95% interval; ``–`` for an empty
    stratum."""
    if not math.isfinite(est.value):
        return "–"
    if not est.boot.size or insufficient(est, seed=seed):
        return f"{est.value:.3f}"
    lo, hi = est.interval(seed=seed)
    return f"{est.value:.3f} [{lo:.3f}, {hi:.3f}]"


def length_table(scores_by_model: Mapping[str, Mapping | Sequence[Mapping]], subsets: Mapping[str, Sequence[Record]], *,
                 margin: float = MARGIN, n_boot: int = 1000, seed: int = 0,
                 lengths: Mapping[tuple[str, str], float] | None = None, unit: str | None = None, view: str = "layers"):
    """Length-stratified accuracy as a table: one row per (model, subset) in :data:`MODELS_SECTION` (the mean over a
    model's training seeds with its hierarchical 95% interval, ``"0.712 [0.650, 0.770]"``, the value alone where
    :func:`cheems_lib.estimates.insufficient` withholds it, ``–`` for an empty stratum), then the null controls of
    :data:`LENGTH_CONTROLS` per subset in :data:`cheems_lib.analyses.leaderboard.CONTROLS_SECTION` (point values).
    Columns: ``section``, ``model``, ``subset``, then per stratum ``"<stratum> acc."`` and ``"<stratum> n"`` (its
    comparisons). The :func:`length_estimates` behind it are in ``table.attrs["estimates"]``, for
    :func:`length_figure`."""
    import pandas as pd

    results = length_estimates(scores_by_model, subsets, margin=margin, lengths=lengths, unit=unit, view=view,
                               n_boot=n_boot, seed=seed)
    rows = []
    for name in scores_by_model:
        for sub, res in results.items():
            row = {"section": MODELS_SECTION, "model": name, "subset": sub}
            for s in STRATA:
                row |= {f"{s} acc.": _accuracy_cell(res["models"][name][s], seed), f"{s} n": res["comparisons"][s]}
            rows.append(row)
    for name in LENGTH_CONTROLS:
        for sub, res in results.items():
            row = {"section": CONTROLS_SECTION, "model": name, "subset": sub}
            for s in STRATA:
                acc = res["controls"][name][s]
                row |= {f"{s} acc.": "–" if acc is None else f"{acc:.3f}", f"{s} n": res["comparisons"][s]}
            rows.append(row)
    table = pd.DataFrame(rows)
    table.attrs["estimates"] = results
    return table


def length_figure(results, *, seed: int = 0):
    """Accuracy per stratum, one panel per subset: per model a dot at its mean over seeds with its 95% interval
    (a dot alone where the interval is withheld), the length controls as hollow markers to the right of the models,
    and chance (0.5) as a dotted line. ``results``: :func:`length_estimates`, or a table of :func:`length_table`
    (whose ``attrs`` hold them). Returns the Figure."""
    import matplotlib.pyplot as plt

    results = results.attrs["estimates"] if hasattr(results, "attrs") else results
    fig, axes = plt.subplots(1, len(results), figsize=(min(7.0, 1.0 + 3.0 * len(results)), 3.8), sharey=True,
                             squeeze=False)
    for ax, (sub, res) in zip(axes[0], results.items()):
        _panel(ax, res, seed)
        ax.set_title(sub)
    first = next(iter(results.values()))
    axes[0][0].set_ylabel("accuracy (micro)")
    fig.supxlabel(f"preferred answer against the other ({first['unit']}; similar: within {first['margin']:.0%} of "
                  "the longer)", fontsize=9)
    handles, labels = axes[0][0].get_legend_handles_labels()
    order = sorted(range(len(labels)), key=lambda i: labels[i] not in first["models"])  # the models first
    fig.legend([handles[i] for i in order], [labels[i] for i in order], loc="lower center", bbox_to_anchor=(0.5, 1.0), ncol=min(4, len(labels)), fontsize=8,
               frameon=False)
    fig.tight_layout()
    return fig


def _panel(ax, res: Mapping, seed: int) -> None:
    """One subset's panel of :func:`length_figure`: the models side by side at each stratum, the controls right of
    them (apart, so a control is never read as one of the models)."""
    x = np.arange(len(STRATA), dtype=float)
    models = res["models"]
    offsets = np.linspace(-0.28, 0.08, len(models)) if len(models) > 1 else np.full(1, -0.1)
    for k, (name, ests) in enumerate(models.items()):
        values, low, high = [], [], []
        for s in STRATA:
            est = ests[s]
            lo, hi = ((est.value, est.value) if not est.boot.size or insufficient(est, seed=seed)
                      else est.interval(seed=seed))
            values.append(est.value)
            low.append(est.value - lo)
            high.append(hi - est.value)
        ax.errorbar(x + offsets[k], values, yerr=[low, high], fmt="o", capsize=3, color=f"C{k}", label=name)
    for name, marker in zip(LENGTH_CONTROLS, ("^", "v", "s")):
        acc = [math.nan if v is None else v for v in (res["controls"][name][s] for s in STRATA)]
        ax.plot(x + 0.25, acc, ls="none", marker=marker, mfc="none", color="dimgrey", label=CONTROLS[name])
    ax.axhline(0.5, color="black", lw=0.8, ls=":", label="chance")
    ax.set_xticks(x, [f"{s}\n(n={res['comparisons'][s]:,})" for s in STRATA])
    ax.set(xlim=(-0.5, len(STRATA) - 0.5), ylim=(-0.04, 1.04))
    ax.grid(axis="y", alpha=0.3)


def gap_sentence(results, *, seed: int = 0, names: Sequence[str] | None = None) -> str:
    """One sentence per subset on what length buys the models: the accuracy on ``longer`` minus that on ``shorter``
    pairs, averaged over the models (``names``, default all; paired seed by seed, a one-seed model broadcast to the
    others' seeds), with its 95% interval, beside the pick-longest control's gap (1 by construction, less where
    lengths tie). ``results``: :func:`length_estimates`, or a :func:`length_table` (its ``attrs``)."""
    results = results.attrs["estimates"] if hasattr(results, "attrs") else results
    parts = []
    for sub, res in results.items():
        models = {n: e for n, e in res["models"].items() if names is None or n in names}
        gaps = [e["longer"] - e["shorter"] for e in models.values()]
        if not gaps:
            continue
        most = max(g.seeds for g in gaps)
        gap = mean_of([g.broadcast(most) if g.seeds == 1 and most > 1 else g for g in gaps])
        control = res["controls"][LENGTH_CONTROLS[0]]
        longest = "undefined" if None in (control["longer"], control["shorter"]) else \
            f"{control['longer'] - control['shorter']:+.3f}"
        if not math.isfinite(gap.value) or insufficient(gap, seed=seed):
            said = f"{gap.value:+.3f} (no 95% interval: too few pairs in a stratum)" if math.isfinite(gap.value) \
                else "undefined (a stratum is empty)"
        else:
            lo, hi = gap.interval(seed=seed)
            said = f"{gap.value:+.3f} [{lo:+.3f}, {hi:+.3f}]"
        parts.append(f"On {sub}, accuracy where the preferred answer is longer minus where it is shorter, averaged over "
                     f"the {len(gaps)} model{'s' if len(gaps) != 1 else ''}, is {said}; pick-longest's is {longest}.")
    return " ".join(parts)
