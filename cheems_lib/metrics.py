"""CheemsBench metrics (paper §3.3, spec §3): accuracy, exact match, macro-averages, overall.

For one prompt, every pair of responses with different ranks is a comparison; it is
correct when the better-ranked response has the *strictly* higher score::

    accuracy(category)    = sum_prompts correct / sum_prompts comparisons
    exact_match(category) = mean over prompts with >= 1 comparison of [all correct]
    subset metric         = unweighted mean over top-level categories
    overall               = mean over subsets of (accuracy + exact_match) / 2

Worked example: ranks ``{a: 0, b: 1, c: 1}`` and scores ``{a: 2, b: 1, c: 2}`` give two
comparisons, ``a>b`` right and ``a>c`` wrong (a score tie is wrong), so accuracy 0.5
and exact match 0.

The official code lets a score tie pass exact match while failing accuracy; we count a
tie wrong in both, so the two metrics are consistent. Uncertainty is a percentile
bootstrap over prompts, stratified by category so every replicate keeps the taxonomy.

Every interval of the library, the book's and ``cheems evaluate``'s alike, comes from
:func:`stratified_draws`, and one rule says when it claims more than its data:

- a stratum of fewer than :data:`MIN_STRATUM` prompts cannot stand alone (one prompt cannot
  vary at all, so stratifying on it would treat that prompt as known exactly): such strata
  are pooled into one (:func:`stratify`), and the result says which
  (``SubsetResult.pooled_categories``; ``Estimate.note`` in :mod:`cheems_lib.estimates`);
- an interval resting on fewer than :data:`MIN_UNITS` prompts with a
  comparison, or of no width (every resample gives the same value), is not reported as one:
  ``cheems evaluate`` says *insufficient data* with the count instead
  (:meth:`SubsetResult.to_json`, :func:`overall_ci_note`), and the ledger's verdict is
  *insufficient data* (:func:`cheems_lib.estimates.insufficient`, the same rule).

Replicates are drawn in chunks (:data:`BOOT_CHUNK`) and reduced to sums before the next, so
the bootstrap's memory does not grow with prompts x replicates.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, Mapping, Sequence

import numpy as np

from .conflicts import ordered_pairs
from .input_files import DataError, show
from .records import Record, strict_pairs

__all__ = ["MIN_UNITS", "MIN_STRATUM", "no_width", "NO_WIDTH_TOLERANCE", "BOOT_CHUNK", "prompt_outcomes", "Stratum", "stratify", "stratified_draws", "accuracy",
           "exact_match", "SubsetResult", "evaluate_subset", "overall", "overall_micro", "overall_ci", "overall_ci_note",
           "checked_interval", "lookup_scores"]

MIN_UNITS = 10
"""An interval is reported, and a claim decided, only on a statistic resting on at least this many independent
units (prompts, or training sets): a percentile bootstrap over fewer cannot give a 95% interval with real
coverage (n units have few distinct resamples, and the interval comes out too narrow; one unit gives a single
point), so the result is *insufficient data* instead of a false interval (:func:`checked_interval`, and
:func:`cheems_lib.estimates.insufficient` for the ledger's verdicts, which builds on this module)."""
MIN_STRATUM = 5
"""The fewest units (prompts) a stratum is resampled with on its own; smaller strata are pooled
(:func:`stratify`). A stratum of m units gives a bootstrap variance (m - 1)/m of its own: none for
one unit, half for two. In a simulation of ten categories' macro accuracy, strata of two prompts gave
a 95% interval that covered the truth 77% of the time, strata of three 83%, of five 91%, about what
the same categories pooled into one stratum gave (92-93%); from five on stratifying costs little
coverage, below it pooling is the more honest interval."""
BOOT_CHUNK = 1 << 20
"""The most resample indices drawn at once. Each stratum's replicates are drawn in chunks of whole
rows (at least one) and reduced to per-replicate sums before the next chunk, so the bootstrap holds
a few arrays of this many numbers plus the replicates themselves, whatever the prompts and replicates.
numpy's Generator fills an array row after row, so the chunks draw the very numbers one
``(n_boot, members)`` draw would: results do not depend on this size."""


def prompt_outcomes(ranks: Sequence[Mapping[str, int]], scores: Sequence[Mapping[str, float]],
                    *, pairs: Sequence[Sequence[tuple[str, str]]] | None = None) -> tuple[np.ndarray, np.ndarray]:
    """Per prompt: (correct comparisons, comparisons).

    ``pairs`` optionally replaces the pairs derived from ``ranks`` (for the ``implied`` view).
    """
    correct = np.zeros(len(ranks), dtype=np.int64)
    total = np.zeros(len(ranks), dtype=np.int64)
    for p, (rank, score) in enumerate(zip(ranks, scores)):
        ps = pairs[p] if pairs is not None else strict_pairs(rank)
        total[p] = len(ps)
        correct[p] = sum(score[a] > score[b] for a, b in ps)
    return correct, total


def accuracy(ranks: Sequence[Mapping[str, int]], scores: Sequence[Mapping[str, float]]) -> float:
    """Pooled pairwise accuracy (paper Eq. 1): correct comparisons / comparisons.

    >>> accuracy([{"a": 0, "b": 1, "c": 1}], [{"a": 2.0, "b": 1.0, "c": 2.0}])
    0.5
    """
    correct, total = prompt_outcomes(ranks, scores)
    return float(correct.sum() / total.sum()) if total.sum() else float("nan")


def exact_match(ranks: Sequence[Mapping[str, int]], scores: Sequence[Mapping[str, float]]) -> float:
    """Share of prompts (with at least one comparison) whose comparisons are all correct (Eq. 2).

    >>> exact_match([{"a": 0, "b": 1}, {"a": 0, "b": 0}], [{"a": 2.0, "b": 1.0}, {"a": 0.0, "b": 0.0}])
    1.0
    """
    correct, total = prompt_outcomes(ranks, scores)
    has = total > 0
    return float((correct[has] == total[has]).mean()) if has.any() else float("nan")


@dataclass
class SubsetResult:
    """Metrics of one benchmark subset (one data file), with bootstrap replicates."""

    accuracy: float
    exact_match: float
    by_category: dict[str, dict[str, float | int]]
    prompts: int
    prompts_without_comparisons: int
    boot_accuracy: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    boot_exact_match: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    boot_category_accuracy: dict[str, np.ndarray] = field(repr=False, default_factory=dict)
    """Per top-level category, its accuracy in each replicate (the resamples behind ``boot_accuracy``;
    NaN in a replicate that drew none of its prompts, which only a pooled category can)."""
    boot_micro_accuracy: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    """:attr:`micro_accuracy` in each replicate (the same resamples: correct comparisons / comparisons of the drawn
    prompts)."""
    boot_micro_exact_match: np.ndarray = field(repr=False, default_factory=lambda: np.empty(0))
    """:attr:`micro_exact_match` in each replicate (the share of the drawn prompts whose comparisons are all right)."""
    prompt_ids: tuple[str, ...] = ()
    """The ids of the records evaluated, in order: the prompts its resamples index (two results pair only when these
    are the same)."""
    pooled_categories: tuple[str, ...] = ()
    """The categories the bootstrap resampled together as one stratum because they had fewer than
    :data:`MIN_STRATUM` prompts with a comparison (with the smallest other category when even together they
    had fewer; :func:`stratify`); empty when every category was resampled on its own."""

    @property
    def score(self) -> float:
        """(accuracy + exact match) / 2, this subset's share of ``overall``."""
        return (self.accuracy + self.exact_match) / 2

    @property
    def units(self) -> int:
        """The independent units its intervals resample: prompts with at least one comparison."""
        return self.prompts - self.prompts_without_comparisons

    @property
    def micro_accuracy(self) -> float:
        """Correct comparisons / comparisons over the whole subset (every comparison weighs the same, whatever its
        category), beside the paper's macro :attr:`accuracy`; NaN without a comparison."""
        total = sum(c["comparisons"] for c in self.by_category.values())
        return sum(round(c["accuracy"] * c["comparisons"]) for c in self.by_category.values()) / total if total \
            else float("nan")

    @property
    def micro_exact_match(self) -> float:
        """The share of the subset's prompts with a comparison whose comparisons are all correct (every prompt weighs
        the same), beside the paper's macro :attr:`exact_match`; NaN without a comparison."""
        prompts = sum(c["prompts"] for c in self.by_category.values())
        return sum(round(c["exact_match"] * c["prompts"]) for c in self.by_category.values()) / prompts if prompts \
            else float("nan")

    def to_json(self, ci: float = 0.95) -> dict:
        """The metrics as ``cheems evaluate`` prints them: ``accuracy``, ``exact_match`` (macro over top-level
        categories, the paper's), ``micro_accuracy``, ``micro_exact_match`` (:attr:`micro_accuracy`), ``by_category``,
        ``prompts`` and ``prompts_without_comparisons`` always; with bootstrap replicates also
        ``accuracy_ci``, ``exact_match_ci``, ``micro_accuracy_ci`` and ``micro_exact_match_ci`` (``[low, high]``), each
        only when it is a real interval
        (:func:`checked_interval`), else ``ci_note`` says why it is left out ("insufficient data: 6 prompts
        with a comparison, needs at least 10 ..."); and ``pooled_categories`` when the bootstrap pooled
        small categories into one stratum."""
        out = {"accuracy": self.accuracy, "exact_match": self.exact_match,
               "micro_accuracy": self.micro_accuracy, "micro_exact_match": self.micro_exact_match,
               "by_category": self.by_category, "prompts": self.prompts,
               "prompts_without_comparisons": self.prompts_without_comparisons}
        if self.boot_accuracy.size:
            notes = {}
            for key, boot in (("accuracy", self.boot_accuracy), ("exact_match", self.boot_exact_match),
                              ("micro_accuracy", self.boot_micro_accuracy),
                              ("micro_exact_match", self.boot_micro_exact_match)):
                if not boot.size:  # a result built by hand with macro replicates only
                    continue
                interval, why = checked_interval(boot, self.units, ci, what=key)
                if interval is None:
                    notes.setdefault(why, []).append(f"{key}_ci")
                else:
                    out[f"{key}_ci"] = interval
            if notes:
                out["ci_note"] = "; ".join(f"{why} ({_listed(keys)} left out)" for why, keys in notes.items())
            if self.pooled_categories:
                out["pooled_categories"] = list(self.pooled_categories)
        return out


def _listed(words: Sequence[str]) -> str:
    """``a``, ``a and b``, ``a, b and c``."""
    return " and ".join(words) if len(words) < 3 else f"{', '.join(words[:-1])} and {words[-1]}"


def _interval(samples: np.ndarray, ci: float) -> list[float]:
    lo, hi = np.quantile(samples, [(1 - ci) / 2, (1 + ci) / 2])
    return [float(lo), float(hi)]


def checked_interval(samples: np.ndarray, n: int, ci: float = 0.95, *,
                     what: str = "value") -> tuple[list[float] | None, str]:
    """The percentile interval of bootstrap ``samples`` over ``n`` units, or None and the sentence why not.

    The rule of every interval the library reports, :func:`cheems_lib.estimates.insufficient` (the
    ledger's verdicts use the same function): fewer than ``MIN_UNITS`` units, or an interval of no
    width, is *insufficient data*, never a 95% interval. ``what`` names the statistic in the sentence.

    >>> checked_interval(np.full(100, 0.75), 6)[1]
    'insufficient data: 6 prompts with a comparison, needs at least 10 (a bootstrap over fewer gives no real 95% interval)'
    """
    prompts = f"{n:,} prompt{'s' if n != 1 else ''}"
    if n < MIN_UNITS:
        return None, (f"insufficient data: {prompts} with a comparison, needs at least {MIN_UNITS} "
                      "(a bootstrap over fewer gives no real 95% interval)")
    finite = samples[np.isfinite(samples)]
    interval = _interval(finite, ci) if finite.size else [float("nan"), float("nan")]
    if not no_width(*interval):
        return interval, ""
    return None, (f"insufficient data: every bootstrap resample of the {prompts} gives the same {what}, "
                  "so its 95% interval has no width")


def no_width(lo: float, hi: float) -> bool:
    """Is the interval ``[lo, hi]`` a single value (every resample gave the same number)? Then it is no 95%
    interval, whatever the count of units: it would claim that a new sample could not give another value. Equal up
    to rounding counts (relative :data:`NO_WIDTH_TOLERANCE`): replicates built from the same numbers in another
    order differ in the last bits only.

    >>> no_width(0.1, 0.1), no_width(0.09999999999999998, 0.10000000000000009), no_width(0.1, 0.1000001)
    (True, True, False)
    """
    return bool(np.isfinite(lo) and np.isfinite(hi) and hi - lo <= NO_WIDTH_TOLERANCE * max(1.0, abs(lo), abs(hi)))


NO_WIDTH_TOLERANCE = 1e-12
"""Relative width below which an interval is one value (:func:`no_width`): far below any real interval's width,
far above the rounding of sums of a few thousand numbers."""


def lookup_scores(records: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
                  scores_path: str = "scores") -> list[dict[str, float]]:
    """Per record, ``{response_id: score}`` for its ranked responses; a missing score is an error."""
    out = []
    for rec in records:
        if rec.rank is None:
            raise DataError(rec.origin or None, None, f"prompt {show(rec.id)} has no 'rank'",
                            "read the file with cheems_lib.world_files.read_ranked(path), which ranks it from its "
                            "annotations with Algorithm 1")
        s = {}
        for rid in rec.rank:
            try:
                s[rid] = scores[(rec.id, rid)]
            except KeyError:
                raise DataError(scores_path, None, f"no score for prompt {show(rec.id)} response {show(rid)} "
                                f"(ranked in {rec.origin or 'the data'})", "score every ranked response") from None
        out.append(s)
    return out


@dataclass(frozen=True, eq=False)
class Stratum:
    """Units a bootstrap resamples together: ``labels``, the strata labels it holds (one, unless
    :func:`stratify` pooled small ones), and ``members``, the units' indices in their order."""

    labels: tuple
    members: np.ndarray

    @property
    def pooled(self) -> bool:
        return len(self.labels) > 1


def stratify(strata: Sequence, mask: np.ndarray | None = None) -> list[Stratum]:
    """The strata a bootstrap resamples within: one per label (sorted), except that the labels with
    fewer than :data:`MIN_STRATUM` units are pooled into one stratum, placed last. A pool still smaller
    than that joins the smallest stratum (the first in label order); with no other stratum it is the
    only one. So every stratum can vary, and has :data:`MIN_STRATUM` units, unless all units together
    have fewer (which the unit count's rule, ``MIN_UNITS``, refuses anyway). ``mask`` leaves entries out.

    >>> [s.labels for s in stratify(["a"] * 6 + ["b"] * 2 + ["c"] * 3)]
    [('a',), ('b', 'c')]
    >>> [s.labels for s in stratify(["a"] * 6 + ["b"] * 5 + ["c", "d"])]
    [('a',), ('b', 'c', 'd')]
    """
    strata = np.asarray(strata, dtype=object)
    keep = np.ones(strata.size, bool) if mask is None else np.asarray(mask, bool)
    members = {s: np.flatnonzero(keep & (strata == s)) for s in sorted(set(strata[keep].tolist()))}
    groups = [(s,) for s, idx in members.items() if idx.size >= MIN_STRATUM]
    small = tuple(s for s, idx in members.items() if idx.size < MIN_STRATUM)
    if small and (not groups or sum(members[s].size for s in small) >= MIN_STRATUM):
        groups.append(small)
    elif small:
        j = min(range(len(groups)), key=lambda i: members[groups[i][0]].size)
        groups[j] += small
    return [Stratum(g, np.sort(np.concatenate([members[s] for s in g]))) for g in groups]


def stratified_draws(strata: Sequence, n_boot: int, seed: int | np.random.Generator = 0, *,
                     mask: np.ndarray | None = None) -> Iterator[tuple[Stratum, slice, np.ndarray]]:
    """Bootstrap resamples within the strata of :func:`stratify`: ``(stratum, rows, draw)``, where ``draw``
    holds the ``(rows, members)`` resample indices into ``stratum.members`` of the replicates ``rows``.

    The one resampling scheme of every interval: :func:`evaluate_subset` and
    :func:`cheems_lib.estimates.ratio_estimate` call it, so the same ``seed`` and strata give the same
    resamples (paired comparisons). Each stratum's replicates come in chunks of at most :data:`BOOT_CHUNK`
    indices, all before the next stratum's, which makes them the numbers of one ``(n_boot, members)``
    draw per stratum: a caller reduces each chunk (e.g. to its row sums) before asking for the next, and
    its memory stays bounded. ``mask`` leaves entries out; ``n_boot=0`` yields nothing.
    """
    rng = np.random.default_rng(seed)
    for stratum in stratify(strata, mask):
        size = stratum.members.size
        step = max(1, BOOT_CHUNK // size)
        for start in range(0, n_boot, step):
            stop = min(start + step, n_boot)
            yield stratum, slice(start, stop), rng.integers(0, size, size=(stop - start, size))


def evaluate_subset(records: Sequence[Record], scores: Mapping[tuple[str, str], float], *,
                    view: str = "layers", n_boot: int = 1000, seed: int | np.random.Generator = 0,
                    scores_path: str = "scores") -> SubsetResult:
    """Accuracy and exact match of one subset, macro-averaged over top-level categories.

    ``n_boot`` bootstrap replicates (0 disables them) resample prompts with replacement
    within each category; categories of fewer than :data:`MIN_STRATUM` prompts with a comparison
    are resampled together (``pooled_categories``), and a replicate's macro average is then over
    the categories it drew. ``view`` is ``"layers"`` or ``"implied"`` (see
    :func:`cheems_lib.conflicts.ordered_pairs`).
    """
    per_prompt = lookup_scores(records, scores, scores_path=scores_path)
    ranks = [rec.rank for rec in records]
    pairs = [ordered_pairs(rec, view="implied") for rec in records] if view == "implied" else None
    correct, total = prompt_outcomes(ranks, per_prompt, pairs=pairs)
    cats = np.array([rec.top_category for rec in records], dtype=object)
    has = total > 0
    by_category = {}
    for cat in sorted(set(cats[has].tolist())):
        idx = np.flatnonzero(has & (cats == cat))
        c, t = correct[idx], total[idx]
        by_category[cat] = {"accuracy": float(c.sum() / t.sum()), "exact_match": float((c == t).astype(float).mean()),
                            "prompts": int(idx.size), "comparisons": int(t.sum())}
    acc = float(np.mean([v["accuracy"] for v in by_category.values()])) if by_category else float("nan")
    em = float(np.mean([v["exact_match"] for v in by_category.values()])) if by_category else float("nan")
    result = SubsetResult(acc, em, by_category, prompts=len(records), prompts_without_comparisons=int((~has).sum()),
                          prompt_ids=tuple(rec.id for rec in records))
    if n_boot and by_category:
        boot_cat, boot_em, pooled, micro = _category_replicates(correct, total, cats, has, n_boot, seed)
        with np.errstate(invalid="ignore"):  # a replicate averages the categories it drew (nanmean == mean without NaN)
            result.boot_accuracy = np.nanmean([boot_cat[c] for c in by_category], axis=0)
            result.boot_exact_match = np.nanmean([boot_em[c] for c in by_category], axis=0)
        result.boot_category_accuracy = {c: boot_cat[c] for c in by_category}
        result.boot_micro_accuracy, result.boot_micro_exact_match = micro
        result.pooled_categories = pooled
    return result


def _category_replicates(correct: np.ndarray, total: np.ndarray, cats: np.ndarray, has: np.ndarray, n_boot: int,
                         seed: int | np.random.Generator) -> tuple[dict, dict, tuple[str, ...], tuple]:
    """Per category, its accuracy and exact match in each replicate of :func:`stratified_draws`, the
    categories pooled, and the micro accuracy and exact match of each replicate. A category of its own stratum sums
    its drawn prompts' counts row by row (a pooled stratum: per category of each row, by ``bincount``); NaN where a
    replicate drew none of its prompts. The micro sums add every stratum's draws, so they use the same resamples."""
    exact = (correct == total).astype(float)
    sums = np.zeros((3, n_boot))  # per replicate: correct comparisons, comparisons, prompts all right
    boot_acc: dict[str, np.ndarray] = {}
    boot_em: dict[str, np.ndarray] = {}
    pooled: list[str] = []
    for stratum, rows, draw in stratified_draws(cats, n_boot, seed, mask=has):
        if rows.start == 0:  # a new stratum
            idx, k = stratum.members, len(stratum.labels)
            c, t, e = correct[idx], total[idx], exact[idx]
            pos = {cat: j for j, cat in enumerate(stratum.labels)}
            code = np.array([pos[x] for x in cats[idx]])  # each member's category within the stratum
            for cat in stratum.labels:
                boot_acc[cat], boot_em[cat] = np.empty(n_boot), np.empty(n_boot)
            pooled += list(stratum.labels) if stratum.pooled else []
        drawn_sums = c[draw].sum(1), t[draw].sum(1), e[draw].sum(1)
        sums[:, rows] += drawn_sums
        if not stratum.pooled:
            (cat,) = stratum.labels
            boot_acc[cat][rows] = drawn_sums[0] / drawn_sums[1]
            boot_em[cat][rows] = drawn_sums[2] / draw.shape[1]
            continue
        cell = (np.arange(draw.shape[0])[:, None] * k + code[draw]).ravel()  # (replicate, category) of each draw

        def per_cell(weights=None):
            return np.bincount(cell, weights, minlength=draw.shape[0] * k).reshape(-1, k)

        drawn, comparisons = per_cell(), per_cell(t[draw].ravel())
        with np.errstate(invalid="ignore"):
            acc, em = per_cell(c[draw].ravel()) / comparisons, per_cell(e[draw].ravel()) / drawn
        for j, cat in enumerate(stratum.labels):
            boot_acc[cat][rows], boot_em[cat][rows] = acc[:, j], em[:, j]
    units = int(has.sum())  # every replicate draws as many prompts as there are: the micro exact match's denominator
    return boot_acc, boot_em, tuple(sorted(pooled)), (sums[0] / sums[1], sums[2] / units)


def overall(results: Sequence[SubsetResult]) -> float:
    """The paper's Overall: mean over subsets of (accuracy + exact match) / 2."""
    return float(np.mean([r.score for r in results]))


def overall_micro(results: Sequence[SubsetResult]) -> float:
    """:func:`overall` of the micro averages: mean over subsets of (micro accuracy + micro exact match) / 2, every
    comparison and every prompt of a subset weighing the same (beside the paper's macro Overall)."""
    return float(np.mean([(r.micro_accuracy + r.micro_exact_match) / 2 for r in results]))


def _overall_checked(results: Sequence[SubsetResult], ci: float, micro: bool = False) -> tuple[list[float] | None, str]:
    if not results or not all(r.boot_accuracy.size for r in results):
        return None, ""
    if micro:
        boots = np.mean([(r.boot_micro_accuracy + r.boot_micro_exact_match) / 2 for r in results], axis=0)
    else:
        boots = np.mean([(r.boot_accuracy + r.boot_exact_match) / 2 for r in results], axis=0)
    return checked_interval(boots, min(r.units for r in results), ci, what="overall_micro" if micro else "overall")


def overall_ci(results: Sequence[SubsetResult], ci: float = 0.95, *, micro: bool = False) -> list[float] | None:
    """Bootstrap interval of :func:`overall` (of :func:`overall_micro` with ``micro``; subsets are resampled
    independently); None without replicates, or when it is no real interval (:func:`checked_interval`, over the
    fewest prompts with a comparison of any subset: each is resampled alone), which :func:`overall_ci_note` then
    says."""
    return _overall_checked(results, ci, micro)[0]


def overall_ci_note(results: Sequence[SubsetResult], ci: float = 0.95, *, micro: bool = False) -> str:
    """Why :func:`overall_ci` gives no interval although every subset has replicates ("insufficient data:
    ..."); empty when it gives one, or when there are no replicates to give one from."""
    return _overall_checked(results, ci, micro)[1]
