"""Human length preference on real scores (paper appendix D.3, Fig. 15; Table 1): is the higher-scored answer
the longer one?

The paper's Fig. 15 says human annotators favour the longer response when the length difference is moderate and
the shorter one when it is large. On real human scores (:mod:`cheems_lib.analyses.human_labels`), each statistic
per prompt so that a bootstrap over prompts resamples a prompt's answers together:

- :func:`add_length_claims` tests Fig. 15's two sentences about human annotators, and our overall question beside
  Table 1's lengths (:func:`table1_lengths`);
- :func:`length_bands` and :func:`plot_length`: :func:`longer_wins` counts the strictly ordered pairs won by the
  longer answer, in a band of length difference or ratio (an association, since a band matches its pairs on length
  alone, not on quality); :func:`length_tables` shows the bands and :func:`length_gap`, the characters the
  higher-scored answer has over the lower-scored one;
- :func:`estimate_with_interval`, :func:`add_untestable` and :func:`verdict_sentences` write a cell, an untestable
  claim and a claim's sentences, here and in :mod:`cheems_lib.analyses.human_agreement`.
"""
from __future__ import annotations

import math
from typing import Mapping, Sequence

import numpy as np

from .. import estimates
from ..paper import table as paper_table
from ..records import Record, strict_pairs
from . import claims


__all__ = ["add_length_claims", "length_bands", "length_tables", "plot_length", "longer_wins", "length_gap",
           "DIFFERENCE_BANDS", "RATIO_BANDS", "TABLE1_HUMAN", "table1_lengths", "estimate_with_interval",
           "add_untestable", "verdict_sentences"]


def add_length_claims(ledger: claims.Ledger, records: Sequence[Record] | None, *, n_boot: int = estimates.N_BOOT,
                      seed: int = 0, missing: str = "") -> dict[str, estimates.Estimate]:
    """The human length preference: overall (our question, beside Table 1's lengths), at a moderate and at a
    large length difference (Fig. 15's two sentences about human annotators); untestable with ``missing``
    (why) without ``records``. Returns the shares by claim id."""
    moderate, large = claims.MODERATE_LENGTH_DIFFERENCE, claims.LARGE_LENGTH_DIFFERENCE
    lengths = "; ".join(f"{name}: chosen {r.chosen:.2f}, rejected {r.rejected:.2f}" for name, r in table1_lengths().iterrows())
    base = dict(link="fig-human-labels-length")
    fig15 = dict(base, paper_ref="", kind="finding")
    rows = [
        ("human-length-longer-wins", 1, math.inf, "greater", dict(
            base, paper_ref="", kind="question", claim="do human scorers of real Chinese writing favour the "
            "longer answer?", reason="the project's own question: the paper prints its human-annotated sets' average "
            "lengths of chosen and rejected responses (Table 1) and a plot (Fig. 15), no share of pairs; and these are "
            "other prompts (writing only), other answers and a 0-3 score instead of triple-wise comparisons",
            paper=f"Table 1, average characters in the human-annotated sets: {lengths}"), ""),
        ("human-length-moderate", 1, moderate, "greater", dict(
            fig15, claim="human annotators prefer the longer response when the length difference is moderate",
            paper='"when the response length difference is moderate, both human and GPT annotators tend to favor '
                  'longer responses" (plot only)'), f" of lengths differing by 1 to {moderate - 1} characters"),
        ("human-length-shorter-at-large", large, math.inf, "less", dict(
            fig15, claim="human annotators prefer the shorter response when the length difference is large",
            paper='"as the length difference becomes too large, humans tend to prefer shorter ones" (plot only)'),
         f" of lengths differing by at least {large} characters"),
    ]
    out = {}
    for cid, low, high, direction, fields, band in rows:
        fields["statistic"] = (f"share of the strictly ordered answer pairs (by human score){band or ' of unequal length'} "
                               "won by the longer answer, minus 0.5")
        if records is None:
            add_untestable(ledger, cid, missing, **fields)
            continue
        est = out[cid] = estimates.ratio_estimate(*longer_wins(records, low, high), n_boot=n_boot, seed=seed)
        paper_side = "" if cid == "human-length-longer-wins" else ", as the paper says of its human annotators"
        other_side = "" if cid == "human-length-longer-wins" else ", unlike the paper's human annotators"
        longer, shorter = ("longer", "shorter") if direction == "greater" else ("shorter", "longer")
        says = verdict_sentences(f"The longer answer's share of the strictly ordered pairs{band} (equal-length pairs "
                                 "left out) minus 0.5 is {estimate:+.3f} [{lo:+.3f}, {hi:+.3f}]",
                                 f"the human scores favour the {longer} answer{paper_side}.",
                                 f"the human scores favour the {shorter} answer{other_side}.",
                                 "no clear preference either way.")
        ledger.add(claims.Claim.test(cid, est - 0.5, direction, seed=seed, says=says, **fields))
    return out


