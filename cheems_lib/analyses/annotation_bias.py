"""Annotation bias (appendix D.3, Fig. 15): length and position preferences measured from annotation files.

The simulator's biases are in :mod:`cheems_lib.world.annotators`; this module measures them, on a
simulated world or on real files, and tests the paper's description of Fig. 15:

- :class:`BiasSample`: each annotator's benchmark records, with the bootstrap settings; its
  :meth:`~BiasSample.share_first` and :meth:`~BiasSample.share_second` are the shares of strict
  decisions (ties left out, so 0.5 means no preference) won by the first- or second-shown response;
- :func:`plot_fig15`: the four panels of Fig. 15;
- :func:`add_claims`: the chapter's five claims, added to its :class:`~cheems_lib.analyses.claims.Ledger`
  (which glues their sentences; read them back from ``ledger.claims``);
- :func:`gpt_length_sentence`: whether GPT-4o prefers longer answers in the GPT subset of CheemsPreference
  (Fig. 15c, the bias length debiasing removes), for the preference chapter.

Lengths are in characters of real length: a simulated world's lengths are scaled back by its
``length_scale``.

Who made the benchmark's annotations: the human annotators (simulated, or the paper's own
files), unless a real folder's manifest names them (``labels``, see
:attr:`cheems_lib.analyses.world_folder.World.bench_labels`). Then the panels and sentences name them, and
when those are model labels (:func:`cheems_lib.world_files.model_labels`) the claims about human
annotators are *untestable*: the files hold no human labels.
"""
from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from functools import partial
from typing import Sequence

import numpy as np

from .. import estimates
from ..distant_supervision import chosen_length_counts
from ..publishing.figures import no_data
from ..records import Record
from ..world.annotators import decisions_per_prompt
from ..world_files import GPT_LAYOUT, LAYOUT
from . import calibration, claims

__all__ = ["FILES", "BiasSample", "plot_fig15", "add_claims", "longer_wins", "longer_share", "gpt_length_sentence"]

FILES = {"Human": (LAYOUT["bench_open"], LAYOUT["bench_human"]),
         "GPT": (GPT_LAYOUT["bench_open"], GPT_LAYOUT["bench_human"])}
"""Fig. 15's annotators and the benchmark files (spec §6 layout) holding their annotations."""
_WHO = {"Human": "human annotators", "GPT": "GPT-4o"}


@dataclass(frozen=True)
class BiasSample:
    """Each annotator's benchmark records (``records``, only annotators with records) and their
    bootstrap strata (``strata``: file and category), with the bootstrap settings."""

    records: dict[str, list[Record]] = field(repr=False)
    strata: dict[str, list[str]] = field(repr=False)
    length_scale: float = 1.0
    n_boot: int = estimates.N_BOOT
    seed: int = 0
    labels: tuple[str, bool] | None = None
    """Who labelled the ``Human`` files (``cheems_bench/``) when a manifest says so, and whether those are model
    labels (:attr:`cheems_lib.analyses.world_folder.World.bench_labels`); None: human annotators."""

    @classmethod
    def from_files(cls, files: dict, *, length_scale: float = 1.0, n_boot: int = estimates.N_BOOT,
                   seed: int = 0, labels: tuple[str, bool] | None = None) -> "BiasSample":
        """The records of :data:`FILES` present in ``files`` (a world's ``{layout path: records}``);
        ``labels``: who labelled ``cheems_bench/`` on a real folder (None: human annotators)."""
        records = {who: [r for p in paths if p in files for r in files[p]] for who, paths in FILES.items()}
        strata = {who: [f"{p}/{r.top_category}" for p in paths if p in files for r in files[p]]
                  for who, paths in FILES.items()}
        return cls({k: v for k, v in records.items() if v}, strata, length_scale, n_boot, seed, labels)

    def who(self, who: str) -> str:
        """How prose names ``who``'s annotators: "human annotators", "GPT-4o", or on a real folder whose
        manifest names them, "the annotators of cheems_bench/ (LABELS)"."""
        if who == "Human" and self.labels is not None:
            return f"the annotators of cheems_bench/ ({self.labels[0]})"
        return _WHO[who]

    def title(self, who: str) -> str:
        """``who``'s name in a panel title: "Human annotator", "GPT annotator", or "cheems_bench/ (LABELS)"."""
        if who == "Human" and self.labels is not None:
            return f"cheems_bench/ ({self.labels[0]})"
        return f"{who} annotator"

    def not_human(self, who: str) -> str | None:
        """Why ``who``'s annotations cannot stand for human annotators (model labels), or None."""
        if who == "Human" and self.labels is not None and self.labels[1]:
            return f"the benchmark's labels are {self.labels[0]}'s, not human"
        return None

    def strict_decisions(self) -> dict[str, int]:
        """Strict (non-tie) decisions per annotator of :data:`FILES`, 0 for one without records."""
        return {who: sum(p != "0" for r in self.records.get(who, []) for *_, p in r.annotations) for who in FILES}

    def decisions(self, who: str, low: float = -np.inf, high: float = np.inf) -> tuple[np.ndarray, np.ndarray]:
        """Per prompt: strict decisions won by A, and strict decisions, for ``len(A) - len(B)`` in
        ``[low, high)`` characters of real length."""
        return decisions_per_prompt(self.records[who], low * self.length_scale, high * self.length_scale)

    def share_first(self, who: str, low: float = -np.inf, high: float = np.inf) -> estimates.Estimate:
        """Share of strict decisions won by the first-shown response A, bootstrapped over prompts."""
        first, n = self.decisions(who, low, high)
        return estimates.ratio_estimate(first, n, strata=self.strata[who], n_boot=self.n_boot, seed=self.seed)

    def share_second(self, who: str) -> estimates.Estimate:
        """Share of strict decisions won by the response shown second, bootstrapped over prompts."""
        first, n = self.decisions(who)
        return estimates.ratio_estimate(n - first, n, strata=self.strata[who], n_boot=self.n_boot, seed=self.seed)

    def length_curve(self, who: str, edges) -> np.ndarray:
        """Rows ``(bin centre, share for A, 95% low, 95% high)``, one per bin of ``edges`` (characters)
        that holds a strict decision."""
        curve = []
        for lo, hi in zip(edges[:-1], edges[1:]):
            first, n = self.decisions(who, lo, hi)
            if n.sum():
                est = estimates.ratio_estimate(first, n, strata=self.strata[who], n_boot=self.n_boot, seed=self.seed)
                curve.append(((lo + hi) / 2, est.value, *est.interval()))
        return np.array(curve)


def longer_wins(records) -> tuple[np.ndarray, np.ndarray]:
    """Per record: strict decisions between responses of different length (in characters) won by
    the longer one, and such decisions. Works on any labelled file: a benchmark's annotations or a
    preference file's chosen/rejected pairs."""
    won, decided = np.zeros(len(records)), np.zeros(len(records))
    for k, r in enumerate(records):
        size = {x.id: len(x.content) for x in r.responses}
        for a, b, p in r.annotations:
            if p != "0" and size[a] != size[b]:
                decided[k] += 1
                won[k] += (p == "1") == (size[a] > size[b])
    return won, decided