def length_bands(records: Sequence[Record] | None, *, n_boot: int = estimates.N_BOOT, seed: int = 0
                 ) -> dict[str, list[tuple[str, int, estimates.Estimate]]] | None:
    """Per kind of band (``length difference``: :data:`DIFFERENCE_BANDS`, ``length ratio``: :data:`RATIO_BANDS`),
    one ``(band, strict pairs, share won by the longer answer)`` per band; None without ``records``. A band groups
    pairs by how far apart their lengths are, nothing else: its answers are not matched on quality, so a share that
    changes from band to band is an association of the human scores with length, not an effect of length."""
    if records is None:
        return None
    out = {}
    for what, edges, ratio in (("length difference", DIFFERENCE_BANDS, False), ("length ratio", RATIO_BANDS, True)):
        out[what] = []
        for lo, hi in zip(edges, edges[1:]):
            won, pairs = longer_wins(records, lo, hi, ratio=ratio)
            out[what].append((_band(lo, hi, ratio), int(pairs.sum()),
                              estimates.ratio_estimate(won, pairs, n_boot=n_boot, seed=seed)))
    return out


def length_tables(records: Sequence[Record], bands: Mapping, *, n_boot: int = estimates.N_BOOT, seed: int = 0):
    """Two tables: the bands of :func:`length_bands` (pairs, prompts, share with its interval), and the
    higher-scored answer's length minus the lower-scored one's (:func:`length_gap`, with its interval) beside
    Table 1's average chosen minus average rejected length of the human-annotated sets (column ``paper``)."""
    import pandas as pd

    rows = [{"band": f"{what} {name}" + (" characters" if what == "length difference" else ""), "strict pairs": pairs,
             "prompts": est.n, "share won by the longer [95%]": estimate_with_interval(est, seed) if pairs else "–"}
            for what, shown in bands.items() for name, pairs, est in shown]
    gap = estimates.ratio_estimate(*length_gap(records), n_boot=n_boot, seed=seed)
    gaps = [{"set": "ours: human scores, every strictly ordered pair", "chosen minus rejected (characters)":
             estimate_with_interval(gap, seed, "+.1f"), "paper": "–"}]
    gaps += [{"set": f"paper, Table 1: {name}", "chosen minus rejected (characters)": "–",
              "paper": f"{r.chosen:.2f} - {r.rejected:.2f} = {r.difference:+.2f}"} for name, r in table1_lengths().iterrows()]
    return pd.DataFrame(rows), pd.DataFrame(gaps)


def plot_length(bands: Mapping[str, Sequence[tuple[str, int, estimates.Estimate]]], *, seed: int = 0):
    """Fig. 15's human length panel on real human scores: the longer answer's share of strictly ordered pairs per
    band of length difference (left, characters) and of length ratio (right), from :func:`length_bands`."""
    import matplotlib.pyplot as plt

    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4), sharey=True)
    _bands(left, bands["length difference"], xlabel="length difference of the pair (characters)", seed=seed)
    _bands(right, bands["length ratio"], xlabel="length ratio of the pair (longer / shorter)", seed=seed)
    left.set_title("by length difference (Fig. 15 bins it)")
    right.set_title("by length ratio")
    fig.suptitle("Human scores: does the higher-scored answer tend to be the longer one?", fontsize=10)
    fig.tight_layout()
    return fig


def longer_wins(records: Sequence[Record], low: float = 1, high: float = math.inf, *, ratio: bool = False
                ) -> tuple[np.ndarray, np.ndarray]:
    """Per record: strictly ordered answer pairs (by ``rank``) won by the longer answer, and such pairs, over the
    pairs whose length difference in characters (``ratio``: longer / shorter) lies in ``[low, high)``. Pairs of
    equal length never count.

    >>> from cheems_lib.records import Response
    >>> r = Record("q", [Response("a", "xx"), Response("b", "xxxxx"), Response("c", "x")], rank={"a": 0, "b": 1, "c": 1})
    >>> longer_wins([r])  # a beats the longer b and the shorter c
    (array([1.]), array([2.]))
    >>> longer_wins([r], 2, ratio=True)  # 2.5 and 2 times as long
    (array([1.]), array([2.]))
    """
    won, pairs = np.zeros(len(records)), np.zeros(len(records))
    for k, rec in enumerate(records):
        size = {x.id: len(x.content) for x in rec.responses}
        for better, worse in strict_pairs(rec.rank or {}):
            a, b = size[better], size[worse]
            gap = max(a, b) / max(min(a, b), 1) if ratio else abs(a - b)
            if a != b and low <= gap < high:
                pairs[k] += 1
                won[k] += a > b
    return won, pairs