def longer_share(records, *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> estimates.Estimate:
    """Share of strict decisions won by the longer response (:func:`longer_wins`), bootstrapped over
    prompts; 0.5 means no length preference.

    >>> from cheems_lib.records import Record, Response
    >>> r = Record(prompt="q", responses=[Response("a", "short"), Response("b", "much longer")],
    ...            annotations=[("a", "b", "2")])
    >>> longer_share([r] * 3, n_boot=0).value
    1.0
    """
    won, decided = longer_wins(list(records))
    return estimates.ratio_estimate(won, decided, n_boot=n_boot, seed=seed)


def plot_fig15(sample: BiasSample, *, max_length_difference: float = 400, n_bins: int = 16):
    """Fig. 15: per annotator (rows), the share of decisions for A against ``len(A) - len(B)`` in
    ``n_bins`` bins over ``±max_length_difference`` characters (left), and the share won by each
    position (right), with 95% bootstrap intervals. Returns the matplotlib Figure.

    A panel with nothing to show says so (:func:`cheems_lib.publishing.figures.no_data`): an annotator whose
    files are missing names them, a length panel without a strict decision in range says what it needs."""
    import matplotlib.pyplot as plt

    if n_bins < 1:
        raise ValueError(f"n_bins = {n_bins}: the length panels need at least one bin (fix: -p n_bins 16)")
    edges = np.linspace(-max_length_difference, max_length_difference, n_bins + 1)
    fig, axes = plt.subplots(2, 2, figsize=(10, 7))
    for row, who in enumerate(FILES):
        titles = [textwrap.shorten(f"({'abcd'[2 * row + k]}) {sample.title(who)} - {what} bias", 60, placeholder="…")
                  for k, what in enumerate(("length", "positional"))]
        if who not in sample.records:
            for k in (0, 1):
                no_data(axes[row, k], " or ".join(FILES[who]), title=titles[k])
            continue
        _plot_length(axes[row, 0], sample, who, edges, titles[0], max_length_difference)
        _plot_position(axes[row, 1], sample, who, titles[1])
    fig.tight_layout()
    return fig


def _plot_length(ax, sample: BiasSample, who: str, edges, title: str, max_length_difference: float) -> None:
    """Fig. 15's length panel of ``who``: the share for A per bin of ``edges``."""
    curve = sample.length_curve(who, edges)
    if not len(curve):
        no_data(ax, f"a strict decision within ±{max_length_difference:g} characters of length difference",
                title=title)
        return
    x, y, lo, hi = curve.T
    ax.errorbar(x, y, yerr=[y - lo, hi - y], fmt="o-", capsize=3)
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set(title=title, xlabel="len(A) - len(B), characters", ylabel="share of decisions for A", ylim=(0, 1))


def _plot_position(ax, sample: BiasSample, who: str, title: str) -> None:
    """Fig. 15's position panel of ``who``: the share won by each position."""
    if not sample.strict_decisions()[who]:
        no_data(ax, "a strict (non-tie) decision", title=title)
        return
    second = sample.share_second(who)
    s_lo, s_hi = second.interval()
    ax.bar(["A (shown first)", "B (shown second)"], [1 - second.value, second.value],
           color=["#9c9c9c", "#4e79a7"], yerr=[[second.value - s_lo] * 2, [s_hi - second.value] * 2], capsize=4)
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set(title=title, ylabel="share of decisions", ylim=(0, 0.8))


def _described(est: estimates.Estimate) -> str:
    """An estimate with its interval, for a sentence."""
    lo, hi = est.interval()
    return f"{est.value:.3f} (95% interval {lo:.3f} to {hi:.3f})"


def _position(sample: BiasSample, who: str) -> tuple[estimates.Estimate, str]:
    """Share for the second-shown response minus 0.5, and the sentence's opening."""
    est = sample.share_second(who)
    opening = f"{sample.who(who)} chose the second-shown response in {_described(est)} of the strict decisions: "
    return est - 0.5, opening[0].upper() + opening[1:]


def _longer_by(sample: BiasSample, who: str, low: float, high: float = np.inf,
               baseline: bool = False) -> tuple[estimates.Estimate, str]:
    """Share for A when A is longer by [low, high) characters, minus 0.5 or (``baseline``) minus the
    share for A at any length, paired; and the sentence's opening."""
    est = sample.share_first(who, low, high)
    window = f"by {low} to {high} characters" if np.isfinite(high) else f"by at least {low} characters"
    opening = f"When A is longer {window}, {sample.who(who)} chose it in {_described(est)} of the strict decisions"
    if not baseline:
        return est - 0.5, opening + ": "
    base = sample.share_first(who)
    return est - base, opening + f", against {_described(base)} for A at any length: "


def _test(ledger: claims.Ledger, sample: BiasSample, cid: str, who: str, measure, direction: str, conclusions,
          *, simulated: bool, margin: float = 0.0, **fields) -> claims.Claim:
    """Test claim ``cid`` on ``who``'s annotations (untestable when the sample holds none, or when a claim about
    human annotators meets model labels: :meth:`BiasSample.not_human`). ``measure()``
    gives the difference to decide on and the sentence's computed opening; ``conclusions`` ends it per
    verdict (in :data:`cheems_lib.estimates.VERDICTS` order)."""
    fields.update(paper_ref="", link="paper-fig15")
    if who not in sample.records:
        return ledger.add(claims.Claim(
            id=cid, verdict="inconclusive", kind="untestable", **fields,
            reason=f"these files hold no {who} annotations of the benchmark",
            says={"inconclusive": f"These files hold no {who} annotations of the benchmark, so this is not tested."}))
    if sample.not_human(who):
        return ledger.add(claims.Claim.untestable(cid, reason=sample.not_human(who), **fields))
    diff, opening = measure()
    says = dict(zip(estimates.VERDICTS, (opening + c for c in conclusions)))  # insufficient data: the library's
    return ledger.add(claims.Claim.test(cid, diff, direction, margin=margin, seed=sample.seed, says=says, **fields,
                                        **calibration.claim_kind(cid, simulated)))


def _pronounced(ledger: claims.Ledger, sample: BiasSample, *, simulated: bool) -> claims.Claim:
    """D.3's "the specific preferences of the annotators are not very pronounced": every Fig. 15 share of the
    annotators present (position; the longer response at a moderate and at a large difference) within 0.5 ±
    :data:`~cheems_lib.analyses.claims.PRONOUNCED_BIAS` (:func:`~cheems_lib.estimates.all_of`); the sentence names the
    share farthest from holding."""
    moderate, large, margin = claims.MODERATE_LENGTH_DIFFERENCE, claims.LARGE_LENGTH_DIFFERENCE, claims.PRONOUNCED_BIAS
    fields = dict(paper_ref="", link="paper-fig15", claim="the annotators' specific preferences "
                  "(position, length) are not very pronounced", paper='"Overall, the specific preferences of the '
                  'annotators are not very pronounced" (plot only)')
    shares = {}
    for who in [w for w in ("GPT", "Human") if w in sample.records and not sample.not_human(w)]:
        name = sample.who(who)
        shares[f"{name}, second-shown position"] = sample.share_second(who) - 0.5
        shares[f"{name}, longer by 1 to {moderate}"] = sample.share_first(who, 1, moderate) - 0.5
        shares[f"{name}, longer by at least {large}"] = sample.share_first(who, large) - 0.5
    if not shares:
        return ledger.add(claims.Claim.untestable("fig15-biases-not-pronounced", reason="these files hold no human or "
                                                  "GPT annotations of the benchmark", **fields))
    verdict, worst, est = estimates.all_of(shares, "equal", margin=margin, seed=sample.seed)
    lo, hi = est.interval(seed=sample.seed)
    eq = f"0.5 ± {margin:g}"
    opening = f"Of the {len(shares)} Fig. 15 shares, the farthest from 0.5 is {worst}: {{estimate:+.3f}} from 0.5 " \
              "(95% interval {lo:+.3f} to {hi:+.3f}); "
    return ledger.add(claims.Claim(
        "fig15-biases-not-pronounced", verdict=verdict, estimate=est.value, ci_low=lo, ci_high=hi, seeds=est.seeds,
        n=est.n, unit=est.unit, **fields, **calibration.claim_kind("fig15-biases-not-pronounced", simulated),
        statistic=f"each share of strict decisions minus 0.5 (position; longer at a moderate and at a large difference), "
                  f"every one within ±{margin:g} (ours: the paper gives no number); the worst shown",
        says={"supported": opening + f"every share is within {eq}: not pronounced, as in the paper.",
              "contradicted": opening + f"outside {eq}: a pronounced preference, unlike the paper.",
              "inconclusive": opening + f"not every share is shown to lie within {eq}."}))


def add_claims(ledger: claims.Ledger, sample: BiasSample, *, simulated: bool) -> None:
    """The paper's description of Fig. 15 as six claims: GPT-4o prefers the later position, humans
    none; both prefer the longer response at a moderate length difference (GPT-4o's judged against
    its own position baseline); humans prefer the shorter one at a large difference; none of these
    preferences is pronounced (:func:`_pronounced`). ``simulated``:
    the world was written by the simulator, whose annotators are built with these biases."""
    moderate, large = claims.MODERATE_LENGTH_DIFFERENCE, claims.LARGE_LENGTH_DIFFERENCE
    test = partial(_test, ledger, sample, simulated=simulated)
    test("fig15-gpt-position", "GPT", lambda: _position(sample, "GPT"), "greater",
         ("more than half, as in the paper.", "less than half, unlike the paper.", "not clearly more than half."),
         claim="GPT-4o prefers the response placed later",
         statistic="GPT-4o's share of strict decisions for the second-shown response, minus 0.5",
         paper='"GPT-4o generally prefers responses that are placed later" (plot only)')
    eq = f"0.5 ± {claims.POSITION_EQUIVALENCE:g}"
    test("fig15-human-no-position", "Human", lambda: _position(sample, "Human"), "equal",
         (f"within {eq}, no position preference, as in the paper.",
          f"outside {eq}, a position preference the paper does not see.",
          f"the interval is not inside {eq}, so the absence of a preference is not shown."),
         margin=claims.POSITION_EQUIVALENCE, claim="human annotators show no position preference",
         statistic=("human share of strict decisions for the second-shown response, minus 0.5 "
                    f"(none: within ±{claims.POSITION_EQUIVALENCE:g})"),
         paper='"human annotators do not exhibit a significant preference for position" (plot only)')
    moderate_quote = ('"when the response length difference is moderate, both human and GPT annotators tend to '
                      'favor longer responses" (plot only)')
    test("fig15-length", "Human", lambda: _longer_by(sample, "Human", 1, moderate), "greater",
         ("they prefer the longer response, as in the paper.", "they prefer the shorter one, unlike the paper.",
          "no clear preference either way."),
         claim="human annotators prefer the longer response when the length difference is moderate",
         statistic=f"human share of strict decisions for A when A is longer by 1 to {moderate} characters, minus 0.5",
         paper=moderate_quote)
    test("fig15-gpt-length", "GPT", lambda: _longer_by(sample, "GPT", 1, moderate, baseline=True), "greater",
         ("more, so it prefers the longer response, as in the paper.",
          "less, so it prefers the shorter one, unlike the paper.", "not clearly different."),
         claim="GPT-4o prefers the longer response when the length difference is moderate",
         statistic=(f"GPT-4o's share of strict decisions for A when A is longer by 1 to {moderate} characters, minus "
                    "its share for A at any length (its position baseline; paired)"),
         paper=moderate_quote)
    test("fig15-human-shorter-at-large", "Human", lambda: _longer_by(sample, "Human", large), "less",
         ("they prefer the shorter response, as in the paper.", "they prefer the longer one, unlike the paper.",
          "no clear preference either way."),
         claim="human annotators prefer the shorter response when the length difference is large",
         statistic=f"human share of strict decisions for A when A is longer by at least {large} characters, minus 0.5",
         paper='"as the length difference becomes too large, humans tend to prefer shorter ones" (plot only)')
    _pronounced(ledger, sample, simulated=simulated)


def gpt_length_sentence(gpt: Sequence[Record], *, n_boot: int = estimates.N_BOOT, seed: int = 0) -> str:
    """Does the (simulated) GPT-4o of the GPT subset ``gpt`` prefer longer answers (Fig. 15c)? One
    sentence for the verdict.

    The statistic is the share of chosen-longer comparisons among those of unequal length,
    bootstrapped over prompts (a prompt's comparisons stay together), stratified by category.
    """
    longer, shorter = chosen_length_counts(gpt)
    share = estimates.ratio_estimate(longer, longer + shorter, strata=[r.top_category for r in gpt], n_boot=n_boot,
                                     seed=seed)
    lo, hi = share.interval(seed=seed)
    counts = (f"the chosen response is the longer one in {int(longer.sum()):,} comparisons and the shorter one in "
              f"{int(shorter.sum()):,}")
    interval = f"{share.value:.3f} [{lo:.3f}, {hi:.3f}]"
    return {
        "supported": f"The simulated GPT-4o prefers longer answers, as GPT-4o does in Fig. 15c: in the GPT subset "
                     f"{counts}, a share of {interval} for the longer one, above one half.",
        "contradicted": f"The simulated GPT-4o does not prefer longer answers here, unlike GPT-4o in Fig. 15c: in the "
                        f"GPT subset {counts}, a share of {interval} for the longer one, below one half.",
        "inconclusive": f"In the GPT subset {counts}, a share of {interval} for the longer one: the interval includes "
                        "one half, so this run cannot say whether the simulated GPT-4o prefers longer answers (Fig. 15c).",
        estimates.INSUFFICIENT: estimates.insufficient_text(
            share.n, share.unit, "whether the simulated GPT-4o prefers longer answers (Fig. 15c)"),
    }[estimates.decide(share - 0.5, "greater", seed=seed)]