def length_gap(records: Sequence[Record]) -> tuple[np.ndarray, np.ndarray]:
    """Per record: the summed length of the better answer minus the worse one's (characters) over its strictly
    ordered pairs, and those pairs: Table 1's average chosen minus average rejected length, pair by pair."""
    gap, pairs = np.zeros(len(records)), np.zeros(len(records))
    for k, rec in enumerate(records):
        size = {x.id: len(x.content) for x in rec.responses}
        for better, worse in strict_pairs(rec.rank or {}):
            gap[k] += size[better] - size[worse]
            pairs[k] += 1
    return gap, pairs


DIFFERENCE_BANDS = (1, claims.MODERATE_LENGTH_DIFFERENCE, claims.LARGE_LENGTH_DIFFERENCE, 500, 1000, 2000, math.inf)
"""Band edges of a pair's length difference (characters): the paper's moderate and large bands
(:data:`cheems_lib.analyses.claims.MODERATE_LENGTH_DIFFERENCE`, ``LARGE_LENGTH_DIFFERENCE``), then wider ones, since
these answers are longer than CheemsBench's."""


RATIO_BANDS = (1, 1.1, 1.25, 1.5, 2, 3, math.inf)
"""Band edges of a pair's length ratio (longer / shorter)."""


def _band(lo: float, hi: float, ratio: bool) -> str:
    unit, last = ("x", hi) if ratio else ("", hi - 1)  # whole characters: [1, 150) is 1 to 149
    return f"{lo:g}{unit} to {last:g}{unit}" if math.isfinite(hi) else f"{lo:g}{unit} or more"


def _bands(ax, rows: Sequence[tuple[str, int, estimates.Estimate]], *, xlabel: str, seed: int) -> None:
    """One point per band with its 95% interval (a band without pairs is left out); the 0.5 line."""
    shown = [(name, est) for name, pairs, est in rows if pairs]
    for x, (name, est) in enumerate(shown):
        lo, hi = est.interval(seed=seed)
        ax.errorbar([x], [est.value], yerr=[[est.value - lo], [hi - est.value]], fmt="o", color="#4e79a7", capsize=3)
    ax.set_xticks(range(len(shown)), [name for name, _ in shown], rotation=20)
    ax.axhline(0.5, color="grey", lw=1, ls="--")
    ax.set(ylim=(0, 1), xlabel=xlabel, ylabel="share of strict pairs won by the longer answer")
    ax.grid(axis="y", alpha=0.3)


TABLE1_HUMAN = ("cheemsbench_open_prompt", "cheemsbench_human_instruction", "cheemspreference_human")
"""Table 1's human-annotated sets (the columns of ``data/paper/table1_statistics.csv``)."""


def table1_lengths():
    """Table 1's average characters of chosen and rejected responses in its human-annotated sets, and their
    difference, one row per set (read from ``data/paper/``)."""
    t1 = paper_table("table1_statistics").set_index("statistic")[list(TABLE1_HUMAN)].astype(float).T
    out = t1[["avg_chars_chosen", "avg_chars_rejected"]].rename(columns=lambda c: c.removeprefix("avg_chars_"))
    return out.assign(difference=out["chosen"] - out["rejected"])


def estimate_with_interval(est: estimates.Estimate, seed: int, fmt: str = ".3f") -> str:
    """``value [lo, hi]`` of ``est`` (95% interval drawn with ``seed``), each number in format ``fmt``."""
    lo, hi = est.interval(seed=seed)
    return f"{est.value:{fmt}} [{lo:{fmt}}, {hi:{fmt}}]"


def add_untestable(ledger: claims.Ledger, cid: str, why: str, **fields) -> claims.Claim:
    """Add claim ``cid`` to ``ledger`` as untestable because ``why`` (what is missing), with its other ``fields``."""
    fields.pop("reason", None)  # a question's reason where it can be tested; here what is missing says why
    return ledger.add(claims.Claim.untestable(cid, reason=why, **fields))


def verdict_sentences(opening: str, supported: str, contradicted: str, inconclusive: str) -> dict[str, str]:
    """A claim's ``says``: one shared ``opening``, then each verdict's own ending."""
    return {"supported": f"{opening}: {supported}", "contradicted": f"{opening}: {contradicted}",
            "inconclusive": f"{opening}: {inconclusive}"}
